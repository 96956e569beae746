package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// TestMariaDBClient runs the mariadb command-line client in batch mode
// against the server (testdata/mariadb):
//
//	mariadb [user=U] [password=P] [db=D] [table]
//	    runs the input with -e; prints stdout, stderr and the exit status.
//	    "table" prints boxed tables (--table) instead of tab-separated rows.
//
// It skips when the client is not installed (CI installs mariadb-client).
func TestMariaDBClient(t *testing.T) {
	bin, err := exec.LookPath("mariadb")
	if err != nil {
		t.Skip("the mariadb client is not installed (apt-get install mariadb-client); skipping the CLI test")
	}
	ts := startServer(t, Config{})
	host, port, _ := net.SplitHostPort(ts.addr)
	datadriven.RunTest(t, "testdata/mariadb", func(t *testing.T, d *datadriven.TestData) string {
		if d.Cmd != "mariadb" {
			t.Fatalf("unknown command %q", d.Cmd)
		}
		user, password, db := "root", "", "test"
		if d.HasArg("user") {
			d.ScanArgs(t, "user", &user)
		}
		if d.HasArg("password") {
			d.ScanArgs(t, "password", &password)
		}
		if d.HasArg("db") {
			d.ScanArgs(t, "db", &db)
		}
		args := []string{"--no-defaults", "--protocol=TCP", "-h", host, "-P", port,
			"--connect-timeout=5", "--skip-ssl", "--binary-as-hex", "-u", user}
		if password != "" {
			args = append(args, "-p"+password)
		}
		if db != "none" {
			args = append(args, "-D", db)
		}
		if d.HasArg("table") {
			args = append(args, "--table")
		} else {
			args = append(args, "--batch")
		}
		args = append(args, "-e", d.Input)

		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var out bytes.Buffer
		out.Write(stdout.Bytes())
		if stderr.Len() > 0 {
			fmt.Fprintf(&out, "stderr: %s", stderr.Bytes())
		}
		var exit *exec.ExitError
		switch {
		case errors.As(err, &exit):
			fmt.Fprintf(&out, "exit status %d\n", exit.ExitCode())
		case err != nil:
			t.Fatalf("running mariadb: %v", err)
		}
		return out.String()
	})
}
