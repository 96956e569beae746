package expression

import (
	"fmt"

	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// This file holds the expressions that run a nested plan: subqueries, and
// the values that flow into a nested plan from the row that runs it.
//
// A nested plan reads values of the outer row through Corr expressions.
// The operator that runs the plan (a subquery expression, or an index
// lookup join) binds a frame of values in Ctx.Corr under the plan's frame
// ID before it opens the plan, and restores the previous frame after.
// Frame IDs are unique within one statement's plan.

// Corr reads slot Slot of frame ID of Ctx.Corr.
type Corr struct {
	ID, Slot int
	Tp       types.FieldType
	Name     string
}

func (c *Corr) Eval(ctx *Ctx, _ []types.Datum) (types.Datum, error) {
	if c.ID >= len(ctx.Corr) || c.Slot >= len(ctx.Corr[c.ID]) {
		return types.Null, errno.New(errno.ErNotSupportedYet, "correlated value %s read outside its frame", c.Name)
	}
	return ctx.Corr[c.ID][c.Slot], nil
}
func (c *Corr) Type() types.FieldType { return c.Tp }

// BindFrame sets frame id to vals and returns the previous frame, for
// RestoreFrame.
func (ctx *Ctx) BindFrame(id int, vals []types.Datum) []types.Datum {
	for len(ctx.Corr) <= id {
		ctx.Corr = append(ctx.Corr, nil)
	}
	old := ctx.Corr[id]
	ctx.Corr[id] = vals
	return old
}

// RestoreFrame puts back a frame BindFrame returned.
func (ctx *Ctx) RestoreFrame(id int, old []types.Datum) { ctx.Corr[id] = old }

// SubqueryRunner runs the plans of subqueries. The executor implements it;
// it is set in Ctx.Subq for the statement.
type SubqueryRunner interface {
	// Rows runs s's plan with its frame bound to params and returns up to
	// limit rows (all if limit <= 0). The rows stay valid.
	Rows(ctx *Ctx, s *Subquery, params []types.Datum, limit int) ([][]types.Datum, error)
	// Contains reports whether the rows of an uncorrelated subquery hold
	// a row equal to left, and whether they hold a row with a NULL; only
	// for subqueries with Hashable set.
	Contains(ctx *Ctx, s *Subquery, left []types.Datum) (found, sawNull bool, err error)
	// Lookup returns the last value of the row of a Keyed subquery
	// whose other values equal key (none NULL), and whether there is
	// one.
	Lookup(ctx *Ctx, s *Subquery, key []types.Datum) (types.Datum, bool, error)
}

// SubqueryKind says what a subquery expression computes.
type SubqueryKind int

const (
	// SubScalar is the one value of the one row (NULL for no row).
	SubScalar SubqueryKind = iota
	// SubExists is EXISTS.
	SubExists
	// SubIn is Left [NOT] IN (subquery), with MySQL's NULL semantics.
	SubIn
	// SubAny is Left Op ANY (subquery); SubAll is Left Op ALL (subquery).
	SubAny
	SubAll
	// SubRow is Left Op (subquery), a row compared with a row subquery:
	// the subquery's one row (a row of NULLs when it has none; error 1242
	// when it has more) compared with Left as MySQL compares rows.
	SubRow
)

// Subquery is a subquery used as a value. Plan is a planner.Plan (opaque
// here); its rows have Cols columns. Params are evaluated over the outer
// row and bound as frame ID while the plan runs. A subquery without Params
// is uncorrelated: the runner may run it once per statement.
type Subquery struct {
	Kind   SubqueryKind
	ID     int
	Plan   any
	Cols   int
	Params []Expr
	Tp     types.FieldType
	// Left, Op, Not: for IN, ANY, ALL and SubRow. Left has Cols
	// expressions.
	Left []Expr
	Op   string
	Not  bool
	// Hashable: an uncorrelated IN whose values compare as their hash
	// keys do (see KeyClass), so the runner may look them up in a set.
	Hashable bool
	// Keyed: a decorrelated scalar aggregate (planner/decorrelate.go).
	// The plan is uncorrelated; each of its rows is a group's key (Cols-1
	// values) and the group's aggregate. The subquery's value is the
	// aggregate of the group whose key equals Left's values, or Empty
	// when no group does (a NULL in Left equals nothing).
	Keyed bool
	Empty types.Datum
	// Col: for SubScalar, the column of the one row that is the value:
	// one column of a row subquery (of Cols) compared as a row.
	Col int
}

func (s *Subquery) Type() types.FieldType {
	if s.Kind == SubScalar {
		return s.Tp
	}
	return typeBool
}

func (s *Subquery) Eval(ctx *Ctx, row []types.Datum) (types.Datum, error) {
	if ctx.Subq == nil {
		return types.Null, errno.New(errno.ErNotSupportedYet, "subqueries are not supported in this statement")
	}
	var params []types.Datum
	if len(s.Params) > 0 {
		params = make([]types.Datum, len(s.Params))
		for i, p := range s.Params {
			v, err := p.Eval(ctx, row)
			if err != nil {
				return types.Null, err
			}
			params[i] = v
		}
	}
	if s.Keyed {
		key := make([]types.Datum, len(s.Left))
		for i, l := range s.Left {
			v, err := l.Eval(ctx, row)
			if err != nil || v.IsNull() {
				return s.Empty, err
			}
			key[i] = v
		}
		v, found, err := ctx.Subq.Lookup(ctx, s, key)
		if err != nil || !found {
			return s.Empty, err
		}
		return v, nil
	}
	switch s.Kind {
	case SubScalar:
		rows, err := ctx.Subq.Rows(ctx, s, params, 2)
		if err != nil {
			return types.Null, err
		}
		if len(rows) > 1 {
			return types.Null, errno.New(1242, "Subquery returns more than 1 row")
		}
		if len(rows) == 0 {
			return types.Null, nil
		}
		return rows[0][s.Col], nil
	case SubExists:
		rows, err := ctx.Subq.Rows(ctx, s, params, 1)
		if err != nil {
			return types.Null, err
		}
		return types.NewBool((len(rows) > 0) != s.Not), nil
	}
	left := make([]types.Datum, len(s.Left))
	for i, l := range s.Left {
		v, err := l.Eval(ctx, row)
		if err != nil {
			return types.Null, err
		}
		left[i] = v
	}
	if s.Kind == SubRow {
		rows, err := ctx.Subq.Rows(ctx, s, params, 2)
		if err != nil {
			return types.Null, err
		}
		if len(rows) > 1 {
			return types.Null, errno.New(1242, "Subquery returns more than 1 row")
		}
		right := make([]types.Datum, len(left))
		if len(rows) == 1 {
			right = rows[0]
		}
		return compareRows(left, s.Op, right), nil
	}
	if s.Hashable && s.Kind == SubIn && len(s.Params) == 0 {
		return s.evalInSet(ctx, left)
	}
	rows, err := ctx.Subq.Rows(ctx, s, params, 0)
	if err != nil {
		return types.Null, err
	}
	var r types.Datum
	switch s.Kind {
	case SubIn:
		r = quantified(left, "=", rows, false)
		if s.Not {
			r = not3(r)
		}
	case SubAny:
		r = quantified(left, s.Op, rows, false)
	default:
		r = quantified(left, s.Op, rows, true)
	}
	return r, nil
}

// evalInSet is IN over a set: true if left is in it; else NULL if left
// has a NULL and the set is not empty, or the set holds a row with a NULL;
// else false.
func (s *Subquery) evalInSet(ctx *Ctx, left []types.Datum) (types.Datum, error) {
	hasNull := false
	for _, v := range left {
		hasNull = hasNull || v.IsNull()
	}
	var r types.Datum
	if hasNull {
		rows, err := ctx.Subq.Rows(ctx, s, nil, 0)
		if err != nil {
			return types.Null, err
		}
		r = quantified(left, "=", rows, false)
	} else {
		found, sawNull, err := ctx.Subq.Contains(ctx, s, left)
		if err != nil {
			return types.Null, err
		}
		switch {
		case found:
			r = types.NewBool(true)
		case sawNull:
			r = types.Null
		default:
			r = types.NewBool(false)
		}
	}
	if s.Not {
		r = not3(r)
	}
	return r, nil
}

func not3(d types.Datum) types.Datum {
	if d.IsNull() {
		return d
	}
	return types.NewBool(!types.ToBool(d))
}

// quantified compares left with each row by op: with all, true unless some
// comparison is false (NULL if none is false but some is NULL); else true
// if some comparison is true (NULL if none is true but some is NULL).
func quantified(left []types.Datum, op string, rows [][]types.Datum, all bool) types.Datum {
	sawNull := false
	for _, r := range rows {
		c := compareRow(left, op, r)
		if c.IsNull() {
			sawNull = true
			continue
		}
		if types.ToBool(c) != all {
			return types.NewBool(!all)
		}
	}
	if sawNull {
		return types.Null
	}
	return types.NewBool(all)
}

// compareRow compares two rows of values: for = every pair must be equal
// (NULL if none differs but some pair has a NULL); other operators compare
// one value.
func compareRow(a []types.Datum, op string, b []types.Datum) types.Datum {
	if len(a) == 1 {
		return compare1(a[0], op, b[0])
	}
	null := false
	for i := range a {
		c := compare1(a[i], "=", b[i])
		if c.IsNull() {
			null = true
			continue
		}
		if !types.ToBool(c) {
			return types.NewBool(op == "!=")
		}
	}
	if null {
		return types.Null
	}
	return types.NewBool(op != "!=")
}

// compareRows compares two rows with any comparison operator, as MySQL's
// Arg_comparator::compare_row does: the first pair that differs decides
// (= false, != true, the others by its order); a pair with a NULL makes
// <, <=, > and >= NULL if no earlier pair decided, and = and != NULL if
// no pair decides. <=> is true when every pair is equal or both NULL.
func compareRows(a []types.Datum, op string, b []types.Datum) types.Datum {
	if op == "<=>" {
		for i := range a {
			an, bn := a[i].IsNull(), b[i].IsNull()
			if an || bn {
				if an != bn {
					return types.NewBool(false)
				}
				continue
			}
			if types.Compare(a[i], b[i]) != 0 {
				return types.NewBool(false)
			}
		}
		return types.NewBool(true)
	}
	null := false
	for i := range a {
		if a[i].IsNull() || b[i].IsNull() {
			if op != "=" && op != "!=" {
				return types.Null
			}
			null = true
			continue
		}
		if c := types.Compare(a[i], b[i]); c != 0 {
			switch op {
			case "=":
				return types.NewBool(false)
			case "!=":
				return types.NewBool(true)
			case "<", "<=":
				return types.NewBool(c < 0)
			default:
				return types.NewBool(c > 0)
			}
		}
	}
	if null {
		return types.Null
	}
	return types.NewBool(op == "=" || op == "<=" || op == ">=")
}

func compare1(a types.Datum, op string, b types.Datum) types.Datum {
	if a.IsNull() || b.IsNull() {
		return types.Null
	}
	c := types.Compare(a, b)
	var r bool
	switch op {
	case "=":
		r = c == 0
	case "!=":
		r = c != 0
	case "<":
		r = c < 0
	case "<=":
		r = c <= 0
	case ">":
		r = c > 0
	case ">=":
		r = c >= 0
	}
	return types.NewBool(r)
}

// NewCompare returns a comparison (=, !=, <, <=, >, >=, <=>) of a and b.
func NewCompare(op string, a, b Expr) Expr { return newCompare(op, a, b) }

// CompareOp returns the operator name of an equality comparison, and its
// two sides; ok is false for other expressions.
func CompareOp(e Expr) (op string, l, r Expr, ok bool) {
	f, isF := e.(*Func)
	if !isF || f.Lazy != nil || len(f.Args) != 2 {
		return "", nil, nil, false
	}
	switch f.Name {
	case "=", "!=", "<", "<=", ">", ">=", "<=>":
		return f.Name, f.Args[0], f.Args[1], true
	}
	return "", nil, nil, false
}

// KeyClass groups field types whose values compare equal exactly when
// their hash keys (executor.rowKey) are equal: exact numbers, floats,
// strings of one collation, times.
// It returns "" for types that mix (a comparison between classes converts).
func KeyClass(tp types.FieldType) string {
	switch {
	case tp.Tp == mysql.TypeDouble || tp.Tp == mysql.TypeFloat:
		// Floats compare with exact numbers as floats, which their
		// decimal hash keys do not model.
		return "float"
	case tp.IsInteger() || tp.Tp == mysql.TypeNewDecimal:
		if tp.Tp == mysql.TypeYear || tp.Tp == mysql.TypeBit {
			return ""
		}
		return "num"
	case tp.IsString():
		// Strings hash by their collation's sort keys, so only strings
		// of one collation share hash keys.
		return fmt.Sprintf("str%d", tp.Collation())
	case tp.Tp == mysql.TypeJSON:
		return fmt.Sprintf("str%d", types.CollationJSON)
	}
	switch tp.Tp {
	case mysql.TypeDate, mysql.TypeDatetime, mysql.TypeTimestamp:
		return "time"
	}
	return ""
}
