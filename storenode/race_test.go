//go:build race

package storenode

// raceEnabled: the race detector's sync.Pool drops a share of what is
// put back, and its instrumentation allocates, so allocation bounds do not
// hold.
const raceEnabled = true
