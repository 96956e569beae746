package tikv

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/pingcap/kvproto/pkg/errorpb"
	"github.com/pingcap/kvproto/pkg/kvrpcpb"
	"github.com/pingcap/kvproto/pkg/tikvpb"
	"google.golang.org/protobuf/encoding/protowire"
)

// TestUnmarshalBatchResponse: the read stream's decoder reads what
// gogoproto's Unmarshal reads, for scans (pairs with and without
// values, commit ts, a pair's lock, a region error, a key error, none),
// gets and other responses in one message; a scan's keys and values are
// capped, so that appending to one leaves the next as it was; and the
// pairs of a 100-row scan cost a few allocations, not three each.
func TestUnmarshalBatchResponse(t *testing.T) {
	pairs := func(n int) []*kvrpcpb.KvPair {
		var ps []*kvrpcpb.KvPair
		for i := range n {
			ps = append(ps, &kvrpcpb.KvPair{Key: fmt.Appendf(nil, "k%03d", i), Value: fmt.Appendf(nil, "value %d", i), CommitTs: uint64(i)})
		}
		return ps
	}
	scan := func(sr *kvrpcpb.ScanResponse) *tikvpb.BatchCommandsResponse_Response {
		return &tikvpb.BatchCommandsResponse_Response{Cmd: &tikvpb.BatchCommandsResponse_Response_Scan{Scan: sr}}
	}
	msgs := []*tikvpb.BatchCommandsResponse{
		{},
		{Responses: []*tikvpb.BatchCommandsResponse_Response{scan(&kvrpcpb.ScanResponse{Pairs: pairs(100)})}, RequestIds: []uint64{7}},
		{Responses: []*tikvpb.BatchCommandsResponse_Response{
			scan(&kvrpcpb.ScanResponse{}),
			scan(&kvrpcpb.ScanResponse{Pairs: []*kvrpcpb.KvPair{{Key: []byte("a")}, {Key: []byte("b"), Value: []byte{}},
				{Key: []byte("c"), Error: &kvrpcpb.KeyError{Locked: &kvrpcpb.LockInfo{Key: []byte("c"), LockVersion: 9}}}}}),
			scan(&kvrpcpb.ScanResponse{RegionError: &errorpb.Error{Message: "epoch", EpochNotMatch: &errorpb.EpochNotMatch{}}}),
			scan(&kvrpcpb.ScanResponse{Error: &kvrpcpb.KeyError{Retryable: "again"}}),
			{Cmd: &tikvpb.BatchCommandsResponse_Response_Get{Get: &kvrpcpb.GetResponse{Value: []byte("v")}}},
			{Cmd: &tikvpb.BatchCommandsResponse_Response_Get{Get: &kvrpcpb.GetResponse{NotFound: true}}},
			{Cmd: &tikvpb.BatchCommandsResponse_Response_Commit{Commit: &kvrpcpb.CommitResponse{CommitVersion: 5}}},
			scan(&kvrpcpb.ScanResponse{Pairs: pairs(3)}),
		}, RequestIds: []uint64{1, 2, 3, 4, 5, 6, 1 << 40, 8}, TransportLayerLoad: 280, TikvSendTimeNs: 12345,
			HealthFeedback: &kvrpcpb.HealthFeedback{StoreId: 3, FeedbackSeqNo: 4, SlowScore: 1}},
	}
	for i, m := range msgs {
		data, err := m.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		var want, got tikvpb.BatchCommandsResponse
		if err := want.Unmarshal(data); err != nil {
			t.Fatal(err)
		}
		if err := unmarshalBatchResponse(&got, append([]byte(nil), data...)); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if !reflect.DeepEqual(&got, &want) {
			t.Fatalf("message %d: got\n%v\nwant\n%v", i, &got, &want)
		}
	}

	var got tikvpb.BatchCommandsResponse
	data, _ := msgs[1].Marshal()
	if err := unmarshalBatchResponse(&got, data); err != nil {
		t.Fatal(err)
	}
	ps := got.Responses[0].GetScan().GetPairs()
	_ = append(ps[0].Key, 'x')
	_ = append(ps[0].Value, 'x')
	if string(ps[0].Value) != "value 0" || string(ps[1].Key) != "k001" {
		t.Fatalf("after appends to the first pair: %q, %q", ps[0].Value, ps[1].Key)
	}

	allocs := testing.AllocsPerRun(100, func() {
		var m tikvpb.BatchCommandsResponse
		if err := unmarshalBatchResponse(&m, data); err != nil {
			t.Fatal(err)
		}
	})
	gogo := testing.AllocsPerRun(100, func() {
		var m tikvpb.BatchCommandsResponse
		if err := m.Unmarshal(data); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("allocations per 100-row scan response: %v (gogoproto's %v)", allocs, gogo)
	if allocs > 10 {
		t.Fatalf("%v allocations per 100-row scan response, want at most 10", allocs)
	}
}

// TestUnmarshalBatchResponseWireType: a known field with the wrong wire
// type fails the message, as it fails gogoproto's Unmarshal, at the top
// level (fields 1-5), in a response and in a scan's response (fields
// 1-3); skipping it would, for a response, give the ones after it the
// wrong request ids, and drop a scan's region error.
func TestUnmarshalBatchResponseWireType(t *testing.T) {
	varint := func(num protowire.Number) []byte {
		return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), 1)
	}
	bytesField := func(num protowire.Number, v []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), v)
	}
	fixed32 := func(num protowire.Number) []byte {
		return protowire.AppendFixed32(protowire.AppendTag(nil, num, protowire.Fixed32Type), 1)
	}
	scanItem := func(scan []byte) []byte { return bytesField(1, bytesField(2, scan)) }
	cases := map[string][]byte{
		"responses as varint":         varint(1),
		"request ids as fixed32":      fixed32(2),
		"transport load as bytes":     bytesField(3, []byte{1}),
		"health feedback as varint":   varint(4),
		"send time as bytes":          bytesField(5, []byte{1}),
		"scan as varint":              bytesField(1, varint(2)),
		"scan region error as varint": scanItem(varint(1)),
		"scan pairs as varint":        scanItem(varint(2)),
		"scan key error as varint":    scanItem(varint(3)),
	}
	for name, data := range cases {
		var want, got tikvpb.BatchCommandsResponse
		if err := want.Unmarshal(data); err == nil {
			t.Fatalf("%s: gogoproto reads it", name)
		}
		if err := unmarshalBatchResponse(&got, data); err == nil {
			t.Fatalf("%s: read as %v, want an error", name, &got)
		}
	}
	// Unknown fields are skipped, whatever their type, as gogoproto skips them.
	data := append(append(varint(99), scanItem(append(varint(9), bytesField(2, bytesField(2, []byte("k")))...))...), bytesField(2, []byte{7})...)
	var want, got tikvpb.BatchCommandsResponse
	if err := want.Unmarshal(data); err != nil {
		t.Fatal(err)
	}
	if err := unmarshalBatchResponse(&got, data); err != nil {
		t.Fatal(err)
	}
	if len(got.Responses) != 1 || len(got.Responses[0].GetScan().GetPairs()) != 1 || !reflect.DeepEqual(got.RequestIds, want.RequestIds) {
		t.Fatalf("got %v, want %v", &got, &want)
	}
}
