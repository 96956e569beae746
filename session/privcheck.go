package session

import (
	"strings"

	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/planner"
	"github.com/basalt-db/basalt/privilege"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// Every statement is checked before it runs (Session.run): the privileges
// it needs on each table, database or the server are computed from its
// AST and compared with the account's in the driver's privilege cache. A
// denied statement returns MySQL's error and changes nothing:
//
//	1142  a table privilege is missing  ("SELECT command denied to user ...")
//	1143  SELECT on a column that UPDATE or DELETE reads
//	1044  a database privilege is missing (CREATE/DROP DATABASE, USE)
//	1227  a global privilege is missing (SET GLOBAL, FLUSH, CREATE USER)
//
// Checks read the current cache, so a GRANT or REVOKE takes effect at the
// next statement of every session (MySQL defers some to the next USE or
// connection). information_schema is readable by everyone. The account
// statements (CREATE USER, GRANT, ...) check for themselves (acl_stmt.go).

// checker checks one statement for one subject against one cache.
type checker struct {
	s    *Session
	c    *privilege.Cache
	subj privilege.Subject
}

// checkPrivileges returns the error MySQL gives if the session's account
// may not run st, or nil.
func (s *Session) checkPrivileges(st ast.StmtNode) error {
	if s.subject == nil {
		return nil
	}
	ch := checker{s: s, c: s.d.acl.cache.Load(), subj: *s.subject}
	if ch.c.Global(ch.subj) == privilege.GlobalPrivs {
		return nil // root, or another account with every privilege
	}
	return ch.stmt(st)
}

func (ch *checker) stmt(st ast.StmtNode) error {
	switch x := st.(type) {
	case *ast.SelectStmt, *ast.SetOprStmt:
		return ch.reads(st, nil)
	case *selectInto:
		return ch.stmt(x.StmtNode)
	case *ast.InsertStmt:
		target := insertTarget(x)
		if target != nil {
			need := privilege.Insert
			if x.IsReplace {
				need |= privilege.Delete
			}
			if len(x.OnDuplicate) > 0 {
				need |= privilege.Update
			}
			if err := ch.table(target, need); err != nil {
				return err
			}
		}
		return ch.reads(st, target)
	case *ast.LoadDataStmt:
		// The server's files need FILE, checked first and refused as
		// MySQL does, with 1045.
		if x.FileLocRef != ast.FileLocClient && ch.c.Global(ch.subj)&privilege.File == 0 {
			// An account with a password logged in with it.
			u := ch.c.Account(ch.subj.User, ch.subj.Host)
			return errno.AccessDenied(ch.subj.User, ch.subj.Host, u != nil && u.AuthString != "")
		}
		need := privilege.Insert
		if x.OnDuplicate == ast.OnDuplicateKeyHandlingReplace {
			need |= privilege.Delete
		}
		return ch.table(x.Table, need)
	case *ast.ImportIntoStmt:
		// TiDB's: FILE for the server's files, and SELECT, INSERT,
		// UPDATE, DELETE and ALTER on the table.
		if ch.c.Global(ch.subj)&privilege.File == 0 {
			u := ch.c.Account(ch.subj.User, ch.subj.Host)
			return errno.AccessDenied(ch.subj.User, ch.subj.Host, u != nil && u.AuthString != "")
		}
		return ch.table(x.Table, privilege.Select|privilege.Insert|privilege.Update|privilege.Delete|privilege.Alter)
	case *ast.UpdateStmt:
		return ch.write(st, x.TableRefs, privilege.Update, updateReadsColumn(x))
	case *ast.DeleteStmt:
		col := ""
		if x.Where != nil || x.Order != nil {
			col = firstColumn(x.Where, x.Order)
		}
		return ch.write(st, x.TableRefs, privilege.Delete, col)
	case *ast.CreateTableStmt:
		return ch.table(x.Table, privilege.Create)
	case *ast.DropTableStmt:
		for _, t := range x.Tables {
			if err := ch.table(t, privilege.Drop); err != nil {
				return err
			}
		}
	case *ast.LockTablesStmt:
		for _, l := range x.TableLocks {
			if err := ch.table(l.Table, privilege.LockTables|privilege.Select); err != nil {
				return err
			}
		}
	case *ast.TruncateTableStmt:
		return ch.table(x.Table, privilege.Drop)
	case *ast.CreateIndexStmt:
		return ch.table(x.Table, privilege.Index)
	case *ast.DropIndexStmt:
		return ch.table(x.Table, privilege.Index)
	case *ast.AlterTableStmt:
		return ch.table(x.Table, privilege.Alter)
	case *ast.AnalyzeTableStmt:
		for _, t := range x.TableNames {
			if err := ch.table(t, privilege.Select|privilege.Insert); err != nil {
				return err
			}
		}
	case *ast.AdminStmt:
		if x.Tp != ast.AdminCheckTable {
			return errSpecificDenied("SUPER")
		}
		for _, t := range x.Tables {
			if err := ch.table(t, privilege.Select); err != nil {
				return err
			}
		}
	case *ast.CreateDatabaseStmt:
		return ch.db(x.Name.O, privilege.Create)
	case *ast.DropDatabaseStmt:
		return ch.db(x.Name.O, privilege.Drop)
	case *ast.ExplainStmt:
		return ch.stmt(x.Stmt)
	case *ast.SetStmt:
		for _, v := range x.Variables {
			if v.IsSystem && v.IsGlobal && ch.c.Global(ch.subj)&privilege.Super == 0 {
				return errSpecificDenied("SUPER or SYSTEM_VARIABLES_ADMIN")
			}
		}
	case *ast.BRIEStmt:
		if ch.c.Global(ch.subj)&privilege.Super == 0 {
			return errBRIEDenied(x)
		}
	case *ast.FlushStmt:
		if ch.c.Global(ch.subj)&privilege.Reload == 0 {
			return errSpecificDenied("RELOAD")
		}
	case *ast.KillStmt:
		return ch.kill(x)
	case *ast.CreateBindingStmt:
		if x.GlobalScope && ch.c.Global(ch.subj)&privilege.Super == 0 {
			return errSpecificDenied("SUPER")
		}
	case *ast.DropBindingStmt:
		if x.GlobalScope && ch.c.Global(ch.subj)&privilege.Super == 0 {
			return errSpecificDenied("SUPER")
		}
	case *ast.SetBindingStmt:
		if ch.c.Global(ch.subj)&privilege.Super == 0 {
			return errSpecificDenied("SUPER")
		}
	case *ast.ShowStmt:
		return ch.show(x)
	case ast.DDLNode:
		// A schema change this file does not know (RENAME TABLE, views,
		// ...): denied unless the account may do anything, so that
		// supporting a new statement cannot open a hole.
		return errSpecificDenied("SUPER")
	}
	return nil
}

// tableDB is the database a table name refers to: its own, or the current.
func (ch *checker) tableDB(t *ast.TableName) string {
	if t.Schema.O != "" {
		return t.Schema.O
	}
	return ch.s.db
}

// table checks that the subject holds need on table t.
func (ch *checker) table(t *ast.TableName, need privilege.Priv) error {
	db := ch.tableDB(t)
	if db == "" || strings.EqualFold(db, planner.InfoSchemaDB) {
		return nil // "No database selected" comes from running it; information_schema is open
	}
	if missing := need &^ ch.c.Table(ch.subj, db, t.Name.O); missing != 0 {
		return ch.errTable(missing, t.Name.O)
	}
	return nil
}

// db checks that the subject holds need on database db (1044 otherwise).
func (ch *checker) db(db string, need privilege.Priv) error {
	if strings.EqualFold(db, planner.InfoSchemaDB) {
		return nil
	}
	if need&^ch.c.DB(ch.subj, db) != 0 {
		return errDBAccessDenied(&ch.subj, db)
	}
	return nil
}

// errTable is 1142 naming the first missing privilege.
func (ch *checker) errTable(missing privilege.Priv, table string) error {
	return aclError(errTableAccessDenied, "42000", "%s command denied to user '%s'@'%s' for table '%s'",
		firstPriv(missing), ch.subj.User, ch.subj.ClientHost, table)
}

func firstPriv(p privilege.Priv) string {
	name := ""
	p.Each(func(b privilege.Priv) {
		if name == "" {
			name = strings.TrimSuffix(b.String(), " OPTION")
		}
	})
	return name
}

func errSpecificDenied(privs string) error {
	return aclError(errSpecificAccessDenied, "42000", "Access denied; you need (at least one of) the %s privilege(s) for this operation", privs)
}

// reads checks SELECT on every table st names except skip (an INSERT's
// target), leaving out common table expressions.
func (ch *checker) reads(st ast.Node, skip *ast.TableName) error {
	v := &tableCollector{}
	st.Accept(v)
	for _, t := range v.tables {
		if t == skip || (t.Schema.O == "" && v.ctes[strings.ToLower(t.Name.O)]) {
			continue
		}
		if err := ch.table(t, privilege.Select); err != nil {
			return err
		}
	}
	return nil
}

// write checks an UPDATE or DELETE: need on its tables, SELECT on them when
// it reads a column (col, named by 1143), and SELECT on tables of subqueries.
func (ch *checker) write(st ast.StmtNode, refs *ast.TableRefsClause, need privilege.Priv, col string) error {
	v := &tableCollector{}
	if refs != nil {
		refs.Accept(v)
	}
	targets := map[*ast.TableName]bool{}
	for _, t := range v.tables {
		targets[t] = true
		if err := ch.table(t, need); err != nil {
			return err
		}
		if col != "" {
			db := ch.tableDB(t)
			if db != "" && !strings.EqualFold(db, planner.InfoSchemaDB) && ch.c.Table(ch.subj, db, t.Name.O)&privilege.Select == 0 {
				return aclError(errColumnAccessDenied, "42000", "SELECT command denied to user '%s'@'%s' for column '%s' in table '%s'",
					ch.subj.User, ch.subj.ClientHost, col, t.Name.O)
			}
		}
	}
	all := &tableCollector{}
	st.Accept(all)
	for _, t := range all.tables {
		if !targets[t] && !(t.Schema.O == "" && all.ctes[strings.ToLower(t.Name.O)]) {
			if err := ch.table(t, privilege.Select); err != nil {
				return err
			}
		}
	}
	return nil
}

// kill lets a session kill its own user's connections; others need SUPER.
func (ch *checker) kill(x *ast.KillStmt) error {
	if ch.s.d.conns == nil || ch.c.Global(ch.subj)&privilege.Super != 0 {
		return nil
	}
	for _, p := range ch.s.d.conns.ProcessList() {
		if uint64(p.ID) == x.ConnectionID && p.User != ch.s.info.User {
			return aclError(errno.ErKillDenied, "HY000", "You are not owner of thread %d", x.ConnectionID)
		}
	}
	return nil
}

func (ch *checker) show(x *ast.ShowStmt) error {
	switch x.Tp {
	case ast.ShowBackups, ast.ShowRestores:
		if ch.c.Global(ch.subj)&privilege.Super == 0 {
			kind := ast.BRIEKindBackup
			if x.Tp == ast.ShowRestores {
				kind = ast.BRIEKindRestore
			}
			return errBRIEDenied(&ast.BRIEStmt{Kind: kind})
		}
	case ast.ShowColumns, ast.ShowIndex, ast.ShowCreateTable:
		if x.Table == nil {
			return nil
		}
		db := ch.tableDB(x.Table)
		if x.DBName != "" {
			db = x.DBName
		}
		if db == "" || strings.EqualFold(db, planner.InfoSchemaDB) {
			return nil
		}
		if !ch.c.AnyOnTable(ch.subj, db, x.Table.Name.O) {
			cmd := "SELECT"
			if x.Tp == ast.ShowCreateTable {
				cmd = "SHOW"
			}
			return aclError(errTableAccessDenied, "42000", "%s command denied to user '%s'@'%s' for table '%s'",
				cmd, ch.subj.User, ch.subj.ClientHost, x.Table.Name.O)
		}
	case ast.ShowTables, ast.ShowTableStatus, ast.ShowCreateDatabase:
		db := x.DBName
		if db == "" {
			db = ch.s.db
		}
		if db != "" && !strings.EqualFold(db, planner.InfoSchemaDB) && !ch.c.AnyInDB(ch.subj, db) {
			return errDBAccessDenied(&ch.subj, db)
		}
	}
	return nil
}

// insertTarget is the table an INSERT writes.
func insertTarget(x *ast.InsertStmt) *ast.TableName {
	if x.Table == nil || x.Table.TableRefs == nil {
		return nil
	}
	if ts, ok := x.Table.TableRefs.Left.(*ast.TableSource); ok {
		if tn, ok := ts.Source.(*ast.TableName); ok {
			return tn
		}
	}
	return nil
}

// updateReadsColumn is the first column an UPDATE reads (in WHERE, ORDER BY
// or an assigned value), "" if none.
func updateReadsColumn(x *ast.UpdateStmt) string {
	nodes := []ast.Node{}
	if x.Where != nil {
		nodes = append(nodes, x.Where)
	}
	if x.Order != nil {
		nodes = append(nodes, x.Order)
	}
	for _, a := range x.List {
		if a.Expr != nil {
			nodes = append(nodes, a.Expr)
		}
	}
	return firstColumn(nodes...)
}

// firstColumn is the first column name referenced under nodes.
func firstColumn(nodes ...ast.Node) string {
	v := &columnFinder{}
	for _, n := range nodes {
		if n == nil || v.name != "" {
			continue
		}
		n.Accept(v)
	}
	return v.name
}

type columnFinder struct{ name string }

func (v *columnFinder) Enter(n ast.Node) (ast.Node, bool) {
	if c, ok := n.(*ast.ColumnNameExpr); ok && v.name == "" {
		v.name = c.Name.Name.O
	}
	return n, v.name != ""
}
func (v *columnFinder) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// tableCollector gathers the table names under a node and the names of
// its common table expressions.
type tableCollector struct {
	tables []*ast.TableName
	ctes   map[string]bool
}

func (v *tableCollector) Enter(n ast.Node) (ast.Node, bool) {
	switch x := n.(type) {
	case *ast.TableName:
		v.tables = append(v.tables, x)
	case *ast.CommonTableExpression:
		if v.ctes == nil {
			v.ctes = map[string]bool{}
		}
		v.ctes[strings.ToLower(x.Name.O)] = true
	}
	return n, false
}
func (v *tableCollector) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// dbAccess checks that the session may use database db (USE, COM_INIT_DB).
func (s *Session) dbAccess(db string) error {
	if s.subject == nil || strings.EqualFold(db, planner.InfoSchemaDB) {
		return nil
	}
	if !s.d.acl.cache.Load().AnyInDB(*s.subject, db) {
		return errDBAccessDenied(s.subject, db)
	}
	return nil
}

// visibleDB reports whether SHOW DATABASES and information_schema show db
// to the session: with SHOW DATABASES or any privilege in it.
func (s *Session) visibleDB(db string) bool {
	if s.subject == nil || strings.EqualFold(db, planner.InfoSchemaDB) {
		return true
	}
	c := s.d.acl.cache.Load()
	return c.Global(*s.subject)&privilege.ShowDB != 0 || c.AnyInDB(*s.subject, db)
}

// visibleTable reports whether SHOW TABLES and information_schema show
// db.table to the session: with any privilege on it.
func (s *Session) visibleTable(db, table string) bool {
	if s.subject == nil || strings.EqualFold(db, planner.InfoSchemaDB) {
		return true
	}
	return s.d.acl.cache.Load().AnyOnTable(*s.subject, db, table)
}

// seesAllProcesses reports whether SHOW PROCESSLIST shows other users'
// connections to the session (PROCESS).
func (s *Session) seesAllProcesses() bool {
	return s.subject == nil || s.d.acl.cache.Load().Global(*s.subject)&privilege.Process != 0
}

// visibleColumns are, for the information_schema tables that describe
// schema objects, the columns holding the schema and the table name (-1:
// none); rows the session may not see are left out, as in MySQL.
var visibleColumns = map[string][2]int{
	"schemata":                {1, -1},
	"tables":                  {1, 2},
	"columns":                 {1, 2},
	"statistics":              {1, 2},
	"table_constraints":       {3, 4},
	"key_column_usage":        {4, 5},
	"triggers":                {5, 6},
	"referential_constraints": {1, 9},
	"views":                   {1, 2},
}

// filterVisible drops the rows of information_schema table name that the
// session may not see.
func (s *Session) filterVisible(name string, rows [][]types.Datum) [][]types.Datum {
	if s.subject == nil || s.d.acl.cache.Load().Global(*s.subject) == privilege.GlobalPrivs {
		return rows
	}
	name = strings.ToLower(name)
	// Without PROCESS, an account sees its own statements only, as in
	// TiDB: by the column that names the user.
	if userCol, ok := map[string]int{"processlist": 1, "slow_query": 2, "statements_summary": 6,
		"statements_summary_history": 6}[name]; ok {
		if s.seesAllProcesses() {
			return rows
		}
		out := rows[:0]
		for _, r := range rows {
			if r[userCol].String() == s.info.User {
				out = append(out, r)
			}
		}
		return out
	}
	cols, ok := visibleColumns[name]
	if !ok {
		return rows
	}
	out := rows[:0]
	for _, r := range rows {
		db := r[cols[0]].String()
		if cols[1] < 0 && s.visibleDB(db) || cols[1] >= 0 && s.visibleTable(db, r[cols[1]].String()) {
			out = append(out, r)
		}
	}
	return out
}

// checkTriggerPriv checks CREATE or DROP TRIGGER on table db.table: the
// TRIGGER privilege on the table (1142), and SUPER to name a DEFINER
// other than the session's own account (1227).
func (s *Session) checkTriggerPriv(db, table, definer string) error {
	if s.subject == nil {
		return nil
	}
	ch := checker{s: s, c: s.d.acl.cache.Load(), subj: *s.subject}
	global := ch.c.Global(ch.subj)
	if global == privilege.GlobalPrivs {
		return nil
	}
	if definer != "" && s.definer(definer) != s.CurrentUser() && global&privilege.Super == 0 {
		return errSpecificDenied("SUPER or SET_USER_ID")
	}
	if missing := privilege.Trigger &^ ch.c.Table(ch.subj, db, table); missing != 0 {
		return ch.errTable(missing, table)
	}
	return nil
}
