package playground

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// A probe asks a node once whether it serves, and says why not. The
// playground waits on them at start, and display calls them once.

// probeTimeout bounds one probe.
const probeTimeout = 3 * time.Second

var httpClient = &http.Client{Timeout: probeTimeout}

// getJSON GETs url and decodes its 200 answer into v.
func getJSON(ctx context.Context, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	if v == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// probePD checks that every member of PD's cluster is healthy and that
// there is a leader (PD's /health and /members).
func probePD(ctx context.Context, n *Node) error {
	var health []struct {
		Name   string `json:"name"`
		Health bool   `json:"health"`
	}
	if err := getJSON(ctx, "http://"+n.Addr+"/pd/api/v1/health", &health); err != nil {
		return err
	}
	for _, m := range health {
		if !m.Health {
			return fmt.Errorf("PD member %s is not healthy", m.Name)
		}
	}
	var members struct {
		Leader *struct {
			Name string `json:"name"`
		} `json:"leader"`
	}
	if err := getJSON(ctx, "http://"+n.Addr+"/pd/api/v1/members", &members); err != nil {
		return err
	}
	if members.Leader == nil {
		return errors.New("PD has no leader yet")
	}
	return nil
}

// probeStore checks a store's status page.
func probeStore(ctx context.Context, n *Node) error {
	return getJSON(ctx, "http://"+n.StatusAddr+"/status", nil)
}

// pdStore is a store as PD's /stores shows it.
type pdStore struct {
	Store struct {
		ID      uint64 `json:"id"`
		Address string `json:"address"`
	} `json:"store"`
	Status struct {
		StateName   string `json:"state_name"`
		RegionCount int    `json:"region_count"`
		LeaderCount int    `json:"leader_count"`
	} `json:"status"`
}

// pdStores lists the stores PD at pd knows, Tombstones included.
func pdStores(ctx context.Context, pd string) ([]pdStore, error) {
	var list struct {
		Stores []pdStore `json:"stores"`
	}
	err := getJSON(ctx, "http://"+pd+"/pd/api/v1/stores", &list)
	return list.Stores, err
}

// pdStoreAt finds the store that is not a Tombstone at addr.
func pdStoreAt(ctx context.Context, pd, addr string) (pdStore, error) {
	stores, err := pdStores(ctx, pd)
	if err != nil {
		return pdStore{}, err
	}
	for _, s := range stores {
		if s.Store.Address == addr && s.Status.StateName != "Tombstone" {
			return s, nil
		}
	}
	return pdStore{}, fmt.Errorf("PD knows no store at %s", addr)
}

// pdMaxReplicas is PD's replication.max-replicas.
func pdMaxReplicas(ctx context.Context, pd string) (int, error) {
	var cfg struct {
		Replication struct {
			MaxReplicas int `json:"max-replicas"`
		} `json:"replication"`
	}
	err := getJSON(ctx, "http://"+pd+"/pd/api/v1/config", &cfg)
	return cfg.Replication.MaxReplicas, err
}

// pdRemoveStore asks PD to take store id offline: PD moves its regions
// away, then makes it a Tombstone.
func pdRemoveStore(ctx context.Context, pd string, id uint64) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, fmt.Sprintf("http://%s/pd/api/v1/store/%d", pd, id), nil)
	if err != nil {
		return err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("PD refuses to remove store %d: %s: %s", id, resp.Status, strings.TrimSpace(string(msg)))
	}
	return nil
}

// probeCluster checks, through PD's API at pd, that the cluster is
// bootstrapped (it has a region) and that every store of stores is known
// to PD and Up.
func probeCluster(ctx context.Context, pd string, stores []*Node) error {
	list, err := pdStores(ctx, pd)
	if err != nil {
		return err
	}
	state := map[string]string{}
	for _, s := range list {
		if s.Status.StateName != "Tombstone" { // a removed store's address may be reused
			state[s.Store.Address] = s.Status.StateName
		}
	}
	for _, n := range stores {
		switch st, ok := state[n.Addr]; {
		case !ok:
			return fmt.Errorf("PD does not know %s (%s) yet", n.Name, n.Addr)
		case st != "Up":
			return fmt.Errorf("PD shows %s as %s", n.Name, st)
		}
	}
	var regions struct {
		Count int `json:"count"`
	}
	if err := getJSON(ctx, "http://"+pd+"/pd/api/v1/regions", &regions); err != nil {
		return err
	}
	if regions.Count == 0 {
		return errors.New("the cluster is not bootstrapped yet (PD knows no region)")
	}
	return nil
}

// probeSQL runs SELECT 1 as root on a MySQL server at addr.
func probeSQL(ctx context.Context, addr string) error {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr = "root", "tcp", addr
	cfg.Timeout, cfg.ReadTimeout, cfg.WriteTimeout = probeTimeout, probeTimeout, probeTimeout
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return err
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	var one int
	return db.QueryRowContext(ctx, "SELECT 1").Scan(&one)
}

// probeTCP checks that addr accepts a TCP connection.
func probeTCP(ctx context.Context, addr string) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	return c.Close()
}

// probeNode asks one node whether it serves: PD's health, a store's
// status page, a SQL node's or HAProxy's SELECT 1.
func probeNode(ctx context.Context, n *Node) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	switch n.Role {
	case RolePD:
		return probePD(ctx, n)
	case RoleStore:
		return probeStore(ctx, n)
	case RoleSQL, RoleHAProxy:
		return probeSQL(ctx, n.Addr)
	}
	return probeTCP(ctx, n.Addr)
}

// portInUse reports whether something listens on 127.0.0.1:port, or
// the port cannot be bound there.
func portInUse(port int) bool {
	l, err := net.Listen("tcp", addr(port))
	if err != nil {
		return true
	}
	l.Close()
	return false
}

// freePort returns a port that was free on 127.0.0.1 a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", loopback+":0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
