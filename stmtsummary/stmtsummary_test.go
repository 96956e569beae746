package stmtsummary

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 26, 23, 0, 0, 0, time.UTC)

func rec(digest string, at time.Duration, lat time.Duration) *Record {
	return &Record{Schema: "test", Digest: digest, DigestText: "select ?", StmtType: "Select",
		SampleText: "select " + digest, Latency: lat, ResultRows: 1, End: t0.Add(at)}
}

func TestAddsUpByDigest(t *testing.T) {
	s := New(Config{RefreshInterval: time.Minute, HistorySize: 2})
	s.Add(rec("a", time.Second, 3*time.Millisecond))
	s.Add(rec("a", 2*time.Second, 1*time.Millisecond))
	e := rec("b", 3*time.Second, 5*time.Millisecond)
	e.Err, e.AffectedRows = true, 7
	s.Add(e)
	other := rec("a", 4*time.Second, time.Millisecond)
	other.Schema = "db2"
	s.Add(other)
	rows := s.Current(t0.Add(5 * time.Second))
	if len(rows) != 3 {
		t.Fatalf("%d rows, want 3: %+v", len(rows), rows)
	}
	a := rows[1] // ordered by schema: db2 first
	if a.Digest != "a" || a.Schema != "test" || a.ExecCount != 2 || a.SumLatency != 4*time.Millisecond ||
		a.MaxLatency != 3*time.Millisecond || a.MinLatency != time.Millisecond || a.AvgLatency() != 2*time.Millisecond ||
		a.SumResultRows != 2 || !a.FirstSeen.Equal(t0.Add(time.Second)) || !a.LastSeen.Equal(t0.Add(2*time.Second)) {
		t.Errorf("row a: %+v", a)
	}
	if b := rows[2]; b.SumErrors != 1 || b.SumAffectedRows != 7 {
		t.Errorf("row b: %+v", b)
	}
	if !a.Begin.Equal(t0) || !a.End.Equal(t0.Add(time.Minute)) {
		t.Errorf("window [%v, %v), want the minute from %v", a.Begin, a.End, t0)
	}
}

func TestWindowsAndHistory(t *testing.T) {
	s := New(Config{RefreshInterval: time.Minute, HistorySize: 2})
	for m := range 4 {
		s.Add(rec("a", time.Duration(m)*time.Minute+time.Second, time.Millisecond))
	}
	now := t0.Add(3*time.Minute + 2*time.Second)
	if cur := s.Current(now); len(cur) != 1 || !cur[0].Begin.Equal(t0.Add(3*time.Minute)) || cur[0].ExecCount != 1 {
		t.Fatalf("current: %+v", cur)
	}
	h := s.History(now)
	if len(h) != 3 { // two closed windows kept, and the current one
		t.Fatalf("history has %d rows, want 3", len(h))
	}
	for i, r := range h {
		if want := t0.Add(time.Duration(i+1) * time.Minute); !r.Begin.Equal(want) {
			t.Errorf("history row %d begins %v, want %v", i, r.Begin, want)
		}
	}
	// Past the window: the current table is empty, the history keeps it.
	later := t0.Add(10 * time.Minute)
	if cur := s.Current(later); len(cur) != 0 {
		t.Errorf("current after its window: %+v", cur)
	}
	if h := s.History(later); len(h) != 2 {
		t.Errorf("history after the window: %d rows, want 2", len(h))
	}
	s.SetConfig(Config{RefreshInterval: time.Minute, HistorySize: 0})
	if h := s.History(later); len(h) != 0 {
		t.Errorf("history of size 0: %+v", h)
	}
}

func TestMaxStmtCount(t *testing.T) {
	s := New(Config{RefreshInterval: time.Minute, MaxStmtCount: 3})
	for i := range 5 {
		s.Add(rec(fmt.Sprint(i), time.Second, time.Millisecond))
	}
	s.Add(rec("0", time.Second, time.Millisecond))
	rows := s.Current(t0.Add(2 * time.Second))
	if len(rows) != 4 {
		t.Fatalf("%d rows, want 3 and the evicted row", len(rows))
	}
	if rows[0].ExecCount != 2 {
		t.Errorf("a kind already kept still adds up: %+v", rows[0])
	}
	if o := rows[3]; o.Digest != "" || o.ExecCount != 2 {
		t.Errorf("evicted row: %+v", o)
	}
}

func TestP95(t *testing.T) {
	var st Stats
	// 100 statements: 1..100 ms. The 95th is 95 ms; the bucket bound is
	// within 19% above it.
	for i := 1; i <= 100; i++ {
		st.add(&Record{Latency: time.Duration(i) * time.Millisecond, End: t0})
	}
	p := st.P95Latency()
	if p < 95*time.Millisecond || float64(p) > 1.19*float64(95*time.Millisecond) {
		t.Errorf("p95 %v, want within [95ms, 113ms]", p)
	}
	var one Stats
	one.add(&Record{Latency: 7 * time.Millisecond, End: t0})
	if p := one.P95Latency(); p != 7*time.Millisecond {
		t.Errorf("p95 of one statement %v, want its latency", p)
	}
}

// TestBucketOf: the bucket is ceil(4*log2(µs)), as the logarithm says.
func TestBucketOf(t *testing.T) {
	for _, d := range []time.Duration{0, 500, time.Microsecond, 1001, 1189, 1190, 1414, 1415, 1682, 1999,
		2 * time.Microsecond, 3 * time.Microsecond, time.Millisecond, 1500 * time.Microsecond, time.Second, time.Hour} {
		us := float64(d) / 1000
		want := 0
		if us > 1 {
			want = min(int(math.Ceil(4*math.Log2(us))), 63)
		}
		if got := bucketOf(d); got != want {
			t.Errorf("bucketOf(%v) = %d, want %d", d, got, want)
		}
	}
}

// BenchmarkAdd is the summary's share of a statement's cost: one Add of a
// kind already held.
func BenchmarkAdd(b *testing.B) {
	s := New(Config{})
	r := rec("7a0e5e8f2b1c4d3e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e", 0, 180*time.Microsecond)
	r.End = time.Now()
	for b.Loop() {
		s.Add(r)
	}
}

// TestStripesAddUp: statements of one kind from many sessions, added up
// in their rows' stripes, read back as the one row a single Stats makes
// of them, in the current window and, merged, in the history; the sample
// is the last statement's.
func TestStripesAddUp(t *testing.T) {
	s := New(Config{RefreshInterval: time.Minute, HistorySize: 2})
	want := Stats{Schema: "test", Digest: "a", DigestText: "select ?", StmtType: "Select"}
	for i := range 40 {
		r := rec("a", time.Duration(i)*time.Second, time.Duration(1+i*37%11)*time.Millisecond)
		r.Session = uint32(i * 7 % 5)
		r.ResultRows, r.AffectedRows, r.Mem, r.Warnings = uint64(i%3), uint64(i), int64(100*i%7), i%2
		r.SampleText, r.User, r.Err, r.PlanFromCache = fmt.Sprint("select ", i), fmt.Sprint("u", i), i%9 == 0, i%4 == 0
		s.Add(r)
		want.add(r)
	}
	check := func(what string, got Stats) {
		t.Helper()
		got.Begin, got.End = time.Time{}, time.Time{}
		if got != want {
			t.Errorf("%s:\ngot  %+v\nwant %+v", what, got, want)
		}
		if got.SampleText != "select 39" || got.P95Latency() != want.P95Latency() {
			t.Errorf("%s: sample %q, p95 %v", what, got.SampleText, got.P95Latency())
		}
	}
	cur := s.Current(t0.Add(50 * time.Second))
	if len(cur) != 1 {
		t.Fatalf("%d rows", len(cur))
	}
	check("current", cur[0])
	h := s.History(t0.Add(90 * time.Second)) // the window is closed and compacted
	if len(h) != 1 {
		t.Fatalf("%d rows in the history", len(h))
	}
	check("history", h[0])
}

// TestConcurrentAdd adds from many goroutines while others read (run
// with -race): every statement is counted once.
func TestConcurrentAdd(t *testing.T) {
	s := New(Config{RefreshInterval: time.Minute, HistorySize: 3, MaxStmtCount: 8})
	const workers, each = 8, 2000
	done := make(chan bool)
	go func() {
		for {
			select {
			case <-done:
				return
			default:
				s.Current(t0.Add(time.Minute))
				s.History(t0.Add(time.Minute))
			}
		}
	}()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				// Two windows, ten kinds (two beyond MaxStmtCount).
				r := rec(fmt.Sprint(i%10), time.Duration(i*2/each)*time.Minute+time.Second, time.Millisecond)
				r.Session = uint32(w)
				s.Add(r)
			}
		})
	}
	wg.Wait()
	close(done)
	var n uint64
	for _, st := range s.History(t0.Add(2 * time.Minute)) {
		n += st.ExecCount
	}
	if n != workers*each {
		t.Errorf("%d statements counted, want %d", n, workers*each)
	}
}

// BenchmarkAddParallel: Adds of one kind from concurrent sessions, as a
// workload whose every session runs the same statement does.
func BenchmarkAddParallel(b *testing.B) {
	s := New(Config{})
	var next atomic.Uint32
	b.RunParallel(func(pb *testing.PB) {
		r := rec("7a0e5e8f2b1c4d3e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e", 0, 180*time.Microsecond)
		r.End = time.Now()
		r.Session = next.Add(1)
		for pb.Next() {
			s.Add(r)
		}
	})
}
