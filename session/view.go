package session

import (
	"context"
	"strings"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/planner"
	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/format"
)

// createView runs CREATE [OR REPLACE] VIEW: the query is planned (in the
// view's database) to check it and to learn its columns, then stored as
// text.
func (s *Session) createView(ctx context.Context, x *ast.CreateViewStmt) error {
	rs, ok := x.Select.(ast.ResultSetNode)
	if !ok {
		return errno.New(errno.ErNotSupportedYet, "this view definition is not supported")
	}
	pc := s.planContext()
	if x.ViewName.Schema.O != "" {
		pc.DB = x.ViewName.Schema.O
	}
	q, err := planner.BuildQuery(pc, rs)
	if err != nil {
		return err
	}
	var names []string
	if len(x.Cols) > 0 {
		if len(x.Cols) != len(q.Fields) {
			return errno.New(1353, "In definition of view, derived table or common table expression, SELECT list and column names list have different column counts")
		}
		for _, c := range x.Cols {
			names = append(names, c.O)
		}
	} else {
		for _, f := range q.Fields {
			names = append(names, f.Name)
		}
	}
	var sb strings.Builder
	if err := x.Select.Restore(format.NewRestoreCtx(format.DefaultRestoreFlags, &sb)); err != nil {
		return err
	}
	cols := make([]*catalog.ColumnInfo, len(names))
	for i, n := range names {
		cols[i] = &catalog.ColumnInfo{Name: n, Type: q.Fields[i].Type}
	}
	definer := ""
	if x.Definer != nil && !x.Definer.CurrentUser {
		definer = x.Definer.Username + "@" + x.Definer.Hostname
	}
	info := &catalog.ViewInfo{Select: sb.String(), Cols: names, Definer: s.definer(definer)}
	return s.d.ddl.CreateView(ctx, s.db, x.ViewName, x.OrReplace, info, cols)
}

// parseView parses a stored view query.
func parseView(sql string) (ast.StmtNode, error) {
	return parser.New().ParseOneStmt(sql, "", "")
}

func tableType(t *catalog.TableInfo) string {
	if t != nil && t.View != nil {
		return "VIEW"
	}
	return "BASE TABLE"
}

// viewDefiner is a view's definer, user@host.
func viewDefiner(v *catalog.ViewInfo) string {
	if v.Definer == "" {
		return "root@%"
	}
	return v.Definer
}

// showCreateView is SHOW CREATE VIEW's statement, as MySQL writes it
// (Basalt's views are all ALGORITHM=UNDEFINED and SQL SECURITY DEFINER,
// without CHECK OPTION); mariadb-dump finds the definer in it as
// information_schema.VIEWS gives it.
func showCreateView(t *catalog.TableInfo) string {
	user, host, _ := strings.Cut(viewDefiner(t.View), "@")
	cols := make([]string, len(t.View.Cols))
	for i, c := range t.View.Cols {
		cols[i] = quoteName(c)
	}
	return "CREATE ALGORITHM=UNDEFINED DEFINER=" + quoteName(user) + "@" + quoteName(host) +
		" SQL SECURITY DEFINER VIEW " + quoteName(t.Name) + " (" + strings.Join(cols, ",") + ") AS " + t.View.Select
}

func quoteName(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }
