package testkit

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/basalt-db/basalt/bench"
)

// StartMariaDB starts a throwaway MariaDB on a free port with a new data
// directory, in which root@127.0.0.1 has an empty password (as root has on
// basalt), so that the same tests, drivers and sysbench runs work on both.
// The server's character set is utf8mb4, MySQL 8's default. It skips the
// test when MariaDB is not installed.
func StartMariaDB(t testing.TB) *Server {
	t.Helper()
	mariadbd := bench.FindProgram("mariadbd", "/usr/sbin/mariadbd")
	installDB := bench.FindProgram("mariadb-install-db", "/usr/bin/mariadb-install-db")
	if mariadbd == "" || installDB == "" {
		t.Skip("testkit: MariaDB is not installed (apt-get install mariadb-server)")
	}

	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	// A Unix socket path must fit in 108 bytes; t.TempDir can be longer.
	sockDir := dir
	if len(dir) > 80 {
		var err error
		if sockDir, err = os.MkdirTemp("", "mariadb-"); err != nil {
			t.Fatalf("testkit: %v", err)
		}
		t.Cleanup(func() { os.RemoveAll(sockDir) })
	}
	// Its own temporary directory: MariaDBs bootstrapping at once in
	// one /tmp collide on the names of their temporary tables.
	tmpDir := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmpDir, 0o700); err != nil {
		t.Fatalf("testkit: %v", err)
	}
	// Options for mariadbd, which mariadb-install-db passes on too.
	common := []string{"--tmpdir=" + tmpDir}
	// mariadbd refuses to run as root unless told to.
	if os.Geteuid() == 0 {
		common = append(common, "--user=root")
	}

	// --auth-root-authentication-method=normal makes root@localhost,
	// root@127.0.0.1 and root@::1 accounts with no password (the default
	// would be unix_socket authentication, useless over TCP).
	install := exec.Command(installDB, append([]string{
		"--no-defaults",
		"--datadir=" + dataDir,
		"--auth-root-authentication-method=normal",
		"--skip-test-db",
	}, common...)...)
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("testkit: mariadb-install-db: %v\n%s", err, out)
	}

	port := freePorts(t, 1)[0]
	args := append([]string{
		"--no-defaults", // must come first
		"--datadir=" + dataDir,
		"--socket=" + filepath.Join(sockDir, "mariadbd.sock"),
		"--pid-file=" + filepath.Join(dir, "mariadbd.pid"),
		"--port=" + strconv.Itoa(port),
		"--bind-address=127.0.0.1",
		"--character-set-server=utf8mb4",
		"--collation-server=utf8mb4_general_ci",
	}, common...)
	return startServer(t, MariaDB, mariadbd, args, port)
}
