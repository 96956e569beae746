//go:build !linux

package bench

import "syscall"

// sysProcAttr has nothing to add outside Linux, which alone offers a
// parent-death signal.
func sysProcAttr() *syscall.SysProcAttr { return nil }
