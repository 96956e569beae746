//go:build !unix

package importer

// allocBlock returns an empty byte slice of capacity n (on the heap where
// memory cannot be mapped; see block.go).
func allocBlock(n int) []byte { return make([]byte, 0, n) }

// freeBlock leaves b to the collector.
func freeBlock([]byte) {}
