package session

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/basalt-db/basalt/store/local"
)

// TestPinShards: a schema change waits for a pin of any connection,
// whatever shard it falls in, while other connections pin and unpin, and
// goes on once that pin is released; oldestInUse sees pins in every shard.
func TestPinShards(t *testing.T) {
	st, err := local.Open(t.TempDir(), local.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	d, err := Open(st, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	const held = 3
	is, err := d.pinSchema(held)
	if err != nil {
		t.Fatal(err)
	}
	v := is.Version
	if got := d.oldestInUse(); got != v {
		t.Fatalf("oldestInUse = %d, want %d", got, v)
	}
	done := make(chan error, 1)
	go func() { done <- d.waitLocalVersion(context.Background(), v+1) }()
	// Other connections, in every shard (the held one too), come and go.
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 2000 {
				conn := uint32(g*2000 + i + 100)
				is, err := d.pinSchema(conn)
				if err != nil {
					t.Error(err)
					return
				}
				d.unpin(is, conn)
			}
		})
	}
	wg.Wait()
	select {
	case err := <-done:
		t.Fatalf("the wait for version %d ended (%v) with connection %d still pinning %d", v+1, err, held, v)
	case <-time.After(200 * time.Millisecond):
	}
	d.unpin(is, held)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the wait did not end after the last pin of the older version went")
	}
	if got := d.oldestInUse(); got < 1<<62 {
		t.Fatalf("oldestInUse = %d with nothing pinned", got)
	}
}
