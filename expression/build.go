package expression

import (
	"errors"
	"fmt"
	"github.com/cockroachdb/apd/v3"
	"strings"

	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/parserdriver"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/pingcap/tidb/pkg/parser/opcode"
)

// SchemaCol names one position of the rows an expression reads.
type SchemaCol struct {
	DB, Table, Name string
	Tp              types.FieldType
	// Hidden columns (row handles) are not part of * expansions.
	Hidden bool
	// Merged columns (the second copy of a USING or NATURAL join's
	// column) are reached only by qualified names.
	Merged bool
}

// Schema is the layout of the rows an expression reads.
type Schema struct {
	Cols []SchemaCol
}

// Find returns the position of column name, qualified by table (and db) if
// given. It fails with MySQL's 1054 or 1052, naming clause.
func (s *Schema) Find(db, table, name, clause string) (int, error) {
	found := -1
	for i, c := range s.Cols {
		if !strings.EqualFold(c.Name, name) || (c.Merged && table == "") {
			continue
		}
		if table != "" && !strings.EqualFold(c.Table, table) {
			continue
		}
		if db != "" && !strings.EqualFold(c.DB, db) {
			continue
		}
		if found >= 0 {
			return -1, errno.New(errno.ErNonUniq, "Column '%s' in %s is ambiguous", name, clause)
		}
		found = i
	}
	if found < 0 {
		full := name
		if table != "" {
			full = table + "." + name
		}
		return -1, errno.New(errno.ErBadField, "Unknown column '%s' in '%s'", full, clause)
	}
	return found, nil
}

// Builder compiles AST expressions against a schema.
type Builder struct {
	Schema *Schema
	// Clause names where the expressions stand, for errors.
	Clause string
	// Agg compiles an aggregate call; nil where aggregates are not allowed.
	Agg func(*ast.AggregateFuncExpr) (Expr, error)
	// Column, if set, resolves column names before the schema is searched
	// (ORDER BY and HAVING use it to reach select-list aliases).
	Column func(*ast.ColumnName) (Expr, bool, error)
	// Outer, if set, resolves a column name that the builder cannot: a
	// reference from a subquery to its outer query.
	Outer func(*ast.ColumnName) (Expr, bool, error)
	// Subquery, if set, compiles subquery expressions (scalar, EXISTS,
	// IN, ANY/ALL), with b the builder of the expression they stand in.
	Subquery func(b *Builder, n ast.ExprNode) (Expr, error)
}

// ConstantOf is the constant Builder.Build makes of the literal x.
func ConstantOf(x *parserdriver.ValueExpr) Constant { return constantOf(x) }

// constantOf is the constant of a literal.
func constantOf(x *parserdriver.ValueExpr) Constant {
	d := x.Datum
	if x.IsBinaryLiteral || x.Type.GetCharset() == "binary" {
		// x'..', b'..' and _binary'..' are binary strings.
		d = d.WithCollation(types.CollationBinary)
	}
	tp := TypeOf(d)
	if x.Type.GetFlag()&mysql.IsBooleanFlag != 0 {
		tp = typeBool
	}
	return Constant{Value: d, Tp: tp}
}

// Constants builds the constants of literals, as Builder.Build does, in
// blocks: one allocation per constantsBlock literals, not one each (a
// bulk INSERT's VALUES holds thousands). A block is never longer than
// the literals still expected (Expect), so a one-row INSERT allocates
// its few constants, not a whole block (a Constant is ~140 bytes: a
// 1024-long block was 140 KiB per statement). The zero value is ready
// to use; not safe for concurrent use.
type Constants struct {
	free []Constant
	// left is the number of literals still expected; blocks are cut to
	// it, and to constantsBlock.
	left int
}

const constantsBlock = 1024

// Expect tells cs that at most n more literals will be built, so that
// its blocks are no longer than needed. Literals beyond n still build,
// in blocks of constantsBlock, as without Expect.
func (cs *Constants) Expect(n int) { cs.left = n }

// Build compiles n with b, a literal from cs's blocks.
func (cs *Constants) Build(b *Builder, n ast.ExprNode) (Expr, error) {
	x, ok := n.(*parserdriver.ValueExpr)
	if !ok {
		return b.Build(n)
	}
	if len(cs.free) == 0 {
		size := constantsBlock
		if cs.left > 0 && cs.left < size {
			size = cs.left
		}
		cs.free = make([]Constant, size)
	}
	c := &cs.free[0]
	cs.free = cs.free[1:]
	cs.left = max(cs.left-1, 0)
	*c = constantOf(x)
	return c, nil
}

// ResolveColumn compiles a column reference as b would.
func (b *Builder) ResolveColumn(cn *ast.ColumnName) (Expr, error) { return b.column(cn) }

// Build compiles n.
func (b *Builder) Build(n ast.ExprNode) (Expr, error) {
	switch x := n.(type) {
	case *parserdriver.ParamMarkerExpr:
		if x.Typed {
			ft := &x.Type
			return &Param{Order: x.Order, Tp: &types.FieldType{Tp: ft.GetType(), Flag: ft.GetFlag(), Flen: ft.GetFlen(),
				Decimal: ft.GetDecimal(), Charset: ft.GetCharset(), Collate: ft.GetCollate(), Elems: ft.GetElems()}}, nil
		}
		return &Param{Order: x.Order}, nil
	case *parserdriver.ValueExpr:
		c := constantOf(x)
		return &c, nil
	case *ast.SetCollationExpr:
		return b.collate(x)
	case *ast.ColumnNameExpr:
		return b.column(x.Name)
	case *ast.ParenthesesExpr:
		return b.Build(x.Expr)
	case *ast.BinaryOperationExpr:
		return b.binary(x)
	case *ast.UnaryOperationExpr:
		a, err := b.Build(x.V)
		if err != nil {
			return nil, err
		}
		switch x.Op {
		case opcode.Minus:
			return newNeg(a), nil
		case opcode.Plus:
			return a, nil
		case opcode.Not, opcode.Not2:
			return newNot(a), nil
		case opcode.BitNeg:
			return &Func{Name: "~", Args: []Expr{a}, Tp: types.FieldType{Tp: mysql.TypeLonglong, Flen: 21, Flag: mysql.UnsignedFlag | mysql.BinaryFlag},
				Fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
					u, _, _, _ := types.ToUint(v[0])
					if v[0].Kind() == types.KindInt {
						u = uint64(v[0].Int())
					}
					return types.NewUint(^u), nil
				}}, nil
		}
		return nil, errno.New(errno.ErNotSupportedYet, "unary operator %s is not supported", x.Op)
	case *ast.BetweenExpr:
		e, err := b.Build(x.Expr)
		if err != nil {
			return nil, err
		}
		lo, err := b.Build(x.Left)
		if err != nil {
			return nil, err
		}
		hi, err := b.Build(x.Right)
		if err != nil {
			return nil, err
		}
		var r Expr = newAnd(newCompare(">=", e, lo), newCompare("<=", e, hi))
		if x.Not {
			r = newNot(r)
		}
		return r, nil
	case *ast.PatternInExpr:
		return b.in(x)
	case *ast.PatternLikeOrIlikeExpr:
		return b.like(x)
	case *ast.PatternRegexpExpr:
		return b.regexpExpr(x)
	case *ast.IsNullExpr:
		a, err := b.Build(x.Expr)
		if err != nil {
			return nil, err
		}
		isNull := &Func{Name: "isnull", Args: []Expr{a}, Tp: typeBool, NullSafe: true, Fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			return types.NewBool(v[0].IsNull()), nil
		}}
		if x.Not {
			// As TiDB shows it: not(isnull(a)).
			return newNot(isNull), nil
		}
		return isNull, nil
	case *ast.IsTruthExpr:
		a, err := b.Build(x.Expr)
		if err != nil {
			return nil, err
		}
		want, not := x.True != 0, x.Not
		return &Func{Name: "istrue", Args: []Expr{a}, Tp: typeBool, NullSafe: true, Fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			r := !v[0].IsNull() && types.ToBool(v[0]) == want
			return types.NewBool(r != not), nil
		}}, nil
	case *ast.FuncCallExpr:
		return b.call(x)
	case *ast.FuncCastExpr:
		return b.cast(x)
	case *ast.CaseExpr:
		return b.caseExpr(x)
	case *ast.VariableExpr:
		return b.variable(x)
	case *ast.AggregateFuncExpr:
		if b.Agg == nil {
			return nil, errno.New(errno.ErInvalidGroupFuncUse, "Invalid use of group function")
		}
		return b.Agg(x)
	case *ast.DefaultExpr:
		return nil, errno.New(errno.ErNotSupportedYet, "DEFAULT() is not supported here")
	case *ast.SubqueryExpr, *ast.ExistsSubqueryExpr, *ast.CompareSubqueryExpr:
		if b.Subquery == nil {
			return nil, errno.New(errno.ErNotSupportedYet, "subqueries are not supported here")
		}
		return b.Subquery(b, n)
	case *ast.RowExpr:
		return nil, errno.New(1241, "Operand should contain 1 column(s)")
	}
	return nil, errno.New(errno.ErNotSupportedYet, "expression %T is not supported yet", n)
}

func (b *Builder) column(cn *ast.ColumnName) (Expr, error) {
	e, err := b.localColumn(cn)
	if err != nil && b.Outer != nil {
		if ee, ok := err.(*errno.Error); ok && ee.Code == errno.ErBadField {
			oe, found, oerr := b.Outer(cn)
			if oerr != nil {
				return nil, oerr
			}
			if found {
				return oe, nil
			}
		}
	}
	return e, err
}

func (b *Builder) localColumn(cn *ast.ColumnName) (Expr, error) {
	if b.Column != nil {
		e, ok, err := b.Column(cn)
		if err != nil || ok {
			return e, err
		}
	}
	if b.Schema == nil {
		return nil, errno.New(errno.ErBadField, "Unknown column '%s' in '%s'", cn.Name.O, b.Clause)
	}
	i, err := b.Schema.Find(cn.Schema.O, cn.Table.O, cn.Name.O, b.Clause)
	if err != nil {
		return nil, err
	}
	c := b.Schema.Cols[i]
	return &Column{Idx: i, Tp: c.Tp, Name: c.Name}, nil
}

func (b *Builder) buildAll(ns []ast.ExprNode) ([]Expr, error) {
	out := make([]Expr, len(ns))
	for i, n := range ns {
		e, err := b.Build(n)
		if err != nil {
			return nil, err
		}
		out[i] = e
	}
	return out, nil
}

// compareOps are the comparison operators, as MySQL names them in errors.
var compareOps = map[opcode.Op]string{opcode.EQ: "=", opcode.NE: "<>", opcode.LT: "<", opcode.LE: "<=",
	opcode.GT: ">", opcode.GE: ">=", opcode.NullEQ: "<=>"}

func (b *Builder) binary(x *ast.BinaryOperationExpr) (Expr, error) {
	if op, ok := compareOps[x.Op]; ok && (rowArity(x.L) > 0 || rowArity(x.R) > 0) {
		if op == "<>" {
			op = "!="
		}
		return b.rowCompare(op, x.L, x.R)
	}
	l, err := b.Build(x.L)
	if err != nil {
		var ee *errno.Error
		if _, ok := compareOps[x.Op]; ok && isSubquery(x.L) && isSubquery(x.R) && errors.As(err, &ee) && ee.Code == errno.ErOperandColumns {
			// (SELECT a, b ...) op (SELECT x, y ...): row subqueries.
			return b.Subquery(b, x)
		}
		return nil, err
	}
	r, err := b.Build(x.R)
	if err != nil {
		return nil, err
	}
	if op, ok := compareOps[x.Op]; ok {
		if err := CheckCollationMix(op, l, r); err != nil {
			return nil, err
		}
	}
	switch x.Op {
	case opcode.EQ:
		return newCompare("=", l, r), nil
	case opcode.NE:
		return newCompare("!=", l, r), nil
	case opcode.LT:
		return newCompare("<", l, r), nil
	case opcode.LE:
		return newCompare("<=", l, r), nil
	case opcode.GT:
		return newCompare(">", l, r), nil
	case opcode.GE:
		return newCompare(">=", l, r), nil
	case opcode.NullEQ:
		return newCompare("<=>", l, r), nil
	case opcode.LogicAnd:
		return newAnd(l, r), nil
	case opcode.LogicOr:
		return newOr(l, r), nil
	case opcode.LogicXor:
		return newXor(l, r), nil
	case opcode.Plus:
		return newArith("+", l, r), nil
	case opcode.Minus:
		return newArith("-", l, r), nil
	case opcode.Mul:
		return newArith("*", l, r), nil
	case opcode.Div:
		return newArith("/", l, r), nil
	case opcode.IntDiv:
		f := newArith("DIV", l, r)
		f.Tp = typeInt
		return f, nil
	case opcode.Mod:
		return newArith("%", l, r), nil
	case opcode.And, opcode.Or, opcode.Xor, opcode.LeftShift, opcode.RightShift:
		return newBitOp(x.Op, l, r), nil
	}
	return nil, errno.New(errno.ErNotSupportedYet, "operator %s is not supported yet", x.Op)
}

func newBitOp(op opcode.Op, l, r Expr) Expr {
	return &Func{Name: op.String(), Args: []Expr{l, r}, Tp: types.FieldType{Tp: mysql.TypeLonglong, Flen: 21, Flag: mysql.UnsignedFlag | mysql.BinaryFlag},
		Fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			toU := func(d types.Datum) uint64 {
				if d.Kind() == types.KindInt {
					return uint64(d.Int())
				}
				i, _, _ := types.ToInt(d)
				if d.Kind() == types.KindUint {
					return d.Uint()
				}
				return uint64(i)
			}
			a, c := toU(v[0]), toU(v[1])
			switch op {
			case opcode.And:
				return types.NewUint(a & c), nil
			case opcode.Or:
				return types.NewUint(a | c), nil
			case opcode.Xor:
				return types.NewUint(a ^ c), nil
			case opcode.LeftShift:
				return types.NewUint(a << c), nil
			}
			return types.NewUint(a >> c), nil
		}}
}

func (b *Builder) in(x *ast.PatternInExpr) (Expr, error) {
	if x.Sel != nil {
		if b.Subquery == nil {
			return nil, errno.New(errno.ErNotSupportedYet, "subqueries are not supported here")
		}
		return b.Subquery(b, x)
	}
	if n := rowArity(x.Expr); n > 0 {
		return b.rowIn(x)
	}
	for _, v := range x.List {
		if rowArity(v) > 0 {
			return nil, errno.New(errno.ErOperandColumns, "Operand should contain 1 column(s)")
		}
	}
	e, err := b.Build(x.Expr)
	if err != nil {
		return nil, err
	}
	list, err := b.buildAll(x.List)
	if err != nil {
		return nil, err
	}
	not := x.Not
	return &In{Expr: e, List: list, Not: not}, nil
}

// In is expr [NOT] IN (list). It is its own node so that the planner can
// read the list as point ranges.
type In struct {
	Expr Expr
	List []Expr
	Not  bool
}

func (in *In) Type() types.FieldType { return typeBool }

func (in *In) Eval(ctx *Ctx, row []types.Datum) (types.Datum, error) {
	v, err := in.Expr.Eval(ctx, row)
	if err != nil || v.IsNull() {
		return types.Null, err
	}
	sawNull := false
	for _, e := range in.List {
		w, err := e.Eval(ctx, row)
		if err != nil {
			return types.Null, err
		}
		if w.IsNull() {
			sawNull = true
			continue
		}
		if types.Compare(v, w) == 0 {
			return types.NewBool(!in.Not), nil
		}
	}
	if sawNull {
		return types.Null, nil
	}
	return types.NewBool(in.Not), nil
}

func (b *Builder) like(x *ast.PatternLikeOrIlikeExpr) (Expr, error) {
	e, err := b.Build(x.Expr)
	if err != nil {
		return nil, err
	}
	p, err := b.Build(x.Pattern)
	if err != nil {
		return nil, err
	}
	if x.IsLike {
		if err := CheckCollationMix("like", e, p); err != nil {
			return nil, err
		}
	}
	escape := rune(x.Escape)
	not := x.Not
	ilike := !x.IsLike
	forcedColl, forced := explicitCollation(e, p)
	return &Func{Name: "like", Args: []Expr{e, p}, Tp: typeBool, Fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
		c := likeCollation(v[0], v[1])
		if forced {
			c = forcedColl
		}
		if ilike {
			c = types.CollationGeneralCI
		}
		return types.NewBool(MatchLikeCollated(types.ToText(v[0]), types.ToText(v[1]), escape, c) != not), nil
	}}, nil
}

// MatchLike reports whether s matches the LIKE pattern (% any run, _ one
// character, escape quoting the next character), comparing characters
// exactly.
func MatchLike(s, pattern string, escape byte) bool {
	return MatchLikeCollated([]byte(s), []byte(pattern), rune(escape), types.CollationNoPadBin)
}

func (b *Builder) caseExpr(x *ast.CaseExpr) (Expr, error) {
	var value Expr
	var err error
	if x.Value != nil {
		if value, err = b.Build(x.Value); err != nil {
			return nil, err
		}
	}
	var conds, results []Expr
	for _, w := range x.WhenClauses {
		c, err := b.Build(w.Expr)
		if err != nil {
			return nil, err
		}
		r, err := b.Build(w.Result)
		if err != nil {
			return nil, err
		}
		conds, results = append(conds, c), append(results, r)
	}
	var elseExpr Expr
	if x.ElseClause != nil {
		if elseExpr, err = b.Build(x.ElseClause); err != nil {
			return nil, err
		}
	}
	tp := unifyTypes(append(append([]Expr(nil), results...), elseExpr)...)
	reads := append(append(append([]Expr(nil), conds...), results...), value, elseExpr)
	return &Func{Name: "case", Tp: tp, reads: reads, Lazy: fitDecimal(tp, func(ctx *Ctx, row []types.Datum, _ []Expr) (types.Datum, error) {
		var v types.Datum
		if value != nil {
			var err error
			if v, err = value.Eval(ctx, row); err != nil {
				return types.Null, err
			}
		}
		for i, c := range conds {
			var hit bool
			if value != nil {
				w, err := c.Eval(ctx, row)
				if err != nil {
					return types.Null, err
				}
				hit = !v.IsNull() && !w.IsNull() && types.Compare(v, w) == 0
			} else {
				var err error
				if hit, err = EvalBool(ctx, c, row); err != nil {
					return types.Null, err
				}
			}
			if hit {
				return results[i].Eval(ctx, row)
			}
		}
		if elseExpr != nil {
			return elseExpr.Eval(ctx, row)
		}
		return types.Null, nil
	})}, nil
}

// fitDecimal makes a function that returns one of several arguments
// (CASE, IF, IFNULL, COALESCE) give its values the scale of its DECIMAL
// result type, as MySQL does: COALESCE(SUM(d), 0) on no rows is 0.00
// when d is DECIMAL(10,2), not 0. Other result types pass as they are.
func fitDecimal(tp types.FieldType, lazy func(*Ctx, []types.Datum, []Expr) (types.Datum, error)) func(*Ctx, []types.Datum, []Expr) (types.Datum, error) {
	if tp.Tp != mysql.TypeNewDecimal || tp.Decimal < 0 || tp.Decimal > 30 {
		return lazy
	}
	scale := int32(-tp.Decimal)
	return func(ctx *Ctx, row []types.Datum, args []Expr) (types.Datum, error) {
		v, err := lazy(ctx, row, args)
		if err != nil || v.IsNull() {
			return v, err
		}
		switch v.Kind() {
		case types.KindInt, types.KindUint, types.KindDecimal:
		default:
			return v, nil
		}
		d, _ := types.ToDecimal(v)
		if d == nil || (v.Kind() == types.KindDecimal && d.Exponent == scale) {
			return v, nil
		}
		r := new(apd.Decimal)
		if _, err := types.DecimalContext().Quantize(r, d, scale); err != nil {
			return v, nil
		}
		return types.NewDecimal(r), nil
	}
}

// unifyTypes picks the result type of expressions that may each be the
// result (CASE, IF, COALESCE): a string if any is, else a double, else a
// decimal, else an integer — unsigned if all are, and a DECIMAL(20,0) if
// signed and unsigned integers mix, as MySQL has it, since no BIGINT
// holds both -1 and 2^64-1.
func unifyTypes(es ...Expr) types.FieldType {
	var tps []types.FieldType
	for _, e := range es {
		if e != nil && e.Type().Tp != mysql.TypeNull {
			tps = append(tps, e.Type())
		}
	}
	if len(tps) == 0 {
		return types.FieldType{Tp: mysql.TypeNull}
	}
	out := tps[0]
	for _, t := range tps[1:] {
		mixedSign := out.IsInteger() && t.IsInteger() && out.Unsigned() != t.Unsigned()
		switch {
		case mixedSign:
			out = types.FieldType{Tp: mysql.TypeNewDecimal, Flen: 20, Flag: mysql.BinaryFlag}
		case out.Tp == t.Tp:
			out.Flen = max(out.Flen, t.Flen)
			out.Decimal = max(out.Decimal, t.Decimal)
		case out.IsString() || t.IsString():
			out = typeString
		case out.Tp == mysql.TypeDouble || t.Tp == mysql.TypeDouble || out.Tp == mysql.TypeFloat || t.Tp == mysql.TypeFloat:
			out = typeDouble
		case out.Tp == mysql.TypeNewDecimal || t.Tp == mysql.TypeNewDecimal:
			// As MySQL: the most integer digits and the most decimals.
			dec := max(out.Decimal, t.Decimal, 0)
			if !out.IsInteger() && out.Tp != mysql.TypeNewDecimal || !t.IsInteger() && t.Tp != mysql.TypeNewDecimal {
				out = types.FieldType{Tp: mysql.TypeNewDecimal, Flen: 65, Decimal: dec, Flag: mysql.BinaryFlag}
				break
			}
			out = types.FieldType{Tp: mysql.TypeNewDecimal, Flen: min(max(out.IntegerDigits(), t.IntegerDigits())+dec, 65), Decimal: dec, Flag: mysql.BinaryFlag}
		case out.IsInteger() && t.IsInteger():
			unsigned := out.Unsigned()
			out = typeInt
			if unsigned {
				out.Flag |= mysql.UnsignedFlag
			}
		default:
			out = typeString
		}
	}
	return out
}

func (b *Builder) variable(x *ast.VariableExpr) (Expr, error) {
	name := strings.ToLower(x.Name)
	if x.IsSystem {
		global := x.IsGlobal
		info := sysVarInfo(name)
		if err := checkSysVarScope(name, info, x.ExplicitScope, global); err != nil {
			return nil, err
		}
		tp := typeString
		switch info.Kind {
		case SysVarInt:
			tp = typeInt
		case SysVarUint:
			tp = typeInt
			tp.Flag |= mysql.UnsignedFlag
		case SysVarDouble:
			tp = typeDouble
		}
		return &Func{Name: "@@" + name, Tp: tp, Lazy: func(ctx *Ctx, _ []types.Datum, _ []Expr) (types.Datum, error) {
			return ctx.Session.SysVar(name, global)
		}}, nil
	}
	if x.Value != nil {
		return nil, errno.New(errno.ErNotSupportedYet, "assigning user variables in expressions is not supported yet")
	}
	return &Func{Name: "@" + name, Tp: typeString, Lazy: func(ctx *Ctx, _ []types.Datum, _ []Expr) (types.Datum, error) {
		v, _ := ctx.Session.UserVar(name)
		return v, nil
	}}, nil
}

// String renders an expression for EXPLAIN.
func String(e Expr) string {
	switch x := e.(type) {
	case *Column:
		return x.Name
	case *Constant:
		if x.Value.Kind() == types.KindString {
			return "'" + x.Value.Str() + "'"
		}
		return x.Value.String()
	case *Param:
		return "?"
	case *Corr:
		return fmt.Sprintf("corr(%s)", x.Name)
	case *Subquery:
		switch x.Kind {
		case SubExists:
			if x.Not {
				return "not exists(subquery)"
			}
			return "exists(subquery)"
		case SubIn:
			if x.Not {
				return "not in(subquery)"
			}
			return "in(subquery)"
		case SubAny:
			return x.Op + " any(subquery)"
		case SubAll:
			return x.Op + " all(subquery)"
		case SubRow:
			return x.Op + " row(subquery)"
		}
		return "scalar(subquery)"
	case *In:
		parts := make([]string, len(x.List))
		for i, l := range x.List {
			parts[i] = String(l)
		}
		op := "in"
		if x.Not {
			op = "not in"
		}
		return fmt.Sprintf("%s(%s, %s)", op, String(x.Expr), strings.Join(parts, ", "))
	case *Func:
		parts := make([]string, len(x.Args))
		for i, a := range x.Args {
			parts[i] = String(a)
		}
		return fmt.Sprintf("%s(%s)", x.Name, strings.Join(parts, ", "))
	}
	return fmt.Sprintf("%T", e)
}
