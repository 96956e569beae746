package storenode

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/basalt-db/basalt/store/tikv"
)

// BenchmarkPointGet measures a point select's read as a SQL node makes it:
// the SQL node's storage (store/tikv over client-go) reading one key of
// a 190-byte value (sysbench's row) at a timestamp, on a storage node
// started in this process (as BenchmarkKvGet, which reads through
// client-go's own snapshot instead), 64 callers. It reports the
// process's CPU per get (client and store together: cpu-ns/op).
//
//	go test -run '^$' -bench PointGet -benchtime 30000x -count 5 ./storenode/
func BenchmarkPointGet(b *testing.B) {
	_, ts, pdAddr := startBenchNode(b, []byte(strings.Repeat("v", 190)))
	st, err := tikv.Open([]string{pdAddr})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	ctx := context.Background()
	get := func(i int) error {
		v, err := st.Snapshot(ts).Get(ctx, benchKey(i*7919%benchKeys))
		if err == nil && len(v) != 190 {
			err = fmt.Errorf("%d bytes", len(v))
		}
		return err
	}
	for i := range 100 { // the first gets go through client-go while the read stream is made
		if err := get(i); err != nil {
			b.Fatal(err)
		}
	}
	runCallers(b, get)
}
