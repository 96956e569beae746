// Package tso is Basalt's timestamp format, TiDB's: a timestamp is the
// milliseconds since the Unix epoch of the moment it was issued, shifted
// left by LogicalBits, plus a logical counter that tells apart timestamps
// issued within one millisecond:
//
//	 63                                  18 17               0
//	+--------------------------------------+------------------+
//	|  physical: ms since the Unix epoch   |  logical counter |
//	+--------------------------------------+------------------+
//
// So timestamps compare as their moments do, and one of them read as a
// time is the moment it was issued, to the millisecond. The oracles that
// issue them (the embedded store's, PD's) and the stores that compare them
// share this package; it imports nothing of Basalt.
package tso

// LogicalBits is the width of the logical counter.
const LogicalBits = 18

// MaxLogical bounds the logical counter: it is always below MaxLogical.
const MaxLogical = 1 << LogicalBits

// ComposeTS builds a timestamp from physical milliseconds and a logical
// counter below MaxLogical.
func ComposeTS(physicalMs, logical int64) uint64 {
	return uint64(physicalMs)<<LogicalBits | uint64(logical)
}

// PhysicalMs returns the physical milliseconds of ts.
func PhysicalMs(ts uint64) int64 { return int64(ts >> LogicalBits) }

// Logical returns the logical counter of ts.
func Logical(ts uint64) int64 { return int64(ts & (MaxLogical - 1)) }
