package session

import "github.com/basalt-db/basalt/kv"

// Internals the external tests (package session_test) look at.

// TxnSchemaVersion is the schema version the open transaction is pinned
// to; -1 without one.
func (s *Session) TxnSchemaVersion() int64 {
	if s.txnIS == nil {
		return -1
	}
	return s.txnIS.Version
}

// CachedPlanVersion is the schema version of the statement's cached plan;
// -1 when it has none.
func (st *Stmt) CachedPlanVersion() int64 {
	if st.plan == nil {
		return -1
	}
	return st.plan.version
}

// Store is the driver's store.
func (d *Driver) Store() kv.Storage { return d.store }

// NestingBound is nestingBound.
var NestingBound = nestingBound

// CutSelectInto is cutSelectInto, its INTO clauses spread out.
func CutSelectInto(sql string) (cut string, vars map[int][]string, statements int, ok bool) {
	cut, into, ok := cutSelectInto(sql)
	return cut, into.vars, into.statements, ok
}

// SkipQuoted is skipQuoted.
var SkipQuoted = skipQuoted

// LoadIngests is the number of LOAD DATA statements committed through
// the importer.
func (d *Driver) LoadIngests() int64 { return d.loadIngests.Load() }

// TextParseHits is the number of text statements taken from a session's
// templates instead of the parser.
func (d *Driver) TextParseHits() int64 { return d.textParseHits.Load() }

// TextPlanHits is the number of text statements run with their
// template's plan instead of being planned.
func (d *Driver) TextPlanHits() int64 { return d.textPlanHits.Load() }
