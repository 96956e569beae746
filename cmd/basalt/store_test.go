package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// basalt store's command line and configuration, short of joining a
// cluster.
func TestStoreCommandLine(t *testing.T) {
	dir := t.TempDir()
	badTicks := filepath.Join(dir, "ticks.toml")
	os.WriteFile(badTicks, []byte("[raftstore]\nraft-heartbeat-ticks = 20\n"), 0o644)
	badSize := filepath.Join(dir, "size.toml")
	os.WriteFile(badSize, []byte("[coprocessor]\nregion-split-size = \"96XB\"\n"), 0o644)
	level := filepath.Join(dir, "level.toml")
	os.WriteFile(level, []byte("[log]\nlevel = \"debug\"\n"), 0o644)

	for _, tc := range []struct {
		args   []string
		status int
		stderr string // substring
	}{
		{[]string{"-h"}, 0, "Usage: basalt store"},
		{[]string{"--no-such-flag"}, 2, "flag provided but not defined: -no-such-flag"},
		{[]string{"stray"}, 2, `basalt store: unexpected argument "stray"`},
		{[]string{"--config", filepath.Join(dir, "missing.toml")}, 2, "missing.toml: no such file or directory"},
		{[]string{"--config", badTicks}, 2,
			"ticks.toml: raftstore.raft-election-timeout-ticks: 10: must be greater than raftstore.raft-heartbeat-ticks (20)"},
		{[]string{"--config", badSize}, 2, `size.toml:2: coprocessor.region-split-size: invalid size "96XB"`},
		{[]string{"--addr", "localhost"}, 2, `basalt store: invalid configuration: server.addr: "localhost": want host:port`},
		{[]string{"--pd", " , "}, 2, "pd.endpoints: must list at least one"},
		{[]string{"--pd", "127.0.0.1:2379,pd2"}, 2, `pd.endpoints: "pd2": want host:port`},
		// Flags override the file: the file's level is valid, the flag's not.
		{[]string{"--config", level, "--log-level", "loud"}, 2, `log.level: "loud" is not one of`},
		// Every invalid value is listed, each on its own line.
		{[]string{"--status-addr", "x", "--advertise-addr", "0.0.0.0:1"}, 2,
			"invalid configuration: server.advertise-addr: \"0.0.0.0:1\" cannot be dialled by other nodes; set the address they should use\n" +
				"basalt store: server.status-addr"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			status := run(append([]string{"store"}, tc.args...), &stdout, &stderr)
			if status != tc.status {
				t.Errorf("status %d, want %d\nstderr: %s", status, tc.status, &stderr)
			}
			if !strings.Contains(stderr.String(), tc.stderr) {
				t.Errorf("stderr %q lacks %q", &stderr, tc.stderr)
			}
		})
	}
}

// A key the store does not know is a warning that names it, and the store
// goes on to start. PD is a port nothing listens on, so it then fails to
// join: the test holds whether or not the node is built yet.
func TestStoreUnknownKeyWarns(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "store.toml")
	os.WriteFile(file, []byte("[server]\nlabels = { zone = \"z1\" }\n"), 0o644)
	var stdout, stderr bytes.Buffer
	status := run([]string{"store", "--config", file, "--data-dir", filepath.Join(dir, "data"),
		"--pd", fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		"--addr", fmt.Sprintf("127.0.0.1:%d", freePort(t)), "--status-addr", ""}, &stdout, &stderr)
	if status == 0 || status == 2 {
		t.Errorf("status %d, want 1: the configuration is valid, and there is no PD\nstderr: %s", status, &stderr)
	}
	if !strings.Contains(stderr.String(), "unknown key server.labels, ignored") {
		t.Errorf("stderr lacks the warning:\n%s", &stderr)
	}
}
