package config

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func parseFlags(t *testing.T, args ...string) *Flags {
	t.Helper()
	fs := flag.NewFlagSet("basalt", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return f
}

func writeFile(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "basalt.toml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Precedence, lowest first: defaults, the file, the flags given.
func TestFlagsPrecedence(t *testing.T) {
	file := writeFile(t, `
host = "0.0.0.0"
port = 4001
path = "/from/file"
[status]
status-port = 10081
[log]
level = "warn"
file = "/from/file.log"
`)
	for _, tc := range []struct {
		name  string
		args  []string
		check func(*Config) bool
	}{
		{"no flags: defaults", nil, func(c *Config) bool {
			return reflect.DeepEqual(c, Default())
		}},
		{"file only", []string{"--config", file}, func(c *Config) bool {
			return c.Host == "0.0.0.0" && c.Port == 4001 && c.Path == "/from/file" &&
				c.Status.StatusPort == 10081 && c.Log.Level == "warn" && c.Log.File == "/from/file.log" &&
				c.Txn.LockWaitTimeout == 50 // a default the file leaves
		}},
		{"flags override the file", []string{
			"--config", file, "--host", "127.0.0.2", "--port", "4100", "--status-port", "0",
			"--data-dir", "/from/flag", "--log-level", "error", "--log-file", "",
			"--initial-root-password", "s3cret", "--ssl-cert", "/c.pem", "--ssl-key", "/k.pem",
		}, func(c *Config) bool {
			return c.Host == "127.0.0.2" && c.Port == 4100 && c.Status.StatusPort == 0 &&
				c.Path == "/from/flag" && c.Log.Level == "error" && c.Log.File == "" &&
				c.InitialRootPassword == "s3cret" && c.Security.SSLCert == "/c.pem" && c.Security.SSLKey == "/k.pem"
		}},
		{"only the flags given override", []string{"--config", file, "-P", "4200"}, func(c *Config) bool {
			return c.Port == 4200 && c.Host == "0.0.0.0" && c.Path == "/from/file" && c.Log.Level == "warn"
		}},
		{"TiDB's aliases", []string{"--path", "/p", "--status", "10090", "-L", "debug"}, func(c *Config) bool {
			return c.Path == "/p" && c.Status.StatusPort == 10090 && c.Log.Level == "debug"
		}},
		{"schema lease", []string{"--config", file, "--lease", "2s"}, func(c *Config) bool {
			return time.Duration(c.Lease) == 2*time.Second && c.Path == "/from/file"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := parseFlags(t, tc.args...).Load()
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(cfg) {
				t.Errorf("got %+v", cfg)
			}
		})
	}
}

// A flag is validated after it overrides: it may fix the file's value, and
// a bad one is reported as the flag's.
func TestFlagsValidation(t *testing.T) {
	clash := writeFile(t, "port = 10080\n") // the default status port
	if _, err := parseFlags(t, "--config", clash).Load(); err == nil ||
		!strings.Contains(err.Error(), "status.status-port: 10080 is also the MySQL port") {
		t.Errorf("clash: err = %v", err)
	}
	if _, err := parseFlags(t, "--config", clash, "--status-port", "0").Load(); err != nil {
		t.Errorf("clash fixed by a flag: %v", err)
	}

	_, err := parseFlags(t, "--port", "70000").Load()
	if err == nil || err.Error() != "port: 70000 is out of range 1..65535 (set by a command-line flag)" {
		t.Errorf("bad flag: err = %v", err)
	}

	bad := writeFile(t, "[txn]\ndefault-mode = \"nope\"\n")
	_, err = parseFlags(t, "--config", bad, "--port", "0").Load()
	if err == nil || !strings.Contains(err.Error(), bad+":2: txn.default-mode") ||
		!strings.Contains(err.Error(), "port: 0 is out of range 1..65535 (set by a command-line flag)") {
		t.Errorf("file and flag errors: err = %v", err)
	}

	if _, err := parseFlags(t, "--config", filepath.Join(t.TempDir(), "missing.toml")).Load(); err == nil {
		t.Error("missing config file accepted")
	}
}
