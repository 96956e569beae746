package raftstore

import (
	"encoding/binary"
)

// Key layout of a store's Pebble database. Region data lives under the
// column-family prefixes of store/pebble ('d', 'l', 'w', each followed by
// a memcomparable-encoded key); this package adds two prefixes of its own,
// which sort apart from those:
//
//	'm' "ident"                          → raft_serverpb.StoreIdent
//	'm' "prepare_bootstrap"              → the ID of a region written for
//	                                       bootstrapping, not yet known to PD
//	'r' regionID(8) 0x01 index(8)        → raftpb.Entry (the region's log)
//	'r' regionID(8) 0x02                 → raftpb.HardState
//	'r' regionID(8) 0x03                 → raft_serverpb.RaftApplyState
//	'r' regionID(8) 0x04                 → raft_serverpb.RegionLocalState
//
// Integers are big-endian, so a region's log is in index order.
const (
	raftPrefix   = 'r'
	logSuffix    = 0x01
	hardSuffix   = 0x02
	applySuffix  = 0x03
	regionSuffix = 0x04
)

var (
	identKey            = []byte("mident")
	prepareBootstrapKey = []byte("mprepare_bootstrap")
)

// dataCFs are the column-family prefixes of region data.
var dataCFs = []byte{'d', 'l', 'w'}

func regionPrefix(regionID uint64) []byte {
	k := make([]byte, 9, 18)
	k[0] = raftPrefix
	binary.BigEndian.PutUint64(k[1:], regionID)
	return k
}

func logKey(regionID, index uint64) []byte {
	k := append(regionPrefix(regionID), logSuffix)
	return binary.BigEndian.AppendUint64(k, index)
}

func hardStateKey(regionID uint64) []byte { return append(regionPrefix(regionID), hardSuffix) }
func applyStateKey(regionID uint64) []byte {
	return append(regionPrefix(regionID), applySuffix)
}
func regionStateKey(regionID uint64) []byte {
	return append(regionPrefix(regionID), regionSuffix)
}

// dataBounds returns the Pebble bounds of a region's data in column family
// cf: [cf ++ start, cf ++ end), with an empty end meaning the end of cf.
func dataBounds(cf byte, start, end []byte) (lo, hi []byte) {
	lo = append([]byte{cf}, start...)
	if len(end) == 0 {
		hi = []byte{cf + 1}
	} else {
		hi = append([]byte{cf}, end...)
	}
	return lo, hi
}
