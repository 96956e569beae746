package playground

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A capped process runs in its own cgroup of the cpu controller with the
// quota asked for, and the kernel holds it to it: a busy loop allowed
// 0.01 CPUs is throttled. The cgroup goes when the process has.
func TestCapCPU(t *testing.T) {
	name := "test-" + strconv.Itoa(os.Getpid())
	if err := checkCPUCaps(Options{DBCPUs: 0.5}, name); err != nil {
		t.Skipf("no CPU caps on this machine: %v", err)
	}
	busy := exec.Command("sh", "-c", "while :; do :; done")
	if err := busy.Start(); err != nil {
		t.Fatal(err)
	}
	dir, err := capCPU(name, "db1", busy.Process.Pid, 0.01)
	if err != nil {
		busy.Process.Kill()
		busy.Wait()
		t.Fatal(err)
	}
	read := func(file string) string {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	if q := read("cpu.cfs_quota_us"); q != "1000" {
		t.Errorf("quota %s µs per 100 ms, want 1000", q)
	}
	if procs := read("cgroup.procs"); procs != strconv.Itoa(busy.Process.Pid) {
		t.Errorf("cgroup.procs: %q, want the busy loop's pid %d", procs, busy.Process.Pid)
	}
	time.Sleep(time.Second)
	m := regexp.MustCompile(`(?m)^nr_throttled (\d+)$`).FindStringSubmatch(read("cpu.stat"))
	busy.Process.Kill()
	busy.Wait()
	if m == nil || m[1] == "0" {
		t.Errorf("the busy loop was not throttled in a second: cpu.stat %v", m)
	}
	if err := removeCgroup(dir); err != nil {
		t.Errorf("removing the cgroup: %v", err)
	}
	if _, err := os.Stat(filepath.Dir(dir)); !os.IsNotExist(err) {
		t.Errorf("the playground's cgroup is left behind: %v", err)
	}

	if err := checkCPUCaps(Options{KVCPUs: 1000}, name); err == nil || !strings.Contains(err.Error(), "--kv.cpus 1000") {
		t.Errorf("a cap above the machine's CPUs: %v", err)
	}
	os.Remove(filepath.Join(cpuCgroupRoot, "basalt-playground", name))
}
