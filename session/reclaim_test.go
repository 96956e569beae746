package session_test

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/basalt-db/basalt/session"
)

// TestDroppedDataGivesSpaceBack loads about 25 MB into five tables of a
// Basalt on the embedded store, then TRUNCATEs one, DROPs another while a
// transaction still reads it, and DROPs the database that holds the other
// three, and checks after each that the data directory shrinks by about
// what the table held, within a bounded time: the store deletes the
// ranges and compacts them. The figures are in the test's log.
//
// The DROP TABLE must wait for the transaction that read the table (so
// that it reads every row to its end), and only then delete the rows.
func TestDroppedDataGivesSpaceBack(t *testing.T) {
	dir := t.TempDir()
	_, _, addr, stop := serveStore(t, dir, session.Config{PessimisticByDefault: true, LockWaitTimeout: time.Second})
	t.Cleanup(stop)
	db, err := sql.Open("mysql", fmt.Sprintf("root@tcp(%s)/", addr))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	for _, s := range []string{"CREATE DATABASE r1", "CREATE DATABASE r2"} {
		mustExec(t, db, s)
	}
	tables := []string{"r1.t1", "r1.t2", "r2.t3", "r2.t4", "r2.t5"}
	for _, tb := range tables {
		mustExec(t, db, "CREATE TABLE "+tb+" (id INT PRIMARY KEY, v VARBINARY(1024), KEY kv (v(16)))")
	}
	before := dataSize(t, dir)
	// Random bytes: Pebble's compression cannot shrink them.
	const rows, size, batch = 5000, 1000, 250
	r := rand.New(rand.NewPCG(1, 2))
	for _, tb := range tables {
		for i := 0; i < rows; i += batch {
			q := "INSERT INTO " + tb + " VALUES " + strings.TrimSuffix(strings.Repeat("(?, ?),", batch), ",")
			args := make([]any, 0, 2*batch)
			for j := i; j < i+batch; j++ {
				v := make([]byte, size)
				for k := range v {
					v[k] = byte(r.Uint32())
				}
				args = append(args, j, v)
			}
			if _, err := db.ExecContext(ctx, q, args...); err != nil {
				t.Fatal(err)
			}
		}
	}
	loaded := dataSize(t, dir)
	perTable := int64(rows * size)
	t.Logf("data directory: %.1f MB empty, %.1f MB after loading %d tables of %.1f MB", mb(before), mb(loaded), len(tables), mb(perTable))
	if loaded-before < int64(len(tables))*perTable*3/4 {
		t.Fatalf("the load added only %.1f MB", mb(loaded-before))
	}

	// shrinks waits until the directory has shrunk by 3/4 of want bytes
	// from was, and returns its size.
	shrinks := func(what string, was, want int64) int64 {
		t.Helper()
		start := time.Now()
		for {
			now := dataSize(t, dir)
			if was-now >= want*3/4 {
				t.Logf("%s: %.1f MB -> %.1f MB in %v", what, mb(was), mb(now), time.Since(start).Round(time.Millisecond))
				return now
			}
			if time.Since(start) > 20*time.Second {
				t.Fatalf("%s: the data directory is %.1f MB after %v, was %.1f MB; want it %.1f MB smaller",
					what, mb(now), time.Since(start).Round(time.Second), mb(was), mb(want*3/4))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	now := loaded
	mustExec(t, db, "TRUNCATE TABLE r1.t1")
	now = shrinks("TRUNCATE TABLE r1.t1", now, perTable)
	if n := rowCount(t, db, "r1.t1"); n != 0 {
		t.Fatalf("r1.t1 has %d rows after TRUNCATE", n)
	}

	// A transaction reads r1.t2; DROP TABLE waits for it.
	reader, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	if _, err := reader.ExecContext(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if n := rowCount(t, reader, "r1.t2"); n != rows {
		t.Fatalf("r1.t2 has %d rows, want %d", n, rows)
	}
	dropped := make(chan error, 1)
	go func() {
		_, err := db.ExecContext(ctx, "DROP TABLE r1.t2")
		dropped <- err
	}()
	select {
	case err := <-dropped:
		t.Fatalf("DROP TABLE returned (%v) while a transaction that read the table was open", err)
	case <-time.After(500 * time.Millisecond):
	}
	var n, total int64
	if err := reader.QueryRowContext(ctx, "SELECT COUNT(*), SUM(LENGTH(v)) FROM r1.t2").Scan(&n, &total); err != nil {
		t.Fatal(err)
	}
	if n != rows || total != perTable {
		t.Fatalf("the open transaction reads %d rows of %d bytes in r1.t2 during DROP TABLE, want %d of %d", n, total, rows, perTable)
	}
	if _, err := reader.ExecContext(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	if err := <-dropped; err != nil {
		t.Fatal(err)
	}
	now = shrinks("DROP TABLE r1.t2", now, perTable)

	mustExec(t, db, "DROP DATABASE r2")
	now = shrinks("DROP DATABASE r2 (3 tables)", now, 3*perTable)
	if now > before+perTable {
		t.Fatalf("the data directory is %.1f MB after dropping everything, was %.1f MB before the load", mb(now), mb(before))
	}
}

// rowCount is SELECT COUNT(*) FROM table, on a pool or a connection.
func rowCount(t *testing.T, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, table string) int64 {
	t.Helper()
	var n int64
	if err := q.QueryRowContext(context.Background(), "SELECT COUNT(*) FROM "+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// dataSize is the bytes of every file under the data directory dir.
func dataSize(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			// A file deleted while we walked.
			if d != nil && !d.IsDir() || p != dir {
				return nil
			}
			return err
		}
		if !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func mb(n int64) float64 { return float64(n) / (1 << 20) }
