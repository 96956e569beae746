package executor

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/table"
	"github.com/basalt-db/basalt/tablecodec"
	"github.com/basalt-db/basalt/types"
)

// ANALYZE TABLE: the statistics the planner estimates with.
//
// Rows are read in full; column statistics come from a uniform sample of
// at most AnalyzeSampleSize of them (reservoir sampling), scaled to the
// row count, with NDV estimated from the sample (GEE) when it is not the
// whole table. Index statistics come from a full scan of each index, whose
// entries arrive sorted: exact NULL counts and NDV, histograms from a
// sample of AnalyzeSampleSize entries. Histograms are equi-depth over memcomparable
// encodings (catalog.Histogram).

// AnalyzeSampleSize bounds the rows column statistics, and the entries
// index histograms, are built from. A variable for the tests.
var AnalyzeSampleSize = 100_000

// DefaultBuckets is the number of histogram buckets ANALYZE builds when
// not told (WITH n BUCKETS), as TiDB's default.
const DefaultBuckets = 256

// Analyze builds the statistics of table t from snap.
func Analyze(ctx context.Context, snap kv.Snapshot, t *catalog.TableInfo, version uint64, buckets int) (*catalog.TableStats, error) {
	if buckets <= 0 {
		buckets = DefaultBuckets
	}
	st := &catalog.TableStats{IndexNDV: map[int64]int64{}, ColumnNDV: map[int64]int64{}, Version: version,
		Columns: map[int64]*catalog.ColumnStats{}, Indexes: map[int64]*catalog.ColumnStats{}}
	samples, err := sampleRows(ctx, snap, t, st)
	if err != nil {
		return nil, err
	}
	st.Sampled = int64(len(samples))
	factor := 1.0
	if st.Sampled > 0 {
		factor = float64(st.RowCount) / float64(st.Sampled)
	}
	for i, col := range t.Columns {
		vals := make([][]byte, 0, len(samples))
		nulls, size := 0, 0
		for _, r := range samples {
			if r[i] == nil {
				nulls++
				continue
			}
			vals = append(vals, r[i])
			size += len(r[i])
		}
		slices.SortFunc(vals, bytes.Compare)
		cs := &catalog.ColumnStats{NullCount: int64(float64(nulls)*factor + 0.5),
			Hist: catalog.BuildHistogram(vals, buckets, factor)}
		if len(vals) > 0 {
			cs.AvgSize = float64(size) / float64(len(vals))
		}
		cs.NDV = estimateNDV(vals, st.Sampled, st.RowCount)
		st.Columns[col.ID] = cs
		st.ColumnNDV[col.ID] = cs.NDV
	}
	for _, ix := range t.Indexes {
		if ix.State != catalog.StatePublic {
			continue
		}
		if ix.Primary && (t.PKIsHandle || t.CommonHandle) {
			// The row keys are this index; its first column stands in.
			cs := st.Columns[t.Columns[ix.Columns[0].Offset].ID]
			if len(ix.Columns) == 1 && cs != nil {
				st.Indexes[ix.ID] = cs
			}
			st.IndexNDV[ix.ID] = st.RowCount
			continue
		}
		cs, err := analyzeIndex(ctx, snap, t, ix, buckets)
		if err != nil {
			return nil, err
		}
		st.Indexes[ix.ID] = cs
		st.IndexNDV[ix.ID] = cs.NDV
	}
	return st, nil
}

// sampleRows reads every row, counting them into st.RowCount, and returns
// a uniform sample of their columns' encodings (nil for NULL).
func sampleRows(ctx context.Context, snap kv.Snapshot, t *catalog.TableInfo, st *catalog.TableStats) ([][][]byte, error) {
	prefix := tablecodec.RowPrefix(t.ID)
	it, err := snap.Iter(prefix, kv.PrefixEnd(prefix))
	if err != nil {
		return nil, err
	}
	defer it.Close()
	dec := table.NewDecoder(t, nil, nil)
	row := make([]types.Datum, len(t.Columns)+1)
	r := rand.New(rand.NewPCG(uint64(t.ID), 1))
	var samples [][][]byte
	for ; it.Valid(); st.RowCount++ {
		if st.RowCount%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		slot := len(samples)
		if slot >= AnalyzeSampleSize {
			slot = int(r.Int64N(st.RowCount + 1))
		}
		if slot < AnalyzeSampleSize {
			_, h, err := tablecodec.DecodeRowKey(it.Key(), t.CommonHandle)
			if err != nil {
				return nil, err
			}
			if err := dec.Decode(h, it.Value(), row); err != nil {
				return nil, err
			}
			enc := make([][]byte, len(t.Columns))
			for i := range t.Columns {
				if row[i].IsNull() {
					continue
				}
				if enc[i], err = tablecodec.EncodeKeyDatum(nil, row[i]); err != nil {
					return nil, err
				}
			}
			if slot == len(samples) {
				samples = append(samples, enc)
			} else {
				samples[slot] = enc
			}
		}
		if err := it.Next(); err != nil {
			return nil, err
		}
	}
	return samples, nil
}

// estimateNDV counts the distinct values of a sorted sample; when the
// sample is not the whole table it scales them with the GEE estimator:
// sqrt(N/n)·f1 + Σ_{j≥2} fj, where fj is the number of values seen j
// times.
func estimateNDV(sorted [][]byte, sampled, rows int64) int64 {
	distinct, once := int64(0), int64(0)
	for i := 0; i < len(sorted); {
		j := i + 1
		for j < len(sorted) && bytes.Equal(sorted[j], sorted[i]) {
			j++
		}
		distinct++
		if j-i == 1 {
			once++
		}
		i = j
	}
	if sampled == 0 || sampled >= rows {
		return distinct
	}
	est := math.Sqrt(float64(rows)/float64(sampled))*float64(once) + float64(distinct-once)
	return min(int64(est+0.5), rows)
}

// analyzeIndex reads an index in full, in order: its NULL count and NDV
// are exact (equal values arrive together), its histogram is built from a
// uniform sample of at most AnalyzeSampleSize of its entries' values
// (without the handle), scaled to the entry count, so that its memory is
// bounded whatever the table's size (it held every entry before: about
// 50 bytes each, 500 MB for 10M rows).
func analyzeIndex(ctx context.Context, snap kv.Snapshot, t *catalog.TableInfo, ix *catalog.IndexInfo, buckets int) (*catalog.ColumnStats, error) {
	prefix := tablecodec.IndexPrefix(t.ID, ix.ID)
	it, err := snap.Iter(prefix, kv.PrefixEnd(prefix))
	if err != nil {
		return nil, err
	}
	defer it.Close()
	cs := &catalog.ColumnStats{}
	r := rand.New(rand.NewPCG(uint64(t.ID), uint64(ix.ID)))
	var (
		sample [][]byte
		prev   []byte // the last non-NULL value, for the NDV
		seen   int64  // non-NULL entries
		size   int
	)
	for n := 0; it.Valid(); n++ {
		if n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		// The entry's values are the key between the prefix and the
		// handle, as the index's key ranges encode them.
		key := it.Key()
		rest := key[len(prefix):]
		var first types.Datum
		for i := range ix.Columns {
			var d types.Datum
			if rest, d, err = tablecodec.DecodeKeyDatum(rest); err != nil {
				return nil, err
			}
			if i == 0 {
				first = d
			}
		}
		if first.IsNull() {
			cs.NullCount++
		} else {
			enc := key[len(prefix) : len(key)-len(rest)]
			size += len(enc)
			if seen == 0 || !bytes.Equal(prev, enc) {
				cs.NDV++
				prev = append(prev[:0], enc...)
			}
			slot := len(sample)
			if slot >= AnalyzeSampleSize {
				slot = int(r.Int64N(seen + 1))
			}
			switch {
			case slot == len(sample):
				sample = append(sample, append([]byte(nil), enc...))
			case slot < AnalyzeSampleSize:
				sample[slot] = append(sample[slot][:0], enc...)
			}
			seen++
		}
		if err := it.Next(); err != nil {
			return nil, err
		}
	}
	if seen > 0 {
		cs.AvgSize = float64(size) / float64(seen)
	}
	factor := 1.0
	if len(sample) > 0 {
		factor = float64(seen) / float64(len(sample))
	}
	slices.SortFunc(sample, bytes.Compare)
	cs.Hist = catalog.BuildHistogram(sample, buckets, factor)
	return cs, nil
}
