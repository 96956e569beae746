package pebble

import (
	"github.com/basalt-db/basalt/store/mvcc"
	"github.com/cockroachdb/pebble/v2"
)

// The database's key order is bytewise, as Pebble's default comparer's;
// what Comparer adds is a Split that tells a versioned key's user key from
// its timestamp, so that Pebble builds its bloom filters on user keys and
// a read of one key's versions (a seek to enc(k) ++ ^ts, then Next over
// the older versions) can skip every table whose filter rules enc(k) out.
//
//	'w' enc(k) ^ts(8)    prefix 'w' enc(k), suffix ^ts
//	'd' enc(k) ^ts(8)    prefix 'd' enc(k), suffix ^ts
//	anything else        the whole key is the prefix: the lock column
//	                     family ('l' enc(k)), the storage node's 'm' and
//	                     'r' keys, range deletions' bounds, seek keys
//
// enc(k) is codec.EncodeBytes: groups of 8 bytes, each followed by a
// marker byte that is 0xFF on every group but the last. Split takes as
// prefix, after a 'w' or 'd', the leading run of groups up to the first
// marker other than 0xFF, wherever it is found; a key with no such marker
// is all prefix. So every key has a well-defined split, and two prefixes
// that both end at such a marker are never a proper prefix of one
// another (at the shorter one's last marker the longer one has 0xFF).
// From that, comparing prefixes bytewise and then suffixes bytewise gives
// exactly bytes.Compare, for any two byte strings: Pebble's key schema
// (which stores and seeks keys as prefix and suffix in data blocks) and
// prefix iteration agree with the order Compare defines, and no key
// changes place. TestComparerOrder checks it on every kind of key the
// database holds and on arbitrary bytes.
//
// ImmediateSuccessor stays the default comparer's (append a zero byte),
// which is not the next prefix key under this Split: Pebble needs it only
// for range keys, Iterator.NextPrefix and synthetic suffixes, none of
// which Basalt uses.
//
// Comparer.Name is written into every table and into the manifest:
// Pebble refuses to open a database, or read a table, made with another
// comparer. A database created before Comparer existed (Pebble's
// "leveldb.BytewiseComparator") keeps its comparer: see Open.
var Comparer = func() *pebble.Comparer {
	c := *pebble.DefaultComparer
	c.Split = split
	c.Name = "basalt.mvcc.v1"
	return &c
}()

// tsLen is the length of a version's timestamp (store/mvcc's keys.go).
const tsLen = 8

// split is Comparer.Split.
func split(key []byte) int {
	if len(key) == 0 || (key[0] != byte(mvcc.CFWrite) && key[0] != byte(mvcc.CFDefault)) {
		return len(key)
	}
	// The groups of enc(k) are 9 bytes: 8 of data and a marker.
	for i := 1 + 8; i < len(key); i += 9 {
		if key[i] != 0xFF {
			return i + 1
		}
	}
	return len(key)
}
