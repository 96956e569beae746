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

// bufModel is what a MemBuffer should hold: key → op and value.
type bufModel map[string]Mutation

// checkBuffer compares everything the buffer reports with the model.
func checkBuffer(t *testing.T, b *MemBuffer, m bufModel) {
	t.Helper()
	size := 0
	for k, mu := range m {
		size += len(k) + len(mu.Value)
		v, op, ok := b.Get([]byte(k))
		if !ok || op != mu.Op || !bytes.Equal(v, mu.Value) {
			t.Fatalf("Get(%.20q) = %.20q %v %v, want %.20q %v", k, v, op, ok, mu.Value, mu.Op)
		}
	}
	if _, _, ok := b.Get([]byte("absent")); ok {
		t.Fatal("Get of an absent key found it")
	}
	if b.Len() != len(m) || b.Size() != size {
		t.Fatalf("Len %d Size %d, want %d %d", b.Len(), b.Size(), len(m), size)
	}
	keys := slices.Sorted(maps.Keys(m))
	ms := b.Mutations()
	if len(ms) != len(keys) {
		t.Fatalf("%d mutations, want %d", len(ms), len(keys))
	}
	for i, mu := range ms {
		want := m[keys[i]]
		if string(mu.Key) != keys[i] || mu.Op != want.Op || !bytes.Equal(mu.Value, want.Value) || mu.Covered != want.Covered {
			t.Fatalf("mutation %d = %v %.20q %v, want %.20q %v %v", i, mu.Op, mu.Key, mu.Covered, keys[i], want.Op, want.Covered)
		}
	}
	for _, reverse := range []bool{false, true} {
		var got []string
		for it := b.Iter(nil, nil, reverse); it.Valid(); it.Next() {
			if want := m[it.KeyString()]; it.Op() != want.Op || !bytes.Equal(it.Value(), want.Value) {
				t.Fatalf("iterator at %.20q: %v, want %v", it.Key(), it.Op(), want.Op)
			}
			got = append(got, string(it.Key()))
		}
		want := slices.Clone(keys)
		if reverse {
			slices.Reverse(want)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("reverse=%v: iterated %d keys, want %d", reverse, len(got), len(want))
		}
	}
}

// TestMemBufferArena drives the buffer across its arena's chunk
// boundaries, index growth and compaction with keys and values of every
// size, up to values bigger than a chunk, under savepoints, checking it
// against a model, and checks that slices it handed out never change.
func TestMemBufferArena(t *testing.T) {
	defer func(n int) { compactMin = n }(compactMin)
	compactMin = 64 << 10
	r := rand.New(rand.NewPCG(5, 6))
	b := NewMemBuffer()
	m := bufModel{}
	type mark struct {
		sp    int
		model bufModel
	}
	var marks []mark
	type handed struct{ got, want []byte }
	var out []handed
	val := func() []byte {
		n := 1 + r.IntN(300)
		switch r.IntN(50) {
		case 0:
			if r.IntN(10) == 0 {
				n = maxChunk + r.IntN(maxChunk) // bigger than any chunk
			}
		case 1:
			n = firstChunk + r.IntN(8*firstChunk)
		}
		v := make([]byte, n)
		for i := range min(n, 64) {
			v[i] = byte(r.Uint32())
		}
		return v
	}
	for step := range 6000 {
		k := fmt.Sprintf("key%0*d", 1+r.IntN(40), r.IntN(3000))
		switch op := r.IntN(20); {
		case op < 12:
			v := val()
			o := []Op{OpPut, OpInsert, OpLock}[r.IntN(3)]
			if o == OpLock {
				v = nil
			}
			b.Set([]byte(k), v, o)
			want := Mutation{Op: o, Value: v}
			if old, ok := m[k]; ok {
				switch {
				case o == OpPut && old.Op == OpInsert:
					want.Op = OpInsert
				case o == OpInsert && old.Op == OpDelete:
					want.Op = OpPut
				}
			}
			m[k] = want
		case op < 15:
			b.Set([]byte(k), []byte("ignored"), OpDelete)
			m[k] = Mutation{Op: OpDelete}
		case op == 15 && len(marks) == 0:
			// (Under a savepoint, a rollback keeps a Cover unless it undoes
			// a Set since; TestMemBufferCover checks that.)
			b.Cover([]byte(k))
			if mu, ok := m[k]; ok {
				mu.Covered = true
				m[k] = mu
			}
		case op == 16:
			marks = append(marks, mark{b.Savepoint(), maps.Clone(m)})
		case op == 17 && len(marks) > 0:
			i := r.IntN(len(marks))
			b.RollbackTo(marks[i].sp)
			m, marks = marks[i].model, marks[:i]
		case op == 18 && len(marks) > 0:
			i := r.IntN(len(marks))
			b.ReleaseSavepoint(marks[i].sp)
			marks = marks[:i]
		case op == 19:
			if v, _, ok := b.Get([]byte(k)); ok && len(v) > 0 {
				out = append(out, handed{v, slices.Clone(v)})
			}
			if ms := b.Mutations(); len(ms) > 0 {
				mu := ms[r.IntN(len(ms))]
				out = append(out, handed{mu.Key, slices.Clone(mu.Key)})
			}
		}
		if step%500 == 0 {
			checkBuffer(t, b, m)
		}
	}
	checkBuffer(t, b, m)
	if len(b.arena.chunks) < 10 {
		t.Fatalf("only %d arena chunks: the test did not cross chunk boundaries", len(b.arena.chunks))
	}
	for _, h := range out {
		if !bytes.Equal(h.got, h.want) {
			t.Fatalf("a handed-out slice changed: %.20q, was %.20q", h.got, h.want)
		}
	}
}

// TestMemBufferCompact: overwriting one key over and over keeps the arena
// bounded, and what a savepoint's undo holds survives compaction.
func TestMemBufferCompact(t *testing.T) {
	defer func(n int) { compactMin = n }(compactMin)
	compactMin = 64 << 10
	b := NewMemBuffer()
	v := bytes.Repeat([]byte("x"), 1000)
	b.Set([]byte("k"), []byte("before"), OpPut)
	sp := b.Savepoint()
	b.Set([]byte("k"), v, OpPut)
	b.ReleaseSavepoint(sp) // no undo left
	for range 10000 {
		b.Set([]byte("k"), v, OpPut)
	}
	if b.arena.used > 4*compactMin {
		t.Fatalf("arena of %d bytes for one live key of %d", b.arena.used, len(v))
	}
	// Under a savepoint the old values are live: compaction keeps them.
	kept := []byte("the value before the savepoint")
	b.Set([]byte("k"), kept, OpPut)
	sp = b.Savepoint()
	b.Set([]byte("k"), []byte("under savepoint"), OpPut)
	for i := range 2000 {
		b.Set([]byte(fmt.Sprint("n", i)), v, OpPut)
		b.Set([]byte("k"), v, OpPut)
	}
	b.RollbackTo(sp)
	checkBuffer(t, b, bufModel{"k": {Op: OpPut, Value: kept}})
}

// TestMemBufferSavepoints: many nested savepoints, each adding and
// changing keys, rolled back one by one.
func TestMemBufferSavepoints(t *testing.T) {
	b := NewMemBuffer()
	m := bufModel{}
	var models []bufModel
	var sps []int
	for i := range 1000 {
		sps = append(sps, b.Savepoint())
		models = append(models, maps.Clone(m))
		for j := range 3 {
			k := fmt.Sprintf("k%d", (i*7+j*131)%1500)
			v := []byte(fmt.Sprintf("v%d.%d", i, j))
			b.Set([]byte(k), v, OpPut)
			m[k] = Mutation{Op: OpPut, Value: v}
		}
		if i%3 == 0 {
			// Sort part of it, so that rollbacks find new keys both in
			// the sorted order and after it.
			b.Iter(nil, nil, false)
		}
	}
	checkBuffer(t, b, m)
	for i := len(sps) - 1; i >= 0; i -= 97 {
		b.RollbackTo(sps[i])
		checkBuffer(t, b, models[i])
	}
	b.RollbackTo(0)
	checkBuffer(t, b, bufModel{})
	if b.Len() != 0 || len(b.undo) != 0 || len(b.savepoints) != 0 {
		t.Fatalf("after rolling back everything: %d keys, %d undo, %d savepoints", b.Len(), len(b.undo), len(b.savepoints))
	}
}

// TestMemBufferIterAfterGrowth: an iterator keeps walking the keys present
// when it was taken, with their latest values, while the buffer grows
// (new chunks, a bigger index, a merged sort, compaction) under it.
func TestMemBufferIterAfterGrowth(t *testing.T) {
	defer func(n int) { compactMin = n }(compactMin)
	compactMin = 64 << 10
	b := NewMemBuffer()
	for i := range 100 {
		b.Set([]byte(fmt.Sprintf("k%05d", i*10)), []byte("old"), OpPut)
	}
	it := b.Iter([]byte("k00100"), []byte("k00900"), false)
	rev := b.Iter([]byte("k00100"), []byte("k00900"), true)
	chunks := len(b.arena.chunks)
	for i := range 20000 {
		b.Set([]byte(fmt.Sprintf("k%05d", i)), []byte(fmt.Sprintf("new%d", i)), OpPut)
		if i%1000 == 0 {
			b.Iter(nil, nil, false) // sorts the keys so far
		}
	}
	for range 200 { // enough garbage to compact
		b.Set([]byte("k00500"), bytes.Repeat([]byte("y"), 1000), OpPut)
	}
	b.Set([]byte("k00500"), []byte("last"), OpPut)
	if len(b.arena.chunks) <= chunks {
		t.Fatal("the arena did not grow")
	}
	var got, gotRev []string
	for ; it.Valid(); it.Next() {
		got = append(got, it.KeyString()+"="+string(it.Value()))
	}
	for ; rev.Valid(); rev.Next() {
		gotRev = append(gotRev, string(rev.Key())+"="+string(rev.Value()))
	}
	var want []string
	for i := 10; i < 90; i++ {
		v := fmt.Sprintf("new%d", i*10)
		if i == 50 {
			v = "last"
		}
		want = append(want, fmt.Sprintf("k%05d=%s", i*10, v))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("iterator after growth:\n got %v\nwant %v", got, want)
	}
	slices.Reverse(want)
	if !slices.Equal(gotRev, want) {
		t.Fatalf("reverse iterator after growth:\n got %v\nwant %v", gotRev, want)
	}
}

// TestMemBufferSort: the buffer's order is bytes.Compare's for keys that
// share long prefixes, are prefixes of one another, or end in zero bytes,
// whether sorted at once or merged in batches.
func TestMemBufferSort(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for round := range 50 {
		b := NewMemBuffer()
		prefix := bytes.Repeat([]byte{0}, r.IntN(40))
		want := map[string]bool{}
		for i := range 1 + r.IntN(400) {
			// A shared prefix, one byte, then often the same 20 bytes, so
			// that keys tie on the first 16 bytes after their common
			// prefix, then a tail.
			k := append(slices.Clone(prefix), byte(r.IntN(2)))
			if r.IntN(4) > 0 {
				k = append(k, "twenty shared bytes."...)
			}
			for range r.IntN(20) {
				k = append(k, []byte{0, 1, 0xff}[r.IntN(3)])
			}
			b.Set(k, []byte{'v'}, OpPut)
			want[string(k)] = true
			if round%2 == 1 && i%37 == 0 {
				b.Iter(nil, nil, false) // sort what is there so far
			}
		}
		var got []string
		for it := b.Iter(nil, nil, false); it.Valid(); it.Next() {
			got = append(got, it.KeyString())
		}
		if w := slices.Sorted(maps.Keys(want)); !slices.Equal(got, w) {
			t.Fatalf("round %d: order\n got %q\nwant %q", round, got, w)
		}
	}
}
