package mvcc

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/basalt-db/basalt/kv/kvtest"
	"github.com/cockroachdb/datadriven"
)

// fileEngine is a MemEngine that can ingest "files": batches of records
// registered under a path (addFile), applied at once by Ingest.
type fileEngine struct {
	*MemEngine
	mu    sync.Mutex
	files map[string]*Batch
}

func (e *fileEngine) addFile(path string, b *Batch) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.files == nil {
		e.files = map[string]*Batch{}
	}
	e.files[path] = b
}

// Ingest implements Ingester.
func (e *fileEngine) Ingest(_ context.Context, paths []string) error {
	var all Batch
	e.mu.Lock()
	for _, p := range paths {
		b, ok := e.files[p]
		if !ok {
			e.mu.Unlock()
			return fmt.Errorf("no file %s", p)
		}
		all.Entries = append(all.Entries, b.Entries...)
		delete(e.files, p)
	}
	e.mu.Unlock()
	return e.Write(&all, true)
}

// ingestAt runs the ingest-at command: the input's puts, as PutRecords
// writes them at ts, go into one file, which Store.IngestAt links in.
func (h *harness) ingestAt(t *testing.T, td *datadriven.TestData, ts uint64, start, end []byte) error {
	fe := h.s.eng.(*fileEngine)
	var b Batch
	recs := PutRecords{StartTS: ts, CommitTS: ts}
	for _, line := range strings.Split(strings.TrimSpace(td.Input), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || f[0] != "put" {
			t.Fatalf("%s: bad line %q (want put K V)", td.Pos, line)
		}
		err := recs.Put(kvtest.Parse(t, f[1]), kvtest.Parse(t, f[2]), func(cf CF, k, v []byte) error {
			b.Put(cf, bytes.Clone(k), bytes.Clone(v))
			return nil
		})
		if err != nil {
			return err
		}
	}
	path := fmt.Sprintf("file-%d", ts)
	fe.addFile(path, &b)
	return h.s.IngestAt(context.Background(), ts, start, end, []string{path})
}
