// Package tablecodec maps rows and index entries to keys and values.
//
//	row:          t{tableID}_r{handle}                    → row value (row.go)
//	index entry:  t{tableID}_i{indexID}{values}           → handle   (unique, no NULL)
//	              t{tableID}_i{indexID}{values}{handle}   → ""       (otherwise)
//
// tableID and indexID are codec.EncodeInt; {values} are the indexed
// columns' memcomparable datums (datum.go); {handle} is the row's handle:
// codec.EncodeInt of an integer primary key (or of the hidden row id), or
// the memcomparable datums of a clustered composite primary key. Keys of
// one table sort together, its indexes before its rows, each index's
// entries in index order.
package tablecodec

import (
	"errors"

	"github.com/basalt-db/basalt/codec"
	"github.com/basalt-db/basalt/types"
)

// ErrBadKey reports a key that is not a row or index key of the kind asked.
var ErrBadKey = errors.New("tablecodec: malformed key")

const (
	tablePrefix = 't'
	rowSep      = "_r"
	indexSep    = "_i"
	prefixLen   = 1 + 8 + 2
	// MetaPrefix starts every catalog key; it sorts before every table.
	MetaPrefix = 'm'
)

// TablePrefix returns t{tableID}.
func TablePrefix(tableID int64) []byte {
	return codec.EncodeInt([]byte{tablePrefix}, tableID)
}

// RowPrefix returns t{tableID}_r, the prefix of every row key of the table.
func RowPrefix(tableID int64) []byte {
	return append(TablePrefix(tableID), rowSep...)
}

// IndexPrefix returns t{tableID}_i{indexID}.
func IndexPrefix(tableID, indexID int64) []byte {
	return codec.EncodeInt(append(TablePrefix(tableID), indexSep...), indexID)
}

// TableEnd returns the first key after every key of the table.
func TableEnd(tableID int64) []byte { return TablePrefix(tableID + 1) }

// Handle identifies a row within its table: an integer, or the encoded
// datums of a clustered primary key.
type Handle struct {
	// Int is the handle when Common is nil.
	Int int64
	// Common holds the memcomparable primary-key datums of a clustered
	// non-integer primary key.
	Common []byte
}

// IntHandle returns an integer handle.
func IntHandle(v int64) Handle { return Handle{Int: v} }

// Encoded returns the handle as it appears in keys.
func (h Handle) Encoded() []byte {
	if h.Common != nil {
		return h.Common
	}
	return codec.EncodeInt(nil, h.Int)
}

// RowKey returns t{tableID}_r{handle}.
func RowKey(tableID int64, h Handle) []byte {
	return AppendRowKey(make([]byte, 0, prefixLen+8+len(h.Common)), tableID, h)
}

// AppendRowKey is RowKey appended to dst.
func AppendRowKey(dst []byte, tableID int64, h Handle) []byte {
	k := append(codec.EncodeInt(append(dst, tablePrefix), tableID), rowSep...)
	if h.Common != nil {
		return append(k, h.Common...)
	}
	return codec.EncodeInt(k, h.Int)
}

// DecodeRowKey returns the handle of a row key; common says whether the
// table's handles are clustered datums.
func DecodeRowKey(key []byte, common bool) (tableID int64, h Handle, err error) {
	if len(key) < prefixLen || key[0] != tablePrefix || string(key[9:11]) != rowSep {
		return 0, h, ErrBadKey
	}
	_, tableID, _ = codec.DecodeInt(key[1:9])
	rest := key[prefixLen:]
	if common {
		return tableID, Handle{Common: append([]byte(nil), rest...)}, nil
	}
	if len(rest) != 8 {
		return 0, h, ErrBadKey
	}
	_, v, _ := codec.DecodeInt(rest)
	return tableID, IntHandle(v), nil
}

// IndexNoValue is the value of an index entry that holds no handle (a
// non-unique entry, whose key ends with the handle): one byte, '0', as
// TiDB writes it, because an empty value means a deletion to client-go and
// TiKV.
var IndexNoValue = []byte{'0'}

// IndexValueHasHandle reports whether an index entry's value is the
// handle, rather than IndexNoValue (or empty, as data written before
// IndexNoValue holds).
func IndexValueHasHandle(v []byte) bool {
	return len(v) > 1
}

// IndexKey returns the key of an index entry: the prefix, the encoded
// values and, if withHandle, the handle.
func IndexKey(tableID, indexID int64, values []types.Datum, h Handle, withHandle bool) ([]byte, error) {
	// One allocation for the common keys (numbers and short strings).
	return AppendIndexKey(make([]byte, 0, prefixLen+8+10*len(values)+max(9, len(h.Common))), tableID, indexID, values, h, withHandle)
}

// AppendIndexKey is IndexKey appended to dst (an index build's reused
// buffer).
func AppendIndexKey(dst []byte, tableID, indexID int64, values []types.Datum, h Handle, withHandle bool) ([]byte, error) {
	k := codec.EncodeInt(append(dst, tablePrefix), tableID)
	k = codec.EncodeInt(append(k, indexSep...), indexID)
	var err error
	for _, v := range values {
		if k, err = EncodeKeyDatum(k, v); err != nil {
			return nil, err
		}
	}
	if withHandle {
		if h.Common != nil {
			k = append(k, h.Common...)
		} else {
			k = codec.EncodeInt(k, h.Int)
		}
	}
	return k, nil
}

// DecodeIndexKey splits an index key into its n indexed datums and, if the
// key carries one, the handle.
func DecodeIndexKey(key []byte, n int, common bool) (values []types.Datum, h Handle, hasHandle bool, err error) {
	if len(key) < prefixLen+8 || key[0] != tablePrefix || string(key[9:11]) != indexSep {
		return nil, h, false, ErrBadKey
	}
	rest := key[prefixLen+8:]
	values = make([]types.Datum, n)
	for i := range values {
		if rest, values[i], err = DecodeKeyDatum(rest); err != nil {
			return nil, h, false, err
		}
	}
	if len(rest) == 0 {
		return values, h, false, nil
	}
	h, err = DecodeHandle(rest, common)
	return values, h, err == nil, err
}

// DecodeHandle decodes an encoded handle (an index value or key suffix).
func DecodeHandle(b []byte, common bool) (Handle, error) {
	if common {
		return Handle{Common: append([]byte(nil), b...)}, nil
	}
	if len(b) != 8 {
		return Handle{}, ErrBadKey
	}
	_, v, _ := codec.DecodeInt(b)
	return IntHandle(v), nil
}
