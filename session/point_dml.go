package session

import (
	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/expression"
	"github.com/basalt-db/basalt/planner"
)

// A pessimistic DML statement reads the latest committed rows: it reads at
// a for-update timestamp and locks what it writes there, and a lock fails
// with a write conflict if its key was committed after that timestamp,
// which runs the statement again at a newer one (dmlInTxn). A statement
// that reads only keys it locks therefore needs no fresh timestamp: if
// every lock succeeds at an older for-update timestamp, nothing it read has
// changed since, and if one fails, the statement runs again at a fresh
// one. This is TiDB's PessimisticRRTxnContextProvider
// ("optimizeForNotFetchingLatestTS") for point-get DML and INSERT without
// SELECT: it saves a round trip to the timestamp oracle per statement.
//
// The point read of an UPDATE or DELETE locks its key before reading it,
// found or not (planner.PointGet.Lock), so a row inserted since the
// transaction's for-update timestamp is a write conflict too, not a row
// missed.

// freshForUpdateTS fetches a for-update timestamp from the oracle and
// makes it the open transaction's newest (s.forUpdateTS). Every statement
// that locks at a fresh timestamp must get it here: a point statement reads
// at s.forUpdateTS, and the locks it already holds (which LockKeys skips)
// were taken at or below it, so what it reads under them is their latest
// committed version.
func (s *Session) freshForUpdateTS() (uint64, error) {
	ts, err := s.d.store.CurrentTS()
	if err == nil {
		s.forUpdateTS = max(s.forUpdateTS, ts)
	}
	return ts, err
}

// pointDML reports whether p reads only the keys it then locks: an UPDATE
// or DELETE through a point read of its primary key, or an INSERT of
// listed values, with no subquery, on a table with no trigger, in a schema
// with no foreign key (whose checks read other tables' ranges).
func (p *dmlPlan) pointDML(is *catalog.InfoSchema) bool {
	if is == nil || is.HasForeignKeys() {
		return false
	}
	switch {
	case p.insert != nil:
		x := p.insert
		if x.Select != nil || len(x.Table.Triggers) > 0 {
			return false
		}
		for _, row := range x.Rows {
			if anySubquery(row) {
				return false
			}
		}
		for _, a := range x.OnDup {
			if expression.HasSubquery(a.Expr) {
				return false
			}
		}
		return true
	case p.update != nil:
		for _, a := range p.update.Set {
			if expression.HasSubquery(a.Expr) {
				return false
			}
		}
		return len(p.update.Table.Triggers) == 0 && pointSource(p.update.Source)
	case p.del != nil:
		return len(p.del.Table.Triggers) == 0 && pointSource(p.del.Source)
	}
	return false
}

// pointSource reports whether a DML statement's source reads one row by
// its handle (an integer or clustered primary key), locking its key before
// it reads it, filtered by conditions without subqueries.
func pointSource(src planner.Plan) bool {
	for {
		switch x := src.(type) {
		case *planner.Selection:
			if expression.HasSubquery(x.Cond) {
				return false
			}
			src = x.Child
		case *planner.PointGet:
			if !x.Lock || x.Index != nil && !(x.Index.Primary && x.Table.CommonHandle) {
				return false
			}
			return !expression.HasSubquery(x.Handle) && !anySubquery(x.Key)
		default:
			return false
		}
	}
}

func anySubquery(es []expression.Expr) bool {
	for _, e := range es {
		if expression.HasSubquery(e) {
			return true
		}
	}
	return false
}
