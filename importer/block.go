//go:build unix

package importer

import "syscall"

// allocBlock returns an empty byte slice of capacity n in memory mapped
// from the operating system, outside the Go heap, or on the heap if the
// mapping fails. Give it back with freeBlock.
func allocBlock(n int) []byte {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return make([]byte, 0, n)
	}
	return b[:0]
}

// freeBlock unmaps a block of allocBlock; a heap one is left to the
// collector (Munmap refuses, with EINVAL, what it did not map).
func freeBlock(b []byte) {
	if b = b[:cap(b)]; len(b) > 0 {
		_ = syscall.Munmap(b)
	}
}
