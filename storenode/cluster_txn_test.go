package storenode_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/pingcap/kvproto/pkg/kvrpcpb"
	tikverr "github.com/tikv/client-go/v2/error"
	tikvkv "github.com/tikv/client-go/v2/kv"
	"github.com/tikv/client-go/v2/tikv"
	"github.com/tikv/client-go/v2/tikvrpc"
)

// TestClusterTxnModes runs client-go's commit protocols across regions led
// by different stores (real processes): 2PC, async commit, 1PC, and both,
// each with optimistic and pessimistic transactions; then transactions
// that crashed after prewriting (normal and async commit, primary and
// secondary in different regions), whose locks a later reader resolves.
func TestClusterTxnModes(t *testing.T) {
	c, cli := startCluster(t, "", "error")
	ctx := context.Background()
	var splits [][]byte
	for i := 1; i < 4; i++ {
		splits = append(splits, []byte(fmt.Sprintf("m%d", i)))
	}
	if _, err := cli.KVStore.SplitRegions(ctx, splits, true, nil); err != nil {
		t.Fatal(err)
	}
	waitReplicated(t, c, 3, 4)

	get := func(key []byte) ([]byte, error) {
		txn, err := cli.Begin()
		if err != nil {
			return nil, err
		}
		defer txn.Rollback()
		v, err := txn.Get(ctx, key)
		if tikverr.IsErrNotFound(err) {
			return nil, nil
		}
		return v.Value, err
	}
	modes := []struct {
		name         string
		async, onePC bool
	}{{"2pc", false, false}, {"async-commit", true, false}, {"1pc", false, true}, {"async-commit+1pc", true, true}}
	for _, m := range modes {
		for _, pessimistic := range []bool{false, true} {
			name := fmt.Sprintf("%s/pessimistic=%v", m.name, pessimistic)
			t.Run(name, func(t *testing.T) {
				// One key (1PC can apply) and one key per region.
				for _, keys := range [][]string{{"m0/" + name}, {"m0/" + name, "m1/" + name, "m2/" + name, "m3/" + name}} {
					txn, err := cli.Begin()
					if err != nil {
						t.Fatal(err)
					}
					txn.SetPessimistic(pessimistic)
					txn.SetEnableAsyncCommit(m.async)
					txn.SetEnable1PC(m.onePC)
					for _, k := range keys {
						if pessimistic {
							lc := tikvkv.NewLockCtx(txn.StartTS(), 1000, time.Now())
							if err := txn.LockKeys(ctx, lc, []byte(k)); err != nil {
								t.Fatal(err)
							}
						}
						if err := txn.Set([]byte(k), []byte(fmt.Sprintf("%s@%d", k, len(keys)))); err != nil {
							t.Fatal(err)
						}
					}
					if err := txn.Commit(ctx); err != nil {
						t.Fatalf("commit of %d keys: %v", len(keys), err)
					}
					for _, k := range keys {
						v, err := get([]byte(k))
						if want := fmt.Sprintf("%s@%d", k, len(keys)); err != nil || string(v) != want {
							t.Fatalf("%s = %q, %v; want %q", k, v, err, want)
						}
					}
				}
			})
		}
	}

	// The leaders report what their regions wrote and read to PD, which
	// shows it.
	t.Run("flow", func(t *testing.T) {
		deadline := time.Now().Add(15 * time.Second)
		var wrote, read bool
		for i := 0; ; i++ {
			txn, err := cli.Begin()
			if err != nil {
				t.Fatal(err)
			}
			k := fmt.Sprintf("m2/flow-%d", i)
			_ = txn.Set([]byte(k), []byte("0123456789"))
			if err := txn.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if txn, err = cli.Begin(); err != nil {
				t.Fatal(err)
			}
			if _, err := txn.Get(ctx, []byte(k)); err != nil {
				t.Fatal(err)
			}
			for _, r := range pdRegions(t, c.PD) {
				wrote = wrote || r.WrittenBytes >= uint64(len(k)+10) && r.WrittenKeys >= 1
				read = read || r.ReadBytes >= uint64(len(k)+10) && r.ReadKeys >= 1
			}
			if wrote && read {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("no region reported what it wrote (%v) or read (%v): %+v", wrote, read, pdRegions(t, c.PD))
			}
			time.Sleep(50 * time.Millisecond)
		}
	})

	// A transaction that prewrote its primary in region m1 and a secondary
	// in region m2, on whatever stores lead them, and then vanished.
	prewrite := func(t *testing.T, startTS uint64, primary []byte, key []byte, async bool, secondaries [][]byte) {
		t.Helper()
		bo := tikv.NewBackofferWithVars(ctx, 10000, nil)
		loc, err := cli.KVStore.GetRegionCache().LocateKey(bo, key)
		if err != nil {
			t.Fatal(err)
		}
		req := tikvrpc.NewRequest(tikvrpc.CmdPrewrite, &kvrpcpb.PrewriteRequest{PrimaryLock: primary,
			StartVersion: startTS, LockTtl: 100, MinCommitTs: startTS + 1, TxnSize: 2, UseAsyncCommit: async,
			Secondaries: secondaries,
			Mutations:   []*kvrpcpb.Mutation{{Op: kvrpcpb.Op_Put, Key: key, Value: []byte("crashed")}}})
		resp, err := cli.KVStore.SendReq(bo, req, loc.Region, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if re, _ := resp.GetRegionError(); re != nil {
			t.Fatalf("prewrite of %q: %v", key, re)
		}
		if pr := resp.Resp.(*kvrpcpb.PrewriteResponse); len(pr.Errors) > 0 {
			t.Fatalf("prewrite of %q: %v", key, pr.Errors)
		}
	}
	for _, async := range []bool{false, true} {
		t.Run(fmt.Sprintf("crashed/async=%v", async), func(t *testing.T) {
			primary, secondary := []byte(fmt.Sprintf("m1/crashed-%v", async)), []byte(fmt.Sprintf("m2/crashed-%v", async))
			startTS, err := cli.GetTimestamp(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var secondaries [][]byte
			if async {
				secondaries = [][]byte{secondary}
			}
			prewrite(t, startTS, primary, primary, async, secondaries)
			prewrite(t, startTS, primary, secondary, async, nil)
			// A reader of the secondary meets the lock, finds the
			// primary's TTL expired, and resolves it: an ordinary
			// transaction is rolled back (its write never happened); an
			// async-commit one, all of whose keys were prewritten, is
			// committed.
			want := []byte(nil)
			if async {
				want = []byte("crashed")
			}
			deadline := time.Now().Add(20 * time.Second)
			for {
				v, err := get(secondary)
				if err == nil && bytes.Equal(v, want) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("reading %q: %q, %v; want %q", secondary, v, err, want)
				}
				time.Sleep(100 * time.Millisecond)
			}
			if v, err := get(primary); err != nil || !bytes.Equal(v, want) {
				t.Fatalf("reading the primary %q: %q, %v; want %q", primary, v, err, want)
			}
		})
	}
}
