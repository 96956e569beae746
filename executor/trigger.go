package executor

import (
	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/table"
	"github.com/basalt-db/basalt/types"
)

// Triggers runs row triggers for the write statements of one statement
// (the session compiles and runs their bodies). Writers call it for each
// row they insert, update or delete, in MySQL's order: BEFORE, the write,
// AFTER. An error from a trigger fails the statement, whose writes the
// caller undoes with its own.
type Triggers interface {
	// Fire runs t's triggers of timing and event for one row. old is nil
	// for an insert and new for a delete. A BEFORE trigger may change
	// new in place (SET NEW.col), with values converted to the columns'
	// types.
	Fire(ctx *Ctx, t *catalog.TableInfo, timing, event string, old, new []types.Datum) error
}

// fire runs t's triggers of timing and event, if it has any.
func (ctx *Ctx) fire(t *catalog.TableInfo, timing, event string, old, new []types.Datum) error {
	if ctx.Triggers == nil || len(t.Triggers) == 0 {
		return nil
	}
	return ctx.Triggers.Fire(ctx, t, timing, event, old, new)
}

// beforeUpdate runs t's BEFORE UPDATE triggers on a row that the
// statement's assignments turned from old into row, and reports whether
// the row now differs from old (changed, as the assignments left it, or
// by what the triggers set). A trigger that set a NOT NULL column to NULL
// fails like the assignment would.
func beforeUpdate(ctx *Ctx, t *catalog.TableInfo, old, row []types.Datum, changed bool) (bool, error) {
	if ctx.Triggers == nil || len(t.Triggers) == 0 {
		return changed, nil
	}
	if err := ctx.Triggers.Fire(ctx, t, catalog.Before, catalog.OnUpdate, old, row); err != nil {
		return false, err
	}
	changed = false
	for i, col := range t.Columns {
		if row[i].IsNull() && col.Type.NotNull() {
			if ctx.Eval.Strict {
				return false, errno.New(errno.ErBadNull, "Column '%s' cannot be null", col.Name)
			}
			row[i] = table.ZeroValue(col)
		}
		if !table.SameValue(old[i], row[i]) {
			changed = true
		}
	}
	return changed, nil
}
