package bench

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
)

// gatherEnvironment describes this machine and the programs of the plan.
// workDir is where the data directories live (its df is the disk). Facts
// that cannot be read stay empty.
func gatherEnvironment(plan *Plan, workDir string) Environment {
	env := Environment{
		CPUCores:        runtime.NumCPU(),
		GoVersion:       runtime.Version(),
		SysbenchVersion: sysbenchVersion(),
	}
	env.Hostname, _ = os.Hostname()
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		cores := 0
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), ":")
			if !ok {
				continue
			}
			switch strings.TrimSpace(k) {
			case "model name":
				if env.CPUModel == "" {
					env.CPUModel = strings.TrimSpace(v)
				}
			case "processor":
				cores++
			}
		}
		f.Close()
		if cores > 0 {
			env.CPUCores = cores
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				env.MemoryBytes = kb << 10
			}
		}
	}
	if out, err := exec.Command("df", "-hT", workDir).Output(); err == nil {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		env.Disk = strings.Join(strings.Fields(lines[len(lines)-1]), " ")
	}
	if b, err := os.ReadFile("/etc/os-release"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
				env.OS = strings.Trim(v, `"`)
			}
		}
	}
	if out, err := exec.Command("uname", "-srm").Output(); err == nil {
		env.Kernel = strings.TrimSpace(string(out))
	}
	for _, t := range plan.Targets {
		switch t.Kind {
		case KindBasalt, KindPlayground:
			bin := t.Binary
			if bin == "" {
				bin, _ = os.Executable()
			}
			if env.BasaltVersion == "" {
				if out, err := exec.Command(bin, "--version").Output(); err == nil {
					env.BasaltVersion = strings.Join(strings.Fields(strings.ReplaceAll(strings.TrimSpace(string(out)), "\n", "; ")), " ")
				}
			}
		case KindMariaDB:
			bin := t.Binary
			if bin == "" {
				bin = FindProgram("mariadbd", "/usr/sbin/mariadbd")
			}
			if bin != "" && env.MariaDBVersion == "" {
				// "/usr/sbin/mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for ..."
				v := programVersion(bin, "--version")
				if i := strings.Index(v, "Ver "); i >= 0 {
					v = "mariadbd " + v[i:]
				}
				env.MariaDBVersion = v
			}
		}
	}
	return env
}
