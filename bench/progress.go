package bench

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Progress shows a run's progress: on a terminal one live line (target,
// workload, threads, elapsed and remaining time, QPS of the last second),
// else one log line per step and per finished run. Its methods are safe
// for concurrent use.
type Progress struct {
	mu   sync.Mutex
	w    io.Writer // nil shows nothing
	live bool

	start     time.Time
	planned   time.Duration // warm-ups and runs of the whole plan
	finished  time.Duration // of those, the ones done
	label     string        // "basalt oltp_read_only 16 threads"
	runLength time.Duration
	runStart  time.Time
}

// NewProgress shows progress on w (nil: nowhere). live asks for the
// updating terminal line; IsTerminal tells whether w is one.
func NewProgress(w io.Writer, live bool) *Progress {
	return &Progress{w: w, live: live}
}

// IsTerminal reports whether f is a terminal (a character device).
func IsTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func (p *Progress) begin(plan *Plan) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.start = time.Now()
	runs := 0
	for _, t := range plan.Targets {
		runs += len(plan.threads(t))
	}
	per := time.Duration(len(plan.Targets)*plan.WarmupSeconds+runs*plan.RunSeconds) * time.Second
	p.planned = per * time.Duration(len(plan.Workloads))
	p.printf("plan %s: %d targets x %d workloads, %d sysbench runs, about %v of them\n",
		plan.Name, len(plan.Targets), len(plan.Workloads), runs*len(plan.Workloads), p.planned)
}

func (p *Progress) end() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.live {
		p.printf("\r\033[K")
	}
	p.printf("done in %v\n", time.Since(p.start).Round(time.Second))
}

// stage announces a step outside the sysbench runs.
func (p *Progress) stage(target, what string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.line(fmt.Sprintf("[%s] %s", target, what), true)
}

// logf prints a message on a line of its own.
func (p *Progress) logf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.line(fmt.Sprintf(format, args...), true)
}

// run announces a sysbench run of the given length.
func (p *Progress) run(target, workload, what string, seconds int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.label = fmt.Sprintf("[%s] %s %s", target, workload, what)
	p.runLength = time.Duration(seconds) * time.Second
	p.runStart = time.Now()
	if p.live {
		p.line(p.label, false)
	}
}

// interval shows the figures of one sysbench interval line.
func (p *Progress) interval(iv Interval) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.live {
		return
	}
	elapsed := time.Since(p.runStart)
	remaining := p.planned - p.finished - elapsed
	p.line(fmt.Sprintf("%s  %ds/%ds  qps %.0f  p95 %.2f ms  | elapsed %v, about %v left",
		p.label, int(iv.Second), int(p.runLength.Seconds()), iv.QPS, iv.P95Ms,
		time.Since(p.start).Round(time.Second), max(remaining, 0).Round(time.Second)), false)
}

// done reports the summary of the run announced last.
func (p *Progress) done(s Summary) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.finished += p.runLength
	p.line(fmt.Sprintf("%s: qps %.2f tps %.2f p95 %.2f ms errors %d reconnects %d",
		p.label, s.QPS, s.TPS, s.P95LatencyMs, s.Errors, s.Reconnects), true)
}

// skip counts the run announced last as done without reporting it (a
// warm-up).
func (p *Progress) skip() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.finished += p.runLength
}

// line shows s: on a terminal over the live line, kept if permanent; in
// log mode only permanent lines, with a time stamp.
func (p *Progress) line(s string, permanent bool) {
	switch {
	case p.w == nil:
	case p.live:
		p.printf("\r\033[K%s", s)
		if permanent {
			p.printf("\n")
		}
	case permanent:
		p.printf("%s %s\n", time.Now().Format("15:04:05"), s)
	}
}

func (p *Progress) printf(format string, args ...any) {
	if p.w != nil {
		fmt.Fprintf(p.w, format, args...)
	}
}
