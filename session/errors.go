package session

import (
	"context"
	"errors"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/codec"
	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/tablecodec"
	"github.com/basalt-db/basalt/types"
)

// mapError is the one table from internal errors to what the client sees.
// MySQL errors pass through; storage errors get MySQL's codes.
func mapError(err error, is *catalog.InfoSchema) error {
	if err == nil {
		return nil
	}
	var me *errno.Error
	var se *errno.Error
	var ke *kv.KeyExistsError
	var tl *kv.EntryTooLargeError
	var gce *kv.GCTooEarlyError
	switch {
	case errors.As(err, &me):
		return &errno.Error{Code: me.Code, State: me.State, Msg: me.Msg}
	case errors.As(err, &se):
		return se
	case errors.Is(err, kv.ErrDeadlock), errors.Is(err, kv.ErrWriteConflict), errors.Is(err, kv.ErrTxnAborted):
		return &errno.Error{Code: errno.ErLockDeadlock, State: "40001", Msg: "Deadlock found when trying to get lock; try restarting transaction"}
	case errors.Is(err, kv.ErrLockWaitTimeout):
		return &errno.Error{Code: errno.ErLockWaitTimeout, State: "HY000", Msg: "Lock wait timeout exceeded; try restarting transaction"}
	case errors.As(err, &ke):
		return dupKeyError(ke.Key, is)
	case errors.As(err, &tl):
		return &errno.Error{Code: 8025, State: "HY000", Msg: "entry too large, the max entry size is 6291456, the size of data is " + itoa(tl.Size)}
	case errors.Is(err, catalog.ErrSchemaChanged):
		// TiDB's ErrInfoSchemaChanged; clients retry the transaction.
		return &errno.Error{Code: 8028, State: "HY000", Msg: "Information schema is changed during the execution of the statement(for example, table definition may be updated by other DDL ran in parallel). If you see this error often, try increasing `tidb_max_delta_schema_count`. [try again later]"}
	case errors.Is(err, catalog.ErrSchemaOutdated):
		// TiDB's ErrInfoSchemaExpired: this SQL node lost its schema lease.
		return &errno.Error{Code: 8027, State: "HY000", Msg: "Information schema is out of date: schema failed to update in 1 lease, please make sure TiDB can connect to TiKV"}
	case errors.As(err, &gce):
		// TiDB's ErrGCTooEarly: the snapshot is older than the GC safe point.
		return &errno.Error{Code: errno.ErGCTooEarly, State: "HY000", Msg: gce.Error()}
	case errors.Is(err, kv.ErrPDTimeout):
		// TiDB's text: "PD server timeout: " and what failed, if known.
		cause := ""
		var c interface{ PDTimeoutCause() string }
		if errors.As(err, &c) {
			cause = c.PDTimeoutCause()
		}
		return &errno.Error{Code: errno.ErPDServerTimeout, State: "HY000", Msg: "PD server timeout: " + cause}
	case errors.Is(err, kv.ErrStoreTimeout):
		return &errno.Error{Code: errno.ErTiKVServerTimeout, State: "HY000", Msg: "TiKV server timeout"}
	case errors.Is(err, kv.ErrRegionUnavailable):
		return &errno.Error{Code: errno.ErRegionUnavailable, State: "HY000", Msg: "Region is unavailable"}
	case errors.Is(err, context.Canceled):
		return errno.QueryInterrupted()
	case errors.Is(err, context.DeadlineExceeded):
		return &errno.Error{Code: 3024, State: "HY000", Msg: "Query execution was interrupted, maximum statement execution time exceeded"}
	}
	return &errno.Error{Code: errno.ErUnknown, State: "HY000", Msg: err.Error()}
}

func itoa(n int) string { return types.NewInt(int64(n)).String() }

// dupKeyError describes a key that a commit found already present.
func dupKeyError(key []byte, is *catalog.InfoSchema) error {
	msg := func(entry, t, ix string) error {
		return &errno.Error{Code: errno.ErDupEntry, State: "23000", Msg: "Duplicate entry '" + entry + "' for key '" + t + "." + ix + "'"}
	}
	if is == nil || len(key) < 11 {
		return msg("?", "?", "?")
	}
	_, tid, err := codec.DecodeInt(key[1:9])
	t := is.TableByID(tid)
	if err != nil || key[0] != 't' {
		t = nil
	}
	if t == nil {
		return msg("?", "?", "?")
	}
	if _, h, err := tablecodec.DecodeRowKey(key, t.CommonHandle); err == nil {
		if pk := t.PrimaryKey(); pk != nil && t.CommonHandle {
			rest, s := h.Common, ""
			for i := range pk.Columns {
				var d types.Datum
				if rest, d, err = tablecodec.DecodeKeyDatum(rest); err != nil {
					break
				}
				if i > 0 {
					s += "-"
				}
				s += d.String()
			}
			return msg(s, t.Name, "PRIMARY")
		}
		return msg(types.NewInt(h.Int).String(), t.Name, "PRIMARY")
	}
	for _, ix := range t.Indexes {
		prefix := tablecodec.IndexPrefix(t.ID, ix.ID)
		if len(key) >= len(prefix) && string(key[:len(prefix)]) == string(prefix) {
			vals, _, _, _ := tablecodec.DecodeIndexKey(key, len(ix.Columns), t.CommonHandle)
			s := ""
			for i, v := range vals {
				if i > 0 {
					s += "-"
				}
				s += v.String()
			}
			return msg(s, t.Name, ix.Name)
		}
	}
	return msg("?", t.Name, "?")
}
