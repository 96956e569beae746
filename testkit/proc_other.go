//go:build !linux

package testkit

import "syscall"

// sysProcAttr has nothing to add outside Linux, which alone offers a
// parent-death signal.
func sysProcAttr() *syscall.SysProcAttr { return nil }
