package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// target is a database under test. Start, Backup, Restore and Close are
// called in that order by one goroutine: Start once, Backup once, Restore
// before each workload, Close at the end (also after errors).
type target interface {
	Spec() TargetSpec
	Conn() sysbenchConn
	DSN(db string) string
	Address() string
	// Start starts the server on a fresh data directory.
	Start(ctx context.Context) error
	// Backup stops the server and copies its data directory.
	Backup() error
	// Restore stops the server if it runs, replaces its data directory
	// with the backup's copy and starts it. It is a no-op on targets that
	// cannot be restored (Restorable false).
	Restore(ctx context.Context) error
	Restorable() bool
	// Close stops the server and removes its directories.
	Close() error
}

// newTarget makes the target of spec; workDir holds the temporary
// directories of the servers it starts.
func newTarget(spec TargetSpec, workDir string) (target, error) {
	switch spec.Kind {
	case KindBasalt:
		m, err := newBasalt(spec, workDir)
		if err != nil {
			return nil, err
		}
		return &basaltTarget{m}, nil
	case KindPlayground:
		return newPlayground(spec, workDir)
	case KindMariaDB:
		return newMariaDB(spec, workDir)
	case KindDSN:
		if spec.User == "" {
			spec.User = "root"
		}
		return &dsnTarget{spec: spec}, nil
	}
	return nil, fmt.Errorf("unknown target kind %q", spec.Kind)
}

// managed is a target whose server this package starts: basalt or mariadb.
// Its directory holds data/ (the data directory), backup/ and whatever
// else the server needs.
type managed struct {
	spec    TargetSpec
	dir     string
	dataDir string
	srv     *Process
	// initData creates a fresh data directory, or is nil when the server
	// creates its own on first start.
	initData func() error
	// cgroups is where a playground's capped nodes have their cgroups.
	cgroups string
	// procName names the server's process in RunRSS.Peaks; empty for a
	// playground, whose nodes are named by its state file.
	procName string
}

func (m *managed) cgroupDir() string { return m.cgroups }

// processes are the server's processes, by name, while it runs: its
// own, and a playground's nodes too.
func (m *managed) processes() map[string]int {
	pid := m.srv.PID()
	if pid == 0 {
		return nil
	}
	if m.procName != "" {
		return map[string]int{m.procName: pid}
	}
	procs := playgroundNodes(m.dataDir)
	if procs == nil {
		procs = map[string]int{}
	}
	procs["playground"] = pid
	return procs
}

func (m *managed) Spec() TargetSpec { return m.spec }
func (m *managed) Address() string  { return net.JoinHostPort("127.0.0.1", strconv.Itoa(m.srv.Port)) }
func (m *managed) Restorable() bool { return true }
func (m *managed) Conn() sysbenchConn {
	return sysbenchConn{Host: "127.0.0.1", Port: strconv.Itoa(m.srv.Port), User: "root"}
}
func (m *managed) DSN(db string) string { return rootDSN("127.0.0.1", m.srv.Port, "root", "", db) }

func (m *managed) Start(ctx context.Context) error {
	if m.initData != nil {
		if err := m.initData(); err != nil {
			return err
		}
	}
	return m.srv.Start(ctx)
}

func (m *managed) Backup() error {
	if err := m.srv.Stop(); err != nil {
		return err
	}
	return copyDir(m.dataDir, filepath.Join(m.dir, "backup"))
}

func (m *managed) Restore(ctx context.Context) error {
	if err := m.srv.Stop(); err != nil {
		return err
	}
	if err := os.RemoveAll(m.dataDir); err != nil {
		return err
	}
	if err := copyDir(filepath.Join(m.dir, "backup"), m.dataDir); err != nil {
		return fmt.Errorf("restoring %s: %w", m.spec.Name, err)
	}
	return m.srv.Start(ctx)
}

func (m *managed) Close() error {
	err := m.srv.Stop()
	return errors.Join(err, os.RemoveAll(m.dir))
}

// newBasalt is a basalt started as
//
//	BIN --host 127.0.0.1 --port P --status-port S --data-dir DIR/data [args]
func newBasalt(spec TargetSpec, workDir string) (*managed, error) {
	m, ports, err := newBasaltDir(spec, workDir, "bench-basalt-")
	if err != nil {
		return nil, err
	}
	m.srv = &Process{Name: spec.Name, Bin: m.spec.Binary}
	m.procName = "basalt"
	use := func(ports [2]int) {
		m.srv.Port = ports[0]
		m.srv.Args = append([]string{
			"--host", "127.0.0.1",
			"--port", strconv.Itoa(ports[0]),
			"--status-port", strconv.Itoa(ports[1]),
			"--data-dir", m.dataDir,
		}, spec.Args...)
	}
	use(ports)
	m.srv.Repick = repick(use)
	return m, nil
}

// repick is a Process.Repick that gives use two new free ports.
func repick(use func([2]int)) func() error {
	return func() error {
		ports, err := twoFreePorts()
		if err == nil {
			use(ports)
		}
		return err
	}
}

// twoFreePorts returns two TCP ports that were free a moment ago.
func twoFreePorts() ([2]int, error) {
	var ports [2]int
	var err1, err2 error
	ports[0], err1 = freePort()
	ports[1], err2 = freePort()
	return ports, errors.Join(err1, err2)
}

// newBasaltDir is the part of a target that runs the basalt binary
// (spec.Binary, default this executable) common to its kinds: the binary
// checked, the target's directory made under workDir, two free ports.
func newBasaltDir(spec TargetSpec, workDir, prefix string) (*managed, [2]int, error) {
	bin := spec.Binary
	if bin == "" {
		var err error
		if bin, err = os.Executable(); err != nil {
			return nil, [2]int{}, err
		}
	}
	if _, err := os.Stat(bin); err != nil {
		return nil, [2]int{}, fmt.Errorf("target %s: basalt binary: %w", spec.Name, err)
	}
	dir, err := os.MkdirTemp(workDir, prefix)
	if err != nil {
		return nil, [2]int{}, err
	}
	ports, err := twoFreePorts()
	if err != nil {
		os.RemoveAll(dir)
		return nil, [2]int{}, err
	}
	m := &managed{spec: spec, dir: dir, dataDir: filepath.Join(dir, "data")}
	m.spec.Binary = bin
	return m, ports, nil
}

// basaltTarget is an embedded basalt, backed up and restored with its
// own statements, as a user of it would: BACKUP DATABASE of the prepared
// and analyzed tables at one timestamp, and before each workload DROP
// DATABASE and RESTORE DATABASE of that backup, then ANALYZE TABLE (a
// backup keeps no statistics). The server keeps running throughout.
type basaltTarget struct{ *managed }

func (b *basaltTarget) backupURL() (string, error) {
	dir, err := filepath.Abs(filepath.Join(b.dir, "backup"))
	return "local://" + dir, err
}

// backupSteps and restoreSteps say how Backup and Restore work, for the
// results.
func (b *basaltTarget) backupSteps() string {
	return "# BACKUP DATABASE sbtest TO a directory of the run, the server serving"
}

func (b *basaltTarget) restoreSteps() string {
	return "# DROP DATABASE sbtest; RESTORE DATABASE sbtest FROM the backup taken after prepare; ANALYZE TABLE each table"
}

func (b *basaltTarget) Backup() error {
	url, err := b.backupURL()
	if err != nil {
		return err
	}
	return b.exec(context.Background(), "BACKUP DATABASE sbtest TO '"+url+"'")
}

func (b *basaltTarget) Restore(ctx context.Context) error {
	url, err := b.backupURL()
	if err != nil {
		return err
	}
	if err := b.exec(ctx, "DROP DATABASE IF EXISTS sbtest", "RESTORE DATABASE sbtest FROM '"+url+"'"); err != nil {
		return err
	}
	db, err := sql.Open("mysql", b.DSN("sbtest"))
	if err != nil {
		return err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, "SHOW TABLES")
	if err != nil {
		return err
	}
	var analyze []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			rows.Close()
			return err
		}
		analyze = append(analyze, "ANALYZE TABLE sbtest."+t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	return b.exec(ctx, analyze...)
}

// exec runs statements in order on a connection of its own.
func (b *basaltTarget) exec(ctx context.Context, stmts ...string) error {
	db, err := sql.Open("mysql", b.DSN(""))
	if err != nil {
		return err
	}
	defer db.Close()
	for _, q := range stmts {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

// newPlayground is a cluster of basalt processes, the reports' layout on
// one machine, started as
//
//	BIN playground --data-dir DIR/data --db.port P --haproxy.port H [args]
//
// and reached through HAProxy (through the SQL node when HAProxy is not
// installed). Stopping it (SIGTERM) stops every node; started again on a
// kept directory, it resumes the same nodes on the same ports, so that
// Backup and Restore copy the whole cluster's data as the reports do
// between workloads: stop every node, overwrite its data, start it again.
func newPlayground(spec TargetSpec, workDir string) (*managed, error) {
	m, ports, err := newBasaltDir(spec, workDir, "bench-playground-")
	if err != nil {
		return nil, err
	}
	// The playground is named after its directory, and so are the cgroups
	// of --db.cpus: a unique name lets two runs cap their nodes side by side.
	m.dataDir = filepath.Join(m.dir, filepath.Base(m.dir))
	// As playground/cgroup.go makes them: .../basalt-playground/NAME/NODE.
	m.cgroups = filepath.Join("/sys/fs/cgroup/cpu/basalt-playground", filepath.Base(m.dir))
	m.srv = &Process{Name: spec.Name, Bin: m.spec.Binary,
		// Every node starts, and the stores elect their regions' leaders.
		ReadyTimeout: 3 * time.Minute, StopTimeout: time.Minute}
	use := func(ports [2]int) {
		dbPort, proxyPort := ports[0], ports[1]
		args := []string{"playground", "--data-dir", m.dataDir, "--db.port", strconv.Itoa(dbPort),
			"--haproxy.port", strconv.Itoa(proxyPort), "--log-level", "warn"}
		m.srv.Port = proxyPort
		if FindProgram("haproxy", "/usr/sbin/haproxy") == "" { // as the playground looks for it
			args = append(args, "--without-haproxy")
			m.srv.Port = dbPort
		}
		m.srv.Args = append(args, spec.Args...)
	}
	use(ports)
	m.srv.Repick = repick(use)
	return m, nil
}

// newMariaDB is a Debian mariadbd on a data directory made by
// mariadb-install-db, in which root@127.0.0.1 has an empty password.
func newMariaDB(spec TargetSpec, workDir string) (*managed, error) {
	mariadbd := spec.Binary
	if mariadbd == "" {
		mariadbd = FindProgram("mariadbd", "/usr/sbin/mariadbd")
	}
	installDB := FindProgram("mariadb-install-db", "/usr/bin/mariadb-install-db")
	if mariadbd == "" || installDB == "" {
		return nil, fmt.Errorf("target %s: MariaDB is %w (apt-get install mariadb-server)", spec.Name, errMissing)
	}
	// Short: the Unix socket's path must fit in 108 bytes.
	dir, err := os.MkdirTemp(workDir, "bench-mariadb-")
	if err != nil {
		return nil, err
	}
	// Absolute: mariadb-install-db fails on a relative --datadir (a
	// relative --work-dir).
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, err
	}
	tmpDir := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmpDir, 0o700); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	m := &managed{spec: spec, dir: dir, dataDir: filepath.Join(dir, "data"), procName: "mariadbd"}
	m.spec.Binary = mariadbd
	common := []string{"--tmpdir=" + tmpDir}
	if os.Geteuid() == 0 {
		common = append(common, "--user=root") // mariadbd refuses root otherwise
	}
	m.initData = func() error {
		install := exec.Command(installDB, append([]string{
			"--no-defaults",
			"--datadir=" + m.dataDir,
			"--auth-root-authentication-method=normal",
			"--skip-test-db",
		}, common...)...)
		if out, err := install.CombinedOutput(); err != nil {
			return fmt.Errorf("mariadb-install-db: %v\n%s", err, Tail(string(out), 20))
		}
		return nil
	}
	m.srv = &Process{Name: spec.Name, Bin: mariadbd}
	use := func(ports [2]int) {
		args := append([]string{
			"--no-defaults", // must come first
			"--datadir=" + m.dataDir,
			"--socket=" + filepath.Join(dir, "mariadbd.sock"),
			"--pid-file=" + filepath.Join(dir, "mariadbd.pid"),
			"--port=" + strconv.Itoa(ports[0]),
			"--bind-address=127.0.0.1",
			"--character-set-server=utf8mb4",
			"--collation-server=utf8mb4_general_ci",
		}, common...)
		m.srv.Port, m.srv.Args = ports[0], append(args, spec.Args...)
	}
	use([2]int{port})
	m.srv.Repick = repick(use)
	return m, nil
}

// dsnTarget is a server already running at an address; nothing is started,
// stopped or restored.
type dsnTarget struct{ spec TargetSpec }

func (d *dsnTarget) Spec() TargetSpec                  { return d.spec }
func (d *dsnTarget) Address() string                   { return d.spec.Address }
func (d *dsnTarget) Restorable() bool                  { return false }
func (d *dsnTarget) Backup() error                     { return nil }
func (d *dsnTarget) Restore(ctx context.Context) error { return nil }
func (d *dsnTarget) Close() error                      { return nil }

func (d *dsnTarget) Conn() sysbenchConn {
	host, port, _ := net.SplitHostPort(d.spec.Address)
	return sysbenchConn{Host: host, Port: port, User: d.spec.User, Password: d.spec.Password}
}

func (d *dsnTarget) DSN(db string) string {
	host, port, _ := net.SplitHostPort(d.spec.Address)
	p, _ := strconv.Atoi(port)
	return rootDSN(host, p, d.spec.User, d.spec.Password, db)
}

func (d *dsnTarget) Start(ctx context.Context) error {
	db, err := sql.Open("mysql", d.DSN(""))
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.PingContext(ctx); err != nil {
		return fmt.Errorf("target %s: no MySQL server at %s: %w", d.spec.Name, d.spec.Address, err)
	}
	return nil
}

// The variables whose values a report shows for a target: the ones that
// decide its durability, isolation and caching, by the kind of server.
// Basalt answers for some InnoDB names (for clients that ask), with values
// that do not describe it, so its own are shown instead; a dsn target,
// whatever it is, shows whichever of both it has.
var (
	commonSettings = []string{"version", "version_comment", "transaction_isolation", "autocommit",
		"max_connections", "character_set_server"}
	mariadbSettings = []string{"tx_isolation", "innodb_buffer_pool_size", "innodb_flush_log_at_trx_commit",
		"sync_binlog", "log_bin"}
	basaltSettings = []string{"tidb_txn_mode", "tidb_enable_async_commit", "tidb_enable_1pc",
		"tidb_prepared_plan_cache_size", "tidb_enable_stmt_summary"}
)

// settingNames are the variables showSettings reads for a target of kind.
func settingNames(kind string) []string {
	names := slices.Clone(commonSettings)
	switch kind {
	case KindBasalt, KindPlayground:
		return append(names, basaltSettings...)
	case KindMariaDB:
		return append(names, mariadbSettings...)
	}
	return append(append(names, mariadbSettings...), basaltSettings...)
}

// showSettings returns the values of kind's settingNames that db has.
func showSettings(ctx context.Context, db *sql.DB, kind string) map[string]string {
	vars := map[string]string{}
	for _, name := range settingNames(kind) {
		var n, v string
		if err := db.QueryRowContext(ctx, "SHOW VARIABLES LIKE '"+name+"'").Scan(&n, &v); err == nil {
			vars[strings.ToLower(n)] = v
		}
	}
	return vars
}
