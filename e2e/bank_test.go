package e2e

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/basalt-db/basalt/testkit"
)

// TestBank is the bank test: bankAccounts accounts, bankTransferers
// clients moving random amounts between random accounts, each transfer a
// transaction
//
//	BEGIN
//	SELECT balance FROM accounts WHERE id = ? FOR UPDATE   -- both accounts,
//	SELECT balance FROM accounts WHERE id = ? FOR UPDATE   -- in random order
//	(ROLLBACK if the source holds less than the amount)
//	UPDATE accounts SET balance = balance - ? WHERE id = ?  -- or = read - amount,
//	UPDATE accounts SET balance = balance + ? WHERE id = ?  -- or = read + amount,
//	                                  -- or INSERT ... ON DUPLICATE KEY UPDATE
//	INSERT INTO transfers VALUES (transfer id, from, to, amount)
//	COMMIT
//
// retried after deadlocks, write conflicts and lock wait timeouts, while
// bankReaders clients read every balance in snapshot transactions. The
// invariants: the total never changes, no balance is ever negative, a
// snapshot reads the same twice, and in the end every balance equals its
// opening balance plus the logged transfers, every acknowledged transfer
// is logged, no rejected one is, and ADMIN CHECK TABLE passes.
//
// It runs in pessimistic transactions, then optimistic ones (on Basalt;
// MariaDB has only the first), then with half the clients in each mode
// while the server is killed with SIGKILL and restarted.
// BASALT_BANK_SECONDS sets the length of the first two phases (default 5),
// BASALT_BANK_CRASH_CYCLES the number of kills (default 5).
func TestBank(t *testing.T) {
	cfg := loadConfig(t)
	secs := envInt("BASALT_BANK_SECONDS", 5)
	cycles := envInt("BASALT_BANK_CRASH_CYCLES", 5)
	srv := testkit.StartTarget(t, cfg.target)
	b := newBank(t, srv)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 2))

	modes := [][]txnMode{{serverDefault}}
	if srv.Flavor() == testkit.Basalt {
		modes = [][]txnMode{{pessimistic}, {optimistic}}
	}
	for _, mode := range modes {
		name := string(mode[0])
		if name == "" {
			name = "default"
		}
		t.Run(name, func(t *testing.T) {
			run := newCrashRun()
			st := b.start(t, srv, run, mode, rng)
			run.finish(time.Duration(secs) * time.Second)
			b.verify(t, srv)
			t.Logf("%v", st)
			if st.transfers.Load() == 0 {
				t.Error("no transfer committed")
			}
		})
	}
	t.Run("crash", func(t *testing.T) {
		mixed := []txnMode{pessimistic, optimistic}
		if srv.Flavor() != testkit.Basalt {
			mixed = []txnMode{serverDefault}
		}
		var total bankStats
		for cycle := 0; cycle < cycles && !t.Failed(); cycle++ {
			run := newCrashRun()
			st := b.start(t, srv, run, mixed, rng)
			run.killAfterProgress(t, srv, rng, 2*time.Second)
			if err := srv.Restart(); err != nil {
				t.Fatalf("cycle %d: restart after SIGKILL: %v", cycle, err)
			}
			applied := b.verify(t, srv)
			t.Logf("cycle %d: %v; %d of the cut-off transfers present after the restart", cycle, st, applied)
			total.add(st)
		}
		t.Logf("%d kill cycles: %v", cycles, &total)
	})
}

const (
	bankAccounts    = 100
	bankOpening     = 100 // each account's opening balance
	bankMaxAmount   = 60
	bankTransferers = 32
	bankReaders     = 4
)

// bank is what the test knows of the transfers.
type bank struct {
	nextID atomic.Int64
	mu     sync.Mutex
	// acked transfers must be in the log, rejected ones must not, and
	// unknown ones (cut off by a kill) may be.
	acked, rejected, unknown map[int64]bool
}

func newBank(t *testing.T, srv *testkit.Server) *bank {
	db := openPool(t, srv, "")
	defer db.Close()
	mustExecAll(t, db,
		"CREATE DATABASE bank",
		"CREATE TABLE bank.accounts (id INT PRIMARY KEY, balance BIGINT NOT NULL, KEY balance (balance))",
		`CREATE TABLE bank.transfers (id BIGINT PRIMARY KEY, src INT NOT NULL, dst INT NOT NULL,
			amount BIGINT NOT NULL, KEY src (src), KEY dst (dst))`)
	for i := range bankAccounts {
		mustExecAll(t, db, fmt.Sprintf("INSERT INTO bank.accounts VALUES (%d, %d)", i, bankOpening))
	}
	return &bank{acked: map[int64]bool{}, rejected: map[int64]bool{}, unknown: map[int64]bool{}}
}

func (b *bank) record(id int64, o outcome) {
	b.mu.Lock()
	defer b.mu.Unlock()
	map[outcome]map[int64]bool{done: b.acked, rejected: b.rejected, unknown: b.unknown}[o][id] = true
}

// bankStats counts what the clients did in one run.
type bankStats struct {
	transfers    atomic.Int64 // acknowledged
	insufficient atomic.Int64 // rolled back: the source held too little
	retries      atomic.Int64 // rejected with a retryable error, and retried
	cutOff       atomic.Int64 // cut off by a kill, or undetermined
	snapshots    atomic.Int64 // reader transactions that saw the total
	reconnects   atomic.Int64 // connections that broke and were replaced (crashRun.reconnect)
	lastBreak    atomic.Int64 // when the last of those broke, in Unix nanoseconds
	mu           sync.Mutex
	codes        map[uint16]int // the retryable errors, by code
}

func (s *bankStats) retried(err error) {
	s.retries.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.codes == nil {
		s.codes = map[uint16]int{}
	}
	s.codes[errCode(err)]++
}

// broke records a connection that broke and is being replaced.
func (s *bankStats) broke() {
	s.reconnects.Add(1)
	s.lastBreak.Store(time.Now().UnixNano())
}

func (s *bankStats) add(o *bankStats) {
	s.transfers.Add(o.transfers.Load())
	s.insufficient.Add(o.insufficient.Load())
	s.retries.Add(o.retries.Load())
	s.cutOff.Add(o.cutOff.Load())
	s.snapshots.Add(o.snapshots.Load())
	s.reconnects.Add(o.reconnects.Load())
	s.lastBreak.Store(max(s.lastBreak.Load(), o.lastBreak.Load()))
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.codes == nil {
		s.codes = map[uint16]int{}
	}
	for c, n := range o.codes {
		s.codes[c] += n
	}
}

func (s *bankStats) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := fmt.Sprintf("%d transfers committed, %d rolled back for want of funds, %d retried (by error code: %v), %d cut off by a kill or undetermined; %d snapshot reads of every balance",
		s.transfers.Load(), s.insufficient.Load(), s.retries.Load(), s.codes, s.cutOff.Load(), s.snapshots.Load())
	if n := s.reconnects.Load(); n > 0 {
		out += fmt.Sprintf("; %d broken connections replaced", n)
	}
	return out
}

// start runs the transfer clients (client i in modes[i%len(modes)]) and
// the readers until run ends them.
func (b *bank) start(t *testing.T, srv *testkit.Server, run *crashRun, modes []txnMode, rng *rand.Rand) *bankStats {
	st := &bankStats{}
	pools := openClientPools(t, srv, "bank")
	var left atomic.Int32
	left.Store(bankTransferers + bankReaders)
	spawn := func(i int, mode txnMode, body func(c *client, rng *rand.Rand) error) {
		crng := rand.New(rand.NewPCG(rng.Uint64(), uint64(i)))
		run.goClient(func() {
			defer func() {
				if left.Add(-1) == 0 {
					pools.Close()
				}
			}()
			session := func() error {
				c, err := newClient(background, pools.forClient(i), srv.Flavor(), mode)
				if err != nil {
					return err
				}
				defer c.Close()
				for !run.over() && err == nil {
					err = body(c, crng)
				}
				return err
			}
			err := session()
			for err != nil && run.reconnect && broken(err) && !run.over() {
				st.broke()
				time.Sleep(100 * time.Millisecond)
				err = session()
			}
			if unexpected(err, run.killing.Load()) || outcomeOf(err) == rejected {
				t.Errorf("client %d (%s): %v", i, mode, err)
			}
		})
	}
	for i := range bankTransferers {
		spawn(i, modes[i%len(modes)], func(c *client, rng *rand.Rand) error {
			return b.transfer(c, rng, st, run)
		})
	}
	for i := range bankReaders {
		spawn(bankTransferers+i, modes[i%len(modes)], func(c *client, rng *rand.Rand) error {
			return b.read(c, st, run)
		})
	}
	return st
}

// errInsufficient rolls back a transfer whose source holds too little.
var errInsufficient = fmt.Errorf("insufficient funds: %w", errRollback)

// transfer moves a random amount between two random accounts, retrying
// after retryable errors. It returns an error only to end the client.
func (b *bank) transfer(c *client, rng *rand.Rand, st *bankStats, run *crashRun) error {
	from := rng.Int64N(bankAccounts)
	to := (from + 1 + rng.Int64N(bankAccounts-1)) % bankAccounts
	amount := 1 + rng.Int64N(bankMaxAmount)
	// How the balances are written: = the read balance -/+ amount, =
	// balance -/+ amount, or an INSERT ... ON DUPLICATE KEY UPDATE.
	style := rng.IntN(3)
	for !run.over() {
		id := b.nextID.Add(1)
		o, err := c.txn(background, func() error {
			order := []int64{from, to}
			if rng.IntN(2) == 0 {
				order[0], order[1] = to, from
			}
			bal := map[int64]int64{}
			for _, a := range order {
				rows, err := c.queryInts(background, "SELECT balance FROM accounts WHERE id = ? FOR UPDATE", a)
				if err != nil {
					return err
				}
				if len(rows) != 1 {
					return &invariantError{fmt.Sprintf("SELECT ... FOR UPDATE of account %d: %d rows", a, len(rows))}
				}
				if rows[0][0] < 0 {
					return &invariantError{fmt.Sprintf("account %d has a negative balance %d", a, rows[0][0])}
				}
				bal[a] = rows[0][0]
			}
			if bal[from] < amount {
				return errInsufficient
			}
			for _, a := range []struct{ id, delta int64 }{{from, -amount}, {to, amount}} {
				var err error
				switch style {
				case 0:
					err = c.execRows(background, 1, "UPDATE accounts SET balance = ? WHERE id = ?", bal[a.id]+a.delta, a.id)
				case 1:
					err = c.execRows(background, 1, "UPDATE accounts SET balance = balance + ? WHERE id = ?", a.delta, a.id)
				default:
					// 2 rows affected: the row existed and was updated.
					err = c.execRows(background, 2, "INSERT INTO accounts VALUES (?, 0) ON DUPLICATE KEY UPDATE balance = balance + ?", a.id, a.delta)
				}
				if err != nil {
					return err
				}
			}
			var err error
			_, err = c.exec(background, "INSERT INTO transfers VALUES (?, ?, ?, ?)", id, from, to, amount)
			return err
		})
		switch {
		case errors.Is(err, errInsufficient) && o == rejected:
			b.record(id, rejected)
			st.insufficient.Add(1)
			return nil
		case o == rejected && (retryable(err) || run.retryAlso != nil && run.retryAlso(err)):
			b.record(id, rejected)
			st.retried(err)
			continue
		case undetermined(err):
			b.record(id, unknown)
			st.cutOff.Add(1)
			continue
		case o == unknown:
			b.record(id, unknown)
			st.cutOff.Add(1)
			return err
		case o == done:
			b.record(id, done)
			st.transfers.Add(1)
			run.ack()
		}
		return err
	}
	return nil
}

// read reads every balance twice in one snapshot transaction, once by the
// primary key and once through the index on balance, and once more in
// autocommit, checking the invariants on each.
func (b *bank) read(c *client, st *bankStats, run *crashRun) error {
	o, err := c.txn(background, func() error {
		// On Basalt, the transaction's start ts, for the report of a
		// broken snapshot (asking starts the transaction, as the first
		// read would).
		startTS := func() string {
			if c.flavor != testkit.Basalt {
				return ""
			}
			var ts string
			if err := c.conn.QueryRowContext(background, "SELECT @@tidb_current_ts").Scan(&ts); err != nil {
				return "(" + err.Error() + ")"
			}
			return ts
		}
		before := startTS()
		first, err := c.queryInts(background, "SELECT id, balance FROM accounts")
		if err != nil {
			return err
		}
		if err := checkBalances("a snapshot", first); err != nil {
			return err
		}
		agg, err := c.queryInts(background, "SELECT COUNT(*), SUM(balance), MIN(balance) FROM accounts WHERE balance >= 0")
		if err != nil {
			return err
		}
		if a := agg[0]; a[0] != bankAccounts || a[1] != bankAccounts*bankOpening || a[2] < 0 {
			return &invariantError{fmt.Sprintf("snapshot: COUNT, SUM, MIN of balance >= 0 are %v; want %d, %d, >= 0",
				a, bankAccounts, bankAccounts*bankOpening)}
		}
		again, err := c.queryInts(background, "SELECT id, balance FROM accounts ORDER BY id")
		if err != nil {
			return err
		}
		slices.SortFunc(first, func(x, y []int64) int { return int(x[0] - y[0]) })
		if !slices.EqualFunc(first, again, slices.Equal) {
			return &invariantError{fmt.Sprintf("a snapshot read the balances differently the second time (start ts %s before the reads, %s after): %s",
				before, startTS(), rowsDiff(first, again))}
		}
		return nil
	})
	if o != done {
		if o == rejected && retryable(err) {
			st.retried(err)
			return nil
		}
		return err
	}
	st.snapshots.Add(1)
	rows, err := c.queryInts(background, "SELECT SUM(balance), COUNT(*) FROM accounts")
	if err != nil {
		return err
	}
	if rows[0][0] != bankAccounts*bankOpening || rows[0][1] != bankAccounts {
		return &invariantError{fmt.Sprintf("autocommit: SUM(balance), COUNT(*) = %v; want %d, %d", rows[0], bankAccounts*bankOpening, bankAccounts)}
	}
	return nil
}

// checkBalances checks rows of (id, balance): every account once, none
// negative, the total unchanged.
func checkBalances(what string, rows [][]int64) error {
	seen := map[int64]bool{}
	var sum int64
	for _, r := range rows {
		if r[1] < 0 {
			return &invariantError{fmt.Sprintf("%s: account %d has a negative balance %d", what, r[0], r[1])}
		}
		if seen[r[0]] || r[0] < 0 || r[0] >= bankAccounts {
			return &invariantError{fmt.Sprintf("%s: account %d read twice or unknown", what, r[0])}
		}
		seen[r[0]] = true
		sum += r[1]
	}
	if len(seen) != bankAccounts || sum != bankAccounts*bankOpening {
		return &invariantError{fmt.Sprintf("%s: %d accounts holding %d in all; want %d holding %d",
			what, len(seen), sum, bankAccounts, bankAccounts*bankOpening)}
	}
	return nil
}

// verify checks the bank after a run: the balances, each against the
// transfer log, the log against what the clients were told, and the
// tables' indexes. It returns how many cut-off transfers are in the log,
// and forgets the cut-off transfers (the next run may not change them).
func (b *bank) verify(t *testing.T, srv *testkit.Server) int {
	t.Helper()
	db := openPool(t, srv, "bank")
	defer db.Close()
	balances := poolInts(t, db, "SELECT id, balance FROM accounts")
	if err := checkBalances("after the run", balances); err != nil {
		t.Error(err)
	}
	want := map[int64]int64{}
	for i := range bankAccounts {
		want[int64(i)] = bankOpening
	}
	logged := map[int64]bool{}
	for _, r := range poolInts(t, db, "SELECT id, src, dst, amount FROM transfers") {
		logged[r[0]] = true
		want[r[1]] -= r[3]
		want[r[2]] += r[3]
	}
	for _, r := range balances {
		if want[r[0]] != r[1] {
			t.Errorf("account %d holds %d; its logged transfers leave %d", r[0], r[1], want[r[0]])
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	lost, ghosts, applied := 0, 0, 0
	for id := range b.acked {
		if !logged[id] {
			lost++
		}
	}
	for id := range logged {
		switch {
		case b.unknown[id]:
			applied++
			b.acked[id] = true
		case b.rejected[id]:
			ghosts++
		case !b.acked[id]:
			t.Errorf("transfer %d is logged but no client sent it", id)
		}
	}
	for id := range b.unknown {
		if !logged[id] {
			b.rejected[id] = true // absent now, so it must stay absent
		}
	}
	clear(b.unknown)
	if lost > 0 || ghosts > 0 {
		t.Errorf("%d acknowledged transfers are missing from the log; %d rejected ones are in it", lost, ghosts)
	}
	for _, table := range []string{"bank.accounts", "bank.transfers"} {
		checkTable(t, srv.Flavor(), db, table)
	}
	return applied
}

// rowsDiff describes where two reads of (id, balance) rows differ, for
// the report of a broken snapshot: the first few ids whose balances
// differ, and the row counts.
func rowsDiff(first, again [][]int64) string {
	byID := map[int64]int64{}
	for _, r := range first {
		byID[r[0]] = r[1]
	}
	var diffs []string
	for _, r := range again {
		if b, ok := byID[r[0]]; !ok || b != r[1] {
			diffs = append(diffs, fmt.Sprintf("id %d: %d then %d", r[0], b, r[1]))
		}
	}
	if len(diffs) > 6 {
		diffs = append(diffs[:6], "...")
	}
	return fmt.Sprintf("%d rows then %d; %s", len(first), len(again), strings.Join(diffs, ", "))
}
