package tikv_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/tikv/client-go/v2/testutils"
	tikvclient "github.com/tikv/client-go/v2/tikv"
	"github.com/tikv/client-go/v2/tikvrpc"

	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/store/tikv"
)

// rpcCounter counts the Scan, Get, BatchGet and PessimisticLock RPCs
// client-go sends.
type rpcCounter struct {
	tikvclient.Client
	scans, gets, batchGets, locks atomic.Int64
}

func (c *rpcCounter) SendRequest(ctx context.Context, addr string, req *tikvrpc.Request, timeout time.Duration) (*tikvrpc.Response, error) {
	switch req.Type {
	case tikvrpc.CmdScan:
		c.scans.Add(1)
	case tikvrpc.CmdGet:
		c.gets.Add(1)
	case tikvrpc.CmdBatchGet:
		c.batchGets.Add(1)
	case tikvrpc.CmdPessimisticLock:
		c.locks.Add(1)
	}
	return c.Client.SendRequest(ctx, addr, req, timeout)
}

// reads counts the Get and BatchGet RPCs.
func (c *rpcCounter) reads() int64 { return c.gets.Load() + c.batchGets.Load() }

// TestScan runs testdata/scan on client-go's mock cluster: what a forward
// scan reads, how many Scan RPCs it sends, and whether walking its rows
// allocates (scan.go reads the first batch itself; client-go's scanner
// makes a backoffer for every row). The commands:
//
//	rows n=N                 commit keys k000 .. k(N-1), value v<i>
//	split at=K               split the region that holds K at K
//	prewrite primary=K k=v ...
//	                         a transaction's prewrite straight on the mock
//	                         (locks with a TTL of a minute), left open
//	commit-primary           its commit of the primary key alone
//	scan start=K end=K [set=K:V] [reverse]
//	                         a scan at a fresh timestamp (with set, in a
//	                         transaction that wrote K first): the rows
//	                         read, their first and last, the values of
//	                         rows that are not v<i>, the Scan RPCs, and
//	                         whether walking the rows allocated (at least
//	                         one allocation per two rows)
//	get key=K [latest]       a point get at a fresh timestamp (latest: on
//	                         LatestSnapshot): what get.go's direct KvGet
//	                         answers alone ("refused": client-go's
//	                         KVSnapshot.Get must read it), then what the
//	                         snapshot's Get returns and the Get RPCs it sent
func TestScan(t *testing.T) {
	runKVScript(t, "testdata/scan")
}

// TestGet runs testdata/get (TestScan's commands): which point gets
// get.go answers with one KvGet of its own, and that the rest (a lock, a
// stale region cache) are read by client-go's KVSnapshot.Get.
func TestGet(t *testing.T) {
	runKVScript(t, "testdata/get")
}

func runKVScript(t *testing.T, file string) {
	if err := tikv.SetLogLevel("error"); err != nil {
		t.Fatal(err)
	}
	datadriven.Walk(t, file, func(t *testing.T, path string) {
		var mock testutils.MVCCStore
		counter := &rpcCounter{}
		var cluster *testutils.MockCluster
		st, err := tikv.OpenMockCluster(func(c tikvclient.Client) tikvclient.Client {
			mock = c.(*testutils.MockClient).MvccStore
			counter.Client = c
			return counter
		}, &cluster)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		var open mockTxn
		ctx := context.Background()
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			switch td.Cmd {
			case "rows":
				var n int
				td.ScanArgs(t, "n", &n)
				txn, err := st.Begin(kv.TxnOptions{Mode: kv.Optimistic})
				if err != nil {
					t.Fatal(err)
				}
				for i := range n {
					if err := txn.Set(fmt.Appendf(nil, "k%03d", i), fmt.Appendf(nil, "v%d", i)); err != nil {
						t.Fatal(err)
					}
				}
				if err := txn.Commit(ctx); err != nil {
					return "error: " + err.Error()
				}
				return "ok"
			case "split":
				var at string
				td.ScanArgs(t, "at", &at)
				r, _, _, _ := cluster.GetRegionByKey([]byte(at))
				ids := cluster.AllocIDs(2)
				cluster.Split(r.GetId(), ids[0], []byte(at), []uint64{ids[1]}, ids[1])
				return "ok"
			case "prewrite":
				return open.prewrite(t, st, mock, td)
			case "commit-primary":
				return open.commitPrimary(t, st, mock)
			case "scan":
				var start, end string
				td.ScanArgs(t, "start", &start)
				td.ScanArgs(t, "end", &end)
				var r kv.Retriever
				if td.HasArg("set") {
					var set string
					td.ScanArgs(t, "set", &set)
					txn, err := st.Begin(kv.TxnOptions{Mode: kv.Optimistic})
					if err != nil {
						t.Fatal(err)
					}
					defer txn.Rollback()
					k, v, _ := strings.Cut(set, ":")
					if err := txn.Set([]byte(k), []byte(v)); err != nil {
						t.Fatal(err)
					}
					r = txn
				} else {
					ts, err := st.CurrentTS()
					if err != nil {
						t.Fatal(err)
					}
					r = st.Snapshot(ts)
				}
				return scan(t, r, counter, start, end, td.HasArg("reverse"))
			case "get":
				var key string
				td.ScanArgs(t, "key", &key)
				ts := uint64(math.MaxUint64)
				var snap kv.Snapshot
				if td.HasArg("latest") {
					snap = st.LatestSnapshot()
				} else {
					var err error
					if ts, err = st.CurrentTS(); err != nil {
						t.Fatal(err)
					}
					snap = st.Snapshot(ts)
				}
				var b strings.Builder
				if v, ok := tikv.DirectGet(st, ctx, []byte(key), ts); ok {
					fmt.Fprintf(&b, "direct: %q\n", v)
				} else {
					b.WriteString("direct: refused\n")
				}
				gets := counter.gets.Load()
				v, err := snap.Get(ctx, []byte(key))
				switch {
				case errors.Is(err, kv.ErrNotFound):
					b.WriteString("get: not found")
				case err != nil:
					b.WriteString("get: error: " + err.Error())
				default:
					fmt.Fprintf(&b, "get: %q", v)
				}
				fmt.Fprintf(&b, ", Get RPCs: %d", counter.gets.Load()-gets)
				return b.String()
			}
			t.Fatalf("unknown command %s", td.Cmd)
			return ""
		})
	})
}

func scan(t *testing.T, r kv.Retriever, counter *rpcCounter, start, end string, reverse bool) string {
	scans := counter.scans.Load()
	var it kv.Iterator
	var err error
	if reverse {
		it, err = r.IterReverse([]byte(start), []byte(end))
	} else {
		it, err = r.Iter([]byte(start), []byte(end))
	}
	if err != nil {
		return "error: " + err.Error()
	}
	defer it.Close()
	type row struct{ k, v string }
	var rows []row
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	mallocs := ms.Mallocs
	var walked int
	var keys, values [1024][]byte // the walk's own record, allocated before it
	for ; it.Valid(); walked++ {
		if walked < len(keys) {
			keys[walked], values[walked] = it.Key(), it.Value()
		}
		if err := it.Next(); err != nil {
			return "error: " + err.Error()
		}
	}
	runtime.ReadMemStats(&ms)
	allocs := ms.Mallocs - mallocs
	for i := range min(walked, len(keys)) {
		rows = append(rows, row{string(keys[i]), string(values[i])})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d rows", walked)
	if len(rows) > 0 {
		fmt.Fprintf(&b, ", %s .. %s", rows[0].k, rows[len(rows)-1].k)
	}
	b.WriteString("\n")
	for _, r := range rows {
		var i int
		if _, err := fmt.Sscanf(r.k, "k%d", &i); err != nil || r.v != fmt.Sprintf("v%d", i) {
			fmt.Fprintf(&b, "%s = %s\n", r.k, r.v)
		}
	}
	fmt.Fprintf(&b, "Scan RPCs: %d\n", counter.scans.Load()-scans)
	if walked > 0 && allocs*2 >= uint64(walked) {
		b.WriteString("the walk allocates per row")
	} else {
		b.WriteString("the walk does not allocate per row")
	}
	return b.String()
}
