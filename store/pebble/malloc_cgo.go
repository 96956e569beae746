//go:build cgo

package pebble

/*
#include <stdlib.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

static void basalt_limit_malloc_arenas(int n) {
#if defined(__GLIBC__) && defined(M_ARENA_MAX)
	mallopt(M_ARENA_MAX, n);
#endif
}
*/
import "C"

// limitMallocArenas caps glibc's malloc arenas at n (elsewhere a no-op).
func limitMallocArenas(n int) { C.basalt_limit_malloc_arenas(C.int(n)) }
