package expression

import (
	"math"
	"math/bits"
	"strings"

	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/types"
	"github.com/cockroachdb/apd/v3"
	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// Func applies a function to evaluated arguments. Unless Lazy is set, a
// NULL argument makes the result NULL without calling Fn (strict); Lazy
// functions (AND, OR, IF, CASE, COALESCE, ...) evaluate their arguments
// themselves.
type Func struct {
	Name string
	Args []Expr
	Tp   types.FieldType
	// NullSafe functions are called with NULL arguments too.
	NullSafe bool
	Fn       func(ctx *Ctx, args []types.Datum) (types.Datum, error)
	Lazy     func(ctx *Ctx, row []types.Datum, args []Expr) (types.Datum, error)
	// reads are the expressions a Lazy function evaluates that are not
	// its Args (CASE's), for ColumnsUsed. A Lazy function evaluates no
	// other expression over the row.
	reads []Expr
}

func (f *Func) Type() types.FieldType { return f.Tp }

// Eval evaluates the arguments onto the context's scratch stack (so that
// evaluating a row allocates nothing) and applies the function to them.
func (f *Func) Eval(ctx *Ctx, row []types.Datum) (types.Datum, error) {
	if f.Lazy != nil {
		return f.Lazy(ctx, row, f.Args)
	}
	base := len(ctx.scratch)
	defer func() { ctx.scratch = ctx.scratch[:base] }()
	for _, a := range f.Args {
		v, err := a.Eval(ctx, row)
		if err != nil {
			return types.Null, err
		}
		if v.IsNull() && !f.NullSafe {
			return types.Null, nil
		}
		ctx.scratch = append(ctx.scratch, v)
	}
	return f.Fn(ctx, ctx.scratch[base:])
}

// EvalBool evaluates e as a condition: NULL and false are both not true.
func EvalBool(ctx *Ctx, e Expr, row []types.Datum) (bool, error) {
	v, err := e.Eval(ctx, row)
	if err != nil || v.IsNull() {
		return false, err
	}
	return types.ToBool(v), nil
}

// Comparison operators.
func newCompare(op string, a, b Expr) *Func {
	f := &Func{Name: op, Args: []Expr{a, b}, Tp: typeBool}
	if c, ok := explicitCollation(a, b); ok {
		// expr COLLATE name decides the comparison's collation.
		cmp := newCompare(op, &Column{}, &Column{Idx: 1})
		f.NullSafe = cmp.NullSafe
		f.Fn = func(ctx *Ctx, v []types.Datum) (types.Datum, error) {
			x, y := forceCollation(c, v[0], v[1])
			return cmp.Fn(ctx, []types.Datum{x, y})
		}
		return f
	}
	switch op {
	case "=":
		f.Fn = func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			return types.NewBool(types.Compare(v[0], v[1]) == 0), nil
		}
	case "!=":
		f.Fn = func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			return types.NewBool(types.Compare(v[0], v[1]) != 0), nil
		}
	case "<":
		f.Fn = func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			return types.NewBool(types.Compare(v[0], v[1]) < 0), nil
		}
	case "<=":
		f.Fn = func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			return types.NewBool(types.Compare(v[0], v[1]) <= 0), nil
		}
	case ">":
		f.Fn = func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			return types.NewBool(types.Compare(v[0], v[1]) > 0), nil
		}
	case ">=":
		f.Fn = func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			return types.NewBool(types.Compare(v[0], v[1]) >= 0), nil
		}
	case "<=>":
		f.NullSafe = true
		f.Fn = func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			if v[0].IsNull() || v[1].IsNull() {
				return types.NewBool(v[0].IsNull() && v[1].IsNull()), nil
			}
			return types.NewBool(types.Compare(v[0], v[1]) == 0), nil
		}
	}
	return f
}

func newAnd(a, b Expr) *Func {
	return &Func{Name: "and", Args: []Expr{a, b}, Tp: typeBool, Lazy: func(ctx *Ctx, row []types.Datum, args []Expr) (types.Datum, error) {
		null := false
		for _, e := range args {
			v, err := e.Eval(ctx, row)
			if err != nil {
				return types.Null, err
			}
			if v.IsNull() {
				null = true
			} else if !types.ToBool(v) {
				return types.NewInt(0), nil
			}
		}
		if null {
			return types.Null, nil
		}
		return types.NewInt(1), nil
	}}
}

func newOr(a, b Expr) *Func {
	return &Func{Name: "or", Args: []Expr{a, b}, Tp: typeBool, Lazy: func(ctx *Ctx, row []types.Datum, args []Expr) (types.Datum, error) {
		null := false
		for _, e := range args {
			v, err := e.Eval(ctx, row)
			if err != nil {
				return types.Null, err
			}
			if v.IsNull() {
				null = true
			} else if types.ToBool(v) {
				return types.NewInt(1), nil
			}
		}
		if null {
			return types.Null, nil
		}
		return types.NewInt(0), nil
	}}
}

func newXor(a, b Expr) *Func {
	return &Func{Name: "xor", Args: []Expr{a, b}, Tp: typeBool, Fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
		return types.NewBool(types.ToBool(v[0]) != types.ToBool(v[1])), nil
	}}
}

func newNot(a Expr) *Func {
	return &Func{Name: "not", Args: []Expr{a}, Tp: typeBool, Fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
		return types.NewBool(!types.ToBool(v[0])), nil
	}}
}

// arithKind decides how an arithmetic operator computes: exactly in
// integers (signed or unsigned) or decimals, or approximately in doubles.
type arithKind int

const (
	arithInt arithKind = iota
	arithUint
	arithDecimal
	arithFloat
)

func kindOf(a, b types.Datum) arithKind {
	ka, kb := a.Kind(), b.Kind()
	switch {
	case ka == types.KindFloat || kb == types.KindFloat || ka == types.KindString || kb == types.KindString:
		return arithFloat
	case ka == types.KindDecimal || kb == types.KindDecimal || ka == types.KindTime || kb == types.KindTime || ka == types.KindDuration || kb == types.KindDuration:
		return arithDecimal
	case ka == types.KindUint || kb == types.KindUint:
		return arithUint
	}
	return arithInt
}

func staticArithType(a, b types.FieldType, op string) types.FieldType {
	isFloat := func(t types.FieldType) bool {
		return t.Tp == mysql.TypeDouble || t.Tp == mysql.TypeFloat || t.IsString()
	}
	switch {
	case isFloat(a) || isFloat(b):
		return typeDouble
	case op == "/" || a.Tp == mysql.TypeNewDecimal || b.Tp == mysql.TypeNewDecimal:
		dec := max(a.Decimal, b.Decimal)
		if op == "/" {
			dec = min(a.Decimal+4, 30)
		}
		if op == "*" {
			dec = min(a.Decimal+b.Decimal, 30)
		}
		return types.FieldType{Tp: mysql.TypeNewDecimal, Flen: 65, Decimal: dec, Flag: mysql.BinaryFlag}
	}
	t := typeInt
	if a.Unsigned() || b.Unsigned() && op != "%" {
		t.Flag |= mysql.UnsignedFlag
	}
	return t
}

func errOutOfRange(kind, expr string) *errno.Error {
	return errno.New(1690, "%s value is out of range in '%s'", kind, expr)
}

func newArith(op string, a, b Expr) *Func {
	f := &Func{Name: op, Args: []Expr{a, b}, Tp: staticArithType(a.Type(), b.Type(), op)}
	f.Fn = func(ctx *Ctx, v []types.Datum) (types.Datum, error) {
		r, err := arith(ctx, op, v[0], v[1])
		if e, ok := err.(*errno.Error); ok && e.Code == errno.ErDataOutOfRange && strings.HasSuffix(e.Msg, "''") {
			// Name the expression, as MySQL does: '(a + b)'.
			e = errno.New(e.Code, "%s'%s'", strings.TrimSuffix(e.Msg, "''"), SQLText(f))
			return r, e
		}
		return r, err
	}
	return f
}

// SQLText renders an expression roughly as MySQL prints it in messages.
func SQLText(e Expr) string {
	switch x := e.(type) {
	case *Column:
		return "`" + x.Name + "`"
	case *Constant:
		if x.Value.Kind() == types.KindString {
			return "'" + x.Value.Str() + "'"
		}
		return x.Value.String()
	case *Func:
		switch {
		case len(x.Args) == 2 && strings.Trim(x.Name, "+-*/%DIV<>=!&|^") == "":
			return "(" + SQLText(x.Args[0]) + " " + x.Name + " " + SQLText(x.Args[1]) + ")"
		case x.Name == "-" && len(x.Args) == 1:
			return "-(" + SQLText(x.Args[0]) + ")"
		case x.Name == "cast" && len(x.Args) == 1:
			what := "char"
			switch {
			case x.Tp.IsInteger() && x.Tp.Unsigned():
				what = "unsigned"
			case x.Tp.IsInteger():
				what = "signed"
			case x.Tp.Tp == mysql.TypeNewDecimal:
				what = "decimal"
			}
			return "cast(" + SQLText(x.Args[0]) + " as " + what + ")"
		}
		parts := make([]string, len(x.Args))
		for i, a := range x.Args {
			parts[i] = SQLText(a)
		}
		return x.Name + "(" + strings.Join(parts, ",") + ")"
	}
	return String(e)
}

func arith(ctx *Ctx, op string, a, b types.Datum) (types.Datum, error) {
	k := kindOf(a, b)
	if op == "/" && k != arithFloat {
		k = arithDecimal
	}
	switch k {
	case arithInt:
		x, y := a.Int(), b.Int()
		switch op {
		case "+":
			r := x + y
			if (x >= 0) == (y >= 0) && (r >= 0) != (x >= 0) {
				return types.Null, errOutOfRange("BIGINT", "")
			}
			return types.NewInt(r), nil
		case "-":
			r := x - y
			if (x >= 0) != (y >= 0) && (r >= 0) != (x >= 0) {
				return types.Null, errOutOfRange("BIGINT", "")
			}
			return types.NewInt(r), nil
		case "*":
			if x != 0 && y != 0 {
				r := x * y
				if r/y != x || (x == -1 && y == math.MinInt64) || (y == -1 && x == math.MinInt64) {
					return types.Null, errOutOfRange("BIGINT", "")
				}
				return types.NewInt(r), nil
			}
			return types.NewInt(0), nil
		case "DIV":
			if y == 0 {
				return types.Null, divisionByZero(ctx)
			}
			return types.NewInt(x / y), nil
		case "%":
			if y == 0 {
				return types.Null, divisionByZero(ctx)
			}
			return types.NewInt(x % y), nil
		}
	case arithUint:
		x, xneg, _, _ := types.ToUint(a)
		y, yneg, _, _ := types.ToUint(b)
		if op == "-" && !xneg && !yneg {
			if x < y {
				return types.Null, errOutOfRange("BIGINT UNSIGNED", "")
			}
			return types.NewUint(x - y), nil
		}
		if xneg || yneg {
			// Mixed signs: compute in decimal and convert back. As in
			// MySQL the result is unsigned when an operand is (but for %,
			// which takes the dividend's sign), so a negative one is out
			// of range rather than a negative value in an unsigned column.
			r, err := arithDecimalOp(ctx, op, a, b, true)
			if err == nil && op != "%" && r.Kind() == types.KindInt && r.Int() < 0 {
				return types.Null, errOutOfRange("BIGINT UNSIGNED", "")
			}
			return r, err
		}
		switch op {
		case "+":
			r, c := bits.Add64(x, y, 0)
			if c != 0 {
				return types.Null, errOutOfRange("BIGINT UNSIGNED", "")
			}
			return types.NewUint(r), nil
		case "*":
			hi, lo := bits.Mul64(x, y)
			if hi != 0 {
				return types.Null, errOutOfRange("BIGINT UNSIGNED", "")
			}
			return types.NewUint(lo), nil
		case "DIV", "%":
			if y == 0 {
				return types.Null, divisionByZero(ctx)
			}
			if op == "DIV" {
				return types.NewUint(x / y), nil
			}
			return types.NewUint(x % y), nil
		}
	case arithDecimal:
		return arithDecimalOp(ctx, op, a, b, false)
	}
	x := floatOperand(ctx, a)
	y := floatOperand(ctx, b)
	var r float64
	switch op {
	case "+":
		r = x + y
	case "-":
		r = x - y
	case "*":
		r = x * y
	case "/", "DIV", "%":
		if y == 0 {
			return types.Null, divisionByZero(ctx)
		}
		switch op {
		case "/":
			r = x / y
		case "DIV":
			v, overflow, _ := types.ToInt(types.NewFloat(math.Trunc(x / y)))
			if overflow {
				return types.Null, errOutOfRange("BIGINT", "")
			}
			return types.NewInt(v), nil
		default:
			r = math.Mod(x, y)
		}
	}
	if math.IsInf(r, 0) || math.IsNaN(r) {
		return types.Null, errOutOfRange("DOUBLE", "")
	}
	return types.NewFloat(r), nil
}

func arithDecimalOp(ctx *Ctx, op string, a, b types.Datum, toIntIfExact bool) (types.Datum, error) {
	x, _ := types.ToDecimal(a)
	y, _ := types.ToDecimal(b)
	dc := types.DecimalContext()
	r := new(apd.Decimal)
	var err error
	switch op {
	case "+":
		_, err = dc.Add(r, x, y)
	case "-":
		_, err = dc.Sub(r, x, y)
	case "*":
		_, err = dc.Mul(r, x, y)
	case "/", "DIV", "%":
		if y.IsZero() {
			return types.Null, divisionByZero(ctx)
		}
		switch op {
		case "/":
			// MySQL: the dividend's scale plus div_precision_increment (4).
			scale := int32(0)
			if x.Exponent < 0 {
				scale = -x.Exponent
			}
			scale += 4
			_, err = dc.Quo(r, x, y)
			if err == nil {
				_, err = dc.Quantize(r, r, -scale)
			}
		case "DIV":
			_, err = dc.QuoInteger(r, x, y)
			if err == nil {
				v, overflow, _ := types.ToInt(types.NewDecimal(r))
				if overflow {
					return types.Null, errOutOfRange("BIGINT", "")
				}
				return types.NewInt(v), nil
			}
		default:
			_, err = dc.Rem(r, x, y)
		}
	}
	if err != nil {
		return types.Null, errOutOfRange("DECIMAL", "")
	}
	if toIntIfExact && r.Exponent >= 0 {
		if r.Negative {
			v, overflow, _ := types.ToInt(types.NewDecimal(r))
			if overflow {
				return types.Null, errOutOfRange("BIGINT", "")
			}
			return types.NewInt(v), nil
		}
		u, _, overflow, _ := types.ToUint(types.NewDecimal(r))
		if overflow {
			return types.Null, errOutOfRange("BIGINT UNSIGNED", "")
		}
		return types.NewUint(u), nil
	}
	return types.NewDecimal(r), nil
}

func newNeg(a Expr) *Func {
	t := a.Type()
	if t.IsString() {
		t = typeDouble
	}
	t.Flag &^= mysql.UnsignedFlag
	if c, ok := a.(*Constant); ok && c.Value.Kind() == types.KindUint && c.Value.Uint() > 1<<63 {
		// The negation of an unsigned literal past BIGINT is a DECIMAL.
		t = types.FieldType{Tp: mysql.TypeNewDecimal, Flen: 21, Flag: mysql.BinaryFlag}
	}
	f := &Func{Name: "-", Args: []Expr{a}, Tp: t}
	f.Fn = func(_ *Ctx, v []types.Datum) (types.Datum, error) {
		d := v[0]
		switch d.Kind() {
		case types.KindInt:
			if d.Int() == math.MinInt64 {
				return types.Null, errOutOfRange("BIGINT", SQLText(f))
			}
			return types.NewInt(-d.Int()), nil
		case types.KindUint:
			if d.Uint() <= 1<<63 {
				return types.NewInt(-int64(d.Uint())), nil
			}
			r, _ := types.ToDecimal(d)
			return types.NewDecimal(new(apd.Decimal).Neg(r)), nil
		case types.KindDecimal:
			return types.NewDecimal(new(apd.Decimal).Neg(d.Decimal())), nil
		}
		x, _ := types.ToFloat(d)
		return types.NewFloat(-x), nil
	}
	return f
}

// And returns the conjunction of conds (nil for none).
func And(conds ...Expr) Expr {
	var out Expr
	for _, c := range conds {
		if out == nil {
			out = c
		} else {
			out = newAnd(out, c)
		}
	}
	return out
}

// divisionByZero is what x / 0, x DIV 0 and x % 0 do besides giving NULL:
// nothing, or with ERROR_FOR_DIVISION_BY_ZERO a warning, which strict
// mode turns into an error in a statement that changes data.
func divisionByZero(ctx *Ctx) error {
	if ctx.Mode&ModeErrorForDivisionByZero == 0 {
		return nil
	}
	e := errno.New(errno.ErDivisionByZero, "Division by 0")
	if ctx.Strict && ctx.InWrite {
		return e
	}
	ctx.Warn(e)
	return nil
}

// floatOperand converts an arithmetic operand to DOUBLE, warning (1292)
// when a string is not wholly a number.
func floatOperand(ctx *Ctx, d types.Datum) float64 {
	f, tr := types.ToFloat(d)
	if tr && d.Kind() == types.KindString {
		ctx.Warn(errno.New(errno.ErTruncatedWrongValue, "Truncated incorrect DOUBLE value: '%s'", d.String()))
	}
	return f
}
