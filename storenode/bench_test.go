package storenode_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/basalt-db/basalt/storenode"
)

// BenchmarkCluster measures client-go on 1 PD + 3 storage nodes (3
// replicas, sync-log on), all processes on this machine, with 64
// concurrent callers: point gets, 1-key transactions (1PC when the store
// grants it, else 2PC), the same in two phases (what every autocommit
// write of the SQL layer was before it asked for 1PC), and 2-key
// transactions. Each op is one call or one committed transaction; b.N are
// spread over the callers.
//
//	go test -run '^$' -bench Cluster -benchtime 20000x ./storenode/
//
// BASALT_BENCH_STORE_CONFIG adds TOML to the stores' configuration, to
// compare settings.
func BenchmarkCluster(b *testing.B) {
	_, cli := startCluster(b, os.Getenv("BASALT_BENCH_STORE_CONFIG"), "error")
	ctx := context.Background()
	const keys = 10000
	for start := 0; start < keys; start += 1000 {
		txn, err := cli.Begin()
		if err != nil {
			b.Fatal(err)
		}
		for i := start; i < start+1000; i++ {
			_ = txn.Set(key(i), []byte("value-of-a-typical-row-......................................."))
		}
		if err := txn.Commit(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("Get/64", func(b *testing.B) {
		storenode.RunCallers(b, func(i int) error {
			txn, err := cli.Begin()
			if err != nil {
				return err
			}
			_, err = txn.Get(ctx, key(i*7919%keys))
			return err
		})
	})
	commit := func(n int, onePC bool) func(i int) error {
		return func(i int) error {
			txn, err := cli.Begin()
			if err != nil {
				return err
			}
			for j := range n {
				if err := txn.Set(key((i*7919+j*4999)%keys), []byte(fmt.Sprint(i))); err != nil {
					return err
				}
			}
			txn.SetEnable1PC(onePC)
			return txn.Commit(ctx)
		}
	}
	b.Run("Commit1Key/64", func(b *testing.B) { storenode.RunCallers(b, commit(1, true)) })
	b.Run("Commit1Key2PC/64", func(b *testing.B) { storenode.RunCallers(b, commit(1, false)) })
	b.Run("Commit2Keys/64", func(b *testing.B) { storenode.RunCallers(b, commit(2, true)) })
}
