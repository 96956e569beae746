package executor

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/store/local"
	"github.com/basalt-db/basalt/tablecodec"
	"github.com/basalt-db/basalt/types"
)

// TestAnalyzeIndexSampled: an index of more entries than
// AnalyzeSampleSize gets its exact NDV and NULL count, and a histogram
// from the sample that is scaled to the entry count and whose bucket
// bounds lie near the true quantiles.
func TestAnalyzeIndexSampled(t *testing.T) {
	defer func(n int) { AnalyzeSampleSize = n }(AnalyzeSampleSize)
	AnalyzeSampleSize = 1000
	st, err := local.Open(t.TempDir(), local.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tbl := &catalog.TableInfo{ID: 100}
	ix := &catalog.IndexInfo{ID: 1, Columns: []catalog.IndexColumn{{Offset: 0}}}
	// 20000 entries: values 0..1999 ten times each, and 500 NULLs.
	const rows, distinct, nulls = 20000, 2000, 500
	txn, err := st.Begin(kv.TxnOptions{Mode: kv.Optimistic})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for h := range rows + nulls {
		v := types.Null
		if h < rows {
			v = types.NewInt(int64(r.IntN(distinct)))
			if h < distinct {
				v = types.NewInt(int64(h)) // each value at least once
			}
		}
		key, err := tablecodec.IndexKey(tbl.ID, ix.ID, []types.Datum{v}, tablecodec.IntHandle(int64(h)), true)
		if err != nil {
			t.Fatal(err)
		}
		if err := txn.Set(key, tablecodec.IndexNoValue); err != nil {
			t.Fatal(err)
		}
	}
	if err := txn.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	ts, err := st.CurrentTS()
	if err != nil {
		t.Fatal(err)
	}
	cs, err := analyzeIndex(context.Background(), st.Snapshot(ts), tbl, ix, 10)
	if err != nil {
		t.Fatal(err)
	}
	if cs.NDV != distinct || cs.NullCount != nulls {
		t.Errorf("NDV %d, NULLs %d; want %d, %d", cs.NDV, cs.NullCount, distinct, nulls)
	}
	b := cs.Hist.Buckets
	if len(b) == 0 || len(b) > 10 {
		t.Fatalf("%d buckets", len(b))
	}
	if last := b[len(b)-1].Count; last < rows-2 || last > rows+2 {
		t.Errorf("the histogram counts %d entries, want %d", last, rows)
	}
	// Built from the sample: a bucket holds at most a tenth of it, so
	// at most 100 distinct values (from every entry it would hold 200).
	for _, bk := range b {
		if bk.NDV > 100 {
			t.Errorf("a bucket of %d values: the histogram was not built from the sample", bk.NDV)
		}
	}
	// The bucket ending near the k-th tenth of the entries has an upper
	// bound near the k-th tenth of the values (they are uniform).
	for _, bk := range b[:len(b)-1] {
		_, d, err := tablecodec.DecodeKeyDatum(bk.Upper)
		if err != nil {
			t.Fatal(err)
		}
		want := float64(bk.Count) / rows * distinct
		if got := float64(d.Int()); got < want-150 || got > want+150 {
			t.Errorf("a bucket of cumulative count %d ends at %v, want about %.0f", bk.Count, got, want)
		}
	}
}
