package bench

import (
	"bufio"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// RunCPU is where the CPU went during a run, so that a report can tell a
// cap that binds from a machine that is full: whether a capped node was
// throttled, and how busy the whole machine was (other work included).
type RunCPU struct {
	// MachineBusy is the percent of the machine's CPU time, over all its
	// CPUs, that was not idle, whoever used it.
	MachineBusy float64 `json:"machine_busy_pct"`
	// Throttled is, per capped node of a playground (db1, kv1, ...), the
	// percent of its CFS periods in which it used up its quota and waited:
	// near 0, the cap did not limit it.
	Throttled map[string]float64 `json:"throttled_pct,omitempty"`
}

// cpuSample is the counters RunCPU is the difference of.
type cpuSample struct {
	ok          bool
	busy, total uint64            // /proc/stat's first line, in ticks
	periods     map[string]uint64 // per node: cpu.stat nr_periods
	throttled   map[string]uint64 // per node: cpu.stat nr_throttled
}

// sampleCPU reads the machine's CPU time and, if cgroups is not empty,
// the CFS counters of each node's cgroup under it.
func sampleCPU(cgroups string) cpuSample {
	s := cpuSample{periods: map[string]uint64{}, throttled: map[string]uint64{}}
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return s
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return s
	}
	// user nice system idle iowait irq softirq steal (guest time is
	// counted in user already).
	for i, v := range f[1:9] {
		n, _ := strconv.ParseUint(v, 10, 64)
		s.total += n
		if i != 3 && i != 4 { // idle, iowait
			s.busy += n
		}
	}
	s.ok = true
	if cgroups == "" {
		return s
	}
	nodes, _ := os.ReadDir(cgroups)
	for _, n := range nodes {
		if !n.IsDir() {
			continue
		}
		fh, err := os.Open(filepath.Join(cgroups, n.Name(), "cpu.stat"))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			k, v, _ := strings.Cut(sc.Text(), " ")
			x, _ := strconv.ParseUint(v, 10, 64)
			switch k {
			case "nr_periods":
				s.periods[n.Name()] = x
			case "nr_throttled":
				s.throttled[n.Name()] = x
			}
		}
		fh.Close()
	}
	return s
}

// cpuBetween is what happened between samples a and b, or nil if either
// could not be read.
func cpuBetween(a, b cpuSample) *RunCPU {
	if !a.ok || !b.ok || b.total <= a.total {
		return nil
	}
	c := &RunCPU{MachineBusy: 100 * float64(b.busy-a.busy) / float64(b.total-a.total)}
	for node, p := range b.periods {
		// A node restarted in between has new counters: leave it out.
		if p0, ok := a.periods[node]; ok && p > p0 && b.throttled[node] >= a.throttled[node] {
			if c.Throttled == nil {
				c.Throttled = map[string]float64{}
			}
			c.Throttled[node] = 100 * float64(b.throttled[node]-a.throttled[node]) / float64(p-p0)
		}
	}
	return c
}

// meanThrottled is the mean of Throttled over the nodes whose names start
// with prefix ("db" for SQL nodes), and whether there are any.
func (c *RunCPU) meanThrottled(prefix string) (float64, bool) {
	if c == nil {
		return 0, false
	}
	var names []string
	for n := range c.Throttled {
		if strings.HasPrefix(n, prefix) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return 0, false
	}
	sort.Strings(names)
	sum := 0.0
	for _, n := range names {
		sum += c.Throttled[n]
	}
	return sum / float64(len(names)), true
}
