package driver_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/basalt-db/basalt/session"
	"github.com/basalt-db/basalt/store/local"
)

// BenchmarkBulkInsert runs sysbench prepare's statements in one in-process
// session on the embedded store (the adapter, the session, the executor
// and the store's commit; no network): multi-row INSERTs of
// bulkInsertRows rows (about 1 MB of text, as sysbench's bulk insert
// sends) into a fresh sbtest1 without its secondary index, each in
// autocommit. It reports the process CPU time per statement
// (cpu-ns/op) and rows per CPU second:
//
//	go test -run '^$' -bench BulkInsert -benchtime 40x -count 5 ./driver/
//
// The WAL is synced as the server syncs it (BASALT_BENCH_NOSYNC=1 leaves
// it out), which costs wall time, not CPU.
func BenchmarkBulkInsert(b *testing.B) {
	const bulkInsertRows = 5000
	st, err := local.Open(b.TempDir(), local.Options{NoSync: os.Getenv("BASALT_BENCH_NOSYNC") != ""})
	if err != nil {
		b.Fatal(err)
	}
	s := emptySbtestSession(b, st, session.Config{PessimisticByDefault: true, PlanCacheCapacity: 100, LockWaitTimeout: time.Second})
	rng := rand.New(rand.NewPCG(5, 6))
	stmt := func() string {
		var q strings.Builder
		q.Grow(bulkInsertRows * 200)
		q.WriteString("INSERT INTO sbtest1(k, c, pad) VALUES")
		for i := range bulkInsertRows {
			if i > 0 {
				q.WriteByte(',')
			}
			q.WriteString("(")
			q.WriteString(strconv.Itoa(rng.IntN(1000000)))
			fmt.Fprintf(&q, ", '%s', '%s')", sbString(rng, 10), sbString(rng, 5))
		}
		return q.String()
	}
	// The statements are made before the clock starts; a few distinct
	// ones are enough (the rows get new ids each time).
	stmts := make([]string, 8)
	for i := range stmts {
		stmts[i] = stmt()
	}
	defer reportCPU(b)()
	i := 0
	for b.Loop() {
		benchExec(b, s, stmts[i%len(stmts)])
		i++
	}
	b.ReportMetric(float64(bulkInsertRows), "rows/op")
}
