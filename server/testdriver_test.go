package server

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/basalt-db/basalt/errno"
)

// testDriver is a Driver with a fixed set of accounts and databases, whose
// sessions understand a tiny fixed vocabulary of statements (see run). It
// stands in for the SQL layer, so the tests exercise only the protocol.
type testDriver struct {
	srv *Server // for KILL and SHOW PROCESSLIST; set after New

	opened atomic.Int32
	closed atomic.Int32

	// sleeping receives a connection id whenever a "select sleep" starts.
	sleeping chan uint32
}

type testAccount struct {
	plugin   string
	password string
}

var testAccounts = map[string]testAccount{
	"root":      {},
	"native":    {plugin: PluginNativePassword, password: "native-pw"},
	"sha2":      {plugin: PluginCachingSHA2Password, password: "sha2-pw"},
	"sha2-nopw": {plugin: PluginCachingSHA2Password},
}

var testDatabases = map[string]bool{"test": true, "other": true}

func newTestDriver() *testDriver {
	return &testDriver{sleeping: make(chan uint32, 16)}
}

func (d *testDriver) LookupUser(_ context.Context, user, host string) (Credential, bool, error) {
	a, ok := testAccounts[user]
	if !ok {
		return Credential{}, false, nil
	}
	cred := Credential{Plugin: a.plugin}
	if a.password != "" {
		cred.NativeHash = NativePasswordHash([]byte(a.password))
		cred.CheckPassword = func(p []byte) bool { return string(p) == a.password }
	}
	return cred, true, nil
}

func (d *testDriver) OpenSession(_ context.Context, info ConnInfo) (Session, error) {
	if info.DB != "" && !testDatabases[info.DB] {
		return nil, errno.BadDB(info.DB)
	}
	d.opened.Add(1)
	return &testSession{d: d, info: info, db: info.DB}, nil
}

// testSession runs statements of a fixed vocabulary; anything else is a
// syntax error:
//
//	select 1                     one BIGINT column, one row
//	select types                 typesColumns × typesRows: every column type
//	select long N                one LONGBLOB of N bytes
//	select rows N                N rows (id, name), generated while streamed
//	select rowerror              two rows, then an error from Rows.Next
//	select database()            the current database, or NULL
//	select connection_id()
//	select sleep                 waits for its context (KILL QUERY)
//	select panic                 panics
//	select error                 fails with 1146
//	insert                       3 affected rows, last insert id 42, 1 warning
//	begin | commit | rollback
//	use DB
//	kill [query | connection] N
//	set idle MS                  close the connection after MS ms idle
//	show processlist
//	select ?, ?, ...             (prepared) one row echoing the parameters
type testSession struct {
	d        *testDriver
	info     ConnInfo
	db       string
	inTxn    bool
	warnings uint16
	point    pointRows
	idle     time.Duration // IdleTimeout, set by "set idle MS"
}

// IdleTimeout implements IdleTimeouter.
func (s *testSession) IdleTimeout() time.Duration { return s.idle }

// pointQuery is sysbench's point select, which the test session answers
// without allocating, to measure the server's hot path.
const (
	pointQuery     = "SELECT c FROM sbtest1 WHERE id=?"
	pointQueryText = "SELECT c FROM sbtest1 WHERE id=42"
)

var pointColumns = []Column{{Schema: "test", Table: "sbtest1", OrgTable: "sbtest1", Name: "c", OrgName: "c",
	Type: TypeString, Flags: FlagNotNull, Length: 480}}

// pointRows is one row of one 120-byte CHAR column, reused.
type pointRows struct {
	c    [120]byte
	done bool
}

func (r *pointRows) Columns() []Column { return pointColumns }
func (r *pointRows) Close() error      { return nil }
func (r *pointRows) Next(row []Value) (bool, error) {
	if r.done {
		return false, nil
	}
	row[0], r.done = BytesValue(r.c[:]), true
	return true, nil
}

func (s *testSession) ExecuteQuery(ctx context.Context, sql string, multi bool, w ResultWriter) error {
	if sql == pointQueryText {
		s.point.done = false
		return w.WriteResult(Result{Rows: &s.point}, false)
	}
	var stmts []string
	for _, q := range strings.Split(sql, ";") {
		if q = strings.TrimSpace(q); q != "" {
			stmts = append(stmts, q)
		}
	}
	if len(stmts) == 0 {
		return errno.New(errno.ErEmptyQuery, "Query was empty")
	}
	if len(stmts) > 1 && !multi {
		return syntaxError(";" + strings.SplitN(sql, ";", 2)[1])
	}
	for i, q := range stmts {
		r, err := s.run(ctx, q)
		if err != nil {
			return err
		}
		if err := w.WriteResult(r, i < len(stmts)-1); err != nil {
			return err
		}
	}
	return nil
}

func syntaxError(near string) error {
	return errno.New(errno.ErParse, "You have an error in your SQL syntax; check the manual that corresponds to your MySQL server version for the right syntax to use near '%s' at line 1", near)
}

func (s *testSession) run(ctx context.Context, q string) (Result, error) {
	s.warnings = 0
	f := strings.Fields(strings.ToLower(q))
	switch {
	case q == "select 1":
		return rowsResult([]Column{{Name: "1", Type: TypeLongLong, Flags: FlagNotNull | FlagBinary | FlagNum, Length: 1}},
			[][]Value{{IntValue(1)}}), nil
	case q == "select types":
		return rowsResult(typesColumns, typesRows()), nil
	case len(f) == 3 && f[0] == "select" && f[1] == "long":
		n, err := strconv.Atoi(f[2])
		if err != nil {
			return Result{}, syntaxError(f[2])
		}
		b := make([]byte, n)
		for i := range b {
			b[i] = 'a' + byte(i%26)
		}
		return rowsResult([]Column{{Name: "long", Type: TypeLongBlob, Flags: FlagBlob | FlagBinary, Length: 1<<32 - 1}},
			[][]Value{{BytesValue(b)}}), nil
	case len(f) == 3 && f[0] == "select" && f[1] == "rows":
		n, err := strconv.Atoi(f[2])
		if err != nil {
			return Result{}, syntaxError(f[2])
		}
		return Result{Rows: &genRows{n: n}}, nil
	case q == "select rowerror":
		return Result{Rows: &genRows{n: 10, failAt: 2}}, nil
	case q == "select database()":
		v := NullValue()
		if s.db != "" {
			v = StringValue(s.db)
		}
		return rowsResult([]Column{{Name: "database()", Type: TypeVarString, Length: 256}}, [][]Value{{v}}), nil
	case q == "select connection_id()":
		return rowsResult([]Column{{Name: "connection_id()", Type: TypeLongLong, Flags: FlagNotNull | FlagUnsigned, Length: 21}},
			[][]Value{{UintValue(uint64(s.info.ID))}}), nil
	case q == "select sleep":
		select {
		case s.d.sleeping <- s.info.ID:
		default:
		}
		select {
		case <-ctx.Done():
			return Result{}, ctx.Err()
		case <-time.After(20 * time.Second):
			return rowsResult([]Column{{Name: "sleep", Type: TypeLongLong}}, [][]Value{{IntValue(0)}}), nil
		}
	case q == "select panic":
		panic("test session panicked")
	case q == "select error":
		return Result{}, &errno.Error{Code: 1146, State: "42S02", Msg: "Table 'test.nope' doesn't exist"}
	case q == "insert":
		s.warnings = 1
		return Result{AffectedRows: 3, LastInsertID: 42, Info: "Records: 3  Duplicates: 0  Warnings: 1"}, nil
	case q == "begin":
		s.inTxn = true
		return Result{}, nil
	case q == "commit" || q == "rollback":
		s.inTxn = false
		return Result{}, nil
	case len(f) == 2 && f[0] == "use":
		return Result{}, s.UseDB(ctx, f[1])
	case len(f) >= 2 && f[0] == "kill":
		queryOnly := len(f) == 3 && f[1] == "query"
		id, err := strconv.ParseUint(f[len(f)-1], 10, 32)
		if err != nil {
			return Result{}, syntaxError(f[len(f)-1])
		}
		return Result{}, s.d.srv.Kill(uint32(id), queryOnly)
	case len(f) == 3 && f[0] == "set" && f[1] == "idle":
		ms, err := strconv.Atoi(f[2])
		if err != nil {
			return Result{}, syntaxError(f[2])
		}
		s.idle = time.Duration(ms) * time.Millisecond
		return Result{}, nil
	case q == "show processlist":
		return processListResult(s.d.srv.ProcessList()), nil
	}
	return Result{}, syntaxError(q)
}

func (s *testSession) Prepare(_ context.Context, sql string) (Stmt, error) {
	n := strings.Count(sql, "?")
	st := &testStmt{s: s, sql: sql, n: n}
	if sql == pointQuery {
		st.cols = pointColumns
		return st, nil
	}
	if n == 0 {
		// Describe the result by running the statement, as a planner would
		// by planning it.
		if r, err := s.run(context.Background(), sql); err != nil {
			return nil, err
		} else if r.Rows != nil {
			st.cols = r.Rows.Columns()
			r.Rows.Close()
		}
	} else if !strings.HasPrefix(strings.ToLower(sql), "select ?") {
		return nil, syntaxError(sql)
	}
	return st, nil
}

func (s *testSession) UseDB(_ context.Context, db string) error {
	if !testDatabases[db] {
		return errno.BadDB(db)
	}
	s.db = db
	return nil
}

func (s *testSession) FieldList(_ context.Context, table, wildcard string) ([]Column, error) {
	if s.db == "" {
		return nil, errno.New(errno.ErNoDB, "No database selected")
	}
	if table != "t" {
		return nil, &errno.Error{Code: 1146, State: "42S02", Msg: fmt.Sprintf("Table '%s.%s' doesn't exist", s.db, table)}
	}
	cols := []Column{
		{Schema: s.db, Table: "t", OrgTable: "t", Name: "id", OrgName: "id", Type: TypeLong, Flags: FlagNotNull | FlagPriKey, Length: 11},
		{Schema: s.db, Table: "t", OrgTable: "t", Name: "name", OrgName: "name", Type: TypeVarString, Length: 80},
	}
	var out []Column
	for _, c := range cols {
		if prefix, ok := strings.CutSuffix(wildcard, "%"); wildcard == "" || wildcard == c.Name || ok && strings.HasPrefix(c.Name, prefix) {
			out = append(out, c)
		}
	}
	return out, nil
}

func (s *testSession) Status() StatusFlags {
	st := StatusAutocommit
	if s.inTxn {
		st |= StatusInTrans
	}
	return st
}

func (s *testSession) WarningCount() uint16 { return s.warnings }
func (s *testSession) CurrentDB() string    { return s.db }

func (s *testSession) Reset(context.Context) error {
	s.db, s.inTxn, s.warnings = s.info.DB, false, 0
	return nil
}

func (s *testSession) Close() error {
	s.d.closed.Add(1)
	return nil
}

// testStmt runs its SQL like COM_QUERY, or echoes its parameters.
type testStmt struct {
	s    *testSession
	sql  string
	n    int
	cols []Column
}

func (t *testStmt) NumParams() int    { return t.n }
func (t *testStmt) Columns() []Column { return t.cols }
func (t *testStmt) Close() error      { return nil }

func (t *testStmt) Execute(ctx context.Context, params []Value, w ResultWriter) error {
	if t.sql == pointQuery {
		t.s.point.done = false
		return w.WriteResult(Result{Rows: &t.s.point}, false)
	}
	if t.n == 0 {
		return t.s.ExecuteQuery(ctx, t.sql, false, w)
	}
	cols := make([]Column, len(params))
	for i, p := range params {
		cols[i] = echoColumn(i, p)
	}
	return w.WriteResult(rowsResult(cols, [][]Value{params}), false)
}

// echoColumn is the column type that carries p back unchanged.
func echoColumn(i int, p Value) Column {
	c := Column{Name: fmt.Sprintf("p%d", i)}
	switch p.Kind() {
	case KindNull:
		c.Type = TypeNull
	case KindInt:
		c.Type = TypeLongLong
	case KindUint:
		c.Type, c.Flags = TypeLongLong, FlagUnsigned
	case KindFloat32:
		c.Type, c.Decimals = TypeFloat, NotFixedDecimals
	case KindFloat64:
		c.Type, c.Decimals = TypeDouble, NotFixedDecimals
	case KindDecimal:
		c.Type, c.Decimals = TypeNewDecimal, 10
	case KindBytes:
		c.Type = TypeVarString
	case KindDate:
		c.Type = TypeDate
	case KindDateTime:
		c.Type, c.Decimals = TypeDateTime, 6
	case KindTimestamp:
		c.Type, c.Decimals = TypeTimestamp, 6
	case KindTime:
		c.Type, c.Decimals = TypeTime, 6
	}
	return c
}

// sliceRows is a Rows over rows held in memory.
type sliceRows struct {
	cols []Column
	rows [][]Value
	i    int
}

func rowsResult(cols []Column, rows [][]Value) Result {
	return Result{Rows: &sliceRows{cols: cols, rows: rows}}
}

func (r *sliceRows) Columns() []Column { return r.cols }
func (r *sliceRows) Close() error      { return nil }
func (r *sliceRows) Next(row []Value) (bool, error) {
	if r.i >= len(r.rows) {
		return false, nil
	}
	copy(row, r.rows[r.i])
	r.i++
	return true, nil
}

// genRows makes n rows (id, name) as they are read, reusing one buffer:
// how a session streams a large result. With failAt > 0, Next fails there.
type genRows struct {
	n, i, failAt int
	buf          []byte
}

var genColumns = []Column{
	{Table: "gen", Name: "id", Type: TypeLongLong, Flags: FlagNotNull | FlagPriKey, Length: 20},
	{Table: "gen", Name: "name", Type: TypeVarString, Length: 120},
}

func (r *genRows) Columns() []Column { return genColumns }
func (r *genRows) Close() error      { return nil }
func (r *genRows) Next(row []Value) (bool, error) {
	if r.failAt > 0 && r.i == r.failAt {
		return false, errno.New(errno.ErUnknown, "row source failed")
	}
	if r.i >= r.n {
		return false, nil
	}
	r.buf = append(r.buf[:0], "name-"...)
	r.buf = strconv.AppendInt(r.buf, int64(r.i), 10)
	row[0], row[1] = IntValue(int64(r.i)), BytesValue(r.buf)
	r.i++
	return true, nil
}

func processListResult(list []ProcessInfo) Result {
	cols := []Column{
		{Name: "Id", Type: TypeLongLong, Flags: FlagUnsigned}, {Name: "User", Type: TypeVarString},
		{Name: "Host", Type: TypeVarString}, {Name: "db", Type: TypeVarString},
		{Name: "Command", Type: TypeVarString}, {Name: "Time", Type: TypeLong},
		{Name: "State", Type: TypeVarString}, {Name: "Info", Type: TypeVarString},
	}
	rows := make([][]Value, len(list))
	for i, p := range list {
		db, info := NullValue(), NullValue()
		if p.DB != "" {
			db = StringValue(p.DB)
		}
		if p.Info != "" {
			info = StringValue(p.Info)
		}
		rows[i] = []Value{UintValue(uint64(p.ID)), StringValue(p.User), StringValue(p.Host), db,
			StringValue(p.Command), IntValue(int64(p.Time / time.Second)), StringValue(p.State), info}
	}
	return rowsResult(cols, rows)
}

// typesColumns has one column of every type a result set can carry.
var typesColumns = []Column{
	{Name: "tiny", Type: TypeTiny, Length: 4},
	{Name: "utiny", Type: TypeTiny, Flags: FlagUnsigned, Length: 3},
	{Name: "short", Type: TypeShort, Length: 6},
	{Name: "ushort", Type: TypeShort, Flags: FlagUnsigned, Length: 5},
	{Name: "int24", Type: TypeInt24, Length: 9},
	{Name: "long", Type: TypeLong, Length: 11},
	{Name: "ulong", Type: TypeLong, Flags: FlagUnsigned, Length: 10},
	{Name: "longlong", Type: TypeLongLong, Length: 20},
	{Name: "ulonglong", Type: TypeLongLong, Flags: FlagUnsigned, Length: 20},
	{Name: "zerofill", Type: TypeLong, Flags: FlagUnsigned | FlagZerofill, Length: 6},
	{Name: "year", Type: TypeYear, Flags: FlagUnsigned | FlagZerofill, Length: 4},
	{Name: "float", Type: TypeFloat, Length: 12, Decimals: NotFixedDecimals},
	{Name: "double", Type: TypeDouble, Length: 22, Decimals: NotFixedDecimals},
	{Name: "double2", Type: TypeDouble, Length: 10, Decimals: 2},
	{Name: "decimal", Type: TypeNewDecimal, Length: 8, Decimals: 3},
	{Name: "varchar", Type: TypeVarString, Length: 80},
	{Name: "blob", Type: TypeBlob, Flags: FlagBlob | FlagBinary, Length: 65535},
	{Name: "date", Type: TypeDate, Length: 10},
	{Name: "datetime", Type: TypeDateTime, Length: 26, Decimals: 6},
	{Name: "timestamp", Type: TypeTimestamp, Length: 19},
	{Name: "time", Type: TypeTime, Length: 17, Decimals: 6},
	{Name: "json", Type: TypeJSON, Flags: FlagBlob | FlagBinary, Length: 1<<32 - 1},
	{Name: "bit", Type: TypeBit, Flags: FlagUnsigned, Length: 8},
	{Name: "enum", Type: TypeString, Flags: FlagEnum, Length: 4},
	{Name: "null", Type: TypeNull},
}

// typesRows: minimums, maximums, ordinary values, and NULLs.
func typesRows() [][]Value {
	point1, point2 := 0.1, 0.2 // not constants, whose sum is exactly 0.3
	blob := make([]byte, 256)
	for i := range blob {
		blob[i] = byte(i)
	}
	return [][]Value{
		{IntValue(-128), UintValue(0), IntValue(-32768), UintValue(0), IntValue(-8388608),
			IntValue(-2147483648), UintValue(0), IntValue(-9223372036854775808), UintValue(0),
			UintValue(0), UintValue(1901),
			Float32Value(-3.4028235e38), Float64Value(-1.7976931348623157e308), Float64Value(-0.005),
			DecimalValue([]byte("-99999.999")), StringValue(""), BytesValue([]byte{}),
			DateValue(1000, 1, 1), DateTimeValue(DateTime{Year: 1000, Month: 1, Day: 1}),
			TimestampValue(DateTime{Year: 1970, Month: 1, Day: 1, Second: 1}),
			TimeValue(-(838*time.Hour + 59*time.Minute + 59*time.Second)),
			StringValue("[]"), BytesValue([]byte{0}), StringValue("a"), NullValue()},
		{IntValue(127), UintValue(255), IntValue(32767), UintValue(65535), IntValue(8388607),
			IntValue(2147483647), UintValue(4294967295), IntValue(9223372036854775807), UintValue(18446744073709551615),
			UintValue(999999), UintValue(2155),
			Float32Value(3.4028235e38), Float64Value(1.7976931348623157e308), Float64Value(12345.678),
			DecimalValue([]byte("99999.999")), StringValue("héllo, wörld ☃"), BytesValue(blob),
			DateValue(9999, 12, 31), DateTimeValue(DateTime{Year: 9999, Month: 12, Day: 31, Hour: 23, Minute: 59, Second: 59, Microsecond: 999999}),
			TimestampValue(DateTime{Year: 2038, Month: 1, Day: 19, Hour: 3, Minute: 14, Second: 7}),
			TimeValue(838*time.Hour + 59*time.Minute + 59*time.Second),
			StringValue(`{"a": [1, 2.5, null]}`), BytesValue([]byte{0xff}), StringValue("b"), NullValue()},
		{IntValue(1), UintValue(1), IntValue(-2), UintValue(2), IntValue(3), IntValue(-4), UintValue(5),
			IntValue(6), UintValue(7), UintValue(42), UintValue(0),
			Float32Value(0.1), Float64Value(point1 + point2), Float64Value(2.5),
			DecimalValue([]byte("0.000")), StringValue("it's"), BytesValue([]byte("\x00\x01'\"\\")),
			DateValue(0, 0, 0), DateTimeValue(DateTime{}),
			TimestampValue(DateTime{Year: 2024, Month: 2, Day: 29, Hour: 12, Minute: 30, Second: 45, Microsecond: 500000}),
			TimeValue(-(time.Second + 500*time.Millisecond)),
			StringValue("{}"), BytesValue([]byte{0x0a}), StringValue(""), NullValue()},
		make([]Value, len(typesColumns)),
	}
}
