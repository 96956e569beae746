package playground

import "syscall"

// sysProcAttr puts a child in a process group of its own and has Linux
// send it SIGTERM if the playground dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
