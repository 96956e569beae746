package mvcc

import (
	"bytes"
	"errors"
)

// batchReader serves a command over many keys: its CFWrite iterators are
// bounded views over one shared engine iterator, so each key costs a seek
// rather than an iterator's creation. It is only for commands that hold
// latches on the keys they read, which therefore do not change while the
// shared iterator's snapshot is in use. The shared iterator is made at the
// first CFWrite read: a command whose checks the write filter answers
// (recent.go) makes none.
//
// With a VersionReader under it, the batch reader is one too: its
// version iterators are views of one shared VersionIter.
type batchReader struct {
	Reader
	shared EngineIter

	versions   VersionIter // the shared VersionIter, made at the first use
	noVersions bool        // the Reader has none
}

func newBatchReader(r Reader) (*batchReader, error) {
	return &batchReader{Reader: r}, nil
}

func (b *batchReader) close() error {
	var err error
	if b.shared != nil {
		err = b.shared.Close()
	}
	if b.versions != nil {
		err = errors.Join(err, b.versions.Close())
	}
	return err
}

// NewVersionIter implements VersionReader: CFWrite gets a view of the
// shared VersionIter, nil if the Reader has none.
func (b *batchReader) NewVersionIter(cf CF) (VersionIter, error) {
	vr, ok := b.Reader.(VersionReader)
	if !ok {
		return nil, nil
	}
	if cf != CFWrite {
		return vr.NewVersionIter(cf)
	}
	if b.versions == nil && !b.noVersions {
		vi, err := vr.NewVersionIter(CFWrite)
		if err != nil {
			return nil, err
		}
		b.versions, b.noVersions = vi, vi == nil
	}
	if b.versions == nil {
		return nil, nil
	}
	return sharedVersions{b.versions}, nil
}

// sharedVersions is a view of a shared VersionIter: closing it leaves the
// shared one open.
type sharedVersions struct{ VersionIter }

func (sharedVersions) Close() error { return nil }

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
