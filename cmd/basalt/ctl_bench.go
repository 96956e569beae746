package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pingcap/log"
	pd "github.com/tikv/pd/client"
	"github.com/tikv/pd/client/opt"
	"github.com/tikv/pd/client/pkg/caller"
	"go.uber.org/zap"
)

// ctlTSOBench is basalt ctl tso-bench: timestamps from PD through the
// real pd/client, from --clients goroutines for --duration, reported as
// timestamps per second and latency percentiles (pd-tso-bench's shape).
func ctlTSOBench(pdURL string, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("basalt ctl tso-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	clients := fs.Int("clients", 64, "concurrent callers")
	duration := fs.Duration("duration", 10*time.Second, "how long to run")
	batchInterval := fs.Duration("batch-interval", 0, "pd/client's max TSO batch wait interval (TiDB's tidb_tso_client_batch_max_wait_time)")
	rpcConcurrency := fs.Int("rpc-concurrency", 1, "pd/client's TSO RPCs in flight at once (TiDB's tidb_tso_client_rpc_mode: 1, 2 or 4)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if *clients < 1 || *duration <= 0 || *rpcConcurrency < 1 {
		fmt.Fprintln(stderr, "basalt ctl tso-bench: --clients, --duration and --rpc-concurrency must be positive")
		return 2
	}
	log.SetLevel(zap.ErrorLevel) // pd/client logs every connection change
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := pd.NewClientWithContext(ctx, caller.TestComponent, strings.Split(pdURL, ","), pd.SecurityOption{})
	if err != nil {
		fmt.Fprintf(stderr, "basalt ctl tso-bench: %v\n", err)
		return 1
	}
	defer c.Close()
	if err := c.UpdateOption(opt.MaxTSOBatchWaitInterval, *batchInterval); err != nil {
		fmt.Fprintf(stderr, "basalt ctl tso-bench: --batch-interval: %v\n", err)
		return 2
	}
	if err := c.UpdateOption(opt.TSOClientRPCConcurrency, *rpcConcurrency); err != nil {
		fmt.Fprintf(stderr, "basalt ctl tso-bench: --rpc-concurrency: %v\n", err)
		return 2
	}
	cpu0 := processCPU()
	lat := make([][]time.Duration, *clients)
	errs := make([]error, *clients)
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(*duration)
	for i := 0; i < *clients; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for time.Now().Before(deadline) {
				t0 := time.Now()
				if _, _, err := c.GetTS(ctx); err != nil {
					errs[i] = err
					return
				}
				lat[i] = append(lat[i], time.Since(t0))
			}
		}(i)
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu := processCPU() - cpu0
	for _, err := range errs {
		if err != nil {
			fmt.Fprintf(stderr, "basalt ctl tso-bench: %v\n", err)
			return 1
		}
	}
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	if len(all) == 0 {
		fmt.Fprintln(stderr, "basalt ctl tso-bench: no timestamps")
		return 1
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	pct := func(p float64) time.Duration { return all[min(len(all)-1, int(p*float64(len(all))))] }
	fmt.Fprintf(stdout, "clients %d, %v: %d timestamps, %.0f/s; latency p50 %v, p99 %v, p999 %v, max %v; client CPU %.2f µs per timestamp\n",
		*clients, elapsed.Round(time.Millisecond), len(all), float64(len(all))/elapsed.Seconds(),
		pct(0.50), pct(0.99), pct(0.999), all[len(all)-1], float64(cpu.Microseconds())/float64(len(all)))
	return 0
}

// processCPU is the CPU time (user and system) this process has used:
// what the client side of a load costs, next to what it achieved.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
