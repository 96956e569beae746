package e2e

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/basalt-db/basalt/testkit"
	"github.com/go-sql-driver/mysql"
)

// TestRandomSQL runs statements generated from a small grammar — DML,
// queries, transactions, prepared statements and a little DDL over three
// tables, and malformed statements: cut short, random tokens, garbage
// bytes, huge literals, deep nesting — against a fresh server from two
// connections (BASALT_RANDSQL_WORKERS), for BASALT_RANDSQL_SECONDS
// (default 30, 10 with -short).
//
// Every statement may fail with a MySQL error; none may lose its
// connection, hang for two minutes, or make the server panic or exit. At
// the end ADMIN CHECK TABLE (CHECK TABLE on MariaDB) must pass for every
// table. The run is reproducible from the seed it logs: set
// BASALT_RANDSQL_SEED to replay it (each connection's statements are the
// same; how the two interleave is not), and BASALT_RANDSQL_TRACE=path
// writes each connection's statements and their errors to path.N.
func TestRandomSQL(t *testing.T) {
	secs := 30
	if testing.Short() {
		secs = 10
	}
	secs = envInt("BASALT_RANDSQL_SECONDS", secs)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("BASALT_RANDSQL_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("BASALT_RANDSQL_SEED=%q: %v", s, err)
		}
		seed = n
	}
	workers := envInt("BASALT_RANDSQL_WORKERS", 2)
	// CREATE/DROP INDEX run against concurrent DML (BASALT_RANDSQL_DDL=0
	// leaves them out, to tell a DDL bug from others).
	ddl := os.Getenv("BASALT_RANDSQL_DDL") != "0"
	t.Logf("random SQL for %ds from %d connections (DDL: %v); replay with BASALT_RANDSQL_SEED=%d", secs, workers, ddl, seed)

	target := os.Getenv(targetEnv)
	srv := testkit.StartTarget(t, target)
	admin := srv.OpenDB(t, "")
	mustExec(t, admin, "CREATE DATABASE randsql")
	db, err := sql.Open("mysql", srv.DSN("randsql"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	g := newSQLGen(rand.New(rand.NewPCG(seed, 0)))
	for _, tb := range g.tables {
		t.Logf("%s", tb.ddl)
		mustExec(t, db, tb.ddl)
	}

	deadline := time.Now().Add(time.Duration(secs) * time.Second)
	stats := make([]*randStats, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		stats[w] = &randStats{codes: map[uint16]int{}}
		wg.Add(1)
		go func() {
			defer wg.Done()
			gen := &sqlGen{r: rand.New(rand.NewPCG(seed, uint64(w+1))), tables: g.tables, ddl: ddl}
			errs[w] = runRandomSQL(db, w, gen, deadline, stats[w])
		}()
	}
	wg.Wait()

	total := &randStats{codes: map[uint16]int{}}
	for _, s := range stats {
		total.add(s)
	}
	t.Logf("%d statements (%d well-formed, %d malformed, %d prepared): %d succeeded; MySQL errors by code: %s",
		total.run, total.wellFormed, total.run-total.wellFormed, total.prepared, total.ok, total.codeSummary())
	for _, n := range total.notes {
		t.Log(n)
	}
	for w, err := range errs {
		if err != nil {
			t.Errorf("connection %d: %v", w, err)
		}
	}

	// The server is still up, and every table is consistent.
	if err := db.Ping(); err != nil {
		t.Fatalf("the server does not answer after the run: %v", err)
	}
	for _, tb := range g.tables {
		check := "ADMIN CHECK TABLE " + tb.name
		if srv.Flavor() == testkit.MariaDB {
			check = "CHECK TABLE " + tb.name
		}
		if _, err := db.Exec(check); err != nil {
			t.Errorf("%s: %v", check, err)
		}
		var n int
		if err := db.QueryRow("SELECT COUNT(*) FROM " + tb.name).Scan(&n); err != nil {
			t.Errorf("counting %s: %v", tb.name, err)
		}
		t.Logf("%s: %d rows", tb.name, n)
	}
	if srv.Flavor() == testkit.Basalt {
		if out := srv.Output(); strings.Contains(out, "panic") {
			t.Errorf("the server logged a panic:\n%s", out)
		}
	}
	if total.run == 0 {
		t.Fatal("no statement ran")
	}
}

// randStats counts what the statements of one connection did.
type randStats struct {
	run, wellFormed, prepared, ok int
	codes                         map[uint16]int
	notes                         []string // slow statements, odd errors
}

func (s *randStats) add(o *randStats) {
	s.run += o.run
	s.wellFormed += o.wellFormed
	s.prepared += o.prepared
	s.ok += o.ok
	for c, n := range o.codes {
		s.codes[c] += n
	}
	s.notes = append(s.notes, o.notes...)
}

func (s *randStats) codeSummary() string {
	var codes []int
	for c := range s.codes {
		codes = append(codes, int(c))
	}
	sort.Ints(codes)
	var b strings.Builder
	for i, c := range codes {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d×%d", c, s.codes[uint16(c)])
	}
	return b.String()
}

// statementTimeout is how long one statement may take before the test
// calls it hung: generous, for a loaded two-core machine.
const statementTimeout = 2 * time.Minute

// runRandomSQL runs g's statements on one connection until deadline. It
// returns an error for the first statement that lost its connection, hung,
// or made the server panic, with the statements that led to it.
func runRandomSQL(db *sql.DB, worker int, g *sqlGen, deadline time.Time, stats *randStats) error {
	ctx := context.Background()
	var conn *sql.Conn
	connect := func() error {
		var err error
		if conn, err = db.Conn(ctx); err != nil {
			return err
		}
		// Keep lock waits between the two connections short.
		_, err = conn.ExecContext(ctx, "SET SESSION innodb_lock_wait_timeout = 1")
		return err
	}
	if err := connect(); err != nil {
		return err
	}
	defer func() { conn.Close() }()
	var recent []string // the last statements, for the report
	var trace io.Writer
	if path := os.Getenv("BASALT_RANDSQL_TRACE"); path != "" {
		f, err := os.Create(fmt.Sprintf("%s.%d", path, worker))
		if err != nil {
			return err
		}
		defer f.Close()
		trace = f
	}
	for time.Now().Before(deadline) {
		st := g.statement()
		recent = append(recent, st.describe())
		if len(recent) > 20 {
			recent = recent[1:]
		}
		stats.run++
		if st.wellFormed {
			stats.wellFormed++
		}
		if len(st.args) > 0 {
			stats.prepared++
		}
		start := time.Now()
		err := runStatement(ctx, conn, st)
		if trace != nil {
			fmt.Fprintf(trace, "%s -- %v\n", st.describe(), err)
		}
		if d := time.Since(start); d > 2*time.Second {
			stats.notes = append(stats.notes, fmt.Sprintf("took %v: %s (%v)", d.Round(time.Millisecond), st.describe(), err))
		}
		if err == nil {
			stats.ok++
			continue
		}
		var me *mysql.MySQLError
		if !errors.As(err, &me) {
			return fmt.Errorf("statement %d lost its connection or hung: %v\nthe last statements:\n%s",
				stats.run, err, strings.Join(recent, "\n"))
		}
		stats.codes[me.Number]++
		if me.Number == 1153 {
			// A statement over max_allowed_packet: the server answers
			// 1153 and closes the connection, as MySQL does (MariaDB's
			// default limit is 16 MiB, Basalt's 64 MiB).
			conn.Raw(func(any) error { return driver.ErrBadConn })
			conn.Close()
			if err := connect(); err != nil {
				return err
			}
			continue
		}
		if me.Number == 1105 {
			stats.notes = append(stats.notes, fmt.Sprintf("%s: %v", st.describe(), err))
		}
		if me.Number == 1105 && strings.Contains(me.Message, "Internal error") {
			return fmt.Errorf("statement %d made the server panic: %v\nthe last statements:\n%s",
				stats.run, err, strings.Join(recent, "\n"))
		}
		if me.Number == 8003 {
			return fmt.Errorf("ADMIN CHECK TABLE failed during the run: %v\nthe last statements:\n%s",
				err, strings.Join(recent, "\n"))
		}
	}
	_, err := conn.ExecContext(ctx, "ROLLBACK")
	return err
}

// runStatement runs one statement, reading every row of a result.
func runStatement(ctx context.Context, conn *sql.Conn, st randStatement) error {
	ctx, cancel := context.WithTimeout(ctx, statementTimeout)
	defer cancel()
	if !st.query {
		_, err := conn.ExecContext(ctx, st.sql, st.args...)
		return err
	}
	rows, err := conn.QueryContext(ctx, st.sql, st.args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	vals := make([]any, len(cols))
	for i := range vals {
		vals[i] = new(sql.RawBytes)
	}
	for rows.Next() {
		if err := rows.Scan(vals...); err != nil {
			return err
		}
	}
	return rows.Err()
}

// randStatement is one generated statement. With args it is sent as a
// prepared statement (the binary protocol), otherwise as text.
type randStatement struct {
	sql        string
	args       []any
	query      bool // returns rows
	wellFormed bool
}

func (s randStatement) describe() string {
	q := s.sql
	if len(q) > 300 {
		q = fmt.Sprintf("%s... (%d bytes)", q[:300], len(q))
	}
	q = strconv.QuoteToASCII(q)
	if len(s.args) > 0 {
		q += fmt.Sprintf(" args %v", s.args)
	}
	return q
}

// randTable is one table of the run. Every table has the columns
//
//	id INT, a INT, b VARCHAR(16), c DECIMAL(8,2), d DATETIME
//
// and a primary key of one of four shapes, and a few secondary indexes.
type randTable struct {
	name string
	ddl  string
}

var randColumns = []string{"id", "a", "b", "c", "d"}

// sqlGen generates statements. The grammar is small on purpose: values
// from small domains, so that rows collide on keys and WHERE clauses
// match.
type sqlGen struct {
	r      *rand.Rand
	tables []randTable
	ddl    bool // CREATE and DROP INDEX during the run
}

func newSQLGen(r *rand.Rand) *sqlGen {
	g := &sqlGen{r: r}
	indexes := []string{"UNIQUE KEY ua (a)", "KEY kb (b)", "KEY kcd (c, d)", "UNIQUE KEY ud (d)", "KEY kab (a, b)", "UNIQUE KEY ubc (b, c)"}
	for i := range 3 {
		name := "t" + strconv.Itoa(i)
		cols := []string{"id INT NOT NULL", "a INT", "b VARCHAR(16)", "c DECIMAL(8,2)", "d DATETIME"}
		var keys []string
		switch shape := (i + r.IntN(4)) % 4; shape {
		case 0:
			keys = append(keys, "PRIMARY KEY (id)")
		case 1:
			// no primary key: a hidden row id
		case 2:
			cols[2] = "b VARCHAR(16) NOT NULL"
			keys = append(keys, "PRIMARY KEY (b, id)")
		case 3:
			cols[0] = "id INT NOT NULL AUTO_INCREMENT"
			keys = append(keys, "PRIMARY KEY (id)")
		}
		for _, k := range r.Perm(len(indexes))[:1+r.IntN(3)] {
			keys = append(keys, indexes[k])
		}
		ddl := fmt.Sprintf("CREATE TABLE %s (%s)", name, strings.Join(append(cols, keys...), ", "))
		g.tables = append(g.tables, randTable{name: name, ddl: ddl})
	}
	return g
}

func (g *sqlGen) pick(choices ...string) string { return choices[g.r.IntN(len(choices))] }
func (g *sqlGen) chance(p float64) bool         { return g.r.Float64() < p }
func (g *sqlGen) table() string                 { return g.tables[g.r.IntN(len(g.tables))].name }
func (g *sqlGen) column() string                { return randColumns[g.r.IntN(len(randColumns))] }

// value returns a literal for column col: mostly in range and colliding,
// sometimes NULL, out of range or of another type.
func (g *sqlGen) value(col string) string {
	if g.chance(0.08) {
		return "NULL"
	}
	if g.chance(0.04) {
		return g.pick("'7'", "1.5", "-0", "''", "'x'", "2147483648", "-2147483649", "1e3", "0x41", "TRUE", "'2024-01-01'")
	}
	switch col {
	case "id", "a":
		if g.chance(0.05) {
			return g.pick("2147483647", "-2147483648", "0")
		}
		return strconv.Itoa(g.r.IntN(40) - 5)
	case "b":
		if g.chance(0.05) {
			return g.pick("'A'", "'a '", "'é'", "'xxxxxxxxxxxxxxxxx'", "'it''s'", `'\\'`, "'%'")
		}
		s := make([]byte, g.r.IntN(4))
		for i := range s {
			s[i] = "abcd"[g.r.IntN(4)]
		}
		return "'" + string(s) + "'"
	case "c":
		if g.chance(0.05) {
			return g.pick("999999.99", "-999999.99", "1000000", "0.005", "-0.00", "123.456")
		}
		return fmt.Sprintf("%d.%02d", g.r.IntN(20)-5, g.r.IntN(4)*25)
	default: // d
		if g.chance(0.05) {
			return g.pick("'0000-00-00 00:00:00'", "'2024-02-30 00:00:00'", "'9999-12-31 23:59:59'", "'1000-01-01'", "'2024-01-01 24:00:00'", "'garbage'")
		}
		return fmt.Sprintf("'2024-01-%02d %02d:00:00'", 1+g.r.IntN(5), g.r.IntN(3))
	}
}

// arg is a prepared statement argument for column col.
func (g *sqlGen) arg(col string) any {
	if g.chance(0.08) {
		return nil
	}
	switch col {
	case "id", "a":
		return int64(g.r.IntN(40) - 5)
	case "b":
		return g.pick("", "a", "ab", "abc", "d", "A")
	case "c":
		if g.chance(0.5) {
			return float64(g.r.IntN(80)-20) / 4
		}
		return fmt.Sprintf("%d.%02d", g.r.IntN(20)-5, g.r.IntN(100))
	default:
		if g.chance(0.3) {
			return time.Date(2024, 1, 1+g.r.IntN(5), g.r.IntN(3), 0, 0, 0, time.UTC)
		}
		return fmt.Sprintf("2024-01-%02d %02d:00:00", 1+g.r.IntN(5), g.r.IntN(3))
	}
}

// expr is a scalar expression over the columns.
func (g *sqlGen) expr(depth int) string {
	col := g.column()
	if depth > 2 || g.chance(0.4) {
		if g.chance(0.5) {
			return col
		}
		return g.value(col)
	}
	switch g.r.IntN(8) {
	case 0:
		return fmt.Sprintf("(%s %s %s)", g.expr(depth+1), g.pick("+", "-", "*", "/", "%", "DIV"), g.expr(depth+1))
	case 1:
		return fmt.Sprintf("CONCAT(%s, %s)", g.expr(depth+1), g.expr(depth+1))
	case 2:
		return fmt.Sprintf("COALESCE(%s, %s)", g.expr(depth+1), g.expr(depth+1))
	case 3:
		return fmt.Sprintf("IF(%s, %s, %s)", g.cond(depth+1), g.expr(depth+1), g.expr(depth+1))
	case 4:
		return fmt.Sprintf("%s(%s)", g.pick("ABS", "LENGTH", "UPPER", "LOWER", "ROUND", "FLOOR", "-"), g.expr(depth+1))
	case 5:
		return fmt.Sprintf("CAST(%s AS %s)", g.expr(depth+1), g.pick("SIGNED", "UNSIGNED", "CHAR", "DECIMAL(10,3)", "DATETIME", "DATE"))
	case 6:
		return fmt.Sprintf("CASE WHEN %s THEN %s ELSE %s END", g.cond(depth+1), g.expr(depth+1), g.expr(depth+1))
	default:
		return col
	}
}

// cond is a boolean condition, often on an indexed column with a
// constant, so that the planner picks point gets and range scans.
func (g *sqlGen) cond(depth int) string {
	col := g.column()
	if depth < 2 && g.chance(0.3) {
		return fmt.Sprintf("(%s %s %s)", g.cond(depth+1), g.pick("AND", "OR", "XOR"), g.cond(depth+1))
	}
	switch g.r.IntN(9) {
	case 0:
		return fmt.Sprintf("%s IS %sNULL", col, g.pick("", "NOT "))
	case 1:
		return fmt.Sprintf("%s BETWEEN %s AND %s", col, g.value(col), g.value(col))
	case 2:
		vals := make([]string, 1+g.r.IntN(4))
		for i := range vals {
			vals[i] = g.value(col)
		}
		return fmt.Sprintf("%s %sIN (%s)", col, g.pick("", "NOT "), strings.Join(vals, ", "))
	case 3:
		return fmt.Sprintf("b LIKE '%s'", g.pick("a%", "%b", "_", "%", "a_c", `\%`))
	case 4:
		return "NOT " + g.cond(depth+1)
	case 5:
		return fmt.Sprintf("%s %s %s", g.expr(depth+1), g.pick("=", "<", ">", "<=", ">=", "<>", "<=>"), g.expr(depth+1))
	default:
		return fmt.Sprintf("%s %s %s", col, g.pick("=", "=", "<", ">", "<=", ">=", "<>", "<=>"), g.value(col))
	}
}

func (g *sqlGen) where() string {
	if g.chance(0.15) {
		return ""
	}
	return " WHERE " + g.cond(0)
}

func (g *sqlGen) orderLimit(forDML bool) string {
	var s string
	if g.chance(0.5) {
		s += " ORDER BY " + g.column()
		if g.chance(0.3) {
			s += " DESC"
		}
		if !forDML && g.chance(0.3) {
			s += ", " + g.column()
		}
	}
	if g.chance(0.5) {
		s += " LIMIT " + strconv.Itoa(g.r.IntN(6))
		if !forDML && g.chance(0.3) {
			s += " OFFSET " + strconv.Itoa(g.r.IntN(4))
		}
	}
	return s
}

// statement returns the next statement: most well-formed, some malformed.
func (g *sqlGen) statement() randStatement {
	if g.chance(0.12) {
		return g.malformed()
	}
	st := g.wellFormed()
	st.wellFormed = true
	return st
}

func (g *sqlGen) wellFormed() randStatement {
	t := g.table()
	switch n := g.r.IntN(100); {
	case n < 18:
		return g.insert(t)
	case n < 28:
		return randStatement{sql: fmt.Sprintf("UPDATE %s SET %s%s%s", t, g.assignments(), g.where(), g.orderLimit(true))}
	case n < 34:
		return randStatement{sql: fmt.Sprintf("DELETE FROM %s%s%s", t, g.where(), g.orderLimit(true))}
	case n < 52:
		cols := "*"
		if g.chance(0.5) {
			cols = g.expr(0) + ", " + g.column()
		}
		return randStatement{query: true, sql: fmt.Sprintf("SELECT %s%s FROM %s%s%s", g.pick("", "", "DISTINCT "), cols, t, g.where(), g.orderLimit(false))}
	case n < 62:
		col := g.column()
		sql := fmt.Sprintf("SELECT %s, COUNT(*), %s FROM %s%s GROUP BY %s", col, g.aggregate(), t, g.where(), col)
		if g.chance(0.3) {
			sql += " HAVING COUNT(*) " + g.pick(">", "<", "=") + " " + strconv.Itoa(g.r.IntN(3))
		}
		if g.chance(0.5) {
			sql += " ORDER BY " + col
		}
		return randStatement{query: true, sql: sql}
	case n < 66:
		return randStatement{query: true, sql: fmt.Sprintf("SELECT %s, %s FROM %s%s", g.aggregate(), g.aggregate(), t, g.where())}
	case n < 80:
		return g.prepared(t)
	case n < 85:
		return randStatement{sql: "BEGIN"}
	case n < 90:
		return randStatement{sql: "COMMIT"}
	case n < 93:
		return randStatement{sql: "ROLLBACK"}
	case n < 94:
		return randStatement{sql: "ADMIN CHECK TABLE " + t}
	case n < 95 && g.ddl:
		return randStatement{sql: fmt.Sprintf("CREATE %sINDEX x%d ON %s (%s)", g.pick("", "UNIQUE "), g.r.IntN(3), t, g.column())}
	case n < 96 && g.ddl:
		return randStatement{sql: fmt.Sprintf("DROP INDEX x%d ON %s", g.r.IntN(3), t)}
	case n < 97:
		return randStatement{query: true, sql: "SELECT " + g.expr(0)}
	case n < 98:
		return randStatement{sql: fmt.Sprintf("ANALYZE TABLE %s", t)}
	default:
		return randStatement{query: true, sql: fmt.Sprintf("EXPLAIN SELECT * FROM %s%s", t, g.where())}
	}
}

func (g *sqlGen) aggregate() string {
	return fmt.Sprintf("%s(%s%s)", g.pick("COUNT", "SUM", "MIN", "MAX", "AVG"), g.pick("", "", "DISTINCT "), g.column())
}

func (g *sqlGen) assignments() string {
	var set []string
	for _, c := range g.r.Perm(len(randColumns))[:1+g.r.IntN(2)] {
		col := randColumns[c]
		e := g.value(col)
		switch g.r.IntN(4) {
		case 0:
			e = g.expr(1)
		case 1:
			if col == "id" || col == "a" {
				e = col + " + " + strconv.Itoa(g.r.IntN(3)+1)
			}
		}
		set = append(set, col+" = "+e)
	}
	return strings.Join(set, ", ")
}

func (g *sqlGen) insert(t string) randStatement {
	cols := []string{"id", "a", "b", "c", "d"}
	if g.chance(0.3) {
		cols = cols[:1+g.r.IntN(4)]
	}
	rows := make([]string, 1+g.r.IntN(3))
	for i := range rows {
		vals := make([]string, len(cols))
		for j, c := range cols {
			vals[j] = g.value(c)
		}
		rows[i] = "(" + strings.Join(vals, ", ") + ")"
	}
	verb := g.pick("INSERT", "INSERT", "INSERT IGNORE", "REPLACE")
	sql := fmt.Sprintf("%s INTO %s (%s) VALUES %s", verb, t, strings.Join(cols, ", "), strings.Join(rows, ", "))
	if verb == "INSERT" && g.chance(0.3) {
		sql += " ON DUPLICATE KEY UPDATE " + g.assignments()
	}
	return randStatement{sql: sql}
}

// prepared is a statement with placeholders, sent with arguments.
func (g *sqlGen) prepared(t string) randStatement {
	col := g.column()
	switch g.r.IntN(5) {
	case 0:
		return randStatement{query: true, sql: fmt.Sprintf("SELECT * FROM %s WHERE %s = ?", t, col), args: []any{g.arg(col)}}
	case 1:
		return randStatement{query: true, sql: fmt.Sprintf("SELECT id, %s FROM %s WHERE %s BETWEEN ? AND ? ORDER BY id LIMIT ?", col, t, col),
			args: []any{g.arg(col), g.arg(col), int64(g.r.IntN(5))}}
	case 2:
		return randStatement{sql: fmt.Sprintf("%s INTO %s (id, a, b, c, d) VALUES (?, ?, ?, ?, ?)", g.pick("INSERT", "INSERT IGNORE", "REPLACE"), t),
			args: []any{g.arg("id"), g.arg("a"), g.arg("b"), g.arg("c"), g.arg("d")}}
	case 3:
		other := g.column()
		return randStatement{sql: fmt.Sprintf("UPDATE %s SET %s = ? WHERE %s = ?", t, col, other), args: []any{g.arg(col), g.arg(other)}}
	default:
		return randStatement{sql: fmt.Sprintf("DELETE FROM %s WHERE %s = ?", t, col), args: []any{g.arg(col)}}
	}
}

var randTokens = []string{
	"SELECT", "FROM", "WHERE", "(", ")", ",", "*", "t0", "t1", "id", "a", "b", "1", "'x'", "NULL", "AND", "OR",
	"INSERT", "INTO", "VALUES", "UPDATE", "SET", "=", "<", "ORDER", "BY", "GROUP", "LIMIT", "DELETE", ";",
	"BEGIN", "COMMIT", "`", "'", "\"", "--", "/*", "*/", "?", "@x", "@@autocommit", "-", "+", "1e999",
	"0x", "x'4", "b'2'", "\\", "NOT", "IN", "LIKE", "BETWEEN", "CASE", "WHEN", "END", "COUNT(", "DISTINCT",
	"UNION", "JOIN", "ON", "AS", "KEY", "PRIMARY", "CREATE", "TABLE", "DROP", "INDEX", "ALTER", "\x00", "é",
}

// malformed returns a statement that is wrong in one of the ways hostile
// or broken clients are: cut short, random tokens or bytes, literals and
// nesting far beyond what real statements hold.
func (g *sqlGen) malformed() randStatement {
	switch g.r.IntN(9) {
	case 0, 1: // a well-formed statement cut short
		st := g.wellFormed()
		if len(st.sql) > 1 {
			st.sql = st.sql[:1+g.r.IntN(len(st.sql)-1)]
		}
		return randStatement{sql: st.sql, query: st.query}
	case 2: // random tokens
		toks := make([]string, 1+g.r.IntN(15))
		for i := range toks {
			toks[i] = randTokens[g.r.IntN(len(randTokens))]
		}
		return randStatement{sql: strings.Join(toks, " "), query: g.chance(0.5)}
	case 3: // garbage bytes
		b := make([]byte, 1+g.r.IntN(100))
		for i := range b {
			b[i] = byte(g.r.IntN(256))
		}
		return randStatement{sql: string(b)}
	case 4: // a huge string literal
		n := 1 << (10 + g.r.IntN(11)) // 1 KiB to 1 MiB
		lit := "'" + strings.Repeat("x", n) + "'"
		return randStatement{sql: g.pick(
			fmt.Sprintf("INSERT INTO %s (id, b) VALUES (%d, %s)", g.table(), g.r.IntN(40), lit),
			fmt.Sprintf("SELECT * FROM %s WHERE b = %s", g.table(), lit),
			fmt.Sprintf("UPDATE %s SET b = %s WHERE id = 1", g.table(), lit),
			"SELECT LENGTH("+lit+")")}
	case 5: // a huge number
		n := 1 << (4 + g.r.IntN(14)) // 16 to 128 Ki digits
		num := "9" + strings.Repeat(g.pick("0", "9", "1"), n)
		if g.chance(0.3) {
			num = "0." + num
		}
		if g.chance(0.3) {
			num += "e" + g.pick("999999999999", "-99999", "5")
		}
		return randStatement{sql: g.pick(
			fmt.Sprintf("INSERT INTO %s (id, a, c) VALUES (%d, %s, %s)", g.table(), g.r.IntN(40), num, num),
			fmt.Sprintf("SELECT * FROM %s WHERE c = %s OR a > %s", g.table(), num, num),
			fmt.Sprintf("SELECT %s + 1, -%s, %s * %s", num, num, num, num))}
	case 6: // a long list
		n := 1 << (6 + g.r.IntN(10)) // 64 to 32 Ki items
		items := make([]string, n)
		for i := range items {
			items[i] = strconv.Itoa(i)
		}
		return randStatement{sql: g.pick(
			fmt.Sprintf("SELECT * FROM %s WHERE id IN (%s)", g.table(), strings.Join(items, ", ")),
			fmt.Sprintf("SELECT * FROM %s WHERE a = %s", g.table(), strings.Join(items, " OR a = ")),
			"SELECT "+strings.Join(items, ", "))}
	default: // deep nesting
		n := 1 << (4 + g.r.IntN(17)) // 16 to 1 Mi levels
		var sql string
		switch g.r.IntN(6) {
		case 0:
			sql = "SELECT " + strings.Repeat("(", n) + "1" + strings.Repeat(")", n)
		case 1:
			sql = "SELECT " + strings.Repeat("-", n) + "1"
		case 2:
			sql = fmt.Sprintf("SELECT * FROM %s WHERE %sa = 1", g.table(), strings.Repeat("NOT ", n))
		case 3:
			sql = "SELECT " + strings.Repeat("ABS(", n) + "1" + strings.Repeat(")", n)
		case 4:
			sql = "SELECT " + strings.Repeat("1 + ", n) + "1"
		default:
			n = min(n, 1<<19) // 9 MiB: under MariaDB's 16 MiB max_allowed_packet too
			sql = "SELECT * FROM " + strings.Repeat("(SELECT * FROM ", n) + g.table() + strings.Repeat(") x", n)
		}
		return randStatement{sql: sql, query: true}
	}
}
