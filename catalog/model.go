// Package catalog describes databases, tables, columns and indexes, stores
// those descriptions in the KV store itself, and hands every session an
// immutable snapshot of them (an InfoSchema) at one schema version.
package catalog

import (
	"strings"

	"github.com/basalt-db/basalt/types"
)

// SchemaState is the state of a schema object during an online change
// (F1's protocol): a new index is written before it is read, and an old one
// stops being read before it stops being written.
type SchemaState uint8

const (
	// StatePublic objects are read and written.
	StatePublic SchemaState = iota
	// StateWriteOnly objects are written by DML but not read.
	StateWriteOnly
	// StateDeleteOnly objects only have entries deleted.
	StateDeleteOnly
)

// String names a state as TiDB's ADMIN SHOW DDL does.
func (s SchemaState) String() string {
	switch s {
	case StatePublic:
		return "public"
	case StateWriteOnly:
		return "write only"
	case StateDeleteOnly:
		return "delete only"
	}
	return "none"
}

// DBInfo describes a database.
type DBInfo struct {
	ID      int64  `json:"id"`
	Name    string `json:"name"`
	Charset string `json:"charset"`
	Collate string `json:"collate"`
}

// ColumnInfo describes a column.
type ColumnInfo struct {
	ID     int64           `json:"id"`
	Name   string          `json:"name"`
	Offset int             `json:"offset"`
	Type   types.FieldType `json:"type"`
	// Default is the default value's text; DefaultNull says the default is
	// NULL; HasDefault is false when the column has no DEFAULT clause.
	HasDefault  bool   `json:"has_default"`
	Default     string `json:"default,omitempty"`
	DefaultNull bool   `json:"default_null,omitempty"`
	// DefaultNow: DEFAULT CURRENT_TIMESTAMP; OnUpdateNow: ON UPDATE CURRENT_TIMESTAMP.
	DefaultNow    bool        `json:"default_now,omitempty"`
	OnUpdateNow   bool        `json:"on_update_now,omitempty"`
	AutoIncrement bool        `json:"auto_increment,omitempty"`
	Comment       string      `json:"comment,omitempty"`
	State         SchemaState `json:"state"`
	// OriginDefault is the value, as text, of this column in rows written
	// before it was added (ADD COLUMN does not rewrite rows); nil means
	// NULL. Rows written since hold the column, a NULL as an explicit
	// marker when OriginDefault is set (tablecodec/row.go).
	OriginDefault *string `json:"origin_default,omitempty"`
	// ChangeFrom, on a hidden column, names the column (by id) whose
	// values it holds converted to its own type: a MODIFY COLUMN that
	// rewrites values is in progress (ddl/modify.go). Writers derive it
	// from that column, never from its default or from what the row held.
	// ChangeMode is the ALTER's sql_mode (expression.SQLMode): in a strict
	// mode a value that does not fit fails the conversion, as a strict
	// INSERT would; otherwise it is clipped as a non-strict one does.
	ChangeFrom int64  `json:"change_from,omitempty"`
	ChangeMode uint32 `json:"change_mode,omitempty"`
}

// ChangingPrefix starts the names of the hidden columns of a MODIFY
// COLUMN in progress: the changing one is ChangingPrefix and the name it
// will have.
const ChangingPrefix = "_Col$_"

// IndexColumn is one column of an index.
type IndexColumn struct {
	Name string `json:"name"`
	// Offset is into TableInfo.Columns, or for an index being built on a
	// hidden column (only ever one that is not public), past them:
	// len(Columns)+i names Hidden[i].
	Offset int `json:"offset"`
	Length int `json:"length"` // prefix length, or -1 for the whole value
}

// IndexInfo describes an index.
type IndexInfo struct {
	ID      int64         `json:"id"`
	Name    string        `json:"name"`
	Columns []IndexColumn `json:"columns"`
	Unique  bool          `json:"unique"`
	Primary bool          `json:"primary"`
	State   SchemaState   `json:"state"`
	Comment string        `json:"comment,omitempty"`
}

// TableInfo describes a table.
type TableInfo struct {
	ID      int64         `json:"id"`
	Name    string        `json:"name"`
	DBID    int64         `json:"db_id"`
	Columns []*ColumnInfo `json:"columns"`
	Indexes []*IndexInfo  `json:"indexes"`
	// Hidden are columns in the middle of an online ADD or DROP COLUMN:
	// no statement reads them; writers give write-only ones a value (a new
	// row its default, an updated row the value it had) and leave
	// delete-only ones out. Hidden[i] has Offset len(Columns)+i (see
	// IndexColumn.Offset).
	Hidden []*ColumnInfo `json:"hidden_columns,omitempty"`
	// PKIsHandle says the primary key is one integer column whose value is
	// the row's handle. CommonHandle says the primary key is clustered on
	// other columns: its encoded values are the handle. Without either, rows
	// get a hidden auto-incremented handle.
	PKIsHandle   bool   `json:"pk_is_handle"`
	CommonHandle bool   `json:"common_handle"`
	Charset      string `json:"charset"`
	Collate      string `json:"collate"`
	Comment      string `json:"comment,omitempty"`
	MaxColumnID  int64  `json:"max_column_id"`
	MaxIndexID   int64  `json:"max_index_id"`
	// AutoIncOffset is the first AUTO_INCREMENT value (table option).
	AutoIncStart int64 `json:"auto_inc_start,omitempty"`
	// AutoIDCache is TiDB's AUTO_ID_CACHE table option: 1 makes every
	// auto-increment value come from the stored counter itself, so that
	// the values of all SQL nodes are consecutive, as MySQL's; other
	// values (0 = the default) let each node reserve a batch.
	AutoIDCache int64 `json:"auto_id_cache,omitempty"`
	// View, if set, makes this a view: it has no rows of its own, and
	// Columns describe its query's result.
	View *ViewInfo `json:"view,omitempty"`
	// Triggers are the table's row triggers in the order they fire
	// (within one timing and event): creation order unless FOLLOWS or
	// PRECEDES placed one. They live and die with the table.
	Triggers []*TriggerInfo `json:"triggers,omitempty"`
	// ForeignKeys are the table's FOREIGN KEY constraints, the table
	// being their child (foreignkey.go).
	ForeignKeys []*FKInfo `json:"foreign_keys,omitempty"`
	MaxFKID     int64     `json:"max_fk_id,omitempty"`
	// Revision is the schema version that last changed this record (set
	// by Meta.PutTable): a transaction that started under an older version
	// and writes the table must fail its commit if it cannot tell that no
	// node has moved two versions past it (schemasync).
	Revision int64 `json:"revision,omitempty"`
}

// ViewInfo is a view's definition: its query's text (resolved in the
// view's database) and the names of its columns.
type ViewInfo struct {
	Select string   `json:"select"`
	Cols   []string `json:"cols"`
	// Definer is 'user@host', as SHOW CREATE VIEW shows it; empty for
	// views made before it was kept.
	Definer string `json:"definer,omitempty"`
}

// FindColumn returns the column named name (case-insensitively), or nil.
func (t *TableInfo) FindColumn(name string) *ColumnInfo {
	for _, c := range t.Columns {
		if strings.EqualFold(c.Name, name) {
			return c
		}
	}
	return nil
}

// FindIndex returns the index named name (case-insensitively), or nil.
func (t *TableInfo) FindIndex(name string) *IndexInfo {
	for _, ix := range t.Indexes {
		if strings.EqualFold(ix.Name, name) {
			return ix
		}
	}
	return nil
}

// PrimaryKey returns the primary key index, or nil.
func (t *TableInfo) PrimaryKey() *IndexInfo {
	for _, ix := range t.Indexes {
		if ix.Primary {
			return ix
		}
	}
	return nil
}

// HandleColumn returns the integer primary key column of a PKIsHandle
// table, or nil.
func (t *TableInfo) HandleColumn() *ColumnInfo {
	if !t.PKIsHandle {
		return nil
	}
	return t.Columns[t.PrimaryKey().Columns[0].Offset]
}

// AutoIncColumn returns the AUTO_INCREMENT column, or nil.
func (t *TableInfo) AutoIncColumn() *ColumnInfo {
	for _, c := range t.Columns {
		if c.AutoIncrement {
			return c
		}
	}
	return nil
}

// ColumnIDs returns the ids of the table's columns, in order.
func (t *TableInfo) ColumnIDs() []int64 {
	ids := make([]int64, len(t.Columns))
	for i, c := range t.Columns {
		ids[i] = c.ID
	}
	return ids
}

// WriteOnlyColumns returns the hidden columns that writers must fill.
func (t *TableInfo) WriteOnlyColumns() []*ColumnInfo {
	var out []*ColumnInfo
	for _, c := range t.Hidden {
		if c.State == StateWriteOnly {
			out = append(out, c)
		}
	}
	return out
}

// FixOffsets renumbers the columns' offsets after columns were added,
// dropped or moved (hidden ones after the others), and points index
// columns at them by name.
func (t *TableInfo) FixOffsets() {
	for i, c := range t.Columns {
		c.Offset = i
	}
	for i, c := range t.Hidden {
		c.Offset = len(t.Columns) + i
	}
	for _, ix := range t.Indexes {
		for i := range ix.Columns {
			c := t.FindColumn(ix.Columns[i].Name)
			if c == nil {
				c = t.FindHidden(ix.Columns[i].Name)
			}
			if c != nil {
				ix.Columns[i].Offset = c.Offset
			}
		}
	}
}

// FindHidden returns the hidden column named name, or nil.
func (t *TableInfo) FindHidden(name string) *ColumnInfo {
	for _, c := range t.Hidden {
		if strings.EqualFold(c.Name, name) {
			return c
		}
	}
	return nil
}

// WritableIndexes returns the indexes DML must maintain (public and
// write-only), except a clustered primary key, which is the row key.
func (t *TableInfo) WritableIndexes() []*IndexInfo {
	var out []*IndexInfo
	for _, ix := range t.Indexes {
		if ix.Primary && (t.PKIsHandle || t.CommonHandle) {
			continue
		}
		if ix.State == StatePublic || ix.State == StateWriteOnly {
			out = append(out, ix)
		}
	}
	return out
}

// MaintainedIndexes returns the indexes whose entries DML touches: the
// writable ones and the delete-only ones, whose entries are deleted with
// their rows but never added (see IndexInfo.State).
func (t *TableInfo) MaintainedIndexes() []*IndexInfo {
	var out []*IndexInfo
	for _, ix := range t.Indexes {
		if ix.Primary && (t.PKIsHandle || t.CommonHandle) {
			continue
		}
		if ix.State == StatePublic || ix.State == StateWriteOnly || ix.State == StateDeleteOnly {
			out = append(out, ix)
		}
	}
	return out
}

// Clone returns a deep copy, for DDL to modify.
func (t *TableInfo) Clone() *TableInfo {
	c := *t
	c.Columns = make([]*ColumnInfo, len(t.Columns))
	for i, col := range t.Columns {
		cc := *col
		cc.Type.Elems = append([]string(nil), col.Type.Elems...)
		c.Columns[i] = &cc
	}
	c.Hidden = nil
	for _, col := range t.Hidden {
		cc := *col
		cc.Type.Elems = append([]string(nil), col.Type.Elems...)
		c.Hidden = append(c.Hidden, &cc)
	}
	c.Indexes = make([]*IndexInfo, len(t.Indexes))
	for i, ix := range t.Indexes {
		ic := *ix
		ic.Columns = append([]IndexColumn(nil), ix.Columns...)
		c.Indexes[i] = &ic
	}
	c.Triggers = append([]*TriggerInfo(nil), t.Triggers...) // immutable once stored
	c.ForeignKeys = nil
	for _, fk := range t.ForeignKeys {
		f := *fk
		f.Cols = append([]string(nil), fk.Cols...)
		f.RefCols = append([]string(nil), fk.RefCols...)
		c.ForeignKeys = append(c.ForeignKeys, &f)
	}
	return &c
}
