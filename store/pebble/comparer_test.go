package pebble

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/basalt-db/basalt/codec"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/kv/kvtest"
	"github.com/basalt-db/basalt/store/mvcc"
	"github.com/cockroachdb/datadriven"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestComparerOrder: Comparer orders keys exactly as bytes.Compare does
// when keys are compared as Pebble's key schema and prefix iteration
// compare them (prefix bytewise, then suffix bytewise), for every kind of
// key the database holds or seeks: versioned keys of user keys that are
// prefixes of one another, bare enc(k) and next(enc(k)) bounds, lock
// keys, the storage node's raft and store keys, and arbitrary bytes. A
// prefix is a prefix key (Split of it is its length) and sorts first
// among its keys.
func TestComparerOrder(t *testing.T) {
	var keys [][]byte
	users := []string{"", "a", "a\x00", "a\x00\x00", "abcdefg", "abcdefgh", "abcdefgh\x00", "abcdefghi",
		"t\x80\x00\x00\x00\x00\x00\x00\x05_r\x80\x00\x00\x00\x00\x00\x00\x01", "\xff", "\xff\xff\xff\xff\xff\xff\xff\xff\xff"}
	for _, u := range users {
		enc := codec.EncodeBytes(nil, []byte(u))
		next := append([]byte(nil), enc...)
		next[len(next)-1]++
		for _, cf := range []byte{'d', 'l', 'w'} {
			keys = append(keys, append([]byte{cf}, enc...), append([]byte{cf}, next...))
			for _, ts := range []uint64{0, 1, 1 << 40, ^uint64(0) - 1, ^uint64(0)} {
				keys = append(keys, binary.BigEndian.AppendUint64(append([]byte{cf}, enc...), ^ts))
			}
		}
	}
	keys = append(keys, []byte("mident"), []byte("mprepare_bootstrap"), []byte{'d'}, []byte{'e'}, []byte{'w'}, []byte{'x'})
	for _, id := range []uint64{1, 2, 1 << 33} {
		k := binary.BigEndian.AppendUint64([]byte{'r'}, id)
		keys = append(keys, append(k, 0x02), append(k, 0x03), append(k, 0x04))
		for _, idx := range []uint64{5, 6, 1 << 20} {
			keys = append(keys, binary.BigEndian.AppendUint64(append(k, 0x01), idx))
		}
	}
	rng := rand.New(rand.NewPCG(7, 9))
	for range 2000 {
		k := make([]byte, 1+rng.IntN(30))
		for i := range k {
			// Mostly 0xFF and markers, so that runs of groups parse.
			switch rng.IntN(4) {
			case 0:
				k[i] = 0xFF
			case 1:
				k[i] = 0xF7 + byte(rng.IntN(9))
			default:
				k[i] = byte(rng.Uint32())
			}
		}
		k[0] = "dlw"[rng.IntN(3)]
		keys = append(keys, k)
	}
	splitCompare := func(a, b []byte) int {
		an, bn := split(a), split(b)
		if c := bytes.Compare(a[:an], b[:bn]); c != 0 {
			return c
		}
		return bytes.Compare(a[an:], b[bn:])
	}
	for _, a := range keys {
		p := a[:split(a)]
		if split(p) != len(p) {
			t.Fatalf("split(%q) = %d: the prefix %q of %q is no prefix key", p, split(p), p, a)
		}
		if len(p) < len(a) && bytes.Compare(p, a) >= 0 {
			t.Fatalf("prefix %q does not sort before %q", p, a)
		}
		for _, b := range keys {
			if got, want := splitCompare(a, b), bytes.Compare(a, b); got != want {
				t.Fatalf("%q vs %q: prefix then suffix compares %d, bytes %d", a, b, got, want)
			}
		}
	}
	// What the filters are built on: a versioned key's user key.
	enc := codec.EncodeBytes(nil, []byte("k"))
	vk := binary.BigEndian.AppendUint64(append([]byte{'w'}, enc...), 42)
	if got := vk[:split(vk)]; !bytes.Equal(got, append([]byte{'w'}, enc...)) {
		t.Fatalf("split of a CFWrite key: prefix %q", got)
	}
	if lk := append([]byte{'l'}, enc...); split(lk) != len(lk) {
		t.Fatal("a lock key is split")
	}
}

// TestVersionReads runs testdata/version_reads: versions of keys at
// several timestamps, present and absent keys, in the memtable and in
// flushed and compacted levels, with the database's comparer either
// Comparer or Pebble's default (a database of the old format), before and
// after reopening. The commands:
//
//	open [legacy]                  a new database (legacy: as before Comparer)
//	reopen                         close it and open its files again
//	comparer                       the comparer it opened with, and whether
//	                               point reads use prefix seeks
//	commit start=T commit=T        one-phase commit (mvcc.OnePhaseCommit)
//	                               of the mutations below: put K V,
//	                               insert K V, delete K
//	get k=K ts=T                   mvcc.Get (not reading locks)
//	flush                          the memtable to L0
//	compact                        everything down to the last level
//	lsm                            the tables in each level
//	filter-hits                    bloom filter hits (tables skipped)
//	                               since the last filter-hits
func TestVersionReads(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		var (
			fs   vfs.FS
			e    *Engine
			hits int64
		)
		defer func() {
			if e != nil {
				e.Close()
			}
		}()
		open := func(legacy bool) {
			var err error
			if e, err = Open("db", Options{FS: fs, BlockCacheSize: 1 << 20, MemTableSize: 1 << 20, LegacyComparer: legacy}); err != nil {
				t.Fatal(err)
			}
			hits = 0
		}
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			u64 := func(key string) uint64 {
				var s string
				td.ScanArgs(t, key, &s)
				n, err := strconv.ParseUint(s, 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				return n
			}
			switch td.Cmd {
			case "open":
				if e != nil {
					e.Close()
				}
				fs = vfs.NewMem()
				open(td.HasArg("legacy"))
				return "ok"
			case "reopen":
				if err := e.Close(); err != nil {
					t.Fatal(err)
				}
				open(false)
				return "ok"
			case "comparer":
				return fmt.Sprintf("%s prefix-seeks=%t", e.opts.Comparer.Name, e.prefixSeeks)
			case "commit":
				req := &mvcc.PrewriteRequest{StartTS: u64("start")}
				for _, line := range strings.Split(strings.TrimSpace(td.Input), "\n") {
					f := strings.Fields(line)
					m := kv.Mutation{Key: kvtest.Parse(t, f[1])}
					switch f[0] {
					case "put", "insert":
						m.Op, m.Value = kv.OpPut, kvtest.Parse(t, f[2])
						if f[0] == "insert" {
							m.Op = kv.OpInsert
						}
					case "delete":
						m.Op = kv.OpDelete
					default:
						t.Fatalf("%s: unknown mutation %q", td.Pos, f[0])
					}
					req.Mutations = append(req.Mutations, m)
				}
				req.Primary = req.Mutations[0].Key
				var b mvcc.Batch
				if err := mvcc.OnePhaseCommit(e, &b, req, u64("commit")); err != nil {
					return "error: " + err.Error()
				}
				if err := e.Write(&b, false); err != nil {
					t.Fatal(err)
				}
				return "ok"
			case "get":
				var k string
				td.ScanArgs(t, "k", &k)
				// No locks: the filter hits count CFWrite and CFDefault reads.
				v, err := mvcc.Get(e, kvtest.Parse(t, k), u64("ts"), false)
				if errors.Is(err, kv.ErrNotFound) {
					return "not found"
				}
				if err != nil {
					return "error: " + err.Error()
				}
				return kvtest.Format(v)
			case "flush":
				if err := e.DB().Flush(); err != nil {
					t.Fatal(err)
				}
				return "ok"
			case "compact":
				if err := e.DB().Compact(context.Background(), []byte{0}, []byte{0xff}, true); err != nil {
					t.Fatal(err)
				}
				return "ok"
			case "lsm":
				m := e.Metrics()
				var out []string
				for i, l := range m.Levels {
					if l.TablesCount > 0 {
						out = append(out, fmt.Sprintf("L%d: %d", i, l.TablesCount))
					}
				}
				if len(out) == 0 {
					return "(empty)"
				}
				return strings.Join(out, "\n")
			case "filter-hits":
				h := e.Metrics().Filter.Hits
				d := h - hits
				hits = h
				return strconv.FormatInt(d, 10)
			}
			t.Fatalf("%s: unknown command %q", td.Pos, td.Cmd)
			return ""
		})
	})
}

// BenchmarkPointRead reads one key's newest version with mvcc.Get, present
// or absent (a present key with a byte appended: between two present
// ones), in an LSM of several levels: 400k keys loaded through small
// memtables and 200k updates of random keys, as a sysbench table set
// after its prepare and a run. comparer=legacy is the read of a database
// of the old format (bounded iterators, as before Comparer).
func BenchmarkPointRead(b *testing.B) {
	const keys = 400_000
	key := func(i int) []byte { return fmt.Appendf(nil, "t\x00\x00\x00\x00\x00\x00\x00\x05_r%08d", i) }
	for _, legacy := range []bool{true, false} {
		name := "comparer=prefix"
		if legacy {
			name = "comparer=legacy"
		}
		b.Run(name, func(b *testing.B) {
			e, err := Open(filepath.Join(b.TempDir(), "db"), Options{BlockCacheSize: 512 << 20, MemTableSize: 4 << 20, LegacyComparer: legacy})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			rng := rand.New(rand.NewPCG(1, 2))
			ts := fillVersions(b, e, rng, key, keys, 120, 200)
			var shape []string
			for i, l := range e.Metrics().Levels {
				if l.TablesCount > 0 {
					shape = append(shape, fmt.Sprintf("L%d:%d", i, l.TablesCount))
				}
			}
			b.Logf("%s: tables per level %s", name, strings.Join(shape, " "))
			for _, absent := range []bool{false, true} {
				b.Run(fmt.Sprintf("absent=%t", absent), func(b *testing.B) {
					cpu0 := cpuTime()
					m0 := e.Metrics()
					defer func() {
						b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
						// Block cache lookups and filter hits (tables a
						// filter ruled out) per read: the work, counted,
						// which a loaded machine does not blur.
						m := e.Metrics()
						blocks := m.BlockCache.Hits + m.BlockCache.Misses - m0.BlockCache.Hits - m0.BlockCache.Misses
						b.ReportMetric(float64(blocks)/float64(b.N), "blocks/op")
						b.ReportMetric(float64(m.Filter.Hits-m0.Filter.Hits)/float64(b.N), "filter-hits/op")
					}()
					for b.Loop() {
						k := key(rng.IntN(keys))
						if absent {
							k = append(k, 0)
						}
						_, err := mvcc.Get(e, k, ts, false)
						if (err == nil) == absent || err != nil && !errors.Is(err, kv.ErrNotFound) {
							b.Fatalf("Get(%q) = %v", k, err)
						}
					}
				})
			}
		})
	}
}

// cpuTime is the process's CPU time (user and system) so far: per
// operation, a shared, noisy machine disturbs it far less than wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkPointReadUncached is BenchmarkPointRead on a data set some 30
// times larger than the block cache, as a server's tables of millions of
// rows are: 2M keys of 200-byte values loaded through 4 MiB memtables and
// 400k updates of random keys (about 530 MiB of tables in L0, L5 and L6),
// then read through a 16 MiB block cache (the memtable's arena takes part
// of it). Most data blocks are not cached, so a read that the filters
// spare a level saves a block load (a read of the table's file, from the
// page cache on this machine, and its decompression). Each comparer's
// database is built once per process, in a temporary directory that
// TestMain removes, and reopened, so that -count runs alternate the
// comparers without rebuilding. It reports the block cache's misses and
// the filters' hits (a level skipped) per read.
func BenchmarkPointReadUncached(b *testing.B) {
	const keys = 2_000_000
	key := func(i int) []byte { return fmt.Appendf(nil, "t\x00\x00\x00\x00\x00\x00\x00\x05_r%08d", i) }
	for _, legacy := range []bool{true, false} {
		name := "comparer=prefix"
		if legacy {
			name = "comparer=legacy"
		}
		b.Run(name, func(b *testing.B) {
			db := uncachedDB(b, legacy, keys, key)
			rng := rand.New(rand.NewPCG(3, 4))
			for _, absent := range []bool{false, true} {
				b.Run(fmt.Sprintf("absent=%t", absent), func(b *testing.B) {
					m0 := db.e.Metrics()
					miss0, filter0 := m0.BlockCache.Misses, m0.Filter.Hits
					cpu0 := cpuTime()
					defer func() {
						m := db.e.Metrics()
						n := float64(b.N)
						b.ReportMetric(float64(cpuTime()-cpu0)/n, "cpu-ns/op")
						b.ReportMetric(float64(m.BlockCache.Misses-miss0)/n, "misses/op")
						b.ReportMetric(float64(m.Filter.Hits-filter0)/n, "filtered/op")
					}()
					for b.Loop() {
						k := key(rng.IntN(keys))
						if absent {
							k = append(k, 0)
						}
						_, err := mvcc.Get(db.e, k, db.ts, false)
						if (err == nil) == absent || err != nil && !errors.Is(err, kv.ErrNotFound) {
							b.Fatalf("Get(%q) = %v", k, err)
						}
					}
				})
			}
		})
	}
}

type pointReadDB struct {
	e  *Engine
	ts uint64
}

// uncachedDBs are BenchmarkPointReadUncached's databases, by comparer
// (legacy or not), kept open across the benchmark's runs; benchDirs are
// the temporary directories TestMain removes.
var (
	uncachedDBs = map[bool]*pointReadDB{}
	benchDirs   []string
	benchClose  []func()
)

func TestMain(m *testing.M) {
	code := m.Run()
	for _, f := range benchClose {
		f()
	}
	for _, d := range benchDirs {
		os.RemoveAll(d)
	}
	os.Exit(code)
}

func uncachedDB(b *testing.B, legacy bool, keys int, key func(int) []byte) *pointReadDB {
	if db := uncachedDBs[legacy]; db != nil {
		return db
	}
	start := time.Now()
	tmp, err := os.MkdirTemp("", "pointread")
	if err != nil {
		b.Fatal(err)
	}
	benchDirs = append(benchDirs, tmp)
	dir := filepath.Join(tmp, "db")
	e, err := Open(dir, Options{BlockCacheSize: 64 << 20, MemTableSize: 4 << 20, LegacyComparer: legacy})
	if err != nil {
		b.Fatal(err)
	}
	ts := fillVersions(b, e, rand.New(rand.NewPCG(1, 2)), key, keys, 200, keys/5000)
	if err := e.Close(); err != nil {
		b.Fatal(err)
	}
	if e, err = Open(dir, Options{BlockCacheSize: 16 << 20, MemTableSize: 4 << 20}); err != nil {
		b.Fatal(err)
	}
	benchClose = append(benchClose, func() { e.Close() })
	var shape []string
	var size int64
	for i, l := range e.Metrics().Levels {
		if l.TablesCount > 0 {
			shape = append(shape, fmt.Sprintf("L%d:%d", i, l.TablesCount))
			size += l.TablesSize
		}
	}
	b.Logf("legacy=%t: built in %v; tables per level %s, %d MiB", legacy, time.Since(start).Round(time.Second), strings.Join(shape, " "), size>>20)
	db := &pointReadDB{e: e, ts: ts}
	uncachedDBs[legacy] = db
	return db
}

// fillVersions writes keys 0..n-1 (key(i)) with random values of valueLen
// bytes, by one-phase commits of 1,000 keys, then rewrites rounds x 1,000
// random keys, and waits for Pebble's compactions to end: an LSM of
// several levels, as a sysbench table set after its prepare and a run.
// It returns a timestamp above every commit's.
func fillVersions(b *testing.B, e *Engine, rng *rand.Rand, key func(int) []byte, n, valueLen, rounds int) (readTS uint64) {
	value := make([]byte, valueLen)
	ts := uint64(10)
	commit := func(ks []int) {
		req := &mvcc.PrewriteRequest{StartTS: ts}
		for _, k := range ks {
			for i := range value {
				value[i] = byte('a' + rng.IntN(26))
			}
			req.Mutations = append(req.Mutations, kv.Mutation{Op: kv.OpPut, Key: key(k), Value: bytes.Clone(value)})
		}
		req.Primary = req.Mutations[0].Key
		commitOnePhase(b, e, req, ts+1)
		ts += 2
	}
	for lo := 0; lo < n; lo += 1000 {
		ks := make([]int, min(1000, n-lo))
		for i := range ks {
			ks[i] = lo + i
		}
		commit(ks)
	}
	for range rounds {
		ks := make([]int, 1000)
		for i := range ks {
			ks[i] = rng.IntN(n)
		}
		slices.Sort(ks)
		commit(slices.Compact(ks))
	}
	for e.Metrics().Compact.NumInProgress > 0 {
		time.Sleep(10 * time.Millisecond)
	}
	return ts
}

// commitOnePhase commits req's mutations at commitTS in one phase.
func commitOnePhase(b testing.TB, e *Engine, req *mvcc.PrewriteRequest, commitTS uint64) {
	b.Helper()
	var batch mvcc.Batch
	if err := mvcc.OnePhaseCommit(e, &batch, req, commitTS); err != nil {
		b.Fatal(err)
	}
	if err := e.Write(&batch, false); err != nil {
		b.Fatal(err)
	}
}
