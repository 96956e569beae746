package storenode

import (
	"fmt"
	"strings"
	"testing"

	"github.com/basalt-db/basalt/store/tikv"
)

// BenchmarkKvScan measures a range query's read as a SQL node makes it
// for oltp_read_only's ranges: the SQL node's storage (store/tikv over
// client-go) iterating a snapshot over 100 consecutive keys of 190-byte
// values (sysbench's rows) to the end, on the BatchCommands stream to a
// storage node started in this process (as BenchmarkKvGet), 64 callers. It reports the process's CPU per scan
// (client and store together: cpu-ns/op) and allocs/op.
//
//	go test -run '^$' -bench KvScan -benchtime 20000x -count 5 ./storenode/
func BenchmarkKvScan(b *testing.B) {
	const rows = 100
	_, ts, pdAddr := startBenchNode(b, []byte(strings.Repeat("v", 190)))
	st, err := tikv.Open([]string{pdAddr})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	scan := func(i int) (int, error) {
		first := i * 7919 % (benchKeys - rows)
		it, err := st.Snapshot(ts).Iter(benchKey(first), benchKey(first+rows))
		if err != nil {
			return 0, err
		}
		defer it.Close()
		n := 0
		for ; it.Valid(); n++ {
			if err := it.Next(); err != nil {
				return n, err
			}
		}
		return n, nil
	}
	if n, err := scan(1); err != nil || n != rows {
		b.Fatalf("scanned %d rows (%v), want %d", n, err, rows)
	}

	runCallers(b, func(i int) error {
		if n, err := scan(i); err != nil || n != rows {
			return fmt.Errorf("%d rows, %v", n, err)
		}
		return nil
	})
}
