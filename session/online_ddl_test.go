package session_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestOnlineDDL runs schema changes on a table while writers insert,
// update (v = v + 1, in autocommit statements and in transactions),
// delete and read it. No writer may see an error, no write may be lost
// (each writer owns its rows and knows what they must hold), every row has
// the value an added column gives it, and ADMIN CHECK TABLE passes. Two
// MODIFY COLUMNs rewrite the values of indexed columns, one of them v.
func TestOnlineDDL(t *testing.T) {
	db, err := sql.Open("mysql", startBasalt(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(16)
	ctx := context.Background()
	admin, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	exec := func(q string) {
		t.Helper()
		if _, err := admin.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec("CREATE DATABASE od")
	exec("USE od")
	exec("CREATE TABLE t (id INT PRIMARY KEY, w INT NOT NULL, v INT NOT NULL, pad VARCHAR(20) NOT NULL DEFAULT 'p', KEY w (w))")

	const writers = 4
	const preload = 500
	type state struct {
		v    map[int]int // row id → expected v
		next int
	}
	states := make([]*state, writers)
	for w := range writers {
		st := &state{v: map[int]int{}, next: w*1_000_000 + preload}
		for i := range preload {
			id := w*1_000_000 + i
			st.v[id] = 0
		}
		states[w] = st
		var vals []string
		for id := range st.v {
			vals = append(vals, fmt.Sprintf("(%d, %d, 0)", id, w))
		}
		for i := 0; i < len(vals); i += 100 {
			q := "INSERT INTO t (id, w, v) VALUES "
			for j, v := range vals[i:min(i+100, len(vals))] {
				if j > 0 {
					q += ", "
				}
				q += v
			}
			exec(q)
		}
	}

	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	var ops atomic.Int64
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := db.Conn(ctx)
			if err != nil {
				errs <- err
				return
			}
			defer conn.Close()
			if _, err := conn.ExecContext(ctx, "USE od"); err != nil {
				errs <- err
				return
			}
			st := states[w]
			r := rand.New(rand.NewPCG(uint64(w), 7))
			pick := func() int {
				for id := range st.v {
					return id
				}
				return -1
			}
			for !stop.Load() {
				var err error
				switch op := r.IntN(10); {
				case op < 2:
					id := st.next
					st.next++
					if _, err = conn.ExecContext(ctx, "INSERT INTO t (id, w, v) VALUES (?, ?, 0)", id, w); err == nil {
						st.v[id] = 0
					}
				case op < 5:
					id := pick()
					if _, err = conn.ExecContext(ctx, "UPDATE t SET v = v + 1 WHERE id = ?", id); err == nil {
						st.v[id]++
					}
				case op < 7:
					// A transaction of two updates and a read by index.
					a, b := pick(), pick()
					tx, e := conn.BeginTx(ctx, nil)
					if err = e; err != nil {
						break
					}
					_, err = tx.ExecContext(ctx, "UPDATE t SET v = v + 1 WHERE id = ?", a)
					if err == nil {
						_, err = tx.ExecContext(ctx, "UPDATE t SET v = v + 1, pad = 'q' WHERE id = ?", b)
					}
					if err == nil {
						var n int
						err = tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM t WHERE w = ?", w).Scan(&n)
						if err == nil && n != len(st.v) {
							err = fmt.Errorf("writer %d counts %d rows by index, owns %d", w, n, len(st.v))
						}
					}
					if err == nil {
						if err = tx.Commit(); err == nil {
							st.v[a]++
							st.v[b]++
						}
					} else {
						tx.Rollback()
					}
				case op < 8:
					id := pick()
					if _, err = conn.ExecContext(ctx, "DELETE FROM t WHERE id = ?", id); err == nil {
						delete(st.v, id)
					}
				default:
					var sum sql.NullInt64
					err = conn.QueryRowContext(ctx, "SELECT SUM(v) FROM t WHERE w = ? AND id >= 0", w).Scan(&sum)
				}
				if err != nil {
					errs <- fmt.Errorf("writer %d: %w", w, err)
					return
				}
				ops.Add(1)
			}
		}()
	}

	// The schema changes, each while the writers run.
	steps := []string{
		"ALTER TABLE t ADD COLUMN c1 INT NOT NULL DEFAULT 5",
		"ALTER TABLE t ADD INDEX v (v)",
		"ALTER TABLE t ADD COLUMN c0 VARCHAR(10) DEFAULT 'zero' FIRST",
		"ALTER TABLE t MODIFY v BIGINT NOT NULL",
		// Values rewritten, index v rebuilt (ddl/modify.go).
		"ALTER TABLE t MODIFY v DECIMAL(20,0) NOT NULL",
		"ALTER TABLE t ADD INDEX c1w (c1, w)",
		"ALTER TABLE t DROP COLUMN c0",
		"ALTER TABLE t MODIFY pad VARCHAR(10) NOT NULL DEFAULT 'p'",
		"ALTER TABLE t ADD UNIQUE INDEX wid (w, id)",
		// Rewritten too, under the writers' reads by index w, with w in
		// three indexes (one unique).
		"ALTER TABLE t MODIFY w BIGINT UNSIGNED NOT NULL",
	}
	// BASALT_ONLINE_MODIFY_ROUNDS=n adds n rounds of rewriting MODIFYs of
	// the indexed v (to text, to decimal, to unsigned) to the default two.
	if n, _ := strconv.Atoi(os.Getenv("BASALT_ONLINE_MODIFY_ROUNDS")); n > 0 {
		for range n {
			steps = append(steps,
				"ALTER TABLE t MODIFY v VARCHAR(30) NOT NULL",
				"ALTER TABLE t MODIFY v DECIMAL(20,0) NOT NULL",
				"ALTER TABLE t MODIFY v BIGINT UNSIGNED NOT NULL")
		}
	}
	steps = append(steps,
		"ALTER TABLE t DROP INDEX v",
		"ALTER TABLE t ADD COLUMN c2 DATETIME DEFAULT '2024-01-02 03:04:05' AFTER id")
	start := time.Now()
	for _, q := range steps {
		time.Sleep(100 * time.Millisecond)
		before, began := ops.Load(), time.Now()
		if stop.Load() {
			break
		}
		if _, err := admin.ExecContext(ctx, q); err != nil {
			stop.Store(true)
			wg.Wait()
			close(errs)
			for e := range errs {
				t.Error(e)
			}
			t.Fatalf("%s: %v", q, err)
		}
		t.Logf("%-60s %6d writer ops during it, %v", q, ops.Load()-before, time.Since(began).Round(time.Millisecond))
	}
	time.Sleep(100 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if t.Failed() {
		return
	}
	t.Logf("%d writer ops in %v", ops.Load(), time.Since(start))
	// A rename keeps the rows (the writers would fail on the old name,
	// as in MySQL, so it runs after them).
	exec("RENAME TABLE t TO t_renamed")
	exec("RENAME TABLE t_renamed TO t")

	// Every write is there.
	got := map[int]int{}
	rows, err := admin.QueryContext(ctx, "SELECT id, v, c1, c2 FROM t")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, v, c1 int
		var c2 string
		if err := rows.Scan(&id, &v, &c1, &c2); err != nil {
			t.Fatal(err)
		}
		if c1 != 5 || c2 != "2024-01-02 03:04:05" {
			t.Errorf("row %d: c1 = %d, c2 = %q; want the defaults", id, c1, c2)
		}
		got[id] = v
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, st := range states {
		want += len(st.v)
		for id, v := range st.v {
			if g, ok := got[id]; !ok || g != v {
				t.Errorf("row %d: v = %d (present %v), want %d", id, g, ok, v)
			}
		}
	}
	if len(got) != want {
		t.Errorf("table has %d rows, want %d", len(got), want)
	}
	exec("ADMIN CHECK TABLE t")
	var n int
	if err := admin.QueryRowContext(ctx, "SELECT COUNT(*) FROM t WHERE w >= 0 AND c1 = 5").Scan(&n); err != nil || n != want {
		t.Errorf("count by index c1w: %d, %v; want %d", n, err, want)
	}
}
