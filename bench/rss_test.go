package bench

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"testing"
	"time"
)

// TestParseProcStatus reads VmRSS and VmHWM from /proc/PID/status text.
func TestParseProcStatus(t *testing.T) {
	status := "Name:\tbasalt\nVmPeak:\t 2000000 kB\nVmHWM:\t  524288 kB\nVmRSS:\t  131072 kB\nThreads:\t9\n"
	m, ok := parseProcStatus(status)
	if !ok || m.rss != 128<<20 || m.hwm != 512<<20 {
		t.Errorf("parseProcStatus: %+v %v, want rss 128 MiB, hwm 512 MiB", m, ok)
	}
	if _, ok := parseProcStatus("Name:\tkthreadd\nThreads:\t1\n"); ok {
		t.Error("a kernel thread's status (no VmRSS): ok")
	}
}

// TestRSSOf: the total is the sum of the processes' peaks, and the
// processes not reset are named as sampled.
func TestRSSOf(t *testing.T) {
	r := rssOf(map[string]int64{"pd1": 10 << 20, "store1": 20 << 20, "db1": 30 << 20},
		map[string]bool{"pd1": true, "db1": true})
	if r.TotalBytes != 60<<20 || r.MiB() != 60 || len(r.Sampled) != 1 || r.Sampled[0] != "store1" {
		t.Errorf("rssOf: %+v", r)
	}
	if rssOf(nil, nil) != nil {
		t.Error("no peaks: not nil")
	}
	var m *rssMeter // a target that is not measured
	if startRSS(nil) != nil || m.finish() != nil {
		t.Error("no processes: a meter, or figures")
	}
}

// TestRSSMeterPeakOfRun checks the meter on a child process that touches
// 64 MiB, frees them, then is measured: the peak of the run is its
// resident set now, not the 64 MiB of before (which VmHWM keeps unless
// reset), and a second run that touches 40 MiB reports them. The child is
// this test binary (TestRSSChild); it also checks that the peak is reset,
// not just sampled, so that it fails where clear_refs does not work.
func TestRSSMeterPeakOfRun(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc is Linux's")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestRSSChild$")
	cmd.Env = append(os.Environ(), "BENCH_RSS_CHILD=1")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		in.Close()
		cmd.Wait()
	}()
	// step asks the child to touch mib MiB and free them, and waits.
	step := func(mib int) {
		t.Helper()
		if _, err := in.Write([]byte(strconv.Itoa(mib) + "\n")); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(out, make([]byte, 3)); err != nil {
			t.Fatal(err)
		}
	}
	pid := cmd.Process.Pid
	step(64)
	before, _ := readProcMemory(pid)
	if before.hwm < 64<<20 {
		t.Fatalf("the child's VmHWM is %d MiB after touching 64 MiB", before.hwm>>20)
	}

	m := startRSS(map[string]int{"child": pid})
	time.Sleep(50 * time.Millisecond) // less than a sampling period
	r := m.finish()
	if r == nil || len(r.Sampled) != 0 {
		t.Fatalf("the child's VmHWM could not be reset: %+v", r)
	}
	// The child's resident set is some MiB (more under -race) once the
	// 64 MiB are freed.
	idle := r.Peaks["child"]
	if idle <= 0 || idle > before.rss+8<<20 || idle > before.hwm-32<<20 {
		t.Errorf("peak of an idle run: %d MiB, want its resident set, %d MiB (VmHWM was %d MiB before the reset)",
			idle>>20, before.rss>>20, before.hwm>>20)
	}

	m = startRSS(map[string]int{"child": pid})
	step(40) // touched and freed within the run, faster than sampling
	r = m.finish()
	if p := r.Peaks["child"]; p < idle+32<<20 || r.TotalBytes != p {
		t.Errorf("peak of a run that touched 40 MiB: %d MiB (total %d), idle %d MiB", p>>20, r.TotalBytes>>20, idle>>20)
	}
}

// TestRSSMeterSampled: a process whose peak cannot be reset is sampled
// every 100 ms, and named as sampled.
func TestRSSMeterSampled(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc is Linux's")
	}
	defer func(f func(int) bool) { resetPeak = f }(resetPeak)
	resetPeak = func(int) bool { return false }
	m := startRSS(map[string]int{"self": os.Getpid(), "gone": 1 << 30})
	time.Sleep(3 * rssSampleInterval)
	r := m.finish()
	if r == nil || r.Peaks["self"] <= 0 || len(r.Peaks) != 1 || len(r.Sampled) != 1 || r.Sampled[0] != "self" {
		t.Errorf("sampled: %+v, want self's peak alone, named as sampled", r)
	}
	if again := m.finish(); again == nil || again.Peaks["self"] < r.Peaks["self"] {
		t.Errorf("finish again: %+v", again)
	}
}

// TestRSSChild is TestRSSMeterPeakOfRun's child: for each number N read
// from stdin it touches N MiB, frees them (returned to the kernel), and
// answers "ok".
func TestRSSChild(t *testing.T) {
	if os.Getenv("BENCH_RSS_CHILD") == "" {
		t.Skip("the child of TestRSSMeterPeakOfRun")
	}
	for {
		var mib int
		if _, err := fmt.Fscan(os.Stdin, &mib); err != nil {
			os.Exit(0)
		}
		b := make([]byte, mib<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		runtime.KeepAlive(b)
		b = nil
		debug.FreeOSMemory()
		os.Stdout.Write([]byte("ok\n"))
	}
}

// TestPlaygroundNodes reads the running nodes' PIDs from a playground's
// state file; stopped nodes (PID 0) are left out.
func TestPlaygroundNodes(t *testing.T) {
	dir := t.TempDir()
	state := `{"name": "p", "pid": 100, "nodes": [
		{"name": "pd1", "role": "pd", "pid": 101, "status": "up"},
		{"name": "store1", "role": "store", "pid": 102, "status": "up"},
		{"name": "db1", "role": "sql", "pid": 103, "status": "up"},
		{"name": "db2", "role": "sql", "status": "stopped"},
		{"name": "haproxy", "role": "haproxy", "pid": 104, "status": "up"}]}`
	if err := os.WriteFile(filepath.Join(dir, "playground.json"), []byte(state), 0o644); err != nil {
		t.Fatal(err)
	}
	got := playgroundNodes(dir)
	want := map[string]int{"pd1": 101, "store1": 102, "db1": 103, "haproxy": 104}
	if len(got) != len(want) {
		t.Fatalf("playgroundNodes: %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("playgroundNodes: %v, want %v", got, want)
		}
	}
	if playgroundNodes(t.TempDir()) != nil {
		t.Error("no state file: nodes")
	}
}

// BenchmarkRSSMeter is what measuring one run costs on Linux: a write to
// clear_refs and two reads of /proc/PID/status, of this process.
func BenchmarkRSSMeter(b *testing.B) {
	procs := map[string]int{"self": os.Getpid()}
	for b.Loop() {
		if r := startRSS(procs).finish(); r == nil || len(r.Sampled) != 0 {
			b.Fatalf("%+v", r)
		}
	}
}
