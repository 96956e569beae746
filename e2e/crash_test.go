package e2e

import (
	"database/sql"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/basalt-db/basalt/testkit"
)

// TestCrashSQL kills the server with SIGKILL while SQL clients write, and
// checks after each restart on the same data directory that every
// acknowledged write survived and nothing else did:
//
//   - crashWorkers clients, each owning the rows it inserts, run a mix of
//     autocommit INSERT, UPDATE and DELETE and explicit transactions that
//     insert rows, update and delete owned rows and increment a shared
//     counter row (half the clients in pessimistic, half in optimistic
//     transactions on Basalt). Each client keeps the state its
//     acknowledged operations left.
//   - After the kill, each client's rows must be exactly that state, or
//     that state plus the whole of the one operation whose answer the kill
//     cut off. Transactions are atomic: a counter must equal the
//     increments of the transactions whose rows are present.
//   - ADMIN CHECK TABLE passes on both tables (rows and their secondary and
//     unique indexes agree), and the restarted server takes load again.
//
// BASALT_CRASH_CYCLES sets the number of kills (default 20).
// BASALT_E2E_TARGET=mariadb runs it against MariaDB to check the test.
func TestCrashSQL(t *testing.T) {
	cfg := loadConfig(t)
	cycles := envInt("BASALT_CRASH_CYCLES", 20)
	srv := testkit.StartTarget(t, cfg.target)
	admin := openPool(t, srv, "")
	mustExecAll(t, admin,
		"CREATE DATABASE crash",
		`CREATE TABLE crash.items (
			id BIGINT PRIMARY KEY,
			owner INT NOT NULL,
			k INT NOT NULL,
			u VARCHAR(40) NOT NULL,
			n INT NOT NULL,
			pad VARCHAR(120) NOT NULL,
			KEY k (k),
			UNIQUE KEY u (u),
			KEY owner_n (owner, n))`,
		`CREATE TABLE crash.counters (id INT PRIMARY KEY, v BIGINT NOT NULL, KEY v (v))`)
	for i := range crashCounters {
		mustExecAll(t, admin, fmt.Sprintf("INSERT INTO crash.counters VALUES (%d, 0)", i))
	}
	admin.Close()

	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	m := newCrashModel(srv.Flavor())
	var total crashStats
	for cycle := 0; cycle < cycles && !t.Failed(); cycle++ {
		run := newCrashRun()
		st := m.start(t, srv, run, rng)
		run.killAfterProgress(t, srv, rng, 600*time.Millisecond)
		restart := time.Now()
		if err := srv.Restart(); err != nil {
			t.Fatalf("cycle %d: restart after SIGKILL: %v", cycle, err)
		}
		restarted := time.Since(restart)
		applied := m.verify(t, srv)
		total.add(st)
		t.Logf("cycle %d: %v (%d present after the restart, which took %v)",
			cycle, st, applied, restarted.Round(time.Millisecond))
	}
	if t.Failed() {
		return
	}
	// The last run ends without a kill, then a clean stop and restart.
	run := newCrashRun()
	st := m.start(t, srv, run, rng)
	run.finish(300 * time.Millisecond)
	total.add(st)
	m.verify(t, srv)
	if err := srv.Stop(); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatalf("restart after SIGTERM: %v", err)
	}
	m.verify(t, srv)
	t.Logf("%d kill cycles: %v", cycles, &total)
	if total.acked.Load() == 0 {
		t.Error("no operation was acknowledged")
	}
}

const (
	crashWorkers  = 8
	crashCounters = 4
)

// itemRow is a row of crash.items as its owner knows it.
type itemRow struct {
	k int64
	n int64
	u string
	p string
}

func newItemRow(id, k, n int64) itemRow {
	return itemRow{k: k, n: n, u: fmt.Sprintf("%d.%d", id, n), p: strings.Repeat(fmt.Sprint(n%10), int(id%100)+10)}
}

// crashEffect is what one operation does: rows it puts (or deletes, nil)
// and the counter it increments (-1 for none).
type crashEffect struct {
	puts    map[int64]*itemRow
	counter int
}

// crashWorker is a client's knowledge: the rows it owns as its
// acknowledged operations left them, the operation cut off by the kill,
// and how often its acknowledged transactions incremented each counter.
type crashWorker struct {
	id      int
	mode    txnMode
	rows    map[int64]itemRow
	ids     []int64 // keys of rows, to pick from
	pending *crashEffect
	incs    [crashCounters]int64
}

func (w *crashWorker) apply(e *crashEffect) {
	for id, r := range e.puts {
		if r == nil {
			delete(w.rows, id)
		} else {
			w.rows[id] = *r
		}
	}
	w.ids = slices.Sorted(maps.Keys(w.rows))
	if e.counter >= 0 {
		w.incs[e.counter]++
	}
}

type crashModel struct {
	flavor   testkit.Flavor
	workers  []*crashWorker
	counters [crashCounters]int64 // the counters at the start
	nextID   atomic.Int64
}

func newCrashModel(flavor testkit.Flavor) *crashModel {
	m := &crashModel{flavor: flavor}
	for i := range crashWorkers {
		mode := serverDefault
		if flavor == testkit.Basalt {
			mode = []txnMode{pessimistic, optimistic}[i%2]
		}
		m.workers = append(m.workers, &crashWorker{id: i, mode: mode, rows: map[int64]itemRow{}})
	}
	return m
}

// crashStats counts a run's operations by outcome.
type crashStats struct {
	acked, rejected, unknown atomic.Int64
	txns                     atomic.Int64 // acknowledged explicit transactions
}

func (s *crashStats) add(o *crashStats) {
	s.acked.Add(o.acked.Load())
	s.rejected.Add(o.rejected.Load())
	s.unknown.Add(o.unknown.Load())
	s.txns.Add(o.txns.Load())
}

func (s *crashStats) String() string {
	return fmt.Sprintf("%d operations acknowledged (%d of them transactions), %d rejected and retried, %d cut off by the kill",
		s.acked.Load(), s.txns.Load(), s.rejected.Load(), s.unknown.Load())
}

// start runs the clients against srv until run ends them.
func (m *crashModel) start(t *testing.T, srv *testkit.Server, run *crashRun, rng *rand.Rand) *crashStats {
	st := &crashStats{}
	pools := openClientPools(t, srv, "crash")
	var left atomic.Int32
	left.Store(crashWorkers)
	for _, w := range m.workers {
		wrng := rand.New(rand.NewPCG(rng.Uint64(), uint64(w.id)))
		run.goClient(func() {
			defer func() {
				if left.Add(-1) == 0 {
					pools.Close()
				}
			}()
			c, err := newClient(background, pools.forClient(w.id), m.flavor, w.mode)
			if err != nil {
				if unexpected(err, run.killing.Load()) || outcomeOf(err) == rejected {
					t.Errorf("client %d: %v", w.id, err)
				}
				return
			}
			defer c.Close()
			for !run.over() {
				e, isTxn, err := m.step(c, w, wrng)
				switch o := outcomeOf(err); {
				case unexpected(err, run.killing.Load()):
					t.Errorf("client %d: %v", w.id, err)
					return
				case o == done:
					w.apply(e)
					st.acked.Add(1)
					if isTxn {
						st.txns.Add(1)
					}
					run.ack()
				case o == rejected:
					if !retryable(err) {
						t.Errorf("client %d: %v", w.id, err)
						return
					}
					st.rejected.Add(1)
				default:
					w.pending = e
					st.unknown.Add(1)
					return
				}
			}
		})
	}
	return st
}

// step runs one random operation of w and returns its effect.
func (m *crashModel) step(c *client, w *crashWorker, rng *rand.Rand) (*crashEffect, bool, error) {
	e := &crashEffect{puts: map[int64]*itemRow{}, counter: -1}
	insert := func() error {
		id := m.nextID.Add(1)
		r := newItemRow(id, rng.Int64N(1000), 0)
		e.puts[id] = &r
		_, err := c.exec(background, "INSERT INTO items (id, owner, k, u, n, pad) VALUES (?, ?, ?, ?, ?, ?)",
			id, w.id, r.k, r.u, r.n, r.p)
		return err
	}
	update := func() error {
		id := w.ids[rng.IntN(len(w.ids))]
		if _, ok := e.puts[id]; ok {
			return nil
		}
		r := newItemRow(id, rng.Int64N(1000), w.rows[id].n+1)
		e.puts[id] = &r
		return c.execRows(background, 1, "UPDATE items SET k = ?, u = ?, n = ?, pad = ? WHERE id = ?", r.k, r.u, r.n, r.p, id)
	}
	del := func() error {
		id := w.ids[rng.IntN(len(w.ids))]
		if _, ok := e.puts[id]; ok {
			return nil
		}
		e.puts[id] = nil
		return c.execRows(background, 1, "DELETE FROM items WHERE id = ?", id)
	}
	switch p := rng.IntN(100); {
	case p < 35 || len(w.ids) < 3:
		return e, false, insert()
	case p < 55:
		return e, false, update()
	case p < 65:
		return e, false, del()
	}
	e.counter = rng.IntN(crashCounters)
	o, err := c.txn(background, func() error {
		for range 1 + rng.IntN(3) {
			if err := insert(); err != nil {
				return err
			}
		}
		if err := update(); err != nil {
			return err
		}
		if err := c.execRows(background, 1, "UPDATE counters SET v = v + 1 WHERE id = ?", e.counter); err != nil {
			return err
		}
		if rng.IntN(3) == 0 {
			return del()
		}
		return nil
	})
	if o == done {
		return e, true, nil
	}
	return e, true, err
}

// verify checks the restarted server against the model, resolves each
// client's cut-off operation by what it finds, and returns how many of
// those were present.
func (m *crashModel) verify(t *testing.T, srv *testkit.Server) int {
	t.Helper()
	db := openPool(t, srv, "crash")
	defer db.Close()
	applied := 0
	var want [crashCounters]int64
	var rows int
	for _, w := range m.workers {
		got := readItems(t, db, w.id)
		switch {
		case itemsEqual(got, w.rows):
		case w.pending != nil && itemsEqual(got, withEffect(w.rows, w.pending)):
			w.apply(w.pending)
			applied++
		default:
			t.Errorf("client %d (%s): its rows differ from what it was acknowledged%s:\n%s",
				w.id, w.mode, map[bool]string{true: " (with or without its last operation)", false: ""}[w.pending != nil],
				itemsDiff(got, w.rows))
		}
		w.pending = nil
		for i, n := range w.incs {
			want[i] += n
		}
		rows += len(w.rows)
	}
	for i, v := range poolInts(t, db, "SELECT id, v FROM counters ORDER BY id") {
		if v[0] != int64(i) || v[1] != m.counters[i]+want[i] {
			t.Errorf("counter %d = %d; the transactions present incremented it %d times", v[0], v[1], want[i])
		}
	}
	if n := poolInts(t, db, "SELECT COUNT(*) FROM items")[0][0]; n != int64(rows) {
		t.Errorf("crash.items has %d rows; the clients own %d", n, rows)
	}
	for _, table := range []string{"crash.items", "crash.counters"} {
		checkTable(t, srv.Flavor(), db, table)
	}
	return applied
}

func readItems(t *testing.T, db *sql.DB, owner int) map[int64]itemRow {
	t.Helper()
	rows, err := db.Query("SELECT id, k, n, u, pad FROM items WHERE owner = ?", owner)
	if err != nil {
		t.Fatalf("reading the rows of client %d: %v", owner, err)
	}
	defer rows.Close()
	got := map[int64]itemRow{}
	for rows.Next() {
		var id int64
		var r itemRow
		if err := rows.Scan(&id, &r.k, &r.n, &r.u, &r.p); err != nil {
			t.Fatal(err)
		}
		if _, dup := got[id]; dup {
			t.Errorf("row %d read twice", id)
		}
		got[id] = r
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

func withEffect(rows map[int64]itemRow, e *crashEffect) map[int64]itemRow {
	out := maps.Clone(rows)
	for id, r := range e.puts {
		if r == nil {
			delete(out, id)
		} else {
			out[id] = *r
		}
	}
	return out
}

func itemsEqual(a, b map[int64]itemRow) bool { return maps.Equal(a, b) }

// itemsDiff lists the rows in which got and want differ, at most 20.
func itemsDiff(got, want map[int64]itemRow) string {
	all := maps.Clone(want)
	maps.Copy(all, got)
	ids := slices.Sorted(maps.Keys(all))
	var b strings.Builder
	n := 0
	for _, id := range ids {
		g, gok := got[id]
		w, wok := want[id]
		if gok == wok && g == w {
			continue
		}
		if n++; n > 20 {
			b.WriteString("...\n")
			break
		}
		fmt.Fprintf(&b, "  id %d: got %s, want %s\n", id, fmtItem(g, gok), fmtItem(w, wok))
	}
	return b.String()
}

func fmtItem(r itemRow, ok bool) string {
	if !ok {
		return "no row"
	}
	return fmt.Sprintf("k=%d n=%d u=%s", r.k, r.n, r.u)
}
