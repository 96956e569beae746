package importer

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/basalt-db/basalt/kv"
)

// LOAD DATA through the importer: a load into an empty table, outside a
// transaction, commits like IMPORT INTO (sorted, ingested at one commit
// ts) but must behave exactly as the same load through a transaction
// would, duplicates and all. Its rows are written by INSERT's code
// (executor.ExecLoad, table.Writer) into a LoadTxn, which answers that
// code's reads of the table from the keys the load wrote so far, as a
// transaction's buffer over the empty table would, and undoes writes
// already handed to the sorter by marking them dead:
//
//   - every pair goes to the sorter with the generation it was written
//     in, uvarint(gen) before its value; a generation starts at every
//     Savepoint and RollbackTo, and INSERT takes a savepoint per row, so
//     a generation holds the writes of at most one row;
//   - the unique keys (the row keys and unique index entries, which
//     INSERT writes with Insert) are kept in a kv.MemBuffer, with their
//     generation (and their value, for REPLACE, which reads the rows it
//     replaces): Get finds them there, and Insert of one already there is
//     a *kv.KeyExistsError, as in a transaction's buffer;
//   - RollbackTo kills the generations written since its savepoint;
//     Delete of a unique key kills the generation that wrote it, which is
//     its whole row (REPLACE removes whole rows, the row key first);
//   - LoadJob.Commit merges the sorted pairs, leaves out those of dead
//     generations, and hands the rest to kv.Importer.
//
// What the merge then finds twice is a bug of this contract, not a
// duplicate of the input (those were resolved as the rows came), and
// fails the load.

var (
	errLoadIter   = errors.New("importer: a load cannot iterate over its table")
	errLoadDelete = errors.New("importer: a load deletes only whole rows it wrote (REPLACE)")
)

// LoadJob is one LOAD DATA into one empty key range: rows are written to
// its Txn, then Commit sorts them and commits the live ones.
type LoadJob struct {
	dir    string
	sorter *Sorter
	txn    *LoadTxn
}

// NewLoadJob returns a LoadJob over the key range [start, end) of the
// table, empty at startTS. outside is what reads of keys outside the
// range go to (a snapshot at startTS: a SET subquery's reads of other
// tables). keepValues keeps the values of the unique keys written, for
// reads that need them (REPLACE finds the rows it replaces); otherwise a
// read of a key written finds it with an empty value. memBudget and
// tempDir are NewJob's.
func NewLoadJob(tempDir string, memBudget int, outside kv.Retriever, startTS uint64, start, end []byte, keepValues bool) (*LoadJob, error) {
	dir, s, err := newSpillingSorter(tempDir, memBudget, "basalt-load-")
	if err != nil {
		return nil, err
	}
	t := &LoadTxn{s: s, outside: outside, startTS: startTS, start: start, end: end,
		keepValues: keepValues, seen: kv.NewMemBuffer()}
	return &LoadJob{dir: dir, sorter: s, txn: t}, nil
}

// Txn is where the rows' keys are written.
func (j *LoadJob) Txn() *LoadTxn { return j.txn }

// Sorter is the job's sorter, for reports.
func (j *LoadJob) Sorter() *Sorter { return j.sorter }

// Commit sorts what was written and hands the live pairs, in key order,
// to imp, to commit as the job's range at one timestamp, which it
// returns. A load that wrote nothing commits nothing (and returns 0). If
// the range is no longer empty (another session wrote into the table),
// it fails with kv.ErrImportTargetNotEmpty, having read nothing, and
// Replay can still commit the load through a transaction. (Each merges
// the sorter's runs anew.)
func (j *LoadJob) Commit(ctx context.Context, imp kv.Importer) (uint64, error) {
	t := j.txn
	if j.sorter.Pairs == 0 {
		return 0, nil
	}
	// Every key lies in the range: LoadTxn.add takes no other.
	return imp.Import(ctx, t.start, t.end, func(_ uint64, put func(key, value []byte) error) error {
		return j.live(ctx, put)
	})
}

// Replay writes the live pairs into txn, the unique keys with Insert and
// the others with Set, as the load's rows would have been written into
// it, for a load whose Commit found the table no longer empty. check
// is called every few thousand pairs (the statement's memory quota).
func (j *LoadJob) Replay(ctx context.Context, txn kv.Txn, check func() error) error {
	n := 0
	return j.live(ctx, func(k, v []byte) error {
		if n++; n&4095 == 0 {
			if err := check(); err != nil {
				return err
			}
		}
		if _, _, ok := j.txn.lookup(k); ok {
			return txn.Insert(k, v)
		}
		return txn.Set(k, v)
	})
}

// live merges the pairs written and passes the live ones to fn, in key
// order.
func (j *LoadJob) live(ctx context.Context, fn func(k, v []byte) error) error {
	m, err := j.sorter.Merge()
	if err != nil {
		return err
	}
	defer m.Close()
	var prev []byte
	any := false
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
		gen, n := binary.Uvarint(v)
		if n <= 0 {
			return fmt.Errorf("importer: a load's pair of key %q has no generation", k)
		}
		if j.txn.dead(gen) {
			continue
		}
		if any && bytes.Equal(k, prev) {
			return fmt.Errorf("importer: key %q written twice by a load", k)
		}
		if err := fn(k, v[n:]); err != nil {
			return err
		}
		prev, any = append(prev[:0], k...), true
	}
}

// Close removes the job's temp files.
func (j *LoadJob) Close() error {
	err := j.sorter.Close()
	return errors.Join(err, os.RemoveAll(j.dir))
}

// LoadTxn is the kv.Txn of a LoadJob (see the top of this file). It
// serves one statement of one goroutine.
type LoadTxn struct {
	s          *Sorter
	outside    kv.Retriever
	startTS    uint64
	start, end []byte
	keepValues bool

	// seen holds the unique keys written, each with its generation
	// (8 bytes, big-endian) and, if keepValues, its value after it; a
	// key deleted since is held as a kv.OpDelete.
	seen *kv.MemBuffer
	// gen is the generation being written; deadGens has a bit set for
	// each dead one.
	gen      uint64
	deadGens []uint64
	// kills lists the generations Delete killed, in order, so that a
	// RollbackTo can bring back those killed since its savepoint.
	kills []uint64
	// killedIn is the generation in which Delete last killed one: only
	// then may it delete keys it does not know (a killed row's
	// non-unique index entries).
	killedIn uint64
	sps      []loadSavepoint
	scratch  []byte
}

type loadSavepoint struct {
	mem   int    // seen's savepoint
	gen   uint64 // the first generation after it
	kills int    // len(kills) when it was taken
}

var _ kv.Txn = (*LoadTxn)(nil)

func (t *LoadTxn) inRange(key []byte) bool {
	return bytes.Compare(key, t.start) >= 0 && bytes.Compare(key, t.end) < 0
}

func (t *LoadTxn) dead(gen uint64) bool {
	i := gen / 64
	return i < uint64(len(t.deadGens)) && t.deadGens[i]&(1<<(gen%64)) != 0
}

// setDead marks gen dead, or alive again; it reports whether that
// changed it.
func (t *LoadTxn) setDead(gen uint64, dead bool) bool {
	i := gen / 64
	for uint64(len(t.deadGens)) <= i {
		t.deadGens = append(t.deadGens, 0)
	}
	was := t.deadGens[i]&(1<<(gen%64)) != 0
	if dead {
		t.deadGens[i] |= 1 << (gen % 64)
	} else {
		t.deadGens[i] &^= 1 << (gen % 64)
	}
	return was != dead
}

// lookup returns what seen holds for a live key: its generation and its
// value (empty unless keepValues).
func (t *LoadTxn) lookup(key []byte) (gen uint64, value []byte, ok bool) {
	v, op, ok := t.seen.Get(key)
	if !ok || op == kv.OpDelete {
		return 0, nil, false
	}
	return binary.BigEndian.Uint64(v), v[8:], true
}

// Get implements kv.Retriever: a key of the table is found if the load
// wrote it (a unique key) and did not delete it since; others are read
// outside.
func (t *LoadTxn) Get(ctx context.Context, key []byte) ([]byte, error) {
	if !t.inRange(key) {
		return t.outside.Get(ctx, key)
	}
	if _, v, ok := t.lookup(key); ok {
		return v, nil
	}
	return nil, kv.ErrNotFound
}

// BatchGet implements kv.Retriever, as Get of each key.
func (t *LoadTxn) BatchGet(ctx context.Context, keys [][]byte) (map[string][]byte, error) {
	out := make(map[string][]byte, len(keys))
	var rest [][]byte
	for _, k := range keys {
		if !t.inRange(k) {
			rest = append(rest, k)
		} else if _, v, ok := t.lookup(k); ok {
			out[string(k)] = v
		}
	}
	if len(rest) > 0 {
		m, err := t.outside.BatchGet(ctx, rest)
		if err != nil {
			return nil, err
		}
		for k, v := range m {
			out[k] = v
		}
	}
	return out, nil
}

// Iter implements kv.Retriever: outside the table only. The load's own
// keys are not held in order until the commit.
func (t *LoadTxn) Iter(start, end []byte) (kv.Iterator, error) {
	if t.overlaps(start, end) {
		return nil, errLoadIter
	}
	return t.outside.Iter(start, end)
}

// IterReverse implements kv.Retriever, as Iter.
func (t *LoadTxn) IterReverse(start, end []byte) (kv.Iterator, error) {
	if t.overlaps(start, end) {
		return nil, errLoadIter
	}
	return t.outside.IterReverse(start, end)
}

// overlaps reports whether [start, end) (nil end: unbounded) meets the
// table's range.
func (t *LoadTxn) overlaps(start, end []byte) bool {
	return bytes.Compare(start, t.end) < 0 && (end == nil || bytes.Compare(end, t.start) > 0)
}

// StartTS implements kv.Txn.
func (t *LoadTxn) StartTS() uint64 { return t.startTS }

// Mode implements kv.Txn: optimistic, so that INSERT writes its unique
// keys with Insert.
func (t *LoadTxn) Mode() kv.Mode { return kv.Optimistic }

// add hands the pair to the sorter, in the current generation.
func (t *LoadTxn) add(key, value []byte) error {
	if !t.inRange(key) {
		return fmt.Errorf("importer: key %q outside the range loaded", key)
	}
	t.scratch = append(binary.AppendUvarint(t.scratch[:0], t.gen), value...)
	return t.s.Add(key, t.scratch)
}

// Set implements kv.Txn: a non-unique index entry, written once.
func (t *LoadTxn) Set(key, value []byte) error {
	if err := kv.CheckEntry(key, value, kv.OpPut); err != nil {
		return err
	}
	return t.add(key, value)
}

// Insert implements kv.Txn: a unique key, which must not be live in the
// load already (a *kv.KeyExistsError, as a transaction's buffer says).
func (t *LoadTxn) Insert(key, value []byte) error {
	if err := kv.CheckEntry(key, value, kv.OpInsert); err != nil {
		return err
	}
	if _, _, ok := t.lookup(key); ok {
		return &kv.KeyExistsError{Key: bytes.Clone(key)}
	}
	if err := t.add(key, value); err != nil {
		return err
	}
	rec := binary.BigEndian.AppendUint64(t.scratch[:0], t.gen)
	if t.keepValues {
		rec = append(rec, value...)
	}
	t.scratch = rec
	t.seen.Set(key, rec, kv.OpInsert)
	return nil
}

// Delete implements kv.Txn: deleting a unique key the load wrote kills
// the generation (the row) that wrote it; a key it does not know may be
// deleted only after such a kill in the same generation (the killed
// row's other entries).
func (t *LoadTxn) Delete(key []byte) error {
	if len(key) == 0 {
		return kv.ErrEmptyKey
	}
	gen, _, ok := t.lookup(key)
	if !ok {
		if t.killedIn == t.gen && len(t.kills) > 0 {
			return nil
		}
		return errLoadDelete
	}
	if gen == t.gen {
		// The row being written now: not a whole earlier row.
		return errLoadDelete
	}
	if t.setDead(gen, true) {
		t.kills = append(t.kills, gen)
	}
	t.killedIn = t.gen
	t.seen.Set(key, nil, kv.OpDelete)
	return nil
}

// Cover implements kv.Txn: nothing to do.
func (t *LoadTxn) Cover([]byte) {}

// Len and Size implement kv.Txn: the unique keys held, which the
// statement's memory quota (tidb_mem_quota_query) counts. The pairs
// themselves are in the sorter, whose memory is bounded apart.
func (t *LoadTxn) Len() int  { return t.seen.Len() }
func (t *LoadTxn) Size() int { return t.seen.Size() }

// Savepoint implements kv.Txn, and starts a generation.
func (t *LoadTxn) Savepoint() int {
	t.gen++
	t.sps = append(t.sps, loadSavepoint{mem: t.seen.Savepoint(), gen: t.gen, kills: len(t.kills)})
	return len(t.sps) - 1
}

// RollbackTo implements kv.Txn: the generations written since sp die,
// those Delete killed since come back, and a new generation starts.
func (t *LoadTxn) RollbackTo(sp int) {
	if sp < 0 || sp >= len(t.sps) {
		return
	}
	p := t.sps[sp]
	for _, g := range t.kills[p.kills:] {
		t.setDead(g, false)
	}
	t.kills = t.kills[:p.kills]
	for g := p.gen; g <= t.gen; g++ {
		t.setDead(g, true)
	}
	t.seen.RollbackTo(p.mem)
	t.sps = t.sps[:sp]
	t.gen++
}

// ReleaseSavepoint implements kv.Txn: the writes since sp stay.
func (t *LoadTxn) ReleaseSavepoint(sp int) {
	if sp < 0 || sp >= len(t.sps) {
		return
	}
	t.seen.ReleaseSavepoint(t.sps[sp].mem)
	t.sps = t.sps[:sp]
}

// LockKeys implements kv.Txn: the store latches the range while the
// load commits, so there is nothing to lock.
func (t *LoadTxn) LockKeys(context.Context, uint64, time.Duration, ...[]byte) error { return nil }

// ReaderAt implements kv.Txn.
func (t *LoadTxn) ReaderAt(uint64) kv.Retriever { return t }

// Commit implements kv.Txn: LoadJob.Commit commits.
func (t *LoadTxn) Commit(context.Context) error { return errCommit }

// Rollback implements kv.Txn.
func (t *LoadTxn) Rollback() error { return nil }
