package session

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/ddl"
	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/executor"
	"github.com/basalt-db/basalt/expression"
	"github.com/basalt-db/basalt/metrics"
	"github.com/basalt-db/basalt/parserdriver"
	"github.com/basalt-db/basalt/planner"
	"github.com/basalt-db/basalt/table"
	"github.com/basalt-db/basalt/trigger"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/ast"
	ptypes "github.com/pingcap/tidb/pkg/parser/types"
)

// Row triggers. CREATE TRIGGER, DROP TRIGGER and SHOW CREATE TRIGGER are
// read by package trigger (the TiDB parser has no grammar for them) and
// run here; a trigger is stored with its table (catalog.TableInfo.Triggers)
// as the text of its body.
//
// A write statement whose tables have triggers runs them through a
// triggerRun (executor.Triggers): each body is compiled once per statement
// against the statement's schema. Its statements are parsed by the TiDB
// parser, with every NEW.col and OLD.col replaced by a typed placeholder
// whose value comes from the row being written (Params: the OLD row's
// columns, then the NEW row's), so that each body statement is planned
// once and run for every row. Body statements write in the statement's
// transaction, so a failing trigger fails its statement, whose writes
// (its triggers' included) are undone together.

// runTriggerStmt runs a statement that trigger.Parse reads.
func (s *Session) runTriggerStmt(ctx context.Context, sql string) (Result, error) {
	start := time.Now()
	s.warnings = s.warnings[:0]
	st, err := trigger.Parse(sql)
	if err != nil {
		var se *trigger.SyntaxError
		if errors.As(err, &se) {
			err = errno.New(errno.ErParse, "%s", se.Error())
		}
	}
	kind := metrics.StmtOther
	var res Result
	if err == nil {
		switch x := st.(type) {
		case *trigger.Create:
			res, err = s.createTrigger(ctx, x)
		case *trigger.Drop:
			res, err = s.dropTrigger(ctx, x)
		case *trigger.ShowCreate:
			kind = metrics.StmtShow
			res, err = s.showCreateTrigger(x)
		case *trigger.Checksum:
			kind = metrics.StmtOther
			res, err = s.checksumTable(ctx, x)
		}
	}
	metrics.ObserveQuery(kind, time.Since(start))
	if err != nil {
		err = mapError(err, s.d.catalog.InfoSchema())
		observeError(err)
		return res, err
	}
	return res, nil
}

// triggerDB is the database a trigger name refers to.
func (s *Session) triggerDB(schema string) (string, error) {
	if schema == "" {
		schema = s.db
	}
	if schema == "" {
		return "", errno.New(errno.ErNoDB, "No database selected")
	}
	return schema, nil
}

func (s *Session) createTrigger(ctx context.Context, c *trigger.Create) (Result, error) {
	db, err := s.triggerDB(c.Schema)
	if err != nil {
		return Result{}, err
	}
	tableDB := c.TableSchema
	if tableDB == "" {
		tableDB = db
	}
	if !strings.EqualFold(tableDB, db) {
		return Result{}, errno.New(errno.ErTrgInWrongSchema, "Trigger in wrong schema")
	}
	if err := s.checkTriggerPriv(db, c.Table, c.Definer); err != nil {
		return Result{}, err
	}
	if err := s.commit(ctx); err != nil { // implicit commit, as every DDL
		return Result{}, err
	}
	t, err := ddl.TriggerTable(s.d.catalog.InfoSchema(), db, c.Table)
	if err != nil {
		return Result{}, err
	}
	mode, _ := s.sysVar("sql_mode", false)
	tr := &catalog.TriggerInfo{Name: c.Name, Timing: c.Timing, Event: c.Event, Body: c.Body,
		Definer: s.definer(c.Definer), Created: time.Now().UnixMicro(), SQLMode: mode.String()}
	// Compile the body now for its errors (syntax, NEW and OLD misused);
	// it is compiled again, against the schema of the moment, when it runs.
	if _, err := s.compileTrigger(t, db, tr); err != nil {
		return Result{}, err
	}
	note, err := s.d.ddl.CreateTrigger(ctx, ddl.TriggerTarget{DB: db, Table: t.Name, IfNotExists: c.IfNotExists,
		Order: c.Order, Other: c.Other}, tr)
	if note != nil {
		s.warnings = append(s.warnings, note.(*errno.Error))
	}
	return Result{}, err
}

// definer is the account a trigger is stored with: the one named in
// DEFINER = (unquoted), or the session's.
func (s *Session) definer(written string) string {
	if written == "" || strings.HasPrefix(strings.ToUpper(written), "CURRENT_USER") {
		return s.CurrentUser()
	}
	user, host, ok := strings.Cut(written, "@")
	unq := func(p string) string { return strings.Trim(strings.TrimSpace(p), "`'\"") }
	if !ok {
		return unq(user) + "@%"
	}
	return unq(user) + "@" + unq(host)
}

func (s *Session) dropTrigger(ctx context.Context, d *trigger.Drop) (Result, error) {
	db, err := s.triggerDB(d.Schema)
	if err != nil {
		return Result{}, err
	}
	if t, tr := s.d.catalog.InfoSchema().FindTrigger(db, d.Name); tr != nil {
		if err := s.checkTriggerPriv(db, t.Name, ""); err != nil {
			return Result{}, err
		}
	}
	if err := s.commit(ctx); err != nil {
		return Result{}, err
	}
	note, err := s.d.ddl.DropTrigger(ctx, db, d.Name, d.IfExists)
	if note != nil {
		s.warnings = append(s.warnings, note.(*errno.Error))
	}
	return Result{}, err
}

// triggerBody is a trigger's body compiled for one version of its table.
type triggerBody struct {
	tr    *catalog.TriggerInfo
	db    string             // where the body's names resolve: the trigger's database
	mode  expression.SQLMode // the body runs under the sql_mode it was created with
	stmts []*triggerStmt
}

// triggerStmt is one statement of a body: a write (node, planned at its
// first run) or a SET (sets).
type triggerStmt struct {
	node ast.StmtNode
	plan *dmlPlan
	sets []triggerSet
}

// triggerSet is one assignment of a SET: to NEW.col (newCol >= 0), or to
// the variable v.
type triggerSet struct {
	newCol int
	v      *ast.VariableAssignment
	expr   expression.Expr
}

// compileTrigger parses and checks tr's body for table t, as MySQL does
// when it creates or loads a trigger: 1064 for syntax, 1415 for a
// statement that returns rows, 1422 for one that commits, 1363 for NEW in
// a DELETE trigger or OLD in an INSERT trigger, 1362 for an assignment to
// OLD or (in an AFTER trigger) to NEW, 1054 for a column t lacks.
func (s *Session) compileTrigger(t *catalog.TableInfo, db string, tr *catalog.TriggerInfo) (*triggerBody, error) {
	texts, err := trigger.BodyStatements(tr.Body)
	if err != nil {
		var se *trigger.SyntaxError
		if errors.As(err, &se) {
			return nil, errno.New(errno.ErParse, "%s", se.Error())
		}
		return nil, err
	}
	b := &triggerBody{tr: tr, db: db}
	b.mode, _ = expression.ParseSQLMode(tr.SQLMode)
	for _, text := range texts {
		if trigger.IsCompound(text) {
			return nil, errno.New(errno.ErNotSupportedYet, "This version of Basalt doesn't yet support 'compound statements and declarations in triggers'")
		}
		s.syncParserMode()
		nodes, _, err := s.parser.ParseSQL(text)
		if err != nil {
			return nil, parseError(err)
		}
		if len(nodes) != 1 {
			return nil, errno.New(errno.ErParse, "You have an error in your SQL syntax; check the manual that corresponds to your MySQL server version for the right syntax to use near '%s'", text)
		}
		st, err := compileTriggerStmt(t, tr, nodes[0])
		if err != nil {
			return nil, err
		}
		b.stmts = append(b.stmts, st)
	}
	return b, nil
}

func compileTriggerStmt(t *catalog.TableInfo, tr *catalog.TriggerInfo, node ast.StmtNode) (*triggerStmt, error) {
	switch node.(type) {
	case *ast.InsertStmt, *ast.UpdateStmt, *ast.DeleteStmt, *ast.SetStmt:
	case *ast.SelectStmt, *ast.SetOprStmt, *ast.ShowStmt, *ast.ExplainStmt:
		return nil, errno.New(errno.ErSpNoRetset, "Not allowed to return a result set from a trigger")
	case ast.DDLNode, *ast.BeginStmt, *ast.CommitStmt, *ast.RollbackStmt:
		return nil, errno.New(errno.ErCommitNotAllowedInSfOrTrg, "Explicit or implicit commit is not allowed in stored function or trigger")
	default:
		return nil, errno.New(errno.ErNotSupportedYet, "This version of Basalt doesn't yet support this statement in a trigger")
	}
	if err := replaceRowRefs(t, tr, node); err != nil {
		return nil, err
	}
	st := &triggerStmt{node: node}
	set, ok := node.(*ast.SetStmt)
	if !ok {
		return st, nil
	}
	st.node = nil
	for _, v := range set.Variables {
		ts := triggerSet{newCol: -1, v: v}
		if row, col, ok := rowColumn(v); ok {
			switch {
			case row == "OLD" && tr.Event == catalog.OnInsert, row == "NEW" && tr.Event == catalog.OnDelete:
				return nil, noRow(row, tr.Event)
			case row == "OLD":
				return nil, errno.New(errno.ErTrgCantChangeRow, "Updating of OLD row is not allowed in trigger")
			case tr.Timing == catalog.After:
				return nil, errno.New(errno.ErTrgCantChangeRow, "Updating of NEW row is not allowed in after trigger")
			}
			c := t.FindColumn(col)
			if c == nil {
				return nil, errno.New(errno.ErBadField, "Unknown column '%s' in 'NEW'", col)
			}
			ts.newCol = c.Offset
		}
		if v.Value != nil && (ts.newCol >= 0 || !v.IsSystem) {
			b := &expression.Builder{Clause: "field list"}
			e, err := b.Build(v.Value)
			if err != nil {
				return nil, err
			}
			ts.expr = e
		}
		st.sets = append(st.sets, ts)
	}
	return st, nil
}

// rowColumn recognises SET NEW.col and SET OLD.col, which the parser reads
// as a system variable named "new.col".
func rowColumn(v *ast.VariableAssignment) (row, col string, ok bool) {
	if !v.IsSystem || v.IsGlobal {
		return "", "", false
	}
	row, col, ok = strings.Cut(v.Name, ".")
	row = strings.ToUpper(row)
	return row, col, ok && (row == "NEW" || row == "OLD")
}

func noRow(row, event string) error {
	return errno.New(errno.ErTrgNoSuchRowInTrg, "There is no %s row in on %s trigger", row, event)
}

// replaceRowRefs replaces the NEW.col and OLD.col of node (rowRefs). A
// few AST fields hold a column name by its concrete type (VALUES(col) of
// ON DUPLICATE KEY UPDATE), where the parser's Accept cannot take the
// placeholder and panics: such a use is reported as unsupported.
func replaceRowRefs(t *catalog.TableInfo, tr *catalog.TriggerInfo, node ast.StmtNode) (err error) {
	defer func() {
		if recover() != nil {
			err = errno.New(errno.ErNotSupportedYet, "This version of Basalt doesn't yet support NEW or OLD at this place of a trigger")
		}
	}()
	rw := &rowRefs{t: t, tr: tr}
	node.Accept(rw)
	return rw.err
}

// rowRefs replaces each NEW.col and OLD.col of a body statement with a
// typed placeholder: OLD's columns are placeholders 0..n-1, NEW's n..2n-1.
type rowRefs struct {
	t   *catalog.TableInfo
	tr  *catalog.TriggerInfo
	err error
}

func (v *rowRefs) Enter(n ast.Node) (ast.Node, bool) { return n, v.err != nil }

func (v *rowRefs) Leave(n ast.Node) (ast.Node, bool) {
	cn, ok := n.(*ast.ColumnNameExpr)
	if !ok || v.err != nil || cn.Name.Schema.L != "" {
		return n, v.err == nil
	}
	row := strings.ToUpper(cn.Name.Table.O)
	if row != "NEW" && row != "OLD" {
		return n, true
	}
	if row == "OLD" && v.tr.Event == catalog.OnInsert || row == "NEW" && v.tr.Event == catalog.OnDelete {
		v.err = noRow(row, v.tr.Event)
		return n, false
	}
	col := v.t.FindColumn(cn.Name.Name.O)
	if col == nil {
		v.err = errno.New(errno.ErBadField, "Unknown column '%s' in '%s'", cn.Name.Name.O, row)
		return n, false
	}
	pm := ast.NewParamMarkerExpr(0).(*parserdriver.ParamMarkerExpr)
	pm.Typed, pm.Order = true, col.Offset
	if row == "NEW" {
		pm.Order += len(v.t.Columns)
	}
	ft := ptypes.NewFieldType(col.Type.Tp)
	ft.SetFlag(col.Type.Flag)
	ft.SetFlen(col.Type.Flen)
	ft.SetDecimal(col.Type.Decimal)
	ft.SetCharset(col.Type.Charset)
	ft.SetCollate(col.Type.Collate)
	ft.SetElems(col.Type.Elems)
	pm.Type = *ft
	return pm, true
}

// triggerRun runs the triggers of one write statement and of the
// statements its triggers run (executor.Triggers). inUse are the tables
// the statements up the chain write: a trigger writing one of them fails
// with 1442, as in MySQL, which also keeps trigger recursion finite.
type triggerRun struct {
	s      *Session
	is     *catalog.InfoSchema
	inUse  map[int64]bool
	bodies map[*catalog.TriggerInfo]*triggerBody // shared down the chain
}

// targets returns the tables a planned write statement changes.
func (p *dmlPlan) targets() []*catalog.TableInfo {
	switch {
	case p.insert != nil:
		return []*catalog.TableInfo{p.insert.Table}
	case p.update != nil:
		return []*catalog.TableInfo{p.update.Table}
	case p.del != nil:
		return []*catalog.TableInfo{p.del.Table}
	}
	var out []*catalog.TableInfo
	if p.multiUpdate != nil {
		for _, t := range p.multiUpdate.Targets {
			out = append(out, t.Table)
		}
	}
	if p.multiDelete != nil {
		for _, t := range p.multiDelete.Targets {
			out = append(out, t.Table)
		}
	}
	return out
}

// newTriggerRun returns the trigger runner of statement p, or nil when
// none of its tables has triggers.
func (s *Session) newTriggerRun(is *catalog.InfoSchema, p *dmlPlan) executor.Triggers {
	targets := p.targets()
	any := false
	for _, t := range targets {
		any = any || len(t.Triggers) > 0
	}
	if !any {
		return nil
	}
	r := &triggerRun{s: s, is: is, inUse: map[int64]bool{}, bodies: map[*catalog.TriggerInfo]*triggerBody{}}
	for _, t := range targets {
		r.inUse[t.ID] = true
	}
	return r
}

// Fire implements executor.Triggers.
func (r *triggerRun) Fire(ctx *executor.Ctx, t *catalog.TableInfo, timing, event string, old, new []types.Datum) error {
	for _, tr := range t.Triggers {
		if !tr.Fires(timing, event) {
			continue
		}
		b := r.bodies[tr]
		if b == nil {
			var err error
			if b, err = r.s.compileTrigger(t, r.is.DBByID(t.DBID).Name, tr); err != nil {
				return err
			}
			r.bodies[tr] = b
		}
		for _, st := range b.stmts {
			if err := r.run(ctx, t, b, st, rowParams(len(t.Columns), old, new), new); err != nil {
				return err
			}
		}
	}
	return nil
}

// rowParams lays out a trigger's OLD and NEW rows as its placeholders'
// values (a missing row reads as NULLs).
func rowParams(n int, old, new []types.Datum) []types.Datum {
	params := make([]types.Datum, 2*n)
	copy(params, old)
	copy(params[n:], new)
	return params
}

// run runs one statement of a body for one row. A SET NEW.col changes
// new in place.
func (r *triggerRun) run(ctx *executor.Ctx, t *catalog.TableInfo, b *triggerBody, st *triggerStmt, params, new []types.Datum) error {
	eval := *ctx.Eval
	eval.Params, eval.Warnings, eval.RowNum = params, nil, 0
	eval.Mode, eval.Strict = b.mode, b.mode.Strict()
	defer func() { ctx.Eval.Warnings = append(ctx.Eval.Warnings, eval.Warnings...) }()
	if st.node == nil {
		for _, set := range st.sets {
			if err := r.set(ctx, t, &eval, set, new); err != nil {
				return err
			}
		}
		return nil
	}
	if st.plan == nil {
		pc := &planner.Context{IS: r.is, DB: b.db, Stats: r.s.d.catalog.Stats, Parse: parseView}
		p, err := planDMLIn(pc, st.node)
		if err != nil {
			return err
		}
		st.plan = p
	}
	targets := st.plan.targets()
	for _, tt := range targets {
		if r.inUse[tt.ID] {
			return errno.New(errno.ErCantUpdateUsedTableInSfOrTrg,
				"Can't update table '%s' in stored function/trigger because it is already used by statement which invoked this stored function/trigger.", tt.Name)
		}
	}
	ec := &executor.Ctx{Context: ctx.Context, Eval: &eval, Reader: ctx.Reader, Txn: ctx.Txn, ForUpdateTS: ctx.ForUpdateTS,
		LockWait: ctx.LockWait, Catalog: ctx.Catalog, Mem: ctx.Mem, IS: ctx.IS, NoFKChecks: ctx.NoFKChecks}
	executor.BindSubqueries(ec)
	for _, tt := range targets {
		if len(tt.Triggers) == 0 {
			continue
		}
		// The statement's own triggers run with its tables in use too.
		inUse := maps.Clone(r.inUse)
		for _, u := range targets {
			inUse[u.ID] = true
		}
		ec.Triggers = &triggerRun{s: r.s, is: r.is, inUse: inUse, bodies: r.bodies}
		break
	}
	_, err := st.plan.run(ec)
	return err
}

// set runs one assignment of a body's SET.
func (r *triggerRun) set(ctx *executor.Ctx, t *catalog.TableInfo, eval *expression.Ctx, set triggerSet, new []types.Datum) error {
	if set.expr == nil {
		// A system variable: SET as outside a trigger.
		return r.s.execSet(ctx.Context, &ast.SetStmt{Variables: []*ast.VariableAssignment{set.v}}, nil)
	}
	v, err := set.expr.Eval(eval, nil)
	if err != nil {
		return err
	}
	if set.newCol < 0 {
		r.s.userVars[strings.ToLower(set.v.Name)] = v.Clone()
		return nil
	}
	cv, err := table.Convert(eval, v, t.Columns[set.newCol])
	if err != nil {
		return err
	}
	new[set.newCol] = cv.Clone()
	// Later statements of the body read the new value.
	eval.Params[len(t.Columns)+set.newCol] = new[set.newCol]
	return nil
}

// showCreateTrigger runs SHOW CREATE TRIGGER.
func (s *Session) showCreateTrigger(x *trigger.ShowCreate) (Result, error) {
	db, err := s.triggerDB(x.Schema)
	if err != nil {
		return Result{}, err
	}
	t, tr := s.d.catalog.InfoSchema().FindTrigger(db, x.Name)
	if tr == nil || !s.visibleTable(db, t.Name) {
		return Result{}, errno.New(errno.ErTrgDoesNotExist, "Trigger does not exist")
	}
	cols := textFields("Trigger", "sql_mode", "SQL Original Statement", "character_set_client",
		"collation_connection", "Database Collation", "Created")
	row := []types.Datum{str(tr.Name), str(tr.SQLMode), str(createTriggerText(t, tr)), str("utf8mb4"),
		str(triggerCollation), str(s.dbCollation(db)), str(triggerCreated(tr))}
	return Result{Rows: &staticRows{fields: cols, data: [][]types.Datum{row}}}, nil
}

// createTriggerText is the CREATE TRIGGER statement of tr, as SHOW CREATE
// TRIGGER and information_schema show it.
func createTriggerText(t *catalog.TableInfo, tr *catalog.TriggerInfo) string {
	user, host, _ := strings.Cut(tr.Definer, "@")
	return fmt.Sprintf("CREATE DEFINER=`%s`@`%s` TRIGGER `%s` %s %s ON `%s` FOR EACH ROW %s",
		user, host, tr.Name, tr.Timing, tr.Event, t.Name, tr.Body)
}

func triggerCreated(tr *catalog.TriggerInfo) string {
	return time.UnixMicro(tr.Created).Format("2006-01-02 15:04:05.00")
}

func (s *Session) dbCollation(db string) string {
	if d := s.d.catalog.InfoSchema().DB(db); d != nil {
		return d.Collate
	}
	return ""
}

// showTriggers runs SHOW TRIGGERS [FROM db] [LIKE 'table pattern'].
func (s *Session) showTriggers(x *ast.ShowStmt) (Result, error) {
	db := x.DBName
	if db == "" {
		db = s.db
	}
	if db == "" {
		return Result{}, errno.New(errno.ErNoDB, "No database selected")
	}
	is := s.d.catalog.InfoSchema()
	if is.DB(db) == nil && !strings.EqualFold(db, planner.InfoSchemaDB) {
		return Result{}, errno.New(errno.ErBadDB, "Unknown database '%s'", db)
	}
	cols := textFields("Trigger", "Event", "Table", "Statement", "Timing", "Created", "sql_mode", "Definer",
		"character_set_client", "collation_connection", "Database Collation")
	var data [][]types.Datum
	for _, t := range is.Tables(db) {
		if !like(x.Pattern, t.Name) || !s.visibleTable(db, t.Name) {
			continue
		}
		for _, tr := range triggersInOrder(t) {
			data = append(data, []types.Datum{str(tr.Name), str(tr.Event), str(t.Name), str(tr.Body), str(tr.Timing),
				str(triggerCreated(tr)), str(tr.SQLMode), str(tr.Definer), str("utf8mb4"), str(triggerCollation),
				str(s.dbCollation(db))})
		}
	}
	return Result{Rows: &staticRows{fields: cols, data: data}}, nil
}

// triggersInOrder lists a table's triggers as MySQL does: by event
// (INSERT, UPDATE, DELETE), then timing, then firing order.
func triggersInOrder(t *catalog.TableInfo) []*catalog.TriggerInfo {
	var out []*catalog.TriggerInfo
	for _, ev := range []string{catalog.OnInsert, catalog.OnUpdate, catalog.OnDelete} {
		for _, tm := range []string{catalog.Before, catalog.After} {
			out = append(out, t.TriggersFor(tm, ev)...)
		}
	}
	return out
}

// triggerRows are the rows of information_schema.TRIGGERS.
func (s *Session) triggerRows(is *catalog.InfoSchema) [][]types.Datum {
	var out [][]types.Datum
	for _, db := range is.DBs() {
		for _, t := range is.Tables(db.Name) {
			for _, tr := range triggersInOrder(t) {
				order := int64(0)
				for _, o := range t.TriggersFor(tr.Timing, tr.Event) {
					order++
					if o == tr {
						break
					}
				}
				out = append(out, []types.Datum{str("def"), str(db.Name), str(tr.Name), str(tr.Event), str("def"),
					str(db.Name), str(t.Name), types.NewInt(order), types.Null, str(tr.Body), str("ROW"), str(tr.Timing),
					types.Null, types.Null, str("OLD"), str("NEW"), str(triggerCreated(tr)), str(tr.SQLMode), str(tr.Definer),
					str("utf8mb4"), str(triggerCollation), str(db.Collate)})
			}
		}
	}
	return out
}

// triggerCollation is the collation_connection SHOW TRIGGERS, SHOW CREATE
// TRIGGER and information_schema.TRIGGERS give: Basalt's default, which a
// dump sets before it recreates the trigger (MariaDB knows no
// utf8mb4_0900_ai_ci).
const triggerCollation = "utf8mb4_general_ci"
