package ddl

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/table"
	"github.com/basalt-db/basalt/tablecodec"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// FOREIGN KEY constraints live on the child table (catalog.FKInfo) and
// name their parent. A definition is checked against the parent as MySQL
// 8 checks it: the parent exists (unless foreign_key_checks is off), its
// referenced columns lead an index, and each pair of columns has
// compatible types. The child gets an index on its columns when none
// leads with them, named after the constraint or its first column.
// Dropping what a constraint needs (the parent table, either index, a
// column) is refused, and RENAME TABLE of a parent renames it in its
// children's constraints.

type fkChecksKey struct{}

// WithoutFKChecks marks ctx for a schema change run with the session's
// foreign_key_checks off: a constraint may name a parent that does not
// exist, ADD FOREIGN KEY does not check the existing rows, and a parent
// table may be dropped or truncated.
func WithoutFKChecks(ctx context.Context) context.Context {
	return context.WithValue(ctx, fkChecksKey{}, false)
}

func fkChecks(ctx context.Context) bool {
	v, ok := ctx.Value(fkChecksKey{}).(bool)
	return !ok || v
}

func referAction(o ast.ReferOptionType) string {
	switch o {
	case ast.ReferOptionRestrict:
		return "RESTRICT"
	case ast.ReferOptionCascade:
		return "CASCADE"
	case ast.ReferOptionSetNull:
		return "SET NULL"
	case ast.ReferOptionNoAction:
		return "NO ACTION"
	case ast.ReferOptionSetDefault:
		return "SET DEFAULT"
	}
	return ""
}

// buildFK turns a FOREIGN KEY clause of table t, in database dbName, into
// a constraint named name, checked against the schema is (t itself for a
// self-reference).
func buildFK(is *catalog.InfoSchema, dbName string, t *catalog.TableInfo, c *ast.Constraint, name string, checks bool) (*catalog.FKInfo, error) {
	ref := c.Refer
	fk := &catalog.FKInfo{Name: name, RefSchema: ref.Table.Schema.O, RefTable: ref.Table.Name.O}
	if fk.RefSchema == "" {
		fk.RefSchema = dbName
	}
	if ref.OnDelete != nil {
		fk.OnDelete = referAction(ref.OnDelete.ReferOpt)
	}
	if ref.OnUpdate != nil {
		fk.OnUpdate = referAction(ref.OnUpdate.ReferOpt)
	}
	if len(c.Keys) != len(ref.IndexPartSpecifications) {
		label := c.Name
		if label == "" {
			label = "foreign key without name"
		}
		return nil, errno.New(errno.ErWrongFKDef, "Incorrect foreign key definition for '%s': Key reference and table reference don't match", label)
	}
	if fk.OnDelete == "SET DEFAULT" || fk.OnUpdate == "SET DEFAULT" {
		// InnoDB has no SET DEFAULT action.
		return nil, errno.New(errno.ErCannotAddForeign, "Cannot add foreign key constraint")
	}
	var cols []*catalog.ColumnInfo
	for _, k := range c.Keys {
		if k.Column == nil {
			return nil, errno.New(errno.ErNotSupportedYet, "expression indexes are not supported yet")
		}
		col := t.FindColumn(k.Column.Name.O)
		if col == nil {
			return nil, errno.New(1072, "Key column '%s' doesn't exist in table", k.Column.Name.O)
		}
		if (fk.OnDelete == "SET NULL" || fk.OnUpdate == "SET NULL") && col.Type.NotNull() {
			return nil, errno.New(errno.ErFKColumnNotNull, "Column '%s' cannot be NOT NULL: needed in a foreign key constraint '%s' SET NULL", col.Name, name)
		}
		fk.Cols = append(fk.Cols, col.Name)
		cols = append(cols, col)
	}
	for _, k := range ref.IndexPartSpecifications {
		if k.Column == nil {
			return nil, errno.New(errno.ErNotSupportedYet, "expression indexes are not supported yet")
		}
		fk.RefCols = append(fk.RefCols, k.Column.Name.O)
	}
	var parent *catalog.TableInfo
	if fk.Refers(dbName, t.Name) {
		parent = t
	} else if p := is.Table(fk.RefSchema, fk.RefTable); p != nil && p.View == nil {
		parent = p
		fk.RefTable = p.Name
	}
	if parent == nil {
		if checks {
			return nil, errno.New(errno.ErFKCannotOpenParent, "Failed to open the referenced table '%s'", fk.RefTable)
		}
		return fk, nil
	}
	for i, rc := range fk.RefCols {
		pc := parent.FindColumn(rc)
		if pc == nil {
			return nil, errno.New(errno.ErFKNoColumnParent, "Failed to add the foreign key constraint. Missing column '%s' for constraint '%s' in the referenced table '%s'", rc, name, parent.Name)
		}
		fk.RefCols[i] = pc.Name
		if !fkCompatible(cols[i].Type, pc.Type) {
			return nil, errno.New(errno.ErFKIncompatibleColumns, "Referencing column '%s' and referenced column '%s' in foreign key constraint '%s' are incompatible.", cols[i].Name, pc.Name, name)
		}
	}
	if table.FKIndex(parent, fk.RefCols) == nil {
		return nil, errno.New(errno.ErFKNoIndexParent, "Failed to add the foreign key constraint. Missing index for constraint '%s' in the referenced table '%s'", name, parent.Name)
	}
	return fk, nil
}

// fkCompatible is InnoDB's rule for the two columns of a foreign key:
// integers of the same size and sign, strings of one kind (CHAR and
// VARCHAR mix) in the same collation, decimals of the same precision and
// scale, otherwise the same type.
func fkCompatible(a, b types.FieldType) bool {
	isChar := func(tp byte) bool {
		return tp == mysql.TypeString || tp == mysql.TypeVarchar || tp == mysql.TypeVarString
	}
	switch {
	case a.IsInteger() || b.IsInteger():
		return a.Tp == b.Tp && a.Unsigned() == b.Unsigned()
	case isChar(a.Tp) || isChar(b.Tp):
		return isChar(a.Tp) && isChar(b.Tp) && strings.EqualFold(a.Charset, b.Charset) && strings.EqualFold(a.Collate, b.Collate)
	case a.Tp == mysql.TypeNewDecimal:
		return b.Tp == mysql.TypeNewDecimal && a.Flen == b.Flen && a.Decimal == b.Decimal
	}
	return a.Tp == b.Tp
}

// fkName is the name MySQL generates for the next unnamed constraint of
// table t: t_ibfk_N, N one past the highest such name t has.
func fkName(t *catalog.TableInfo) string {
	prefix := strings.ToLower(t.Name) + "_ibfk_"
	n := 0
	for _, fk := range t.ForeignKeys {
		if l := strings.ToLower(fk.Name); strings.HasPrefix(l, prefix) {
			if v, err := strconv.Atoi(l[len(prefix):]); err == nil && v > n {
				n = v
			}
		}
	}
	return fmt.Sprintf("%s_ibfk_%d", t.Name, n+1)
}

// checkFKName refuses a constraint name that another constraint of the
// database has: MySQL's names are unique per database.
func checkFKName(is *catalog.InfoSchema, dbName string, t *catalog.TableInfo, name string) error {
	dup := t.FindFK(name) != nil
	for _, o := range is.Tables(dbName) {
		if o.ID != t.ID && o.FindFK(name) != nil {
			dup = true
		}
	}
	if dup {
		return errno.New(errno.ErFKDupName, "Duplicate foreign key constraint name '%s'", name)
	}
	return nil
}

// addFKs adds the FOREIGN KEY clauses cs of CREATE TABLE to t (not yet in
// is), and the indexes they need.
func addFKs(is *catalog.InfoSchema, dbName string, t *catalog.TableInfo, cs []*ast.Constraint, checks bool) error {
	for _, c := range cs {
		name := c.Name
		if name == "" {
			name = fkName(t)
		}
		if err := checkFKName(is, dbName, t, name); err != nil {
			return err
		}
		fk, err := buildFK(is, dbName, t, c, name, checks)
		if err != nil {
			return err
		}
		t.MaxFKID++
		fk.ID = t.MaxFKID
		t.ForeignKeys = append(t.ForeignKeys, fk)
		if table.FKIndex(t, fk.Cols) == nil {
			ix := &catalog.IndexInfo{Name: c.Name}
			if err := fillIndexColumns(t, ix, c.Keys); err != nil {
				return err
			}
			if ix.Name == "" || t.FindIndex(ix.Name) != nil {
				ix.Name = uniqueIndexName(t, ix.Columns[0].Name)
			}
			t.Indexes = append(t.Indexes, ix)
		}
	}
	return nil
}

// addForeignKey runs ALTER TABLE ADD FOREIGN KEY: the index first if the
// child needs one (an online index build), then the constraint, which
// from then on every writer checks; then, with foreign_key_checks on, the
// rows already there, once the transactions that predate the constraint
// have ended. Rows that break it take the constraint (and the index made
// for it) back. The rows checked count as the ALTER's rows, as MySQL's
// copying ALTER reports them.
func (d *DDL) addForeignKey(ctx context.Context, tableID int64, c *ast.Constraint, res *AlterResult) error {
	checks := fkChecks(ctx)
	is := d.Catalog.InfoSchema()
	t := is.TableByID(tableID)
	db := is.DBByID(t.DBID)
	name := c.Name
	if name == "" {
		name = fkName(t)
	}
	if err := checkFKName(is, db.Name, t, name); err != nil {
		return err
	}
	if _, err := buildFK(is, db.Name, t, c, name, checks); err != nil {
		return err
	}
	var madeIndex int64
	if table.FKIndex(t, fkCols(c)) == nil {
		ixName := c.Name
		if ixName != "" && t.FindIndex(ixName) != nil {
			ixName = ""
		}
		id, err := d.createIndexLocked(ctx, tableID, ixName, false, c.Keys, false)
		if err != nil {
			return err
		}
		madeIndex = id
	}
	var fkID int64
	err := d.change(ctx, tableID, func(nt *catalog.TableInfo) error {
		is := d.Catalog.InfoSchema()
		fk, err := buildFK(is, db.Name, nt, c, name, checks)
		if err != nil {
			return err
		}
		nt.MaxFKID++
		fk.ID, fkID = nt.MaxFKID, nt.MaxFKID
		nt.ForeignKeys = append(nt.ForeignKeys, fk)
		return nil
	})
	if err == nil && checks {
		var n uint64
		n, err = d.checkFKRows(ctx, db.Name, tableID, fkID)
		res.Rows += n
		if err != nil {
			res.Rows = 0
			err = d.undoFK(ctx, tableID, fkID, err)
		}
	}
	if err != nil && madeIndex != 0 {
		t := d.Catalog.InfoSchema().TableByID(tableID)
		if ix := findIndexByID(t, madeIndex); ix != nil {
			if derr := d.dropIndexLocked(context.WithoutCancel(ctx), t, ix); derr != nil {
				return fmt.Errorf("%w (and dropping the index made for it failed: %v)", err, derr)
			}
		}
	}
	return err
}

func fkCols(c *ast.Constraint) []string {
	var out []string
	for _, k := range c.Keys {
		if k.Column != nil {
			out = append(out, k.Column.Name.O)
		}
	}
	return out
}

func (d *DDL) undoFK(ctx context.Context, tableID, fkID int64, cause error) error {
	err := d.publish(context.WithoutCancel(ctx), tableID, func(t *catalog.TableInfo) error {
		for i, fk := range t.ForeignKeys {
			if fk.ID == fkID {
				t.ForeignKeys = append(t.ForeignKeys[:i:i], t.ForeignKeys[i+1:]...)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%w (and taking the constraint back failed: %v)", cause, err)
	}
	return cause
}

// checkFKRows fails with 1452 if a row of the child table has values
// (none NULL) that no parent row has.
func (d *DDL) checkFKRows(ctx context.Context, dbName string, tableID, fkID int64) (uint64, error) {
	is := d.Catalog.InfoSchema()
	t := is.TableByID(tableID)
	var fk *catalog.FKInfo
	for _, f := range t.ForeignKeys {
		if f.ID == fkID {
			fk = f
		}
	}
	parent := is.Table(fk.RefSchema, fk.RefTable)
	if parent == nil {
		return 0, nil
	}
	lookup := table.FKLookup{T: parent, Ix: table.FKIndex(parent, fk.RefCols)}
	txn, err := d.Store.Begin(kv.TxnOptions{Mode: kv.Optimistic})
	if err != nil {
		return 0, err
	}
	defer txn.Rollback()
	// Timestamps are compared in UTC on both sides: decode without a zone.
	dec := table.NewDecoder(t, nil, nil)
	start, end := tablecodec.RowPrefix(t.ID), kv.PrefixEnd(tablecodec.RowPrefix(t.ID))
	it, err := txn.Iter(start, end)
	if err != nil {
		return 0, err
	}
	defer it.Close()
	var n uint64
	row := make([]types.Datum, len(t.Columns)+1)
	vals := make([]types.Datum, len(fk.Cols))
	for it.Valid() {
		_, h, err := tablecodec.DecodeRowKey(it.Key(), t.CommonHandle)
		if err != nil {
			return 0, err
		}
		if err := dec.Decode(h, it.Value(), row); err != nil {
			return 0, err
		}
		null := false
		for i, c := range fk.Cols {
			vals[i] = row[t.FindColumn(c).Offset]
			null = null || vals[i].IsNull()
		}
		if !null {
			hs, err := lookup.Handles(ctx, txn, vals, 1)
			if err != nil {
				return 0, err
			}
			if len(hs) == 0 {
				return 0, errno.New(errno.ErNoReferencedRow2, "Cannot add or update a child row: a foreign key constraint fails (%s, %s)",
					"`"+dbName+"`.`"+t.Name+"`", fk.Clause(dbName))
			}
		}
		n++
		if err := it.Next(); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// dropForeignKey runs ALTER TABLE DROP FOREIGN KEY; the index stays, as
// in MySQL.
func (d *DDL) dropForeignKey(ctx context.Context, tableID int64, name string, ifExists bool) error {
	err := d.publish(ctx, tableID, func(t *catalog.TableInfo) error {
		for i, fk := range t.ForeignKeys {
			if strings.EqualFold(fk.Name, name) {
				t.ForeignKeys = append(t.ForeignKeys[:i:i], t.ForeignKeys[i+1:]...)
				return nil
			}
		}
		if ifExists {
			return errSkip
		}
		return errno.New(errno.ErCantDropFieldOrKey, "Can't DROP '%s'; check that column/key exists", name)
	})
	if err == errSkip {
		return nil
	}
	return err
}

// checkDropIndexFK refuses to drop index ix of t (in dbName) when a
// foreign key needs it, as the child's or the parent's index, and no
// other index serves it.
func checkDropIndexFK(is *catalog.InfoSchema, dbName string, t *catalog.TableInfo, ix *catalog.IndexInfo) error {
	without := *t
	without.Indexes = nil
	for _, o := range t.Indexes {
		if o.ID != ix.ID {
			without.Indexes = append(without.Indexes, o)
		}
	}
	needs := func(cols []string) bool {
		return table.FKIndex(t, cols) != nil && table.FKIndex(&without, cols) == nil
	}
	for _, fk := range t.ForeignKeys {
		if needs(fk.Cols) {
			return errno.New(errno.ErDropIndexFK, "Cannot drop index '%s': needed in a foreign key constraint", ix.Name)
		}
	}
	for _, r := range is.ReferredBy(dbName, t.Name) {
		if needs(r.FK.RefCols) {
			return errno.New(errno.ErDropIndexFK, "Cannot drop index '%s': needed in a foreign key constraint", ix.Name)
		}
	}
	return nil
}

// checkDropParent refuses to drop table t of dbName while a table outside
// dropping (ids) refers to it.
func checkDropParent(is *catalog.InfoSchema, dbName string, t *catalog.TableInfo, dropping map[int64]bool) error {
	for _, r := range is.ReferredBy(dbName, t.Name) {
		if r.Child.ID != t.ID && !dropping[r.Child.ID] {
			return errno.New(errno.ErFKCannotDropParent, "Cannot drop table '%s' referenced by a foreign key constraint '%s' on table '%s'.",
				t.Name, r.FK.Name, r.Child.Name)
		}
	}
	return nil
}

// renameParent points the constraints that refer to table oldDB.oldName
// at newDB.newName, in the schema being changed: nt is the renamed table
// (whose own self-references change too).
func renameParent(m *catalog.Meta, is *catalog.InfoSchema, refs []catalog.ReferredFK, nt *catalog.TableInfo, newDB string) error {
	changed := map[int64]*catalog.TableInfo{}
	for _, r := range refs {
		c := changed[r.Child.ID]
		if c == nil {
			if r.Child.ID == nt.ID {
				c = nt
			} else {
				c = r.Child.Clone()
			}
			changed[r.Child.ID] = c
		}
		if fk := c.FindFK(r.FK.Name); fk != nil {
			fk.RefSchema, fk.RefTable = newDB, nt.Name
		}
	}
	for id, c := range changed {
		if id == nt.ID {
			continue
		}
		is.PutTable(is.DBByID(c.DBID), c)
		if err := m.PutTable(c); err != nil {
			return err
		}
	}
	return nil
}

// checkDropFKColumn refuses to drop column name of t while a constraint
// uses it, on t's side or as its parent's column.
func checkDropFKColumn(is *catalog.InfoSchema, dbName string, t *catalog.TableInfo, name string) error {
	has := func(cols []string) bool {
		for _, c := range cols {
			if strings.EqualFold(c, name) {
				return true
			}
		}
		return false
	}
	for _, fk := range t.ForeignKeys {
		if has(fk.Cols) {
			return errno.New(errno.ErFKColumnCannotDrop, "Cannot drop column '%s': needed in a foreign key constraint '%s'", name, fk.Name)
		}
	}
	for _, r := range is.ReferredBy(dbName, t.Name) {
		if has(r.FK.RefCols) {
			return errno.New(errno.ErFKColumnCannotDropChild, "Cannot drop column '%s': needed in a foreign key constraint '%s' of table '%s'", name, r.FK.Name, r.Child.Name)
		}
	}
	return nil
}

// checkFKTypes refuses a MODIFY or CHANGE COLUMN that leaves column col
// of vt (table name of dbName, as the ALTER will leave it) with a type
// that a constraint on either side of it no longer accepts (3780).
func checkFKTypes(is *catalog.InfoSchema, dbName, name string, vt *catalog.TableInfo, col string) error {
	c := vt.FindColumn(col)
	if c == nil {
		return nil
	}
	ft := c.Type
	if ft.IsString() && ft.Collate == "" {
		// The column takes the table's collation (applied later).
		ft.Charset, ft.Collate = vt.Charset, vt.Collate
	}
	for _, fk := range vt.ForeignKeys {
		for i, fc := range fk.Cols {
			if !strings.EqualFold(fc, col) {
				continue
			}
			parent := is.Table(fk.RefSchema, fk.RefTable)
			if fk.Refers(dbName, name) {
				parent = vt
			}
			if parent == nil {
				continue
			}
			if pc := parent.FindColumn(fk.RefCols[i]); pc != nil && !fkCompatible(ft, pc.Type) {
				return errno.New(errno.ErFKIncompatibleColumns, "Referencing column '%s' and referenced column '%s' in foreign key constraint '%s' are incompatible.", c.Name, pc.Name, fk.Name)
			}
		}
	}
	for _, r := range is.ReferredBy(dbName, name) {
		if r.Child.ID == vt.ID {
			continue // checked above, against vt itself
		}
		for i, rc := range r.FK.RefCols {
			if !strings.EqualFold(rc, col) {
				continue
			}
			if cc := r.Child.FindColumn(r.FK.Cols[i]); cc != nil && !fkCompatible(cc.Type, ft) {
				return errno.New(errno.ErFKIncompatibleColumns, "Referencing column '%s' and referenced column '%s' in foreign key constraint '%s' are incompatible.", cc.Name, c.Name, r.FK.Name)
			}
		}
	}
	return nil
}

// renameRefCols renames column from of table dbName.name to to in the
// constraints of other tables that refer to it, after a CHANGE COLUMN
// renamed it (a version of its own: the column change may take several).
func (d *DDL) renameRefCols(ctx context.Context, dbName, name, from, to string) error {
	refers := false
	for _, r := range d.Catalog.InfoSchema().ReferredBy(dbName, name) {
		for _, c := range r.FK.RefCols {
			refers = refers || strings.EqualFold(c, from)
		}
	}
	if from == to || !refers {
		return nil // no version for nothing to change
	}
	return d.Catalog.RunDDLLocked(ctx, func(m *catalog.Meta, is *catalog.InfoSchema) error {
		for _, r := range is.ReferredBy(dbName, name) {
			child := is.TableByID(r.Child.ID).Clone()
			fk := child.FindFK(r.FK.Name)
			if fk == nil {
				continue
			}
			changed := false
			for i := range fk.RefCols {
				if strings.EqualFold(fk.RefCols[i], from) {
					fk.RefCols[i], changed = to, true
				}
			}
			if !changed {
				continue
			}
			is.PutTable(is.DBByID(child.DBID), child)
			if err := m.PutTable(child); err != nil {
				return err
			}
		}
		return nil
	})
}
