package catalog

import (
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// Collation returns how values of this type compare: JSON as JSON text,
// binary strings as bytes, text under the type's collation (the default,
// utf8mb4_general_ci, when it names none).
func (ft *FieldType) Collation() types.Collation {
	switch {
	case ft.Tp == mysql.TypeJSON:
		return types.CollationJSON
	case ft.Charset == "binary":
		return types.CollationBinary
	}
	return types.CollationOf(ft.Collate)
}

// IsText reports a character string type whose values carry a collation
// (CHAR, VARCHAR, TEXT, ENUM, SET; not the binary strings nor JSON).
func (ft *FieldType) IsText() bool {
	return ft.IsString() && ft.Charset != "binary" && ft.Tp != mysql.TypeJSON
}

// legacyCollation is the collation of the text columns of tables created
// before Basalt had collations: those compared bytes, and their index
// keys hold the bytes themselves, which utf8mb4_nopad_bin keeps.
const legacyCollation = "utf8mb4_nopad_bin"

// upgradeCollations gives the text columns of a table created before
// collations, which have none recorded, the collation they behaved by.
// CREATE TABLE records one for every text column since.
func upgradeCollations(t *TableInfo) {
	if t.View != nil {
		return // a view's columns are its query's
	}
	for _, c := range append(t.Columns[:len(t.Columns):len(t.Columns)], t.Hidden...) {
		if c.Type.IsText() && c.Type.Collate == "" {
			c.Type.Collate = legacyCollation
		}
	}
}
