package session

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/expression"
	"github.com/basalt-db/basalt/planner"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
)

func str(s string) types.Datum { return types.NewString(s) }

func nullable(s string, ok bool) types.Datum {
	if !ok {
		return types.Null
	}
	return str(s)
}

// like filters names by SHOW ... LIKE 'pattern'.
func like(pattern *ast.PatternLikeOrIlikeExpr, name string) bool {
	if pattern == nil {
		return true
	}
	v, ok := pattern.Pattern.(ast.ValueExpr)
	if !ok {
		return true
	}
	return expression.MatchLike(strings.ToLower(name), strings.ToLower(v.GetString()), '\\')
}

func (s *Session) showTable(x *ast.ShowStmt) (string, *catalog.TableInfo, error) {
	db := x.Table.Schema.O
	if x.DBName != "" {
		db = x.DBName
	}
	if db == "" {
		db = s.db
	}
	if db == "" {
		return "", nil, errno.New(errno.ErNoDB, "No database selected")
	}
	t := s.d.catalog.InfoSchema().Table(db, x.Table.Name.O)
	if t == nil {
		return "", nil, errno.New(errno.ErNoSuchTable, "Table '%s.%s' doesn't exist", db, x.Table.Name.O)
	}
	return db, t, nil
}

func (s *Session) execShow(ctx context.Context, x *ast.ShowStmt) (Result, error) {
	is := s.d.catalog.InfoSchema()
	var cols []planner.ResultField
	var data [][]types.Datum
	switch x.Tp {
	case ast.ShowBackups:
		return s.showBRIE(ast.BRIEKindBackup)
	case ast.ShowRestores:
		return s.showBRIE(ast.BRIEKindRestore)
	case ast.ShowDatabases:
		cols = textFields("Database")
		names := []string{"information_schema"}
		for _, db := range is.DBs() {
			names = append(names, db.Name)
		}
		sort.Strings(names)
		for _, n := range names {
			if like(x.Pattern, n) && s.visibleDB(n) {
				data = append(data, []types.Datum{str(n)})
			}
		}
	case ast.ShowTables:
		db := x.DBName
		if db == "" {
			db = s.db
		}
		if db == "" {
			return Result{}, errno.New(errno.ErNoDB, "No database selected")
		}
		var names []string
		if strings.EqualFold(db, planner.InfoSchemaDB) {
			names = planner.MemTableNames()
			sort.Strings(names)
		} else if is.DB(db) == nil {
			return Result{}, errno.New(errno.ErBadDB, "Unknown database '%s'", db)
		}
		for _, t := range is.Tables(db) {
			names = append(names, t.Name)
		}
		cols = textFields("Tables_in_" + db)
		if x.Full {
			cols = textFields("Tables_in_"+db, "Table_type")
		}
		for _, name := range names {
			if !like(x.Pattern, name) || !s.visibleTable(db, name) {
				continue
			}
			row := []types.Datum{str(name)}
			if x.Full {
				row = append(row, str(tableType(is.Table(db, name))))
			}
			data = append(data, row)
		}
	case ast.ShowColumns:
		_, t, err := s.showTable(x)
		if err != nil {
			return Result{}, err
		}
		cols = textFields("Field", "Type", "Null", "Key", "Default", "Extra")
		if x.Full {
			cols = textFields("Field", "Type", "Collation", "Null", "Key", "Default", "Extra", "Privileges", "Comment")
		}
		for _, c := range t.Columns {
			if !like(x.Pattern, c.Name) {
				continue
			}
			if x.Column != nil && !expression.MatchLike(strings.ToLower(c.Name), x.Column.Name.L, '\\') {
				continue
			}
			null := "YES"
			if c.Type.NotNull() {
				null = "NO"
			}
			def := types.Null
			if c.HasDefault && !c.DefaultNull {
				def = str(c.Default)
				if c.DefaultNow {
					def = str("CURRENT_TIMESTAMP")
				}
			}
			extra := ""
			if c.AutoIncrement {
				extra = "auto_increment"
			}
			if c.OnUpdateNow {
				extra = "DEFAULT_GENERATED on update CURRENT_TIMESTAMP"
			}
			row := []types.Datum{str(c.Name), str(TypeString(&c.Type))}
			if x.Full {
				coll := types.Null
				if c.Type.IsString() && !c.Type.IsBinary() {
					coll = str(c.Type.CollationName())
				}
				row = append(row, coll)
			}
			row = append(row, str(null), str(columnKey(t, c)), def, str(extra))
			if x.Full {
				row = append(row, str("select,insert,update,references"), str(c.Comment))
			}
			data = append(data, row)
		}
	case ast.ShowIndex:
		_, t, err := s.showTable(x)
		if err != nil {
			return Result{}, err
		}
		cols = textFields("Table", "Non_unique", "Key_name", "Seq_in_index", "Column_name", "Collation",
			"Cardinality", "Sub_part", "Packed", "Null", "Index_type", "Comment", "Index_comment", "Visible", "Expression")
		st := s.d.catalog.Stats(t.ID)
		for _, ix := range t.Indexes {
			if ix.State != catalog.StatePublic {
				continue
			}
			for i, ic := range ix.Columns {
				nonUnique := "1"
				if ix.Unique {
					nonUnique = "0"
				}
				card := types.Null
				if st != nil {
					card = types.NewInt(st.IndexNDV[ix.ID])
				}
				sub := types.Null
				if ic.Length > 0 {
					sub = types.NewInt(int64(ic.Length))
				}
				null := ""
				if !t.Columns[ic.Offset].Type.NotNull() {
					null = "YES"
				}
				data = append(data, []types.Datum{str(t.Name), str(nonUnique), str(ix.Name), types.NewInt(int64(i + 1)),
					str(ic.Name), str("A"), card, sub, types.Null, str(null), str("BTREE"), str(""), str(ix.Comment), str("YES"), types.Null})
			}
		}
	case ast.ShowCreateTable:
		db, t, err := s.showTable(x)
		if err != nil {
			return Result{}, err
		}
		_ = db
		if t.View != nil {
			// As MySQL: SHOW CREATE TABLE of a view is SHOW CREATE VIEW,
			// which dump tools recognize by its first column's name.
			cols = textFields("View", "Create View", "character_set_client", "collation_connection")
			data = append(data, []types.Datum{str(t.Name), str(showCreateView(t)), str("utf8mb4"), str("utf8mb4_general_ci")})
			break
		}
		cols = textFields("Table", "Create Table")
		data = append(data, []types.Datum{str(t.Name), str(ShowCreateTable(db, t))})
	case ast.ShowCreateView:
		db, t, err := s.showTable(x)
		if err != nil {
			return Result{}, err
		}
		if t.View == nil {
			return Result{}, errno.New(errno.ErWrongObject, "'%s.%s' is not VIEW", db, t.Name)
		}
		cols = textFields("View", "Create View", "character_set_client", "collation_connection")
		data = append(data, []types.Datum{str(t.Name), str(showCreateView(t)), str("utf8mb4"), str("utf8mb4_general_ci")})
	case ast.ShowCreateDatabase:
		db := is.DB(x.DBName)
		if db == nil {
			return Result{}, errno.New(errno.ErBadDB, "Unknown database '%s'", x.DBName)
		}
		cols = textFields("Database", "Create Database")
		data = append(data, []types.Datum{str(db.Name), str(fmt.Sprintf("CREATE DATABASE `%s` /*!40100 DEFAULT CHARACTER SET %s COLLATE %s */", db.Name, db.Charset, db.Collate))})
	case ast.ShowVariables:
		cols = textFields("Variable_name", "Value")
		names := make([]string, 0, len(sysVars))
		for n := range sysVars {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			if !like(x.Pattern, n) {
				continue
			}
			v, err := s.sysVar(n, x.GlobalScope)
			if err != nil {
				continue
			}
			data = append(data, []types.Datum{str(n), str(showValue(n, v))})
		}
	case ast.ShowProcedureStatus, ast.ShowFunctionStatus:
		// Basalt has no stored routines: MySQL's columns, no rows, so
		// that mariadb-dump --routines finds nothing to dump.
		cols = textFields("Db", "Name", "Type", "Definer", "Modified", "Created", "Security_type", "Comment",
			"character_set_client", "collation_connection", "Database Collation")
	case ast.ShowEvents:
		// Nor events.
		if x.DBName == "" && s.db == "" {
			return Result{}, errno.New(errno.ErNoDB, "No database selected")
		}
		cols = textFields("Db", "Name", "Definer", "Time zone", "Type", "Execute at", "Interval value",
			"Interval field", "Starts", "Ends", "Status", "Originator", "character_set_client",
			"collation_connection", "Database Collation")
	case ast.ShowStatus:
		cols = textFields("Variable_name", "Value")
		conns := 0
		if s.d.conns != nil {
			conns = s.d.conns.ConnectionCount()
		}
		for _, kvp := range [][2]string{{"Threads_connected", fmt.Sprint(conns)}, {"Uptime", fmt.Sprint(int64(time.Since(s.d.started).Seconds()))},
			{"Ssl_cipher", s.info.TLSCipher}, {"Ssl_version", s.info.TLSVersion}} {
			if like(x.Pattern, kvp[0]) {
				data = append(data, []types.Datum{str(kvp[0]), str(kvp[1])})
			}
		}
	case ast.ShowWarnings, ast.ShowErrors:
		cols = textFields("Level", "Code", "Message")
		cols[1].Type = intField(false)
		for _, w := range s.warnings {
			level := "Warning"
			if w.Note {
				level = "Note"
			}
			if x.Tp == ast.ShowErrors {
				level = "Error"
			}
			data = append(data, []types.Datum{str(level), types.NewInt(int64(w.Code)), str(w.Msg)})
		}
	case ast.ShowProcessList:
		cols = textFields("Id", "User", "Host", "db", "Command", "Time", "State", "Info")
		cols[0].Type = intField(true)
		cols[5].Type = intField(false)
		if s.d.conns != nil {
			for _, p := range s.d.conns.ProcessList() {
				if p.User != s.info.User && !s.seesAllProcesses() {
					continue
				}
				info := p.Info
				if !x.Full && len(info) > 100 {
					info = info[:100]
				}
				data = append(data, []types.Datum{types.NewInt(int64(p.ID)), str(p.User), str(p.Host), nullable(p.DB, p.DB != ""),
					str(p.Command), types.NewInt(int64(p.Time.Seconds())), str(p.State), nullable(info, info != "")})
			}
		}
	case ast.ShowEngines:
		cols = textFields("Engine", "Support", "Comment", "Transactions", "XA", "Savepoints")
		data = append(data, []types.Datum{str("InnoDB"), str("DEFAULT"), str("Basalt's transactional store"), str("YES"), str("NO"), str("YES")})
	case ast.ShowCharset:
		cols = textFields("Charset", "Description", "Default collation", "Maxlen")
		data = charsetRows(x.Pattern)
	case ast.ShowCollation:
		cols = textFields("Collation", "Charset", "Id", "Default", "Compiled", "Sortlen")
		data = collationRows(x.Pattern)
	case ast.ShowTableStatus:
		db := x.DBName
		if db == "" {
			db = s.db
		}
		cols = textFields("Name", "Engine", "Version", "Row_format", "Rows", "Avg_row_length", "Data_length",
			"Max_data_length", "Index_length", "Data_free", "Auto_increment", "Create_time", "Update_time",
			"Check_time", "Collation", "Checksum", "Create_options", "Comment")
		for _, t := range is.Tables(db) {
			if !like(x.Pattern, t.Name) || !s.visibleTable(db, t.Name) {
				continue
			}
			if t.View != nil {
				// mariadb-dump tells views by this row (no engine,
				// comment VIEW), as MySQL has it.
				row := []types.Datum{str(t.Name)}
				for range 16 {
					row = append(row, types.Null)
				}
				data = append(data, append(row, str("VIEW")))
				continue
			}
			rows := int64(0)
			if st := s.d.catalog.Stats(t.ID); st != nil {
				rows = st.RowCount
			}
			data = append(data, []types.Datum{str(t.Name), str("InnoDB"), str("10"), str("Dynamic"), types.NewInt(rows),
				str("0"), str("0"), str("0"), str("0"), str("0"), types.Null, types.Null, types.Null, types.Null,
				str(t.Collate), types.Null, str(""), str(t.Comment)})
		}
	case ast.ShowStatsMeta, ast.ShowStatsHistograms, ast.ShowStatsBuckets:
		return s.showStats(ctx, x)
	case ast.ShowTriggers:
		return s.showTriggers(x)
	case ast.ShowBindings:
		return s.showBindings(ctx, x)
	default:
		return Result{}, errno.New(errno.ErNotSupportedYet, "this SHOW statement is not supported yet")
	}
	data, err := s.showWhere(ctx, x.Where, cols, data)
	if err != nil {
		return Result{}, err
	}
	return Result{Rows: &staticRows{fields: cols, data: data}}, nil
}

// showWhere keeps the rows of a SHOW that its WHERE clause (nil for none)
// holds for; the clause names the result's columns.
func (s *Session) showWhere(ctx context.Context, where ast.ExprNode, cols []planner.ResultField, data [][]types.Datum) ([][]types.Datum, error) {
	if where == nil {
		return data, nil
	}
	schema := &expression.Schema{}
	for _, c := range cols {
		schema.Cols = append(schema.Cols, expression.SchemaCol{Name: c.Name, Tp: c.Type})
	}
	b := &expression.Builder{Schema: schema, Clause: "where clause"}
	e, err := b.Build(where)
	if err != nil {
		return nil, err
	}
	ec := s.evalCtx(ctx, nil)
	kept := data[:0]
	for _, row := range data {
		v, err := e.Eval(ec, row)
		if err != nil {
			return nil, err
		}
		if !v.IsNull() && types.ToBool(v) {
			kept = append(kept, row)
		}
	}
	return kept, nil
}

func columnKey(t *catalog.TableInfo, c *catalog.ColumnInfo) string {
	for _, ix := range t.Indexes {
		if ix.State != catalog.StatePublic || ix.Columns[0].Offset != c.Offset {
			continue
		}
		switch {
		case ix.Primary:
			return "PRI"
		case ix.Unique && len(ix.Columns) == 1:
			return "UNI"
		default:
			return "MUL"
		}
	}
	return ""
}

// TypeString renders a column type as SHOW CREATE TABLE does.
func TypeString(ft *types.FieldType) string {
	var s string
	switch ft.Tp {
	case mysql.TypeTiny:
		s = "tinyint"
	case mysql.TypeShort:
		s = "smallint"
	case mysql.TypeInt24:
		s = "mediumint"
	case mysql.TypeLong:
		s = "int"
	case mysql.TypeLonglong:
		s = "bigint"
	case mysql.TypeFloat:
		s = "float"
	case mysql.TypeDouble:
		s = "double"
	case mysql.TypeNewDecimal:
		s = fmt.Sprintf("decimal(%d,%d)", ft.Flen, ft.Decimal)
	case mysql.TypeString:
		if ft.IsBinary() {
			s = fmt.Sprintf("binary(%d)", ft.Flen)
		} else {
			s = fmt.Sprintf("char(%d)", ft.Flen)
		}
	case mysql.TypeVarchar, mysql.TypeVarString:
		if ft.IsBinary() {
			s = fmt.Sprintf("varbinary(%d)", ft.Flen)
		} else {
			s = fmt.Sprintf("varchar(%d)", ft.Flen)
		}
	case mysql.TypeTinyBlob, mysql.TypeBlob, mysql.TypeMediumBlob, mysql.TypeLongBlob:
		prefix := map[byte]string{mysql.TypeTinyBlob: "tiny", mysql.TypeBlob: "", mysql.TypeMediumBlob: "medium", mysql.TypeLongBlob: "long"}[ft.Tp]
		if ft.IsBinary() {
			s = prefix + "blob"
		} else {
			s = prefix + "text"
		}
	case mysql.TypeDate:
		s = "date"
	case mysql.TypeDatetime:
		s = "datetime"
		if ft.Decimal > 0 {
			s += fmt.Sprintf("(%d)", ft.Decimal)
		}
	case mysql.TypeTimestamp:
		s = "timestamp"
		if ft.Decimal > 0 {
			s += fmt.Sprintf("(%d)", ft.Decimal)
		}
	case mysql.TypeDuration:
		s = "time"
		if ft.Decimal > 0 {
			s += fmt.Sprintf("(%d)", ft.Decimal)
		}
	case mysql.TypeYear:
		s = "year"
	case mysql.TypeEnum, mysql.TypeSet:
		name := "enum"
		if ft.Tp == mysql.TypeSet {
			name = "set"
		}
		q := make([]string, len(ft.Elems))
		for i, e := range ft.Elems {
			q[i] = "'" + strings.ReplaceAll(e, "'", "''") + "'"
		}
		s = name + "(" + strings.Join(q, ",") + ")"
	case mysql.TypeJSON:
		s = "json"
	default:
		s = fmt.Sprintf("type%d", ft.Tp)
	}
	if ft.Unsigned() && !ft.IsString() {
		s += " unsigned"
	}
	return s
}

// ShowCreateTable renders a table's definition as MySQL 8 does; db is
// the table's database (foreign keys name a parent elsewhere with its).
func ShowCreateTable(db string, t *catalog.TableInfo) string {
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE TABLE `%s` (\n", t.Name)
	var lines []string
	for _, c := range t.Columns {
		l := fmt.Sprintf("  `%s` %s", c.Name, TypeString(&c.Type))
		if c.Type.IsText() && (c.Type.Collate != t.Collate || columnCharset(&c.Type) != t.Charset) {
			l += fmt.Sprintf(" CHARACTER SET %s COLLATE %s", columnCharset(&c.Type), c.Type.CollationName())
		}
		if c.Type.NotNull() {
			l += " NOT NULL"
		} else if c.Type.Tp == mysql.TypeTimestamp {
			// As MySQL: a TIMESTAMP says it is nullable, which
			// explicit_defaults_for_timestamp=OFF would not assume.
			l += " NULL"
		}
		switch {
		case c.DefaultNow:
			l += " DEFAULT CURRENT_TIMESTAMP"
		case c.HasDefault && c.DefaultNull:
			l += " DEFAULT NULL"
		case c.HasDefault:
			l += " DEFAULT '" + strings.ReplaceAll(c.Default, "'", "''") + "'"
		case !c.Type.NotNull() && !c.AutoIncrement:
			l += " DEFAULT NULL"
		}
		if c.OnUpdateNow {
			l += " ON UPDATE CURRENT_TIMESTAMP"
		}
		if c.AutoIncrement {
			l += " AUTO_INCREMENT"
		}
		if c.Comment != "" {
			l += " COMMENT '" + strings.ReplaceAll(c.Comment, "'", "''") + "'"
		}
		lines = append(lines, l)
	}
	for _, ix := range t.Indexes {
		if ix.State != catalog.StatePublic {
			continue
		}
		parts := make([]string, len(ix.Columns))
		for i, c := range ix.Columns {
			parts[i] = "`" + c.Name + "`"
			if c.Length > 0 {
				parts[i] += fmt.Sprintf("(%d)", c.Length)
			}
		}
		cols := strings.Join(parts, ",")
		switch {
		case ix.Primary:
			lines = append(lines, "  PRIMARY KEY ("+cols+")")
		case ix.Unique:
			lines = append(lines, fmt.Sprintf("  UNIQUE KEY `%s` (%s)", ix.Name, cols))
		default:
			lines = append(lines, fmt.Sprintf("  KEY `%s` (%s)", ix.Name, cols))
		}
	}
	// Constraints in name order, as MySQL 8 and MariaDB list them.
	fks := slices.Clone(t.ForeignKeys)
	slices.SortFunc(fks, func(a, b *catalog.FKInfo) int { return strings.Compare(a.Name, b.Name) })
	for _, fk := range fks {
		lines = append(lines, "  "+fk.Clause(db))
	}
	b.WriteString(strings.Join(lines, ",\n"))
	fmt.Fprintf(&b, "\n) ENGINE=InnoDB DEFAULT CHARSET=%s COLLATE=%s", t.Charset, t.Collate)
	if t.AutoIDCache != 0 {
		fmt.Fprintf(&b, " /*T![auto_id_cache] AUTO_ID_CACHE=%d */", t.AutoIDCache)
	}
	if t.Comment != "" {
		b.WriteString(" COMMENT='" + strings.ReplaceAll(t.Comment, "'", "''") + "'")
	}
	return b.String()
}

// FieldList describes the columns of table in the current database whose
// names match the LIKE pattern wildcard ("" for all): COM_FIELD_LIST.
func (s *Session) FieldList(_ context.Context, table, wildcard string) ([]planner.ResultField, error) {
	if s.db == "" {
		return nil, errno.New(errno.ErNoDB, "No database selected")
	}
	t := s.d.catalog.InfoSchema().Table(s.db, table)
	if t == nil {
		return nil, errno.New(errno.ErNoSuchTable, "Table '%s.%s' doesn't exist", s.db, table)
	}
	var out []planner.ResultField
	for _, c := range t.Columns {
		if wildcard != "" && !expression.MatchLike(strings.ToLower(c.Name), strings.ToLower(wildcard), '\\') {
			continue
		}
		out = append(out, planResultField(s.db, t, c))
	}
	return out, nil
}

// showStmt runs SHOW; SHOW GRANTS is in acl_stmt.go.
func (s *Session) showStmt(ctx context.Context, x *ast.ShowStmt, _ stmtArgs) (Result, error) {
	if x.Tp == ast.ShowGrants {
		return s.showGrants(x)
	}
	return s.execShow(ctx, x)
}
