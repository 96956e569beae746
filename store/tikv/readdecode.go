package tikv

import (
	"errors"
	"fmt"

	"github.com/pingcap/kvproto/pkg/errorpb"
	"github.com/pingcap/kvproto/pkg/kvrpcpb"
	"github.com/pingcap/kvproto/pkg/tikvpb"
	"google.golang.org/protobuf/encoding/protowire"
)

// unmarshalBatchResponse is m.Unmarshal(data) for a read stream's answer,
// with its Scan responses' pairs made in one piece: gogoproto's
// generated code allocates every KvPair and copies its key and its value
// into allocations of their own, three per row (4-5% of a SQL node's
// CPU under oltp_read_only, whose range queries read 100 rows each).
// Here the pairs of a scan are one slice, and their keys and values
// share data, which the caller must not reuse (each is capped at its
// length, so that an append copies it). Every other response, and every
// field that is not a pair's key, value or commit ts, is unmarshalled
// by gogoproto's code as before; fields gogoproto does not know are
// skipped, as it skips them, and a known field with the wrong wire type
// is an error, as it is there.
func unmarshalBatchResponse(m *tikvpb.BatchCommandsResponse, data []byte) error {
	*m = tikvpb.BatchCommandsResponse{}
	for len(data) > 0 {
		num, typ, n := protowire.ConsumeTag(data)
		if n < 0 {
			return protowire.ParseError(n)
		}
		data = data[n:]
		switch {
		case num == 1 && typ == protowire.BytesType:
			b, n := protowire.ConsumeBytes(data)
			if n < 0 {
				return protowire.ParseError(n)
			}
			r, err := unmarshalBatchResponseItem(b)
			if err != nil {
				return err
			}
			m.Responses = append(m.Responses, r)
			data = data[n:]
		case num == 2 && typ == protowire.BytesType: // packed request ids
			b, n := protowire.ConsumeBytes(data)
			if n < 0 {
				return protowire.ParseError(n)
			}
			for len(b) > 0 {
				v, k := protowire.ConsumeVarint(b)
				if k < 0 {
					return protowire.ParseError(k)
				}
				m.RequestIds = append(m.RequestIds, v)
				b = b[k:]
			}
			data = data[n:]
		case num == 2 && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(data)
			if n < 0 {
				return protowire.ParseError(n)
			}
			m.RequestIds = append(m.RequestIds, v)
			data = data[n:]
		case (num == 3 || num == 5) && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(data)
			if n < 0 {
				return protowire.ParseError(n)
			}
			if num == 3 {
				m.TransportLayerLoad = v
			} else {
				m.TikvSendTimeNs = v
			}
			data = data[n:]
		case num == 4 && typ == protowire.BytesType:
			b, n := protowire.ConsumeBytes(data)
			if n < 0 {
				return protowire.ParseError(n)
			}
			if m.HealthFeedback == nil {
				m.HealthFeedback = &kvrpcpb.HealthFeedback{}
			}
			if err := m.HealthFeedback.Unmarshal(b); err != nil {
				return err
			}
			data = data[n:]
		case num >= 1 && num <= 5:
			// A known field with the wrong wire type: gogoproto fails too
			// (skipping a response would give the next ones the wrong ids).
			return wrongWireType("BatchCommandsResponse", num, typ)
		default:
			n := protowire.ConsumeFieldValue(num, typ, data)
			if n < 0 {
				return protowire.ParseError(n)
			}
			data = data[n:]
		}
	}
	return nil
}

func wrongWireType(msg string, num protowire.Number, typ protowire.Type) error {
	return fmt.Errorf("tikv: wrong wire type %d for field %d of a %s", typ, num, msg)
}

// unmarshalBatchResponseItem is one response of a batch: a Scan's by
// unmarshalScan, any other by gogoproto's code.
func unmarshalBatchResponseItem(b []byte) (*tikvpb.BatchCommandsResponse_Response, error) {
	r := &tikvpb.BatchCommandsResponse_Response{}
	num, typ, n := protowire.ConsumeTag(b)
	if n > 0 && num == 2 && typ == protowire.BytesType {
		sb, k := protowire.ConsumeBytes(b[n:])
		if k > 0 && n+k == len(b) { // the Scan case and nothing else
			sr, err := unmarshalScan(sb)
			if err != nil {
				return nil, err
			}
			r.Cmd = &tikvpb.BatchCommandsResponse_Response_Scan{Scan: sr}
			return r, nil
		}
	}
	if err := r.Unmarshal(b); err != nil {
		return nil, err
	}
	return r, nil
}

var errScanPair = errors.New("tikv: malformed pair in a scan response")

// unmarshalScan is kvrpcpb.ScanResponse's Unmarshal with the pairs in one
// slice and their keys and values in b.
func unmarshalScan(b []byte) (*kvrpcpb.ScanResponse, error) {
	sr := &kvrpcpb.ScanResponse{}
	pairs := 0
	for rest := b; len(rest) > 0; {
		num, typ, n := protowire.ConsumeField(rest)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		if num == 2 && typ == protowire.BytesType {
			pairs++
		}
		rest = rest[n:]
	}
	slab := make([]kvrpcpb.KvPair, pairs)
	if pairs > 0 {
		sr.Pairs = make([]*kvrpcpb.KvPair, 0, pairs)
	}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		b = b[n:]
		if num >= 1 && num <= 3 && typ != protowire.BytesType {
			return nil, wrongWireType("ScanResponse", num, typ)
		}
		if num < 1 || num > 3 {
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return nil, protowire.ParseError(n)
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		b = b[n:]
		switch num {
		case 1:
			if sr.RegionError == nil {
				sr.RegionError = &errorpb.Error{}
			}
			if err := sr.RegionError.Unmarshal(v); err != nil {
				return nil, err
			}
		case 2:
			p := &slab[len(sr.Pairs)]
			if err := unmarshalPair(p, v); err != nil {
				return nil, err
			}
			sr.Pairs = append(sr.Pairs, p)
		case 3:
			if sr.Error == nil {
				sr.Error = &kvrpcpb.KeyError{}
			}
			if err := sr.Error.Unmarshal(v); err != nil {
				return nil, err
			}
		}
	}
	return sr, nil
}

// unmarshalPair is KvPair's Unmarshal with the key and value left in b.
func unmarshalPair(p *kvrpcpb.KvPair, b []byte) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		switch {
		case num >= 1 && num <= 3 && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return protowire.ParseError(n)
			}
			b = b[n:]
			switch num {
			case 1:
				if p.Error == nil {
					p.Error = &kvrpcpb.KeyError{}
				}
				if err := p.Error.Unmarshal(v); err != nil {
					return err
				}
			case 2:
				p.Key = v[:len(v):len(v)]
			case 3:
				p.Value = v[:len(v):len(v)]
			}
		case num == 4 && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return protowire.ParseError(n)
			}
			p.CommitTs = v
			b = b[n:]
		case num >= 1 && num <= 4:
			return errScanPair
		default:
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return protowire.ParseError(n)
			}
			b = b[n:]
		}
	}
	return nil
}
