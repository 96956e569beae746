package pd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/basalt-db/basalt/testkit"
	"github.com/pingcap/kvproto/pkg/metapb"
	"github.com/pingcap/kvproto/pkg/pdpb"
	"github.com/pingcap/log"
	pd "github.com/tikv/pd/client"
	"github.com/tikv/pd/client/opt"
	"github.com/tikv/pd/client/pkg/caller"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

func TestMain(m *testing.M) {
	// pd/client logs every connection change at info.
	log.SetLevel(zap.ErrorLevel)
	testkit.Main(m)
}

// member is one `basalt pd` process started by a test.
type member struct {
	name, dir      string
	client, peer   string // URLs
	args           []string
	cmd            *exec.Cmd
	log            *bytes.Buffer
	exited         chan struct{}
	bin            string
	t              testing.TB
	initialCluster string
	extra          []string
	mu             sync.Mutex
}

// startCluster starts n PD members on loopback ports, each in a data dir
// of its own, as one new cluster.
func startCluster(t testing.TB, n int, extraArgs ...string) []*member {
	t.Helper()
	bin := testkit.BuildBasalt(t)
	ports := freePorts(t, 2*n)
	ms := make([]*member, n)
	var initial []string
	for i := range ms {
		ms[i] = &member{name: fmt.Sprintf("pd%d", i+1), dir: filepath.Join(t.TempDir(), "pd"),
			client: fmt.Sprintf("http://127.0.0.1:%d", ports[2*i]), peer: fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1]),
			bin: bin, t: t, extra: extraArgs}
		initial = append(initial, ms[i].name+"="+ms[i].peer)
	}
	for _, m := range ms {
		m.initialCluster = strings.Join(initial, ",")
		m.start()
	}
	for _, m := range ms {
		m.waitServing()
	}
	t.Cleanup(func() {
		for _, m := range ms {
			m.kill()
		}
	})
	return ms
}

func (m *member) start() {
	m.t.Helper()
	args := []string{"pd", "--name", m.name, "--data-dir", m.dir, "--client-urls", m.client, "--peer-urls", m.peer,
		"--initial-cluster", m.initialCluster, "--log-level", "warn"}
	m.cmd = exec.Command(m.bin, append(args, m.extra...)...)
	m.log = &bytes.Buffer{}
	m.cmd.Stdout, m.cmd.Stderr = m.log, m.log
	if err := m.cmd.Start(); err != nil {
		m.t.Fatal(err)
	}
	m.exited = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { cmd.Wait(); close(done) }(m.cmd, m.exited)
}

// waitServing waits until the member's client URL answers (etcd's /health
// on the same port), so that a client's first attempt finds it.
func (m *member) waitServing() {
	m.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(m.client + "/health"); err == nil {
			resp.Body.Close()
			return
		}
		select {
		case <-m.exited:
			m.t.Fatalf("%s exited:\n%s", m.name, m.log.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	m.t.Fatalf("%s does not answer on %s", m.name, m.client)
}

// kill ends the process with SIGKILL, if it runs.
func (m *member) kill() {
	if m.cmd == nil {
		return
	}
	m.cmd.Process.Signal(syscall.SIGKILL)
	<-m.exited
	m.cmd = nil
}

// stop ends the process with SIGTERM and reports whether it exited 0.
func (m *member) stop() error {
	m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.exited:
	case <-time.After(15 * time.Second):
		m.kill()
		return fmt.Errorf("%s did not stop in 15s", m.name)
	}
	err := m.cmd.ProcessState.ExitCode()
	m.cmd = nil
	if err != 0 {
		return fmt.Errorf("%s exited %d", m.name, err)
	}
	return nil
}

func freePorts(t testing.TB, n int) []int {
	ports := make([]int, n)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports
}

func urls(ms []*member) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.client)
	}
	return out
}

// newClient opens the real pd/client on the members, waiting for the
// cluster to elect a leader.
func newClient(t testing.TB, ms []*member) pd.Client {
	t.Helper()
	var c pd.Client
	var err error
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		// The client lives as long as the context it is made with.
		ctx, cancel := context.WithCancel(context.Background())
		c, err = pd.NewClientWithContext(ctx, caller.TestComponent, urls(ms), pd.SecurityOption{},
			opt.WithCustomTimeoutOption(5*time.Second))
		if err == nil {
			t.Cleanup(func() { c.Close(); cancel() })
			return c
		}
		cancel()
		time.Sleep(200 * time.Millisecond)
	}
	for _, m := range ms {
		t.Logf("%s log:\n%s", m.name, m.log.String())
	}
	t.Fatalf("pd/client could not connect: %v", err)
	return nil
}

// leader returns the member that leads now, as the running members'
// GetMembers say.
func leader(t testing.TB, ms []*member) *member {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for _, m := range ms {
			if m.cmd == nil {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			resp, err := rawClient(t, m).GetMembers(ctx, &pdpb.GetMembersRequest{})
			cancel()
			if err != nil || resp.GetLeader() == nil {
				continue
			}
			for _, l := range ms {
				if l.name == resp.Leader.Name && l.cmd != nil {
					return l
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no leader among the running members")
	return nil
}

// rawClient is a pdpb client on one member, for requests pd/client does
// not make (the stores' side of the protocol).
func rawClient(t testing.TB, m *member) pdpb.PDClient {
	t.Helper()
	conn, err := grpc.NewClient(strings.TrimPrefix(m.client, "http://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return pdpb.NewPDClient(conn)
}

func TestTSOSinglePD(t *testing.T) {
	ms := startCluster(t, 1)
	c := newClient(t, ms)
	ctx := context.Background()
	var last uint64
	t0 := time.Now()
	for i := 0; i < 1000; i++ {
		p, l, err := c.GetTS(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ts := uint64(p)<<18 | uint64(l)
		if ts <= last {
			t.Fatalf("timestamp %d after %d", ts, last)
		}
		last = ts
	}
	t.Logf("1000 GetTS in a row: %v", time.Since(t0))

	// The load command reports what it took.
	out, err := exec.Command(ms[0].bin, "ctl", "--pd", ms[0].client, "tso-bench", "--clients", "4", "--duration", "300ms").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "timestamps") || !strings.Contains(string(out), "p99") {
		t.Fatalf("basalt ctl tso-bench: %v\n%s", err, out)
	}
	t.Logf("basalt ctl tso-bench: %s", out)
	if d := time.Since(time.UnixMilli(int64(last >> 18))); d < -time.Second || d > 5*time.Second {
		t.Errorf("physical time %v away from the clock", d)
	}
	// A restart starts above everything issued before.
	t0 = time.Now()
	if err := ms[0].stop(); err != nil {
		t.Fatalf("%v\n%s", err, ms[0].log.String())
	}
	t.Logf("stop: %v", time.Since(t0))
	ms[0].start()
	ms[0].waitServing()
	c2 := newClient(t, ms)
	t0 = time.Now()
	p, l, err := c2.GetTS(ctx)
	t.Logf("first GetTS: %v", time.Since(t0))
	if err != nil {
		t.Fatal(err)
	}
	if ts := uint64(p)<<18 | uint64(l); ts <= last {
		t.Fatalf("after a restart: timestamp %d not above %d", ts, last)
	}
}

// TestTSOFailover takes timestamps from 16 goroutines while the leader of
// three members is killed twice: every timestamp is unique, each
// goroutine's increase, and service resumes within 5 s.
func TestTSOFailover(t *testing.T) {
	ms := startCluster(t, 3)
	c := newClient(t, ms)

	// A follower refuses with the error that sends pd/client to the leader.
	l := leader(t, ms)
	for _, m := range ms {
		if m == l {
			continue
		}
		_, err := rawClient(t, m).IsBootstrapped(context.Background(),
			&pdpb.IsBootstrappedRequest{Header: &pdpb.RequestHeader{ClusterId: c.GetClusterID(context.Background())}})
		if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "not leader") {
			t.Fatalf("a request to follower %s: %v", m.name, err)
		}
	}

	const workers = 16
	total := 1_000_000
	if testing.Short() {
		total = 100_000
	}
	per := total / workers
	got := make([][]uint64, workers)
	var wg sync.WaitGroup
	var maxGap time.Duration
	var gapMu sync.Mutex
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			out := make([]uint64, 0, per)
			lastOK := time.Now()
			for len(out) < per {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				p, l, err := c.GetTS(ctx)
				cancel()
				if err != nil {
					if time.Since(lastOK) > 30*time.Second {
						errs <- fmt.Errorf("worker %d: no timestamp for 30s: %v", w, err)
						return
					}
					time.Sleep(10 * time.Millisecond)
					continue
				}
				now := time.Now()
				gapMu.Lock()
				maxGap = max(maxGap, now.Sub(lastOK))
				gapMu.Unlock()
				lastOK = now
				ts := uint64(p)<<18 | uint64(l)
				if len(out) > 0 && ts <= out[len(out)-1] {
					errs <- fmt.Errorf("worker %d: timestamp %d after %d", w, ts, out[len(out)-1])
					return
				}
				out = append(out, ts)
			}
			got[w] = out
		}(w)
	}
	// Kill the leader twice, bringing the first back before the second
	// kill so that a quorum remains.
	for round := 0; round < 2; round++ {
		time.Sleep(1500 * time.Millisecond)
		l := leader(t, ms)
		t.Logf("round %d: killing leader %s", round, l.name)
		l.kill()
		time.Sleep(1500 * time.Millisecond)
		l.start()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	all := make([]uint64, 0, total)
	for _, g := range got {
		all = append(all, g...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	for i := 1; i < len(all); i++ {
		if all[i] == all[i-1] {
			t.Fatalf("timestamp %d issued twice", all[i])
		}
	}
	t.Logf("%d timestamps, longest wait %v", len(all), maxGap)
	if maxGap > 5*time.Second {
		t.Errorf("service stopped for %v, more than 5s", maxGap)
	}
}

// TestStoresAndRegions drives the stores' side of the protocol with a
// raw pdpb client and reads the directory back through pd/client.
func TestStoresAndRegions(t *testing.T) {
	ms := startCluster(t, 1)
	c := newClient(t, ms)
	ctx := context.Background()
	raw := rawClient(t, ms[0])
	cid := c.GetClusterID(ctx)
	h := &pdpb.RequestHeader{ClusterId: cid}

	// Another cluster's ID is refused, as PD refuses it.
	_, err := raw.IsBootstrapped(ctx, &pdpb.IsBootstrappedRequest{Header: &pdpb.RequestHeader{ClusterId: cid + 1}})
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "mismatch cluster id") {
		t.Fatalf("wrong cluster ID: %v", err)
	}
	ib, err := raw.IsBootstrapped(ctx, &pdpb.IsBootstrappedRequest{Header: h})
	if err != nil || ib.Bootstrapped {
		t.Fatalf("IsBootstrapped before bootstrap: %v %v", ib, err)
	}
	gs, err := raw.GetStore(ctx, &pdpb.GetStoreRequest{Header: h, StoreId: 1})
	if err != nil || gs.Header.GetError().GetType() != pdpb.ErrorType_NOT_BOOTSTRAPPED {
		t.Fatalf("GetStore before bootstrap: %v %v", gs, err)
	}

	ids := make([]uint64, 3)
	for i := range ids {
		r, err := raw.AllocID(ctx, &pdpb.AllocIDRequest{Header: h})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = r.Id
		if i > 0 && ids[i] <= ids[i-1] {
			t.Fatalf("AllocID gave %v", ids)
		}
	}
	storeID, regionID, peerID := ids[0], ids[1], ids[2]
	store := &metapb.Store{Id: storeID, Address: "127.0.0.1:20160"}
	region := &metapb.Region{Id: regionID, RegionEpoch: &metapb.RegionEpoch{ConfVer: 1, Version: 1},
		Peers: []*metapb.Peer{{Id: peerID, StoreId: storeID}}}
	bs, err := raw.Bootstrap(ctx, &pdpb.BootstrapRequest{Header: h, Store: store, Region: region})
	if err != nil || bs.Header.GetError() != nil {
		t.Fatalf("Bootstrap: %v %v", bs, err)
	}
	bs, err = raw.Bootstrap(ctx, &pdpb.BootstrapRequest{Header: h, Store: store, Region: region})
	if err != nil || bs.Header.GetError().GetType() != pdpb.ErrorType_ALREADY_BOOTSTRAPPED {
		t.Fatalf("second Bootstrap: %v %v", bs, err)
	}

	// A second store cannot take the first one's address.
	ps, err := raw.PutStore(ctx, &pdpb.PutStoreRequest{Header: h, Store: &metapb.Store{Id: storeID + 100, Address: store.Address}})
	if err != nil || ps.Header.GetError() == nil || !strings.Contains(ps.Header.Error.Message, "duplicated store address") {
		t.Fatalf("PutStore with a taken address: %v %v", ps, err)
	}
	st, err := c.GetStore(ctx, storeID)
	if err != nil || st.Address != store.Address || st.GetState() != metapb.StoreState_Up {
		t.Fatalf("GetStore: %v %v", st, err)
	}
	if _, err := c.GetStore(ctx, storeID+100); err == nil || !strings.Contains(err.Error(), "invalid store ID") {
		t.Fatalf("GetStore of an unknown store: %v", err)
	}

	// The region splits at "m": the heartbeats of both halves replace the
	// bootstrap region in the directory; an older epoch is ignored.
	stream, err := raw.RegionHeartbeat(ctx)
	if err != nil {
		t.Fatal(err)
	}
	peer := region.Peers[0]
	left := &metapb.Region{Id: regionID + 1000, EndKey: []byte("m"), RegionEpoch: &metapb.RegionEpoch{ConfVer: 1, Version: 2},
		Peers: []*metapb.Peer{{Id: peerID + 1000, StoreId: storeID}}}
	right := &metapb.Region{Id: regionID, StartKey: []byte("m"), RegionEpoch: &metapb.RegionEpoch{ConfVer: 1, Version: 2},
		Peers: []*metapb.Peer{peer}}
	stale := &metapb.Region{Id: regionID, RegionEpoch: &metapb.RegionEpoch{ConfVer: 1, Version: 1}, Peers: []*metapb.Peer{peer}}
	for _, r := range []*metapb.Region{left, right, stale} {
		if err := stream.Send(&pdpb.RegionHeartbeatRequest{Header: h, Region: r, Leader: r.Peers[0]}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		a, errA := c.GetRegion(ctx, []byte("a"))
		z, errZ := c.GetRegion(ctx, []byte("z"))
		if errA == nil && errZ == nil && a != nil && z != nil && a.Meta.Id == left.Id && z.Meta.Id == right.Id &&
			bytes.Equal(z.Meta.StartKey, []byte("m")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("regions after the split: %v %v / %v %v", a, errA, z, errZ)
		}
		time.Sleep(50 * time.Millisecond)
	}
	prev, err := c.GetPrevRegion(ctx, []byte("z"))
	if err != nil || prev == nil || prev.Meta.Id != left.Id {
		t.Fatalf("GetPrevRegion: %v %v", prev, err)
	}
	byID, err := c.GetRegionByID(ctx, left.Id)
	if err != nil || byID == nil || byID.Meta.Id != left.Id {
		t.Fatalf("GetRegionByID: %v %v", byID, err)
	}

	// The HTTP API shows the same directory.
	var stores struct {
		Count  int `json:"count"`
		Stores []struct {
			Store  metapb.Store `json:"store"`
			Status struct {
				StateName   string `json:"state_name"`
				RegionCount int    `json:"region_count"`
			} `json:"status"`
		} `json:"stores"`
	}
	getJSON(t, ms[0].client+"/pd/api/v1/stores", &stores)
	if stores.Count != 1 || stores.Stores[0].Store.Id != storeID || stores.Stores[0].Status.StateName != "Up" ||
		stores.Stores[0].Status.RegionCount != 2 {
		t.Fatalf("/stores: %+v", stores)
	}
	var regions struct {
		Count   int `json:"count"`
		Regions []struct {
			ID     uint64 `json:"id"`
			EndKey string `json:"end_key"`
		} `json:"regions"`
	}
	getJSON(t, ms[0].client+"/pd/api/v1/regions", &regions)
	if regions.Count != 2 || regions.Regions[0].ID != left.Id || regions.Regions[0].EndKey != "6d" {
		t.Fatalf("/regions: %+v", regions)
	}
	var members struct {
		Leader struct {
			Name string `json:"name"`
		} `json:"leader"`
	}
	getJSON(t, ms[0].client+"/pd/api/v1/members", &members)
	if members.Leader.Name != ms[0].name {
		t.Fatalf("/members: %+v", members)
	}

	// Metrics are on the client URL, next to etcd's.
	mresp, err := http.Get(ms[0].client + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	mbody, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	for _, want := range []string{"pd_tso_requests_total", "pd_cluster_regions 2", `pd_cluster_stores{state="Up"} 1`} {
		if !strings.Contains(string(mbody), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}

	// The [schedule] and [replication] sections change at run time; a bad
	// value is refused, naming its key.
	post := func(body string) (int, string) {
		resp, err := http.Post(ms[0].client+"/pd/api/v1/config", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := post(`{"replication": {"max-replicas": 0}}`); code != http.StatusBadRequest || !strings.Contains(body, "replication.max-replicas") {
		t.Fatalf("POST max-replicas 0: %d %s", code, body)
	}
	if code, body := post(`{"schedule": {"leader-schedule-limit": 8}}`); code != http.StatusOK {
		t.Fatalf("POST leader-schedule-limit: %d %s", code, body)
	}
	var conf struct {
		Schedule struct {
			LeaderScheduleLimit int    `json:"leader-schedule-limit"`
			MaxStoreDownTime    string `json:"max-store-down-time"`
		} `json:"schedule"`
		Replication struct {
			MaxReplicas int `json:"max-replicas"`
		} `json:"replication"`
	}
	getJSON(t, ms[0].client+"/pd/api/v1/config", &conf)
	if conf.Schedule.LeaderScheduleLimit != 8 || conf.Replication.MaxReplicas != 3 || conf.Schedule.MaxStoreDownTime != "30m0s" {
		t.Fatalf("/config after POST: %+v", conf)
	}
	// The balance schedulers can be turned off and on again.
	var schedulers []string
	getJSON(t, ms[0].client+"/pd/api/v1/schedulers", &schedulers)
	if strings.Join(schedulers, ",") != "balance-region-scheduler,balance-leader-scheduler" {
		t.Fatalf("/schedulers: %v", schedulers)
	}
	req, _ := http.NewRequest(http.MethodDelete, ms[0].client+"/pd/api/v1/schedulers/balance-leader-scheduler", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE scheduler: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	getJSON(t, ms[0].client+"/pd/api/v1/schedulers", &schedulers)
	if strings.Join(schedulers, ",") != "balance-region-scheduler" {
		t.Fatalf("/schedulers after DELETE: %v", schedulers)
	}
	for body, want := range map[string]int{`{"name": "no-such-scheduler"}`: http.StatusBadRequest,
		`{"name": "balance-leader-scheduler"}`: http.StatusOK} {
		resp, err := http.Post(ms[0].client+"/pd/api/v1/schedulers", "application/json", strings.NewReader(body))
		if err != nil || resp.StatusCode != want {
			t.Fatalf("POST scheduler %s: %v %v", body, resp, err)
		}
		resp.Body.Close()
	}
	getJSON(t, ms[0].client+"/pd/api/v1/schedulers", &schedulers)
	if len(schedulers) != 2 {
		t.Fatalf("/schedulers after POST: %v", schedulers)
	}

	// basalt ctl prints it as tables.
	for cmd, want := range map[string]string{"store": "127.0.0.1:20160", "region": "6d", "member": ms[0].name} {
		out, err := exec.Command(ms[0].bin, "ctl", "--pd", ms[0].client, cmd).CombinedOutput()
		if err != nil || !strings.Contains(string(out), want) {
			t.Fatalf("basalt ctl %s: %v\n%s", cmd, err, out)
		}
		t.Logf("basalt ctl %s:\n%s", cmd, out)
	}

	// The directory, and the configuration changed at run time, survive a
	// restart.
	if err := ms[0].stop(); err != nil {
		t.Fatal(err)
	}
	ms[0].start()
	ms[0].waitServing()
	c2 := newClient(t, ms)
	deadline = time.Now().Add(20 * time.Second)
	for {
		z, err := c2.GetRegion(ctx, []byte("z"))
		if err == nil && z != nil && z.Meta.Id == right.Id {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("region after restart: %v %v", z, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	getJSON(t, ms[0].client+"/pd/api/v1/config", &conf)
	if conf.Schedule.LeaderScheduleLimit != 8 {
		t.Fatalf("/config after a restart: %+v", conf)
	}
}

// TestBadConfig: an invalid value refuses to start, naming its key.
func TestBadConfig(t *testing.T) {
	bin := testkit.BuildBasalt(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "pd.toml")
	if err := os.WriteFile(conf, []byte("[replication]\nmax-replicas = 0\n[schedule]\nno-such-key = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "pd", "--config", conf, "--data-dir", filepath.Join(dir, "d")).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "replication.max-replicas") {
		t.Fatalf("max-replicas = 0: %v\n%s", err, out)
	}
	out, err = exec.Command(bin, "pd", "--client-urls", "127.0.0.1:2379").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "client-urls") {
		t.Fatalf("bad client-urls: %v\n%s", err, out)
	}
}

func getJSON(t testing.TB, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// TestDataDirOwner: a data dir serves only the member that made it, in
// its own cluster.
func TestDataDirOwner(t *testing.T) {
	a := startCluster(t, 1)
	b := startCluster(t, 1)
	if err := a[0].stop(); err != nil {
		t.Fatal(err)
	}
	ports := freePorts(t, 2)
	run := func(args ...string) string {
		out, err := exec.Command(a[0].bin, append([]string{"pd", "--data-dir", a[0].dir,
			"--client-urls", fmt.Sprintf("http://127.0.0.1:%d", ports[0]),
			"--peer-urls", fmt.Sprintf("http://127.0.0.1:%d", ports[1])}, args...)...).CombinedOutput()
		if err == nil {
			t.Fatalf("basalt pd %v started on another member's data dir:\n%s", args, out)
		}
		return string(out)
	}
	if out := run("--name", "other"); !strings.Contains(out, `belongs to member "pd1"`) {
		t.Errorf("another name: %s", out)
	}
	if out := run("--name", "pd1", "--join", b[0].client); !strings.Contains(out, "belongs to cluster") {
		t.Errorf("joining another cluster: %s", out)
	}
}

// TestGCSafePoints: the GC safe point only moves forward; service safe
// points bound each other from below and expire.
func TestGCSafePoints(t *testing.T) {
	ms := startCluster(t, 1)
	c := newClient(t, ms)
	ctx := context.Background()
	raw := rawClient(t, ms[0])
	h := &pdpb.RequestHeader{ClusterId: c.GetClusterID(ctx)}

	for _, step := range []struct{ set, want uint64 }{{100, 100}, {50, 100}, {120, 120}} {
		r, err := raw.UpdateGCSafePoint(ctx, &pdpb.UpdateGCSafePointRequest{Header: h, SafePoint: step.set})
		if err != nil || r.NewSafePoint != step.want {
			t.Fatalf("UpdateGCSafePoint(%d): %v %v, want %d", step.set, r, err, step.want)
		}
	}
	st, err := raw.GetGCState(ctx, &pdpb.GetGCStateRequest{Header: h})
	if err != nil || st.GcState.GetGcSafePoint() != 120 {
		t.Fatalf("GetGCState: %v %v", st, err)
	}

	service := func(id string, sp uint64, ttl int64) (string, uint64) {
		t.Helper()
		r, err := raw.UpdateServiceGCSafePoint(ctx, &pdpb.UpdateServiceGCSafePointRequest{Header: h,
			ServiceId: []byte(id), SafePoint: sp, TTL: ttl})
		if err != nil || r.Header.GetError() != nil {
			t.Fatalf("UpdateServiceGCSafePoint(%s, %d, %d): %v %v", id, sp, ttl, r, err)
		}
		return string(r.ServiceId), r.MinSafePoint
	}
	check := func(gotID string, got uint64, wantID string, want uint64) {
		t.Helper()
		if gotID != wantID || got != want {
			t.Fatalf("minimum service safe point %s %d, want %s %d", gotID, got, wantID, want)
		}
	}
	id, min := service("backup", 200, 3600)
	check(id, min, "backup", 200)
	id, min = service("cdc", 150, 3600) // below the minimum: refused
	check(id, min, "backup", 200)
	id, min = service("gc_worker", 300, 0) // the GC worker's never expires
	check(id, min, "backup", 200)
	id, min = service("backup", 0, 0) // a TTL of 0 removes it
	check(id, min, "gc_worker", 300)
	id, min = service("short", 400, 1)
	check(id, min, "gc_worker", 300)
	time.Sleep(2100 * time.Millisecond)
	id, min = service("cdc", 350, 3600) // "short" has expired
	check(id, min, "gc_worker", 300)
	id, min = service("gc_worker", 500, 0)
	check(id, min, "cdc", 350)
}
