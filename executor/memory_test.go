package executor

import (
	"context"
	"errors"
	"testing"

	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/types"
)

// sizedTxn is a kv.Txn whose write buffer has a size the test sets.
type sizedTxn struct {
	kv.Txn
	size, len int
}

func (t *sizedTxn) Size() int { return t.size }
func (t *sizedTxn) Len() int  { return t.len }

func TestMemTrackerQuota(t *testing.T) {
	var m MemTracker
	m.Reset(1000, nil)
	if err := m.Consume(600); err != nil {
		t.Fatal(err)
	}
	if err := m.Consume(400); err != nil {
		t.Fatalf("at the quota: %v", err)
	}
	if err := m.Consume(1); !errors.Is(err, ErrMemQuotaExceeded) {
		t.Fatalf("past the quota: got %v", err)
	}
	m.Release(500)
	if err := m.Consume(100); err != nil {
		t.Fatalf("after a release: %v", err)
	}
	if m.Used() != 601 || m.Peak() != 1001 {
		t.Fatalf("used %d, peak %d; want 601, 1001", m.Used(), m.Peak())
	}

	// No quota, or no tracker: nothing fails.
	m.Reset(0, nil)
	if err := m.Consume(1 << 40); err != nil {
		t.Fatal(err)
	}
	var none *MemTracker
	if err := none.Consume(1 << 40); err != nil || none.Used() != 0 {
		t.Fatal(err)
	}
}

// The write buffer counts by what the statement added to it.
func TestMemTrackerTxn(t *testing.T) {
	txn := &sizedTxn{size: 1 << 20, len: 1000}
	var m MemTracker
	m.Reset(10000, txn) // the transaction's earlier megabyte is not this statement's
	ctx := &Ctx{Context: context.Background(), Mem: &m}
	for i := 0; i < 64; i++ {
		if err := ctx.checkpoint(i); err != nil {
			t.Fatal(err)
		}
	}
	txn.size += 5000
	txn.len += 10 // 5000 + 10*overhead
	if got, want := m.Used(), int64(5000+10*memBufferEntryOverhead); got != want {
		t.Fatalf("used %d, want %d", got, want)
	}
	txn.size += 5000
	// Checked every 64th row only.
	for i := 64; i < 127; i++ {
		if err := ctx.checkpoint(i); err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
	}
	if err := ctx.checkpoint(127); !errors.Is(err, ErrMemQuotaExceeded) {
		t.Fatalf("row 127: got %v, want the quota error", err)
	}
	// A cancelled statement stops at the checkpoint too.
	cctx, cancel := context.WithCancel(context.Background())
	cancel()
	m.Reset(0, nil)
	ctx.Context = cctx
	if err := ctx.checkpoint(63); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: got %v", err)
	}
}

// An operator's account passes bytes on in batches and gives back all it
// took.
func TestMemAcc(t *testing.T) {
	var m MemTracker
	m.Reset(0, nil)
	a := memAcc{t: &m}
	if err := a.add(memBatch - 1); err != nil || m.Used() != 0 {
		t.Fatalf("under a batch: used %d, %v", m.Used(), err)
	}
	if err := a.add(1); err != nil || m.Used() != memBatch {
		t.Fatalf("a batch: used %d, %v", m.Used(), err)
	}
	a.add(10)
	if err := a.flush(); err != nil || m.Used() != memBatch+10 {
		t.Fatalf("flushed: used %d, %v", m.Used(), err)
	}
	a.release()
	if m.Used() != 0 {
		t.Fatalf("released: used %d", m.Used())
	}
}

func TestRowMem(t *testing.T) {
	row := []types.Datum{types.NewInt(1), types.NewString("hello"), types.Null}
	if got, want := rowMem(row), sliceHeader+3*datumSize+5; got != want {
		t.Fatalf("rowMem = %d, want %d", got, want)
	}
}
