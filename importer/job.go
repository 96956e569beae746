package importer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/basalt-db/basalt/kv"
)

var (
	errDelete = errors.New("importer: an import deletes nothing")
	errCommit = errors.New("importer: the collector is committed by Job.Commit")
)

// DuplicateKeyError says the input holds two rows with the same primary
// key or unique index values: Key is the row or index key written twice.
type DuplicateKeyError struct {
	Key []byte
}

func (e *DuplicateKeyError) Error() string {
	return fmt.Sprintf("importer: duplicate key %q in the input", e.Key)
}

// DefaultMemBudget is the sorter's memory when the caller gives none.
const DefaultMemBudget = 256 << 20

// Job is one import into one key range: rows are written to its
// Collector, then Commit sorts, checks and commits them.
type Job struct {
	dir    string
	sorter *Sorter
	coll   *Collector
	// Rows is set by the caller, for reports.
	Rows uint64
}

// NewJob returns a Job whose sorter keeps at most memBudget bytes in
// memory (DefaultMemBudget if <= 0) and spills to a new directory under
// tempDir (os.TempDir() if ""). startTS is what its Collector reports as
// its start ts.
func NewJob(tempDir string, memBudget int, startTS uint64) (*Job, error) {
	dir, s, err := newSpillingSorter(tempDir, memBudget, "basalt-import-")
	if err != nil {
		return nil, err
	}
	return &Job{dir: dir, sorter: s, coll: &Collector{s: s, startTS: startTS}}, nil
}

// newSpillingSorter makes a Sorter keeping at most memBudget bytes in
// memory (DefaultMemBudget if <= 0) and spilling to a new directory,
// named from prefix, under tempDir (os.TempDir() if ""). The caller
// removes dir once the sorter is closed.
func newSpillingSorter(tempDir string, memBudget int, prefix string) (dir string, s *Sorter, err error) {
	if memBudget <= 0 {
		memBudget = DefaultMemBudget
	}
	if tempDir == "" {
		tempDir = os.TempDir()
	}
	if err := os.MkdirAll(tempDir, 0o755); err != nil {
		return "", nil, err
	}
	dir, err = os.MkdirTemp(tempDir, prefix)
	if err != nil {
		return "", nil, err
	}
	s, err = NewSorter(dir, memBudget)
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return dir, s, nil
}

// Txn is where the rows' keys are written.
func (j *Job) Txn() *Collector { return j.coll }

// Sorter is the job's sorter, for reports.
func (j *Job) Sorter() *Sorter { return j.sorter }

// Commit sorts what was collected and hands it, in key order, to imp, to
// commit as [start, end) at one timestamp, which it returns. Every key
// must lie in the range. Two pairs with one key fail it with a
// *DuplicateKeyError, and nothing is committed.
func (j *Job) Commit(ctx context.Context, imp kv.Importer, start, end []byte) (uint64, error) {
	m, err := j.sorter.Merge()
	if err != nil {
		return 0, err
	}
	defer m.Close()
	return imp.Import(ctx, start, end, func(_ uint64, put func(key, value []byte) error) error {
		var prev []byte
		for i := 0; ; i++ {
			if i&4095 == 4095 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			k, v, ok, err := m.Next()
			if err != nil || !ok {
				return err
			}
			if i > 0 && bytes.Equal(k, prev) {
				return &DuplicateKeyError{Key: bytes.Clone(k)}
			}
			if bytes.Compare(k, start) < 0 || bytes.Compare(k, end) >= 0 {
				return fmt.Errorf("importer: key %q outside the range imported", k)
			}
			if err := put(k, v); err != nil {
				return err
			}
			prev = append(prev[:0], k...)
		}
	})
}

// Close removes the job's temp files.
func (j *Job) Close() error {
	err := j.sorter.Close()
	return errors.Join(err, os.RemoveAll(j.dir))
}
