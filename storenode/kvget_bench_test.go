package storenode

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tikv/client-go/v2/oracle"
	"github.com/tikv/client-go/v2/txnkv"
)

// BenchmarkKvGet measures a point get as a SQL node's point select sends
// it: client-go's snapshot Get, on the BatchCommands stream, to a storage
// node started in this process (Start: Pebble, raftstore, one region led
// here, under its lease) with a one-member PD, 64 callers. It reports
// the process's CPU per get (client and store together: cpu-ns/op) from
// getrusage, and allocs/op.
//
//	go test -run '^$' -bench KvGet -benchtime 100000x -count 5 ./storenode/
func BenchmarkKvGet(b *testing.B) {
	cli, ts, _ := startBenchNode(b, []byte("value-of-a-typical-row-......................................."))
	ctx := context.Background()
	if _, err := cli.GetSnapshot(ts).Get(ctx, benchKey(1)); err != nil {
		b.Fatal(err)
	}

	runCallers(b, func(i int) error {
		// A snapshot of its own: a snapshot caches what it read.
		_, err := cli.GetSnapshot(ts).Get(ctx, benchKey(i*7919%benchKeys))
		return err
	})
}

// runCallers runs op(1) to op(b.N) from 64 goroutines, as many sessions
// of a SQL node would, and reports ops/s, this process's CPU time per op
// (cpu-ns/op: client and store when the store runs in this process, the
// client's alone when it runs in others) and the errors (the first one
// logged).
func runCallers(b *testing.B, op func(i int) error) {
	const callers = 64
	var next, errs atomic.Int64
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuTime()
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1))
				if i > b.N {
					return
				}
				if err := op(i); err != nil {
					if errs.Add(1) == 1 {
						b.Logf("first error: %v", err)
					}
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "ops/s")
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(errs.Load()), "errors")
}

// benchKeys is how many keys startBenchNode writes: benchKey(0) to
// benchKey(benchKeys-1).
const benchKeys = 10000

// startBenchNode starts PD and a storage node in this process, writes
// benchKeys keys of value through client-go, and returns the client, a
// timestamp above the writes and PD's address.
func startBenchNode(b *testing.B, value []byte) (*txnkv.Client, uint64, string) {
	cli, _, pdAddr := startNodeWithClient(b, nil)
	ctx := context.Background()
	for start := 0; start < benchKeys; start += 1000 {
		for {
			err := func() error {
				txn, err := cli.Begin()
				if err != nil {
					return err
				}
				for i := start; i < start+1000; i++ {
					_ = txn.Set(benchKey(i), value)
				}
				return txn.Commit(ctx)
			}()
			if err == nil {
				break
			}
			time.Sleep(100 * time.Millisecond) // the region's first leader may still be coming up
		}
	}
	ts, err := cli.CurrentTimestamp(oracle.GlobalTxnScope)
	if err != nil {
		b.Fatal(err)
	}
	return cli, ts, pdAddr
}

func benchKey(i int) []byte { return fmt.Appendf(nil, "t\x80\x00\x00\x00\x00\x00\x00\x01_r%08d", i) }

// cpuTime is the CPU time this process has used, user and system, in ns.
func cpuTime() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}
