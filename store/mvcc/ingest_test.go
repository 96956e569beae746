package mvcc

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/basalt-db/basalt/kv"
)

// TestPutRecordsAsOnePhaseCommit: the records PutRecords makes for an
// import are byte for byte those a one-phase commit of the same puts at
// the same timestamps writes, short values inline and long ones in
// CFDefault.
func TestPutRecordsAsOnePhaseCommit(t *testing.T) {
	puts := [][2]string{{"a", "short"}, {"b", string(bytes.Repeat([]byte("L"), 300))}, {"c", "x"}}
	const startTS, commitTS = 100, 105
	committed := NewMemEngine()
	req := &PrewriteRequest{StartTS: startTS, Primary: []byte("a")}
	for _, p := range puts {
		req.Mutations = append(req.Mutations, kv.Mutation{Op: kv.OpPut, Key: []byte(p[0]), Value: []byte(p[1])})
	}
	var b Batch
	if err := OnePhaseCommit(committed, &b, req, commitTS); err != nil {
		t.Fatal(err)
	}
	if err := committed.Write(&b, false); err != nil {
		t.Fatal(err)
	}
	imported := NewMemEngine()
	var ib Batch
	recs := PutRecords{StartTS: startTS, CommitTS: commitTS}
	for _, p := range puts {
		err := recs.Put([]byte(p[0]), []byte(p[1]), func(cf CF, k, v []byte) error {
			ib.Put(cf, bytes.Clone(k), bytes.Clone(v))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := imported.Write(&ib, false); err != nil {
		t.Fatal(err)
	}
	for _, cf := range []CF{CFDefault, CFWrite, CFLock} {
		k1, v1 := committed.Dump(cf)
		k2, v2 := imported.Dump(cf)
		if fmt.Sprint(k1, v1) != fmt.Sprint(k2, v2) {
			t.Errorf("%s: committed %q %q, imported %q %q", cf, k1, v1, k2, v2)
		}
	}
	if k, _ := imported.Dump(CFDefault); len(k) != 1 {
		t.Errorf("%d records in CFDefault, want the long value's", len(k))
	}
}
