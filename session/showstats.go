package session

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/expression"
	"github.com/basalt-db/basalt/tablecodec"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// SHOW STATS_META, SHOW STATS_HISTOGRAMS and SHOW STATS_BUCKETS, as
// TiDB shows them (without its memory-usage columns), for the tables the
// session may see. LIKE matches the table name; WHERE reads the columns
// by name.

func (s *Session) showStats(ctx context.Context, x *ast.ShowStmt) (Result, error) {
	is := s.d.catalog.InfoSchema()
	var names []string
	var data [][]types.Datum
	switch x.Tp {
	case ast.ShowStatsMeta:
		names = []string{"Db_name", "Table_name", "Partition_name", "Update_time", "Modify_count", "Row_count"}
	case ast.ShowStatsHistograms:
		names = []string{"Db_name", "Table_name", "Partition_name", "Column_name", "Is_index", "Update_time",
			"Distinct_count", "Null_count", "Avg_col_size", "Correlation"}
	default:
		names = []string{"Db_name", "Table_name", "Partition_name", "Column_name", "Is_index", "Bucket_id",
			"Count", "Repeats", "Lower_Bound", "Upper_Bound", "Ndv"}
	}
	for _, db := range is.DBs() {
		for _, t := range is.Tables(db.Name) {
			st := s.d.catalog.Stats(t.ID)
			if st == nil || t.View != nil || !like(x.Pattern, t.Name) || !s.visibleTable(db.Name, t.Name) {
				continue
			}
			updated := str(time.UnixMilli(int64(st.Version >> 18)).Format("2006-01-02 15:04:05"))
			head := []types.Datum{str(db.Name), str(t.Name), str("")}
			if x.Tp == ast.ShowStatsMeta {
				data = append(data, append(head, updated, types.NewInt(0), types.NewInt(st.RowCount)))
				continue
			}
			for _, o := range statsObjects(t, st) {
				row := append(append([]types.Datum(nil), head...), str(o.name), types.NewInt(o.isIndex))
				if x.Tp == ast.ShowStatsHistograms {
					data = append(data, append(row, updated, types.NewInt(o.cs.NDV), types.NewInt(o.cs.NullCount),
						str(fmt.Sprintf("%.2f", o.cs.AvgSize)), str("0")))
					continue
				}
				for i, b := range o.cs.Hist.Buckets {
					data = append(data, append(append([]types.Datum(nil), row...), types.NewInt(int64(i)), types.NewInt(b.Count),
						types.NewInt(b.Repeat), str(boundText(b.Lower, o.n)), str(boundText(b.Upper, o.n)), types.NewInt(b.NDV)))
				}
			}
		}
	}
	data, err := filterRows(names, data, x.Where, s.evalCtx(ctx, nil))
	if err != nil {
		return Result{}, err
	}
	return Result{Rows: &staticRows{fields: textFields(names...), data: data}}, nil
}

// statsObject is one column or index with statistics.
type statsObject struct {
	name    string
	isIndex int64
	n       int // columns in its encoded values
	cs      *catalog.ColumnStats
}

func statsObjects(t *catalog.TableInfo, st *catalog.TableStats) []statsObject {
	var out []statsObject
	for _, c := range t.Columns {
		if cs := st.Columns[c.ID]; cs != nil {
			out = append(out, statsObject{name: c.Name, n: 1, cs: cs})
		}
	}
	var ixs []statsObject
	for _, ix := range t.Indexes {
		if cs := st.Indexes[ix.ID]; cs != nil {
			ixs = append(ixs, statsObject{name: ix.Name, isIndex: 1, n: len(ix.Columns), cs: cs})
		}
	}
	sort.Slice(ixs, func(i, j int) bool { return ixs[i].name < ixs[j].name })
	return append(out, ixs...)
}

// boundText shows an encoded bucket bound: its value, or (v1, v2, ...)
// for an index of several columns.
func boundText(b []byte, n int) string {
	var parts []string
	for len(b) > 0 && len(parts) < n {
		rest, d, err := tablecodec.DecodeKeyDatum(b)
		if err != nil {
			return fmt.Sprintf("%x", b)
		}
		if d.IsNull() {
			parts = append(parts, "NULL")
		} else {
			parts = append(parts, string(types.ToText(d)))
		}
		b = rest
	}
	if n == 1 && len(parts) == 1 {
		return parts[0]
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// filterRows keeps the rows of a SHOW result that where (over its columns,
// by name) holds.
func filterRows(names []string, data [][]types.Datum, where ast.ExprNode, ec *expression.Ctx) ([][]types.Datum, error) {
	if where == nil {
		return data, nil
	}
	schema := &expression.Schema{}
	for _, n := range names {
		schema.Cols = append(schema.Cols, expression.SchemaCol{Name: n, Tp: types.FieldType{Tp: mysql.TypeVarString, Charset: "utf8mb4"}})
	}
	b := &expression.Builder{Schema: schema, Clause: "where clause"}
	cond, err := b.Build(where)
	if err != nil {
		return nil, err
	}
	var out [][]types.Datum
	for _, r := range data {
		v, err := cond.Eval(ec, r)
		if err != nil {
			return nil, err
		}
		if !v.IsNull() && types.ToBool(v) {
			out = append(out, r)
		}
	}
	return out, nil
}
