package session

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/basalt-db/basalt/bindinfo"
	"github.com/basalt-db/basalt/clustersync"
	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// SQL plan bindings, TiDB's (package bindinfo has the pure part):
//
//	CREATE [GLOBAL | SESSION] BINDING FOR <stmt> USING <stmt with hints>
//	DROP [GLOBAL | SESSION] BINDING FOR <stmt> | FOR SQL DIGEST 'd', ...
//	SHOW [GLOBAL | SESSION] BINDINGS [WHERE ...]
//	SET BINDING ENABLED | DISABLED FOR <stmt> | FOR SQL DIGEST 'd'  (global ones)
//
// SESSION is the default scope. A session's bindings live in the session;
// global ones in mysql.bind_info (TiDB's table), which every SQL node
// loads at start and again whenever one of them changes it: on a cluster
// the node that changed it bumps /basalt/bindinfo in PD's etcd, which
// every node watches (TiDB's nodes poll the table every bind-info lease
// instead). A SELECT, UPDATE, DELETE or INSERT ... SELECT whose normalized
// digest has a binding (the session's first, then the global one) is
// planned with the binding's hints in place of its own, unless
// tidb_use_plan_baselines is off; @@last_plan_from_binding says whether
// the previous statement was. If the binding's hints fail to plan (an
// index it names was dropped), the statement is planned without them.
// DROP GLOBAL BINDING deletes the row (TiDB marks it deleted, for the
// nodes that poll).

// bindInfoTable is TiDB's mysql.bind_info.
const bindInfoTable = "CREATE TABLE IF NOT EXISTS mysql.bind_info (\n" +
	"  original_sql LONGTEXT NOT NULL,\n  bind_sql LONGTEXT NOT NULL,\n  default_db TEXT NOT NULL,\n" +
	"  status TEXT NOT NULL,\n  create_time TIMESTAMP(6) NOT NULL,\n  update_time TIMESTAMP(6) NOT NULL,\n" +
	"  charset TEXT NOT NULL,\n  collation TEXT NOT NULL,\n  source VARCHAR(10) NOT NULL DEFAULT 'unknown',\n" +
	"  sql_digest VARCHAR(64) DEFAULT NULL,\n  plan_digest VARCHAR(64) DEFAULT NULL,\n  last_used_date DATE DEFAULT NULL,\n" +
	"  INDEX time_index (update_time),\n  UNIQUE INDEX digest_index (plan_digest, sql_digest)\n" +
	") DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin COMMENT='SQL plan bindings'"

// bindRecord is one binding: a row of mysql.bind_info and of SHOW
// BINDINGS.
type bindRecord struct {
	original, bindSQL, db, status string
	created, updated              time.Time
	charset, collation, source    string
	digest                        string
	hints                         bindinfo.Hints
}

// bindTimeFormat is how bind_info's times read back.
const bindTimeFormat = "2006-01-02 15:04:05.000000"

// sessionBinds is a session's part in bindings.
type sessionBinds struct {
	byDigest map[string]*bindRecord
	// version counts changes of byDigest, for the plan cache.
	version uint64
	// used: the running statement was planned with a binding; prev:
	// the previous one was (@@last_plan_from_binding).
	used, prev bool
}

// startStatement moves the last statement's use of a binding to prev.
func (b *sessionBinds) startStatement() { b.prev, b.used = b.used, false }

// bindsVersion changes whenever a binding the session may use does.
func (s *Session) bindsVersion() uint64 { return s.binds.version + s.d.bindsVer.Load() }

// bindingFor returns the binding st is planned with, nil for none.
func (s *Session) bindingFor(st ast.StmtNode) *bindRecord {
	if st == nil {
		return nil
	}
	global := s.d.globalBinds.Load()
	if len(s.binds.byDigest) == 0 && (global == nil || len(*global) == 0) {
		return nil
	}
	if !bindinfo.Bindable(st) {
		return nil
	}
	if v, err := s.sysVar("tidb_use_plan_baselines", false); err == nil && !types.ToBool(v) {
		return nil
	}
	_, digest := bindinfo.Normalize(st, s.db)
	if b := s.binds.byDigest[digest]; b != nil {
		return b
	}
	if global != nil {
		if b := (*global)[digest]; b != nil && b.enabled() {
			return b
		}
	}
	return nil
}

// enabled: the binding is used (TiDB's older spelling is "using").
func (r *bindRecord) enabled() bool { return r.status == "enabled" || r.status == "using" }

// withBinding runs plan with the hints of st's binding in place of its
// own, if it has one, and again without them if they fail.
func (s *Session) withBinding(st ast.StmtNode, plan func() error) error {
	b := s.bindingFor(st)
	if b == nil {
		return plan()
	}
	undo, ok := b.hints.Apply(st)
	if !ok {
		return plan()
	}
	err := plan()
	undo()
	if err == nil {
		s.binds.used = true
		return nil
	}
	return plan()
}

// createBindingStmt runs CREATE [GLOBAL|SESSION] BINDING.
func (s *Session) createBindingStmt(ctx context.Context, x *ast.CreateBindingStmt, _ stmtArgs) (Result, error) {
	if x.OriginNode == nil {
		return Result{}, errno.New(errno.ErNotSupportedYet, "CREATE BINDING FROM HISTORY is not supported yet")
	}
	origN, digest := bindinfo.Normalize(x.OriginNode, s.db)
	hintN, _ := bindinfo.Normalize(x.HintedNode, s.db)
	if origN != hintN {
		return Result{}, errno.New(errno.ErUnknown, "hinted sql and origin sql don't match when hinted sql erase the hint info, after erase hint info, originSQL:%s, hintedSQL:%s", origN, hintN)
	}
	charset, _ := s.sysVar("character_set_client", false)
	collation, _ := s.sysVar("collation_connection", false)
	now := time.Now()
	r := &bindRecord{original: origN, bindSQL: bindinfo.Restore(x.HintedNode, s.db), db: s.db, status: "enabled",
		created: now, updated: now, charset: string(types.ToText(charset)), collation: string(types.ToText(collation)),
		source: "manual", digest: digest, hints: bindinfo.HintsOf(x.HintedNode)}
	if !x.GlobalScope {
		if s.binds.byDigest == nil {
			s.binds.byDigest = map[string]*bindRecord{}
		}
		s.binds.byDigest[digest] = r
		s.binds.version++
		return Result{}, nil
	}
	is := s.d.internalSession()
	defer is.Close()
	err := is.execWrite(ctx, "DELETE FROM mysql.bind_info WHERE sql_digest = "+quoteString(digest),
		fmt.Sprintf("INSERT INTO mysql.bind_info (original_sql, bind_sql, default_db, status, create_time, update_time, "+
			"charset, collation, source, sql_digest, plan_digest) VALUES (%s, %s, %s, 'enabled', %s, %s, %s, %s, 'manual', %s, '')",
			quoteString(r.original), quoteString(r.bindSQL), quoteString(r.db), quoteString(now.Format(bindTimeFormat)),
			quoteString(now.Format(bindTimeFormat)), quoteString(r.charset), quoteString(r.collation), quoteString(digest)))
	if err != nil {
		return Result{}, err
	}
	return Result{}, s.d.afterBindChange(ctx)
}

// dropBindingStmt runs DROP [GLOBAL|SESSION] BINDING.
func (s *Session) dropBindingStmt(ctx context.Context, x *ast.DropBindingStmt, _ stmtArgs) (Result, error) {
	var digests []string
	if x.OriginNode != nil {
		_, d := bindinfo.Normalize(x.OriginNode, s.db)
		digests = append(digests, d)
	}
	for _, d := range x.SQLDigests {
		if d.UserVar != nil {
			v := s.userVars[strings.ToLower(d.UserVar.Name)]
			digests = append(digests, string(types.ToText(v)))
			continue
		}
		digests = append(digests, d.StringLit)
	}
	if !x.GlobalScope {
		for _, d := range digests {
			if _, ok := s.binds.byDigest[d]; ok {
				delete(s.binds.byDigest, d)
				s.binds.version++
			}
		}
		return Result{}, nil
	}
	quoted := make([]string, len(digests))
	for i, d := range digests {
		quoted[i] = quoteString(d)
	}
	is := s.d.internalSession()
	defer is.Close()
	if err := is.execWrite(ctx, "DELETE FROM mysql.bind_info WHERE sql_digest IN ("+strings.Join(quoted, ", ")+")"); err != nil {
		return Result{}, err
	}
	return Result{}, s.d.afterBindChange(ctx)
}

// setBindingStmt runs SET BINDING ENABLED | DISABLED, which TiDB applies
// to global bindings only. With none to change (none, or already in that
// status), TiDB's warning.
func (s *Session) setBindingStmt(ctx context.Context, x *ast.SetBindingStmt, _ stmtArgs) (Result, error) {
	digest := x.SQLDigest
	if x.OriginNode != nil {
		_, digest = bindinfo.Normalize(x.OriginNode, s.db)
	}
	status := "enabled"
	if x.BindingStatusType == ast.BindingStatusTypeDisabled {
		status = "disabled"
	}
	var found *bindRecord
	if g := s.d.globalBinds.Load(); g != nil {
		found = (*g)[digest]
	}
	if found == nil || found.status == status {
		// TiDB's: a status changes from enabled to disabled or back.
		s.warn(errno.ErUnknown, "There are no bindings can be set the status. Please check the SQL text")
		return Result{}, nil
	}
	is := s.d.internalSession()
	defer is.Close()
	err := is.execWrite(ctx, fmt.Sprintf("UPDATE mysql.bind_info SET status = %s, update_time = %s WHERE sql_digest = %s",
		quoteString(status), quoteString(time.Now().Format(bindTimeFormat)), quoteString(digest)))
	if err != nil {
		return Result{}, err
	}
	return Result{}, s.d.afterBindChange(ctx)
}

// showBindings is SHOW [GLOBAL|SESSION] BINDINGS: TiDB's columns, the
// latest update first.
func (s *Session) showBindings(ctx context.Context, x *ast.ShowStmt) (Result, error) {
	var list []*bindRecord
	if x.GlobalScope {
		if g := s.d.globalBinds.Load(); g != nil {
			for _, r := range *g {
				list = append(list, r)
			}
		}
	} else {
		for _, r := range s.binds.byDigest {
			list = append(list, r)
		}
	}
	sort.Slice(list, func(i, j int) bool {
		if !list[i].updated.Equal(list[j].updated) {
			return list[i].updated.After(list[j].updated)
		}
		return list[i].digest < list[j].digest
	})
	cols := textFields("Original_sql", "Bind_sql", "Default_db", "Status", "Create_time", "Update_time",
		"Charset", "Collation", "Source", "Sql_digest", "Plan_digest")
	var data [][]types.Datum
	for _, r := range list {
		data = append(data, []types.Datum{str(r.original), str(r.bindSQL), str(r.db), str(r.status),
			str(r.created.Format(bindTimeFormat)), str(r.updated.Format(bindTimeFormat)), str(r.charset),
			str(r.collation), str(r.source), str(r.digest), str("")})
	}
	data, err := s.showWhere(ctx, x.Where, cols, data)
	if err != nil {
		return Result{}, err
	}
	return Result{Rows: &staticRows{fields: cols, data: data}}, nil
}

// bootstrapBindings creates mysql.bind_info if it is missing and loads
// the global bindings.
func (d *Driver) bootstrapBindings(ctx context.Context) error {
	if d.catalog.InfoSchema().Table(aclDB, "bind_info") == nil {
		s := d.internalSession()
		_, err := s.execInternal(ctx, bindInfoTable)
		s.Close()
		if err != nil && !isCode(err, errno.ErTableExists) {
			return fmt.Errorf("creating mysql.bind_info: %w", err)
		}
	}
	return d.loadBindings(ctx)
}

// loadBindings reads mysql.bind_info into a new cache and publishes it.
func (d *Driver) loadBindings(ctx context.Context) error {
	s := d.internalSession()
	defer s.Close()
	rows, err := s.execInternal(ctx, "SELECT original_sql, bind_sql, default_db, status, create_time, update_time, "+
		"charset, collation, source, sql_digest FROM mysql.bind_info")
	if err != nil {
		return err
	}
	m := make(map[string]*bindRecord, len(rows))
	for _, row := range rows {
		r := &bindRecord{original: row[0], bindSQL: row[1], db: row[2], status: row[3],
			charset: row[6], collation: row[7], source: row[8], digest: row[9]}
		if r.status == "deleted" {
			continue
		}
		r.created, _ = time.ParseInLocation(bindTimeFormat, row[4], time.Local)
		r.updated, _ = time.ParseInLocation(bindTimeFormat, row[5], time.Local)
		stmts, _, err := s.parser.ParseSQL(r.bindSQL)
		if err != nil || len(stmts) != 1 {
			slog.Default().Warn("mysql.bind_info holds a binding that does not parse; it is left out", "bind_sql", r.bindSQL, "err", err)
			continue
		}
		r.hints = bindinfo.HintsOf(stmts[0])
		m[r.digest] = r
	}
	d.globalBinds.Store(&m)
	d.bindsVer.Add(1)
	return nil
}

// afterBindChange reloads the global bindings after this node changed
// them and, on a cluster, tells the other nodes.
func (d *Driver) afterBindChange(ctx context.Context) error {
	if err := d.loadBindings(ctx); err != nil {
		return err
	}
	if d.sync == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := clustersync.Notify(ctx, d.sync.Client(), clustersync.BindInfoKey); err != nil {
		return errno.New(errno.ErUnknown, "%v", err)
	}
	return nil
}

// reloadBindings takes the bindings another node stored (its own
// notification comes back too).
func (d *Driver) reloadBindings() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := d.loadBindings(ctx); err != nil {
		slog.Default().Warn("cannot reload mysql.bind_info after another SQL node changed it", "err", err)
	}
}
