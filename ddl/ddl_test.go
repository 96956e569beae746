package ddl_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/ddl"
	"github.com/basalt-db/basalt/executor"
	"github.com/basalt-db/basalt/expression"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/parserdriver"
	"github.com/basalt-db/basalt/planner"
	"github.com/basalt-db/basalt/scripttest"
	"github.com/basalt-db/basalt/store/local"
	"github.com/basalt-db/basalt/tablecodec"
	"github.com/cockroachdb/datadriven"
	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// TestDDL runs the scripts in testdata/: schema changes in, the schema
// they leave out. Each file starts from a fresh store whose catalog has
// the database test, the current one. The commands:
//
//	exec [trace] [non-strict]
//	                DDL statements, ';'-separated (CREATE/DROP DATABASE, USE,
//	                CREATE/DROP/TRUNCATE/RENAME TABLE, CREATE/DROP INDEX,
//	                ALTER TABLE); prints ok or the first error. trace prints
//	                each step of an online change: the schema version it
//	                waits out and the objects that are not public then.
//	                non-strict runs ALTER TABLE with an empty sql_mode
//	                (else MySQL 8's default).
//	show [table ...]
//	                the tables (all of the current database without names)
//	                as the catalog holds them: ids, columns with their types,
//	                indexes, states
//	insert          INSERT, UPDATE and DELETE statements, each committed on
//	                its own
//	before-ingest   INSERT, UPDATE and DELETE statements that the next exec
//	                runs, each committed on its own, in the middle of a
//	                backfill by ingestion (ingest.go): after its snapshot,
//	                before its ingest; exec says when they ran
//	exec no-fast-reorg
//	                exec with tidb_ddl_enable_fast_reorg off
//	exec parts=N    exec whose backfills by ingestion read the table in N
//	                parts at once (else one per core, up to 4)
//	query           a SELECT; its rows, tab-separated
//	exec crash-after=N
//	                exec, which dies (as the process would) once the Nth
//	                step of an online change is published: nothing after
//	                runs, no error path takes the change back
//	recover         ddl.RecoverSchema, as at the next start: traced
//	index-keys t    the index entries stored per index id of table t
//
// insert and query run through the planner and the executor, so that
// changes that move data (index backfill, ADD COLUMN's default for old
// rows, MODIFY COLUMN's conversion) can be tested. Rewrite the expected
// output with -rewrite.
func TestDDL(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		h := newHarness(t)
		datadriven.RunTest(t, path, h.run)
	})
}

// defaultSQLMode is MySQL 8's default sql_mode, as sessions start with.
const defaultSQLMode = "ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION"

type harness struct {
	store kv.Storage
	cat   *catalog.Catalog
	ddl   *ddl.DDL
	db    string
	p     *parser.Parser
	// onWait, if set, is called at each step of an online schema change.
	onWait func(version int64)
	// beforeIngest holds the statements of before-ingest (their text: a
	// parser reuses its trees).
	beforeIngest string
}

func newHarness(t testing.TB) *harness {
	st, err := local.Open(t.TempDir(), local.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cat, err := catalog.Open(st)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{store: st, cat: cat, db: catalog.DefaultDB, p: parser.New()}
	// Statements run one at a time here, so no transaction is ever left
	// under an older schema version: waiting is only a step to trace.
	wait := func(_ context.Context, v int64) error {
		if h.onWait != nil {
			h.onWait(v)
		}
		return nil
	}
	h.ddl = &ddl.DDL{Store: st, Catalog: cat, Wait: wait}
	return h
}

func (h *harness) run(t *testing.T, td *datadriven.TestData) string {
	ctx := context.Background()
	switch td.Cmd {
	case "exec":
		stmts, err := parserdriver.Parse(h.p, td.Input)
		if err != nil {
			// Some definitions are refused by the parser already.
			return fmt.Sprintf("parse error: %v\n", err)
		}
		mode, _ := expression.ParseSQLMode(defaultSQLMode)
		if td.HasArg("non-strict") {
			mode = 0
		}
		var out strings.Builder
		if td.HasArg("no-fast-reorg") {
			ctx = ddl.WithoutFastReorg(ctx)
		}
		if td.HasArg("parts") {
			var n int
			td.ScanArgs(t, "parts", &n)
			defer ddl.SetIngestParts(n)()
		}
		if text := h.beforeIngest; text != "" {
			h.beforeIngest = ""
			ran := false
			defer ddl.SetBeforeIngest(func() {
				if ran {
					return
				}
				ran = true
				out.WriteString("before the ingest:")
				stmts, err := parserdriver.Parse(parser.New(), text)
				if err != nil {
					t.Fatalf("%s: %v", td.Pos, err)
				}
				for _, s := range stmts {
					if err := h.insert(ctx, s); err != nil {
						fmt.Fprintf(&out, " %v", err)
					} else {
						out.WriteString(" ok")
					}
				}
				out.WriteString("\n")
			})()
		}
		if td.HasArg("trace") {
			h.onWait = func(v int64) { fmt.Fprintf(&out, "schema version %d: %s\n", v, h.pending()) }
			defer func() { h.onWait = nil }()
		}
		if td.HasArg("crash-after") {
			var n int
			td.ScanArgs(t, "crash-after", &n)
			waits := 0
			h.onWait = func(v int64) {
				if waits++; waits == n {
					panic(crash{v})
				}
			}
			defer func() { h.onWait = nil }()
		}
		for _, s := range stmts {
			if crashed, err := h.execCrashing(ctx, &out, s, mode); crashed != nil {
				fmt.Fprintf(&out, "crashed at schema version %d: %s\n", crashed.version, h.pending())
				return out.String()
			} else if err != nil {
				out.WriteString(err.Error() + "\n")
				return out.String()
			}
		}
		out.WriteString("ok\n")
		return out.String()
	case "recover":
		var out strings.Builder
		h.onWait = func(v int64) { fmt.Fprintf(&out, "schema version %d: %s\n", v, h.pending()) }
		defer func() { h.onWait = nil }()
		found, err := h.ddl.RecoverSchema(ctx, nil, nil)
		switch {
		case err != nil:
			out.WriteString(err.Error() + "\n")
		case !found:
			out.WriteString("nothing to recover\n")
		default:
			out.WriteString("ok\n")
		}
		return out.String()
	case "index-keys":
		return h.indexKeys(t, td.CmdArgs[0].Key)
	case "show":
		var names []string
		for _, a := range td.CmdArgs {
			names = append(names, a.Key)
		}
		return h.show(t, names)
	case "insert":
		stmts, err := parserdriver.Parse(h.p, td.Input)
		if err != nil {
			t.Fatalf("%s: %v", td.Pos, err)
		}
		for _, s := range stmts {
			if err := h.insert(ctx, s); err != nil {
				return err.Error() + "\n"
			}
		}
		return "ok\n"
	case "before-ingest":
		h.beforeIngest = td.Input
		return "ok\n"
	case "query":
		stmt, err := h.p.ParseOneStmt(td.Input, "", "")
		if err != nil {
			t.Fatalf("%s: %v", td.Pos, err)
		}
		out, err := h.query(ctx, stmt)
		if err != nil {
			return err.Error() + "\n"
		}
		return out
	}
	t.Fatalf("%s: unknown command %q", td.Pos, td.Cmd)
	return ""
}

// crash is what a crash-after wait panics with: the process dies there,
// and nothing after runs (no error path takes the change back).
type crash struct{ version int64 }

// execCrashing is exec, which a crash-after wait may end midway.
func (h *harness) execCrashing(ctx context.Context, out *strings.Builder, s ast.StmtNode, mode expression.SQLMode) (crashed *crash, err error) {
	defer func() {
		if r := recover(); r != nil {
			c, ok := r.(crash)
			if !ok {
				panic(r)
			}
			crashed = &c
		}
	}()
	return nil, h.exec(ctx, out, s, mode)
}

// indexKeys counts the index entries stored for each index id of table
// name, those of indexes no longer in the schema too.
func (h *harness) indexKeys(t *testing.T, name string) string {
	tbl := h.cat.InfoSchema().Table(h.db, name)
	if tbl == nil {
		return fmt.Sprintf("no table %s\n", name)
	}
	txn, err := h.store.Begin(kv.TxnOptions{Mode: kv.Optimistic})
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Rollback()
	var b strings.Builder
	for id := int64(1); id <= tbl.MaxIndexID; id++ {
		prefix := tablecodec.IndexPrefix(tbl.ID, id)
		it, err := txn.Iter(prefix, kv.PrefixEnd(prefix))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for it.Valid() {
			n++
			if err := it.Next(); err != nil {
				t.Fatal(err)
			}
		}
		it.Close()
		if n > 0 {
			fmt.Fprintf(&b, "index id=%d: %d entries\n", id, n)
		}
	}
	if b.Len() == 0 {
		return "no index entries\n"
	}
	return b.String()
}

// exec runs one schema change as the session does.
func (h *harness) exec(ctx context.Context, out *strings.Builder, s ast.StmtNode, mode expression.SQLMode) error {
	switch x := s.(type) {
	case *ast.UseStmt:
		if h.cat.InfoSchema().DB(x.DBName) == nil {
			return fmt.Errorf("unknown database %s", x.DBName)
		}
		h.db = x.DBName
		return nil
	case *ast.CreateDatabaseStmt:
		return h.ddl.CreateDatabase(ctx, x)
	case *ast.DropDatabaseStmt:
		return h.ddl.DropDatabase(ctx, x)
	case *ast.CreateTableStmt:
		return h.ddl.CreateTable(ctx, h.db, x)
	case *ast.DropTableStmt:
		return h.ddl.DropTable(ctx, h.db, x)
	case *ast.TruncateTableStmt:
		return h.ddl.TruncateTable(ctx, h.db, x.Table)
	case *ast.RenameTableStmt:
		return h.ddl.RenameTable(ctx, h.db, x)
	case *ast.CreateIndexStmt:
		unique := x.KeyType == ast.IndexKeyTypeUnique
		return h.ddl.CreateIndex(ctx, h.db, x.Table, x.IndexName, unique, x.IndexPartSpecifications, x.IfNotExists)
	case *ast.DropIndexStmt:
		return h.ddl.DropIndex(ctx, h.db, x.Table, x.IndexName, x.IfExists)
	case *ast.AlterTableStmt:
		res, err := h.ddl.AlterTable(ctx, h.db, x, uint32(mode))
		if res.Rows > 0 {
			fmt.Fprintf(out, "rows rewritten: %d\n", res.Rows)
		}
		for _, w := range res.Warnings {
			fmt.Fprintf(out, "warning %d: %s\n", w.Code, w.Msg)
		}
		return err
	}
	return fmt.Errorf("exec: %T is not a schema change", s)
}

// pending lists the objects of the current database's tables that are
// not public: the intermediate states of an online change.
func (h *harness) pending() string {
	var parts []string
	for _, t := range tables(h.cat.InfoSchema(), h.db) {
		for _, c := range t.Columns {
			if c.State != catalog.StatePublic {
				parts = append(parts, fmt.Sprintf("%s column %s %s", t.Name, c.Name, c.State))
			}
		}
		for _, c := range t.Hidden {
			parts = append(parts, fmt.Sprintf("%s hidden column %s %s", t.Name, c.Name, c.State))
		}
		for _, ix := range t.Indexes {
			if ix.State != catalog.StatePublic {
				parts = append(parts, fmt.Sprintf("%s index %s %s", t.Name, ix.Name, ix.State))
			}
		}
	}
	if len(parts) == 0 {
		return "all public"
	}
	return strings.Join(parts, ", ")
}

func tables(is *catalog.InfoSchema, db string) []*catalog.TableInfo {
	ts := is.Tables(db)
	sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
	return ts
}

// show renders tables as the catalog holds them.
func (h *harness) show(t *testing.T, names []string) string {
	is := h.cat.InfoSchema()
	var ts []*catalog.TableInfo
	if len(names) == 0 {
		ts = tables(is, h.db)
	}
	for _, n := range names {
		tbl := is.Table(h.db, n)
		if tbl == nil {
			return fmt.Sprintf("no table %s\n", n)
		}
		ts = append(ts, tbl)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "schema version %d\n", is.Version)
	for _, tbl := range ts {
		writeTable(&b, tbl)
	}
	return b.String()
}

func writeTable(b *strings.Builder, t *catalog.TableInfo) {
	fmt.Fprintf(b, "table %s id=%d %s/%s", t.Name, t.ID, t.Charset, t.Collate)
	switch {
	case t.PKIsHandle:
		b.WriteString(" pk-is-handle")
	case t.CommonHandle:
		b.WriteString(" clustered")
	}
	if t.AutoIncStart != 0 {
		fmt.Fprintf(b, " auto-increment-start=%d", t.AutoIncStart)
	}
	if t.Comment != "" {
		fmt.Fprintf(b, " comment=%q", t.Comment)
	}
	if t.View != nil {
		fmt.Fprintf(b, " view=%q", t.View.Select)
	}
	fmt.Fprintf(b, " max-column-id=%d max-index-id=%d\n", t.MaxColumnID, t.MaxIndexID)
	for _, c := range t.Columns {
		writeColumn(b, "column", c)
	}
	for _, c := range t.Hidden {
		writeColumn(b, "hidden column", c)
	}
	for _, ix := range t.Indexes {
		fmt.Fprintf(b, "  index %s id=%d (", ix.Name, ix.ID)
		for i, c := range ix.Columns {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(c.Name)
			if c.Length > 0 {
				fmt.Fprintf(b, "(%d)", c.Length)
			}
		}
		b.WriteString(")")
		if ix.Primary {
			b.WriteString(" primary")
		} else if ix.Unique {
			b.WriteString(" unique")
		}
		if ix.State != catalog.StatePublic {
			fmt.Fprintf(b, " state=%s", ix.State)
		}
		b.WriteString("\n")
	}
}

func writeColumn(b *strings.Builder, kind string, c *catalog.ColumnInfo) {
	fmt.Fprintf(b, "  %s %s id=%d %s", kind, c.Name, c.ID, scripttest.Type(c.Type))
	if c.Type.NotNull() {
		b.WriteString(" not null")
	}
	switch {
	case c.DefaultNow:
		b.WriteString(" default=now()")
	case c.HasDefault && c.DefaultNull:
		b.WriteString(" default=NULL")
	case c.HasDefault:
		fmt.Fprintf(b, " default=%q", c.Default)
	}
	if c.OnUpdateNow {
		b.WriteString(" on-update=now()")
	}
	if c.AutoIncrement {
		b.WriteString(" auto_increment")
	}
	if c.OriginDefault != nil {
		fmt.Fprintf(b, " origin-default=%q", *c.OriginDefault)
	}
	if c.Comment != "" {
		fmt.Fprintf(b, " comment=%q", c.Comment)
	}
	if c.State != catalog.StatePublic {
		fmt.Fprintf(b, " state=%s", c.State)
	}
	if c.ChangeFrom != 0 {
		fmt.Fprintf(b, " change-from=%d", c.ChangeFrom)
	}
	b.WriteString("\n")
}

// context plans against the newest schema.
func (h *harness) context() *planner.Context {
	return &planner.Context{IS: h.cat.InfoSchema(), DB: h.db, Stats: h.cat.Stats}
}

// insert runs one INSERT, UPDATE or DELETE in a transaction of its own,
// in MySQL 8's default (strict) sql_mode.
func (h *harness) insert(ctx context.Context, s ast.StmtNode) error {
	var run func(ec *executor.Ctx) error
	switch x := s.(type) {
	case *ast.InsertStmt:
		p, err := planner.BuildInsert(h.context(), x)
		if err != nil {
			return err
		}
		run = func(ec *executor.Ctx) error { _, err := executor.ExecInsert(ec, p); return err }
	case *ast.UpdateStmt:
		p, err := planner.BuildUpdate(h.context(), x)
		if err != nil {
			return err
		}
		run = func(ec *executor.Ctx) error { _, err := executor.ExecUpdate(ec, p); return err }
	case *ast.DeleteStmt:
		p, err := planner.BuildDelete(h.context(), x)
		if err != nil {
			return err
		}
		run = func(ec *executor.Ctx) error { _, err := executor.ExecDelete(ec, p); return err }
	default:
		return fmt.Errorf("insert: %T is not an INSERT, UPDATE or DELETE", s)
	}
	txn, err := h.store.Begin(kv.TxnOptions{Mode: kv.Optimistic})
	if err != nil {
		return err
	}
	if err := run(h.execCtx(ctx, txn, txn)); err != nil {
		txn.Rollback()
		return err
	}
	return txn.Commit(ctx)
}

// query runs a SELECT on the newest snapshot and prints its rows.
func (h *harness) query(ctx context.Context, s ast.StmtNode) (string, error) {
	x, ok := s.(ast.ResultSetNode)
	if !ok {
		return "", fmt.Errorf("query: %T is not a query", s)
	}
	q, err := planner.BuildQuery(h.context(), x)
	if err != nil {
		return "", err
	}
	ts, err := h.store.CurrentTS()
	if err != nil {
		return "", err
	}
	e, err := executor.Build(q.Plan)
	if err != nil {
		return "", err
	}
	ec := h.execCtx(ctx, h.store.Snapshot(ts), nil)
	executor.BindSubqueries(ec)
	if err := e.Open(ec); err != nil {
		e.Close()
		return "", err
	}
	defer e.Close()
	var b strings.Builder
	for {
		r, err := e.Next(ec)
		if err != nil {
			return "", err
		}
		if r == nil {
			break
		}
		for i, d := range r[:len(q.Fields)] {
			if i > 0 {
				b.WriteString("\t")
			}
			b.WriteString(d.String())
		}
		b.WriteString("\n")
	}
	if b.Len() == 0 {
		return "(no rows)\n", nil
	}
	return b.String(), nil
}

func (h *harness) execCtx(ctx context.Context, r kv.Retriever, txn kv.Txn) *executor.Ctx {
	mode, _ := expression.ParseSQLMode(defaultSQLMode)
	eval := &expression.Ctx{Context: ctx, Now: time.Date(2024, 2, 29, 12, 0, 0, 0, time.UTC), Strict: mode.Strict(),
		Mode: mode, InWrite: txn != nil}
	return &executor.Ctx{Context: ctx, Eval: eval, Reader: r, Txn: txn, Catalog: h.cat}
}
