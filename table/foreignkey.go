package table

import (
	"context"
	"errors"
	"strings"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/tablecodec"
	"github.com/basalt-db/basalt/types"
)

// Foreign keys are checked through an index on each side: the parent's
// referenced columns and the child's referencing columns must each lead an
// index (ddl creates the child's when none does, as InnoDB does). A
// lookup is then one range of keys: the entries of that index whose
// leading values are the key's, or, when the index is the clustered
// primary key, the rows themselves.

// FKIndex returns the public index of t whose leading columns are cols,
// in order and whole (no prefix lengths), preferring the primary key and
// then unique indexes; nil if t has none.
func FKIndex(t *catalog.TableInfo, cols []string) *catalog.IndexInfo {
	var best *catalog.IndexInfo
	rank := func(ix *catalog.IndexInfo) int {
		switch {
		case ix.Primary:
			return 0
		case ix.Unique:
			return 1
		}
		return 2
	}
	for _, ix := range t.Indexes {
		if ix.State != catalog.StatePublic || len(ix.Columns) < len(cols) {
			continue
		}
		ok := true
		for i, c := range cols {
			if !strings.EqualFold(ix.Columns[i].Name, c) || ix.Columns[i].Length > 0 {
				ok = false
				break
			}
		}
		if ok && (best == nil || rank(ix) < rank(best)) {
			best = ix
		}
	}
	return best
}

// FKLookup finds the rows of t whose leading columns of ix hold vals (in
// their stored form), reading through r: those a foreign key check or
// action concerns. ix must be FKIndex's answer for the key's columns.
type FKLookup struct {
	T  *catalog.TableInfo
	Ix *catalog.IndexInfo
}

// Handles returns the handles of the matching rows, at most limit of them
// (0: all), in key order.
func (l FKLookup) Handles(ctx context.Context, r kv.Retriever, vals []types.Datum, limit int) ([]tablecodec.Handle, error) {
	t, ix := l.T, l.Ix
	clustered := ix.Primary && (t.PKIsHandle || t.CommonHandle)
	if clustered && t.PKIsHandle {
		v := vals[0]
		h := tablecodec.IntHandle(v.Int())
		if v.Kind() == types.KindUint {
			h = tablecodec.IntHandle(int64(v.Uint()))
		}
		if _, err := r.Get(ctx, tablecodec.RowKey(t.ID, h)); err != nil {
			if errors.Is(err, kv.ErrNotFound) {
				return nil, nil
			}
			return nil, err
		}
		return []tablecodec.Handle{h}, nil
	}
	var prefix []byte
	var err error
	if clustered {
		prefix = tablecodec.RowPrefix(t.ID)
		for _, v := range vals {
			if prefix, err = tablecodec.EncodeKeyDatum(prefix, v); err != nil {
				return nil, err
			}
		}
	} else if prefix, err = tablecodec.IndexKey(t.ID, ix.ID, vals, tablecodec.Handle{}, false); err != nil {
		return nil, err
	}
	it, err := r.Iter(prefix, kv.PrefixEnd(prefix))
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []tablecodec.Handle
	for it.Valid() {
		var h tablecodec.Handle
		switch {
		case clustered:
			_, h, err = tablecodec.DecodeRowKey(it.Key(), true)
		case tablecodec.IndexValueHasHandle(it.Value()):
			h, err = tablecodec.DecodeHandle(it.Value(), t.CommonHandle)
		default:
			_, h, _, err = tablecodec.DecodeIndexKey(it.Key(), len(ix.Columns), t.CommonHandle)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, h)
		if limit > 0 && len(out) >= limit {
			break
		}
		if err := it.Next(); err != nil {
			return nil, err
		}
	}
	return out, nil
}
