package bench

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The peak resident memory of a target's server processes over one
// sysbench run, and over the prepare step (issue 19).
//
// A process's VmHWM (/proc/PID/status) is the peak of its resident set
// over its whole life; writing "5" to /proc/PID/clear_refs (Linux 4.0+)
// resets it to the current resident set, so VmHWM read at the end of a
// run is the peak during the run, however short the peak was. Where the
// reset is refused (another user's process, an old kernel), the meter
// samples VmRSS every rssSampleInterval instead, which can miss a peak
// shorter than that; RunRSS.Sampled names those processes.
//
// Only servers this package started are measured: a dsn target's server
// is not a process it knows.

// RunRSS is the peak resident memory of a target's server processes over
// one run or the prepare step.
type RunRSS struct {
	// Peaks are each process's peak resident set in bytes, by name:
	// "basalt", "mariadbd", or a playground's nodes as it names them
	// (pd1, store1, db1, haproxy) and "playground", its own process.
	Peaks map[string]int64 `json:"peak_bytes"`
	// TotalBytes is the sum of Peaks: what the target held at most if
	// its processes peaked together; for one process, its peak.
	TotalBytes int64 `json:"total_bytes"`
	// Sampled names the processes whose peak is the highest VmRSS
	// sampled every 100 ms, because their VmHWM could not be reset; the
	// others' is their VmHWM after a reset at the start.
	Sampled []string `json:"sampled,omitempty"`
}

// MiB is TotalBytes in MiB.
func (r *RunRSS) MiB() float64 { return float64(r.TotalBytes) / (1 << 20) }

// rssSampleInterval is how often VmRSS is read of a process whose VmHWM
// cannot be reset.
const rssSampleInterval = 100 * time.Millisecond

// procMemory is what /proc/PID/status says of a process's memory, in
// bytes.
type procMemory struct{ rss, hwm int64 }

// parseProcStatus reads VmRSS and VmHWM from the text of
// /proc/PID/status ("VmHWM:	  123456 kB"). ok is false without VmRSS
// (a kernel thread, a zombie).
func parseProcStatus(status string) (m procMemory, ok bool) {
	var haveRSS bool
	for _, line := range strings.Split(status, "\n") {
		key, val, found := strings.Cut(line, ":")
		if !found || (key != "VmRSS" && key != "VmHWM") {
			continue
		}
		f := strings.Fields(val)
		if len(f) != 2 || f[1] != "kB" {
			continue
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		if key == "VmRSS" {
			m.rss, haveRSS = kb<<10, true
		} else {
			m.hwm = kb << 10
		}
	}
	return m, haveRSS
}

// readProcMemory reads /proc/PID/status.
func readProcMemory(pid int) (procMemory, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return procMemory{}, false
	}
	return parseProcStatus(string(b))
}

// resetPeak resets the process's VmHWM to its current resident set, and
// says whether it could; a variable for the tests of the fallback.
var resetPeak = func(pid int) bool {
	return os.WriteFile("/proc/"+strconv.Itoa(pid)+"/clear_refs", []byte("5"), 0) == nil
}

// rssMeter measures the peaks of a set of processes between startRSS and
// finish. A nil *rssMeter measures nothing. Its methods are called by one
// goroutine; the sampler it may start is its own.
type rssMeter struct {
	procs map[string]int
	reset map[string]bool // VmHWM was reset at the start

	mu      sync.Mutex
	sampled map[string]int64 // the highest VmRSS read, of the others

	stop chan struct{} // closed by finish; nil when nothing is sampled
	done chan struct{} // closed when the sampler has returned
}

// startRSS resets the peak of every process of procs (name to PID) and
// starts sampling those it could not reset. It returns nil for no
// processes (a target that is not measured).
func startRSS(procs map[string]int) *rssMeter {
	if len(procs) == 0 {
		return nil
	}
	m := &rssMeter{procs: procs, reset: map[string]bool{}, sampled: map[string]int64{}}
	var sample []string
	for name, pid := range procs {
		if resetPeak(pid) {
			m.reset[name] = true
		} else {
			sample = append(sample, name)
		}
	}
	if len(sample) == 0 {
		return m
	}
	m.sample(sample)
	m.stop, m.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(m.done)
		tick := time.NewTicker(rssSampleInterval)
		defer tick.Stop()
		for {
			select {
			case <-m.stop:
				return
			case <-tick.C:
				m.sample(sample)
			}
		}
	}()
	return m
}

// sample reads the resident set of the named processes.
func (m *rssMeter) sample(names []string) {
	for _, name := range names {
		if mem, ok := readProcMemory(m.procs[name]); ok {
			m.mu.Lock()
			m.sampled[name] = max(m.sampled[name], mem.rss)
			m.mu.Unlock()
		}
	}
}

// finish stops the meter and returns the peaks: VmHWM of the processes
// reset at the start, the highest sample of the others. A process that is
// gone at the end and was not sampled is left out; nil if none is left.
// It may be called again (it then measures nothing more).
func (m *rssMeter) finish() *RunRSS {
	if m == nil {
		return nil
	}
	if m.stop != nil {
		close(m.stop)
		<-m.done
		m.stop = nil
		var sample []string
		for name := range m.procs {
			if !m.reset[name] {
				sample = append(sample, name)
			}
		}
		m.sample(sample) // the end of the run, too
	}
	peaks := map[string]int64{}
	for name, pid := range m.procs {
		if m.reset[name] {
			if mem, ok := readProcMemory(pid); ok {
				peaks[name] = max(mem.hwm, mem.rss)
			}
		}
	}
	m.mu.Lock()
	for name, v := range m.sampled {
		peaks[name] = v
	}
	m.mu.Unlock()
	return rssOf(peaks, m.reset)
}

// rssOf is the RunRSS of the peaks, of which those not in reset were
// sampled; nil for no peaks.
func rssOf(peaks map[string]int64, reset map[string]bool) *RunRSS {
	if len(peaks) == 0 {
		return nil
	}
	r := &RunRSS{Peaks: peaks}
	for name, v := range peaks {
		r.TotalBytes += v
		if !reset[name] {
			r.Sampled = append(r.Sampled, name)
		}
	}
	slices.Sort(r.Sampled)
	return r
}

// serverProcesses are the server processes target t runs now, by name,
// or nil if they are not known (a dsn target, a stopped server).
func serverProcesses(t target) map[string]int {
	if p, ok := t.(interface{ processes() map[string]int }); ok {
		return p.processes()
	}
	return nil
}

// playgroundNodes are the PIDs of the running nodes of the playground in
// dir, by node name, from its state file (playground/state.go:
// playground.json's nodes[].name and nodes[].pid, 0 once a node stopped).
// This package reads the file rather than importing playground, which
// would tie the bench tool to the code it measures.
func playgroundNodes(dir string) map[string]int {
	b, err := os.ReadFile(filepath.Join(dir, "playground.json"))
	if err != nil {
		return nil
	}
	var st struct {
		Nodes []struct {
			Name string `json:"name"`
			PID  int    `json:"pid"`
		} `json:"nodes"`
	}
	if json.Unmarshal(b, &st) != nil {
		return nil
	}
	nodes := map[string]int{}
	for _, n := range st.Nodes {
		if n.PID > 0 && n.Name != "" {
			nodes[n.Name] = n.PID
		}
	}
	return nodes
}
