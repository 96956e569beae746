package executor

import (
	"github.com/basalt-db/basalt/planner"
	"github.com/basalt-db/basalt/tablecodec"
	"github.com/basalt-db/basalt/types"
)

// A multi-table UPDATE or DELETE reads all its joined rows first (their
// tables' rows locked as they are read), then changes each target row
// once: a row that several joined rows match is updated from the first
// of them, as in MySQL, and deleted once.

// targetRow returns the part of a joined row that is target t's row (its
// columns and handle), and false where an outer join found no row.
func targetRow(t *planner.MultiTarget, r []types.Datum) ([]types.Datum, bool) {
	sub := r[t.Off : t.Off+len(t.Table.Columns)+1]
	return sub, !sub[len(t.Table.Columns)].IsNull()
}

func handleKey(h tablecodec.Handle) string { return string(h.Encoded()) }

// ExecMultiUpdate runs a multi-table UPDATE. Matched counts the distinct
// target rows, Affected those that changed.
func ExecMultiUpdate(ctx *Ctx, p *planner.MultiUpdate) (DMLResult, error) {
	var res DMLResult
	src, err := Build(p.Source)
	if err != nil {
		return res, err
	}
	rows, err := Drain(ctx, src)
	if err != nil {
		return res, err
	}
	writers := make([]*writer, len(p.Targets))
	seen := make([]map[string]bool, len(p.Targets))
	for i, t := range p.Targets {
		writers[i], seen[i] = newWriter(t.Table), map[string]bool{}
	}
	for n, r := range rows {
		if err := ctx.checkpoint(n); err != nil {
			return res, err
		}
		for i, t := range p.Targets {
			sub, ok := targetRow(t, r)
			if !ok {
				continue
			}
			h := HandleOf(t.Table, sub)
			if seen[i][handleKey(h)] {
				continue
			}
			seen[i][handleKey(h)] = true
			res.Matched++
			cols := sub[:len(t.Table.Columns)]
			old := append([]types.Datum(nil), cols...)
			changed, err := applyAssignmentsOn(ctx, t.Table, r, sub, t.Set)
			if err != nil {
				return res, err
			}
			if !changed {
				continue
			}
			if err := rewriteRow(ctx, writers[i], old, cols, h); err != nil {
				return res, err
			}
			res.Affected++
		}
	}
	return res, nil
}

// ExecMultiDelete runs a multi-table DELETE; Affected counts the rows
// deleted from all its targets.
func ExecMultiDelete(ctx *Ctx, p *planner.MultiDelete) (DMLResult, error) {
	var res DMLResult
	src, err := Build(p.Source)
	if err != nil {
		return res, err
	}
	rows, err := Drain(ctx, src)
	if err != nil {
		return res, err
	}
	writers := make([]*writer, len(p.Targets))
	seen := make([]map[string]bool, len(p.Targets))
	for i, t := range p.Targets {
		writers[i], seen[i] = newWriter(t.Table), map[string]bool{}
	}
	for n, r := range rows {
		if err := ctx.checkpoint(n); err != nil {
			return res, err
		}
		for i, t := range p.Targets {
			sub, ok := targetRow(t, r)
			if !ok {
				continue
			}
			h := HandleOf(t.Table, sub)
			if seen[i][handleKey(h)] {
				continue
			}
			seen[i][handleKey(h)] = true
			if err := writers[i].removeRecord(ctx, sub[:len(t.Table.Columns)], h); err != nil {
				return res, err
			}
			res.Affected++
		}
	}
	return res, nil
}
