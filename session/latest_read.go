package session

import (
	"github.com/basalt-db/basalt/expression"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/planner"
)

// An autocommit SELECT that reads one row by its primary key, and no other
// key, reads the newest committed version of that row rather than the
// version at a fresh timestamp, on a store that can (latestReader): TiDB
// starts such a statement at math.MaxUint64 for the same reason. For one
// key the two reads answer alike: each sees every commit acknowledged
// before the statement began, and a commit racing with the statement may
// be seen or not by either. The timestamp is what is saved: a request to
// PD for every statement. A read of two keys (a unique secondary index's
// entry, then its row; a subquery) keeps its timestamp: the newest
// versions of two keys need not be one snapshot.

// latestReader is a store that reads a key's newest committed version
// without a timestamp (store/tikv).
type latestReader interface {
	LatestSnapshot() kv.Snapshot
}

// latestRead returns where an autocommit SELECT planned as p reads when it
// may read the newest versions, and false when it must take a timestamp
// (readView): inside a transaction, under tidb_snapshot or AS OF, for a
// locking read, or when p may read more than one key.
func (s *Session) latestRead(p planner.Plan, forUpdate bool) (kv.Snapshot, bool) {
	lr, ok := s.d.store.(latestReader)
	if !ok || forUpdate || s.txn != nil || s.past != nil || s.pastTxn != nil || s.deferred || !s.autocommit() {
		return nil, false
	}
	if !readsOneRow(p) {
		return nil, false
	}
	return lr.LatestSnapshot(), true
}

// readsOneRow reports whether p reads the one row key of a point get on the
// primary key and nothing else: projections and selections over a point
// get that does not lock, with no subquery anywhere.
func readsOneRow(p planner.Plan) bool {
	for {
		switch x := p.(type) {
		case *planner.Projection:
			if !plainExprs(x.Exprs...) {
				return false
			}
			p = x.Child
		case *planner.Selection:
			if !plainExprs(x.Cond) {
				return false
			}
			p = x.Child
		case *planner.PointGet:
			if x.Lock {
				return false
			}
			if x.Index == nil {
				return plainExprs(x.Handle)
			}
			if !x.Index.Primary || !x.Table.CommonHandle {
				return false // a unique index: its entry, then the row
			}
			return plainExprs(x.Key...)
		default:
			return false
		}
	}
}

// plainExprs reports whether es read nothing from the store: no subquery.
func plainExprs(es ...expression.Expr) bool {
	for _, e := range es {
		if expression.HasSubquery(e) {
			return false
		}
	}
	return true
}
