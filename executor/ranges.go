package executor

import (
	"bytes"
	"math"
	"slices"
	"time"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/expression"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/planner"
	"github.com/basalt-db/basalt/table"
	"github.com/basalt-db/basalt/tablecodec"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// interval is a range of one column's values with concrete bounds.
type interval struct {
	lo, hi         types.Datum
	loInf, hiInf   bool
	loExcl, hiExcl bool
}

// evalRanges evaluates planned ranges into sorted, disjoint intervals. A
// bound that is NULL matches nothing, so its range is dropped. String
// bounds take the collation of the column they bound (coll), so that they
// order and merge as the column's values do.
func evalRanges(ctx *Ctx, rs []planner.Range, coll types.Collation) ([]interval, error) {
	out, err := evalUnion(ctx, rs, coll)
	if err != nil || len(rs) == 0 || len(rs[0].And) == 0 {
		return out, err
	}
	for _, u := range rs[0].And {
		other, err := evalUnion(ctx, u, coll)
		if err != nil {
			return nil, err
		}
		out = intersect(out, other)
	}
	return out, nil
}

func evalUnion(ctx *Ctx, rs []planner.Range, coll types.Collation) ([]interval, error) {
	var ivs []interval
	for _, r := range rs {
		iv := interval{loInf: r.Low == nil, hiInf: r.High == nil, loExcl: r.LowExcl, hiExcl: r.HighExcl}
		var err error
		if r.Low != nil {
			if iv.lo, err = r.Low.Eval(ctx.Eval, nil); err != nil {
				return nil, err
			}
			if iv.lo.IsNull() {
				continue
			}
			iv.lo = iv.lo.WithCollation(coll)
		}
		if r.High != nil {
			if iv.hi, err = r.High.Eval(ctx.Eval, nil); err != nil {
				return nil, err
			}
			if iv.hi.IsNull() {
				continue
			}
			iv.hi = iv.hi.WithCollation(coll)
		}
		if !iv.loInf && !iv.hiInf {
			c := types.Compare(iv.lo, iv.hi)
			if c > 0 || (c == 0 && (iv.loExcl || iv.hiExcl)) {
				continue
			}
		}
		ivs = append(ivs, iv)
	}
	slices.SortFunc(ivs, func(a, b interval) int { return cmpLow(a, b) })
	// Merge overlapping intervals.
	var out []interval
	for _, iv := range ivs {
		if n := len(out); n > 0 && overlaps(out[n-1], iv) {
			last := &out[n-1]
			if !last.hiInf && (iv.hiInf || types.Compare(iv.hi, last.hi) > 0 || (types.Compare(iv.hi, last.hi) == 0 && !iv.hiExcl)) {
				last.hi, last.hiInf, last.hiExcl = iv.hi, iv.hiInf, iv.hiExcl
			}
			continue
		}
		out = append(out, iv)
	}
	return out, nil
}

func cmpLow(a, b interval) int {
	switch {
	case a.loInf && b.loInf:
		return 0
	case a.loInf:
		return -1
	case b.loInf:
		return 1
	}
	if c := types.Compare(a.lo, b.lo); c != 0 {
		return c
	}
	if a.loExcl == b.loExcl {
		return 0
	}
	if a.loExcl {
		return 1
	}
	return -1
}

// overlaps reports whether b (starting at or after a) touches a.
func overlaps(a, b interval) bool {
	if a.hiInf || b.loInf {
		return true
	}
	c := types.Compare(b.lo, a.hi)
	return c < 0 || (c == 0 && !a.hiExcl && !b.loExcl)
}

func intersect(a, b []interval) []interval {
	var out []interval
	for _, x := range a {
		for _, y := range b {
			iv := x
			if !y.loInf && (iv.loInf || types.Compare(y.lo, iv.lo) > 0 || (types.Compare(y.lo, iv.lo) == 0 && y.loExcl)) {
				iv.lo, iv.loInf, iv.loExcl = y.lo, false, y.loExcl
			}
			if !y.hiInf && (iv.hiInf || types.Compare(y.hi, iv.hi) < 0 || (types.Compare(y.hi, iv.hi) == 0 && y.hiExcl)) {
				iv.hi, iv.hiInf, iv.hiExcl = y.hi, false, y.hiExcl
			}
			if !iv.loInf && !iv.hiInf {
				c := types.Compare(iv.lo, iv.hi)
				if c > 0 || (c == 0 && (iv.loExcl || iv.hiExcl)) {
					continue
				}
			}
			out = append(out, iv)
		}
	}
	return out
}

// keyRange is [start, end) of keys.
type keyRange struct{ start, end []byte }

// intBounds turns an interval on an integer column into inclusive int64
// bounds that hold exactly the integers the interval holds: a fractional
// lower bound rounds up, a fractional upper bound down (MySQL compares an
// integer column with a non-integer as doubles). The planner relies on
// this to drop conditions on the integer primary key that the key ranges
// already enforce.
func intBounds(iv interval) (lo, hi int64, empty bool) {
	lo, hi = math.MinInt64, math.MaxInt64
	if !iv.loInf {
		switch d := iv.lo; {
		case d.Kind() == types.KindInt || (d.Kind() == types.KindUint && d.Uint() <= math.MaxInt64):
			lo = d.Int()
			if iv.loExcl {
				if lo == math.MaxInt64 {
					return 0, 0, true
				}
				lo++
			}
		case d.Kind() == types.KindUint:
			return 0, 0, true
		default:
			f, _ := types.ToFloat(d)
			c := math.Ceil(f)
			if iv.loExcl && c == f {
				c++
			}
			switch {
			case c >= math.MaxInt64:
				return 0, 0, true
			case c > math.MinInt64:
				lo = int64(c)
			}
		}
	}
	if !iv.hiInf {
		switch d := iv.hi; {
		case d.Kind() == types.KindInt || (d.Kind() == types.KindUint && d.Uint() <= math.MaxInt64):
			hi = d.Int()
			if iv.hiExcl {
				if hi == math.MinInt64 {
					return 0, 0, true
				}
				hi--
			}
		case d.Kind() == types.KindUint:
		default:
			f, _ := types.ToFloat(d)
			fl := math.Floor(f)
			if iv.hiExcl && fl == f {
				fl--
			}
			switch {
			case fl < math.MinInt64:
				return 0, 0, true
			case fl < math.MaxInt64:
				hi = int64(fl)
			}
		}
	}
	return lo, hi, lo > hi
}

// handleKeyRanges returns the row-key ranges of intervals of an integer
// handle.
func handleKeyRanges(tableID int64, ivs []interval) []keyRange {
	var out []keyRange
	for _, iv := range ivs {
		lo, hi, empty := intBounds(iv)
		if empty {
			continue
		}
		kr := keyRange{start: tablecodec.RowKey(tableID, tablecodec.IntHandle(lo))}
		if hi == math.MaxInt64 {
			kr.end = kv.PrefixEnd(tablecodec.RowPrefix(tableID))
		} else {
			kr.end = tablecodec.RowKey(tableID, tablecodec.IntHandle(hi+1))
		}
		out = append(out, kr)
	}
	return mergeKeyRanges(out)
}

// mergeKeyRanges sorts key ranges by start and merges those that overlap
// or touch, so that no key is read twice. Intervals are merged before
// they become key ranges, but converting bounds to the column's type (an
// integer column rounds, a bound of another kind widens to unbounded) can
// make disjoint intervals overlap again.
func mergeKeyRanges(rs []keyRange) []keyRange {
	if len(rs) < 2 {
		return rs
	}
	slices.SortFunc(rs, func(a, b keyRange) int { return bytes.Compare(a.start, b.start) })
	out := rs[:1]
	for _, r := range rs[1:] {
		last := &out[len(out)-1]
		if last.end == nil || bytes.Compare(r.start, last.end) <= 0 {
			if last.end != nil && (r.end == nil || bytes.Compare(r.end, last.end) > 0) {
				last.end = r.end
			}
			continue
		}
		out = append(out, r)
	}
	return out
}

// keySpace is where a key's entries live: an index's entries, or the rows
// of a table clustered on its primary key (the row key's handle is the
// primary key's values, encoded as an index's are).
func keySpace(t *catalog.TableInfo, ix *catalog.IndexInfo) []byte {
	if ix.Primary && t.CommonHandle {
		return tablecodec.RowPrefix(t.ID)
	}
	return tablecodec.IndexPrefix(t.ID, ix.ID)
}

// compositeKeyRanges returns the key ranges of planned key ranges of ix
// (planner.KeyRange): the points of each column make, in their cross
// product, the prefixes to which the last column's intervals are
// appended. A column's points become key bytes only where that is exact
// (pointKey); otherwise that column is ranged over as the intervals of
// its points, as a last column would be, and the columns after it are
// left to the condition above the scan. Ranges are sorted and merged, so
// that no entry is read twice and entries come in key order.
func compositeKeyRanges(ctx *Ctx, t *catalog.TableInfo, ix *catalog.IndexInfo, krs []planner.KeyRange) ([]keyRange, error) {
	space := keySpace(t, ix)
	var out []keyRange
	for _, kr := range krs {
		prefixes := [][]byte{space}
		last := kr.Last
		lastCol := len(kr.Eq)
		for i, pts := range kr.Eq {
			col := t.Columns[ix.Columns[i].Offset]
			vals, exact, err := pointKeys(ctx, col, pts)
			if err != nil {
				return nil, err
			}
			if !exact {
				last = make([]planner.Range, len(pts))
				for j, p := range pts {
					last[j] = planner.Range{Low: p, High: p}
				}
				lastCol = i
				break
			}
			next := make([][]byte, 0, len(prefixes)*len(vals))
			for _, p := range prefixes {
				for _, v := range vals {
					next = append(next, append(append(make([]byte, 0, len(p)+len(v)), p...), v...))
				}
			}
			prefixes = next
		}
		if len(prefixes) == 0 {
			continue
		}
		if last == nil {
			for _, p := range prefixes {
				out = append(out, keyRange{start: p, end: kv.PrefixEnd(p)})
			}
			continue
		}
		col := t.Columns[ix.Columns[lastCol].Offset]
		ivs, err := evalRanges(ctx, last, col.Type.Collation())
		if err != nil {
			return nil, err
		}
		for _, p := range prefixes {
			rs, err := colKeyRanges(ctx, t, col, p, ivs)
			if err != nil {
				return nil, err
			}
			out = append(out, rs...)
		}
	}
	return mergeKeyRanges(out), nil
}

// pointKeys evaluates the points of a key column into the encodings of
// the stored values equal to them, without duplicates. exact is false
// when a point's comparison with the column is not one of stored values'
// equality (a string compared with a number as doubles, a TIMESTAMP, a
// FLOAT, an ENUM, ...): colKeyRanges knows how to range over those.
// NULL points match nothing.
func pointKeys(ctx *Ctx, col *catalog.ColumnInfo, pts []expression.Expr) ([][]byte, bool, error) {
	var keys [][]byte
	for _, x := range pts {
		v, err := x.Eval(ctx.Eval, nil)
		if err != nil {
			return nil, false, err
		}
		if v.IsNull() {
			continue
		}
		switch {
		case col.Type.IsInteger() && col.Type.Tp != mysql.TypeYear && col.Type.Tp != mysql.TypeBit &&
			(v.Kind() == types.KindInt || v.Kind() == types.KindUint):
			// Keys hold a signed column's values as ints, an unsigned
			// one's as uints; a value out of the column's domain
			// equals nothing stored.
			switch {
			case col.Type.Unsigned() && v.Kind() == types.KindInt:
				if v.Int() < 0 {
					continue
				}
				v = types.NewUint(uint64(v.Int()))
			case !col.Type.Unsigned() && v.Kind() == types.KindUint:
				if v.Uint() > math.MaxInt64 {
					continue
				}
				v = types.NewInt(int64(v.Uint()))
			}
		case col.Type.IsString() && col.Type.Tp != mysql.TypeEnum && col.Type.Tp != mysql.TypeSet && v.Kind() == types.KindString:
			// (ENUM and SET keys hold member numbers.)
			v = v.WithCollation(col.Type.Collation())
		case col.Type.Tp == mysql.TypeNewDecimal && v.Kind() == types.KindDecimal:
		default:
			return nil, false, nil
		}
		enc, err := tablecodec.EncodeKeyDatum(nil, v)
		if err != nil {
			return nil, false, err
		}
		if !slices.ContainsFunc(keys, func(b []byte) bool { return bytes.Equal(b, enc) }) {
			keys = append(keys, enc)
		}
	}
	return keys, true, nil
}

// colKeyRanges returns the key ranges of intervals on one key column
// whose entries start with prefix (the key space and the values of the
// columns before it). Bounds are converted to the column's type; a bound
// that does not convert exactly widens to unbounded on its side.
func colKeyRanges(ctx *Ctx, t *catalog.TableInfo, col *catalog.ColumnInfo, prefix []byte, ivs []interval) ([]keyRange, error) {
	var out []keyRange
	for _, iv := range ivs {
		if col.Type.IsInteger() {
			lo, hi, empty := intBounds(iv)
			if empty {
				continue
			}
			iv = interval{loInf: lo == math.MinInt64, hiInf: hi == math.MaxInt64}
			if col.Type.Unsigned() {
				iv.lo, iv.hi = types.NewUint(uint64(max(lo, 0))), types.NewUint(uint64(max(hi, 0)))
				if hi < 0 {
					continue
				}
				iv.loInf = false
			} else {
				iv.lo, iv.hi = types.NewInt(lo), types.NewInt(hi)
			}
		} else if isFloatCol(col) {
			// The index holds doubles, and MySQL compares a float column
			// with any number or string as doubles: convert the bounds.
			// They become inclusive, in case the condition rounds the
			// other way; the condition is checked on every row anyway.
			if !iv.loInf {
				iv.lo, iv.loExcl = floatBound(iv.lo)
			}
			if !iv.hiInf {
				iv.hi, iv.hiExcl = floatBound(iv.hi)
			}
		} else if col.Type.Tp == mysql.TypeEnum || col.Type.Tp == mysql.TypeSet {
			// Keys hold member numbers, which order otherwise than the
			// text the conditions compare: only a single value narrows
			// the scan.
			point := !iv.loInf && !iv.hiInf && !iv.loExcl && !iv.hiExcl && types.Compare(iv.lo, iv.hi) == 0
			if !point {
				iv = interval{loInf: true, hiInf: true}
			} else {
				v, err := table.Convert(nil, iv.lo, col)
				if err != nil || types.Compare(v, iv.lo) != 0 {
					continue
				}
				iv.lo, iv.hi = v, v
			}
		} else {
			if !iv.loInf && !sameKind(iv.lo, col) {
				iv.loInf, iv.loExcl = true, false
			}
			if !iv.hiInf && !sameKind(iv.hi, col) {
				iv.hiInf, iv.hiExcl = true, false
			}
			if loc := table.StorageZone(ctx.Eval, t); loc != nil && col.Type.Tp == mysql.TypeTimestamp {
				// Keys hold UTC. Where the zone's clock jumps, a local
				// time maps to no or two instants: widen by the jump,
				// inclusively (every row is checked against the
				// condition anyway).
				widen := time.Duration(0)
				if table.HasDST(loc) {
					widen = 2 * time.Hour
				}
				if !iv.loInf {
					iv.lo = shiftBound(iv.lo, loc, -widen)
					iv.loExcl = iv.loExcl && widen == 0
				}
				if !iv.hiInf {
					iv.hi = shiftBound(iv.hi, loc, widen)
					iv.hiExcl = iv.hiExcl && widen == 0
				}
			}
		}
		kr := keyRange{}
		if iv.loInf {
			// Skip NULL entries (flag 0x00): no condition matches NULL.
			kr.start = append(append([]byte(nil), prefix...), 0x01)
		} else {
			k, err := tablecodec.EncodeKeyDatum(append([]byte(nil), prefix...), iv.lo)
			if err != nil {
				return nil, err
			}
			if iv.loExcl {
				k = kv.PrefixEnd(k)
			}
			kr.start = k
		}
		if iv.hiInf {
			kr.end = kv.PrefixEnd(prefix)
		} else {
			k, err := tablecodec.EncodeKeyDatum(append([]byte(nil), prefix...), iv.hi)
			if err != nil {
				return nil, err
			}
			if !iv.hiExcl {
				k = kv.PrefixEnd(k)
			}
			kr.end = k
		}
		out = append(out, kr)
	}
	return out, nil
}

func isFloatCol(col *catalog.ColumnInfo) bool {
	return col.Type.Tp == mysql.TypeFloat || col.Type.Tp == mysql.TypeDouble
}

// floatBound is an inclusive bound on a float column's index for a
// condition's bound d.
func floatBound(d types.Datum) (types.Datum, bool) {
	if d.Kind() == types.KindFloat {
		return d, false
	}
	f, _ := types.ToFloat(d)
	return types.NewFloat(f), false
}

// sameKind reports whether a bound is already of the kind the column
// stores, so that its encoding orders with the index's entries.
func sameKind(d types.Datum, col *catalog.ColumnInfo) bool {
	switch {
	case col.Type.IsString():
		return d.Kind() == types.KindString
	case col.Type.Tp == 0xf6: // DECIMAL
		return d.Kind() == types.KindDecimal
	}
	return false
}

// shiftBound converts a TIMESTAMP range bound in loc to UTC, moved by d.
func shiftBound(v types.Datum, loc *time.Location, d time.Duration) types.Datum {
	v = table.TimestampToUTC(v, loc)
	if d == 0 || v.Kind() != types.KindTime {
		return v
	}
	t, tt, fsp := v.Time()
	if t == 0 || t.Month() == 0 || t.Day() == 0 {
		return v
	}
	return types.NewTime(types.FromGoTime(t.GoTime(time.UTC).Add(d)), tt, fsp)
}
