package bench

import "syscall"

// SysProcAttr makes the kernel kill a server when the process that started
// it (basalt bench, or a test) dies without stopping it, so that no server
// outlives its run.
func SysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
