package clustersync

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/basalt-db/basalt/testkit"
)

// globals is one node's global variables as Vars applies them.
type globals struct {
	mu sync.Mutex
	m  map[string]string
}

func (g *globals) apply(name, value string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.m == nil {
		g.m = map[string]string{}
	}
	g.m[name] = value
}

func (g *globals) get(name string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.m[name]
}

// A node starting loads what was set before; a value set on one node
// reaches the other, the last one set winning.
func TestVars(t *testing.T) {
	cli := testkit.StartEtcdClient(t)
	ctx := context.Background()
	var ga, gb globals
	a, err := StartVars(cli, ga.apply, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.Set(ctx, "sql_mode", "ANSI_QUOTES"); err != nil {
		t.Fatal(err)
	}
	b, err := StartVars(cli, gb.apply, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if got := gb.get("sql_mode"); got != "ANSI_QUOTES" {
		t.Fatalf("B started with sql_mode %q, want A's ANSI_QUOTES", got)
	}
	for i := range 5 {
		if err := b.Set(ctx, "max_connections", fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "A to take B's last max_connections", func() bool {
		return ga.get("max_connections") == "4" && gb.get("max_connections") == "4"
	})
}

// Notify reaches every watcher.
func TestWatch(t *testing.T) {
	cli := testkit.StartEtcdClient(t)
	var n1, n2 atomic.Int32
	w1 := Watch(cli, PrivilegeKey, func() { n1.Add(1) }, nil)
	defer w1.Close()
	w2 := Watch(cli, PrivilegeKey, func() { n2.Add(1) }, nil)
	defer w2.Close()
	// Each reloads once at the start, and once more after the
	// notification (which may come before its watch is set up).
	waitFor(t, "both watchers to load", func() bool { return n1.Load() >= 1 && n2.Load() >= 1 })
	n1.Store(0)
	n2.Store(0)
	if err := Notify(context.Background(), cli, PrivilegeKey); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "both watchers to reload", func() bool { return n1.Load() == 1 && n2.Load() == 1 })
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 5s for %s", what)
		}
	}
}
