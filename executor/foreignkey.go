package executor

import (
	"errors"
	"slices"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/table"
	"github.com/basalt-db/basalt/tablecodec"
	"github.com/basalt-db/basalt/types"
)

// Foreign keys are enforced row by row, as InnoDB does, right after each
// row is written: a child row's new values must have a parent row (so a
// row may refer to itself), and a parent row's removal or change acts on
// the child rows that refer to its old values (RESTRICT and NO ACTION
// fail, CASCADE and SET NULL change them, and those changes act on their
// own children in turn, to a depth of fkMaxDepth).
//
// Both sides are read through the statement's reader, so they see the
// transaction's own writes, and a pessimistic DML's reader is the latest
// committed data. A check holds the parent row it found (holdParent)
// until the transaction ends: in a pessimistic transaction with an
// exclusive lock (TiDB and InnoDB take a shared one, so here two
// transactions adding children of one parent wait for each other), and
// the parent's deleter, which reads no child yet committed, meets a
// conflict on the parent row and runs again. Child rows are locked when
// a cascaded action changes them.
//
// Cascaded changes fire no triggers, as in MySQL.

// fkMaxDepth is InnoDB's limit on nested cascaded actions: a row the
// 15th level of a cascade would change fails the statement (3008).
const fkMaxDepth = 15

func (ctx *Ctx) fkOn() bool { return ctx.IS != nil && !ctx.NoFKChecks }

// parentSide reports whether rows of some table may have children: the
// cheap test writers make before looking for a row's.
func (ctx *Ctx) parentSide() bool { return ctx.fkOn() && ctx.IS.HasForeignKeys() }

func (ctx *Ctx) dbName(t *catalog.TableInfo) string {
	if db := ctx.IS.DBByID(t.DBID); db != nil {
		return db.Name
	}
	return ""
}

// fkValues returns row's values of cols of t in their stored form, and
// false if one is NULL (a NULL refers to nothing).
func (ctx *Ctx) fkValues(t *catalog.TableInfo, row []types.Datum, cols []string) ([]types.Datum, bool) {
	vals := make([]types.Datum, len(cols))
	for i, name := range cols {
		c := t.FindColumn(name)
		if c == nil || row[c.Offset].IsNull() {
			return nil, false
		}
		vals[i] = table.StoredKeyValue(ctx.Eval, t, c, row[c.Offset])
	}
	return vals, true
}

func noReferencedRow(db string, t *catalog.TableInfo, fk *catalog.FKInfo) error {
	return errno.New(errno.ErNoReferencedRow2, "Cannot add or update a child row: a foreign key constraint fails (`%s`.`%s`, %s)", db, t.Name, fk.Clause(db))
}

func rowIsReferenced(db string, child *catalog.TableInfo, fk *catalog.FKInfo) error {
	return errno.New(errno.ErRowIsReferenced2, "Cannot delete or update a parent row: a foreign key constraint fails (`%s`.`%s`, %s)", db, child.Name, fk.Clause(db))
}

// checkParents checks that the row t now holds, new (old before an
// update, nil for an insert), has a parent row for each of t's foreign
// keys whose columns it set, and locks those parents.
func (ctx *Ctx) checkParents(t *catalog.TableInfo, old, new []types.Datum) error {
	if len(t.ForeignKeys) == 0 || !ctx.fkOn() {
		return nil
	}
	db := ctx.dbName(t)
	for _, fk := range t.ForeignKeys {
		if old != nil && !colsChanged(t, old, new, fk.Cols) {
			continue
		}
		vals, ok := ctx.fkValues(t, new, fk.Cols)
		if !ok {
			continue
		}
		parent := ctx.IS.Table(fk.RefSchema, fk.RefTable)
		if parent == nil || parent.View != nil {
			return noReferencedRow(db, t, fk)
		}
		ix := table.FKIndex(parent, fk.RefCols)
		if ix == nil {
			return noReferencedRow(db, t, fk)
		}
		hs, err := table.FKLookup{T: parent, Ix: ix}.Handles(ctx.Context, ctx.Reader, vals, 1)
		if err != nil {
			return err
		}
		if len(hs) == 0 {
			return noReferencedRow(db, t, fk)
		}
		if err := ctx.holdParent(tablecodec.RowKey(parent.ID, hs[0])); err != nil {
			return err
		}
	}
	return nil
}

// holdParent keeps the parent row at key from being deleted or changed
// under a child row the transaction wrote, until it ends. An optimistic
// transaction records the key (LockKeys), which its commit checks for
// conflicts and leaves a lock record on. A pessimistic one locks it, and
// also writes the row back as it is: a lock alone leaves no record at
// commit, and a transaction that meanwhile read no child and waits to
// delete the parent must see a conflict there (and, pessimistic, run its
// statement again, then finding the child).
func (ctx *Ctx) holdParent(key []byte) error {
	if err := ctx.Txn.LockKeys(ctx.Context, ctx.ForUpdateTS, ctx.LockWait, key); err != nil {
		return err
	}
	if !ctx.pessimistic() {
		return nil
	}
	v, err := ctx.Reader.Get(ctx.Context, key)
	if err != nil {
		if errors.Is(err, kv.ErrNotFound) {
			return nil // deleted by this very transaction? the caller found it
		}
		return err
	}
	return ctx.Txn.Set(key, v)
}

func colsChanged(t *catalog.TableInfo, old, new []types.Datum, cols []string) bool {
	for _, name := range cols {
		if c := t.FindColumn(name); c != nil && !table.SameValue(old[c.Offset], new[c.Offset]) {
			return true
		}
	}
	return false
}

// fkCascade is where a cascaded action stands: how deep, and the tables
// an update changed on the way, which ON UPDATE CASCADE and SET NULL must
// not change again (MySQL then acts as RESTRICT, to stop loops).
type fkCascade struct {
	depth   int
	updated []int64
}

// childRows finds the rows of r's child that refer to vals, reads and
// locks them. It returns their handles and rows.
func (ctx *Ctx) childRows(r catalog.ReferredFK, vals []types.Datum) ([]tablecodec.Handle, [][]types.Datum, error) {
	child := r.Child
	ix := table.FKIndex(child, r.FK.Cols)
	if ix == nil {
		return nil, nil, nil
	}
	hs, err := table.FKLookup{T: child, Ix: ix}.Handles(ctx.Context, ctx.Reader, vals, 0)
	if err != nil || len(hs) == 0 {
		return nil, nil, err
	}
	dec := table.NewDecoder(child, nil, table.StorageZone(ctx.Eval, child))
	var outH []tablecodec.Handle
	var rows [][]types.Datum
	for _, h := range hs {
		row, err := readRow(ctx, child, dec, h, make([]types.Datum, len(child.Columns)+1), false)
		if err != nil {
			return nil, nil, err
		}
		if row == nil {
			continue // a cascade removed it already
		}
		outH = append(outH, h)
		rows = append(rows, row[:len(child.Columns)])
	}
	if err := ctx.lock(rowKeys(child, outH)...); err != nil {
		return nil, nil, err
	}
	return outH, rows, nil
}

func rowKeys(t *catalog.TableInfo, hs []tablecodec.Handle) [][]byte {
	keys := make([][]byte, len(hs))
	for i, h := range hs {
		keys[i] = tablecodec.RowKey(t.ID, h)
	}
	return keys
}

// parentDeleted acts on the children of row, just deleted from t.
func (ctx *Ctx) parentDeleted(t *catalog.TableInfo, row []types.Datum, at fkCascade) error {
	if !ctx.parentSide() {
		return nil
	}
	db := ctx.dbName(t)
	for _, r := range ctx.IS.ReferredBy(db, t.Name) {
		vals, ok := ctx.fkValues(t, row, r.FK.RefCols)
		if !ok {
			continue
		}
		hs, rows, err := ctx.childRows(r, vals)
		if err != nil {
			return err
		}
		if len(hs) == 0 {
			continue
		}
		switch r.FK.OnDelete {
		case "CASCADE":
			if at.depth+1 >= fkMaxDepth {
				return errno.New(errno.ErFKDepthExceeded, "Foreign key cascade delete/update exceeds max depth of %d.", fkMaxDepth)
			}
			next := fkCascade{depth: at.depth + 1, updated: at.updated}
			w := table.NewWriter(r.Child)
			for i, h := range hs {
				if err := w.Remove(ctx.write(), table.StoredRow(ctx.Eval, r.Child, rows[i]), h); err != nil {
					return err
				}
				if err := ctx.parentDeleted(r.Child, rows[i], next); err != nil {
					return err
				}
			}
		case "SET NULL":
			if err := ctx.setNull(r, hs, rows, at); err != nil {
				return err
			}
		default:
			return rowIsReferenced(ctx.dbName(r.Child), r.Child, r.FK)
		}
	}
	return nil
}

// parentUpdated acts on the children of a row of t changed from old to
// new.
func (ctx *Ctx) parentUpdated(t *catalog.TableInfo, old, new []types.Datum, at fkCascade) error {
	if !ctx.parentSide() {
		return nil
	}
	db := ctx.dbName(t)
	refs := ctx.IS.ReferredBy(db, t.Name)
	if len(refs) == 0 {
		return nil
	}
	at.updated = append(slices.Clip(at.updated), t.ID)
	for _, r := range refs {
		if !colsChanged(t, old, new, r.FK.RefCols) {
			continue
		}
		vals, ok := ctx.fkValues(t, old, r.FK.RefCols)
		if !ok {
			continue
		}
		hs, rows, err := ctx.childRows(r, vals)
		if err != nil {
			return err
		}
		if len(hs) == 0 {
			continue
		}
		action := r.FK.OnUpdate
		if (action == "CASCADE" || action == "SET NULL") && slices.Contains(at.updated, r.Child.ID) {
			action = "RESTRICT"
		}
		switch action {
		case "CASCADE":
			if at.depth+1 >= fkMaxDepth {
				return errno.New(errno.ErFKDepthExceeded, "Foreign key cascade delete/update exceeds max depth of %d.", fkMaxDepth)
			}
			for i, h := range hs {
				nr := slices.Clone(rows[i])
				for j, name := range r.FK.Cols {
					c := r.Child.FindColumn(name)
					pc := t.FindColumn(r.FK.RefCols[j])
					v, err := table.Convert(ctx.Eval, new[pc.Offset], c)
					if err != nil {
						return err
					}
					nr[c.Offset] = v
				}
				if err := ctx.cascadeUpdate(r.Child, rows[i], nr, h, at); err != nil {
					return err
				}
			}
		case "SET NULL":
			if err := ctx.setNull(r, hs, rows, at); err != nil {
				return err
			}
		default:
			return rowIsReferenced(ctx.dbName(r.Child), r.Child, r.FK)
		}
	}
	return nil
}

// setNull sets the columns of r's constraint to NULL in the child rows.
func (ctx *Ctx) setNull(r catalog.ReferredFK, hs []tablecodec.Handle, rows [][]types.Datum, at fkCascade) error {
	if at.depth+1 >= fkMaxDepth {
		return errno.New(errno.ErFKDepthExceeded, "Foreign key cascade delete/update exceeds max depth of %d.", fkMaxDepth)
	}
	for i, h := range hs {
		nr := slices.Clone(rows[i])
		for _, name := range r.FK.Cols {
			nr[r.Child.FindColumn(name).Offset] = types.Null
		}
		if err := ctx.cascadeUpdate(r.Child, rows[i], nr, h, at); err != nil {
			return err
		}
	}
	return nil
}

// cascadeUpdate rewrites a child row that a cascaded action changed, and
// acts on its own children.
func (ctx *Ctx) cascadeUpdate(t *catalog.TableInfo, old, new []types.Datum, h tablecodec.Handle, at fkCascade) error {
	if err := rewriteRow(ctx, table.NewWriter(t), old, new, h); err != nil {
		return err
	}
	return ctx.parentUpdated(t, old, new, fkCascade{depth: at.depth + 1, updated: at.updated})
}

// rowDeleted is what a statement's delete of a row of t triggers.
func (ctx *Ctx) rowDeleted(t *catalog.TableInfo, row []types.Datum) error {
	return ctx.parentDeleted(t, row, fkCascade{})
}

// rowUpdated checks a row of t a statement changed from old to new, as a
// child and as a parent.
func (ctx *Ctx) rowUpdated(t *catalog.TableInfo, old, new []types.Datum) error {
	if err := ctx.checkParents(t, old, new); err != nil {
		return err
	}
	return ctx.parentUpdated(t, old, new, fkCascade{})
}

// refresh re-reads a row (in the source layout, its handle last) that an
// UPDATE or DELETE of t read before it began writing, when a cascaded
// action of an earlier row may have changed or removed it: t refers to
// itself or to a table whose actions reach back to it. It reports false
// for a row that is gone.
func (ctx *Ctx) refresh(t *catalog.TableInfo, r []types.Datum) (bool, error) {
	if !ctx.fkOn() || len(t.ForeignKeys) == 0 || len(ctx.IS.ReferredBy(ctx.dbName(t), t.Name)) == 0 {
		return true, nil
	}
	return ctx.reread(t, r)
}

// refreshTarget is refresh for a target of a multi-table UPDATE or
// DELETE, whose other targets' actions may reach any table that refers
// to another.
func (ctx *Ctx) refreshTarget(t *catalog.TableInfo, r []types.Datum) (bool, error) {
	if !ctx.fkOn() || len(t.ForeignKeys) == 0 {
		return true, nil
	}
	return ctx.reread(t, r)
}

func (ctx *Ctx) reread(t *catalog.TableInfo, r []types.Datum) (bool, error) {
	dec := table.NewDecoder(t, nil, table.StorageZone(ctx.Eval, t))
	cur, err := readRow(ctx, t, dec, table.HandleOf(t, r), make([]types.Datum, len(t.Columns)+1), false)
	if err != nil || cur == nil {
		return false, err
	}
	copy(r[:len(t.Columns)], cur[:len(t.Columns)])
	return true, nil
}

// ignoreFK is IGNORE's way with a row whose foreign key check failed
// (1451, 1452), as MySQL's: the row's writes since savepoint sp are taken
// back and the error becomes a warning. Other errors stay errors.
func (ctx *Ctx) ignoreFK(sp int, err error) (skipped bool, _ error) {
	var e *errno.Error
	if errors.As(err, &e) && (e.Code == errno.ErRowIsReferenced2 || e.Code == errno.ErNoReferencedRow2) {
		ctx.Txn.RollbackTo(sp)
		ctx.Eval.Warn(e)
		return true, nil
	}
	return false, err
}
