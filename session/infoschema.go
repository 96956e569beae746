package session

import (
	"context"
	"sort"
	"strings"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/planner"
	"github.com/basalt-db/basalt/table"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// memTableRows computes the rows of an information_schema table from the
// current catalog. Columns are in planner.MemTableColumns order.
func (s *Session) memTableRows(name string) ([][]types.Datum, error) {
	is := s.d.catalog.InfoSchema()
	i64 := func(n int64) types.Datum { return types.NewInt(n) }
	var out [][]types.Datum
	switch strings.ToLower(name) {
	case "schemata":
		out = append(out, []types.Datum{str("def"), str(planner.InfoSchemaDB), str("utf8mb3"), str("utf8mb3_general_ci"), types.Null, str("NO")})
		for _, db := range is.DBs() {
			out = append(out, []types.Datum{str("def"), str(db.Name), str(db.Charset), str(db.Collate), types.Null, str("NO")})
		}
	case "tables":
		for _, db := range is.DBs() {
			for _, t := range is.Tables(db.Name) {
				rows := int64(0)
				if st := s.d.catalog.Stats(t.ID); st != nil {
					rows = st.RowCount
				}
				out = append(out, []types.Datum{str("def"), str(db.Name), str(t.Name), str(tableType(t)), str("InnoDB"), i64(10),
					str("Dynamic"), i64(rows), i64(0), i64(0), i64(0), i64(0), i64(0), types.Null, types.Null, types.Null,
					types.Null, str(t.Collate), types.Null, str(""), str(t.Comment)})
			}
		}
		names := planner.MemTableNames()
		sort.Strings(names)
		for _, n := range names {
			out = append(out, []types.Datum{str("def"), str(planner.InfoSchemaDB), str(n), str("SYSTEM VIEW"), types.Null, i64(10),
				types.Null, types.Null, types.Null, types.Null, types.Null, types.Null, types.Null, types.Null, types.Null,
				types.Null, types.Null, str("utf8mb3_general_ci"), types.Null, str(""), str("")})
		}
	case "columns":
		for _, db := range is.DBs() {
			for _, t := range is.Tables(db.Name) {
				for _, c := range t.Columns {
					out = append(out, columnRow(db.Name, t, c))
				}
			}
		}
	case "statistics":
		for _, db := range is.DBs() {
			for _, t := range is.Tables(db.Name) {
				st := s.d.catalog.Stats(t.ID)
				for _, ix := range t.Indexes {
					if ix.State != catalog.StatePublic {
						continue
					}
					nonUnique := int64(1)
					if ix.Unique {
						nonUnique = 0
					}
					card := types.Null
					if st != nil {
						card = i64(st.IndexNDV[ix.ID])
					}
					for i, ic := range ix.Columns {
						sub := types.Null
						if ic.Length > 0 {
							sub = i64(int64(ic.Length))
						}
						null := ""
						if !t.Columns[ic.Offset].Type.NotNull() {
							null = "YES"
						}
						out = append(out, []types.Datum{str("def"), str(db.Name), str(t.Name), i64(nonUnique), str(db.Name),
							str(ix.Name), i64(int64(i + 1)), str(ic.Name), str("A"), card, sub, types.Null, str(null),
							str("BTREE"), str(""), str(ix.Comment), str("YES"), types.Null})
					}
				}
			}
		}
	case "key_column_usage", "table_constraints":
		lower := strings.ToLower(name)
		for _, db := range is.DBs() {
			for _, t := range is.Tables(db.Name) {
				for _, ix := range t.Indexes {
					if !ix.Unique || ix.State != catalog.StatePublic {
						continue
					}
					if lower == "table_constraints" {
						kind := "UNIQUE"
						if ix.Primary {
							kind = "PRIMARY KEY"
						}
						out = append(out, []types.Datum{str("def"), str(db.Name), str(ix.Name), str(db.Name), str(t.Name), str(kind), str("YES")})
						continue
					}
					for i, ic := range ix.Columns {
						out = append(out, []types.Datum{str("def"), str(db.Name), str(ix.Name), str("def"), str(db.Name), str(t.Name),
							str(ic.Name), i64(int64(i + 1)), types.Null, types.Null, types.Null, types.Null})
					}
				}
				for _, fk := range t.ForeignKeys {
					if lower == "table_constraints" {
						out = append(out, []types.Datum{str("def"), str(db.Name), str(fk.Name), str(db.Name), str(t.Name), str("FOREIGN KEY"), str("YES")})
						continue
					}
					for i, c := range fk.Cols {
						out = append(out, []types.Datum{str("def"), str(db.Name), str(fk.Name), str("def"), str(db.Name), str(t.Name),
							str(c), i64(int64(i + 1)), i64(int64(i + 1)), str(fk.RefSchema), str(fk.RefTable), str(fk.RefCols[i])})
					}
				}
			}
		}
	case "referential_constraints":
		for _, db := range is.DBs() {
			for _, t := range is.Tables(db.Name) {
				for _, fk := range t.ForeignKeys {
					// The parent's index that the constraint uses; none
					// while the parent is missing (foreign_key_checks=0).
					unique := types.Null
					if p := is.Table(fk.RefSchema, fk.RefTable); p != nil {
						if ix := table.FKIndex(p, fk.RefCols); ix != nil {
							unique = str(ix.Name)
						}
					}
					out = append(out, []types.Datum{str("def"), str(db.Name), str(fk.Name), str("def"), str(fk.RefSchema), unique,
						str("NONE"), str(catalog.Rule(fk.OnUpdate)), str(catalog.Rule(fk.OnDelete)), str(t.Name), str(fk.RefTable)})
				}
			}
		}
	case "engines":
		out = append(out, []types.Datum{str("InnoDB"), str("DEFAULT"), str("Basalt's transactional store"), str("YES"), str("NO"), str("YES")})
	case "character_sets":
		out = append(out, []types.Datum{str("utf8mb4"), str("utf8mb4_bin"), str("UTF-8 Unicode"), i64(4)},
			[]types.Datum{str("binary"), str("binary"), str("Binary pseudo charset"), i64(1)})
	case "collations":
		out = append(out, []types.Datum{str("utf8mb4_bin"), str("utf8mb4"), i64(46), str("Yes"), str("Yes"), i64(1), str("PAD SPACE")},
			[]types.Datum{str("binary"), str("binary"), i64(63), str("Yes"), str("Yes"), i64(1), str("NO PAD")})
	case "processlist":
		if s.d.conns != nil {
			for _, p := range s.d.conns.ProcessList() {
				out = append(out, []types.Datum{i64(int64(p.ID)), str(p.User), str(p.Host), nullable(p.DB, p.DB != ""),
					str(p.Command), i64(int64(p.Time.Seconds())), str(p.State), nullable(p.Info, p.Info != "")})
			}
		}
	case "triggers":
		out = s.triggerRows(is)
	case "cluster_info":
		var err error
		if out, err = s.clusterInfoRows(context.Background()); err != nil {
			return nil, err
		}
	case "slow_query":
		var err error
		if out, err = s.slowQueryRows(); err != nil {
			return nil, err
		}
	case "statements_summary", "statements_summary_history":
		out = s.stmtSummaryRows(strings.HasSuffix(strings.ToLower(name), "history"))
	case "views":
		for _, db := range is.DBs() {
			for _, t := range is.Tables(db.Name) {
				if t.View != nil {
					out = append(out, []types.Datum{str("def"), str(db.Name), str(t.Name), str(t.View.Select), str("NONE"),
						str("NO"), str(viewDefiner(t.View)), str("DEFINER"), str("utf8mb4"), str("utf8mb4_general_ci")})
				}
			}
		}
	case "session_variables", "global_variables":
		global := strings.HasPrefix(strings.ToLower(name), "global")
		names := make([]string, 0, len(sysVars))
		for n := range sysVars {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			if v, err := s.sysVar(n, global); err == nil {
				out = append(out, []types.Datum{str(n), str(showValue(n, v))})
			}
		}
	}
	return s.filterVisible(name, out), nil
}

// columnRow is one row of information_schema.COLUMNS.
func columnRow(db string, t *catalog.TableInfo, c *catalog.ColumnInfo) []types.Datum {
	ft := &c.Type
	null := "YES"
	if ft.NotNull() {
		null = "NO"
	}
	def := types.Null
	switch {
	case c.DefaultNow:
		def = str("CURRENT_TIMESTAMP")
	case c.HasDefault && !c.DefaultNull:
		def = str(c.Default)
	}
	dataType := TypeString(ft)
	if i := strings.IndexAny(dataType, "( "); i >= 0 {
		dataType = dataType[:i]
	}
	charLen, octLen, numPrec, numScale, dtPrec := types.Null, types.Null, types.Null, types.Null, types.Null
	charset, coll := types.Null, types.Null
	switch {
	case ft.IsString():
		charLen = types.NewInt(int64(ft.Flen))
		octLen = types.NewInt(int64(ft.Flen) * 4)
		if ft.IsBinary() {
			octLen = charLen
		} else {
			charset, coll = str(columnCharset(ft)), str(ft.CollationName())
		}
	case ft.Tp == mysql.TypeNewDecimal:
		numPrec, numScale = types.NewInt(int64(ft.Flen)), types.NewInt(int64(ft.Decimal))
	case ft.IsInteger():
		prec := map[byte]int64{mysql.TypeTiny: 3, mysql.TypeShort: 5, mysql.TypeInt24: 7, mysql.TypeLong: 10, mysql.TypeLonglong: 19, mysql.TypeYear: 4}[ft.Tp]
		if ft.Tp == mysql.TypeLonglong && ft.Unsigned() {
			prec = 20
		}
		numPrec, numScale = types.NewInt(prec), types.NewInt(0)
	case ft.Tp == mysql.TypeDouble:
		numPrec = types.NewInt(22)
	case ft.Tp == mysql.TypeFloat:
		numPrec = types.NewInt(12)
	case ft.Tp == mysql.TypeDatetime || ft.Tp == mysql.TypeTimestamp || ft.Tp == mysql.TypeDuration:
		dtPrec = types.NewInt(int64(max(ft.Decimal, 0)))
	}
	extra := ""
	if c.AutoIncrement {
		extra = "auto_increment"
	}
	return []types.Datum{str("def"), str(db), str(t.Name), str(c.Name), types.NewInt(int64(c.Offset + 1)), def, str(null),
		str(dataType), charLen, octLen, numPrec, numScale, dtPrec, charset, coll, str(TypeString(ft)),
		str(columnKey(t, c)), str(extra), str("select,insert,update,references"), str(c.Comment), str("")}
}
