package catalog

import (
	"sort"
	"strings"
)

// InfoSchema is an immutable snapshot of the catalog at one schema version.
// Sessions take the current one at the start of each statement; a DDL
// publishes a new one. Names are matched case-insensitively.
type InfoSchema struct {
	Version int64
	dbs     map[string]*DBInfo               // by lower-case name
	tables  map[string]map[string]*TableInfo // db lower name → table lower name → table
	byID    map[int64]*TableInfo
	refs    *referrers // foreign keys by parent (foreignkey.go)
}

func newInfoSchema(version int64) *InfoSchema {
	return &InfoSchema{Version: version, dbs: map[string]*DBInfo{}, tables: map[string]map[string]*TableInfo{}, byID: map[int64]*TableInfo{}, refs: &referrers{}}
}

func (is *InfoSchema) addDB(db *DBInfo) {
	l := strings.ToLower(db.Name)
	is.dbs[l] = db
	if is.tables[l] == nil {
		is.tables[l] = map[string]*TableInfo{}
	}
}

func (is *InfoSchema) addTable(db *DBInfo, t *TableInfo) {
	is.tables[strings.ToLower(db.Name)][strings.ToLower(t.Name)] = t
	is.byID[t.ID] = t
	is.resetRefs()
}

// clone copies the maps (not the records, which are immutable once published).
func (is *InfoSchema) clone(version int64) *InfoSchema {
	c := newInfoSchema(version)
	for l, db := range is.dbs {
		c.dbs[l] = db
		m := make(map[string]*TableInfo, len(is.tables[l]))
		for tl, t := range is.tables[l] {
			m[tl] = t
		}
		c.tables[l] = m
	}
	for id, t := range is.byID {
		c.byID[id] = t
	}
	return c
}

// DB returns the database named name, or nil.
func (is *InfoSchema) DB(name string) *DBInfo { return is.dbs[strings.ToLower(name)] }

// DBByID returns the database with id, or nil.
func (is *InfoSchema) DBByID(id int64) *DBInfo {
	for _, db := range is.dbs {
		if db.ID == id {
			return db
		}
	}
	return nil
}

// Table returns the table db.name, or nil.
func (is *InfoSchema) Table(db, name string) *TableInfo {
	return is.tables[strings.ToLower(db)][strings.ToLower(name)]
}

// TableByID returns the table with id, or nil.
func (is *InfoSchema) TableByID(id int64) *TableInfo { return is.byID[id] }

// DBs returns every database, sorted by name.
func (is *InfoSchema) DBs() []*DBInfo {
	out := make([]*DBInfo, 0, len(is.dbs))
	for _, db := range is.dbs {
		out = append(out, db)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Tables returns the tables of db, sorted by name.
func (is *InfoSchema) Tables(db string) []*TableInfo {
	m := is.tables[strings.ToLower(db)]
	out := make([]*TableInfo, 0, len(m))
	for _, t := range m {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
