package session

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/executor"
	"github.com/basalt-db/basalt/planner"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// EXPLAIN ANALYZE: the statement runs (a write writes, as in TiDB and
// MySQL), its rows are read and thrown away, and each operator of the
// plan is shown with what it did beside what the planner expected, in
// TiDB's columns: id, estRows, actRows, task, access object, execution
// info, operator info, memory, disk.
//
// Every operator runs in the SQL layer (task "root"); "access object" is
// the table and index an operator reads, cut out of the operator info.
// Times include the operator's children's, as TiDB's do; loops counts the
// calls of the operator's Next. memory is what the operators that hold
// rows (sorts, aggregations, DISTINCT, joins) counted against the
// statement's quota; Basalt never spills, so disk is N/A.

var explainAnalyzeFields = textFields("id", "estRows", "actRows", "task", "access object", "execution info",
	"operator info", "memory", "disk")

func (s *Session) explainAnalyze(ctx context.Context, x *ast.ExplainStmt) (Result, error) {
	stats := executor.NewRuntimeStats()
	var plan planner.Plan
	switch st := x.Stmt.(type) {
	case *ast.SelectStmt, *ast.SetOprStmt:
		p, err := s.analyzeQuery(ctx, st.(ast.ResultSetNode), stats)
		if err != nil {
			return Result{}, err
		}
		plan = p
	case *ast.UpdateStmt, *ast.DeleteStmt, *ast.InsertStmt:
		// Planned here, so that the plan shown is the one that runs:
		// execDML takes it as a cached plan of the schema it plans under.
		is, gen := s.schema(), s.d.catalog.StatsGeneration()
		s.stmtIS = is
		p, err := s.planDML(st)
		s.stmtIS = nil
		if err != nil {
			return Result{}, err
		}
		s.rtStats = stats
		_, err = s.execDML(ctx, st, nil, &cachedPlan{version: is.Version, stats: gen, dml: p,
			binds: s.bindsVersion(), fromBinding: s.binds.used})
		s.rtStats = nil
		if err != nil {
			return Result{}, err
		}
		switch {
		case p.update != nil:
			plan = p.update.Source
		case p.del != nil:
			plan = p.del.Source
		case p.multiUpdate != nil:
			plan = p.multiUpdate.Source
		case p.multiDelete != nil:
			plan = p.multiDelete.Source
		case p.insert != nil && p.insert.Select != nil:
			plan = p.insert.Select.Plan
		default:
			return Result{Rows: &staticRows{fields: explainAnalyzeFields}}, nil // INSERT ... VALUES reads nothing
		}
	default:
		return Result{}, errno.New(errno.ErNotSupportedYet, "EXPLAIN ANALYZE of this statement is not supported yet")
	}
	var data [][]types.Datum
	for _, r := range planner.Explain(plan) {
		access, info := splitAccess(r.Info)
		act, exec, mem := "0", "N/A", "N/A"
		if st := stats.Of(r.Op); st != nil {
			act = strconv.FormatInt(st.Rows, 10)
			exec = "time:" + formatDuration(st.Time) + ", loops:" + strconv.FormatInt(st.Loops, 10)
			if st.Opens > 1 {
				exec += ", opens:" + strconv.FormatInt(st.Opens, 10)
			}
			if st.Mem >= 0 {
				mem = formatBytes(st.Mem)
			}
		}
		data = append(data, []types.Datum{str(r.ID), str(r.EstRows), str(act), str("root"), str(access), str(exec),
			str(info), str(mem), str("N/A")})
	}
	return Result{Rows: &staticRows{fields: explainAnalyzeFields, data: data}}, nil
}

// analyzeQuery runs a query to its end with its operators counted in
// stats, and returns its plan.
func (s *Session) analyzeQuery(ctx context.Context, node ast.ResultSetNode, stats *executor.RuntimeStats) (planner.Plan, error) {
	is, release, err := s.pinStmt()
	if err != nil {
		return nil, err
	}
	defer release()
	s.stmtIS = is
	var q *planner.Query
	st, _ := node.(ast.StmtNode) // a SELECT or a UNION
	err = s.withBinding(st, func() (err error) {
		q, err = planner.BuildQuery(s.planContext(), node)
		return err
	})
	s.stmtIS = nil
	if err != nil {
		return nil, err
	}
	sel, _ := node.(*ast.SelectStmt)
	forUpdate := sel != nil && sel.LockInfo != nil && sel.LockInfo.LockType != ast.SelectLockNone
	reader, ts, err := s.readView(ctx, forUpdate, readsTables(node))
	if err != nil {
		return nil, err
	}
	ctx, cancel := s.selectContext(ctx, sel)
	if cancel != nil {
		defer cancel()
	}
	ex, err := executor.BuildAnalyzed(q.Plan, stats)
	if err != nil {
		return nil, err
	}
	ec := &executor.Ctx{Context: ctx, Eval: s.evalCtx(ctx, nil), Reader: reader, ForUpdateTS: ts,
		LockWait: s.lockWait(), Catalog: s.d.catalog, MemTable: s.memTableRows, Mem: s.stmtMem(nil)}
	if forUpdate && s.txn != nil {
		ec.Txn, ec.SelectForUpdate = s.txn, true
	}
	executor.BindSubqueries(ec)
	defer ex.Close()
	if err := ex.Open(ec); err != nil {
		return nil, err
	}
	for {
		row, err := ex.Next(ec)
		if err != nil {
			return nil, err
		}
		if row == nil {
			break
		}
	}
	s.warnings = append(s.warnings, ec.Eval.Warnings...)
	return q.Plan, nil
}

// splitAccess cuts the table and index an operator reads out of its
// operator info.
func splitAccess(info string) (access, rest string) {
	var a, r []string
	for part := range strings.SplitSeq(info, ", ") {
		if strings.HasPrefix(part, "table:") || strings.HasPrefix(part, "index:") {
			a = append(a, part)
		} else if part != "" {
			r = append(r, part)
		}
	}
	return strings.Join(a, ", "), strings.Join(r, ", ")
}

// formatDuration writes d as TiDB's execution info does: in the largest
// unit that keeps it at least 1, with at most two decimals (1.23ms,
// 523.4µs).
func formatDuration(d time.Duration) string {
	units := []struct {
		name string
		size time.Duration
	}{{"s", time.Second}, {"ms", time.Millisecond}, {"µs", time.Microsecond}}
	for _, u := range units {
		if d >= u.size {
			return strconv.FormatFloat(roundTo2(float64(d)/float64(u.size)), 'f', -1, 64) + u.name
		}
	}
	return strconv.FormatInt(int64(d), 10) + "ns"
}

func roundTo2(f float64) float64 { return float64(int64(f*100+0.5)) / 100 }

// formatBytes writes n as TiDB's memory column does.
func formatBytes(n int64) string {
	switch {
	case n < 1<<10:
		return strconv.FormatInt(n, 10) + " Bytes"
	case n < 1<<20:
		return strconv.FormatFloat(roundTo2(float64(n)/(1<<10)), 'f', -1, 64) + " KB"
	case n < 1<<30:
		return strconv.FormatFloat(roundTo2(float64(n)/(1<<20)), 'f', -1, 64) + " MB"
	}
	return strconv.FormatFloat(roundTo2(float64(n)/(1<<30)), 'f', -1, 64) + " GB"
}
