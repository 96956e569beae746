package mvcc

import "bytes"

// batchReader serves a command over many keys: its CFWrite iterators are
// bounded views over one shared engine iterator, so each key costs a seek
// rather than an iterator's creation. It is only for commands that hold
// latches on the keys they read, which therefore do not change while the
// shared iterator's snapshot is in use. The shared iterator is made at the
// first CFWrite read: a command whose checks the write filter answers
// (recent.go) makes none.
type batchReader struct {
	Reader
	shared EngineIter
}

func newBatchReader(r Reader) (*batchReader, error) {
	return &batchReader{Reader: r}, nil
}

func (b *batchReader) close() error {
	if b.shared == nil {
		return nil
	}
	return b.shared.Close()
}

// NewIter implements Reader: CFWrite gets a view of the shared iterator.
func (b *batchReader) NewIter(cf CF, lower, upper []byte) (EngineIter, error) {
	if cf != CFWrite {
		return b.Reader.NewIter(cf, lower, upper)
	}
	if b.shared == nil {
		it, err := b.Reader.NewIter(CFWrite, nil, nil)
		if err != nil {
			return nil, err
		}
		b.shared = it
	}
	return &boundedView{it: b.shared, lower: lower, upper: upper}, nil
}

// noWritesSince passes the question on to the wrapped Reader.
func (b *batchReader) noWritesSince(encKey []byte, ts uint64) bool {
	return noWritesSince(b.Reader, encKey, ts)
}

// boundedView restricts a shared iterator to [lower, upper). Closing it
// leaves the shared iterator open.
type boundedView struct {
	it           EngineIter
	lower, upper []byte
	valid        bool
}

func (v *boundedView) check(ok bool) bool {
	v.valid = ok && (v.upper == nil || bytes.Compare(v.it.Key(), v.upper) < 0) &&
		(v.lower == nil || bytes.Compare(v.it.Key(), v.lower) >= 0)
	return v.valid
}

func (v *boundedView) First() bool {
	if v.lower == nil {
		return v.check(v.it.First())
	}
	return v.check(v.it.SeekGE(v.lower))
}

func (v *boundedView) Last() bool {
	if v.upper == nil {
		return v.check(v.it.Last())
	}
	return v.check(v.it.SeekLT(v.upper))
}

func (v *boundedView) SeekGE(k []byte) bool {
	if v.lower != nil && bytes.Compare(k, v.lower) < 0 {
		k = v.lower
	}
	return v.check(v.it.SeekGE(k))
}

func (v *boundedView) SeekLT(k []byte) bool {
	if v.upper != nil && bytes.Compare(k, v.upper) > 0 {
		k = v.upper
	}
	return v.check(v.it.SeekLT(k))
}

func (v *boundedView) Next() bool    { return v.valid && v.check(v.it.Next()) }
func (v *boundedView) Prev() bool    { return v.valid && v.check(v.it.Prev()) }
func (v *boundedView) Valid() bool   { return v.valid }
func (v *boundedView) Key() []byte   { return v.it.Key() }
func (v *boundedView) Value() []byte { return v.it.Value() }
func (v *boundedView) Close() error  { return nil }
