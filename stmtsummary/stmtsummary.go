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
// concurrent use. Add takes the summary's lock shared, for a map lookup,
// and one of a row's stripes' locks for a few additions: statements of
// one kind from sessions of different stripes add up without waiting
// for each other (see row). A new kind, a new window and the readers
// take the summary's lock alone.
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
	// Session is the statement's connection id. Statements of different
	// sessions are added up in different stripes of their row (mostly),
	// so that they do not wait for each other's lock.
	Session uint32
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

// merge adds up o's statements into s, as if each had been added to s:
// o's row is of the same kind, and s's sample is the later seen's.
func (s *Stats) merge(o *Stats) {
	if o.ExecCount == 0 {
		return
	}
	if s.ExecCount == 0 {
		*s = *o
		return
	}
	s.MinLatency = min(s.MinLatency, o.MinLatency)
	s.MinResultRows = min(s.MinResultRows, o.MinResultRows)
	if o.FirstSeen.Before(s.FirstSeen) {
		s.FirstSeen = o.FirstSeen
	}
	if o.LastSeen.After(s.LastSeen) {
		s.LastSeen = o.LastSeen
		s.SampleText, s.SampleUser, s.PlanDigest = o.SampleText, o.SampleUser, o.PlanDigest
	}
	s.ExecCount += o.ExecCount
	s.SumErrors += o.SumErrors
	s.SumWarnings += o.SumWarnings
	s.SumLatency += o.SumLatency
	s.MaxLatency = max(s.MaxLatency, o.MaxLatency)
	s.SumParse += o.SumParse
	s.MaxParse = max(s.MaxParse, o.MaxParse)
	s.SumCompile += o.SumCompile
	s.MaxCompile = max(s.MaxCompile, o.MaxCompile)
	s.SumAffectedRows += o.SumAffectedRows
	s.SumResultRows += o.SumResultRows
	s.MaxResultRows = max(s.MaxResultRows, o.MaxResultRows)
	s.SumMem += o.SumMem
	s.MaxMem = max(s.MaxMem, o.MaxMem)
	s.SumProcessedKeys += o.SumProcessedKeys
	s.MaxProcessedKeys = max(s.MaxProcessedKeys, o.MaxProcessedKeys)
	s.PlanCacheHits += o.PlanCacheHits
	s.Prepared = s.Prepared || o.Prepared
	for i, c := range o.latencies {
		s.latencies[i] = uint32(min(uint64(s.latencies[i])+uint64(c), math.MaxUint32))
	}
}

// stripes is how many parts a row of the current window is added up in.
const stripes = 4

// row is one kind's statements in a window. In the current window they
// are added up in stripes, each under its own lock, chosen by the
// session (Record.Session): the kind every session runs (sysbench's point
// select) is not one lock. A stripe's Stats is made at its first
// statement. A window that closes merges its rows into their first
// stripe (compact), so that the history keeps one Stats per row.
type row struct {
	stripe [stripes]struct {
		mu sync.Mutex
		st *Stats
	}
}

// stats returns the row's statements added up in one Stats (a copy).
// The caller holds the summary's lock alone: no stripe is being added to.
func (r *row) stats() Stats {
	var out Stats
	for i := range r.stripe {
		if st := r.stripe[i].st; st != nil {
			out.merge(st)
		}
	}
	return out
}

// add adds rec in the stripe of its session. The caller holds the
// summary's lock, shared or alone.
func (r *row) add(rec *Record) {
	sp := &r.stripe[rec.Session%stripes]
	sp.mu.Lock()
	if sp.st == nil {
		sp.st = &Stats{Schema: rec.Schema, Digest: rec.Digest, DigestText: rec.DigestText, StmtType: rec.StmtType}
	}
	sp.st.add(rec)
	sp.mu.Unlock()
}

// compact merges the row's stripes into the first. The caller holds the
// summary's lock alone.
func (r *row) compact() {
	st := r.stats()
	for i := range r.stripe {
		r.stripe[i].st = nil
	}
	if st.ExecCount > 0 {
		r.stripe[0].st = &st
	}
}

// window is the summary of one interval.
type window struct {
	begin, end time.Time
	stmts      map[key]*row
	other      *Stats // the kinds that found the window full
}

// Summary is the statement summary of one SQL node.
type Summary struct {
	// mu is held shared by Add while it finds a row of the current
	// window and adds to it, and alone by everything else.
	mu      sync.RWMutex
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
		for _, r := range s.cur.stmts {
			r.compact()
		}
		s.history = append(s.history, s.cur)
		s.trimHistory()
	}
	iv := s.cfg.RefreshInterval
	begin := time.Unix(0, now.UnixNano()/int64(iv)*int64(iv))
	s.cur = &window{begin: begin, end: begin.Add(iv), stmts: map[key]*row{}}
	return s.cur
}

// Add counts a statement that ended at r.End.
func (s *Summary) Add(r *Record) {
	k := key{r.Schema, r.Digest}
	// The common case: a kind seen before in the current window.
	s.mu.RLock()
	if w := s.cur; w != nil && r.End.Before(w.end) {
		if rw := w.stmts[k]; rw != nil {
			rw.add(r)
			s.mu.RUnlock()
			return
		}
	}
	s.mu.RUnlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.windowAt(r.End)
	rw := w.stmts[k]
	if rw == nil {
		if len(w.stmts) >= s.cfg.MaxStmtCount {
			if w.other == nil {
				w.other = &Stats{}
			}
			w.other.add(r)
			return
		}
		rw = &row{}
		w.stmts[k] = rw
	}
	rw.add(r)
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
	for _, r := range w.stmts {
		out = append(out, r.stats())
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
