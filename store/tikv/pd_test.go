package tikv_test

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/store/tikv"
	"github.com/basalt-db/basalt/testkit"
)

// The adapter on the real client-go, over gRPC to a `basalt pd` process:
// client-go starts on PD (its pd/client, its etcd client on the same
// URL), and timestamps for transactions and CurrentTS come from PD's
// oracle, strictly increasing. (Reads and writes need storage nodes.)
func TestOnBasaltPD(t *testing.T) {
	if err := tikv.SetLogLevel("error"); err != nil {
		t.Fatal(err)
	}
	bin := testkit.BuildBasalt(t)
	ports := make([]int, 2)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = l.Addr().(*net.TCPAddr).Port
		l.Close()
	}
	client := fmt.Sprintf("127.0.0.1:%d", ports[0])
	cmd := exec.Command(bin, "pd", "--name", "pd1", "--data-dir", filepath.Join(t.TempDir(), "pd"),
		"--client-urls", "http://"+client, "--peer-urls", fmt.Sprintf("http://127.0.0.1:%d", ports[1]), "--log-level", "warn")
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + client + "/pd/api/v1/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("basalt pd does not answer:\n%s", log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}

	st, err := tikv.Open([]string{client})
	if err != nil {
		t.Fatalf("client-go on basalt pd: %v\n%s", err, log.String())
	}
	defer st.Close()
	var last uint64
	for i := 0; i < 1000; i++ {
		ts, err := st.CurrentTS()
		if err != nil {
			t.Fatal(err)
		}
		if ts <= last {
			t.Fatalf("timestamp %d after %d", ts, last)
		}
		last = ts
	}
	for _, mode := range []kv.Mode{kv.Pessimistic, kv.Optimistic} {
		txn, err := st.Begin(kv.TxnOptions{Mode: mode})
		if err != nil {
			t.Fatal(err)
		}
		if txn.StartTS() <= last {
			t.Fatalf("%v transaction starts at %d, not after %d", mode, txn.StartTS(), last)
		}
		last = txn.StartTS()
		if err := txn.Rollback(); err != nil {
			t.Fatal(err)
		}
	}
}

// CurrentTS (a pessimistic statement's for-update timestamp, an
// autocommit read's snapshot) rides out a change of PD leader as Begin
// does and as TiDB's CurrentVersion does: with 3 PD members, clients
// asking for timestamps in a loop while the leader is killed with SIGKILL
// get every one, strictly increasing, after a pause of a few seconds, and
// none fails with pd/client's error for the broken TSO stream.
func TestCurrentTSAcrossPDLeaderKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 3 PD members and waits for a new leader")
	}
	if err := tikv.SetLogLevel("fatal"); err != nil {
		t.Fatal(err)
	}
	c := testkit.StartClusterPDs(t, 3, 0, "")
	st, err := tikv.Open(c.PDs)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const clients = 4
	stop := make(chan struct{})
	errs := make(chan error, clients)
	counts := make([]int, clients)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			var last uint64
			for {
				select {
				case <-stop:
					errs <- nil
					return
				default:
				}
				ts, err := st.CurrentTS()
				if err != nil {
					errs <- fmt.Errorf("CurrentTS after %d timestamps: %v", counts[i], err)
					return
				}
				if ts <= last {
					errs <- fmt.Errorf("timestamp %d after %d", ts, last)
					return
				}
				last = ts
				counts[i]++
			}
		})
	}
	time.Sleep(500 * time.Millisecond)
	leader := c.PDLeader()
	c.Kill(leader)
	t.Logf("killed the leader %s; the leader is now %s", leader, c.PDLeader())
	time.Sleep(500 * time.Millisecond)
	close(stop)
	wg.Wait()
	for range clients {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	t.Logf("timestamps per client: %v", counts)
}
