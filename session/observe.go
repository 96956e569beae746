package session

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	"github.com/basalt-db/basalt/executor"
	"github.com/basalt-db/basalt/metrics"
	"github.com/basalt-db/basalt/planner"
	"github.com/basalt-db/basalt/slowlog"
	"github.com/basalt-db/basalt/stmtsummary"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// What the session records of each statement it runs, for the slow query
// log (package slowlog, tidb_slow_log_threshold) and the statement summary
// (package stmtsummary, tidb_enable_stmt_summary).
//
// A statement's time runs from the start of parsing its query to the
// moment its last row was handed to the client (ResultWriter.WriteResult
// returned), as a client sees it. The handlers fill in what only they
// know (the planning time, the transaction's start timestamp) in s.obs.
//
// The hot path is kept cheap: with both off nothing is recorded; the
// digest, which lexes the statement again, is computed once per prepared
// statement, and for a text statement only when the summary is on or the
// statement is slow, and then once per shape (the text without its
// literals, stmtsummary.DigestCache); the plan digest only for slow
// statements.

// stmtObs is what the running statement's handler tells the recorder.
type stmtObs struct {
	compile    time.Duration // planning, when the statement planned
	txnStartTS uint64        // the start timestamp it read or wrote at
	fromCache  bool          // its plan came from the plan cache
	// prevFromCache is fromCache of the statement before this one:
	// TiDB's @@last_plan_from_cache, read by the statement after.
	prevFromCache bool
	plan          planner.Plan // a query's plan, for Plan_digest
	keys          int64        // entries its reads found (Process_keys)
	read          bool         // it read from the store: keys is known
}

// readKeys adds what a statement's executor context read.
func (o *stmtObs) readKeys(ec *executor.Ctx) {
	o.keys += ec.KeysRead
	o.read = true
}

// digestOf is a statement's normalized text and digest.
type digestOf struct {
	normalized, digest string
}

func computeDigest(text string) digestOf {
	n, d := stmtsummary.NormalizeDigest(text)
	return digestOf{n, d}
}

// textDigest is a text statement's digestOf, through the session's
// cache of digests by shape: statements that differ only in their
// literals (sysbench's INSERTs) are normalized once.
func (s *Session) textDigest(text string) digestOf {
	n, d := s.digests.NormalizeDigest(text)
	return digestOf{n, d}
}

// observing reports whether statements are recorded now.
func (s *Session) observing() bool {
	h := s.hotVar()
	return h.slowLog || h.stmtSummary
}

// countedRows counts the rows the client reads.
type countedRows struct {
	RecordSet
	n uint64
}

func (r *countedRows) Next() ([]types.Datum, error) {
	row, err := r.RecordSet.Next()
	if row != nil {
		r.n++
	}
	return row, err
}

// execute runs one statement and hands its result to w, recording it
// when observing. start is when its query's parsing began (zero: now),
// parse how long that took (0 for the second statement of a query and
// after, and for a prepared statement); ps is the
// prepared statement it runs as, nil for a text statement.
func (s *Session) execute(ctx context.Context, st ast.StmtNode, start time.Time, parse time.Duration, params []types.Datum,
	cached *cachedPlan, ps *Stmt, w ResultWriter, more bool) error {
	if start.IsZero() {
		start = time.Now()
	}
	if !s.observing() {
		res, err := s.run(ctx, st, params, cached, ps)
		if err == nil {
			err = w.WriteResult(res, more)
		}
		s.observeQuery(start, err)
		return err
	}
	s.obs = stmtObs{fromCache: s.obs.fromCache} // run keeps it for @@last_plan_from_cache
	s.mem.Reset(s.memQuota, nil)                // Mem_max is this statement's
	res, err := s.run(ctx, st, params, cached, ps)
	var counted *countedRows
	if err == nil {
		if res.Rows != nil {
			// The session's own: the rows are read to the end and
			// closed before WriteResult returns, and statements run one
			// at a time.
			s.counted = countedRows{RecordSet: res.Rows}
			counted = &s.counted
			res.Rows = counted
		}
		err = w.WriteResult(res, more)
	}
	rec := stmtRecord{st: st, start: start, parse: parse, params: params, ps: ps, err: err, affected: res.AffectedRows}
	if counted != nil {
		rec.resultRows = counted.n
	}
	s.observeQuery(start, err)
	s.record(&rec)
	return err
}

// observeQuery records in the metrics a statement that started at start
// and has sent its result (or failed with err): its latency by type, as
// TiDB's tidb_server_handle_query_duration_seconds does, up to its last
// row sent; a failure by its MySQL code.
func (s *Session) observeQuery(start time.Time, err error) {
	metrics.ObserveQuery(s.stmtType, time.Since(start))
	if err != nil {
		observeError(err)
	}
}

// stmtRecord is one statement that ended.
type stmtRecord struct {
	st         ast.StmtNode
	start      time.Time
	parse      time.Duration
	params     []types.Datum
	ps         *Stmt
	err        error
	affected   uint64
	resultRows uint64
}

// record writes r to the slow log if it was slow and adds it to the
// statement summary.
func (s *Session) record(r *stmtRecord) {
	end := time.Now()
	latency := end.Sub(r.start)
	h := s.hotVar()
	slow := h.slowLog && s.d.slowLog != nil && latency >= h.slowThreshold
	if !slow && !h.stmtSummary {
		return
	}
	var dg digestOf
	if r.ps != nil {
		if r.ps.digest == nil {
			r.ps.digest = &digestOf{}
			*r.ps.digest = computeDigest(r.st.Text())
		}
		dg = *r.ps.digest
	} else if t := s.textTemplateOf(r.st); t != nil {
		// One digest per shape (text_parse.go).
		if t.digest == nil {
			t.digest = &digestOf{}
			*t.digest = s.textDigest(r.st.Text())
		}
		dg = *t.digest
	} else {
		dg = s.textDigest(r.st.Text())
	}
	text := secureText(r.st)
	txnTS := s.obs.txnStartTS
	if s.txn != nil {
		txnTS = s.txn.StartTS()
	}
	mem := s.mem.Peak()
	if slow {
		q := text
		if len(r.params) > 0 {
			q = strings.TrimRight(strings.TrimSpace(q), ";") + " [arguments: " + formatArgs(r.params) + "]"
		}
		if n := int(h.queryLogMaxLen); n > 0 && len(q) > n {
			q = q[:n] + "(len:" + strconv.Itoa(len(q)) + ")"
		}
		e := slowlog.Entry{Time: end, TxnStartTS: txnTS, User: s.info.User, Host: s.info.Host, ConnID: uint64(s.info.ID),
			QueryTime: latency, ParseTime: r.parse, CompileTime: s.obs.compile,
			ProcessTime: max(latency-r.parse-s.obs.compile, 0), TotalKeys: -1, ProcessKeys: -1,
			DB: s.db, Digest: dg.digest, MemMax: mem, Prepared: r.ps != nil, PlanFromCache: s.obs.fromCache,
			ResultRows: int64(r.resultRows), Succ: r.err == nil, Query: q}
		if s.obs.plan != nil {
			e.PlanDigest = planDigest(s.obs.plan)
		}
		if s.obs.read {
			e.ProcessKeys = s.obs.keys
		}
		s.d.slowLog.Write(&e) //nolint:errcheck // a full disk must not fail the statement
	}
	if h.stmtSummary {
		if n := int(h.stmtSummaryMaxSQL); n > 0 && len(text) > n {
			text = text[:n] + "(len:" + strconv.Itoa(len(text)) + ")"
		}
		s.d.summary.Add(&stmtsummary.Record{Schema: s.db, Digest: dg.digest, DigestText: dg.normalized,
			StmtType: ast.GetStmtLabel(r.st), SampleText: text, User: s.info.User,
			Latency: latency, ParseLatency: r.parse, CompileLatency: s.obs.compile,
			AffectedRows: r.affected, ResultRows: r.resultRows, ProcessedKeys: s.obs.keys, Mem: mem, Warnings: len(s.warnings),
			Err: r.err != nil, PlanFromCache: s.obs.fromCache, Prepared: r.ps != nil, End: end, Session: s.info.ID})
	}
}

// secureText is the statement's text with passwords left out (CREATE
// USER, ALTER USER, SET PASSWORD, GRANT ... IDENTIFIED BY), as TiDB
// writes them to its logs.
func secureText(st ast.StmtNode) string {
	switch x := st.(type) {
	case *ast.CreateUserStmt, *ast.AlterUserStmt, *ast.SetPwdStmt, *ast.GrantStmt:
		return x.(ast.SensitiveStmtNode).SecureText()
	}
	return st.Text()
}

// formatArgs writes a prepared statement's parameters as TiDB's slow log
// does: the value alone, or several in parentheses.
func formatArgs(params []types.Datum) string {
	parts := make([]string, len(params))
	for i, p := range params {
		switch {
		case p.IsNull():
			parts[i] = "NULL"
		case p.Kind() == types.KindString:
			parts[i] = strconv.Quote(p.String())
		default:
			parts[i] = p.String()
		}
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// planDigest hashes a plan's shape: its operators, their nesting, and the
// tables and indexes they read, not the constants (two executions of one
// prepared statement share it).
func planDigest(p planner.Plan) string {
	h := sha256.New()
	for _, r := range planner.Explain(p) {
		h.Write([]byte(r.ID))
		for part := range strings.SplitSeq(r.Info, ", ") {
			if strings.HasPrefix(part, "table:") || strings.HasPrefix(part, "index:") {
				h.Write([]byte{' '})
				h.Write([]byte(part))
			}
		}
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// readObserveVars reads the variables of the slow log and the summary
// into the hot cache.
func (s *Session) readObserveVars(h *hotVars) {
	on := func(name string, global bool) bool {
		v, err := s.sysVar(name, global)
		return err == nil && types.ToBool(v)
	}
	num := func(name string, global bool) int64 {
		v, _ := s.sysVar(name, global)
		n, _, _ := types.ToInt(v)
		return n
	}
	h.slowLog = s.d.slowLog != nil && on("tidb_enable_slow_log", false)
	h.slowThreshold = time.Duration(num("tidb_slow_log_threshold", false)) * time.Millisecond
	h.queryLogMaxLen = num("tidb_query_log_max_len", false)
	h.stmtSummary = on("tidb_enable_stmt_summary", true)
	h.stmtSummaryMaxSQL = num("tidb_stmt_summary_max_sql_length", true)
}

// configureSummary applies the global variables of the statement
// summary, which s has just changed. Turning it off forgets what it held,
// as TiDB does.
func (d *Driver) configureSummary(s *Session) {
	num := func(name string) int64 {
		v, _ := s.sysVar(name, true)
		n, _, _ := types.ToInt(v)
		return n
	}
	d.summary.SetConfig(stmtsummary.Config{
		RefreshInterval: time.Duration(num("tidb_stmt_summary_refresh_interval")) * time.Second,
		HistorySize:     int(num("tidb_stmt_summary_history_size")),
		MaxStmtCount:    int(num("tidb_stmt_summary_max_stmt_count")),
	})
	if v, err := s.sysVar("tidb_enable_stmt_summary", true); err == nil && !types.ToBool(v) {
		d.summary.Clear()
	}
}

// slowQueryRows reads the slow log for information_schema.SLOW_QUERY: every
// file of it, rotated ones first.
func (s *Session) slowQueryRows() ([][]types.Datum, error) {
	if s.d.slowLog == nil {
		return nil, nil
	}
	entries, err := s.d.slowLog.ReadAll()
	if err != nil {
		return nil, err
	}
	loc := s.evalCtx(context.Background(), nil).Location()
	u64 := func(n uint64) types.Datum { return types.NewUint(n) }
	i64 := func(n int64) types.Datum {
		if n < 0 {
			return types.Null
		}
		return types.NewUint(uint64(n))
	}
	b := func(v bool) types.Datum { return types.NewBool(v) }
	out := make([][]types.Datum, 0, len(entries))
	for _, e := range entries {
		out = append(out, []types.Datum{timeDatum(e.Time, loc), u64(e.TxnStartTS), str(e.User), str(e.Host),
			u64(e.ConnID), types.NewFloat(e.QueryTime.Seconds()), types.NewFloat(e.ParseTime.Seconds()),
			types.NewFloat(e.CompileTime.Seconds()), types.NewFloat(e.ProcessTime.Seconds()), i64(e.TotalKeys),
			i64(e.ProcessKeys), str(e.DB), b(e.IsInternal), str(e.Digest), i64(e.MemMax), i64(e.ResultRows),
			b(e.Prepared), b(e.PlanFromCache), b(e.Succ), str(e.PlanDigest), str(e.Query)})
	}
	return out, nil
}

// stmtSummaryRows is information_schema.STATEMENTS_SUMMARY, or with
// history STATEMENTS_SUMMARY_HISTORY.
func (s *Session) stmtSummaryRows(history bool) [][]types.Datum {
	now := time.Now()
	var stats []stmtsummary.Stats
	if history {
		stats = s.d.summary.History(now)
	} else {
		stats = s.d.summary.Current(now)
	}
	loc := s.evalCtx(context.Background(), nil).Location()
	ns := func(d time.Duration) types.Datum { return types.NewUint(uint64(max(d, 0))) }
	u64 := func(n uint64) types.Datum { return types.NewUint(n) }
	out := make([][]types.Datum, 0, len(stats))
	for i := range stats {
		st := &stats[i]
		n := max(st.ExecCount, 1)
		digest, text := nullable(st.Digest, st.Digest != ""), nullable(st.DigestText, st.Digest != "")
		out = append(out, []types.Datum{timeDatum(st.Begin, loc), timeDatum(st.End, loc), nullable(st.StmtType, st.StmtType != ""),
			str(st.Schema), digest, text, str(st.SampleUser), u64(st.ExecCount), u64(st.SumErrors), u64(st.SumWarnings),
			ns(st.SumLatency), ns(st.MaxLatency), ns(st.MinLatency), ns(st.AvgLatency()), ns(st.P95Latency()),
			ns(st.SumParse / time.Duration(n)), ns(st.MaxParse), ns(st.SumCompile / time.Duration(n)), ns(st.MaxCompile),
			u64(uint64(max(st.SumMem, 0)) / n), u64(uint64(max(st.MaxMem, 0))),
			u64(uint64(max(st.SumProcessedKeys, 0)) / n), u64(uint64(max(st.MaxProcessedKeys, 0))), u64(st.SumAffectedRows),
			types.NewFloat(float64(st.SumAffectedRows) / float64(n)), types.NewFloat(float64(st.SumResultRows) / float64(n)),
			u64(st.MaxResultRows), u64(st.MinResultRows), types.NewBool(st.Prepared), u64(st.PlanCacheHits),
			timeDatum(st.FirstSeen, loc), timeDatum(st.LastSeen, loc), str(st.SampleText), str(st.PlanDigest)})
	}
	return out
}

// timeDatum is t as a DATETIME(6) in loc.
func timeDatum(t time.Time, loc *time.Location) types.Datum {
	if t.IsZero() {
		return types.Null
	}
	return types.NewTime(types.FromGoTime(t.In(loc)), types.TimeDatetime, 6)
}
