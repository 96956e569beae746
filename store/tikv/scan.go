package tikv

import (
	"bytes"
	"context"
	"errors"

	"github.com/pingcap/kvproto/pkg/kvrpcpb"
	"github.com/pingcap/kvproto/pkg/tikvpb"
	"github.com/tikv/client-go/v2/config/retry"
	tikvkv "github.com/tikv/client-go/v2/kv"
	"github.com/tikv/client-go/v2/tikv"
	"github.com/tikv/client-go/v2/tikvrpc"
	"github.com/tikv/client-go/v2/txnkv/txnsnapshot"
)

// A forward scan's first batch is read here with one Scan on the SQL
// node's own read stream to the store (readconn.go), or, when the stream
// gives no answer or the answer has a region error, with one Scan RPC of
// client-go's sender; its pairs are then walked in place, and client-go's
// scanner reads the rest, if any. client-go's scanner makes a backoffer
// and a context for every Next (three allocations per row, 4% of a SQL
// node's CPU under oltp_read_only, whose range queries read 100 rows
// each), even when the whole range came in one response.
//
// Only a clean answer is used: one that covers [start, end) in the region
// the cache names, with no region error, no lock (the response's or a
// pair's) and the snapshot's timestamp still above the GC safe point.
// A region error on the stream (or no answer there) sends the Scan
// again through client-go's sender, which follows the region; anything
// else that is not clean drops the batch, and client-go's scanner reads
// the whole range as before, resolving locks and following region
// changes itself. An error locating the region or sending (its backoff
// spent) is the scan's error, as client-go's scanner returns it, not
// retried again. So this reads what client-go's scanner reads: the same
// request (Scan, client-go's batch size as the limit, the range cut to
// the region, the snapshot's version), and client-go's scanner for
// everything but the common case.

// scanBatch is how many pairs the first Scan asks for: client-go's batch
// size for a snapshot's scans.
const scanBatch = txnsnapshot.DefaultScanBatchSize

// scanMaxBackoff bounds the backoff of the first Scan (ms), as client-go's
// scanner bounds each of its Next calls.
const scanMaxBackoff = 20000

// firstBatch returns an iterator over [start, end) that walks the pairs of
// one Scan RPC and continues, if the range goes on past them, with
// client-go's scanner; or nil, nil if the RPC's answer is not clean (see
// above) and client-go's scanner should read the whole range.
func (sn *snapshot) firstBatch(start, end []byte) (kvIter, error) {
	if sn.store == nil || len(end) == 0 || bytes.Compare(start, end) >= 0 {
		return nil, nil
	}
	if it, err := sn.firstBatchStream(start, end); !errors.Is(err, errNoStreamAnswer) {
		return it, err
	}
	st := sn.store.store
	bo := tikv.NewBackofferWithVars(context.Background(), scanMaxBackoff, sn.store.variables())
	loc, err := st.GetRegionCache().LocateKey(bo, start)
	if err != nil {
		return nil, err
	}
	reqEnd := scanEnd(loc, end)
	req := tikvrpc.NewRequest(tikvrpc.CmdScan, &kvrpcpb.ScanRequest{StartKey: start, EndKey: reqEnd,
		Limit: scanBatch, Version: sn.ts})
	resp, err := st.SendReq(bo, req, loc.Region, tikv.ReadTimeoutMedium)
	if err != nil {
		return nil, err
	}
	if rerr, err := resp.GetRegionError(); err != nil || rerr != nil {
		return nil, nil
	}
	sr, ok := resp.Resp.(*kvrpcpb.ScanResponse)
	if !ok {
		return nil, nil
	}
	return sn.batchIter(loc, start, end, reqEnd, sr)
}

// scanEnd is end, or loc's end if the region ends before it.
func scanEnd(loc *tikv.KeyLocation, end []byte) []byte {
	if len(loc.EndKey) > 0 && bytes.Compare(loc.EndKey, end) < 0 {
		return loc.EndKey
	}
	return end
}

// errNoStreamAnswer is firstBatchStream's: send the Scan the other way.
var errNoStreamAnswer = errors.New("tikv: no scan answer on the read stream")

// firstBatchStream is firstBatch's Scan sent on the store's read stream
// (readconn.go), as directGet sends a get: only when the key's region is
// cached with a leader. Its answer is firstBatch's unless it did not come
// (the stream failed) or has a region error: then errNoStreamAnswer, and
// firstBatch sends the Scan through client-go's sender, which follows
// the region. An answer that is not clean otherwise (a lock or another
// key error, the snapshot below the GC safe point) is nil, nil at once:
// the Scan would get the same, and client-go's scanner reads the range
// and resolves the lock.
func (sn *snapshot) firstBatchStream(start, end []byte) (kvIter, error) {
	s := sn.store
	if s.reads == nil {
		return nil, errNoStreamAnswer
	}
	cache := s.store.GetRegionCache()
	loc := cache.TryLocateKey(start)
	if loc == nil {
		return nil, errNoStreamAnswer
	}
	rpcCtx, err := cache.GetTiKVRPCContext(retry.NewNoopBackoff(context.Background()), loc.Region, tikvkv.ReplicaReadLeader, 0)
	if err != nil || rpcCtx == nil || rpcCtx.ProxyStore != nil {
		return nil, errNoStreamAnswer
	}
	reqEnd := scanEnd(loc, end)
	req := &tikvpb.BatchCommandsRequest_Request{Cmd: &tikvpb.BatchCommandsRequest_Request_Scan{Scan: &kvrpcpb.ScanRequest{
		Context: readContext(rpcCtx, tikv.ReadTimeoutMedium), StartKey: start, EndKey: reqEnd, Limit: scanBatch, Version: sn.ts}}}
	resp, err := s.reads.call(context.Background(), rpcCtx.Addr, req, tikv.ReadTimeoutMedium)
	if err != nil {
		return nil, errNoStreamAnswer
	}
	sr := resp.GetScan()
	if sr == nil || sr.GetRegionError() != nil {
		return nil, errNoStreamAnswer
	}
	// batchIter checks the GC safe point after the answer, as for the
	// Scan sent the other way.
	return sn.batchIter(loc, start, end, reqEnd, sr)
}

// batchIter is firstBatch's iterator over sr's pairs, the answer to a Scan
// of [start, reqEnd) in loc's region; nil, nil if the answer is not clean.
func (sn *snapshot) batchIter(loc *tikv.KeyLocation, start, end, reqEnd []byte, sr *kvrpcpb.ScanResponse) (kvIter, error) {
	if sr.GetError() != nil || sn.store.store.CheckVisibility(sn.ts) != nil {
		return nil, nil
	}
	pairs := sr.GetPairs()
	for _, p := range pairs {
		if p.GetError() != nil || len(p.Key) == 0 || bytes.Compare(p.Key, start) < 0 || bytes.Compare(p.Key, reqEnd) >= 0 {
			return nil, nil
		}
	}
	it := &batchIter{sn: sn, pairs: pairs, end: end}
	switch {
	case len(pairs) >= scanBatch:
		it.rest = tikvkv.NextKey(pairs[len(pairs)-1].Key)
	case !bytes.Equal(reqEnd, end):
		it.rest = loc.EndKey
	}
	if len(pairs) == 0 && it.rest != nil {
		if err := it.next(); err != nil {
			return nil, err
		}
	}
	return it, nil
}

// batchIter walks pairs, then, from rest (if not nil) to end, client-go's
// scanner.
type batchIter struct {
	sn    *snapshot
	pairs []*kvrpcpb.KvPair
	i     int
	end   []byte
	rest  []byte
	more  kvIter // client-go's scanner over [rest, end), once opened
}

func (it *batchIter) Valid() bool {
	if it.more != nil {
		return it.more.Valid()
	}
	return it.i < len(it.pairs)
}

// Key and Value alias the response message (on the read stream, one
// buffer for the whole answer, readdecode.go): callers must copy what
// they keep.
func (it *batchIter) Key() []byte {
	if it.more != nil {
		return it.more.Key()
	}
	return it.pairs[it.i].Key
}

func (it *batchIter) Value() []byte {
	if it.more != nil {
		return it.more.Value()
	}
	return it.pairs[it.i].Value
}

func (it *batchIter) Next() error {
	if it.more != nil {
		return it.more.Next()
	}
	if it.i++; it.i < len(it.pairs) || it.rest == nil {
		return nil
	}
	return it.next()
}

// next opens client-go's scanner over [rest, end), past the pairs.
func (it *batchIter) next() error {
	more, err := it.sn.snap.Iter(it.rest, it.end)
	if err != nil {
		it.pairs, it.i = nil, 0
		return err
	}
	it.more, it.pairs = more, nil
	return nil
}

func (it *batchIter) Close() {
	if it.more != nil {
		it.more.Close()
	}
	it.pairs = nil
}
