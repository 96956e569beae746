// Package planner turns parsed statements into physical plans: trees of
// the operators in operators.go, which the executor runs as they are (it
// builds one operator per node). There is no logical plan and no search
// over alternatives: each phase decides once, from the syntax, the
// catalog and the tables' statistics.
//
// The entry points, and what they return:
//
//	BuildQuery        SELECT, UNION/EXCEPT/INTERSECT  → *Query (plan + result fields)
//	BuildInsert       INSERT, REPLACE                 → *Insert
//	BuildUpdate       single-table UPDATE             → *Update (Source: the rows to change)
//	BuildDelete       single-table DELETE             → *Delete
//	BuildMultiUpdate  UPDATE over joins               → *MultiUpdate
//	BuildMultiDelete  DELETE over joins               → *MultiDelete
//
// A SELECT is planned in these phases, each in its own file:
//
//  1. FROM and WHERE (from.go): the FROM clause becomes a tree of tables,
//     derived tables, views and CTEs (cte.go) and joins; WHERE and ON are
//     split into conjuncts, each pushed down to the lowest node whose
//     tables it reads.
//  2. Each table with its conjuncts (leaf.go) gets an access path
//     (access_path.go): a point get or batch point get on the integer
//     primary key or a unique index, else a range scan of the primary key
//     or of the index whose ranges (ranges.go) select the fewest rows
//     (estimate.go reads the statistics of ANALYZE TABLE), else a full
//     scan. What the path does not guarantee stays as a Selection above
//     it: every conjunct except those an integer primary key's ranges
//     hold exactly.
//  3. Joins (join.go): outer joins in written order, runs of inner joins
//     greedily, smallest estimated input first; each join is an index
//     lookup join, a hash join or a nested loop join.
//  4. Above the FROM clause (select.go): aggregation (agg.go, with
//     ONLY_FULL_GROUP_BY's check in fullgroupby.go), HAVING, the select
//     list's projection, DISTINCT, ORDER BY and LIMIT.
//
// Subqueries used as values are planned as plans inside expressions
// (subquery.go); set operations in union.go; information_schema's tables
// in infoschema.go; DML in dml.go and multidml.go, whose rows to change
// come from the same access paths, locking what they read. EXPLAIN
// describes a plan with explain.go.
//
// Plans hold expressions, not values: parameters of a prepared statement
// are read when the plan runs, so one plan serves every execution (the plan
// cache keeps it in the prepared statement).
package planner

import (
	"strings"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// Context is what planning reads.
type Context struct {
	IS *catalog.InfoSchema
	// DB is the session's current database ("" for none).
	DB string
	// Stats returns a table's statistics, or nil.
	Stats func(tableID int64) *catalog.TableStats
	// Parse parses a stored view's query.
	Parse func(sql string) (ast.StmtNode, error)
	// OnlyFullGroupBy is sql_mode's ONLY_FULL_GROUP_BY (see fullgroupby.go).
	OnlyFullGroupBy bool

	outer     *scope // the query around a subquery
	viewDepth int
	ids       *int // frame IDs handed out in this statement
	ctes      *cteScope
}

// ResultField describes one column of a query's result.
type ResultField struct {
	Name, OrgName   string
	Table, OrgTable string
	DB              string
	Type            types.FieldType
	// Param, for a select item that is a bare untyped ? (SELECT ?), is
	// the parameter's 1-based position: the value each execution binds
	// decides the column's type, as in MySQL 8 (ParamFields).
	Param int
}

// Query is a planned SELECT.
type Query struct {
	Plan   Plan
	Fields []ResultField
}

// BuildQuery plans a query: a SELECT or a set operation (UNION). The
// plan's table sources read only the columns the query uses (prune.go).
func BuildQuery(c *Context, n ast.ResultSetNode) (*Query, error) {
	q, err := buildQuery(c, n)
	if err != nil {
		return nil, err
	}
	pruneColumns(q.Plan, allCols)
	return q, nil
}

// buildQuery is BuildQuery for the queries inside a statement.
func buildQuery(c *Context, n ast.ResultSetNode) (*Query, error) {
	switch x := n.(type) {
	case *ast.SelectStmt:
		return BuildSelect(c, x)
	case *ast.SetOprStmt:
		return buildSetOpr(c, x)
	case *ast.SubqueryExpr:
		return buildQuery(c, x.Query)
	}
	return nil, errno.New(errno.ErNotSupportedYet, "query %T is not supported yet", n)
}

// TableRef resolves a table name against the context: 1046 without a
// database, 1146 for a missing table.
func (c *Context) TableRef(tn *ast.TableName) (string, *catalog.TableInfo, error) {
	db := tn.Schema.O
	if db == "" {
		db = c.DB
	}
	if db == "" {
		return "", nil, errno.New(errno.ErNoDB, "No database selected")
	}
	if strings.EqualFold(db, InfoSchemaDB) {
		if memTableInfo(tn.Name.O) == nil {
			return "", nil, errno.New(errno.ErUnknownTable, "Unknown table '%s' in information_schema", tn.Name.O)
		}
		return "", nil, errno.New(1044, "Access denied for user 'root'@'%%' to database 'information_schema'")
	}
	t := c.IS.Table(db, tn.Name.O)
	if t == nil {
		return "", nil, errno.New(errno.ErNoSuchTable, "Table '%s.%s' doesn't exist", db, tn.Name.O)
	}
	return db, t, nil
}

// memTable returns the virtual table tn names, if it names one.
func (c *Context) memTable(tn *ast.TableName) *catalog.TableInfo {
	db := tn.Schema.O
	if db == "" {
		db = c.DB
	}
	if !strings.EqualFold(db, InfoSchemaDB) {
		return nil
	}
	return memTableInfo(tn.Name.O)
}
