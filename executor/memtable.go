package executor

import (
	"github.com/basalt-db/basalt/planner"
	"github.com/basalt-db/basalt/types"
)

// memTableExec serves a virtual table's rows, computed at Open.
type memTableExec struct {
	p        *planner.MemTable
	rowsExec // the rows, computed at Open
}

func (e *memTableExec) Open(ctx *Ctx) error {
	e.rows, e.pos = nil, 0
	if ctx.MemTable == nil {
		return nil
	}
	rows, err := ctx.MemTable(e.p.Table.Name)
	if err != nil {
		return err
	}
	for i, r := range rows {
		e.rows = append(e.rows, append(r, types.NewInt(int64(i+1))))
	}
	return nil
}

func (e *memTableExec) Close() error { return nil }
