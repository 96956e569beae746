// Package stmtsummary keeps TiDB's statement summary: every statement's
// latency, rows and errors added up by its kind (schema and normalized
// digest) over windows of time, for information_schema.STATEMENTS_SUMMARY
// (the current window) and STATEMENTS_SUMMARY_HISTORY (the windows kept,
// the current one included).
//
// Windows begin at multiples of the refresh interval since the Unix epoch,
// as TiDB's do, so that every SQL node of a cluster cuts them at the same
// times. When a statement ends in a window past the current one, the
// current one closes and goes to the history, which keeps the newest
// HistorySize windows. A window holds at most MaxStmtCount kinds; the
// statements of kinds that find it full are added up in one row whose
// DIGEST is NULL, as TiDB's evicted statements are.
//
// The package is pure: time comes in with each call. A Summary is safe for
// concurrent use; Add holds its lock for a map lookup and a few additions.
package stmtsummary

import (
	"math"
	"math/bits"
	"sort"
	"sync"
	"time"
)

// Record is one statement that ended.
type Record struct {
	Schema     string
	Digest     string
	DigestText string // the normalized statement
	StmtType   string // "Select", "Insert", ... (ast.GetStmtLabel)
	SampleText string // the statement, secrets redacted
	User       string
	PlanDigest string

	Latency        time.Duration
	ParseLatency   time.Duration
	CompileLatency time.Duration
	AffectedRows   uint64
	ResultRows     uint64
	ProcessedKeys  int64 // entries the statement's reads found
	Mem            int64
	Warnings       int
	Err            bool
	PlanFromCache  bool
	Prepared       bool
	End            time.Time
}

// Config bounds a summary.
type Config struct {
	RefreshInterval time.Duration // a window's length; <= 0: 30 minutes
	HistorySize     int           // closed windows kept; < 0: 0
	MaxStmtCount    int           // kinds per window; <= 0: 3000
}

func (c Config) normal() Config {
	if c.RefreshInterval <= 0 {
		c.RefreshInterval = 30 * time.Minute
	}
	c.HistorySize = max(c.HistorySize, 0)
	if c.MaxStmtCount <= 0 {
		c.MaxStmtCount = 3000
	}
	return c
}

// key is what a row adds up: one normalized statement in one schema.
type key struct{ schema, digest string }

// Stats is one row of the summary: the statements of one kind in one
// window.
type Stats struct {
	Begin, End time.Time // the window, filled in when read
	Schema     string
	Digest     string // "" in the row of evicted kinds
	DigestText string
	StmtType   string
	SampleText string // the last statement's text
	SampleUser string
	PlanDigest string

	ExecCount, SumErrors, SumWarnings  uint64
	SumLatency, MaxLatency, MinLatency time.Duration
	SumParse, MaxParse                 time.Duration
	SumCompile, MaxCompile             time.Duration
	SumAffectedRows, SumResultRows     uint64
	MaxResultRows, MinResultRows       uint64
	SumMem, MaxMem                     int64
	SumProcessedKeys, MaxProcessedKeys int64
	PlanCacheHits                      uint64
	Prepared                           bool
	FirstSeen, LastSeen                time.Time

	latencies histogram
}

// AvgLatency is the mean latency.
func (s *Stats) AvgLatency() time.Duration { return s.SumLatency / time.Duration(max(s.ExecCount, 1)) }

// P95Latency estimates the 95th percentile of the latencies (see
// histogram); never more than MaxLatency.
func (s *Stats) P95Latency() time.Duration { return min(s.latencies.quantile(0.95), s.MaxLatency) }

func (s *Stats) add(r *Record) {
	if s.ExecCount == 0 || r.Latency < s.MinLatency {
		s.MinLatency = r.Latency
	}
	if s.ExecCount == 0 || r.ResultRows < s.MinResultRows {
		s.MinResultRows = r.ResultRows
	}
	if s.ExecCount == 0 {
		s.FirstSeen = r.End
	}
	s.ExecCount++
	if r.Err {
		s.SumErrors++
	}
	s.SumWarnings += uint64(r.Warnings)
	s.SumLatency += r.Latency
	s.MaxLatency = max(s.MaxLatency, r.Latency)
	s.SumParse += r.ParseLatency
	s.MaxParse = max(s.MaxParse, r.ParseLatency)
	s.SumCompile += r.CompileLatency
	s.MaxCompile = max(s.MaxCompile, r.CompileLatency)
	s.SumAffectedRows += r.AffectedRows
	s.SumResultRows += r.ResultRows
	s.MaxResultRows = max(s.MaxResultRows, r.ResultRows)
	s.SumMem += r.Mem
	s.MaxMem = max(s.MaxMem, r.Mem)
	s.SumProcessedKeys += r.ProcessedKeys
	s.MaxProcessedKeys = max(s.MaxProcessedKeys, r.ProcessedKeys)
	if r.PlanFromCache {
		s.PlanCacheHits++
	}
	s.Prepared = s.Prepared || r.Prepared
	if r.End.After(s.LastSeen) {
		s.LastSeen = r.End
	}
	if s.Digest != "" {
		s.SampleText, s.SampleUser, s.PlanDigest = r.SampleText, r.User, r.PlanDigest
	}
	s.latencies.add(r.Latency)
}

// window is the summary of one interval.
type window struct {
	begin, end time.Time
	stmts      map[key]*Stats
	other      *Stats // the kinds that found the window full
}

// Summary is the statement summary of one SQL node.
type Summary struct {
	mu      sync.Mutex
	cfg     Config
	cur     *window
	history []*window // closed windows, oldest first
}

// New returns an empty summary.
func New(cfg Config) *Summary { return &Summary{cfg: cfg.normal()} }

// SetConfig changes the bounds. A new refresh interval applies to the
// current window too (as in TiDB: one made shorter may end at once); a
// smaller history drops the oldest windows at once.
func (s *Summary) SetConfig(cfg Config) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cfg = cfg.normal()
	if s.cur != nil {
		s.cur.end = s.cur.begin.Add(s.cfg.RefreshInterval)
	}
	s.trimHistory()
}

// Clear forgets everything (tidb_enable_stmt_summary turned off, as TiDB
// does).
func (s *Summary) Clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cur, s.history = nil, nil
}

func (s *Summary) trimHistory() {
	if n := len(s.history) - s.cfg.HistorySize; n > 0 {
		s.history = append(s.history[:0], s.history[n:]...)
	}
}

// windowAt returns the window holding now, closing the current one if now
// is past it.
func (s *Summary) windowAt(now time.Time) *window {
	if s.cur != nil && now.Before(s.cur.end) {
		return s.cur
	}
	if s.cur != nil {
		s.history = append(s.history, s.cur)
		s.trimHistory()
	}
	iv := s.cfg.RefreshInterval
	begin := time.Unix(0, now.UnixNano()/int64(iv)*int64(iv))
	s.cur = &window{begin: begin, end: begin.Add(iv), stmts: map[key]*Stats{}}
	return s.cur
}

// Add counts a statement that ended at r.End.
func (s *Summary) Add(r *Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.windowAt(r.End)
	k := key{r.Schema, r.Digest}
	st := w.stmts[k]
	if st == nil {
		if len(w.stmts) >= s.cfg.MaxStmtCount {
			if w.other == nil {
				w.other = &Stats{}
			}
			w.other.add(r)
			return
		}
		st = &Stats{Schema: r.Schema, Digest: r.Digest, DigestText: r.DigestText, StmtType: r.StmtType}
		w.stmts[k] = st
	}
	st.add(r)
}

// Current returns the rows of the window holding now, ordered by schema
// and digest.
func (s *Summary) Current(now time.Time) []Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil || !now.Before(s.cur.end) {
		return nil
	}
	return s.cur.rows(nil)
}

// History returns the rows of every window kept, the current one last.
func (s *Summary) History(now time.Time) []Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur != nil && !now.Before(s.cur.end) {
		s.windowAt(now) // close the current window before reading
	}
	var out []Stats
	for _, w := range s.history {
		out = w.rows(out)
	}
	if s.cur != nil {
		out = s.cur.rows(out)
	}
	return out
}

// rows appends copies of w's rows to out.
func (w *window) rows(out []Stats) []Stats {
	n := len(out)
	for _, st := range w.stmts {
		out = append(out, *st)
		out[len(out)-1].Begin, out[len(out)-1].End = w.begin, w.end
	}
	sort.Slice(out[n:], func(i, j int) bool {
		a, b := &out[n+i], &out[n+j]
		if a.Schema != b.Schema {
			return a.Schema < b.Schema
		}
		return a.Digest < b.Digest
	})
	if w.other != nil {
		out = append(out, *w.other)
		out[len(out)-1].Begin, out[len(out)-1].End = w.begin, w.end
	}
	return out
}

// histogram counts latencies in buckets whose bounds grow by 2^(1/4)
// (19%) from 1µs: bucket i holds latencies up to 2^(i/4) µs, and the last
// everything longer (2^(63/4) µs is about 55 s). A quantile is the upper
// bound of the bucket it falls in, so it is at most 19% above the true
// value (and capped by the maximum seen): enough to tell a p95 of 2 ms
// from one of 20 ms, in 64 counters per row.
type histogram [64]uint32

// quarterSteps are 2^(1/4), 2^(2/4), 2^(3/4): where a power of two's
// range splits into buckets.
var quarterSteps = [3]float64{1.189207115002721, 1.4142135623730951, 1.681792830507429}

// bucketOf is ceil(4*log2(µs)), found from the highest bit and three
// comparisons rather than a logarithm: it runs for every statement.
func bucketOf(d time.Duration) int {
	if d <= time.Microsecond {
		return 0
	}
	us := float64(d) / float64(time.Microsecond)
	e := bits.Len64(uint64(us)) - 1 // 2^e <= us < 2^(e+1)
	m := us / float64(uint64(1)<<e) // in [1, 2)
	i := 4 * e
	switch {
	case m == 1:
	case m <= quarterSteps[0]:
		i++
	case m <= quarterSteps[1]:
		i += 2
	case m <= quarterSteps[2]:
		i += 3
	default:
		i += 4
	}
	return min(i, len(histogram{})-1)
}

func (h *histogram) add(d time.Duration) {
	if i := bucketOf(d); h[i] < math.MaxUint32 {
		h[i]++
	}
}

// quantile returns the upper bound of the bucket holding quantile q.
func (h *histogram) quantile(q float64) time.Duration {
	var total uint64
	for _, c := range h {
		total += uint64(c)
	}
	if total == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(total)))
	var seen uint64
	for i, c := range h {
		seen += uint64(c)
		if seen >= rank {
			if i == len(h)-1 {
				return time.Duration(math.MaxInt64)
			}
			return time.Duration(math.Exp2(float64(i)/4) * float64(time.Microsecond))
		}
	}
	return time.Duration(math.MaxInt64)
}
