package executor

import (
	"strings"

	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/planner"
	"github.com/basalt-db/basalt/table"
	"github.com/basalt-db/basalt/types"
)

// LoadResult is what LOAD DATA reports: "Records: N  Deleted: N
// Skipped: N  Warnings: N", and its affected rows (rows added, plus the
// rows REPLACE deleted).
type LoadResult struct {
	DMLResult
	Deleted, Skipped uint64
}

// ExecLoad runs a LOAD DATA whose input lines come from r, writing every
// row into ctx.Txn; setVar assigns the user variables of the field list.
// Each line becomes a row as MySQL's read_sep_field makes it:
//
//   - a field is converted to its column as a string would be by INSERT
//     (1366, 1265, ... warnings or errors);
//   - a field missing at the end of a line sets its column to the type's
//     zero value (not its default) with 1261, its variable to NULL; a
//     field too many is 1262;
//   - NULL into a NOT NULL column stores the zero value with 1263;
//   - SET assignments run after the fields, over the row so far;
//   - columns neither listed nor set take their defaults.
//
// Those conditions are errors in strict mode unless p.IgnoreErrors, which
// makes them warnings. Duplicates go as p.Insert says (error, skip, or
// replace). Nothing is committed here: the caller's transaction holds the
// whole load, so a failure leaves nothing of it.
func ExecLoad(ctx *Ctx, p *planner.Load, r *LoadReader, setVar func(name string, v types.Datum)) (LoadResult, error) {
	var res LoadResult
	t := p.Insert.Table
	w := table.NewWriter(t)
	if p.IgnoreErrors {
		defer func(strict bool) { ctx.Eval.Strict = strict }(ctx.Eval.Strict)
		ctx.Eval.Strict = false
	}
	defer func() { ctx.Eval.RowNum = 0 }()
	decode, err := loadDecoder(p.Charset)
	if err != nil {
		return res, err
	}
	for i := uint64(0); i < p.IgnoreLines; i++ {
		if fields, err := r.Next(); fields == nil || err != nil {
			return res, err
		}
	}
	lines := r.readAhead()
	defer lines.close()
	// The row layout of the SET expressions: the columns, then the handle.
	row := make([]types.Datum, len(t.Columns)+1)
	given := make([]bool, len(t.Columns))
	for line := 1; ; line++ {
		if err := ctx.checkpoint(line - 1); err != nil {
			return res, err
		}
		fields, err := lines.Next()
		if err != nil || fields == nil {
			return res, err
		}
		ctx.Eval.RowNum = line
		// A new slice each row: the writer and triggers may keep it.
		row = make([]types.Datum, len(t.Columns)+1)
		clear(given)
		for i, tgt := range p.Fields {
			var v types.Datum
			if i >= len(fields) {
				// A variable left without a field is NULL, silently.
				if tgt.Col < 0 {
					setVar(tgt.Var, types.Null)
					continue
				}
				if err := loadWarn(ctx, errno.New(errno.ErWarnTooFewRecords, "Row %d doesn't contain data for all columns", line)); err != nil {
					return res, err
				}
				row[tgt.Col], given[tgt.Col] = table.ZeroValue(t.Columns[tgt.Col]), true
				continue
			}
			if !fields[i].Null {
				v = types.NewString(decode(fields[i].Value))
			}
			if tgt.Col < 0 {
				setVar(tgt.Var, v)
				continue
			}
			col := t.Columns[tgt.Col]
			if v.IsNull() {
				if col.Type.NotNull() && !col.AutoIncrement {
					if err := loadWarn(ctx, errno.New(errno.ErWarnNullToNotnull, "Column set to default value; NULL supplied to NOT NULL column '%s' at row %d", col.Name, line)); err != nil {
						return res, err
					}
					v = table.ZeroValue(col)
				}
				row[tgt.Col], given[tgt.Col] = v, true
				continue
			}
			cv, err := table.Convert(ctx.Eval, v, col)
			if err != nil {
				return res, err
			}
			row[tgt.Col], given[tgt.Col] = cv, true
		}
		if len(fields) > len(p.Fields) {
			if err := loadWarn(ctx, errno.New(errno.ErWarnTooManyRecords, "Row %d was truncated; it contained more data than there were input columns", line)); err != nil {
				return res, err
			}
		}
		for _, a := range p.Set {
			v, err := a.Expr.Eval(ctx.Eval, row)
			if err != nil {
				return res, err
			}
			if row[a.Col], err = table.Convert(ctx.Eval, v, t.Columns[a.Col]); err != nil {
				return res, err
			}
			given[a.Col] = true
		}
		n, err := addRow(ctx, p.Insert, w, row[:len(t.Columns)], given, false, &res.DMLResult)
		if err != nil {
			return res, err
		}
		res.Records++
		res.Affected += n
		switch {
		case n == 0:
			res.Skipped++
		case n > 1:
			res.Deleted += n - 1
		}
	}
}

// loadWarn raises a condition of the input's shape: an error in strict
// mode, a warning otherwise.
func loadWarn(ctx *Ctx, e *errno.Error) error {
	if ctx.Eval.Strict {
		return e
	}
	ctx.Eval.Warn(e)
	return nil
}

// loadDecoder returns what turns a field's bytes in the input's character
// set into a string: as they are for UTF-8 and binary input, byte to rune
// for latin1.
func loadDecoder(charset string) (func([]byte) string, error) {
	switch charset {
	case "", "utf8mb4", "utf8", "utf8mb3", "binary", "ascii":
		return func(b []byte) string { return string(b) }, nil
	case "latin1":
		return func(b []byte) string {
			var sb strings.Builder
			sb.Grow(len(b))
			for _, c := range b {
				if c >= 0x80 && c < 0xa0 {
					sb.WriteRune(cp1252[c-0x80])
				} else {
					sb.WriteRune(rune(c))
				}
			}
			return sb.String()
		}, nil
	}
	return nil, errno.New(errno.ErUnknownCharacterSet, "Unknown character set: '%s'", strings.ToLower(charset))
}

// cp1252 maps bytes 0x80-0x9F of MySQL's latin1 (Windows-1252) to runes;
// the other bytes are their own code points. MySQL keeps the five
// undefined bytes as the C1 controls of the same value.
var cp1252 = [32]rune{
	0x20AC, 0x81, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021,
	0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0x8D, 0x017D, 0x8F,
	0x90, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014,
	0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x9D, 0x017E, 0x0178,
}
