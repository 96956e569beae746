package table

import (
	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// Rows store strings without their collation, and ENUM and SET values
// as their text. Reading a row gives each value its column's type back.

// needsTyping reports a column whose stored datums need typeStored.
func needsTyping(ft *types.FieldType) bool {
	if ft.Tp == mysql.TypeEnum || ft.Tp == mysql.TypeSet {
		return true
	}
	if !ft.IsString() && !isJSON(ft) {
		return false
	}
	return ft.Collation() != types.CollationGeneralCI
}

// typeStored gives a datum read from a row its column's type: its
// collation, and ENUM and SET values their numbers.
func typeStored(d types.Datum, c *catalog.ColumnInfo) types.Datum {
	ft := &c.Type
	if d.Kind() != types.KindString {
		return d
	}
	coll := ft.Collation()
	switch ft.Tp {
	case mysql.TypeEnum:
		n := enumIndex(ft.Elems, d.Bytes(), coll)
		if n == 0 {
			return types.NewEnum(0, nil, coll)
		}
		return types.NewEnum(uint64(n), []byte(ft.Elems[n-1]), coll)
	case mysql.TypeSet:
		bits, _ := setBits(ft.Elems, d.Bytes(), coll)
		return types.NewSet(bits, d.Bytes(), coll)
	}
	return d.WithCollation(coll)
}

func isJSON(ft *types.FieldType) bool { return ft.Tp == mysql.TypeJSON }
