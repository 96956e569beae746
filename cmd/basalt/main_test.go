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
