package planner

import (
	"strings"

	"github.com/basalt-db/basalt/expression"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// A result column's metadata as MySQL 8 sends it for the select items
// whose type the expressions alone do not tell: a literal is as wide as
// its digits (SELECT 1 is a BIGINT of length 1) and never NULL, and so
// is a COALESCE or IFNULL with a never-NULL argument. Only the result
// columns are refined, not the expressions' own types, so that nothing
// computed from them changes.

// literalResultType is the type of a select item that is the literal c.
func literalResultType(c *expression.Constant) types.FieldType {
	tp := c.Tp
	switch c.Value.Kind() {
	case types.KindInt, types.KindUint:
		if tp.Tp == mysql.TypeLonglong && tp.Flag&mysql.IsBooleanFlag == 0 {
			tp.Flen = len(c.Value.String())
		}
	case types.KindDecimal:
		// Flen is the precision: the digits without sign or point.
		s := strings.TrimPrefix(c.Value.String(), "-")
		tp.Flen = max(len(strings.Replace(s, ".", "", 1)), 1)
	}
	return tp
}

// isCount reports a COUNT() select item, which is never NULL (it reads
// as a column of the aggregation, whose type does not say so).
func isCount(n ast.ExprNode) bool {
	a, ok := n.(*ast.AggregateFuncExpr)
	return ok && strings.EqualFold(a.F, "count")
}

// notNull reports an expression that is never NULL, as far as the
// result column's NOT NULL flag goes.
func notNull(e expression.Expr) bool {
	switch x := e.(type) {
	case *expression.Constant:
		return !x.Value.IsNull()
	case *expression.Func:
		if x.Name != "coalesce" && x.Name != "ifnull" {
			return false
		}
		for _, a := range x.Args {
			if notNull(a) || a.Type().Flag&mysql.NotNullFlag != 0 {
				return true
			}
		}
	}
	return false
}

// ParamFields returns fields with the type of each bare ? item set from
// the value params binds to it; fields itself when there is none.
func ParamFields(fields []ResultField, params []types.Datum) []ResultField {
	var out []ResultField
	for i, f := range fields {
		if f.Param == 0 || f.Param > len(params) {
			continue
		}
		if out == nil {
			out = append([]ResultField(nil), fields...)
		}
		out[i].Type = literalResultType(&expression.Constant{Value: params[f.Param-1], Tp: expression.TypeOf(params[f.Param-1])})
		if !params[f.Param-1].IsNull() {
			out[i].Type.Flag |= mysql.NotNullFlag
		}
	}
	if out == nil {
		return fields
	}
	return out
}
