package playground

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
)

// CPU caps: with --db.cpus or --kv.cpus, each SQL node or store runs in a
// cgroup of its own under the cgroup v1 cpu controller, allowed that many
// CPUs (a CFS quota per 100 ms period), so that on a small machine adding
// nodes adds capacity, as the scale-out scenario of TiDB's reports needs.
// The playground makes the cgroups under cpuCgroupRoot/basalt-playground/
// <name>/<node> and removes each when its process has ended.

// cpuCgroupRoot is where the cpu controller is mounted (cgroup v1).
var cpuCgroupRoot = "/sys/fs/cgroup/cpu"

// cfsPeriod is the CFS period of a capped node's cgroup, in µs.
const cfsPeriod = 100000

// cpusFor is the CPU cap of role's nodes, 0 for none.
func (o *Options) cpusFor(role Role) float64 {
	switch role {
	case RoleSQL:
		return o.DBCPUs
	case RoleStore:
		return o.KVCPUs
	}
	return 0
}

// checkCPUCaps says why the caps cannot be had, before any node starts:
// a bad value, or no writable cpu controller.
func checkCPUCaps(o Options, name string) error {
	for _, c := range []struct {
		flag string
		cpus float64
	}{{"--db.cpus", o.DBCPUs}, {"--kv.cpus", o.KVCPUs}} {
		if c.cpus != 0 && (c.cpus < 0.01 || c.cpus > float64(runtime.NumCPU())) {
			return fmt.Errorf("%s %g: want between 0.01 and %d (this machine's CPUs)", c.flag, c.cpus, runtime.NumCPU())
		}
	}
	if o.DBCPUs == 0 && o.KVCPUs == 0 {
		return nil
	}
	dir := filepath.Join(cpuCgroupRoot, "basalt-playground", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cannot cap the nodes' CPU: %w (--db.cpus and --kv.cpus need the cgroup v1 cpu controller at %s, writable: run as root)",
			err, cpuCgroupRoot)
	}
	return nil
}

// capCPU moves pid into a new cgroup for the node, allowed cpus CPUs, and
// returns the cgroup's directory.
func capCPU(playground, node string, pid int, cpus float64) (string, error) {
	dir := filepath.Join(cpuCgroupRoot, "basalt-playground", playground, node)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	for _, f := range []struct{ name, value string }{
		{"cpu.cfs_period_us", strconv.Itoa(cfsPeriod)},
		{"cpu.cfs_quota_us", strconv.Itoa(int(cpus * cfsPeriod))},
		{"cgroup.procs", strconv.Itoa(pid)},
	} {
		if err := os.WriteFile(filepath.Join(dir, f.name), []byte(f.value), 0o644); err != nil {
			_ = os.Remove(dir)
			return "", fmt.Errorf("capping %s's CPU: %w", node, err)
		}
	}
	return dir, nil
}

// removeCgroup removes a node's cgroup, which its process has left by
// ending, and the playground's if that was the last (another node's
// keeps it otherwise, and the kernel refuses).
func removeCgroup(dir string) error {
	if dir == "" {
		return nil
	}
	err := os.Remove(dir)
	_ = os.Remove(filepath.Dir(dir))
	return err
}
