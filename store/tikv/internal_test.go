package tikv

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/basalt-db/basalt/kv"
	pingcaperr "github.com/pingcap/errors"
	"github.com/pingcap/kvproto/pkg/kvrpcpb"
	tikvconfig "github.com/tikv/client-go/v2/config"
	tikverr "github.com/tikv/client-go/v2/error"
)

// client-go's errors, wrapped as client-go returns them, become kv's.
func TestMapErr(t *testing.T) {
	for _, tc := range []struct {
		in   error
		want error
	}{
		{pingcaperr.WithStack(tikverr.NewErrPDServerTimeout("")), kv.ErrPDTimeout},
		{pingcaperr.WithStack(tikverr.ErrTiKVServerTimeout), kv.ErrStoreTimeout},
		{pingcaperr.WithStack(tikverr.ErrRegionUnavailable), kv.ErrRegionUnavailable},
		{pingcaperr.WithStack(tikverr.ErrLockWaitTimeout), kv.ErrLockWaitTimeout},
		{pingcaperr.WithStack(tikverr.ErrLockAcquireFailAndNoWaitSet), kv.ErrLockWaitTimeout},
		{pingcaperr.WithStack(&tikverr.ErrWriteConflict{WriteConflict: &kvrpcpb.WriteConflict{Key: []byte("k")}}), kv.ErrWriteConflict},
		{pingcaperr.WithStack(&tikverr.ErrDeadlock{Deadlock: &kvrpcpb.Deadlock{LockKey: []byte("k")}}), kv.ErrDeadlock},
		{pingcaperr.WithStack(&tikverr.ErrKeyExist{AlreadyExist: &kvrpcpb.AlreadyExist{Key: []byte("k")}}), kv.ErrKeyExists},
		{pingcaperr.WithStack(&tikverr.ErrTxnAbortedByGC{TxnStartTS: 1, TxnSafePoint: 2}), kv.ErrGCTooEarly},
	} {
		if got := mapErr(tc.in); !errors.Is(got, tc.want) {
			t.Errorf("mapErr(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
	// 9001's cause: client-go's message.
	var pt *PDTimeoutError
	if got := mapErr(pingcaperr.WithStack(tikverr.NewErrPDServerTimeout("start timestamp may fall behind safe point"))); !errors.As(got, &pt) ||
		pt.Error() != "PD server timeout: start timestamp may fall behind safe point" {
		t.Errorf("mapErr of client-go's PD timeout with a message: %v", got)
	}
	other := errors.New("something else")
	if got := mapErr(other); got != other {
		t.Errorf("mapErr passes other errors through, got %v", got)
	}
}

// The commit protocol's switches reach client-go's transaction.
func TestCommitOptions(t *testing.T) {
	s, err := OpenMock()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, causal := range []bool{false, true} {
		x, err := s.Begin(kv.TxnOptions{Commit: kv.CommitOptions{AsyncCommit: true, OnePC: true, CausalConsistency: causal}})
		if err != nil {
			t.Fatal(err)
		}
		if got := x.(*txn).kt.IsCasualConsistency(); got != causal {
			t.Errorf("causal consistency %v, want %v", got, causal)
		}
		if err := x.Set([]byte("k"), []byte("v")); err != nil {
			t.Fatal(err)
		}
		if err := x.Commit(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// Configure reaches client-go's global configuration.
func TestConfigure(t *testing.T) {
	old := *tikvconfig.GetGlobalConfig()
	defer tikvconfig.StoreGlobalConfig(&old)
	Configure(ClientConfig{GrpcConnectionCount: 2, MaxBatchSize: 7, MaxBatchWaitTime: time.Millisecond,
		BatchWaitSize: 3, BatchPolicy: "positive", RegionCacheTTL: time.Minute, CommitTimeout: 10 * time.Second, AsyncCommitKeysLimit: 64, AsyncCommitKeySizeLimit: 8192})
	got := tikvconfig.GetGlobalConfig().TiKVClient
	if got.GrpcConnectionCount != 2 || got.MaxBatchSize != 7 || got.MaxBatchWaitTime != time.Millisecond ||
		got.RegionCacheTTL != 60 || got.CommitTimeout != "10s" || got.AsyncCommit.KeysLimit != 64 ||
		got.AsyncCommit.TotalKeySizeLimit != 8192 || got.BatchWaitSize != 3 || got.BatchPolicy != "positive" {
		t.Errorf("client-go's [tikv-client] is %+v", got)
	}
}
