package bench

import "syscall"

// sysProcAttr makes the kernel kill a server when basalt bench dies without
// stopping it, so that no server outlives the run.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
