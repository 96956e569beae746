package bench

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
)

// Sysbench's tables, made without sysbench: what `sysbench oltp_common
// prepare` (sysbench 1.0, /usr/share/sysbench/oltp_common.lua) creates,
// for a server that loads them faster from a file (Basalt's IMPORT INTO,
// see PrepareByImport). With its defaults (--auto-inc=on,
// --create-secondary=on, --rand-type=special, which `basalt bench`'s
// prepare keeps) sysbench makes, for table N of S rows:
//
//	CREATE TABLE sbtestN(id INTEGER NOT NULL AUTO_INCREMENT, k INTEGER DEFAULT '0' NOT NULL,
//	  c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL, PRIMARY KEY (id))
//	INSERT ... (k, c, pad): ids 1..S from AUTO_INCREMENT, k = sb_rand(1, S),
//	  c = 10 groups of 11 random digits joined by '-', pad = 5 such groups
//	CREATE INDEX k_N ON sbtestN(k)
//
// sb_rand is --rand-type's distribution, "special" by default: 75% of the
// values in the middle 1% of the range, the rest gaussian over all of it
// (sb_rand_special, with --rand-spec-iter=12, --rand-spec-pct=1,
// --rand-spec-res=75). The digits are uniform.

// SysbenchDDL returns the statements that create table n as sysbench
// does (before its rows and after them: the secondary index).
func SysbenchDDL(n int) (create, index string) {
	create = fmt.Sprintf(`CREATE TABLE sbtest%d(
  id INTEGER NOT NULL AUTO_INCREMENT,
  k INTEGER DEFAULT '0' NOT NULL,
  c CHAR(120) DEFAULT '' NOT NULL,
  pad CHAR(60) DEFAULT '' NOT NULL,
  PRIMARY KEY (id)
) /*! ENGINE = innodb */ `, n)
	index = fmt.Sprintf("CREATE INDEX k_%d ON sbtest%d(k)", n, n)
	return create, index
}

// sbRand draws sysbench's random numbers in [a, b] under a --rand-type.
type sbRand struct {
	r    *rand.Rand
	kind string
}

// Defaults of sysbench 1.0's --rand-spec-* options.
const (
	randSpecIter = 12
	randSpecPct  = 1
	randSpecRes  = 75
)

func (s sbRand) uniform(a, b uint32) uint32 {
	return a + uint32(s.r.Float64()*float64(b-a+1))
}

// next is sysbench's sb_rand(a, b) (sb_rand_default): sb_rand_special,
// sb_rand_gaussian, sb_rand_pareto or sb_rand_uniform.
func (s sbRand) next(a, b uint32) uint32 {
	switch s.kind {
	case "special":
		t := float64(b - a)
		rnd := s.r.Float64()
		res := rnd * t * (100.0 / (100.0 - randSpecRes))
		if res < t {
			sum := 0.0
			for i := 0; i < randSpecIter; i++ {
				sum += s.r.Float64()
			}
			return a + uint32(sum*t*(1.0/randSpecIter))
		}
		d := t * (randSpecPct / 100.0)
		res = rnd*(d+1) + t/2 - t*(randSpecPct/200.0)
		return a + uint32(res)
	case "gaussian":
		t := float64(b - a + 1)
		sum := 0.0
		for i := 0; i < randSpecIter; i++ {
			sum += s.r.Float64() * t
		}
		return a + uint32(sum*(1.0/randSpecIter))
	}
	return s.uniform(a, b)
}

// digitGroups appends groups of 11 random digits joined by '-' (sysbench's
// c and pad templates: "###########-###########-...").
func (s sbRand) digitGroups(buf []byte, groups int) []byte {
	for g := 0; g < groups; g++ {
		if g > 0 {
			buf = append(buf, '-')
		}
		for i := 0; i < 11; i++ {
			buf = append(buf, byte(s.uniform('0', '9')))
		}
	}
	return buf
}

// WriteSysbenchCSV writes the rows of a sysbench table of size rows as
// CSV (id,k,c,pad; c and pad hold no comma or quote), k drawn with
// randType ("special" is sysbench's default), from seed.
func WriteSysbenchCSV(w io.Writer, rows int, randType string, seed uint64) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	s := sbRand{r: rand.New(rand.NewPCG(seed, 0x5b7e5)), kind: randType}
	line := make([]byte, 0, 256)
	for id := 1; id <= rows; id++ {
		line = strconv.AppendInt(line[:0], int64(id), 10)
		line = append(line, ',')
		line = strconv.AppendUint(line, uint64(s.next(1, uint32(rows))), 10)
		line = append(line, ',')
		line = s.digitGroups(line, 10)
		line = append(line, ',')
		line = s.digitGroups(line, 5)
		line = append(line, '\n')
		if _, err := bw.Write(line); err != nil {
			return err
		}
	}
	return bw.Flush()
}
