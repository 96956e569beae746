package importer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/basalt-db/basalt/kv"
	"github.com/cockroachdb/datadriven"
)

// TestLoadTxn runs the scripts in testdata/load_txn*: a LoadJob over the
// range [a, z) and what its LoadTxn answers, then what it commits. The
// commands:
//
//	new [values]     a new job (values: keep the unique keys' values)
//	ops              the operations of the input, one a line, each
//	                 answered on a line of the output:
//	                   savepoint          (prints its number)
//	                   rollback N | release N
//	                   insert K V | set K V | delete K
//	                   get K              (the value, or not found)
//	commit           what the job hands the importer: K=V a line, in
//	                 order, or the error
//
// Rows of a table are spelt as INSERT writes them in an optimistic
// transaction: a savepoint, the row key and unique entries with insert,
// non-unique entries with set, then release (or rollback).
func TestLoadTxn(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		if !strings.HasPrefix(path[strings.LastIndex(path, "/")+1:], "load_txn") {
			t.Skip()
		}
		var job *LoadJob
		defer func() {
			if job != nil {
				job.Close()
			}
		}()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "new":
				if job != nil {
					job.Close()
				}
				var err error
				job, err = NewLoadJob(t.TempDir(), 4096, emptyRetriever{}, 1, []byte("a"), []byte("z"), d.HasArg("values"))
				if err != nil {
					t.Fatal(err)
				}
				return ""
			case "ops":
				var out strings.Builder
				txn := job.Txn()
				for _, line := range strings.Split(d.Input, "\n") {
					f := strings.Fields(line)
					if len(f) == 0 {
						continue
					}
					var res string
					var err error
					arg := func(i int) []byte {
						if i >= len(f) {
							t.Fatalf("%s: %q needs %d arguments", d.Pos, line, i)
						}
						return []byte(f[i])
					}
					var n int
					switch f[0] {
					case "savepoint":
						res = fmt.Sprint(txn.Savepoint())
					case "rollback":
						fmt.Sscan(f[1], &n)
						txn.RollbackTo(n)
					case "release":
						fmt.Sscan(f[1], &n)
						txn.ReleaseSavepoint(n)
					case "insert":
						err = txn.Insert(arg(1), arg(2))
					case "set":
						err = txn.Set(arg(1), arg(2))
					case "delete":
						err = txn.Delete(arg(1))
					case "get":
						var v []byte
						if v, err = txn.Get(context.Background(), arg(1)); err == nil {
							res = fmt.Sprintf("%q", v)
						}
					default:
						t.Fatalf("%s: unknown operation %q", d.Pos, line)
					}
					switch {
					case errors.Is(err, kv.ErrNotFound):
						res = "not found"
					case errors.Is(err, kv.ErrKeyExists):
						res = "key exists"
					case err != nil:
						res = "error: " + err.Error()
					case res == "":
						res = "ok"
					}
					fmt.Fprintf(&out, "%s: %s\n", line, res)
				}
				return out.String()
			case "commit":
				var imp recordingImporter
				if _, err := job.Commit(context.Background(), &imp); err != nil {
					return "error: " + err.Error() + "\n"
				}
				if imp.out.Len() == 0 {
					return "(nothing)\n"
				}
				return imp.out.String()
			}
			t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
			return ""
		})
	})
}

// recordingImporter is a kv.Importer that writes down what it is given.
type recordingImporter struct{ out strings.Builder }

func (r *recordingImporter) Import(_ context.Context, _, _ []byte, fill func(uint64, func(k, v []byte) error) error) (uint64, error) {
	return 7, fill(7, func(k, v []byte) error {
		fmt.Fprintf(&r.out, "%s=%s\n", k, v)
		return nil
	})
}

// emptyRetriever finds nothing.
type emptyRetriever struct{}

func (emptyRetriever) Get(context.Context, []byte) ([]byte, error) { return nil, kv.ErrNotFound }
func (emptyRetriever) BatchGet(context.Context, [][]byte) (map[string][]byte, error) {
	return map[string][]byte{}, nil
}
func (emptyRetriever) Iter([]byte, []byte) (kv.Iterator, error)        { return emptyIter{}, nil }
func (emptyRetriever) IterReverse([]byte, []byte) (kv.Iterator, error) { return emptyIter{}, nil }
