package executor

import (
	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// Rows store strings without their collation, and ENUM and SET values
// as their text. Reading a row gives each value its column's type back.

// needsTyping reports a column whose stored datums need typeStored.
func needsTyping(ft *catalog.FieldType) bool {
	if !ft.IsString() && !isJSON(ft) {
		return false
	}
	return ft.Collation() != types.CollationGeneralCI
}

// typeStored gives a datum read from a row its column's collation.
func typeStored(d types.Datum, c *catalog.ColumnInfo) types.Datum {
	return d.WithCollation(c.Type.Collation())
}

func isJSON(ft *catalog.FieldType) bool { return ft.Tp == mysql.TypeJSON }
