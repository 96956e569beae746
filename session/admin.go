package session

import (
	"context"
	"strings"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/executor"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/parserdriver"
	"github.com/basalt-db/basalt/planner"
	"github.com/basalt-db/basalt/table"
	"github.com/basalt-db/basalt/tablecodec"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

func planResultField(db string, t *catalog.TableInfo, c *catalog.ColumnInfo) planner.ResultField {
	return planner.ResultField{Name: c.Name, OrgName: c.Name, Table: t.Name, OrgTable: t.Name, DB: db, Type: c.Type}
}

// execAdmin runs ADMIN CHECK TABLE: every row has exactly its index
// entries and every index entry points to a row that has it.
//
// The check pins its schema for its whole run and reads the data at a
// timestamp taken after that, as a query does. The pin keeps a DROP INDEX
// of an index the check sees public from getting past write-only (entries
// still written, none deleted) until the check ends; the order makes the
// backfill of an index it sees public, committed before the index was
// published, part of its snapshot. Unpinned, a check raced with DROP
// INDEX, which went on to delete-only, removed the index and deleted its
// keys (a range deletion, under the check's snapshot too) while the check
// still expected them; and with the timestamp taken first, a check could
// see an index just made public in a snapshot older than its backfill's
// last batch. Both reported entries missing that were not (8003).
func (s *Session) execAdmin(ctx context.Context, x *ast.AdminStmt) (Result, error) {
	switch x.Tp {
	case ast.AdminCheckTable:
	case ast.AdminShowDDLJobs:
		return s.showDDLJobs(ctx, x)
	case ast.AdminShowDDLJobQueries:
		return s.showDDLJobQueries(x)
	case ast.AdminShowDDL:
		return s.adminShowDDL(ctx)
	case ast.AdminCancelDDLJobs:
		return s.cancelDDLJobs(ctx, x)
	default:
		return Result{}, errno.New(errno.ErNotSupportedYet, "this ADMIN statement is not supported yet")
	}
	is, release, err := s.pinStmt()
	if err != nil {
		return Result{}, err
	}
	defer release()
	tables := make([]*catalog.TableInfo, len(x.Tables))
	for i, tn := range x.Tables {
		pc := s.planContext()
		pc.IS = is
		_, t, err := pc.TableRef(tn)
		if err != nil {
			return Result{}, err
		}
		tables[i] = t
	}
	ts, err := s.d.store.CurrentTS()
	if err != nil {
		return Result{}, err
	}
	if s.pastTxn != nil {
		ts = s.pastTxn.StartTS() // tidb_snapshot: check the tables as they were
	}
	snap := s.d.store.Snapshot(ts)
	for _, t := range tables {
		if err := checkTable(ctx, snap, t); err != nil {
			return Result{}, err
		}
	}
	return Result{}, nil
}

func checkTable(ctx context.Context, snap kv.Snapshot, t *catalog.TableInfo) error {
	expected := map[string]string{} // index key → value, from the rows
	rowPrefix := tablecodec.RowPrefix(t.ID)
	it, err := snap.Iter(rowPrefix, kv.PrefixEnd(rowPrefix))
	if err != nil {
		return err
	}
	for it.Valid() {
		_, h, err := tablecodec.DecodeRowKey(it.Key(), t.CommonHandle)
		if err != nil {
			it.Close()
			return err
		}
		for _, ix := range t.WritableIndexes() {
			if ix.State != catalog.StatePublic {
				continue
			}
			k, v, err := table.IndexEntry(t, ix, h, it.Value())
			if err != nil {
				it.Close()
				return err
			}
			expected[string(k)] = string(v)
		}
		if err := it.Next(); err != nil {
			it.Close()
			return err
		}
	}
	it.Close()
	for _, ix := range t.WritableIndexes() {
		if ix.State != catalog.StatePublic {
			continue
		}
		p := tablecodec.IndexPrefix(t.ID, ix.ID)
		it, err := snap.Iter(p, kv.PrefixEnd(p))
		if err != nil {
			return err
		}
		for it.Valid() {
			want, ok := expected[string(it.Key())]
			if !ok || want != string(it.Value()) {
				vals, _, _, _ := tablecodec.DecodeIndexKey(it.Key(), len(ix.Columns), t.CommonHandle)
				it.Close()
				return errno.New(errno.ErAdminCheckTable, "table %s index %s has an entry %s with no matching row", t.Name, ix.Name, datumsText(vals))
			}
			delete(expected, string(it.Key()))
			if err := it.Next(); err != nil {
				it.Close()
				return err
			}
		}
		it.Close()
	}
	for k := range expected {
		key := []byte(k)
		for _, ix := range t.WritableIndexes() {
			p := tablecodec.IndexPrefix(t.ID, ix.ID)
			if strings.HasPrefix(k, string(p)) {
				vals, _, _, _ := tablecodec.DecodeIndexKey(key, len(ix.Columns), t.CommonHandle)
				return errno.New(errno.ErAdminCheckTable, "table %s index %s is missing the entry %s of a row", t.Name, ix.Name, datumsText(vals))
			}
		}
	}
	return nil
}

func datumsText(vals []types.Datum) string {
	parts := make([]string, len(vals))
	for i, v := range vals {
		parts[i] = v.String()
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// execAnalyze counts rows and distinct index keys, for the planner and SHOW.
// Like ADMIN CHECK TABLE it pins its schema before it takes its timestamp,
// so that the indexes it reads are those its snapshot holds.
func (s *Session) execAnalyze(ctx context.Context, x *ast.AnalyzeTableStmt) (Result, error) {
	is, release, err := s.pinStmt()
	if err != nil {
		return Result{}, err
	}
	defer release()
	ts, err := s.d.store.CurrentTS()
	if err != nil {
		return Result{}, err
	}
	snap := s.d.store.Snapshot(ts)
	buckets := executor.DefaultBuckets
	for _, o := range x.AnalyzeOpts {
		if o.Type == ast.AnalyzeOptNumBuckets {
			n, _, _ := types.ToInt(o.Value.(*parserdriver.ValueExpr).Datum)
			if n < 1 || n > 1024 {
				return Result{}, errno.New(errno.ErWrongArguments, "Value of analyze option BUCKETS should be positive and not larger than 1024")
			}
			buckets = int(n)
		}
	}
	for _, tn := range x.TableNames {
		pc := s.planContext()
		pc.IS = is
		_, t, err := pc.TableRef(tn)
		if err != nil {
			return Result{}, err
		}
		if t.View != nil {
			return Result{}, errno.New(1347, "'%s.%s' is not BASE TABLE", s.db, t.Name)
		}
		st, err := executor.Analyze(ctx, snap, t, ts, buckets)
		if err != nil {
			return Result{}, err
		}
		if err := s.d.catalog.SetStats(ctx, t.ID, st); err != nil {
			return Result{}, err
		}
	}
	if err := s.d.afterAnalyze(ctx); err != nil {
		return Result{}, err
	}
	return Result{}, nil
}

// execExplain shows the plan tree of a statement.
func (s *Session) execExplain(ctx context.Context, x *ast.ExplainStmt) (Result, error) {
	switch strings.ToLower(x.Format) {
	case "", "row", "brief", "traditional":
		// Basalt's operator names carry no numbers to leave out: 'brief'
		// is 'row'.
	default:
		return Result{}, errno.New(1791, "Unknown EXPLAIN format name: '%s'", x.Format)
	}
	if x.Analyze {
		return s.explainAnalyze(ctx, x)
	}
	if st, ok := x.Stmt.(*ast.ShowStmt); ok {
		// DESCRIBE t [col], DESC t and EXPLAIN t: SHOW COLUMNS FROM t,
		// the column as a LIKE pattern.
		return s.execShow(ctx, st)
	}
	var p planner.Plan
	err := s.withBinding(x.Stmt, func() (err error) {
		p, err = s.explainPlan(x.Stmt)
		return err
	})
	if err != nil {
		return Result{}, err
	}
	var data [][]types.Datum
	for _, r := range planner.Explain(p) {
		data = append(data, []types.Datum{str(r.ID), str(r.EstRows), str(r.Info)})
	}
	return Result{Rows: &staticRows{fields: textFields("id", "estRows", "operator info"), data: data}}, nil
}

// explainPlan plans the statement EXPLAIN shows.
func (s *Session) explainPlan(stmt ast.StmtNode) (planner.Plan, error) {
	var p planner.Plan
	switch st := stmt.(type) {
	case *ast.SelectStmt, *ast.SetOprStmt:
		q, err := planner.BuildQuery(s.planContext(), st.(ast.ResultSetNode))
		if err != nil {
			return nil, err
		}
		p = q.Plan
	case *ast.UpdateStmt:
		if planner.IsMultiUpdate(st) {
			u, err := planner.BuildMultiUpdate(s.planContext(), st)
			if err != nil {
				return nil, err
			}
			p = u.Source
			break
		}
		u, err := planner.BuildUpdate(s.planContext(), st)
		if err != nil {
			return nil, err
		}
		p = u.Source
	case *ast.DeleteStmt:
		if st.IsMultiTable {
			d, err := planner.BuildMultiDelete(s.planContext(), st)
			if err != nil {
				return nil, err
			}
			p = d.Source
			break
		}
		d, err := planner.BuildDelete(s.planContext(), st)
		if err != nil {
			return nil, err
		}
		p = d.Source
	default:
		return nil, errno.New(errno.ErNotSupportedYet, "EXPLAIN of this statement is not supported yet")
	}
	return p, nil
}

func (s *Session) explainStmt(ctx context.Context, x *ast.ExplainStmt, _ stmtArgs) (Result, error) {
	return s.execExplain(ctx, x)
}

func (s *Session) analyzeStmt(ctx context.Context, x *ast.AnalyzeTableStmt, _ stmtArgs) (Result, error) {
	return s.execAnalyze(ctx, x)
}

func (s *Session) adminStmt(ctx context.Context, x *ast.AdminStmt, _ stmtArgs) (Result, error) {
	return s.execAdmin(ctx, x)
}
