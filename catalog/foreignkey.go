package catalog

import (
	"slices"
	"strings"
	"sync"
)

// FKInfo is a FOREIGN KEY constraint, kept on its child table (the one
// whose rows refer). The parent is named, not numbered, as in MySQL and
// TiDB: a constraint may name a table that does not exist yet (with
// foreign_key_checks off), and RENAME TABLE of the parent rewrites the
// children's records. Cols and RefCols pair up one to one.
type FKInfo struct {
	ID        int64    `json:"id"`
	Name      string   `json:"name"`
	Cols      []string `json:"cols"`
	RefSchema string   `json:"ref_schema"`
	RefTable  string   `json:"ref_table"`
	RefCols   []string `json:"ref_cols"`
	// OnDelete and OnUpdate are the actions as written: "" (none given,
	// which acts as RESTRICT), RESTRICT, NO ACTION, CASCADE or SET NULL.
	OnDelete string `json:"on_delete,omitempty"`
	OnUpdate string `json:"on_update,omitempty"`
}

// Rule is how information_schema names an action: RESTRICT when none was
// given.
func Rule(action string) string {
	if action == "" {
		return "RESTRICT"
	}
	return action
}

// FindFK returns the foreign key named name (case-insensitively), or nil.
func (t *TableInfo) FindFK(name string) *FKInfo {
	for _, fk := range t.ForeignKeys {
		if strings.EqualFold(fk.Name, name) {
			return fk
		}
	}
	return nil
}

// Refers reports whether fk's parent is table db.name.
func (fk *FKInfo) Refers(db, name string) bool {
	return strings.EqualFold(fk.RefSchema, db) && strings.EqualFold(fk.RefTable, name)
}

// ReferredFK is a foreign key seen from its parent: the child table and
// the constraint.
type ReferredFK struct {
	Child *TableInfo
	FK    *FKInfo
}

// referrers indexes, per parent table (db and name in lower case), the
// foreign keys that refer to it. It is built once per published
// InfoSchema, on first use; a schema being changed drops it at each
// change (resetRefs).
type referrers struct {
	once sync.Once
	m    map[[2]string][]ReferredFK
}

func (is *InfoSchema) resetRefs() { is.refs = &referrers{} }

// ReferredBy returns the foreign keys whose parent is table db.name, in
// the order InnoDB checks them when a parent row goes: by the parent's
// index each uses (the primary key first), then by name.
func (is *InfoSchema) ReferredBy(db, name string) []ReferredFK {
	m := is.referrerMap()
	if len(m) == 0 {
		return nil
	}
	return m[[2]string{strings.ToLower(db), strings.ToLower(name)}]
}

// HasForeignKeys reports whether any table of the schema has a foreign
// key: when none has, writers skip looking for a row's children.
func (is *InfoSchema) HasForeignKeys() bool { return len(is.referrerMap()) > 0 }

func (is *InfoSchema) referrerMap() map[[2]string][]ReferredFK {
	r := is.refs
	r.once.Do(func() {
		r.m = map[[2]string][]ReferredFK{}
		ids := make([]int64, 0, len(is.byID))
		for id, t := range is.byID {
			if len(t.ForeignKeys) > 0 {
				ids = append(ids, id)
			}
		}
		slices.Sort(ids)
		for _, id := range ids {
			t := is.byID[id]
			for _, fk := range t.ForeignKeys {
				k := [2]string{strings.ToLower(fk.RefSchema), strings.ToLower(fk.RefTable)}
				r.m[k] = append(r.m[k], ReferredFK{Child: t, FK: fk})
			}
		}
		for k, refs := range r.m {
			parent := is.tables[k[0]][k[1]]
			if parent == nil {
				continue
			}
			slices.SortStableFunc(refs, func(a, b ReferredFK) int {
				if d := indexRank(parent, a.FK.RefCols) - indexRank(parent, b.FK.RefCols); d != 0 {
					return d
				}
				return strings.Compare(strings.ToLower(a.FK.Name), strings.ToLower(b.FK.Name))
			})
		}
	})
	return r.m
}

// indexRank orders t's indexes as InnoDB keeps them, the clustered
// primary key first, and returns the rank of the first one whose leading
// columns are cols.
func indexRank(t *TableInfo, cols []string) int {
	for i, ix := range t.Indexes {
		if len(ix.Columns) < len(cols) {
			continue
		}
		ok := true
		for j, c := range cols {
			ok = ok && strings.EqualFold(ix.Columns[j].Name, c)
		}
		if ok {
			if ix.Primary {
				return 0
			}
			return i + 1
		}
	}
	return len(t.Indexes) + 1
}

// Clause is the constraint as SHOW CREATE TABLE prints it, and as the
// messages of errors 1451 and 1452 quote it: the parent's database is
// named when it is not db, the child's. Actions print as InnoDB prints
// them: RESTRICT, the default, not at all.
func (fk *FKInfo) Clause(db string) string {
	var b strings.Builder
	b.WriteString("CONSTRAINT " + quoteName(fk.Name) + " FOREIGN KEY (" + quoteNames(fk.Cols) + ") REFERENCES ")
	if !strings.EqualFold(fk.RefSchema, db) {
		b.WriteString(quoteName(fk.RefSchema) + ".")
	}
	b.WriteString(quoteName(fk.RefTable) + " (" + quoteNames(fk.RefCols) + ")")
	if fk.OnDelete != "" && fk.OnDelete != "RESTRICT" {
		b.WriteString(" ON DELETE " + fk.OnDelete)
	}
	if fk.OnUpdate != "" && fk.OnUpdate != "RESTRICT" {
		b.WriteString(" ON UPDATE " + fk.OnUpdate)
	}
	return b.String()
}

func quoteName(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

func quoteNames(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = quoteName(s)
	}
	return strings.Join(q, ", ")
}
