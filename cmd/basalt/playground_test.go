package main

import (
	"flag"
	"io"
	"slices"
	"testing"
)

// TestEnvFlag: --pd.env, --kv.env and --db.env take KEY=VALUE, repeated,
// in order; anything else is refused.
func TestEnvFlag(t *testing.T) {
	var env []string
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Var((*envFlag)(&env), "kv.env", "")
	if err := fs.Parse([]string{"--kv.env", "GOMAXPROCS=2", "--kv.env", "GODEBUG=a=1,b=2", "--kv.env", "EMPTY="}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"GOMAXPROCS=2", "GODEBUG=a=1,b=2", "EMPTY="}; !slices.Equal(env, want) {
		t.Errorf("got %q, want %q", env, want)
	}
	for _, bad := range []string{"GOMAXPROCS", "=1", ""} {
		if err := (*envFlag)(&env).Set(bad); err == nil {
			t.Errorf("Set(%q) accepted", bad)
		}
	}
}
