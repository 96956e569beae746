package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/ddl"
	"github.com/basalt-db/basalt/ddljob"
	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// DDL jobs on a cluster (package ddljob). A client's schema change
// (CREATE/DROP DATABASE, CREATE/DROP/TRUNCATE/RENAME TABLE, CREATE/DROP
// INDEX, ALTER TABLE) is queued as a job with the session state it runs
// with; the DDL owner, maybe another node, runs it in an internal session
// of its own (runJob) through the same handlers, and the client gets the
// job's result, warnings and error as if its own node had run it. Views
// and triggers, which carry the client's account as their definer, and
// the driver's own statements still run where they are issued, under the
// same schema-change lock. On an embedded store nothing is queued.

// jobVars are the session variables a schema change reads, carried with
// its job to the node that runs it.
var jobVars = []string{"sql_mode", "foreign_key_checks", "time_zone", "character_set_server", "collation_server",
	"character_set_client", "character_set_connection", "collation_connection", "explicit_defaults_for_timestamp",
	"div_precision_increment", "default_week_format"}

// queued makes a DDL handler queue its statement as a job when the
// session's schema changes go to the cluster's DDL owner.
func queued[T ast.StmtNode](run func(s *Session, ctx context.Context, x T, a stmtArgs) (Result, error)) func(s *Session, ctx context.Context, x T, a stmtArgs) (Result, error) {
	return func(s *Session, ctx context.Context, x T, a stmtArgs) (Result, error) {
		if !s.queuesDDL(x) {
			return run(s, ctx, x, a)
		}
		return s.submitDDL(ctx, x)
	}
}

// queuesDDL reports whether st goes to the DDL job queue: on a cluster,
// from a client's session (not the driver's internal ones, which also run
// the owner's jobs), unless it is DROP VIEW or a temporary table's.
func (s *Session) queuesDDL(st ast.StmtNode) bool {
	if s.d.jobs == nil || s.subject == nil || st.Text() == "" {
		return false
	}
	switch x := st.(type) {
	case *ast.DropTableStmt:
		return !x.IsView && x.TemporaryKeyword == ast.TemporaryNone
	case *ast.CreateTableStmt:
		return x.TemporaryKeyword == ast.TemporaryNone
	}
	return true
}

// submitDDL queues st as a job after the implicit commit and returns its
// outcome once the owner ran it.
func (s *Session) submitDDL(ctx context.Context, st ast.StmtNode) (Result, error) {
	if err := s.commit(ctx); err != nil {
		return Result{}, err
	}
	j := &catalog.Job{Query: st.Text(), CurrentDB: s.db, Vars: map[string]string{}}
	j.Type, j.DBName, j.TableName = jobTarget(st, s.db)
	is := s.d.catalog.InfoSchema()
	if t := is.Table(j.DBName, j.TableName); t != nil {
		j.SchemaID, j.TableID = t.DBID, t.ID
	} else if db := is.DB(j.DBName); db != nil {
		j.SchemaID = db.ID
	}
	for _, name := range jobVars {
		if v, ok := s.vars[name]; ok {
			j.Vars[name] = v.String()
		}
	}
	done, err := s.d.jobs.Submit(ctx, j)
	if err != nil {
		return Result{}, err
	}
	// The owner returned once every node loaded the change; this one
	// reads it now in any case.
	if _, err := s.d.catalog.Reload(ctx); err != nil {
		return Result{}, err
	}
	for _, w := range done.Warnings {
		s.warnings = append(s.warnings, &errno.Error{Code: w.Code, State: w.State, Msg: w.Msg, Note: w.Note})
	}
	if done.Error != nil {
		return Result{}, &errno.Error{Code: done.Error.Code, State: done.Error.State, Msg: done.Error.Msg}
	}
	if x, ok := st.(*ast.DropDatabaseStmt); ok && strings.EqualFold(s.db, x.Name.O) {
		s.db = ""
	}
	return Result{AffectedRows: done.RowCount, Info: done.Info}, nil
}

// jobTarget is TiDB's job type of st and the database and table it
// names.
func jobTarget(st ast.StmtNode, currentDB string) (typ, db, table string) {
	tn := func(t *ast.TableName) (string, string) {
		if t.Schema.O != "" {
			return t.Schema.O, t.Name.O
		}
		return currentDB, t.Name.O
	}
	switch x := st.(type) {
	case *ast.CreateDatabaseStmt:
		return "create schema", x.Name.O, ""
	case *ast.DropDatabaseStmt:
		return "drop schema", x.Name.O, ""
	case *ast.CreateTableStmt:
		db, table = tn(x.Table)
		return "create table", db, table
	case *ast.DropTableStmt:
		db, table = tn(x.Tables[0])
		return "drop table", db, table
	case *ast.TruncateTableStmt:
		db, table = tn(x.Table)
		return "truncate table", db, table
	case *ast.RenameTableStmt:
		db, table = tn(x.TableToTables[0].OldTable)
		return "rename table", db, table
	case *ast.CreateIndexStmt:
		db, table = tn(x.Table)
		return "add index", db, table
	case *ast.DropIndexStmt:
		db, table = tn(x.Table)
		return "drop index", db, table
	case *ast.AlterTableStmt:
		db, table = tn(x.Table)
		if len(x.Specs) != 1 {
			return "alter table multi-schema change", db, table
		}
		return alterType(x.Specs[0]), db, table
	}
	return "unknown", currentDB, ""
}

func alterType(spec *ast.AlterTableSpec) string {
	switch spec.Tp {
	case ast.AlterTableAddColumns:
		if len(spec.NewConstraints) > 0 {
			return "alter table multi-schema change"
		}
		return "add column"
	case ast.AlterTableDropColumn:
		return "drop column"
	case ast.AlterTableModifyColumn, ast.AlterTableChangeColumn:
		return "modify column"
	case ast.AlterTableRenameColumn:
		return "rename column"
	case ast.AlterTableAlterColumn:
		return "set default value"
	case ast.AlterTableAddConstraint:
		switch spec.Constraint.Tp {
		case ast.ConstraintForeignKey:
			return "add foreign key"
		case ast.ConstraintCheck:
			return "add check constraint"
		case ast.ConstraintPrimaryKey:
			return "add primary key"
		}
		return "add index"
	case ast.AlterTableDropIndex:
		return "drop index"
	case ast.AlterTableDropPrimaryKey:
		return "drop primary key"
	case ast.AlterTableRenameIndex:
		return "rename index"
	case ast.AlterTableRenameTable:
		return "rename table"
	case ast.AlterTableDropForeignKey:
		return "drop foreign key"
	case ast.AlterTableOption:
		return "modify table options"
	}
	return "alter table"
}

// runJob runs job j's statement in an internal session with the job's
// session state, and records its outcome in j: the owner's Config.Run.
func (d *Driver) runJob(ctx context.Context, j *catalog.Job) {
	s := d.internalSession()
	defer s.Close()
	defer func() {
		// A bug in a handler fails the job, not the owner (which every
		// other node would then inherit, with the job).
		if r := recover(); r != nil {
			slog.Error("ddljob: DDL job panicked", "job", j.ID, "query", j.Query, "panic", r, "stack", string(debug.Stack()))
			j.Error = &catalog.JobError{Code: errno.ErUnknown, State: "HY000", Msg: fmt.Sprintf("internal error running the DDL job: %v", r)}
		}
	}()
	fail := func(err error) {
		var me *errno.Error
		if !errors.As(mapError(err, d.catalog.InfoSchema()), &me) {
			me = errno.New(errno.ErUnknown, "%v", err)
		}
		j.Error = &catalog.JobError{Code: me.Code, State: me.SQLState(), Msg: me.Msg}
	}
	s.db = j.CurrentDB
	for name, v := range j.Vars {
		if err := s.setSysVar(name, types.NewString(v), false); err != nil {
			fail(fmt.Errorf("job %d: setting %s: %w", j.ID, name, err))
			return
		}
	}
	s.syncParserMode()
	stmts, _, err := s.parser.ParseSQL(j.Query)
	if err == nil && len(stmts) != 1 {
		err = fmt.Errorf("job %d holds %d statements", j.ID, len(stmts))
	}
	if err != nil {
		fail(err)
		return
	}
	if !s.fkChecks() {
		ctx = ddl.WithoutFKChecks(ctx)
	}
	res, err := s.dispatch(ctx, stmts[0], nil, nil)
	if res.Rows != nil {
		res.Rows.Close()
	}
	for _, w := range s.warnings {
		j.Warnings = append(j.Warnings, catalog.JobError{Code: w.Code, State: w.SQLState(), Msg: w.Msg, Note: w.Note})
	}
	if err != nil {
		fail(err)
		return
	}
	j.RowCount, j.Info = res.AffectedRows, res.Info
}

// recoverJob takes away what an interrupted job left: the owner's
// Config.Recover.
func (d *Driver) recoverJob(ctx context.Context, j *catalog.Job) error {
	_, err := d.ddl.RecoverSchema(ctx, j.DroppedTables, j.DroppedIndexes)
	return err
}

// jobTargetExists reports whether what a drop job drops is still there:
// the owner's Config.Exists.
func (d *Driver) jobTargetExists(j *catalog.Job) bool {
	is := d.catalog.InfoSchema()
	stmts, _, err := parser.New().ParseSQL(j.Query)
	if err != nil || len(stmts) != 1 {
		return false
	}
	switch x := stmts[0].(type) {
	case *ast.DropDatabaseStmt:
		return is.DB(x.Name.O) != nil
	case *ast.DropTableStmt:
		for _, tn := range x.Tables {
			db := tn.Schema.O
			if db == "" {
				db = j.CurrentDB
			}
			if is.Table(db, tn.Name.O) != nil {
				return true
			}
		}
		return false
	case *ast.TruncateTableStmt:
		// The old data goes with the recovery; the table is new either way.
		return false
	case *ast.DropIndexStmt:
		t := is.Table(j.DBName, j.TableName)
		return t != nil && t.FindIndex(x.IndexName) != nil
	case *ast.AlterTableStmt:
		t := is.Table(j.DBName, j.TableName)
		if t == nil || len(x.Specs) != 1 {
			return false
		}
		switch spec := x.Specs[0]; spec.Tp {
		case ast.AlterTableDropColumn:
			return t.FindColumn(spec.OldColumnName.Name.O) != nil
		case ast.AlterTableDropIndex:
			return t.FindIndex(spec.Name) != nil
		case ast.AlterTableDropPrimaryKey:
			return t.PrimaryKey() != nil
		}
	}
	return false
}

// startJobs starts the node's part in the DDL job queue, on a cluster.
func (d *Driver) startJobs() {
	d.jobs = ddljob.Start(ddljob.Config{
		Client:  d.sync.Client(),
		ID:      d.sync.ID(),
		TTL:     d.sync.Lease(),
		Store:   d.store,
		Catalog: d.catalog,
		Run:     d.runJob,
		Recover: d.recoverJob,
		Exists:  d.jobTargetExists,
		Logger:  slog.Default(),
	})
}
