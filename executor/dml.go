package executor

import (
	"errors"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/expression"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/planner"
	"github.com/basalt-db/basalt/table"
	"github.com/basalt-db/basalt/tablecodec"
	"github.com/basalt-db/basalt/types"
)

// DMLResult is what a write statement reports.
type DMLResult struct {
	Affected     uint64
	Matched      uint64
	LastInsertID uint64
	// ExplicitID is the last AUTO_INCREMENT value an INSERT was given and
	// stored, which the OK packet reports when none was generated
	// (mysql_insert_id()); LAST_INSERT_ID() ignores it.
	ExplicitID uint64
	// Records and Duplicates are the rows an INSERT processed and those
	// that met a duplicate key (ignored, replaced or updated).
	Records, Duplicates uint64
}

func (ctx *Ctx) pessimistic() bool { return ctx.Txn.Mode() == kv.Pessimistic }

func (ctx *Ctx) lock(keys ...[]byte) error {
	if !ctx.pessimistic() || len(keys) == 0 {
		return nil
	}
	return ctx.Txn.LockKeys(ctx.Context, ctx.ForUpdateTS, ctx.LockWait, keys...)
}

// handleFor returns the handle of a new row, allocating a hidden one.
func handleFor(ctx *Ctx, t *catalog.TableInfo, row []types.Datum) (tablecodec.Handle, error) {
	switch {
	case t.PKIsHandle:
		v := row[t.HandleColumn().Offset]
		if v.Kind() == types.KindUint {
			return tablecodec.IntHandle(int64(v.Uint())), nil
		}
		return tablecodec.IntHandle(v.Int()), nil
	case t.CommonHandle:
		pk := t.PrimaryKey()
		vals := make([]types.Datum, len(pk.Columns))
		for i, c := range pk.Columns {
			vals[i] = table.StoredKeyValue(ctx.Eval, t, t.Columns[c.Offset], row[c.Offset])
		}
		enc, err := encodeDatums(vals)
		return tablecodec.Handle{Common: enc}, err
	}
	id, err := ctx.allocAutoID(t)
	return tablecodec.IntHandle(id), err
}

// ExecInsert runs an INSERT or REPLACE.
func ExecInsert(ctx *Ctx, p *planner.Insert) (DMLResult, error) {
	var res DMLResult
	t := p.Table
	w := takeSpareWriter(&p.Exec, t)
	defer putSpareWriter(&p.Exec, w)
	rows := p.Rows
	var selRows [][]types.Datum
	if p.Select != nil {
		e, err := BuildAnalyzed(p.Select.Plan, ctx.RuntimeStats)
		if err != nil {
			return res, err
		}
		if selRows, err = Drain(ctx, e); err != nil {
			return res, err
		}
	}
	n := len(rows)
	if p.Select != nil {
		n = len(selRows)
	}
	if p.Ignore {
		// INSERT IGNORE turns conversion errors into warnings too.
		defer func(strict bool) { ctx.Eval.Strict = strict }(ctx.Eval.Strict)
		ctx.Eval.Strict = false
	}
	defer func() { ctx.Eval.RowNum = 0 }()
	// Rows are cut from blocks of up to insertBlockRows (one allocation
	// each, not one per row of a bulk INSERT); given is reused.
	var block []types.Datum
	given := make([]bool, len(t.Columns))
	for i := 0; i < n; i++ {
		if err := ctx.checkpoint(i); err != nil {
			return res, err
		}
		ctx.Eval.RowNum = i + 1
		if len(block) < len(t.Columns) {
			block = make([]types.Datum, min(n-i, insertBlockRows)*len(t.Columns))
		}
		row := block[:len(t.Columns):len(t.Columns)]
		block = block[len(t.Columns):]
		clear(given)
		for j, off := range p.Columns {
			var v types.Datum
			if p.Select != nil {
				v = selRows[i][j]
			} else if j < len(rows[i]) && rows[i][j] != nil {
				var err error
				if v, err = rows[i][j].Eval(ctx.Eval, nil); err != nil {
					return res, err
				}
			} else {
				continue
			}
			cv, err := table.Convert(ctx.Eval, v, t.Columns[off])
			if err != nil {
				return res, err
			}
			row[off], given[off] = cv, true
		}
		n, err := addRow(ctx, p, w, row, given, len(rows) == 1, &res)
		if err != nil {
			return res, err
		}
		res.Records++
		if n != 1 {
			res.Duplicates++
		}
		res.Affected += n
	}
	return res, nil
}

// insertBlockRows is the most rows ExecInsert allocates at once.
const insertBlockRows = 256

// addRow completes a row whose given columns are set (defaults, BEFORE
// INSERT triggers, NOT NULL, auto-increment, the handle) and inserts it
// (insertRow), noting the first generated id in res. single is a
// one-row INSERT, where NULL into a NOT NULL column is always an error.
func addRow(ctx *Ctx, p *planner.Insert, w *table.Writer, row []types.Datum, given []bool, single bool, res *DMLResult) (uint64, error) {
	t := p.Table
	auto := t.AutoIncColumn()
	for _, col := range t.Columns {
		if given[col.Offset] {
			continue
		}
		v, err := table.DefaultValue(ctx.Eval, col)
		if err != nil {
			return 0, err
		}
		row[col.Offset] = v
	}
	if auto != nil && row[auto.Offset].IsNull() && len(t.Triggers) > 0 {
		// A BEFORE INSERT trigger reads 0 for a value yet to be
		// generated, as in MySQL.
		row[auto.Offset] = types.NewInt(0)
	}
	if err := ctx.fire(t, catalog.Before, catalog.OnInsert, nil, row); err != nil {
		return 0, err
	}
	for _, col := range t.Columns {
		if row[col.Offset].IsNull() && col.Type.NotNull() && !col.AutoIncrement {
			if (ctx.Eval.Strict && !p.Ignore) || single {
				return 0, errno.New(errno.ErBadNull, "Column '%s' cannot be null", col.Name)
			}
			ctx.Eval.Warn(errno.New(errno.ErBadNull, "Column '%s' cannot be null", col.Name))
			row[col.Offset] = table.ZeroValue(col)
		}
	}
	explicit := uint64(0)
	if auto != nil {
		v := row[auto.Offset]
		// 0 generates a value too, unless sql_mode has
		// NO_AUTO_VALUE_ON_ZERO (then 0 is stored as given).
		generate := ctx.Eval.Mode&expression.ModeNoAutoValueOnZero == 0 &&
			types.Compare(v, types.NewInt(0)) == 0 && v.Kind() != types.KindString
		if v.IsNull() || generate {
			id, err := ctx.allocAutoID(t)
			if err != nil {
				return 0, err
			}
			if res.LastInsertID == 0 {
				res.LastInsertID = uint64(id)
			}
			if row[auto.Offset], err = table.Convert(ctx.Eval, types.NewInt(id), auto); err != nil {
				return 0, err
			}
		} else {
			iv, _, _ := types.ToInt(v)
			if err := ctx.Catalog.RebaseAutoID(ctx.Context, t, iv); err != nil {
				return 0, err
			}
			explicit = uint64(iv)
		}
	}
	h, err := handleFor(ctx, t, row)
	if err != nil {
		return 0, err
	}
	n, err := insertRow(ctx, p, w, row, h)
	if err == nil && n > 0 && explicit != 0 {
		res.ExplicitID = explicit
	}
	return n, err
}

// insertRow writes one row of an INSERT, resolving a duplicate as the
// statement asks (IGNORE, REPLACE, ON DUPLICATE KEY UPDATE). It returns the
// affected-row count MySQL reports for it.
func insertRow(ctx *Ctx, p *planner.Insert, w *table.Writer, row []types.Datum, h tablecodec.Handle) (uint64, error) {
	stored := table.StoredRow(ctx.Eval, w.Table(), row)
	keys, err := w.UniqueKeys(stored, h)
	if err != nil {
		return 0, err
	}
	if err := ctx.lock(keys...); err != nil {
		return 0, err
	}
	sp := ctx.Txn.Savepoint()
	err = table.SessionDupError(ctx.Eval, w.Table(), w.Add(ctx.write(), stored, h), stored, row)
	var dup *errno.Error
	if err == nil || !errors.As(err, &dup) || dup.Code != errno.ErDupEntry {
		if err == nil {
			if err := ctx.checkParents(w.Table(), nil, row); err != nil {
				if p.Ignore {
					if skipped, err := ctx.ignoreFK(sp, err); skipped || err != nil {
						return 0, err
					}
				}
				ctx.Txn.ReleaseSavepoint(sp)
				return 0, err
			}
			ctx.Txn.ReleaseSavepoint(sp)
			return 1, ctx.fire(w.Table(), catalog.After, catalog.OnInsert, nil, row)
		}
		ctx.Txn.ReleaseSavepoint(sp)
		return 0, err
	}
	ctx.Txn.RollbackTo(sp)
	switch {
	case p.Ignore:
		ctx.Eval.Warn(dup)
		return 0, nil
	case p.Replace:
		var affected uint64
		for attempt := 0; attempt < 16; attempt++ {
			old, oldH, found, err := findConflict(ctx, w, keys)
			if err != nil {
				return 0, err
			}
			if !found {
				if err := w.Add(ctx.write(), stored, h); err != nil {
					return 0, err
				}
				if err := ctx.checkParents(w.Table(), nil, row); err != nil {
					return 0, err
				}
				return affected + 1, ctx.fire(w.Table(), catalog.After, catalog.OnInsert, nil, row)
			}
			if err := ctx.lock(tablecodec.RowKey(w.Table().ID, oldH)); err != nil {
				return 0, err
			}
			if affected == 0 && len(w.Table().Triggers) == 0 && sameRow(old, row) && lastKeyConflict(ctx, keys) {
				// MySQL replaces a row that conflicts on the table's last
				// unique key in place (when no trigger is to run), and
				// counts an identical one as written but not deleted: 1
				// affected row, not 2.
				return 1, nil
			}
			// The replaced row is deleted, with its DELETE triggers.
			if err := ctx.fire(w.Table(), catalog.Before, catalog.OnDelete, old, nil); err != nil {
				return 0, err
			}
			if err := w.Remove(ctx.write(), table.StoredRow(ctx.Eval, w.Table(), old), oldH); err != nil {
				return 0, err
			}
			if err := ctx.rowDeleted(w.Table(), old); err != nil {
				return 0, err
			}
			if err := ctx.fire(w.Table(), catalog.After, catalog.OnDelete, old, nil); err != nil {
				return 0, err
			}
			affected++
		}
		return 0, dup
	case len(p.OnDup) > 0:
		old, oldH, found, err := findConflict(ctx, w, keys)
		if err != nil {
			return 0, err
		}
		if !found {
			return 0, dup
		}
		if err := ctx.lock(tablecodec.RowKey(w.Table().ID, oldH)); err != nil {
			return 0, err
		}
		src := append(append(append([]types.Datum(nil), old...), table.HandleDatum(oldH)), row...)
		changed, err := applyAssignments(ctx, w.Table(), src, p.OnDup)
		if err != nil {
			return 0, err
		}
		newRow := src[:len(w.Table().Columns)]
		if changed, err = beforeUpdate(ctx, w.Table(), old, newRow, changed); err != nil {
			return 0, err
		}
		affected := uint64(0)
		if changed {
			if err := rewriteRow(ctx, w, old, newRow, oldH); err != nil {
				return 0, err
			}
			if err := ctx.rowUpdated(w.Table(), old, newRow); err != nil {
				return 0, err
			}
			affected = 2
		}
		// As for UPDATE, AFTER UPDATE runs for the row changed or not.
		return affected, ctx.fire(w.Table(), catalog.After, catalog.OnUpdate, old, newRow)
	}
	return 0, err
}

// sameRow reports whether an existing row holds exactly the values of a
// new one.
func sameRow(old, row []types.Datum) bool {
	for i := range row {
		if old[i].IsNull() != row[i].IsNull() || (!old[i].IsNull() && types.Compare(old[i], row[i]) != 0) {
			return false
		}
	}
	return true
}

// lastKeyConflict reports whether the conflict findConflict found is on
// the last of keys alone (every other key is free).
func lastKeyConflict(ctx *Ctx, keys [][]byte) bool {
	for _, k := range keys[:len(keys)-1] {
		if _, err := ctx.Reader.Get(ctx.Context, k); !errors.Is(err, kv.ErrNotFound) {
			return false
		}
	}
	return true
}

// findConflict finds the existing row that holds one of keys (the row key
// first, then unique index keys).
func findConflict(ctx *Ctx, w *table.Writer, keys [][]byte) ([]types.Datum, tablecodec.Handle, bool, error) {
	dec := table.NewDecoder(w.Table(), nil, table.StorageZone(ctx.Eval, w.Table()))
	row := make([]types.Datum, len(w.Table().Columns)+1)
	for i, k := range keys {
		v, err := ctx.Reader.Get(ctx.Context, k)
		if errors.Is(err, kv.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, tablecodec.Handle{}, false, err
		}
		var h tablecodec.Handle
		if i == 0 {
			_, h, err = tablecodec.DecodeRowKey(k, w.Table().CommonHandle)
			if err == nil {
				err = dec.Decode(h, v, row)
			}
			return row[:len(w.Table().Columns)], h, err == nil, err
		}
		if h, err = tablecodec.DecodeHandle(v, w.Table().CommonHandle); err != nil {
			return nil, h, false, err
		}
		r, err := readRow(ctx, w.Table(), dec, h, row, false)
		if err != nil || r == nil {
			return nil, h, false, err
		}
		return r[:len(w.Table().Columns)], h, true, nil
	}
	return nil, tablecodec.Handle{}, false, nil
}

// applyAssignments evaluates SET assignments left to right over row (in
// the table source layout, updated in place) and reports whether any
// column changed. ON UPDATE CURRENT_TIMESTAMP columns follow a change.
func applyAssignments(ctx *Ctx, t *catalog.TableInfo, row []types.Datum, set []planner.Assignment) (bool, error) {
	return applyAssignmentsOn(ctx, t, row, row, set)
}

// applyAssignmentsOn is applyAssignments with the expressions reading
// src, of which row (the changed table's columns) is a part, so that a
// later assignment reads what an earlier one set.
func applyAssignmentsOn(ctx *Ctx, t *catalog.TableInfo, src, row []types.Datum, set []planner.Assignment) (bool, error) {
	changed := false
	for _, a := range set {
		v, err := a.Expr.Eval(ctx.Eval, src)
		if err != nil {
			return false, err
		}
		col := t.Columns[a.Col]
		if v, err = table.Convert(ctx.Eval, v, col); err != nil {
			return false, err
		}
		if v.IsNull() && col.Type.NotNull() {
			if ctx.Eval.Strict {
				return false, errno.New(errno.ErBadNull, "Column '%s' cannot be null", col.Name)
			}
			ctx.Eval.Warn(errno.New(errno.ErBadNull, "Column '%s' cannot be null", col.Name))
			v = table.ZeroValue(col)
		}
		if !table.SameValue(row[a.Col], v) {
			changed = true
			row[a.Col] = v
		}
	}
	if changed {
		for _, col := range t.Columns {
			if col.OnUpdateNow && !assigns(set, col.Offset) {
				v, err := table.Convert(ctx.Eval, types.NewTime(types.FromGoTime(ctx.Eval.NowInZone()), types.TimeDatetime, 6), col)
				if err != nil {
					return false, err
				}
				row[col.Offset] = v
			}
		}
	}
	return changed, nil
}

// assigns reports whether set assigns the column at offset col.
func assigns(set []planner.Assignment, col int) bool {
	for _, a := range set {
		if a.Col == col {
			return true
		}
	}
	return false
}

// rowsToWrite reads the rows an UPDATE or DELETE changes and locks them.
func rowsToWrite(ctx *Ctx, t *catalog.TableInfo, source planner.Plan) ([][]types.Datum, error) {
	src, err := BuildAnalyzed(source, ctx.RuntimeStats)
	if err != nil {
		return nil, err
	}
	rows, err := Drain(ctx, src)
	if err != nil || !ctx.pessimistic() || sourceLocks(source) {
		return rows, err
	}
	keys := make([][]byte, len(rows))
	for i, r := range rows {
		keys[i] = tablecodec.RowKey(t.ID, table.HandleOf(t, r))
	}
	return rows, ctx.lock(keys...)
}

// sourceLocks reports whether the rows source yields were locked as they
// were read: its leaf is a locking read (planner.sourceFor plans a WHERE
// so), whose rows rowsToWrite need not lock again.
func sourceLocks(p planner.Plan) bool {
	for {
		switch x := p.(type) {
		case *planner.Selection:
			p = x.Child
		case *planner.Sort:
			p = x.Child
		case *planner.Limit:
			p = x.Child
		case *planner.PointGet:
			return x.Lock
		case *planner.BatchPointGet:
			return x.Lock
		case *planner.TableScan:
			return x.Lock
		case *planner.IndexScan:
			return x.Lock
		default:
			return false
		}
	}
}

// ExecUpdate runs a single-table UPDATE.
func ExecUpdate(ctx *Ctx, p *planner.Update) (DMLResult, error) {
	var res DMLResult
	t := p.Table
	if p.Ignore {
		// Conversion errors, in WHERE and SET, become warnings.
		defer func(strict bool) { ctx.Eval.Strict = strict }(ctx.Eval.Strict)
		ctx.Eval.Strict = false
	}
	rows, err := rowsToWrite(ctx, t, p.Source)
	if err != nil {
		return res, err
	}
	w := takeWriter(&p.Exec, t)
	defer putWriter(&p.Exec, w)
	defer func() { ctx.Eval.RowNum = 0 }()
	for i, r := range rows {
		if err := ctx.checkpoint(i); err != nil {
			return res, err
		}
		ctx.Eval.RowNum = i + 1
		if ok, err := ctx.refresh(t, r); err != nil || !ok {
			if err != nil {
				return res, err
			}
			continue
		}
		res.Matched++
		h := table.HandleOf(t, r)
		old := append([]types.Datum(nil), r[:len(t.Columns)]...)
		changed, err := applyAssignments(ctx, t, r, p.Set)
		if err != nil {
			return res, err
		}
		row := r[:len(t.Columns)]
		if changed, err = beforeUpdate(ctx, t, old, row, changed); err != nil {
			return res, err
		}
		if changed {
			sp := ctx.Txn.Savepoint()
			skipped, err := rewriteRowIgnore(ctx, w, old, row, h, p.Ignore)
			if err != nil {
				return res, err
			}
			if !skipped {
				if err := ctx.rowUpdated(t, old, row); err != nil {
					if !p.Ignore {
						return res, err
					}
					// The row's writes were taken back (ignoreFK).
					if _, err := ctx.ignoreFK(sp, err); err != nil {
						return res, err
					}
					continue
				}
			}
			ctx.Txn.ReleaseSavepoint(sp)
			if skipped {
				continue
			}
			res.Affected++
		}
		// MySQL runs AFTER UPDATE triggers for every matched row.
		if err := ctx.fire(t, catalog.After, catalog.OnUpdate, old, row); err != nil {
			return res, err
		}
	}
	return res, nil
}

// rewriteRowIgnore is rewriteRow for UPDATE, which with IGNORE leaves a
// row whose new values duplicate a key as it was, with the duplicate as a
// warning, and reports it skipped.
func rewriteRowIgnore(ctx *Ctx, w *table.Writer, old, newRow []types.Datum, h tablecodec.Handle, ignore bool) (bool, error) {
	if !ignore {
		return false, rewriteRow(ctx, w, old, newRow, h)
	}
	sp := ctx.Txn.Savepoint()
	err := rewriteRow(ctx, w, old, newRow, h)
	var dup *errno.Error
	if err == nil || !errors.As(err, &dup) || dup.Code != errno.ErDupEntry {
		ctx.Txn.ReleaseSavepoint(sp)
		return false, err
	}
	ctx.Txn.RollbackTo(sp)
	ctx.Eval.Warn(dup)
	return true, nil
}

// rewriteRow replaces the row old at handle h with newRow, for UPDATE and
// ON DUPLICATE KEY UPDATE. When the new values change the handle (an
// integer or clustered primary key was assigned), the old row and its
// index entries are removed and the new row is added at its own handle,
// which fails with a duplicate if that handle is taken; otherwise the row
// is rewritten in place.
func rewriteRow(ctx *Ctx, w *table.Writer, old, newRow []types.Datum, h tablecodec.Handle) error {
	newH := h
	if w.Table().PKIsHandle || w.Table().CommonHandle {
		var err error
		if newH, err = handleFor(ctx, w.Table(), newRow); err != nil {
			return err
		}
	}
	stored := table.StoredRow(ctx.Eval, w.Table(), newRow)
	return table.SessionDupError(ctx.Eval, w.Table(), rewriteStored(ctx, w, table.StoredRow(ctx.Eval, w.Table(), old), stored, h, newH), stored, newRow)
}

// rewriteStored is rewriteRow with the rows in their stored form and the
// new row's handle.
func rewriteStored(ctx *Ctx, w *table.Writer, old, newRow []types.Datum, h, newH tablecodec.Handle) error {
	if string(newH.Encoded()) != string(h.Encoded()) {
		// The row moves with the values of the hidden columns it had.
		hidden, err := w.OldHidden(ctx.write(), h)
		if err != nil {
			return err
		}
		if err := w.Remove(ctx.write(), old, h); err != nil {
			return err
		}
		nk, err := w.UniqueKeys(newRow, newH)
		if err != nil {
			return err
		}
		if err := ctx.lock(nk...); err != nil {
			return err
		}
		return w.AddHidden(ctx.write(), newRow, hidden, newH)
	}
	if ctx.pessimistic() && w.HasUniqueIndex() {
		nk, err := w.UniqueKeys(newRow, h)
		if err != nil {
			return err
		}
		if err := ctx.lock(nk[1:]...); err != nil {
			return err
		}
	}
	return w.Update(ctx.write(), old, newRow, h)
}

// ExecDelete runs a single-table DELETE.
func ExecDelete(ctx *Ctx, p *planner.Delete) (DMLResult, error) {
	var res DMLResult
	t := p.Table
	if p.Ignore {
		defer func(strict bool) { ctx.Eval.Strict = strict }(ctx.Eval.Strict)
		ctx.Eval.Strict = false
	}
	rows, err := rowsToWrite(ctx, t, p.Source)
	if err != nil {
		return res, err
	}
	w := takeWriter(&p.Exec, t)
	defer putWriter(&p.Exec, w)
	for i, r := range rows {
		if err := ctx.checkpoint(i); err != nil {
			return res, err
		}
		if ok, err := ctx.refresh(t, r); err != nil || !ok {
			if err != nil {
				return res, err
			}
			continue
		}
		row := r[:len(t.Columns)]
		if err := ctx.fire(t, catalog.Before, catalog.OnDelete, row, nil); err != nil {
			return res, err
		}
		sp := ctx.Txn.Savepoint()
		if err := w.Remove(ctx.write(), table.StoredRow(ctx.Eval, t, row), table.HandleOf(t, r)); err != nil {
			return res, err
		}
		if err := ctx.rowDeleted(t, row); err != nil {
			skipped := false
			if p.Ignore {
				skipped, err = ctx.ignoreFK(sp, err)
			}
			if err != nil {
				return res, err
			}
			if skipped {
				continue
			}
		}
		ctx.Txn.ReleaseSavepoint(sp)
		if err := ctx.fire(t, catalog.After, catalog.OnDelete, row, nil); err != nil {
			return res, err
		}
		res.Affected++
	}
	return res, nil
}
