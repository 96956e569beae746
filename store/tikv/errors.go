package tikv

import (
	"errors"

	"github.com/basalt-db/basalt/kv"
	tikverr "github.com/tikv/client-go/v2/error"
)

// PDTimeoutError is kv.ErrPDTimeout with what PD failed at, for TiDB's
// 9001 text, "PD server timeout: <cause>" (TiDB fills in client-go's
// message, often empty; Basalt says what it waited for where it knows).
type PDTimeoutError struct{ Cause string }

func (e *PDTimeoutError) Error() string { return "PD server timeout: " + e.Cause }

// Unwrap makes errors.Is(err, kv.ErrPDTimeout) hold.
func (e *PDTimeoutError) Unwrap() error { return kv.ErrPDTimeout }

// PDTimeoutCause is the cause, for the SQL layer's message.
func (e *PDTimeoutError) PDTimeoutCause() string { return e.Cause }

// errTSOWait is the timeout of a wait for a timestamp (tsoWait).
var errTSOWait = &PDTimeoutError{Cause: "no timestamp from PD within " + tsoWait.String()}

// mapErr turns client-go's errors for the conditions kv names into kv's
// errors (the SQL layer maps those to MySQL's codes); others pass
// through.
func mapErr(err error) error {
	if err == nil {
		return nil
	}
	var wc *tikverr.ErrWriteConflict
	var dl *tikverr.ErrDeadlock
	var ke *tikverr.ErrKeyExist
	var gc *tikverr.ErrTxnAbortedByGC
	var pd *tikverr.ErrPDServerTimeout
	switch {
	case errors.As(err, &wc):
		return &kv.WriteConflictError{Key: wc.Key, StartTS: wc.StartTs, ConflictStartTS: wc.ConflictTs,
			ConflictCommitTS: wc.ConflictCommitTs}
	case errors.As(err, &dl):
		// The victim's start_ts is not in the error: LockKeys fills it in.
		e := &kv.DeadlockError{Key: dl.LockKey, Holder: dl.LockTs}
		for _, w := range dl.WaitChain {
			e.Cycle = append(e.Cycle, w.Txn)
		}
		return e
	case errors.As(err, &ke):
		return &kv.KeyExistsError{Key: ke.Key}
	case errors.Is(err, tikverr.ErrLockWaitTimeout), errors.Is(err, tikverr.ErrLockAcquireFailAndNoWaitSet):
		return kv.ErrLockWaitTimeout
	case errors.As(err, &gc):
		return &kv.GCTooEarlyError{StartTS: gc.TxnStartTSTime, SafePoint: gc.TxnSafePointTime}
	// client-go gives up with the class of what it waited on (its
	// messages for these are empty or bare).
	case errors.As(err, &pd):
		return &PDTimeoutError{Cause: pd.Error()}
	case errors.Is(err, tikverr.ErrTiKVServerTimeout):
		return kv.ErrStoreTimeout
	case errors.Is(err, tikverr.ErrRegionUnavailable):
		return kv.ErrRegionUnavailable
	}
	return err
}
