package pd

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// Config is a PD member's configuration, with PD's names: flags
// (--name, --data-dir, --client-urls, ...) and a TOML file whose
// sections are PD's ([schedule], [replication]).
type Config struct {
	Name    string `toml:"name"`
	DataDir string `toml:"data-dir"`
	// ClientURLs serve pdpb, etcd's client API and HTTP; PeerURLs etcd's
	// peer traffic. The advertised URLs are what others dial (the listen
	// URLs if empty).
	ClientURLs          string `toml:"client-urls"`
	PeerURLs            string `toml:"peer-urls"`
	AdvertiseClientURLs string `toml:"advertise-client-urls"`
	AdvertisePeerURLs   string `toml:"advertise-peer-urls"`
	// InitialCluster lists the members of a new cluster,
	// name=peer-url,... (this member alone if empty). Join is a running
	// member's client URLs to join instead.
	InitialCluster string `toml:"initial-cluster"`
	Join           string `toml:"join"`
	LogFile        string `toml:"log-file"`
	LogLevel       string `toml:"log-level"`

	Schedule    ScheduleConfig    `toml:"schedule"`
	Replication ReplicationConfig `toml:"replication"`

	// LeaderLease is how long a leader keeps leadership without renewing
	// it (PD's lease, 3 s): a dead leader is replaced after about this.
	LeaderLease time.Duration `toml:"-"`
}

// ScheduleConfig is PD's [schedule] section.
type ScheduleConfig struct {
	MaxStoreDownTime     Duration `toml:"max-store-down-time" json:"max-store-down-time"`
	LeaderScheduleLimit  uint64   `toml:"leader-schedule-limit" json:"leader-schedule-limit"`
	RegionScheduleLimit  uint64   `toml:"region-schedule-limit" json:"region-schedule-limit"`
	ReplicaScheduleLimit uint64   `toml:"replica-schedule-limit" json:"replica-schedule-limit"`
	MergeScheduleLimit   uint64   `toml:"merge-schedule-limit" json:"merge-schedule-limit"`
}

// ReplicationConfig is PD's [replication] section.
type ReplicationConfig struct {
	MaxReplicas    uint64   `toml:"max-replicas" json:"max-replicas"`
	LocationLabels []string `toml:"location-labels" json:"location-labels"`
}

// Duration is a time.Duration written as text in TOML ("30m").
type Duration struct{ time.Duration }

func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	d.Duration = v
	return nil
}

func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// DefaultConfig is PD's defaults.
func DefaultConfig() Config {
	return Config{
		Name:        "pd",
		ClientURLs:  "http://127.0.0.1:2379",
		PeerURLs:    "http://127.0.0.1:2380",
		LogLevel:    "info",
		LeaderLease: 3 * time.Second,
		Schedule: ScheduleConfig{
			MaxStoreDownTime:     Duration{30 * time.Minute},
			LeaderScheduleLimit:  4,
			RegionScheduleLimit:  2048,
			ReplicaScheduleLimit: 64,
			MergeScheduleLimit:   8,
		},
		Replication: ReplicationConfig{MaxReplicas: 3},
	}
}

// LoadFile reads a TOML file over c. Keys it does not know are returned
// as warnings; a value of the wrong type is an error naming its key.
func (c *Config) LoadFile(path string) (warnings []string, err error) {
	md, err := toml.DecodeFile(path, c)
	if err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	for _, k := range md.Undecoded() {
		warnings = append(warnings, fmt.Sprintf("config file %s: unknown key %s, ignored", path, k))
	}
	return warnings, nil
}

// Validate fills the defaults that depend on other settings (data dir,
// advertised URLs, initial cluster) and checks every value; an error
// names the offending key.
func (c *Config) Validate() error {
	if c.Name == "" {
		return fmt.Errorf("name: must not be empty")
	}
	if c.DataDir == "" {
		c.DataDir = "default." + c.Name
	}
	if c.AdvertiseClientURLs == "" {
		c.AdvertiseClientURLs = c.ClientURLs
	}
	if c.AdvertisePeerURLs == "" {
		c.AdvertisePeerURLs = c.PeerURLs
	}
	for _, u := range []struct{ key, val string }{
		{"client-urls", c.ClientURLs}, {"peer-urls", c.PeerURLs},
		{"advertise-client-urls", c.AdvertiseClientURLs}, {"advertise-peer-urls", c.AdvertisePeerURLs},
	} {
		if _, err := parseURLs(u.val); err != nil {
			return fmt.Errorf("%s: %w", u.key, err)
		}
	}
	if c.Join != "" {
		if _, err := parseURLs(c.Join); err != nil {
			return fmt.Errorf("join: %w", err)
		}
		if c.InitialCluster != "" {
			return fmt.Errorf("join: cannot be used with initial-cluster")
		}
	}
	if c.InitialCluster == "" && c.Join == "" {
		c.InitialCluster = c.Name + "=" + c.AdvertisePeerURLs
	}
	if c.Join == "" {
		if err := checkInitialCluster(c.InitialCluster, c.Name); err != nil {
			return fmt.Errorf("initial-cluster: %w", err)
		}
	}
	switch strings.ToLower(c.LogLevel) {
	case "debug", "info", "warn", "error", "fatal":
	default:
		return fmt.Errorf("log-level: %q is not one of debug, info, warn, error, fatal", c.LogLevel)
	}
	if err := c.validateCluster(); err != nil {
		return err
	}
	if c.LeaderLease <= 0 {
		c.LeaderLease = 3 * time.Second
	}
	return nil
}

// validateCluster checks the sections that can change at run time.
func (c *Config) validateCluster() error {
	if c.Replication.MaxReplicas == 0 {
		return fmt.Errorf("replication.max-replicas: must be at least 1")
	}
	if c.Schedule.MaxStoreDownTime.Duration <= 0 {
		return fmt.Errorf("schedule.max-store-down-time: must be positive")
	}
	return nil
}

// parseURLs parses a comma-separated list of http URLs.
func parseURLs(s string) ([]url.URL, error) {
	var out []url.URL
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		u, err := url.Parse(part)
		if err != nil {
			return nil, err
		}
		if u.Scheme != "http" || u.Host == "" {
			return nil, fmt.Errorf("%q is not an http URL with a host", part)
		}
		out = append(out, *u)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no URL")
	}
	return out, nil
}

// checkInitialCluster checks name=url,... : names are unique, URLs
// parse, and name is one of them.
func checkInitialCluster(s, name string) error {
	seen := map[string]bool{}
	for _, m := range strings.Split(s, ",") {
		n, u, ok := strings.Cut(strings.TrimSpace(m), "=")
		if !ok || n == "" {
			return fmt.Errorf("%q is not name=url", m)
		}
		if seen[n] {
			return fmt.Errorf("member name %q appears twice", n)
		}
		seen[n] = true
		if _, err := parseURLs(u); err != nil {
			return err
		}
	}
	if !seen[name] {
		return fmt.Errorf("does not list this member's name %q", name)
	}
	return nil
}
