//go:build !linux

package bench

import "syscall"

// SysProcAttr has nothing to add outside Linux, which alone offers a
// parent-death signal.
func SysProcAttr() *syscall.SysProcAttr { return nil }
