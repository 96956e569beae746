package expression

import (
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/types"
	"github.com/cockroachdb/apd/v3"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// Version is what VERSION() and @@version report.
var Version = "8.4.0-Basalt"

// builtin describes one scalar function. Functions are looked up by
// lower-case name; each may check its argument count and pick its result
// type from its arguments.
type builtin struct {
	minArgs, maxArgs int // maxArgs < 0: any number
	tp               func(args []Expr) types.FieldType
	fn               fnType
	// mk, if set, makes fn from the compiled arguments (for functions
	// whose work depends on their arguments' types).
	mk       func(args []Expr) fnType
	nullSafe bool
	lazy     func(ctx *Ctx, row []types.Datum, args []Expr) (types.Datum, error)
}

// fnType applies a function to its evaluated arguments.
type fnType = func(ctx *Ctx, v []types.Datum) (types.Datum, error)

func fixed(t types.FieldType) func([]Expr) types.FieldType {
	return func([]Expr) types.FieldType { return t }
}

var typeDatetime = types.FieldType{Tp: mysql.TypeDatetime, Flen: 19, Flag: mysql.BinaryFlag}
var typeDate = types.FieldType{Tp: mysql.TypeDate, Flen: 10, Flag: mysql.BinaryFlag}

var builtins map[string]builtin

func init() {
	now := builtin{maxArgs: 1, tp: fixed(typeDatetime), nullSafe: true, fn: func(ctx *Ctx, v []types.Datum) (types.Datum, error) {
		fsp := 0
		if len(v) == 1 {
			i, _, _ := types.ToInt(v[0])
			fsp = int(min(max(i, 0), 6))
		}
		return types.NewTime(types.FromGoTime(ctx.now()).Trunc(fsp), types.TimeDatetime, fsp), nil
	}}
	user := builtin{tp: fixed(typeString), fn: func(ctx *Ctx, _ []types.Datum) (types.Datum, error) {
		return types.NewString(ctx.Session.User()), nil
	}}
	// CURRENT_USER() is the account the session authenticated as (u@%),
	// where USER() is the name and host the client connected with.
	currentUser := builtin{tp: fixed(typeString), fn: func(ctx *Ctx, _ []types.Datum) (types.Datum, error) {
		if cu, ok := ctx.Session.(interface{ CurrentUser() string }); ok {
			return types.NewString(cu.CurrentUser()), nil
		}
		return types.NewString(ctx.Session.User()), nil
	}}
	database := builtin{tp: fixed(typeString), nullSafe: true, fn: func(ctx *Ctx, _ []types.Datum) (types.Datum, error) {
		if db := ctx.Session.CurrentDB(); db != "" {
			return types.NewString(db), nil
		}
		return types.Null, nil
	}}
	builtins = map[string]builtin{
		"now": now, "current_timestamp": now, "localtime": now, "localtimestamp": now, "sysdate": now,
		"user": user, "current_user": currentUser, "session_user": user, "system_user": user,
		"database": database, "schema": database,
		"version": {tp: fixed(typeString), fn: func(*Ctx, []types.Datum) (types.Datum, error) {
			return types.NewString(Version), nil
		}},
		"connection_id": {tp: fixed(types.FieldType{Tp: mysql.TypeLonglong, Flen: 20, Flag: mysql.UnsignedFlag | mysql.BinaryFlag}),
			fn: func(ctx *Ctx, _ []types.Datum) (types.Datum, error) {
				return types.NewUint(ctx.Session.ConnectionID()), nil
			}},
		"last_insert_id": {maxArgs: 1, nullSafe: true, tp: fixed(types.FieldType{Tp: mysql.TypeLonglong, Flen: 20, Flag: mysql.UnsignedFlag | mysql.BinaryFlag}),
			fn: func(ctx *Ctx, v []types.Datum) (types.Datum, error) {
				if len(v) == 1 {
					if v[0].IsNull() {
						return types.Null, nil
					}
					u, _, _, _ := types.ToUint(v[0])
					if ctx.LastInsertIDSet != nil {
						ctx.LastInsertIDSet(u)
					}
					return types.NewUint(u), nil
				}
				return types.NewUint(ctx.Session.LastInsertID()), nil
			}},
		"found_rows": {tp: fixed(typeInt), fn: func(ctx *Ctx, _ []types.Datum) (types.Datum, error) {
			return types.NewInt(int64(ctx.Session.FoundRows())), nil
		}},
		"row_count": {tp: fixed(typeInt), fn: func(ctx *Ctx, _ []types.Datum) (types.Datum, error) {
			return types.NewInt(ctx.Session.RowCount()), nil
		}},
		"abs": {minArgs: 1, maxArgs: 1, tp: func(a []Expr) types.FieldType { return a[0].Type() }, fn: func(ctx *Ctx, v []types.Datum) (types.Datum, error) {
			d := v[0]
			switch d.Kind() {
			case types.KindInt:
				if d.Int() < 0 {
					if d.Int() == math.MinInt64 {
						return types.Null, errOutOfRange("BIGINT", "abs")
					}
					return types.NewInt(-d.Int()), nil
				}
				return d, nil
			case types.KindUint:
				return d, nil
			case types.KindDecimal:
				return types.NewDecimal(new(apd.Decimal).Abs(d.Decimal())), nil
			}
			f, _ := types.ToFloat(d)
			return types.NewFloat(math.Abs(f)), nil
		}},
		"ifnull": {minArgs: 2, maxArgs: 2, tp: func(a []Expr) types.FieldType { return unifyTypes(a...) },
			lazy: func(ctx *Ctx, row []types.Datum, args []Expr) (types.Datum, error) {
				v, err := args[0].Eval(ctx, row)
				if err != nil || !v.IsNull() {
					return v, err
				}
				return args[1].Eval(ctx, row)
			}},
		"coalesce": {minArgs: 1, maxArgs: -1, tp: func(a []Expr) types.FieldType { return unifyTypes(a...) },
			lazy: func(ctx *Ctx, row []types.Datum, args []Expr) (types.Datum, error) {
				for _, a := range args {
					v, err := a.Eval(ctx, row)
					if err != nil || !v.IsNull() {
						return v, err
					}
				}
				return types.Null, nil
			}},
		"if": {minArgs: 3, maxArgs: 3, tp: func(a []Expr) types.FieldType { return unifyTypes(a[1], a[2]) },
			lazy: func(ctx *Ctx, row []types.Datum, args []Expr) (types.Datum, error) {
				c, err := EvalBool(ctx, args[0], row)
				if err != nil {
					return types.Null, err
				}
				if c {
					return args[1].Eval(ctx, row)
				}
				return args[2].Eval(ctx, row)
			}},
		"nullif": {minArgs: 2, maxArgs: 2, nullSafe: true, tp: func(a []Expr) types.FieldType { return a[0].Type() },
			fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
				if !v[0].IsNull() && !v[1].IsNull() && types.Compare(v[0], v[1]) == 0 {
					return types.Null, nil
				}
				return v[0], nil
			}},
		"sleep": {minArgs: 1, maxArgs: 1, tp: fixed(typeInt), fn: sleep},
	}
	for _, set := range []map[string]builtin{jsonBuiltins(), stringBuiltins(), mathBuiltins(), timeBuiltins(), regexpBuiltins()} {
		for name, bi := range set {
			builtins[name] = bi
		}
	}
}

// sleep is SLEEP(seconds): it waits, and returns 0. Cancelled (KILL QUERY)
// or out of time (max_execution_time), it fails with the context's error,
// which the statement then fails with, as in MariaDB.
func sleep(ctx *Ctx, v []types.Datum) (types.Datum, error) {
	f, _ := types.ToFloat(v[0])
	d := time.Duration(f * float64(time.Second))
	if d <= 0 {
		return types.NewInt(0), nil
	}
	if ctx.Context == nil {
		time.Sleep(d)
		return types.NewInt(0), nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return types.NewInt(0), nil
	case <-ctx.Context.Done():
		return types.Null, ctx.Context.Err()
	}
}

// Register adds a scalar function; used by packages that extend the set.
func Register(name string, minArgs, maxArgs int, tp func([]Expr) types.FieldType, nullSafe bool, fn func(ctx *Ctx, v []types.Datum) (types.Datum, error)) {
	builtins[strings.ToLower(name)] = builtin{minArgs: minArgs, maxArgs: maxArgs, tp: tp, fn: fn, nullSafe: nullSafe}
}

func (b *Builder) call(x *ast.FuncCallExpr) (Expr, error) {
	name := x.FnName.L
	bi, ok := builtins[name]
	if !ok {
		return nil, errno.New(errno.ErFunctionNotExists, "FUNCTION %s does not exist", x.FnName.O)
	}
	args, err := b.callArgs(x.Args)
	if err != nil {
		return nil, err
	}
	if name == "rand" {
		return newRand(args)
	}
	if len(args) < bi.minArgs || (bi.maxArgs >= 0 && len(args) > bi.maxArgs) {
		return nil, errno.New(errno.ErWrongParamcountToFunc, "Incorrect parameter count in the call to native function '%s'", x.FnName.O)
	}
	fn := bi.fn
	if bi.mk != nil {
		fn = bi.mk(args)
	}
	tp := bi.tp(args)
	lazy := bi.lazy
	switch name {
	case "coalesce", "ifnull", "if":
		lazy = fitDecimal(tp, lazy)
	}
	return &Func{Name: name, Args: args, Tp: tp, NullSafe: bi.nullSafe, Fn: fn, Lazy: lazy}, nil
}

func (b *Builder) cast(x *ast.FuncCastExpr) (Expr, error) {
	a, err := b.Build(x.Expr)
	if err != nil {
		return nil, err
	}
	ft := x.Tp
	target := types.FieldType{Tp: ft.GetType(), Flag: ft.GetFlag(), Flen: ft.GetFlen(), Decimal: ft.GetDecimal(), Charset: ft.GetCharset()}
	if target.IsString() && target.Charset != "binary" {
		// CAST(... AS CHAR) takes the connection's collation.
		target.Charset, target.Collate = "utf8mb4", "utf8mb4_general_ci"
	}
	return &Func{Name: "cast", Args: []Expr{a}, Tp: target, Fn: func(ctx *Ctx, v []types.Datum) (types.Datum, error) {
		return Cast(ctx, v[0], &target)
	}}, nil
}

// Cast converts d to the type of CAST(... AS target), warning where MySQL
// warns.
func Cast(ctx *Ctx, d types.Datum, target *types.FieldType) (types.Datum, error) {
	switch target.Tp {
	case mysql.TypeLonglong, mysql.TypeLong:
		if target.Unsigned() {
			if d.Kind() == types.KindInt {
				return types.NewUint(uint64(d.Int())), nil
			}
			u, _, _, _ := types.ToUint(d)
			return types.NewUint(u), nil
		}
		if d.Kind() == types.KindUint {
			return types.NewInt(int64(d.Uint())), nil
		}
		if d.Kind() == types.KindString {
			// A string reads as its integer prefix: '-3.7' is -3.
			v, tr := types.StringToInt(d.Bytes())
			if tr {
				ctx.Warn(errno.New(errno.ErTruncatedWrongValue, "Truncated incorrect INTEGER value: '%s'", d.String()))
			}
			return types.NewInt(v), nil
		}
		v, _, tr := types.ToInt(d)
		if tr {
			ctx.Warn(errno.New(errno.ErTruncatedWrongValue, "Truncated incorrect INTEGER value: '%s'", d.String()))
		}
		return types.NewInt(v), nil
	case mysql.TypeDouble, mysql.TypeFloat:
		f, _ := types.ToFloat(d)
		if target.Tp == mysql.TypeFloat {
			f = float64(float32(f))
		}
		return types.NewFloat(f), nil
	case mysql.TypeNewDecimal:
		dec, _ := types.ToDecimal(d)
		r := new(apd.Decimal)
		if _, err := types.DecimalContext().Quantize(r, dec, -int32(target.Decimal)); err != nil {
			return types.Null, errOutOfRange("DECIMAL", "cast")
		}
		if target.Flen > 0 && int(r.NumDigits())+int(r.Exponent) > target.Flen-target.Decimal && !r.IsZero() {
			// Out of DECIMAL(M,D): the largest value of the type.
			ctx.Warn(errno.New(errno.ErWarnDataOutOfRange, "Out of range value for column 'cast' at row 1"))
			m := strings.Repeat("9", target.Flen-target.Decimal)
			if target.Decimal > 0 {
				m += "." + strings.Repeat("9", target.Decimal)
			}
			neg := r.Negative
			r, _ = types.ParseDecimal(m)
			r.Negative = neg
		}
		return types.NewDecimal(r), nil
	case mysql.TypeDuration:
		fsp := max(target.Decimal, 0)
		us, _, ok := durationArg(ctx, d)
		if !ok {
			return types.Null, nil
		}
		limit := int64(838*3600+59*60+59) * 1_000_000
		return types.NewDuration(max(min(types.RoundMicros(us, fsp), limit), -limit), fsp), nil
	case mysql.TypeYear:
		v, _, _ := types.ToInt(d)
		switch {
		case v == 0 && d.Kind() != types.KindString:
		case v >= 0 && v < 70:
			v += 2000
		case v >= 70 && v < 100:
			v += 1900
		case v < 1901 || v > 2155:
			ctx.Warn(errno.New(errno.ErTruncatedWrongValue, "Truncated incorrect YEAR value: '%s'", d.String()))
			return types.Null, nil
		}
		return types.NewInt(v), nil
	case mysql.TypeJSON:
		j, err := ToJSON(d)
		if err != nil {
			return types.Null, errno.New(errno.ErInvalidJSONTextInParam, "Invalid JSON text in argument 1 to function cast_as_json: \"%s\".", err.Error())
		}
		return types.JSONDatum(j), nil
	case mysql.TypeDate, mysql.TypeDatetime:
		tt := types.TimeDatetime
		if target.Tp == mysql.TypeDate {
			tt = types.TimeDate
		}
		if d.Kind() == types.KindTime {
			t, _, _ := d.Time()
			if tt == types.TimeDate {
				t = t.DateOnly()
			}
			return types.NewTime(t, tt, max(target.Decimal, 0)), nil
		}
		t, err := types.ParseTime(string(types.ToText(d)))
		if err != nil {
			ctx.Warn(errno.New(errno.ErTruncatedWrongValue, "Incorrect datetime value: '%s'", d.String()))
			return types.Null, nil
		}
		if tt == types.TimeDate {
			t = t.DateOnly()
		}
		return types.NewTime(t, tt, max(target.Decimal, 0)), nil
	}
	b := types.ToText(d)
	if target.Charset == "binary" {
		if target.Flen > 0 && len(b) > target.Flen {
			ctx.Warn(errno.New(errno.ErTruncatedWrongValue, "Truncated incorrect BINARY(%d) value: '%s'", target.Flen, d.String()))
			b = b[:target.Flen]
		}
		return types.NewCollatedBytes(b, types.CollationBinary), nil
	}
	if target.Flen > 0 && utf8.RuneCount(b) > target.Flen {
		ctx.Warn(errno.New(errno.ErTruncatedWrongValue, "Truncated incorrect CHAR(%d) value: '%s'", target.Flen, d.String()))
		r := []rune(string(b))
		b = []byte(string(r[:target.Flen]))
	}
	return types.NewBytes(b), nil
}

// callArgs compiles a function's arguments; the parser's keyword
// arguments (INTERVAL units, TRIM's direction, GET_FORMAT's kind) become
// string or integer constants.
func (b *Builder) callArgs(ns []ast.ExprNode) ([]Expr, error) {
	out := make([]Expr, len(ns))
	for i, n := range ns {
		switch x := n.(type) {
		case *ast.TimeUnitExpr:
			out[i] = &Constant{Value: types.NewString(x.Unit.String()), Tp: typeString}
			continue
		case *ast.TrimDirectionExpr:
			out[i] = &Constant{Value: types.NewInt(int64(x.Direction)), Tp: typeInt}
			continue
		case *ast.GetFormatSelectorExpr:
			out[i] = &Constant{Value: types.NewString(x.Selector.String()), Tp: typeString}
			continue
		}
		e, err := b.Build(n)
		if err != nil {
			return nil, err
		}
		out[i] = e
	}
	return out, nil
}
