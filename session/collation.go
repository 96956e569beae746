package session

import (
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// columnCharset is the character set of a text column.
func columnCharset(ft *types.FieldType) string {
	if _, cs, _, ok := types.LookupCollation(ft.CollationName()); ok {
		return cs
	}
	return "utf8mb4"
}

// collationRows are SHOW COLLATION's rows.
func collationRows(pattern *ast.PatternLikeOrIlikeExpr) [][]types.Datum {
	var out [][]types.Datum
	for _, c := range types.Collations() {
		if !like(pattern, c.Name) {
			continue
		}
		def := ""
		if c.Default {
			def = "Yes"
		}
		out = append(out, []types.Datum{str(c.Name), str(c.Charset), types.NewInt(int64(c.ID)), str(def), str("Yes"), types.NewInt(1)})
	}
	return out
}

// charsetRows are SHOW CHARACTER SET's rows.
func charsetRows(pattern *ast.PatternLikeOrIlikeExpr) [][]types.Datum {
	descs := []struct {
		name, desc string
		maxLen     int64
	}{
		{"ascii", "US ASCII", 1}, {"binary", "Binary pseudo charset", 1}, {"latin1", "cp1252 West European", 1},
		{"utf8mb3", "UTF-8 Unicode", 3}, {"utf8mb4", "UTF-8 Unicode", 4},
	}
	var out [][]types.Datum
	for _, d := range descs {
		if !like(pattern, d.name) {
			continue
		}
		_, def, _ := types.LookupCharset(d.name)
		out = append(out, []types.Datum{str(d.name), str(d.desc), str(def), types.NewInt(d.maxLen)})
	}
	return out
}
