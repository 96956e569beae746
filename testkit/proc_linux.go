package testkit

import "syscall"

// sysProcAttr makes the kernel kill a server when the test process dies
// without running its cleanups (a test timeout's panic, for one), so that no
// server outlives its test.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
