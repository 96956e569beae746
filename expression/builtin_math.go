package expression

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"sync"

	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/types"
	"github.com/cockroachdb/apd/v3"
	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// Numeric functions. Exact arguments (integers, decimals) give exact
// results where MySQL's do (ABS, CEIL, FLOOR, ROUND, TRUNCATE, SIGN);
// the transcendental ones compute in DOUBLE and are NULL where undefined.

var randSource = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))

// isExactType reports an integer or DECIMAL type.
func isExactType(t types.FieldType) bool { return t.IsInteger() || t.Tp == mysql.TypeNewDecimal }

func isIntType(t types.FieldType) bool { return t.IsInteger() }

// roundType is the result type of ROUND and TRUNCATE: the argument's
// type, with the scale the constant second argument asks for.
func roundType(a []Expr) types.FieldType {
	t := a[0].Type()
	switch {
	case isIntType(t):
		return intTypeLike(t)
	case t.Tp == mysql.TypeNewDecimal:
		dec := 0
		if len(a) == 2 {
			if c, ok := a[1].(*Constant); ok {
				n, _, _ := types.ToInt(c.Value)
				dec = int(max(0, min(n, 30)))
			}
		}
		return types.FieldType{Tp: mysql.TypeNewDecimal, Flen: 65, Decimal: dec, Flag: mysql.BinaryFlag}
	}
	return typeDouble
}

// intTypeLike is BIGINT, unsigned if t is: an unsigned argument passes
// through values a signed column could not announce.
func intTypeLike(t types.FieldType) types.FieldType {
	r := typeInt
	if t.Unsigned() {
		r.Flag |= mysql.UnsignedFlag
	}
	return r
}

// ceilFloorType: integers and decimals give BIGINT, the rest DOUBLE.
func ceilFloorType(a []Expr) types.FieldType {
	if t := a[0].Type(); isIntType(t) {
		return intTypeLike(t)
	}
	if isExactType(a[0].Type()) {
		return typeInt
	}
	return typeDouble
}

func doubleFn(f func(float64) float64) builtin {
	return builtin{minArgs: 1, maxArgs: 1, tp: fixed(typeDouble), fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
		x, _ := types.ToFloat(v[0])
		r := f(x)
		if math.IsNaN(r) || math.IsInf(r, 0) {
			return types.Null, nil
		}
		return types.NewFloat(r), nil
	}}
}

// decimalOf returns d as a decimal if it is exact (not a float or string).
func decimalOf(d types.Datum) (*apd.Decimal, bool) {
	switch d.Kind() {
	case types.KindInt, types.KindUint, types.KindDecimal:
		dec, _ := types.ToDecimal(d)
		return dec, true
	}
	return nil, false
}

// fromDecimal returns r as an integer datum if the result type is one.
func fromDecimal(r *apd.Decimal, intResult bool) (types.Datum, error) {
	if !intResult {
		return types.NewDecimal(r), nil
	}
	if r.Negative {
		v, over, _ := types.ToInt(types.NewDecimal(r))
		if over {
			return types.Null, errOutOfRange("BIGINT", "")
		}
		return types.NewInt(v), nil
	}
	v, over, _ := types.ToInt(types.NewDecimal(r))
	if over {
		u, _, over2, _ := types.ToUint(types.NewDecimal(r))
		if over2 {
			return types.Null, errOutOfRange("BIGINT UNSIGNED", "")
		}
		return types.NewUint(u), nil
	}
	return types.NewInt(v), nil
}

// roundDecimal rounds (or truncates) d to frac decimal places; frac may be
// negative.
func roundDecimal(d *apd.Decimal, frac int64, truncate bool) *apd.Decimal {
	frac = max(min(frac, 30), -70)
	ctx := *types.DecimalContext()
	if truncate {
		ctx.Rounding = apd.RoundDown
	}
	r := new(apd.Decimal)
	ctx.Quantize(r, d, -int32(frac))
	if frac < 0 {
		// Keep the zeros left of the point as digits: 1500, not 15E+2.
		r.Reduce(r)
		ctx.Quantize(r, r, 0)
	}
	return r
}

func roundFloat(x float64, frac int64, truncate bool) float64 {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return x
	}
	p := math.Pow(10, float64(frac))
	if math.IsInf(p, 0) {
		return x
	}
	y := x * p
	if truncate {
		y = math.Trunc(y)
	} else {
		// MySQL rounds approximate values half to even (rint).
		y = math.RoundToEven(y)
	}
	r := y / p
	if math.IsNaN(r) || math.IsInf(r, 0) {
		return x
	}
	return r
}

func roundFn(truncate bool) builtin {
	minArgs := 1
	if truncate {
		minArgs = 2
	}
	return builtin{minArgs: minArgs, maxArgs: 2, tp: roundType, mk: func(args []Expr) fnType {
		intResult := isIntType(args[0].Type())
		return func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			var frac int64
			if len(v) == 2 {
				frac = argInt(v[1])
			}
			if dec, ok := decimalOf(v[0]); ok {
				r := roundDecimal(dec, frac, truncate)
				if intResult || v[0].Kind() != types.KindDecimal {
					if frac >= 0 {
						return v[0], nil
					}
					return fromDecimal(r, true)
				}
				return types.NewDecimal(r), nil
			}
			x, _ := types.ToFloat(v[0])
			return types.NewFloat(roundFloat(x, frac, truncate)), nil
		}
	}}
}

func ceilFloor(ceil bool) builtin {
	return builtin{minArgs: 1, maxArgs: 1, tp: ceilFloorType, fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
		switch v[0].Kind() {
		case types.KindInt, types.KindUint:
			return v[0], nil
		case types.KindDecimal:
			r := new(apd.Decimal)
			c := *types.DecimalContext()
			c.Rounding = apd.RoundFloor
			if ceil {
				c.Rounding = apd.RoundCeiling
			}
			c.Quantize(r, v[0].Decimal(), 0)
			return fromDecimal(r, true)
		}
		x, _ := types.ToFloat(v[0])
		if ceil {
			return types.NewFloat(math.Ceil(x)), nil
		}
		return types.NewFloat(math.Floor(x)), nil
	}}
}

// mysqlRand is MySQL's random number generator (my_rnd), which RAND(N)
// seeds so that its sequence is the same as MySQL's.
type mysqlRand struct {
	seed1, seed2 uint64
}

const randMax = 0x3FFFFFFF

func newMySQLRand(seed uint32) *mysqlRand {
	s1 := uint64(seed*0x10001 + 55555555)
	s2 := uint64(seed * 0x10000001)
	return &mysqlRand{seed1: s1 % randMax, seed2: s2 % randMax}
}

func (r *mysqlRand) next() float64 {
	r.seed1 = (r.seed1*3 + r.seed2) % randMax
	r.seed2 = (r.seed1 + r.seed2 + 33) % randMax
	return float64(r.seed1) / float64(randMax)
}

// randStates holds the generator of each RAND(N) of one statement.
type randStates struct {
	mu sync.Mutex
	m  map[*Func]*mysqlRand
}

func mathBuiltins() map[string]builtin {
	m := map[string]builtin{
		"ceil": ceilFloor(true), "ceiling": ceilFloor(true), "floor": ceilFloor(false),
		"round": roundFn(false), "truncate": roundFn(true),
		"sign": {minArgs: 1, maxArgs: 1, tp: fixed(typeInt), fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			if dec, ok := decimalOf(v[0]); ok {
				return types.NewInt(int64(dec.Sign())), nil
			}
			x, _ := types.ToFloat(v[0])
			switch {
			case x > 0:
				return types.NewInt(1), nil
			case x < 0:
				return types.NewInt(-1), nil
			}
			return types.NewInt(0), nil
		}},
		"mod": {minArgs: 2, maxArgs: 2, tp: func(a []Expr) types.FieldType { return staticArithType(a[0].Type(), a[1].Type(), "%") },
			fn: func(ctx *Ctx, v []types.Datum) (types.Datum, error) { return arith(ctx, "%", v[0], v[1]) }},
		"pow": {minArgs: 2, maxArgs: 2, tp: fixed(typeDouble), fn: powFn}, "power": {minArgs: 2, maxArgs: 2, tp: fixed(typeDouble), fn: powFn},
		"sqrt": doubleFn(func(x float64) float64 {
			if x < 0 {
				return math.NaN()
			}
			return math.Sqrt(x)
		}),
		"exp": {minArgs: 1, maxArgs: 1, tp: fixed(typeDouble), fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			x, _ := types.ToFloat(v[0])
			r := math.Exp(x)
			if math.IsInf(r, 0) {
				return types.Null, errOutOfRange("DOUBLE", "exp")
			}
			return types.NewFloat(r), nil
		}},
		"ln":    doubleFn(logOf(math.Log)),
		"log2":  doubleFn(logOf(math.Log2)),
		"log10": doubleFn(logOf(math.Log10)),
		"log": {minArgs: 1, maxArgs: 2, tp: fixed(typeDouble), fn: func(ctx *Ctx, v []types.Datum) (types.Datum, error) {
			x, _ := types.ToFloat(v[len(v)-1])
			if x <= 0 {
				ctx.Warn(errno.New(3020, "Invalid argument for logarithm"))
				return types.Null, nil
			}
			if len(v) == 1 {
				return types.NewFloat(math.Log(x)), nil
			}
			b, _ := types.ToFloat(v[0])
			if b <= 0 || b == 1 {
				ctx.Warn(errno.New(3020, "Invalid argument for logarithm"))
				return types.Null, nil
			}
			return types.NewFloat(math.Log(x) / math.Log(b)), nil
		}},
		"pi": {tp: fixed(types.FieldType{Tp: mysql.TypeDouble, Flen: 8, Decimal: 6, Flag: mysql.BinaryFlag}), fn: func(*Ctx, []types.Datum) (types.Datum, error) {
			return types.NewFloat(math.Pi), nil
		}},
		"sin": doubleFn(math.Sin), "cos": doubleFn(math.Cos), "tan": doubleFn(math.Tan),
		"cot": doubleFn(func(x float64) float64 { return 1 / math.Tan(x) }),
		"asin": doubleFn(func(x float64) float64 {
			if x < -1 || x > 1 {
				return math.NaN()
			}
			return math.Asin(x)
		}),
		"acos": doubleFn(func(x float64) float64 {
			if x < -1 || x > 1 {
				return math.NaN()
			}
			return math.Acos(x)
		}),
		"atan": {minArgs: 1, maxArgs: 2, tp: fixed(typeDouble), fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			y, _ := types.ToFloat(v[0])
			if len(v) == 2 {
				x, _ := types.ToFloat(v[1])
				return types.NewFloat(math.Atan2(y, x)), nil
			}
			return types.NewFloat(math.Atan(y)), nil
		}},
		"atan2": {minArgs: 2, maxArgs: 2, tp: fixed(typeDouble), fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			y, _ := types.ToFloat(v[0])
			x, _ := types.ToFloat(v[1])
			return types.NewFloat(math.Atan2(y, x)), nil
		}},
		"degrees": doubleFn(func(x float64) float64 { return x * 180 / math.Pi }),
		"radians": doubleFn(func(x float64) float64 { return x * math.Pi / 180 }),
		"greatest": {minArgs: 2, maxArgs: -1, tp: func(a []Expr) types.FieldType { return unifyTypes(a...) }, fn: func(ctx *Ctx, v []types.Datum) (types.Datum, error) {
			return extreme(v, 1), nil
		}},
		"least": {minArgs: 2, maxArgs: -1, tp: func(a []Expr) types.FieldType { return unifyTypes(a...) }, fn: func(ctx *Ctx, v []types.Datum) (types.Datum, error) {
			return extreme(v, -1), nil
		}},
	}
	m["bit_count"] = builtin{minArgs: 1, maxArgs: 1, tp: fixed(typeInt), fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
		u := uint64(argInt(v[0]))
		if v[0].Kind() == types.KindUint {
			u = v[0].Uint()
		}
		return types.NewInt(int64(bits.OnesCount64(u))), nil
	}}
	m["rand"] = builtin{maxArgs: 1, tp: fixed(typeDouble), nullSafe: true}
	return m
}

func powFn(_ *Ctx, v []types.Datum) (types.Datum, error) {
	x, _ := types.ToFloat(v[0])
	y, _ := types.ToFloat(v[1])
	r := math.Pow(x, y)
	if math.IsInf(r, 0) {
		return types.Null, errOutOfRange("DOUBLE", "pow")
	}
	if math.IsNaN(r) {
		return types.Null, nil
	}
	return types.NewFloat(r), nil
}

func logOf(f func(float64) float64) func(float64) float64 {
	return func(x float64) float64 {
		if x <= 0 {
			return math.NaN()
		}
		return f(x)
	}
}

// extreme is GREATEST (dir 1) or LEAST (dir -1): all strings compare as
// strings, otherwise as numbers; any NULL makes NULL.
func extreme(v []types.Datum, dir int) types.Datum {
	allStr, anyFloat, allExact := true, false, true
	for _, d := range v {
		if d.IsNull() {
			return types.Null
		}
		if d.Kind() != types.KindString {
			allStr = false
		}
		switch d.Kind() {
		case types.KindFloat, types.KindString:
			anyFloat = true
			allExact = false
		case types.KindInt, types.KindUint, types.KindDecimal:
		default:
			allExact = false
		}
	}
	best := v[0]
	for _, d := range v[1:] {
		var c int
		switch {
		case allStr || allExact:
			c = types.Compare(d, best)
		case anyFloat:
			a, _ := types.ToFloat(d)
			b, _ := types.ToFloat(best)
			c = cmpFloat(a, b)
		default:
			c = types.Compare(d, best)
		}
		if c*dir > 0 {
			best = d
		}
	}
	if !allStr && anyFloat {
		f, _ := types.ToFloat(best)
		return types.NewFloat(f)
	}
	return best
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// newRand compiles RAND() and RAND(N). RAND(N) with a constant N gives
// MySQL's sequence for seed N, one value per row of the statement; with a
// varying N each row reseeds.
func newRand(args []Expr) (Expr, error) {
	if len(args) > 1 {
		return nil, errno.New(errno.ErWrongParamcountToFunc, "Incorrect parameter count in the call to native function 'rand'")
	}
	f := &Func{Name: "rand", Args: args, Tp: typeDouble}
	constSeed := len(args) == 1 && isConstExpr(args[0])
	f.Lazy = func(ctx *Ctx, row []types.Datum, args []Expr) (types.Datum, error) {
		if len(args) == 0 {
			return types.NewFloat(randSource.Float64()), nil
		}
		if constSeed {
			if r := ctx.rands[f]; r != nil {
				return types.NewFloat(r.next()), nil
			}
		}
		s, err := args[0].Eval(ctx, row)
		if err != nil {
			return types.Null, err
		}
		var seed uint32
		if !s.IsNull() {
			n, _, _ := types.ToInt(s)
			seed = uint32(n)
		}
		r := newMySQLRand(seed)
		if constSeed {
			if ctx.rands == nil {
				ctx.rands = map[*Func]*mysqlRand{}
			}
			ctx.rands[f] = r
		}
		return types.NewFloat(r.next()), nil
	}
	return f, nil
}

// isConstExpr reports an expression that reads no row: a literal or a
// parameter, or a function of those.
func isConstExpr(e Expr) bool {
	switch x := e.(type) {
	case *Constant, *Param:
		return true
	case *Func:
		if x.Lazy != nil {
			return false
		}
		for _, a := range x.Args {
			if !isConstExpr(a) {
				return false
			}
		}
		return true
	}
	return false
}
