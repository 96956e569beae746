package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The command line, short of running a server.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.toml")
	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(good, []byte("port = 4001\n"), 0o644)
	os.WriteFile(bad, []byte("port = 4001\n[txn]\ndefault-mode = \"eventual\"\n"), 0o644)
	tidb := filepath.Join(dir, "tidb.toml")
	os.WriteFile(tidb, []byte("[performance]\ntcp-keep-alive = true\n[tikv-client]\nmax-batch-wait-time = 2000000\n"), 0o644)

	for _, tc := range []struct {
		args   []string
		status int
		stdout string // substring; "" for no check
		stderr string
	}{
		{[]string{"--version"}, 0, "MySQL version: 8.4.0-Basalt-", ""},
		{[]string{"-V"}, 0, "Basalt ", ""},
		{[]string{"version"}, 0, "Go version:", ""},
		{[]string{"version", "extra"}, 2, "", "takes no arguments"},
		{[]string{"-h"}, 0, "", "Usage: basalt"},
		{[]string{"frobnicate"}, 2, "", `unknown command "frobnicate"`},
		{[]string{"--no-such-flag"}, 2, "", "flag provided but not defined: -no-such-flag"},
		{[]string{"--port", "4000", "stray"}, 2, "", `unexpected argument "stray"`},
		{[]string{"--port", "99999"}, 2, "", "basalt: port: 99999 is out of range 1..65535 (set by a command-line flag)"},
		{[]string{"--config", good, "--config-check"}, 0, "configuration is valid", ""},
		{[]string{"--config", bad, "--config-check"}, 2, "", "basalt: " + bad + `:3: txn.default-mode: unknown mode "eventual"`},
		{[]string{"--config", tidb, "--config-check"}, 0, "configuration is valid",
			"basalt: warning: config key performance.tcp-keep-alive is TiDB's and has no effect in Basalt; ignored\n" +
				`basalt: warning: config key tikv-client.max-batch-wait-time has no effect with store "local"; ignored`},
		{[]string{"--config", tidb, "--store", "mocktikv", "--config-check"}, 0, "configuration is valid",
			"basalt: warning: config key performance.tcp-keep-alive is TiDB's and has no effect in Basalt; ignored\n"},
		{[]string{"--config", filepath.Join(dir, "missing.toml")}, 2, "", "missing.toml: no such file or directory"},
		{[]string{"--log-level", "loud", "--config-check"}, 2, "", `log.level: unknown level "loud"`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			status := run(tc.args, &stdout, &stderr)
			if status != tc.status {
				t.Errorf("status %d, want %d\nstdout: %s\nstderr: %s", status, tc.status, &stdout, &stderr)
			}
			if !strings.Contains(stdout.String(), tc.stdout) {
				t.Errorf("stdout %q lacks %q", &stdout, tc.stdout)
			}
			if !strings.Contains(stderr.String(), tc.stderr) {
				t.Errorf("stderr %q lacks %q", &stderr, tc.stderr)
			}
		})
	}
}

// basalt --help lists every subcommand, one line each with what it does,
// then the server's flags; basalt help lists the subcommands on stdout.
func TestHelp(t *testing.T) {
	want := []string{"version", "bench", "pd", "store", "ctl", "playground"}
	if len(commands) != len(want) {
		t.Errorf("%d commands, want %d: %v", len(commands), len(want), want)
	}
	for _, flag := range []string{"--help", "-h", "-help"} {
		var stdout, stderr bytes.Buffer
		if status := run([]string{flag}, &stdout, &stderr); status != 0 {
			t.Fatalf("%s: status %d", flag, status)
		}
		help := stderr.String()
		for _, name := range want {
			var summary string
			for _, c := range commands {
				if c.name == name {
					summary = c.summary
				}
			}
			if summary == "" {
				t.Errorf("no command %q", name)
				continue
			}
			found := false
			for _, line := range strings.Split(help, "\n") {
				f := strings.Fields(line)
				if len(f) > 2 && f[0] == "basalt" && f[1] == name && strings.HasSuffix(line, " "+summary) {
					found = true
				}
			}
			if !found {
				t.Errorf("%s: no line \"basalt %s ... %s\" in:\n%s", flag, name, summary, help)
			}
		}
		for _, f := range []string{"-port port", "-config file", "-data-dir directory", "-store storage", "-config-check"} {
			if !strings.Contains(help, f) {
				t.Errorf("%s: flag %q missing from:\n%s", flag, f, help)
			}
		}
	}
	var stdout, stderr bytes.Buffer
	if status := run([]string{"help"}, &stdout, &stderr); status != 0 || !strings.Contains(stdout.String(), "basalt playground") {
		t.Errorf("basalt help: status %d, stdout:\n%s", status, &stdout)
	}
}
