package kv

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// memIter is a plain sorted-slice Iterator for tests.
type memIter struct {
	keys, vals [][]byte
	pos        int
	reverse    bool
}

func (it *memIter) Valid() bool   { return it.pos >= 0 && it.pos < len(it.keys) }
func (it *memIter) Key() []byte   { return it.keys[it.pos] }
func (it *memIter) Value() []byte { return it.vals[it.pos] }
func (it *memIter) Close()        {}
func (it *memIter) Next() error {
	if it.reverse {
		it.pos--
	} else {
		it.pos++
	}
	return nil
}

// TestMemBufferModel checks the buffer, its savepoints and the union
// iterator against a map model under random operations.
func TestMemBufferModel(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for round := range 200 {
		snapshot := map[string]string{}
		for range r.IntN(20) {
			snapshot[fmt.Sprintf("k%02d", r.IntN(30))] = fmt.Sprintf("s%d", r.IntN(100))
		}
		buf := NewMemBuffer()
		model := maps.Clone(snapshot) // what the txn sees
		type mark struct {
			sp    int
			state map[string]string
		}
		var marks []mark
		for range 60 {
			k := fmt.Sprintf("k%02d", r.IntN(30))
			switch op := r.IntN(10); {
			case op < 5:
				v := fmt.Sprintf("v%d", r.IntN(100))
				buf.Set([]byte(k), []byte(v), OpPut)
				model[k] = v
			case op < 7:
				buf.Set([]byte(k), nil, OpDelete)
				delete(model, k)
			case op == 7:
				marks = append(marks, mark{buf.Savepoint(), maps.Clone(model)})
			case op == 8 && len(marks) > 0:
				i := r.IntN(len(marks))
				buf.RollbackTo(marks[i].sp)
				model = marks[i].state
				marks = marks[:i]
			case op == 9 && len(marks) > 0:
				i := r.IntN(len(marks))
				buf.ReleaseSavepoint(marks[i].sp)
				marks = marks[:i]
			}
		}
		// Union iteration over [lo, hi) in both directions equals the model.
		lo, hi := []byte(fmt.Sprintf("k%02d", r.IntN(15))), []byte(fmt.Sprintf("k%02d", 15+r.IntN(16)))
		for _, reverse := range []bool{false, true} {
			var sk, sv [][]byte
			for _, k := range slices.Sorted(maps.Keys(snapshot)) {
				if InRange([]byte(k), lo, hi) {
					sk, sv = append(sk, []byte(k)), append(sv, []byte(snapshot[k]))
				}
			}
			si := &memIter{keys: sk, vals: sv, reverse: reverse}
			if reverse {
				si.pos = len(sk) - 1
			}
			u, err := NewUnionIter(si, buf.Iter(lo, hi, reverse), reverse)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for u.Valid() {
				got = append(got, string(u.Key())+"="+string(u.Value()))
				u.Next()
			}
			var want []string
			for _, k := range slices.Sorted(maps.Keys(model)) {
				if InRange([]byte(k), lo, hi) {
					want = append(want, k+"="+model[k])
				}
			}
			if reverse {
				slices.Reverse(want)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("round %d reverse=%v [%s,%s):\n got %v\nwant %v", round, reverse, lo, hi, got, want)
			}
		}
		// Mutations are sorted and match the buffer.
		ms := buf.Mutations()
		if !slices.IsSortedFunc(ms, func(a, b Mutation) int { return bytes.Compare(a.Key, b.Key) }) {
			t.Fatal("mutations out of order")
		}
	}
}

// TestMemBufferCover: a covered key stays covered until its next Set, and
// a savepoint rollback restores what it was.
func TestMemBufferCover(t *testing.T) {
	b := NewMemBuffer()
	covered := func() map[string]bool {
		m := map[string]bool{}
		for _, mu := range b.Mutations() {
			m[string(mu.Key)] = mu.Covered
		}
		return m
	}
	b.Set([]byte("a"), []byte("1"), OpPut)
	b.Cover([]byte("a"))
	b.Set([]byte("b"), nil, OpDelete)
	b.Cover([]byte("b"))
	b.Set([]byte("c"), []byte("3"), OpPut)
	b.Cover([]byte("zz")) // absent: nothing happens
	if got := covered(); !got["a"] || !got["b"] || got["c"] || len(got) != 3 {
		t.Fatalf("after Cover: %v", got)
	}
	sp := b.Savepoint()
	b.Set([]byte("a"), []byte("2"), OpPut)
	if got := covered(); got["a"] {
		t.Fatalf("a Set after Cover left the key covered: %v", got)
	}
	b.RollbackTo(sp)
	if got := covered(); !got["a"] {
		t.Fatalf("rollback to the savepoint lost the cover: %v", got)
	}
}
