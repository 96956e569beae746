package bench

import (
	"embed"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// Plan is a test plan: which targets, which workloads, at which thread
// counts, on how much data. It is read from TOML (see plans/quick.toml)
// and stored as run in results.json.
type Plan struct {
	Name      string   `toml:"name" json:"name"`
	Workloads []string `toml:"workloads" json:"workloads"`
	Threads   []int    `toml:"threads" json:"threads"`
	Tables    int      `toml:"tables" json:"tables"`
	TableSize int      `toml:"table_size" json:"table_size"`
	// WarmupSeconds is the length of the warm-up run before each
	// workload's thread sweep; 0 skips it.
	WarmupSeconds int `toml:"warmup_seconds" json:"warmup_seconds"`
	RunSeconds    int `toml:"run_seconds" json:"run_seconds"`
	// RandType is sysbench's --rand-type: uniform, gaussian, special or
	// pareto.
	RandType string `toml:"rand_type" json:"rand_type"`
	// PSMode is sysbench's --db-ps-mode: auto (server-side prepared
	// statements) or disable.
	PSMode string `toml:"ps_mode" json:"ps_mode"`
	// Prepare is how the tables are made: "sysbench" (sysbench
	// oltp_common prepare, the default) or "import": sysbench's rows
	// written as CSV and loaded with IMPORT INTO, on basalt targets only
	// (others keep sysbench's prepare); see PrepareByImport.
	Prepare string       `toml:"prepare" json:"prepare,omitempty"`
	Targets []TargetSpec `toml:"targets" json:"targets"`
}

// TargetSpec is one target of a plan.
type TargetSpec struct {
	// Name labels the target in results and reports; it defaults to Kind.
	Name string `toml:"name" json:"name"`
	// Kind is basalt (started from Binary, default the running
	// executable), playground (a cluster of that binary, "basalt
	// playground": 1 PD, 3 stores, 1 SQL node behind HAProxy, started;
	// Args add playground flags), mariadb (a Debian mariadbd, started) or
	// dsn (Address, already running; not restored between workloads).
	Kind     string   `toml:"kind" json:"kind"`
	Binary   string   `toml:"binary" json:"binary,omitempty"`
	Address  string   `toml:"address" json:"address,omitempty"` // host:port, dsn only
	User     string   `toml:"user" json:"user,omitempty"`       // dsn only; default root
	Password string   `toml:"password" json:"-"`                // dsn only; never stored
	Args     []string `toml:"args" json:"args,omitempty"`       // more server flags
	// Threads, if set, are this target's thread counts instead of the
	// plan's (a scale-out run gives each cluster size its own).
	Threads []int `toml:"threads" json:"threads,omitempty"`
}

// threads are the thread counts t runs at under plan p.
func (p *Plan) threads(t TargetSpec) []int {
	if len(t.Threads) > 0 {
		return t.Threads
	}
	return p.Threads
}

// Target kinds.
const (
	KindBasalt     = "basalt"
	KindPlayground = "playground"
	KindMariaDB    = "mariadb"
	KindDSN        = "dsn"
)

// How a plan prepares its tables (Plan.Prepare).
const (
	PrepareSysbench = "sysbench"
	PrepareImport   = "import"
)

// Workloads are the sysbench 1.0 scripts a plan may name: all eleven of
// /usr/share/sysbench. bulk_insert alone does not use the prepared sbtest
// tables (bulk.go).
var Workloads = []string{
	"oltp_point_select",
	"oltp_read_only",
	"oltp_write_only",
	"oltp_read_write",
	"oltp_update_index",
	"oltp_update_non_index",
	"oltp_insert",
	"oltp_delete",
	"select_random_points",
	"select_random_ranges",
	BulkInsert,
}

//go:embed plans/*.toml
var presets embed.FS

// LoadPlan reads a preset by name (quick, report) or a TOML file by path.
func LoadPlan(nameOrPath string) (*Plan, error) {
	b, err := presets.ReadFile("plans/" + nameOrPath + ".toml")
	if err != nil {
		if !strings.ContainsAny(nameOrPath, "./") {
			return nil, fmt.Errorf("unknown plan %q: want quick, report or a .toml file", nameOrPath)
		}
		if b, err = os.ReadFile(nameOrPath); err != nil {
			return nil, err
		}
	}
	var p Plan
	md, err := toml.Decode(string(b), &p)
	if err != nil {
		return nil, fmt.Errorf("plan %s: %w", nameOrPath, err)
	}
	if undec := md.Undecoded(); len(undec) > 0 {
		return nil, fmt.Errorf("plan %s: unknown setting %q", nameOrPath, undec[0].String())
	}
	return &p, nil
}

// ParseTarget reads a target from a flag: "basalt", "playground",
// "mariadb", "dsn:HOST:PORT" or just "HOST:PORT" (a dsn), each optionally
// prefixed by "NAME=".
func ParseTarget(s string) (TargetSpec, error) {
	var t TargetSpec
	if name, rest, ok := strings.Cut(s, "="); ok {
		t.Name, s = name, rest
	}
	kind, addr, _ := strings.Cut(s, ":")
	t.Kind, t.Address = kind, addr
	if _, port, err := net.SplitHostPort(s); err == nil && kind != KindDSN {
		if _, err := strconv.Atoi(port); err == nil {
			t.Kind, t.Address = KindDSN, s
		}
	}
	return t, t.check()
}

// Validate checks the plan and fills in defaults. It names the first
// problem it finds.
func (p *Plan) Validate() error {
	if len(p.Targets) == 0 {
		return errors.New("plan has no targets")
	}
	if len(p.Workloads) == 0 {
		return errors.New("plan has no workloads")
	}
	for _, w := range p.Workloads {
		if !contains(Workloads, w) {
			return fmt.Errorf("unknown workload %q: want one of %s", w, strings.Join(Workloads, ", "))
		}
	}
	for _, t := range p.Targets {
		if len(p.threads(t)) == 0 {
			return errors.New("plan has no thread counts")
		}
		for _, n := range p.threads(t) {
			if n <= 0 {
				return fmt.Errorf("thread count %d: want > 0", n)
			}
		}
	}
	switch {
	case p.Tables <= 0:
		return fmt.Errorf("tables = %d: want > 0", p.Tables)
	case p.TableSize <= 0:
		return fmt.Errorf("table_size = %d: want > 0", p.TableSize)
	case p.RunSeconds <= 0:
		return fmt.Errorf("run_seconds = %d: want > 0", p.RunSeconds)
	case p.WarmupSeconds < 0:
		return fmt.Errorf("warmup_seconds = %d: want >= 0", p.WarmupSeconds)
	}
	if p.RandType == "" {
		p.RandType = "uniform"
	}
	if !contains([]string{"uniform", "gaussian", "special", "pareto"}, p.RandType) {
		return fmt.Errorf("unknown rand_type %q: want uniform, gaussian, special or pareto", p.RandType)
	}
	if p.PSMode == "" {
		p.PSMode = "auto"
	}
	if p.Prepare == "" {
		p.Prepare = PrepareSysbench
	}
	if p.Prepare != PrepareSysbench && p.Prepare != PrepareImport {
		return fmt.Errorf("unknown prepare %q: want sysbench or import", p.Prepare)
	}
	if p.PSMode != "auto" && p.PSMode != "disable" {
		return fmt.Errorf("unknown ps_mode %q: want auto or disable", p.PSMode)
	}
	names := map[string]bool{}
	for i := range p.Targets {
		t := &p.Targets[i]
		if err := t.check(); err != nil {
			return err
		}
		if t.Name == "" {
			t.Name = t.Kind
		}
		if names[t.Name] {
			return fmt.Errorf("two targets named %q: give them names (name = ... or NAME=kind)", t.Name)
		}
		names[t.Name] = true
	}
	return nil
}

func (t *TargetSpec) check() error {
	switch t.Kind {
	case KindBasalt, KindPlayground, KindMariaDB:
		if t.Address != "" {
			return fmt.Errorf("target %s: an address is only for dsn targets", t.Kind)
		}
	case KindDSN:
		if !strings.Contains(t.Address, ":") {
			return fmt.Errorf("target dsn needs an address HOST:PORT (dsn:127.0.0.1:3306), got %q", t.Address)
		}
	default:
		return fmt.Errorf("unknown target %q: want basalt, playground, mariadb or HOST:PORT", t.Kind)
	}
	return nil
}

func contains[T comparable](list []T, v T) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}
