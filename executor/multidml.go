package executor

import (
	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/planner"
	"github.com/basalt-db/basalt/table"
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

// eachTarget runs source to its end, then calls fn once per distinct row
// of each target table that a joined row matched (i is the target's index,
// sub its slice of the joined row, h its handle).
func eachTarget(ctx *Ctx, source planner.Plan, targets []*planner.MultiTarget,
	fn func(i int, w *table.Writer, r, sub []types.Datum, h tablecodec.Handle) error) error {
	src, err := BuildAnalyzed(source, ctx.RuntimeStats)
	if err != nil {
		return err
	}
	rows, err := Drain(ctx, src)
	if err != nil {
		return err
	}
	writers := make([]*table.Writer, len(targets))
	seen := make([]map[string]bool, len(targets))
	for i, t := range targets {
		writers[i], seen[i] = table.NewWriter(t.Table), map[string]bool{}
	}
	for n, r := range rows {
		if err := ctx.checkpoint(n); err != nil {
			return err
		}
		for i, t := range targets {
			sub, ok := targetRow(t, r)
			if !ok {
				continue
			}
			h := table.HandleOf(t.Table, sub)
			if seen[i][handleKey(h)] {
				continue
			}
			seen[i][handleKey(h)] = true
			if err := fn(i, writers[i], r, sub, h); err != nil {
				return err
			}
		}
	}
	return nil
}

// ExecMultiUpdate runs a multi-table UPDATE. Matched counts the distinct
// target rows, Affected those that changed.
func ExecMultiUpdate(ctx *Ctx, p *planner.MultiUpdate) (DMLResult, error) {
	var res DMLResult
	if p.Ignore {
		defer func(strict bool) { ctx.Eval.Strict = strict }(ctx.Eval.Strict)
		ctx.Eval.Strict = false
	}
	err := eachTarget(ctx, p.Source, p.Targets, func(i int, w *table.Writer, r, sub []types.Datum, h tablecodec.Handle) error {
		t := p.Targets[i]
		if ok, err := ctx.refreshTarget(t.Table, sub); err != nil || !ok {
			return err
		}
		res.Matched++
		cols := sub[:len(t.Table.Columns)]
		old := append([]types.Datum(nil), cols...)
		changed, err := applyAssignmentsOn(ctx, t.Table, r, sub, t.Set)
		if err != nil {
			return err
		}
		if changed, err = beforeUpdate(ctx, t.Table, old, cols, changed); err != nil {
			return err
		}
		if changed {
			skipped, err := rewriteRowIgnore(ctx, w, old, cols, h, p.Ignore)
			if err != nil {
				return err
			}
			if skipped {
				return nil
			}
			if err := ctx.rowUpdated(t.Table, old, cols); err != nil {
				return err
			}
			res.Affected++
		}
		return ctx.fire(t.Table, catalog.After, catalog.OnUpdate, old, cols)
	})
	return res, err
}

// ExecMultiDelete runs a multi-table DELETE; Affected counts the rows
// deleted from all its targets.
func ExecMultiDelete(ctx *Ctx, p *planner.MultiDelete) (DMLResult, error) {
	var res DMLResult
	if p.Ignore {
		defer func(strict bool) { ctx.Eval.Strict = strict }(ctx.Eval.Strict)
		ctx.Eval.Strict = false
	}
	err := eachTarget(ctx, p.Source, p.Targets, func(i int, w *table.Writer, _, sub []types.Datum, h tablecodec.Handle) error {
		t := p.Targets[i].Table
		if ok, err := ctx.refreshTarget(t, sub); err != nil || !ok {
			return err
		}
		row := sub[:len(t.Columns)]
		if err := ctx.fire(t, catalog.Before, catalog.OnDelete, row, nil); err != nil {
			return err
		}
		if err := w.Remove(ctx.write(), table.StoredRow(ctx.Eval, t, row), h); err != nil {
			return err
		}
		if err := ctx.rowDeleted(t, row); err != nil {
			return err
		}
		res.Affected++
		return ctx.fire(t, catalog.After, catalog.OnDelete, row, nil)
	})
	return res, err
}
