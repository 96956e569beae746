package tikv_test

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
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
