//go:build !cgo

package pebble

// limitMallocArenas does nothing without cgo: Pebble's block cache and
// memtables are then Go heap.
func limitMallocArenas(int) {}
