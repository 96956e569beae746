package e2e

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/basalt-db/basalt/testkit"
)

// TestLostUpdate: lostUpdateClients clients increment a few hot rows at
// once, in autocommit statements and in explicit transactions, pessimistic
// and optimistic (on Basalt):
//
//	UPDATE hot SET v = v + 1 WHERE id IN (...)             -- autocommit
//	UPDATE hot SET v = v + 1 WHERE id = ?                  -- autocommit
//	UPDATE hot SET v = v + 1 WHERE grp = ?   -- autocommit, by an index
//	BEGIN; UPDATE ... IN (...); UPDATE ... IN (...); COMMIT
//	BEGIN; SELECT v ... FOR UPDATE; UPDATE hot SET v = <v + 1>; COMMIT
//
// Each client counts the increments the server acknowledged; an error is
// an increment that did not happen (the transaction is rolled back), and
// every UPDATE must report as many changed rows as it names. In the end
// each row must hold exactly its acknowledged increments, before and
// after a clean restart, and ADMIN CHECK TABLE (v is indexed) passes.
// BASALT_LOSTUPDATE_SECONDS sets the length (default 5).
func TestLostUpdate(t *testing.T) {
	cfg := loadConfig(t)
	secs := envInt("BASALT_LOSTUPDATE_SECONDS", 5)
	srv := testkit.StartTarget(t, cfg.target)
	admin := openPool(t, srv, "")
	mustExecAll(t, admin, "CREATE DATABASE lu",
		"CREATE TABLE lu.hot (id INT PRIMARY KEY, grp INT NOT NULL, v BIGINT NOT NULL, KEY grp (grp), KEY v (v))")
	for i := range lostUpdateRows {
		mustExecAll(t, admin, fmt.Sprintf("INSERT INTO lu.hot VALUES (%d, %d, 0)", i, i%2))
	}
	admin.Close()
	modes := []txnMode{serverDefault}
	if srv.Flavor() == testkit.Basalt {
		modes = []txnMode{pessimistic, optimistic}
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))

	var (
		mu    sync.Mutex
		acked [lostUpdateRows]int64
		stats lostUpdateStats
	)
	pools := openClientPools(t, srv, "lu")
	run := newCrashRun()
	for i := range lostUpdateClients {
		mode := modes[i%len(modes)]
		crng := rand.New(rand.NewPCG(rng.Uint64(), uint64(i)))
		run.goClient(func() {
			c, err := newClient(background, pools.forClient(i), srv.Flavor(), mode)
			if err != nil {
				t.Errorf("client %d: %v", i, err)
				return
			}
			defer c.Close()
			var mine [lostUpdateRows]int64
			var st lostUpdateStats
			for !run.over() {
				incs, o, err := increment(c, crng)
				switch {
				case o == done:
					for id, n := range incs {
						mine[id] += n
						st.increments += n
					}
					st.acked++
					run.ack()
				case o == rejected && retryable(err):
					st.rejected(err)
				default:
					t.Errorf("client %d (%s): %v", i, mode, err)
					run.stop.Store(true)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			for id, n := range mine {
				acked[id] += n
			}
			stats.add(&st)
		})
	}
	run.finish(time.Duration(secs) * time.Second)
	pools.Close()
	t.Logf("%v", &stats)
	if stats.acked == 0 {
		t.Fatal("no increment was acknowledged")
	}
	check := func(when string) {
		db := openPool(t, srv, "lu")
		defer db.Close()
		got := poolInts(t, db, "SELECT id, v FROM hot ORDER BY id")
		if len(got) != lostUpdateRows {
			t.Fatalf("%s: %d rows, want %d", when, len(got), lostUpdateRows)
		}
		for i, r := range got {
			if r[0] != int64(i) || r[1] != acked[i] {
				t.Errorf("%s: row %d holds %d; %d increments of it were acknowledged", when, r[0], r[1], acked[i])
			}
		}
		checkTable(t, srv.Flavor(), db, "lu.hot")
	}
	check("after the run")
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	check("after a restart")
}

const (
	lostUpdateRows    = 4
	lostUpdateClients = 16
)

type lostUpdateStats struct {
	acked      int64          // acknowledged statements and transactions
	increments int64          // acknowledged increments
	rejects    map[uint16]int // rejected ones, by error code
}

func (s *lostUpdateStats) rejected(err error) {
	if s.rejects == nil {
		s.rejects = map[uint16]int{}
	}
	s.rejects[errCode(err)]++
}

func (s *lostUpdateStats) add(o *lostUpdateStats) {
	s.acked += o.acked
	s.increments += o.increments
	if s.rejects == nil {
		s.rejects = map[uint16]int{}
	}
	for c, n := range o.rejects {
		s.rejects[c] += n
	}
}

func (s *lostUpdateStats) String() string {
	return fmt.Sprintf("%d increments acknowledged in %d statements and transactions; rejected and not counted: %v (by error code)",
		s.increments, s.acked, s.rejects)
}

// increment runs one random increment and returns how many times it
// incremented each row, and its outcome.
func increment(c *client, rng *rand.Rand) (map[int]int64, outcome, error) {
	incs := map[int]int64{}
	// subset names 1 to lostUpdateRows distinct rows, in random order.
	subset := func() string {
		ids := rng.Perm(lostUpdateRows)[:1+rng.IntN(lostUpdateRows)]
		s := make([]string, len(ids))
		for i, id := range ids {
			incs[id]++
			s[i] = fmt.Sprint(id)
		}
		return strings.Join(s, ", ")
	}
	updateSubset := func() error {
		ids := subset()
		return c.execRows(background, int64(strings.Count(ids, ",")+1),
			"UPDATE hot SET v = v + 1 WHERE id IN ("+ids+")")
	}
	switch rng.IntN(5) {
	case 4:
		grp := rng.IntN(2)
		for id := grp; id < lostUpdateRows; id += 2 {
			incs[id]++
		}
		err := c.execRows(background, int64(len(incs)), "UPDATE hot SET v = v + 1 WHERE grp = ?", grp)
		return incs, outcomeOf(err), err
	case 0:
		err := updateSubset()
		return incs, outcomeOf(err), err
	case 1:
		id := rng.IntN(lostUpdateRows)
		incs[id]++
		err := c.execRows(background, 1, "UPDATE hot SET v = v + 1 WHERE id = ?", id)
		return incs, outcomeOf(err), err
	case 2:
		o, err := c.txn(background, func() error {
			if err := updateSubset(); err != nil {
				return err
			}
			if rng.IntN(2) == 0 {
				return updateSubset()
			}
			return nil
		})
		return incs, o, err
	}
	id := rng.IntN(lostUpdateRows)
	incs[id]++
	o, err := c.txn(background, func() error {
		rows, err := c.queryInts(background, "SELECT v FROM hot WHERE id = ? FOR UPDATE", id)
		if err != nil {
			return err
		}
		if len(rows) != 1 {
			return &invariantError{fmt.Sprintf("SELECT v FROM hot WHERE id = %d FOR UPDATE: %d rows", id, len(rows))}
		}
		return c.execRows(background, 1, "UPDATE hot SET v = ? WHERE id = ?", rows[0][0]+1, id)
	})
	return incs, o, err
}
