package storenode_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/basalt-db/basalt/testkit"
	"github.com/tikv/client-go/v2/txnkv"
)

const (
	bankAccounts = 100
	bankBalance  = 1000
)

func account(i int) []byte { return []byte(fmt.Sprintf("acct%03d", i)) }

func balance(v []byte) int64 { return int64(binary.BigEndian.Uint64(v)) }

func encBalance(n int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(n)) }

// bank runs transfers between accounts from several clients, each transfer
// also writing a receipt key; a checker reads every account in one
// snapshot and fails the test if the total ever changes.
type bank struct {
	t       *testing.T
	cli     *txnkv.Client
	stop    chan struct{}
	wg      sync.WaitGroup
	commits atomic.Int64
	errs    atomic.Int64
	checks  atomic.Int64

	mu       sync.Mutex
	receipts [][]byte // keys of acknowledged transfers
}

func (b *bank) transfer(rng *rand.Rand, client, seq int) error {
	ctx := context.Background()
	txn, err := b.cli.Begin()
	if err != nil {
		return err
	}
	from, to := rng.Intn(bankAccounts), rng.Intn(bankAccounts)
	if from == to {
		to = (to + 1) % bankAccounts
	}
	vf, err := txn.Get(ctx, account(from))
	if err != nil {
		txn.Rollback()
		return err
	}
	vt, err := txn.Get(ctx, account(to))
	if err != nil {
		txn.Rollback()
		return err
	}
	amount := int64(rng.Intn(10) + 1)
	receipt := []byte(fmt.Sprintf("receipt/%02d/%08d", client, seq))
	_ = txn.Set(account(from), encBalance(balance(vf.Value)-amount))
	_ = txn.Set(account(to), encBalance(balance(vt.Value)+amount))
	_ = txn.Set(receipt, []byte{1})
	if err := txn.Commit(ctx); err != nil {
		return err
	}
	b.mu.Lock()
	b.receipts = append(b.receipts, receipt)
	b.mu.Unlock()
	return nil
}

func (b *bank) total() (int64, error) {
	txn, err := b.cli.Begin()
	if err != nil {
		return 0, err
	}
	defer txn.Rollback()
	it, err := txn.Iter(account(0), account(bankAccounts))
	if err != nil {
		return 0, err
	}
	defer it.Close()
	var sum int64
	n := 0
	for it.Valid() {
		sum += balance(it.Value())
		n++
		if err := it.Next(); err != nil {
			return 0, err
		}
	}
	if n != bankAccounts {
		return 0, fmt.Errorf("read %d accounts", n)
	}
	return sum, nil
}

func (b *bank) run(clients int) {
	for c := range clients {
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			rng := rand.New(rand.NewSource(int64(c)))
			for seq := 0; ; seq++ {
				select {
				case <-b.stop:
					return
				default:
				}
				if err := b.transfer(rng, c, seq); err != nil {
					b.errs.Add(1)
				} else {
					b.commits.Add(1)
				}
			}
		}()
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		for {
			select {
			case <-b.stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			sum, err := b.total()
			if err != nil {
				continue // a store is down or a region moving; the next read checks
			}
			b.checks.Add(1)
			if sum != bankAccounts*bankBalance {
				b.t.Errorf("a snapshot's total is %d, want %d", sum, bankAccounts*bankBalance)
			}
		}
	}()
}

// TestClusterBankKill: a bank workload on 3 stores across regions while a
// store is killed with SIGKILL and restarted; then the others are killed
// one at a time, so that each pair of stores must hold everything. The
// total never changes in any snapshot read, and no acknowledged transfer
// is lost.
func TestClusterBankKill(t *testing.T) {
	// A small log limit, so that a store down for a few seconds comes back
	// behind the compacted log and catches up by snapshot.
	c, cli := startCluster(t, "raft-log-gc-count-limit = 64\n", "fatal")
	ctx := context.Background()
	txn, err := cli.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for i := range bankAccounts {
		_ = txn.Set(account(i), encBalance(bankBalance))
	}
	if err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var splits [][]byte
	for i := 20; i < bankAccounts; i += 20 {
		splits = append(splits, account(i))
	}
	if _, err := cli.KVStore.SplitRegions(ctx, splits, false, nil); err != nil {
		t.Fatal(err)
	}
	waitReplicated(t, c, 3, 5)

	b := &bank{t: t, cli: cli, stop: make(chan struct{})}
	b.run(16)
	phase := func(what string, d time.Duration) {
		before := b.commits.Load()
		time.Sleep(d)
		t.Logf("%s: %d transfers committed, %d failed so far, %d checks", what, b.commits.Load()-before, b.errs.Load(), b.checks.Load())
	}
	// Regions split and leaders move while the transfers run.
	churned := make(chan error, 1)
	go func() { churned <- churn(ctx, c, cli) }()
	phase("3 stores, splitting and moving leaders", 3*time.Second)
	if err := <-churned; err != nil {
		t.Fatal(err)
	}
	c.Kill("store2")
	phase("store2 killed", 5*time.Second)
	if b.commits.Load() == 0 {
		t.Fatal("no transfer committed")
	}
	c.StartStore("store2")
	phase("store2 restarted", 3*time.Second)
	close(b.stop)
	b.wg.Wait()
	waitReplicated(t, c, 3, 10)

	// Every pair of stores holds every acknowledged transfer.
	for _, down := range []string{"store1", "store3"} {
		c.Kill(down)
		sum, err := totalEventually(b)
		if err != nil || sum != bankAccounts*bankBalance {
			t.Fatalf("with %s down: total %d, %v\n%s", down, sum, err, c.Logs())
		}
		missing := 0
		txn, err := cli.Begin()
		if err != nil {
			t.Fatal(err)
		}
		vals, err := txn.BatchGet(ctx, b.receipts)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range b.receipts {
			if _, ok := vals[string(k)]; !ok {
				missing++
			}
		}
		if missing > 0 {
			t.Fatalf("with %s down: %d of %d acknowledged transfers lost", down, missing, len(b.receipts))
		}
		c.StartStore(down)
		waitReplicated(t, c, 3, 10)
	}
	t.Logf("%d transfers acknowledged, none lost; %d snapshot checks", len(b.receipts), b.checks.Load())
}

// churn splits the accounts' regions further and asks PD to move each
// region's leader to another store.
func churn(ctx context.Context, c *testkit.Cluster, cli *txnkv.Client) error {
	var splits [][]byte
	for i := 10; i < bankAccounts; i += 20 {
		splits = append(splits, account(i))
	}
	if _, err := cli.KVStore.SplitRegions(ctx, splits, false, nil); err != nil {
		return fmt.Errorf("split under load: %w", err)
	}
	moved := 0
	for _, r := range pdRegionsErr(c.PD) {
		if r.Leader == nil {
			continue
		}
		for _, p := range r.Peers {
			if p.StoreID == r.Leader.StoreID {
				continue
			}
			body := fmt.Sprintf(`{"name": "transfer-leader", "region_id": %d, "to_store_id": %d}`, r.ID, p.StoreID)
			resp, err := http.Post("http://"+c.PD+"/pd/api/v1/operators", "application/json", strings.NewReader(body))
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				moved++
			}
			break
		}
	}
	if moved == 0 {
		return fmt.Errorf("PD took no leader transfer")
	}
	return nil
}

// pdRegionsErr is pdRegions for a goroutine that cannot fail the test.
func pdRegionsErr(pd string) []pdRegion {
	resp, err := http.Get("http://" + pd + "/pd/api/v1/regions")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var out struct {
		Regions []pdRegion `json:"regions"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return out.Regions
}

// totalEventually reads the total, retrying while regions elect leaders.
func totalEventually(b *bank) (int64, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		sum, err := b.total()
		if err == nil || time.Now().After(deadline) {
			return sum, err
		}
		time.Sleep(200 * time.Millisecond)
	}
}
