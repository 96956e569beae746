package e2e

import (
	"os"
	"strconv"
	"testing"
)

// The environment variables that configure the suite.
const (
	// targetEnv names the server under test: basalt (the default),
	// mariadb, mocktikv or cluster (see testkit.StartTarget).
	targetEnv = "BASALT_E2E_TARGET"
	// secondsEnv sets how many seconds each sysbench workload runs: by
	// default 10, or 3 with -short.
	secondsEnv = "BASALT_E2E_SECONDS"
)

// config is how the suite runs, from the environment and -short.
type config struct {
	target  string
	seconds int
	// psModes are the values of sysbench's --db-ps-mode each workload runs
	// with: server-side prepared statements, and plain text queries.
	psModes []string
}

func loadConfig(t *testing.T) config {
	t.Helper()
	cfg := config{target: os.Getenv(targetEnv), seconds: 10, psModes: []string{"auto", "disable"}}
	if testing.Short() {
		cfg.seconds, cfg.psModes = 3, cfg.psModes[:1]
	}
	if s := os.Getenv(secondsEnv); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			t.Fatalf("%s=%q: want a positive number of seconds", secondsEnv, s)
		}
		cfg.seconds = n
	}
	return cfg
}
