package session_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/session"
	"github.com/basalt-db/basalt/store/local"
	"github.com/basalt-db/basalt/tablecodec"
)

// serveLocal serves a fresh Basalt on an embedded store and returns a DSN
// for it and the store, for tests that read the store underneath.
func serveLocal(t *testing.T) (string, kv.Storage) {
	t.Helper()
	st, err := local.Open(t.TempDir(), local.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	_, _, addr, stop := serveOn(t, st, session.Config{PessimisticByDefault: true, PlanCacheCapacity: 100, LockWaitTimeout: 5 * time.Second})
	t.Cleanup(stop)
	return fmt.Sprintf("root@tcp(%s)/?multiStatements=true&parseTime=true", addr), st
}

// tableKeys returns every key and value of table db.name in st at ts,
// keys with the table's id cut off (so that tables of two servers
// compare).
func tableKeys(t *testing.T, st kv.Storage, ts uint64, db, name string) map[string]string {
	t.Helper()
	txn, err := st.Begin(kv.TxnOptions{Mode: kv.Optimistic, StartTS: ts})
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Rollback()
	m := catalog.NewMeta(txn)
	dbs, err := m.DBs()
	if err != nil {
		t.Fatal(err)
	}
	var id int64
	for _, d := range dbs {
		if d.Name == db {
			tables, err := m.Tables(d.ID)
			if err != nil {
				t.Fatal(err)
			}
			for _, tb := range tables {
				if tb.Name == name {
					id = tb.ID
				}
			}
		}
	}
	if id == 0 {
		t.Fatalf("no table %s.%s at ts %d", db, name, ts)
	}
	prefix := tablecodec.TablePrefix(id)
	it, err := st.Snapshot(ts).Iter(prefix, tablecodec.TableEnd(id))
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	out := map[string]string{}
	for ; err == nil && it.Valid(); err = it.Next() {
		out[string(it.Key()[len(prefix):])] = string(it.Value())
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestBackupRestoreUnderLoad: a backup taken while transfers between
// accounts keep committing restores, on a fresh server, to exactly the
// keys the original held at the backup ts (rows and index entries of
// every table), which pass ADMIN CHECK TABLE and keep the workload's
// invariants: the balances sum to what they started at, and every
// balance is its opening amount plus the transfers logged for it.
func TestBackupRestoreUnderLoad(t *testing.T) {
	dsn, st := serveLocal(t)
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const accounts, opening = 20, 100
	mustExec(t, db, "CREATE DATABASE bank", "USE bank",
		"CREATE TABLE acct (id INT PRIMARY KEY, bal INT NOT NULL, tag VARCHAR(20), KEY bal_idx (bal), UNIQUE KEY tag_idx (tag))",
		"CREATE TABLE xfer (id BIGINT AUTO_INCREMENT PRIMARY KEY, src INT, dst INT, amt INT, KEY src_idx (src))",
		"CREATE VIEW rich AS SELECT id FROM acct WHERE bal > 100")
	for i := 0; i < accounts; i++ {
		mustExec(t, db, fmt.Sprintf("INSERT INTO bank.acct VALUES (%d, %d, 'tag%d')", i, opening, i))
	}
	// Some bulk, so that the backup's scan overlaps the transfers.
	mustExec(t, db, "CREATE TABLE bank.pad (id INT PRIMARY KEY, s VARCHAR(200), KEY s_idx (s))")
	for i := 0; i < 10; i++ {
		var vals []string
		for j := 0; j < 500; j++ {
			vals = append(vals, fmt.Sprintf("(%d, REPEAT('p%d', 20))", i*500+j, i*500+j))
		}
		mustExec(t, db, "INSERT INTO bank.pad VALUES "+strings.Join(vals, ","))
	}
	mustExec(t, db, "CREATE DATABASE other", "CREATE TABLE other.o (a VARCHAR(10) PRIMARY KEY, b INT)", "INSERT INTO other.o VALUES ('x', 1), ('y', 2)")

	// The writers: transfers, each logged in xfer, in explicit
	// transactions, until told to stop.
	var stop atomic.Bool
	var done atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			r := rand.New(rand.NewSource(seed))
			conn, err := db.Conn(context.Background())
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close()
			ctx := context.Background()
			for !stop.Load() {
				src, dst, amt := r.Intn(accounts), r.Intn(accounts), 1+r.Intn(10)
				if src == dst {
					continue
				}
				tx, err := conn.BeginTx(ctx, nil)
				if err != nil {
					t.Error(err)
					return
				}
				_, err = tx.Exec("UPDATE bank.acct SET bal = bal - ? WHERE id = ?", amt, src)
				if err == nil {
					_, err = tx.Exec("UPDATE bank.acct SET bal = bal + ? WHERE id = ?", amt, dst)
				}
				if err == nil {
					_, err = tx.Exec("INSERT INTO bank.xfer (src, dst, amt) VALUES (?, ?, ?)", src, dst, amt)
				}
				if err == nil {
					err = tx.Commit()
				} else {
					tx.Rollback()
				}
				if err == nil {
					done.Add(1)
				} else if n := mysqlErrno(err); n != 1213 && n != 1205 {
					t.Errorf("transfer: %v", err)
					return
				}
			}
		}(int64(w))
	}
	waitFor := func(n int64) {
		for deadline := time.Now().Add(20 * time.Second); done.Load() < n; {
			if time.Now().After(deadline) {
				t.Fatalf("only %d transfers in 20s", done.Load())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor(50)
	dir := filepath.Join(t.TempDir(), "bk")
	var dest string
	var size, backupTS uint64
	var queued, started time.Time
	before := done.Load()
	if err := db.QueryRow("BACKUP DATABASE bank, other TO 'local://"+dir+"'").Scan(&dest, &size, &backupTS, &queued, &started); err != nil {
		t.Fatal(err)
	}
	during := done.Load() - before
	waitFor(done.Load() + 50)
	stop.Store(true)
	wg.Wait()
	if dest != "local://"+dir || size == 0 || backupTS == 0 {
		t.Fatalf("BACKUP returned %q, size %d, ts %d", dest, size, backupTS)
	}
	t.Logf("backup at ts %d: %d bytes; %d transfers before it started, %d while it ran, %d in all", backupTS, size, before, during, done.Load())

	// The restore, on a fresh server.
	dsn2, st2 := serveLocal(t)
	db2, err := sql.Open("mysql", dsn2)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	var rdest string
	var rsize, rts, clusterTS uint64
	if err := db2.QueryRow("RESTORE DATABASE * FROM 'local://"+dir+"'").Scan(&rdest, &rsize, &rts, &clusterTS, &queued, &started); err != nil {
		t.Fatal(err)
	}
	if rts != backupTS || rsize != size || clusterTS <= rts {
		t.Errorf("RESTORE returned size %d, backup ts %d, cluster ts %d; want %d, %d and a later cluster ts", rsize, rts, clusterTS, size, backupTS)
	}
	now, err := st2.CurrentTS()
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range [][2]string{{"bank", "acct"}, {"bank", "xfer"}, {"bank", "pad"}, {"other", "o"}} {
		want := tableKeys(t, st, backupTS, tb[0], tb[1])
		got := tableKeys(t, st2, now, tb[0], tb[1])
		if len(want) == 0 || len(got) != len(want) {
			t.Errorf("%s.%s: %d keys restored, %d at the backup ts", tb[0], tb[1], len(got), len(want))
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s.%s: key %x restored as %x, was %x", tb[0], tb[1], k, got[k], v)
				break
			}
		}
		mustExec(t, db2, fmt.Sprintf("ADMIN CHECK TABLE %s.%s", tb[0], tb[1]))
	}

	var sum, rows, bad, nx int
	if err := db2.QueryRow("SELECT SUM(bal), COUNT(*) FROM bank.acct").Scan(&sum, &rows); err != nil || sum != accounts*opening || rows != accounts {
		t.Errorf("restored balances: sum %d of %d rows, %v; want %d of %d", sum, rows, err, accounts*opening, accounts)
	}
	err = db2.QueryRow(`SELECT COUNT(*) FROM bank.acct a WHERE a.bal <> ? +
		(SELECT COALESCE(SUM(amt), 0) FROM bank.xfer WHERE dst = a.id) - (SELECT COALESCE(SUM(amt), 0) FROM bank.xfer WHERE src = a.id)`, opening).Scan(&bad)
	if err != nil || bad != 0 {
		t.Errorf("%d restored balances disagree with the restored transfer log (%v)", bad, err)
	}
	if err := db2.QueryRow("SELECT COUNT(*) FROM bank.xfer").Scan(&nx); err != nil || int64(nx) < before || int64(nx) >= done.Load() {
		t.Errorf("restored %d transfers (%v); want at least the %d done before the backup and fewer than all %d", nx, err, before, done.Load())
	}
	// The restored tables are ordinary ones: the view reads, the
	// auto-increment counter goes on past the restored rows, the unique
	// index refuses a duplicate.
	var rich int
	if err := db2.QueryRow("SELECT COUNT(*) FROM bank.rich").Scan(&rich); err != nil {
		t.Errorf("restored view: %v", err)
	}
	res, err := db2.Exec("INSERT INTO bank.xfer (src, dst, amt) VALUES (0, 1, 0)")
	if err != nil {
		t.Fatal(err)
	}
	if id, _ := res.LastInsertId(); id <= int64(nx) {
		t.Errorf("new auto-increment id %d after %d restored rows", id, nx)
	}
	if _, err := db2.Exec("INSERT INTO bank.acct VALUES (100, 0, 'tag1')"); mysqlErrno(err) != 1062 {
		t.Errorf("duplicate on the restored unique index: %v, want 1062", err)
	}

	// Each server lists its own job, finished.
	for _, c := range []struct {
		db   *sql.DB
		show string
	}{{db, "SHOW BACKUPS"}, {db2, "SHOW RESTORES"}, {db, "SHOW RESTORES"}} {
		rows, err := c.db.Query(c.show)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for rows.Next() {
			var id, conn int64
			var dst, state, msg sql.NullString
			var progress float64
			var q, e, f sql.NullTime
			if err := rows.Scan(&id, &dst, &state, &progress, &q, &e, &f, &conn, &msg); err != nil {
				t.Fatal(err)
			}
			n++
			if dst.String != "local://"+dir || state.String != "Finished" || progress != 100 || !f.Valid || msg.Valid {
				t.Errorf("%s: %v %q %q %v %v %v", c.show, id, dst.String, state.String, progress, f, msg)
			}
		}
		rows.Close()
		if want := map[bool]int{true: 1, false: 0}[c.db != db || c.show == "SHOW BACKUPS"]; n != want {
			t.Errorf("%s listed %d jobs, want %d", c.show, n, want)
		}
	}
}

// TestRestoreRefusesBadBackups: a backup with a byte changed in a data
// file, or with a data file missing, or without its manifest, is refused
// before anything is written: no database appears. So are a restore over
// an existing database, a storage other than local://, and BACKUP or
// RESTORE by an account without SUPER.
func TestRestoreRefusesBadBackups(t *testing.T) {
	dsn, _ := serveLocal(t)
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	mustExec(t, db, "CREATE DATABASE d1", "CREATE TABLE d1.t (id INT PRIMARY KEY, v VARCHAR(20), KEY v_idx (v))",
		"CREATE DATABASE d2", "CREATE TABLE d2.u (id INT PRIMARY KEY)")
	for i := 0; i < 200; i++ {
		mustExec(t, db, fmt.Sprintf("INSERT INTO d1.t VALUES (%d, 'v%d')", i, i))
	}
	mustExec(t, db, "INSERT INTO d2.u VALUES (1), (2)")
	good := filepath.Join(t.TempDir(), "good")
	mustExec(t, db, "BACKUP DATABASE * TO 'local://"+good+"'")
	if _, err := db.Exec("BACKUP DATABASE d1 TO 'local://" + good + "'"); mysqlErrno(err) != 8124 || !strings.Contains(err.Error(), "already holds a backup") {
		t.Errorf("backup over a backup: %v, want 8124", err)
	}

	// copyBackup copies the good backup and lets break spoil the copy.
	copyBackup := func(name string, spoil func(dir string, files []string)) string {
		dir := filepath.Join(t.TempDir(), name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		ents, err := os.ReadDir(good)
		if err != nil {
			t.Fatal(err)
		}
		var data []string
		for _, e := range ents {
			b, err := os.ReadFile(filepath.Join(good, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
				t.Fatal(err)
			}
			if strings.HasSuffix(e.Name(), ".kv") {
				data = append(data, e.Name())
			}
		}
		if len(data) < 2 {
			t.Fatalf("the backup has %d data files, want one per table", len(data))
		}
		spoil(dir, data)
		return dir
	}
	flipped := copyBackup("flipped", func(dir string, files []string) {
		// The last file, so that a restore writing before it checked
		// would have written the others.
		p := filepath.Join(dir, files[len(files)-1])
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)/2] ^= 0x01
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	})
	missing := copyBackup("missing", func(dir string, files []string) {
		if err := os.Remove(filepath.Join(dir, files[len(files)-1])); err != nil {
			t.Fatal(err)
		}
	})
	noManifest := copyBackup("nomanifest", func(dir string, _ []string) {
		if err := os.Remove(filepath.Join(dir, "backupmeta.json")); err != nil {
			t.Fatal(err)
		}
	})

	dsn2, st2 := serveLocal(t)
	db2, err := sql.Open("mysql", dsn2)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	dbsOf := func() string {
		rows, err := db2.Query("SHOW DATABASES")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var names []string
		for rows.Next() {
			var n string
			rows.Scan(&n)
			names = append(names, n)
		}
		return strings.Join(names, ",")
	}
	clean := dbsOf()
	keysOf := func() int {
		it, err := st2.Snapshot(mustTS(t, st2)).Iter([]byte{'t'}, []byte{'u'})
		if err != nil {
			t.Fatal(err)
		}
		defer it.Close()
		n := 0
		for ; err == nil && it.Valid(); err = it.Next() {
			n++
		}
		return n
	}
	cleanKeys := keysOf()
	// The schema version moves at any schema change, the reservation of
	// ids for a restore included: it stays put if nothing was written.
	versionOf := func() int64 {
		txn, err := st2.Begin(kv.TxnOptions{Mode: kv.Optimistic})
		if err != nil {
			t.Fatal(err)
		}
		defer txn.Rollback()
		v, err := catalog.NewMeta(txn).SchemaVersion()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	cleanVersion := versionOf()
	for _, c := range []struct{ dir, want string }{
		{flipped, "checksum mismatch"},
		{missing, "is missing"},
		{noManifest, "no backupmeta.json"},
	} {
		_, err := db2.Exec("RESTORE DATABASE * FROM 'local://" + c.dir + "'")
		if mysqlErrno(err) != 8125 || !strings.Contains(err.Error(), "Restore failed: ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("restore from %s: %v; want 8125 ... %s", filepath.Base(c.dir), err, c.want)
		}
		if got := dbsOf(); got != clean {
			t.Errorf("after the refused restore from %s: databases %s, want %s", filepath.Base(c.dir), got, clean)
		}
		if n := keysOf(); n != cleanKeys {
			t.Errorf("after the refused restore from %s: %d table keys, want %d", filepath.Base(c.dir), n, cleanKeys)
		}
		if v := versionOf(); v != cleanVersion {
			t.Errorf("after the refused restore from %s: schema version %d, want %d (nothing written)", filepath.Base(c.dir), v, cleanVersion)
		}
	}

	// SHOW RESTORES keeps the failures and why.
	var failed []string
	rows, err := db2.Query("SHOW RESTORES")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, conn int64
		var dst, state, msg sql.NullString
		var progress float64
		var q, e, f sql.NullString
		if err := rows.Scan(&id, &dst, &state, &progress, &q, &e, &f, &conn, &msg); err != nil {
			t.Fatal(err)
		}
		if state.String == "Failed" {
			failed = append(failed, msg.String)
		}
	}
	rows.Close()
	if len(failed) != 3 || !strings.Contains(failed[0], "checksum mismatch") {
		t.Errorf("SHOW RESTORES: failures %q, want the three refusals", failed)
	}

	// One database only, then over an existing one.
	mustExec(t, db2, "RESTORE DATABASE d2 FROM 'local://"+good+"'")
	if got := dbsOf(); !strings.Contains(got, "d2") || strings.Contains(got, "d1") {
		t.Errorf("after RESTORE DATABASE d2: %s", got)
	}
	_, err = db2.Exec("RESTORE DATABASE * FROM 'local://" + good + "'")
	if mysqlErrno(err) != 8125 || !strings.Contains(err.Error(), "Restore failed: table already exists: d2.u: [BR:Restore:ErrTablesAlreadyExisted]tables already existed in restored cluster") {
		t.Errorf("restore over d2.u: %v, want 8125 ErrTablesAlreadyExisted", err)
	}
	if strings.Contains(dbsOf(), "d1") {
		t.Error("a restore refused for d2 restored d1")
	}
	if _, err := db2.Exec("RESTORE DATABASE nosuch FROM 'local://" + good + "'"); mysqlErrno(err) != 8125 || !strings.Contains(err.Error(), "unknown database: nosuch") {
		t.Errorf("restore of a database not in the backup: %v", err)
	}
	mustExec(t, db2, "RESTORE DATABASE d1 FROM 'local://"+good+"'", "ADMIN CHECK TABLE d1.t")
	var n int
	if err := db2.QueryRow("SELECT COUNT(*) FROM d1.t WHERE v LIKE 'v1%'").Scan(&n); err != nil || n != 111 {
		t.Errorf("restored d1.t: %d rows like 'v1%%', %v; want 111", n, err)
	}

	// Storage URLs.
	for _, u := range []string{"s3://bucket/x", "/tmp/no-scheme", "local://relative/path", "gcs://b/x"} {
		if _, err := db.Exec("BACKUP DATABASE d1 TO '" + u + "'"); mysqlErrno(err) != 8124 {
			t.Errorf("BACKUP TO %q: %v, want 8124", u, err)
		}
		if _, err := db.Exec("RESTORE DATABASE d1 FROM '" + u + "'"); mysqlErrno(err) != 8125 {
			t.Errorf("RESTORE FROM %q: %v, want 8125", u, err)
		}
	}
	if _, err := db.Exec("BACKUP DATABASE nosuch TO 'local://" + filepath.Join(t.TempDir(), "x") + "'"); mysqlErrno(err) != 8124 {
		t.Errorf("backup of an unknown database: %v, want 8124", err)
	}

	// Privileges.
	mustExec(t, db, "CREATE USER 'op'@'%' IDENTIFIED BY 'pw'", "GRANT ALL ON d1.* TO 'op'@'%'")
	opDSN := strings.Replace(dsn, "root@", "op:pw@", 1)
	op, err := sql.Open("mysql", opDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	if _, err := op.Exec("BACKUP DATABASE d1 TO 'local://" + filepath.Join(t.TempDir(), "op") + "'"); mysqlErrno(err) != 1227 ||
		!strings.Contains(err.Error(), "SUPER or BACKUP_ADMIN") {
		t.Errorf("BACKUP without SUPER: %v, want 1227", err)
	}
	if _, err := op.Exec("RESTORE DATABASE d1 FROM 'local://" + good + "'"); mysqlErrno(err) != 1227 ||
		!strings.Contains(err.Error(), "SUPER or RESTORE_ADMIN") {
		t.Errorf("RESTORE without SUPER: %v, want 1227", err)
	}
	if _, err := op.Exec("SHOW BACKUPS"); mysqlErrno(err) != 1227 {
		t.Errorf("SHOW BACKUPS without SUPER: %v, want 1227", err)
	}
	mustExec(t, db, "GRANT SUPER ON *.* TO 'op'@'%'")
	if _, err := op.Exec("BACKUP DATABASE d1 TO 'local://" + filepath.Join(t.TempDir(), "op") + "'"); err != nil {
		t.Errorf("BACKUP with SUPER: %v", err)
	}
}

func mustTS(t *testing.T, st kv.Storage) uint64 {
	t.Helper()
	ts, err := st.CurrentTS()
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// TestConcurrentRestores: two restores of one backup into one server at
// once: one wins, the other fails with ErrTablesAlreadyExisted and leaves
// none of its keys behind.
func TestConcurrentRestores(t *testing.T) {
	dsn, _ := serveLocal(t)
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	mustExec(t, db, "CREATE DATABASE c", "CREATE TABLE c.t (id INT PRIMARY KEY, v INT, KEY v_idx (v))")
	var vals []string
	for i := 0; i < 3000; i++ {
		vals = append(vals, fmt.Sprintf("(%d, %d)", i, i%7))
	}
	mustExec(t, db, "INSERT INTO c.t VALUES "+strings.Join(vals, ","))
	dir := filepath.Join(t.TempDir(), "bk")
	mustExec(t, db, "BACKUP DATABASE c TO 'local://"+dir+"'")

	dsn2, st2 := serveLocal(t)
	db2, err := sql.Open("mysql", dsn2)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	tableKeysIn := func() int {
		it, err := st2.Snapshot(mustTS(t, st2)).Iter([]byte{'t'}, []byte{'u'})
		if err != nil {
			t.Fatal(err)
		}
		defer it.Close()
		n := 0
		for ; err == nil && it.Valid(); err = it.Next() {
			n++
		}
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := tableKeysIn() // the mysql schema's rows
	errs := make(chan error, 2)
	for i := 0; i < 2; i++ {
		go func() {
			_, err := db2.Exec("RESTORE DATABASE c FROM 'local://" + dir + "'")
			errs <- err
		}()
	}
	var ok, refused int
	for i := 0; i < 2; i++ {
		switch err := <-errs; {
		case err == nil:
			ok++
		case mysqlErrno(err) == 8125 && strings.Contains(err.Error(), "ErrTablesAlreadyExisted"):
			refused++
		default:
			t.Errorf("restore: %v", err)
		}
	}
	if ok != 1 || refused != 1 {
		t.Fatalf("%d restores succeeded and %d were refused, want 1 and 1", ok, refused)
	}
	mustExec(t, db2, "ADMIN CHECK TABLE c.t")
	var n, sum int
	if err := db2.QueryRow("SELECT COUNT(*), SUM(v) FROM c.t").Scan(&n, &sum); err != nil || n != 3000 {
		t.Fatalf("restored %d rows, %v", n, err)
	}
	// Every table key the restores added is the winner's: one row key
	// and one index key per row.
	if added := tableKeysIn() - before; added != 2*3000 {
		t.Errorf("the restores added %d table keys, want %d", added, 2*3000)
	}
}
