package planner

import (
	"bytes"
	"math"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/expression"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/tablecodec"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// Row estimates. With statistics (ANALYZE TABLE), the rows a range of a
// column selects come from the column's histogram, a point from the
// histogram's bucket (or rows/NDV); without them, or where a bound is not
// a constant (a prepared statement's parameter), pseudo selectivities as
// TiDB's: 1/1000 of the rows for a point, 1/3 for a range, a table of
// pseudoRows rows.

const (
	pseudoRows     = 1000
	pseudoEqual    = 0.001
	pseudoRange    = 1.0 / 3
	pseudoSelect   = 0.8 // a filter the estimate cannot read
	lookupCostRate = 3   // an index lookup's cost per row, against a row of a full scan
)

// tableRows is the number of rows a table is thought to have.
func tableRows(c *Context, t *catalog.TableInfo) float64 {
	if c.Stats != nil {
		if st := c.Stats(t.ID); st != nil {
			return float64(max(st.RowCount, 1))
		}
	}
	return pseudoRows
}

func columnStats(c *Context, t *catalog.TableInfo, col *catalog.ColumnInfo) (*catalog.TableStats, *catalog.ColumnStats) {
	if c.Stats == nil {
		return nil, nil
	}
	st := c.Stats(t.ID)
	if st == nil || st.Columns == nil {
		return st, nil
	}
	return st, st.Columns[col.ID]
}

// rangeRows estimates the rows of t whose column col lies in the ranges
// of unions (each conjunct's union of ranges, intersected).
func rangeRows(c *Context, t *catalog.TableInfo, col *catalog.ColumnInfo, unions [][]Range) float64 {
	rows := tableRows(c, t)
	_, cs := columnStats(c, t, col)
	if cs == nil {
		est := rows
		for _, u := range unions {
			sum := 0.0
			for _, r := range u {
				if r.Low != nil && r.Low == r.High {
					sum += rows * pseudoEqual
				} else {
					sum += rows * pseudoRange
				}
			}
			est = min(est, sum)
		}
		return max(est, 1)
	}
	// With a histogram: turn the ranges into intervals of encoded keys,
	// intersect the unions, and read the histogram for what is left.
	var ivs []keyInterval
	for i, u := range unions {
		var next []keyInterval
		for _, r := range u {
			iv, ok := rangeKeys(col, r)
			if !ok {
				// A bound only known when the plan runs.
				return max(min(rows, fallback(cs, r.Low != nil && r.Low == r.High, rows)), 1)
			}
			if iv != nil {
				next = append(next, *iv)
			}
		}
		if i == 0 {
			ivs = next
		} else {
			ivs = intersectKeys(ivs, next)
		}
	}
	sum := 0.0
	for _, iv := range ivs {
		if iv.point {
			sum += cs.Hist.Equal(iv.lo)
		} else {
			sum += cs.Hist.Between(iv.lo, true, iv.hi, false)
		}
	}
	// The histogram holds the sampled non-NULL values, scaled to the rows.
	return max(min(sum, rows), 1)
}

// keyInterval is [lo, hi) of encoded keys (nil: unbounded), or the single
// value lo.
type keyInterval struct {
	lo, hi []byte
	point  bool
}

// rangeKeys turns a range into a key interval; nil for a range that
// matches nothing (a NULL bound), ok=false if a bound is not a constant
// of a kind the column's values order with.
func rangeKeys(col *catalog.ColumnInfo, r Range) (*keyInterval, bool) {
	var lo, hi []byte
	var ok bool
	if r.Low != nil {
		if lo, ok = boundKey(r.Low, col); !ok {
			return nil, false
		}
		if lo == nil {
			return nil, true
		}
	}
	if r.High != nil {
		if hi, ok = boundKey(r.High, col); !ok {
			return nil, false
		}
		if hi == nil {
			return nil, true
		}
	}
	if r.Low != nil && r.Low == r.High {
		return &keyInterval{lo: lo, hi: kv.PrefixEnd(lo), point: true}, true
	}
	// col >= v starts at v's encoding, col > v after every key that
	// starts with it; col < v ends before v, col <= v after v.
	if lo != nil && r.LowExcl {
		lo = kv.PrefixEnd(lo)
	}
	if hi != nil && !r.HighExcl {
		hi = kv.PrefixEnd(hi)
	}
	return &keyInterval{lo: lo, hi: hi}, true
}

func intersectKeys(a, b []keyInterval) []keyInterval {
	var out []keyInterval
	for _, x := range a {
		for _, y := range b {
			iv := keyInterval{lo: x.lo, hi: x.hi, point: x.point}
			if y.lo != nil && (iv.lo == nil || bytes.Compare(y.lo, iv.lo) > 0) {
				iv.lo, iv.point = y.lo, y.point
			}
			if y.hi != nil && (iv.hi == nil || bytes.Compare(y.hi, iv.hi) < 0) {
				iv.hi = y.hi
			}
			if x.point && y.point && !bytes.Equal(x.lo, y.lo) {
				continue
			}
			iv.point = (x.point || y.point) && iv.lo != nil && iv.hi != nil && bytes.Equal(iv.hi, kv.PrefixEnd(iv.lo))
			if iv.lo != nil && iv.hi != nil && bytes.Compare(iv.lo, iv.hi) >= 0 {
				continue
			}
			out = append(out, iv)
		}
	}
	return out
}

func fallback(cs *catalog.ColumnStats, point bool, rows float64) float64 {
	if point {
		if cs.NDV > 0 {
			return (rows - float64(cs.NullCount)) / float64(cs.NDV)
		}
		return rows * pseudoEqual
	}
	return rows * pseudoRange
}

// boundKey encodes a constant bound as the column's values are encoded in
// its histogram, or reports that it cannot (not a constant, or of a kind
// that does not order with the column's values). A NULL bound gives nil.
func boundKey(e expression.Expr, col *catalog.ColumnInfo) ([]byte, bool) {
	k, ok := e.(*expression.Constant)
	if !ok {
		return nil, false
	}
	d := k.Value
	if d.IsNull() {
		return nil, true
	}
	ft := &col.Type
	switch {
	case ft.IsInteger():
		f, _ := types.ToFloat(d)
		if math.IsNaN(f) {
			return nil, false
		}
		f = math.Round(f)
		if ft.Unsigned() {
			if f < 0 {
				f = 0
			}
			d = types.NewUint(uint64(min(f, math.MaxUint64)))
		} else {
			d = types.NewInt(int64(max(min(f, math.MaxInt64), math.MinInt64)))
		}
	case ft.Tp == mysql.TypeFloat || ft.Tp == mysql.TypeDouble:
		f, _ := types.ToFloat(d)
		d = types.NewFloat(f)
	case ft.Tp == mysql.TypeNewDecimal:
		if d.Kind() != types.KindDecimal && d.Kind() != types.KindInt {
			return nil, false
		}
		dec, _ := types.ToDecimal(d)
		d = types.NewDecimal(dec)
	case ft.IsString():
		if d.Kind() != types.KindString {
			return nil, false
		}
	default:
		return nil, false
	}
	b, err := tablecodec.EncodeKeyDatum(nil, d)
	return b, err == nil
}

// condSelectivity estimates the fraction of t's rows that cond keeps:
// the product of its conjuncts' selectivities.
func condSelectivity(c *Context, t *catalog.TableInfo, cond expression.Expr) float64 {
	if cond == nil {
		return 1
	}
	rows := tableRows(c, t)
	sel := 1.0
	byCol := map[int][][]Range{}
	var cols []int
	for _, conj := range conjuncts(cond) {
		col, rs, _, ok := rangesOf(conj)
		if !ok || col >= len(t.Columns) {
			sel *= pseudoSelect
			continue
		}
		if byCol[col] == nil {
			cols = append(cols, col)
		}
		byCol[col] = append(byCol[col], rs)
	}
	for _, col := range cols {
		sel *= rangeRows(c, t, t.Columns[col], byCol[col]) / rows
	}
	return sel
}

// withEst records an estimate on a plan.
func withEst[P interface{ setEst(float64) }](p P, est float64) P {
	p.setEst(est)
	return p
}

// EstRows estimates how many rows p returns: what planning recorded, else
// derived from its children.
func EstRows(p Plan) float64 {
	if e, ok := p.(interface{ estRows() float64 }); ok && e.estRows() > 0 {
		return e.estRows()
	}
	switch x := p.(type) {
	case *PointGet, *Dual:
		return 1
	case *BatchPointGet:
		return float64(len(x.Handles))
	case *Selection:
		return max(EstRows(x.Child)*pseudoSelect, 1)
	case *Limit:
		n := EstRows(x.Child)
		if k, ok := x.Count.(*expression.Constant); ok {
			v, _ := types.ToFloat(k.Value)
			n = min(n, v)
		}
		return n
	case *Aggregation:
		if len(x.GroupBy) == 0 {
			return 1
		}
		return max(EstRows(x.Child)/10, 1)
	}
	est := 0.0
	for _, ch := range p.Children() {
		est = max(est, EstRows(ch))
	}
	return max(est, 1)
}
