package mvcc

import (
	"github.com/basalt-db/basalt/codec"
)

// Key layout. A user key k is stored memcomparable-encoded (codec.EncodeBytes),
// so that a timestamp appended to it cannot change the order of user keys:
//
//	CFLock:    enc(k)                       → lock record      (lock.go)
//	CFWrite:   enc(k) ++ ^commitTS (8 BE)   → write record     (write.go)
//	CFDefault: enc(k) ++ ^startTS  (8 BE)   → value
//
// Timestamps are stored inverted, so a key's newest version sorts first and
// "the newest version at or below ts" is a single SeekGE(enc(k) ++ ^ts).
// Within one column family all versions of k lie in [enc(k), next(enc(k))),
// where next increments the final byte of enc(k): that byte is the marker
// of a final group, always below 0xFF.

const tsLen = 8

// encodeKey returns enc(k).
func encodeKey(k []byte) []byte {
	return codec.EncodeBytes(make([]byte, 0, codec.EncodedBytesLen(len(k))+tsLen), k)
}

// versionKey returns encKey ++ ^ts in a new slice.
func versionKey(encKey []byte, ts uint64) []byte {
	return codec.EncodeUintDesc(append(make([]byte, 0, len(encKey)+tsLen), encKey...), ts)
}

// keyEnd returns next(encKey): the smallest encoded key after every version
// of encKey.
func keyEnd(encKey []byte) []byte {
	end := append([]byte(nil), encKey...)
	end[len(end)-1]++
	return end
}

// splitVersionKey splits a CFWrite or CFDefault key into enc(k) and its
// timestamp.
func splitVersionKey(key []byte) (encKey []byte, ts uint64, err error) {
	if len(key) < tsLen {
		return nil, 0, codec.ErrCorrupt
	}
	_, ts, err = codec.DecodeUintDesc(key[len(key)-tsLen:])
	return key[:len(key)-tsLen], ts, err
}

// decodeKey returns the user key k of enc(k).
func decodeKey(encKey []byte) ([]byte, error) {
	_, k, err := codec.DecodeBytes(encKey, nil)
	return k, err
}
