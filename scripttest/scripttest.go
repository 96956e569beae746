// Package scripttest is how the data-driven test scripts of the SQL
// layers (expression, table, ddl, ...) print what they check: values,
// rows, field types and errors, one way for all of them.
package scripttest

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	parsertypes "github.com/pingcap/tidb/pkg/parser/types"
)

// Err prints an error: a MySQL error as its code and message, any
// other as "error: " and its text.
func Err(err error) string {
	var e *errno.Error
	if errors.As(err, &e) {
		return e.Error()
	}
	return "error: " + err.Error()
}

// Value prints a datum, strings (and ENUM and SET values) quoted.
func Value(d types.Datum) string {
	switch d.Kind() {
	case types.KindString, types.KindEnum, types.KindSet:
		return strconv.Quote(d.String())
	}
	return d.String()
}

// Row prints a row as (v1, v2, ...).
func Row(row []types.Datum) string {
	parts := make([]string, len(row))
	for i, d := range row {
		parts[i] = Value(d)
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// Type renders a field type from its parts: the parser's name of its
// type code, (length[,scale]), ENUM and SET members, UNSIGNED, and a
// string's collation.
func Type(ft types.FieldType) string {
	s := parsertypes.TypeToStr(ft.Tp, ft.Charset)
	switch {
	case len(ft.Elems) > 0:
		s += "(" + strings.Join(quoteAll(ft.Elems), ",") + ")"
	case ft.Decimal > 0 || ft.Tp == mysql.TypeNewDecimal:
		s += fmt.Sprintf("(%d,%d)", ft.Flen, ft.Decimal)
	case ft.Flen > 0:
		s += fmt.Sprintf("(%d)", ft.Flen)
	}
	if ft.Unsigned() {
		s += " unsigned"
	}
	if ft.Collate != "" {
		s += " " + ft.Collate
	} else if ft.Charset != "" {
		s += " " + ft.Charset
	}
	return s
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = "'" + strings.ReplaceAll(s, "'", "''") + "'"
	}
	return out
}
