package pd

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// A member records in its data dir whose it is (dataDirFile): the
// member's name and the cluster's ID. Starting on a data dir of another
// member, or joining another cluster with it, fails with an error that
// says so, rather than etcd's own.

const dataDirFile = "basalt-pd.json"

type dataDirOwner struct {
	Name      string `json:"name"`
	ClusterID uint64 `json:"cluster_id"`
}

func readOwner(dir string) (*dataDirOwner, error) {
	b, err := os.ReadFile(filepath.Join(dir, dataDirFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var o dataDirOwner
	if err := json.Unmarshal(b, &o); err != nil {
		return nil, fmt.Errorf("data dir %s: %s is malformed: %w", dir, dataDirFile, err)
	}
	return &o, nil
}

// checkDataDir refuses a data dir that belongs to another member, or
// (with --join) to another cluster than the one joined.
func (s *Server) checkDataDir() error {
	o, err := readOwner(s.cfg.DataDir)
	if err != nil || o == nil {
		return err
	}
	if o.Name != s.cfg.Name {
		return fmt.Errorf("data dir %s belongs to member %q of cluster %d, not to %q", s.cfg.DataDir, o.Name, o.ClusterID, s.cfg.Name)
	}
	if s.cfg.Join == "" {
		return nil
	}
	cli, ctx, done, err := s.joinClient()
	if err != nil {
		return err
	}
	defer done()
	resp, err := cli.Get(ctx, keyClusterID)
	if err != nil {
		return fmt.Errorf("join %s: %w", s.cfg.Join, err)
	}
	if len(resp.Kvs) == 1 && len(resp.Kvs[0].Value) == 8 {
		if id := binary.BigEndian.Uint64(resp.Kvs[0].Value); id != o.ClusterID {
			return fmt.Errorf("data dir %s belongs to cluster %d; %s is cluster %d", s.cfg.DataDir, o.ClusterID, s.cfg.Join, id)
		}
	}
	return nil
}

// recordOwner writes the data dir's owner once the cluster ID is known.
func (s *Server) recordOwner() error {
	b, err := json.Marshal(dataDirOwner{Name: s.cfg.Name, ClusterID: s.clusterID})
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(s.cfg.DataDir, dataDirFile), b, 0o644)
}

// joinClient is an etcd client on the cluster --join names, with a
// context for the calls to it; done releases both.
func (s *Server) joinClient() (*clientv3.Client, context.Context, func(), error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: strings.Split(s.cfg.Join, ","), DialTimeout: 5 * time.Second})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("join: %w", err)
	}
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	return cli, ctx, func() { cancel(); cli.Close() }, nil
}
