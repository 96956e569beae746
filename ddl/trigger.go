package ddl

import (
	"context"
	"strings"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/errno"
)

// TriggerTarget names a new trigger and the table it is for.
type TriggerTarget struct {
	DB          string // the trigger's and the table's database
	Table       string
	IfNotExists bool
	// Order is "FOLLOWS" or "PRECEDES" Other, or "" to fire after the
	// table's triggers of the same timing and event.
	Order, Other string
}

// CreateTrigger stores tr with its table. With IfNotExists a trigger of
// the same name is left as it is and the returned note (1359) is for the
// caller to show as a warning.
func (d *DDL) CreateTrigger(ctx context.Context, target TriggerTarget, tr *catalog.TriggerInfo) (note error, err error) {
	err = d.Catalog.RunDDL(ctx, func(m *catalog.Meta, is *catalog.InfoSchema) error {
		db := is.DB(target.DB)
		t, err := TriggerTable(is, target.DB, target.Table)
		if err != nil {
			return err
		}
		if _, old := is.FindTrigger(target.DB, tr.Name); old != nil {
			e := errno.New(errno.ErTrgAlreadyExists, "Trigger already exists")
			if target.IfNotExists {
				e.Note, note = true, e
				return nil
			}
			return e
		}
		at := len(t.Triggers)
		if target.Order != "" {
			at = -1
			for i, o := range t.Triggers {
				if strings.EqualFold(o.Name, target.Other) && o.Fires(tr.Timing, tr.Event) {
					at = i
					if target.Order == "FOLLOWS" {
						at++
					}
				}
			}
			if at < 0 {
				return errno.New(errno.ErReferencedTrgDoesNotExist,
					"Referenced trigger '%s' for the given action time and event type does not exist.", target.Other)
			}
		}
		nt := t.Clone()
		nt.Triggers = append(nt.Triggers[:at:at], append([]*catalog.TriggerInfo{tr}, t.Triggers[at:]...)...)
		is.PutTable(db, nt)
		return m.PutTable(nt)
	})
	return note, err
}

// TriggerTable returns the base table db.name a trigger can be created
// on: 1146 if there is none, 1347 for a view.
func TriggerTable(is *catalog.InfoSchema, db, name string) (*catalog.TableInfo, error) {
	var t *catalog.TableInfo
	if is.DB(db) != nil {
		t = is.Table(db, name)
	}
	if t == nil {
		return nil, errno.New(errno.ErNoSuchTable, "Table '%s.%s' doesn't exist", db, name)
	}
	if t.View != nil {
		return nil, errno.New(errno.ErWrongObject, "'%s.%s' is not BASE TABLE", db, t.Name)
	}
	return t, nil
}

// DropTrigger removes trigger name of database db. With ifExists a
// missing trigger is not an error: the returned note (1360) is.
func (d *DDL) DropTrigger(ctx context.Context, db, name string, ifExists bool) (note error, err error) {
	err = d.Catalog.RunDDL(ctx, func(m *catalog.Meta, is *catalog.InfoSchema) error {
		t, tr := is.FindTrigger(db, name)
		if tr == nil {
			e := errno.New(errno.ErTrgDoesNotExist, "Trigger does not exist")
			if ifExists {
				e.Note, note = true, e
				return nil
			}
			return e
		}
		nt := t.Clone()
		nt.Triggers = nil
		for _, o := range t.Triggers {
			if o != tr {
				nt.Triggers = append(nt.Triggers, o)
			}
		}
		is.PutTable(is.DBByID(t.DBID), nt)
		return m.PutTable(nt)
	})
	return note, err
}
