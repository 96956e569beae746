package storenode

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tikv/client-go/v2/kv"
)

// BenchmarkPessimisticWrite measures a pessimistic write as a SQL node's
// UPDATE by id in an explicit transaction sends it: client-go takes the
// row's pessimistic lock (KvPessimisticLock, kept in memory on the
// leader, answered once taken: pipelined) and commits it in one phase
// (a 1PC KvPrewrite, one raft proposal), on a storage node started in
// this process with a one-member PD, 64 callers on distinct keys. It
// reports the process's CPU per transaction (client and store:
// cpu-ns/op) and allocs/op.
//
//	go test -run '^$' -bench PessimisticWrite -benchtime 20000x -count 5 ./storenode/
func BenchmarkPessimisticWrite(b *testing.B) { benchPessimisticWrite(b, false) }

// BenchmarkPessimisticWriteValues is BenchmarkPessimisticWrite with the
// lock returning the row's value, as the SQL node's UPDATE asks for it
// (store/tikv's LockKeys: the locking read then needs no KvGet).
//
//	go test -run '^$' -bench PessimisticWriteValues -benchtime 20000x -count 5 ./storenode/
func BenchmarkPessimisticWriteValues(b *testing.B) { benchPessimisticWrite(b, true) }

func benchPessimisticWrite(b *testing.B, values bool) {
	cli, _, _ := startBenchNode(b, []byte("value-of-a-typical-row-......................................."))
	ctx := context.Background()
	runCallers(b, func(i int) error {
		txn, err := cli.Begin()
		if err != nil {
			return err
		}
		txn.SetPessimistic(true)
		txn.SetEnable1PC(true)
		k := benchKey(i * 7919 % benchKeys)
		if !values {
			// Locks at a fresh for-update ts (client-go fetches one).
			err = txn.LockKeysWithWaitTime(ctx, kv.LockAlwaysWait, k)
		} else {
			lctx := kv.NewLockCtx(txn.StartTS(), kv.LockAlwaysWait, time.Now())
			lctx.InitReturnValues(1)
			err = txn.LockKeys(ctx, lctx, k)
			if v, ok := lctx.GetValueNotLocked(k); err == nil && (!ok || len(v) == 0) {
				err = fmt.Errorf("the lock of %q returned no value", k)
			}
		}
		if err != nil {
			_ = txn.Rollback()
			return err
		}
		if err := txn.Set(k, []byte("value-of-an-updated-row-......................................")); err != nil {
			return err
		}
		return txn.Commit(ctx)
	})
}
