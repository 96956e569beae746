package e2e

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/basalt-db/basalt/testkit"
	"github.com/go-sql-driver/mysql"
)

// TestLimits starts basalt with max-connections and max-allowed-packet set
// in its configuration file, and checks what go-sql-driver/mysql and the
// mariadb client see: the system variables, ER_CON_COUNT_ERROR (1040) for
// a connection past the bound, SET GLOBAL max_connections taking effect at
// once, and ER_NET_PACKET_TOO_LARGE (1153) for a statement past the packet
// bound. It tests basalt's configuration, so it skips for other targets.
func TestLimits(t *testing.T) {
	if target := loadConfig(t).target; target != "" && target != "basalt" {
		t.Skipf("tests basalt's configuration keys, not %s", target)
	}
	conf := filepath.Join(t.TempDir(), "basalt.toml")
	if err := os.WriteFile(conf, []byte("max-connections = 2\nmax-allowed-packet = \"64KiB\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := testkit.StartBasalt(t, testkit.BasaltOptions{Args: []string{"--config", conf}})
	db := srv.OpenDB(t, "")
	ctx := context.Background()

	// The server may not yet have seen testkit's readiness probe go.
	var conns []*sql.Conn
	for deadline := time.Now().Add(10 * time.Second); len(conns) < 2; {
		c, err := db.Conn(ctx)
		if err == nil {
			conns = append(conns, c)
			defer c.Close()
			continue
		}
		if code(err) != 1040 || time.Now().After(deadline) {
			t.Fatalf("connection %d of 2: %v", len(conns)+1, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var maxConns, maxPacket int
	if err := conns[0].QueryRowContext(ctx, "SELECT @@max_connections, @@max_allowed_packet").Scan(&maxConns, &maxPacket); err != nil {
		t.Fatal(err)
	}
	if maxConns != 2 || maxPacket != 64<<10 {
		t.Fatalf("@@max_connections, @@max_allowed_packet = %d, %d; want 2, 65536", maxConns, maxPacket)
	}

	_, err := db.Conn(ctx)
	if code(err) != 1040 || !strings.Contains(err.Error(), "Too many connections") {
		t.Fatalf("third connection: got %v, want 1040", err)
	}
	out, err := mariadbStdin(t, srv, "SELECT 1")
	if err == nil || !strings.Contains(out, "ERROR 1040") || !strings.Contains(out, "Too many connections") {
		t.Fatalf("mariadb client past max-connections: %v\n%s", err, out)
	}
	t.Logf("mariadb client past max-connections: %s", strings.TrimSpace(out))

	// A statement bigger than max-allowed-packet ends its connection.
	big := "SELECT '" + strings.Repeat("x", 100<<10) + "'"
	var s string
	err = conns[1].QueryRowContext(ctx, big).Scan(&s)
	if code(err) != 1153 || !strings.Contains(err.Error(), "Got a packet bigger than 'max_allowed_packet' bytes") {
		t.Fatalf("100 KiB statement: got %v, want 1153", err)
	}
	conns[1].Close()
	waitConnect(t, db)

	if _, err := conns[0].ExecContext(ctx, "SET GLOBAL max_connections = 3"); err != nil {
		t.Fatal(err)
	}
	c2, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	out, err = mariadbStdin(t, srv, "SELECT @@global.max_connections AS m")
	if err != nil || !strings.Contains(out, "\n3\n") {
		t.Fatalf("mariadb client after SET GLOBAL max_connections = 3: %v\n%s", err, out)
	}
	if out, err := mariadbStdin(t, srv, big); err == nil || !strings.Contains(out, "ERROR 1153") {
		t.Fatalf("mariadb client sending 100 KiB: %v\n%.300s", err, out)
	}
}

// waitConnect waits until the server has a free connection again.
func waitConnect(t *testing.T, db *sql.DB) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, err := db.Conn(context.Background())
		if err == nil {
			c.Close()
			return
		}
		if code(err) != 1040 || time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// mariadbStdin runs one statement through the mariadb client in batch mode
// (from standard input, where an error makes it exit non-zero), returning
// its combined output.
func mariadbStdin(t *testing.T, srv *testkit.Server, stmt string) (string, error) {
	t.Helper()
	client, err := exec.LookPath("mariadb")
	if err != nil {
		t.Skip("the mariadb client is not installed (apt-get install mariadb-client)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, client, "--no-defaults", "--protocol=TCP", "--skip-ssl", "--connect-timeout=10",
		"-h", srv.Host(), "-P", strconv.Itoa(srv.Port()), "-u", "root")
	cmd.Stdin = strings.NewReader(stmt + ";\n")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func code(err error) uint16 {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}
