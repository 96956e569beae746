package planner

import (
	"strings"

	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/expression"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// aggBuilder collects the GROUP BY keys and aggregate calls of a query and
// compiles the expressions above the aggregation against its output: the
// group-by values first, then the aggregates. A column that is neither
// grouped nor aggregated reads the first row of its group (MySQL without
// ONLY_FULL_GROUP_BY).
type aggBuilder struct {
	c       *Context
	src     Plan
	groupBy []expression.Expr
	// groupAST are the GROUP BY items, positions and aliases resolved.
	groupAST []ast.ExprNode
	aggs     []*AggFunc
	aggTps   []types.FieldType
}

func (a *aggBuilder) addGroupBy(n ast.ExprNode, fields []*field) error {
	switch x := n.(type) {
	case *ast.PositionExpr:
		if x.N < 1 || x.N > len(fields) {
			return errno.New(errno.ErBadField, "Unknown column '%d' in 'group statement'", x.N)
		}
		n = fields[x.N-1].expr
	case *ast.ColumnNameExpr:
		if _, err := a.src.Schema().Find(x.Name.Schema.O, x.Name.Table.O, x.Name.Name.O, "group statement"); err != nil {
			for _, f := range fields {
				if f.alias != "" && strings.EqualFold(f.alias, x.Name.Name.O) {
					n = f.expr
					break
				}
			}
		}
	}
	e, err := a.c.builder(a.src.Schema(), "group statement").Build(n)
	if err != nil {
		return err
	}
	a.groupBy = append(a.groupBy, e)
	a.groupAST = append(a.groupAST, n)
	return nil
}

func (a *aggBuilder) outIndexOfAgg(i int) int { return len(a.groupBy) + i }

func (a *aggBuilder) builder(clause string) *expression.Builder {
	b := &expression.Builder{
		Clause: clause,
		Column: func(cn *ast.ColumnName) (expression.Expr, bool, error) {
			idx, err := a.src.Schema().Find(cn.Schema.O, cn.Table.O, cn.Name.O, clause)
			if err != nil {
				return nil, false, err
			}
			col := a.src.Schema().Cols[idx]
			for i, g := range a.groupBy {
				if gc, ok := g.(*expression.Column); ok && gc.Idx == idx {
					return &expression.Column{Idx: i, Tp: col.Tp, Name: col.Name}, true, nil
				}
			}
			arg := &expression.Column{Idx: idx, Tp: col.Tp, Name: col.Name}
			return a.addAgg(&AggFunc{Name: "first_row", Args: []expression.Expr{arg}}, col.Tp, col.Name), true, nil
		},
		Agg: func(x *ast.AggregateFuncExpr) (expression.Expr, error) {
			return a.aggCall(x)
		},
	}
	a.c.hook(b)
	return b
}

func (a *aggBuilder) build(n ast.ExprNode, clause string) (expression.Expr, error) {
	return a.builder(clause).Build(n)
}

// buildWithAliases builds HAVING: select-list aliases resolve to the
// select-list expressions.
func (a *aggBuilder) buildWithAliases(n ast.ExprNode, clause string, fields []*field, exprs []expression.Expr) (expression.Expr, error) {
	b := a.builder(clause)
	inner := b.Column
	b.Column = func(cn *ast.ColumnName) (expression.Expr, bool, error) {
		if cn.Table.O == "" {
			for i, f := range fields {
				if f.alias != "" && strings.EqualFold(f.alias, cn.Name.O) {
					return exprs[i], true, nil
				}
			}
		}
		return inner(cn)
	}
	return b.Build(n)
}

func (a *aggBuilder) addAgg(f *AggFunc, tp types.FieldType, name string) expression.Expr {
	a.aggs = append(a.aggs, f)
	a.aggTps = append(a.aggTps, tp)
	return &expression.Column{Idx: a.outIndexOfAgg(len(a.aggs) - 1), Tp: tp, Name: name}
}

func (a *aggBuilder) aggCall(x *ast.AggregateFuncExpr) (expression.Expr, error) {
	eb := a.c.builder(a.src.Schema(), "field list")
	f := &AggFunc{Name: strings.ToLower(x.F), Distinct: x.Distinct, Separator: ","}
	args := x.Args
	if f.Name == "group_concat" && len(args) > 1 {
		// The parser puts the separator last.
		if v, ok := args[len(args)-1].(ast.ValueExpr); ok {
			f.Separator = v.GetString()
			args = args[:len(args)-1]
		}
	}
	for _, n := range args {
		e, err := eb.Build(n)
		if err != nil {
			return nil, err
		}
		f.Args = append(f.Args, e)
	}
	if x.Order != nil {
		for _, it := range x.Order.Items {
			n := it.Expr
			if pe, ok := n.(*ast.PositionExpr); ok {
				if pe.N < 1 || pe.N > len(args) {
					return nil, errno.New(errno.ErBadField, "Unknown column '%d' in 'order clause'", pe.N)
				}
				n = args[pe.N-1]
			}
			e, err := eb.Build(n)
			if err != nil {
				return nil, err
			}
			f.Order = append(f.Order, SortItem{Expr: e, Desc: it.Desc})
		}
	}
	if f.Name == "count" && len(args) == 1 {
		if v, ok := args[0].(ast.ValueExpr); ok && v.GetValue() != nil && !x.Distinct {
			f.Star = true
		}
	}
	var tp types.FieldType
	switch f.Name {
	case "count":
		tp = types.FieldType{Tp: mysql.TypeLonglong, Flen: 21, Flag: mysql.BinaryFlag}
	case "sum", "avg":
		at := f.Args[0].Type()
		if at.Tp == mysql.TypeDouble || at.Tp == mysql.TypeFloat || at.IsString() {
			tp = types.FieldType{Tp: mysql.TypeDouble, Flen: 22, Decimal: 31, Flag: mysql.BinaryFlag}
		} else {
			// MySQL's: SUM adds 22 digits of precision to its argument's,
			// AVG 4 and 4 decimals (div_precision_increment).
			dec, prec := at.Decimal, at.Flen
			if at.Tp != mysql.TypeNewDecimal {
				dec, prec = 0, at.IntegerDigits()
			}
			if prec <= 0 {
				prec = 65
			}
			if f.Name == "avg" {
				dec, prec = min(dec+4, 30), prec+4
			} else {
				prec += 22
			}
			tp = types.FieldType{Tp: mysql.TypeNewDecimal, Flen: min(prec, 65), Decimal: dec, Flag: mysql.BinaryFlag}
		}
	case "min", "max":
		tp = f.Args[0].Type()
	case "group_concat":
		tp = types.FieldType{Tp: mysql.TypeVarString, Flen: 1024, Charset: "utf8mb4"}
	case "bit_and", "bit_or", "bit_xor":
		tp = types.FieldType{Tp: mysql.TypeLonglong, Flen: 21, Flag: mysql.UnsignedFlag | mysql.BinaryFlag}
	default:
		return nil, errno.New(errno.ErNotSupportedYet, "aggregate %s is not supported yet", x.F)
	}
	return a.addAgg(f, tp, x.F), nil
}

func (a *aggBuilder) plan() Plan {
	s := &expression.Schema{}
	for _, g := range a.groupBy {
		s.Cols = append(s.Cols, expression.SchemaCol{Tp: g.Type()})
	}
	for _, tp := range a.aggTps {
		s.Cols = append(s.Cols, expression.SchemaCol{Tp: tp})
	}
	return &Aggregation{base: base{schema: s}, Child: a.src, GroupBy: a.groupBy, Aggs: a.aggs}
}
