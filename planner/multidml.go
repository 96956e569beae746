package planner

import (
	"strings"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/errno"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// Multi-table UPDATE and DELETE read the rows of a FROM clause with joins
// (locking what they read, as the single-table forms do) and change the
// rows of some of its tables. Each target table's row sits in the join
// layout at Off: its columns, then its handle (NULL where an outer join
// found no row).

// MultiTarget is one table a multi-table UPDATE or DELETE changes.
type MultiTarget struct {
	DB    string
	Table *catalog.TableInfo
	Off   int
	// Set are an UPDATE's assignments to this table: Col is a column of
	// the table, Expr reads the join layout.
	Set []Assignment
}

// MultiUpdate is a planned multi-table UPDATE.
type MultiUpdate struct {
	Source  Plan
	Targets []*MultiTarget
	Ignore  bool // UPDATE IGNORE, as Update.Ignore
}

// MultiDelete is a planned multi-table DELETE.
type MultiDelete struct {
	Source  Plan
	Targets []*MultiTarget
	Ignore  bool // DELETE IGNORE, as Delete.Ignore
}

// IsMultiUpdate reports an UPDATE of more than one table reference.
func IsMultiUpdate(s *ast.UpdateStmt) bool {
	return s.TableRefs != nil && s.TableRefs.TableRefs != nil && s.TableRefs.TableRefs.Right != nil
}

func (c *Context) multiSource(refs *ast.TableRefsClause, where ast.ExprNode) (Plan, []*fromLeaf, error) {
	sel := &ast.SelectStmt{From: refs, Where: where}
	p, _, leaves, err := c.buildFromLeaves(sel, true)
	return p, leaves, err
}

// leafTarget returns the target of the leaf holding join position pos,
// adding it to targets; what names the table in errors.
func leafTarget(leaves []*fromLeaf, pos int, targets *[]*MultiTarget, stmt string) (*MultiTarget, error) {
	for _, l := range leaves {
		if pos < l.off || pos >= l.off+l.n {
			continue
		}
		if l.ts == nil {
			name := ""
			if len(l.schema.Cols) > 0 {
				name = l.schema.Cols[0].Table
			}
			return nil, errno.New(1288, "The target table %s of the %s is not updatable", name, stmt)
		}
		for _, t := range *targets {
			if t.Off == l.off {
				return t, nil
			}
		}
		t := &MultiTarget{DB: l.ts.DB, Table: l.ts.Table, Off: l.off}
		*targets = append(*targets, t)
		return t, nil
	}
	return nil, errno.New(errno.ErBadField, "Unknown column in 'field list'")
}

// BuildMultiUpdate plans UPDATE t1 JOIN t2 ... SET ... WHERE ....
func BuildMultiUpdate(c *Context, s *ast.UpdateStmt) (*MultiUpdate, error) {
	if s.Order != nil {
		return nil, errno.New(errno.ErWrongUsage, "Incorrect usage of UPDATE and ORDER BY")
	}
	if s.Limit != nil {
		return nil, errno.New(errno.ErWrongUsage, "Incorrect usage of UPDATE and LIMIT")
	}
	src, leaves, err := c.multiSource(s.TableRefs, s.Where)
	if err != nil {
		return nil, err
	}
	p := &MultiUpdate{Source: src, Ignore: s.IgnoreErr}
	eb := c.builder(src.Schema(), "field list")
	for _, a := range s.List {
		cn := a.Column
		pos, err := src.Schema().Find(cn.Schema.O, cn.Table.O, cn.Name.O, "field list")
		if err != nil {
			return nil, err
		}
		t, err := leafTarget(leaves, pos, &p.Targets, "UPDATE")
		if err != nil {
			return nil, err
		}
		e, err := eb.Build(a.Expr)
		if err != nil {
			return nil, err
		}
		t.Set = append(t.Set, Assignment{Col: pos - t.Off, Expr: e})
	}
	return p, nil
}

// BuildMultiDelete plans DELETE t1[, t2] FROM ... and DELETE FROM t1[, t2]
// USING ....
func BuildMultiDelete(c *Context, s *ast.DeleteStmt) (*MultiDelete, error) {
	if s.Order != nil {
		return nil, errno.New(errno.ErWrongUsage, "Incorrect usage of DELETE and ORDER BY")
	}
	if s.Limit != nil {
		return nil, errno.New(errno.ErWrongUsage, "Incorrect usage of DELETE and LIMIT")
	}
	src, leaves, err := c.multiSource(s.TableRefs, s.Where)
	if err != nil {
		return nil, err
	}
	p := &MultiDelete{Source: src, Ignore: s.IgnoreErr}
	for _, tn := range s.Tables.Tables {
		name := tn.Name.O
		var match *fromLeaf
		for _, l := range leaves {
			if len(l.schema.Cols) == 0 || !strings.EqualFold(l.schema.Cols[0].Table, name) {
				continue
			}
			if tn.Schema.O != "" && !strings.EqualFold(l.schema.Cols[0].DB, tn.Schema.O) {
				continue
			}
			match = l
		}
		if match == nil {
			return nil, errno.New(1109, "Unknown table '%s' in MULTI DELETE", name)
		}
		if _, err := leafTarget(leaves, match.off, &p.Targets, "DELETE"); err != nil {
			return nil, err
		}
	}
	return p, nil
}
