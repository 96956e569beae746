package clustersync

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TopologyPrefix is where SQL nodes announce themselves, TiDB's keys (so
// that TiDB's tools that read them, TiProxy and the dashboard among them,
// find Basalt's nodes):
//
//	/topology/tidb/<ip:port>/info  the node's TopologyInfo, as JSON
//	/topology/tidb/<ip:port>/ttl   the time of the last refresh, in Unix ns
//
// <ip:port> is the node's MySQL address. Both keys live under the node's
// lease (TiDB keeps info without one, and leaves it behind when a node is
// killed), so a node that stops or dies disappears when its lease
// expires; a reader lists a node only while its ttl key exists.
const TopologyPrefix = "/topology/tidb/"

// TopologyInfo is what a SQL node writes under its info key: TiDB's
// fields and names.
type TopologyInfo struct {
	Version        string            `json:"version"`
	GitHash        string            `json:"git_hash"`
	IP             string            `json:"ip"`
	Port           uint              `json:"listening_port"`
	StatusPort     uint              `json:"status_port"`
	DeployPath     string            `json:"deploy_path"`
	StartTimestamp int64             `json:"start_timestamp"`
	Labels         map[string]string `json:"labels"`
}

// Addr is the node's MySQL address, ip:port, the key it is known by; ""
// if unknown.
func (t TopologyInfo) Addr() string {
	if t.IP == "" {
		return ""
	}
	return hostPort(t.IP, t.Port)
}

// StatusAddr is the node's status address, "" without a status port.
func (t TopologyInfo) StatusAddr() string {
	if t.StatusPort == 0 || t.IP == "" {
		return ""
	}
	return hostPort(t.IP, t.StatusPort)
}

func hostPort(ip string, port uint) string {
	if strings.Contains(ip, ":") {
		return "[" + ip + "]:" + strconv.Itoa(int(port))
	}
	return ip + ":" + strconv.Itoa(int(port))
}

// Topology keeps one SQL node's announcement alive: it writes the info
// and ttl keys under a lease of ttl seconds, keeps the lease alive,
// rewrites the ttl key every third of the TTL (as TiDB refreshes its
// every 30 s of 45), and writes both again under a new lease if the old
// one was lost. Close deletes them.
type Topology struct {
	cli    *clientv3.Client
	info   TopologyInfo
	ttl    time.Duration
	log    *slog.Logger
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// StartTopology announces info and keeps the announcement alive. ttl is
// rounded up to a whole second, at least 2.
func StartTopology(cli *clientv3.Client, info TopologyInfo, ttl time.Duration, log *slog.Logger) *Topology {
	if log == nil {
		log = slog.Default()
	}
	if ttl < 2*time.Second {
		ttl = 2 * time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	t := &Topology{cli: cli, info: info, ttl: ttl, log: log, cancel: cancel}
	t.wg.Add(1)
	go t.run(ctx)
	return t
}

func (t *Topology) key(suffix string) string { return TopologyPrefix + t.info.Addr() + "/" + suffix }

// run registers, refreshes, and registers again whenever the lease is
// lost, until ctx ends.
func (t *Topology) run(ctx context.Context) {
	defer t.wg.Done()
	secs := int64((t.ttl + time.Second - 1) / time.Second)
	refresh := t.ttl / 3
	for ctx.Err() == nil {
		lease, err := t.register(ctx, secs)
		if err != nil {
			if ctx.Err() == nil {
				t.log.Warn("clustersync: cannot announce this SQL node in PD's etcd", "key", t.key("info"), "err", err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		kctx, kcancel := context.WithCancel(ctx)
		alive, err := t.cli.KeepAlive(kctx, lease)
		if err != nil {
			kcancel()
			continue
		}
		tick := time.NewTicker(refresh)
	loop:
		for {
			select {
			case _, ok := <-alive:
				if !ok {
					break loop // lease lost or expired: register again
				}
			case <-tick.C:
				pctx, pcancel := context.WithTimeout(ctx, refresh)
				_, err := t.cli.Put(pctx, t.key("ttl"), strconv.FormatInt(time.Now().UnixNano(), 10), clientv3.WithLease(lease))
				pcancel()
				if err != nil && ctx.Err() == nil {
					t.log.Warn("clustersync: cannot refresh this SQL node's ttl in PD's etcd", "err", err)
				}
			}
		}
		tick.Stop()
		kcancel()
	}
}

// register writes both keys under a new lease.
func (t *Topology) register(ctx context.Context, secs int64) (clientv3.LeaseID, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	grant, err := t.cli.Grant(ctx, secs)
	if err != nil {
		return 0, err
	}
	buf, err := json.Marshal(t.info)
	if err != nil {
		return 0, err
	}
	_, err = t.cli.Txn(ctx).Then(
		clientv3.OpPut(t.key("info"), string(buf), clientv3.WithLease(grant.ID)),
		clientv3.OpPut(t.key("ttl"), strconv.FormatInt(time.Now().UnixNano(), 10), clientv3.WithLease(grant.ID)),
	).Commit()
	if err != nil {
		return 0, err
	}
	return grant.ID, nil
}

// Close stops refreshing and removes the node's keys.
func (t *Topology) Close() {
	t.cancel()
	t.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := t.cli.Delete(ctx, TopologyPrefix+t.info.Addr()+"/", clientv3.WithPrefix()); err != nil {
		t.log.Warn("clustersync: cannot remove this SQL node from PD's etcd (it goes when its lease expires)", "err", err)
	}
}

// ServerInfo is one row of information_schema.CLUSTER_INFO: a server of
// the cluster, as TiDB's infoschema.ServerInfo.
type ServerInfo struct {
	Type           string // "tidb", "pd" or "tikv"
	Instance       string // host:port its clients use
	StatusAddr     string // its HTTP status address
	Version        string
	GitHash        string
	StartTimestamp int64 // Unix seconds; 0 if unknown
	ServerID       uint64
}

// SQLNodes lists the SQL nodes whose ttl key exists, by address.
func SQLNodes(ctx context.Context, cli *clientv3.Client) ([]TopologyInfo, error) {
	resp, err := cli.Get(ctx, TopologyPrefix, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("read the SQL nodes from PD's etcd: %w", err)
	}
	infos := map[string]TopologyInfo{}
	alive := map[string]bool{}
	for _, kv := range resp.Kvs {
		rest := strings.TrimPrefix(string(kv.Key), TopologyPrefix)
		i := strings.LastIndexByte(rest, '/')
		if i < 0 {
			continue
		}
		addr, suffix := rest[:i], rest[i+1:]
		switch suffix {
		case "ttl":
			alive[addr] = true
		case "info":
			var ti TopologyInfo
			if json.Unmarshal(kv.Value, &ti) == nil {
				infos[addr] = ti
			}
		}
	}
	var out []TopologyInfo
	for addr, ti := range infos {
		if alive[addr] {
			out = append(out, ti)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Addr() < out[j].Addr() })
	return out, nil
}

// ClusterServers lists the cluster's servers as TiDB's CLUSTER_INFO
// does: the live SQL nodes (SQLNodes), PD's members (etcd's member list:
// PD's etcd is embedded, its members are PD's), then the stores PD knows
// other than tombstones (PD's HTTP API, GET /pd/api/v1/stores, asked of
// each member in turn). Within a type, rows are ordered by instance.
func ClusterServers(ctx context.Context, cli *clientv3.Client) ([]ServerInfo, error) {
	nodes, err := SQLNodes(ctx, cli)
	if err != nil {
		return nil, err
	}
	var out []ServerInfo
	for _, n := range nodes {
		out = append(out, ServerInfo{Type: "tidb", Instance: n.Addr(), StatusAddr: n.StatusAddr(),
			Version: FormatSQLVersion(n.Version), GitHash: n.GitHash, StartTimestamp: n.StartTimestamp})
	}
	members, err := cli.MemberList(ctx)
	if err != nil {
		return nil, fmt.Errorf("list PD's members: %w", err)
	}
	var pds []ServerInfo
	for _, m := range members.Members {
		if len(m.ClientURLs) == 0 {
			continue // not started yet
		}
		addr := trimScheme(m.ClientURLs[0])
		pds = append(pds, pdInfo(ctx, addr))
	}
	sort.Slice(pds, func(i, j int) bool { return pds[i].Instance < pds[j].Instance })
	out = append(out, pds...)
	var lastErr error
	for _, pd := range pds {
		stores, err := pdStores(ctx, pd.Instance)
		if err != nil {
			lastErr = err
			continue
		}
		return append(out, stores...), nil
	}
	if lastErr == nil {
		lastErr = fmt.Errorf("PD has no member with a client URL")
	}
	return nil, fmt.Errorf("list the stores from PD: %w", lastErr)
}

// FormatSQLVersion is a SQL node's VERSION in CLUSTER_INFO: TiDB shows
// "7.5.0" for its default "8.0.11-TiDB-v7.5.0", the whole string when
// server-version replaced it; so "8.4.0-Basalt-v0.1.0" is "0.1.0".
func FormatSQLVersion(v string) string {
	const mark = "-Basalt-"
	i := strings.Index(v, mark)
	if i < 0 {
		return v
	}
	return strings.TrimPrefix(v[i+len(mark):], "v")
}

func trimScheme(u string) string {
	u = strings.TrimPrefix(u, "http://")
	u = strings.TrimPrefix(u, "https://")
	return strings.TrimSuffix(u, "/")
}

// pdInfo describes the PD member at addr; its version, git hash and start
// time come from GET /pd/api/v1/status where the member serves it (PD
// does; Basalt's PD does not, and they stay empty).
func pdInfo(ctx context.Context, addr string) ServerInfo {
	si := ServerInfo{Type: "pd", Instance: addr, StatusAddr: addr}
	var st struct {
		Version        string `json:"version"`
		GitHash        string `json:"git_hash"`
		StartTimestamp int64  `json:"start_timestamp"`
	}
	if getJSON(ctx, "http://"+addr+"/pd/api/v1/status", &st) == nil {
		si.Version, si.GitHash, si.StartTimestamp = strings.TrimPrefix(st.Version, "v"), st.GitHash, st.StartTimestamp
	}
	return si
}

// pdStores lists the stores PD at addr knows, tombstones left out (as
// TiDB's GetAllStores with WithExcludeTombstone).
func pdStores(ctx context.Context, addr string) ([]ServerInfo, error) {
	var list struct {
		Stores []struct {
			Store struct {
				Address        string `json:"address"`
				StatusAddress  string `json:"status_address"`
				Version        string `json:"version"`
				GitHash        string `json:"git_hash"`
				StartTimestamp int64  `json:"start_timestamp"`
			} `json:"store"`
			Status struct {
				StateName string `json:"state_name"`
			} `json:"status"`
		} `json:"stores"`
	}
	if err := getJSON(ctx, "http://"+addr+"/pd/api/v1/stores", &list); err != nil {
		return nil, err
	}
	var out []ServerInfo
	for _, s := range list.Stores {
		if s.Status.StateName == "Tombstone" {
			continue
		}
		out = append(out, ServerInfo{Type: "tikv", Instance: s.Store.Address, StatusAddr: s.Store.StatusAddress,
			Version: strings.TrimPrefix(s.Store.Version, "v"), GitHash: s.Store.GitHash, StartTimestamp: s.Store.StartTimestamp})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Instance < out[j].Instance })
	return out, nil
}

// getJSON decodes the JSON answer to GET url into v (following a
// follower's redirect to the leader).
func getJSON(ctx context.Context, url string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}
