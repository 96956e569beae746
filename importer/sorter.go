package importer

import (
	"bufio"
	"bytes"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
)

// Sorter sorts key-value pairs in bounded memory: pairs are kept in a
// buffer; a full buffer is sorted and written to a temp file as a run (by
// a goroutine of its own, while the next buffer fills), and Merge merges
// the runs (and the last buffer's pairs) into one stream in key order.
// Equal keys are kept, adjacent, in no particular order. The two buffers
// together hold at most the budget's bytes. A Sorter is not safe for
// concurrent use.
//
// A buffer keeps apart the pairs that arrive in ascending key order (each
// key at or above the last such one: an import's row keys, when the input
// is in primary key order) from the rest, so that only the rest is sorted;
// the two are merged as the run is written.
//
// Run file format, a sequence of pairs in key order:
//
//	uvarint(len(key)) uvarint(len(value)) key value
type Sorter struct {
	dir    string
	budget int
	cur    *buffer
	// spare is a buffer whose spill has finished, kept for reuse.
	spare *buffer
	// spilling is the result of the spill in flight, if any: until it is
	// received, that spill's goroutine owns runs, seq, diskUsed and sizes.
	spilling chan error
	runs     []string
	seq      int
	// Spilled counts the runs written, for tests and reports.
	Spilled int
	// Pairs counts the pairs added.
	Pairs int64
	// DiskQuota, if positive, bounds the bytes of the run files: a spill
	// past it fails with ErrDiskQuota.
	DiskQuota int64
	// diskUsed is the size of the run files now.
	diskUsed int64
	sizes    map[string]int64
}

// ErrDiskQuota: the sorted runs would exceed the Sorter's DiskQuota.
var ErrDiskQuota = errors.New("importer: the sorted data exceeds DISK_QUOTA")

// buffer holds pairs in blocks of bytes, indexed by entries. The blocks
// are outside the Go heap (block.go): they are most of an import's
// memory, and on the heap they would count against the server's soft
// memory limit and make the collector run all the time; they hold no
// pointers, so the collector has nothing to find in them anyway. A
// buffer keeps its blocks when it is reset, for the next pairs, until
// free.
type buffer struct {
	limit  int      // bytes of pairs and entries it may hold
	blocks [][]byte // blocks[:used] hold pairs; each of cap blockSize or more
	used   int
	size   int     // bytes of pairs and entries held
	asc    []entry // pairs in ascending key order, as they came
	rest   []entry // the others, sorted before the spill
}

type entry struct {
	blk, off   uint32
	klen, vlen uint32
	// pfx is the 8 bytes of the key after the prefix that all the keys
	// being sorted share, big-endian (zero-padded): most comparisons of
	// the sort end there.
	pfx uint64
}

// entryOverhead is what a buffered pair costs besides its bytes.
const entryOverhead = 24

// blockSize is the size of a buffer's blocks of bytes.
const blockSize = 4 << 20

// MaxFanIn bounds the runs merged at once: each holds a read buffer.
// More runs are first merged in groups into longer runs.
var MaxFanIn = 64

// runBufSize is the read and write buffer of a run file.
const runBufSize = 256 << 10

// NewSorter returns a Sorter that spills to temp files in dir (created if
// needed) and keeps at most budget bytes of pairs in memory.
func NewSorter(dir string, budget int) (*Sorter, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if budget < 4096 {
		budget = 4096
	}
	s := &Sorter{dir: dir, budget: budget}
	s.cur = s.newBuffer()
	return s, nil
}

func (s *Sorter) newBuffer() *buffer { return &buffer{limit: s.budget / 2} }

func (b *buffer) key(e entry) []byte {
	return b.blocks[e.blk][e.off : e.off+e.klen]
}

func (b *buffer) value(e entry) []byte {
	return b.blocks[e.blk][e.off+e.klen : e.off+e.klen+e.vlen]
}

func (b *buffer) len() int { return len(b.asc) + len(b.rest) }

// add copies the pair in.
func (b *buffer) add(key, value []byte) {
	need := len(key) + len(value)
	n := b.room(b.used, need)
	b.used = n
	blk := b.blocks[n-1]
	e := entry{blk: uint32(n - 1), off: uint32(len(blk)), klen: uint32(len(key)), vlen: uint32(len(value))}
	b.blocks[n-1] = append(append(blk, key...), value...)
	b.size += need + entryOverhead
	if len(b.asc) == 0 || bytes.Compare(key, b.key(b.asc[len(b.asc)-1])) >= 0 {
		b.asc = append(b.asc, e)
	} else {
		b.rest = append(b.rest, e)
	}
}

// room returns the number of blocks in use once the last of the used
// ones has need bytes free: used itself when it has, else used+1, the
// next block (kept when big enough, else made anew) taking the bytes.
func (b *buffer) room(used, need int) int {
	if used > 0 && len(b.blocks[used-1])+need <= cap(b.blocks[used-1]) {
		return used
	}
	switch {
	case used < len(b.blocks) && cap(b.blocks[used]) >= need:
	case used < len(b.blocks):
		freeBlock(b.blocks[used])
		b.blocks[used] = allocBlock(max(min(blockSize, b.limit), need))
	default:
		b.blocks = append(b.blocks, allocBlock(max(min(blockSize, b.limit), need)))
	}
	return used + 1
}

// sort sorts the pairs that did not come in order. Their keys mostly
// share a long prefix (an index's: 't', the table ID, "_i", the index
// ID), so each entry first gets 8 bytes of its key past the prefix common
// to all of them (pfxBytes), and the entries are radix sorted on those
// (sortByPfx); only entries equal there compare whole keys. When the
// pairs in order are few against the rest (an index's entries in rows'
// order), they are sorted with the rest, so that the buffer is one sorted
// list and its merge compares nothing.
func (b *buffer) sort() {
	if len(b.rest) == 0 {
		return
	}
	if len(b.asc)*4 <= len(b.rest) {
		b.rest = append(b.rest, b.asc...)
		b.asc = b.asc[:0]
	}
	first := b.key(b.rest[0])
	common, sameLen := len(first), true
	for _, e := range b.rest[1:] {
		k := b.key(e)
		sameLen = sameLen && len(k) == len(first)
		n := min(common, len(k))
		i := 0
		for i < n && k[i] == first[i] {
			i++
		}
		common = i
	}
	if at, ok := b.pfxBytes(first, common, sameLen); ok {
		for i := range b.rest {
			k := b.key(b.rest[i])
			var p uint64
			for _, j := range at {
				p = p<<8 | uint64(k[j])
			}
			b.rest[i].pfx = p << (8 * (8 - len(at)))
		}
	} else {
		for i := range b.rest {
			var buf [8]byte
			copy(buf[:], b.key(b.rest[i])[common:])
			b.rest[i].pfx = binary.BigEndian.Uint64(buf[:])
		}
	}
	b.sortByPfx(b.rest, 56)
}

// maxPfxScan bounds the bytes past the common prefix that pfxBytes looks
// at.
const maxPfxScan = 64

// pfxBytes returns, for keys of one length, the first (up to) 8
// positions past common, the prefix all keys share, at which some key
// differs from first: an entry's pfx is its key's bytes there. Keys of
// one length compare as their bytes at the positions where any two
// differ, in order; so two pfx that differ order their keys, and when
// the keys differ at 8 positions or fewer, equal pfx are equal keys. An
// index's entries on integers are such keys: past the common prefix, the
// value's and the handle's low bytes vary, their high bytes do not (a
// sysbench k index of 1M rows: 3 and 3 bytes, where the 8 bytes after
// the common prefix hold 3 of the value's, then the handle's constant
// ones, and the entries of equal values then compare whole keys). ok is
// false for keys of different lengths (the pfx is then the 8 bytes past
// common).
func (b *buffer) pfxBytes(first []byte, common int, sameLen bool) (at []int, ok bool) {
	if !sameLen || len(first)-common <= 8 {
		// The 8 bytes past common are all there is.
		return nil, false
	}
	var diff [maxPfxScan]byte
	tail := first[common:min(len(first), common+maxPfxScan)]
	for _, e := range b.rest {
		k := b.key(e)[common:]
		for i, c := range tail {
			diff[i] |= k[i] ^ c
		}
	}
	at = make([]int, 0, 8)
	for i := range tail {
		if diff[i] != 0 {
			if at = append(at, common+i); len(at) == 8 {
				break
			}
		}
	}
	if len(at) < 8 && len(tail) < len(first)-common {
		// Varying bytes may lie past the scanned ones: fill up with the
		// next ones, taken as varying.
		for i := common + len(tail); i < len(first) && len(at) < 8; i++ {
			at = append(at, i)
		}
	}
	return at, true
}

// smallSort is the length under which sortByPfx compares entries instead
// of distributing them.
const smallSort = 48

// sortByPfx sorts ents, whose pfx are equal above bit shift+8, by pfx and
// then key: an in-place most-significant-digit radix sort on the byte of
// pfx at shift (American flag sort: count each digit's entries, then
// swap every entry into its digit's bucket), then each bucket on the next
// byte. Buckets of few entries, and those whose pfx are all equal, are
// sorted by comparisons.
func (b *buffer) sortByPfx(ents []entry, shift int) {
	for len(ents) >= smallSort && shift >= 0 {
		var count [256]int
		for i := range ents {
			count[byte(ents[i].pfx>>shift)]++
		}
		if count[byte(ents[0].pfx>>shift)] == len(ents) {
			shift -= 8 // one digit: nothing to move
			continue
		}
		var next, end [256]int
		n := 0
		for d := range count {
			next[d] = n
			n += count[d]
			end[d] = n
		}
		for d := range next {
			for next[d] < end[d] {
				e := ents[next[d]]
				for {
					to := byte(e.pfx >> shift)
					if int(to) == d {
						break
					}
					ents[next[to]], e = e, ents[next[to]]
					next[to]++
				}
				ents[next[d]] = e
				next[d]++
			}
		}
		lo := 0
		for d := range count {
			if count[d] > 1 {
				b.sortByPfx(ents[lo:lo+count[d]], shift-8)
			}
			lo += count[d]
		}
		return
	}
	slices.SortFunc(ents, func(x, y entry) int {
		switch {
		case x.pfx < y.pfx:
			return -1
		case x.pfx > y.pfx:
			return 1
		}
		return bytes.Compare(b.key(x), b.key(y))
	})
}

// reset empties b, keeping its blocks.
func (b *buffer) reset() {
	for i := range b.blocks {
		b.blocks[i] = b.blocks[i][:0]
	}
	b.used, b.size, b.asc, b.rest = 0, 0, b.asc[:0], b.rest[:0]
}

// free gives b's blocks back; b is empty after.
func (b *buffer) free() {
	for _, blk := range b.blocks {
		freeBlock(blk)
	}
	b.blocks = nil
	b.reset()
}

// Add adds a copy of the pair.
func (s *Sorter) Add(key, value []byte) error {
	need := len(key) + len(value) + entryOverhead
	if s.cur.size+need > s.cur.limit && s.cur.len() > 0 {
		if err := s.spill(); err != nil {
			return err
		}
	}
	s.cur.add(key, value)
	s.Pairs++
	return nil
}

// wait waits for the spill in flight, if any.
func (s *Sorter) wait() error {
	if s.spilling == nil {
		return nil
	}
	err := <-s.spilling
	s.spilling = nil
	return err
}

// spill hands the current buffer to a goroutine that sorts it and writes
// it as a run, once the previous spill is done, and starts the next
// buffer.
func (s *Sorter) spill() error {
	if err := s.wait(); err != nil {
		return err
	}
	full := s.cur
	if s.cur = s.spare; s.cur == nil {
		s.cur = s.newBuffer()
	}
	s.spare = nil
	done := make(chan error, 1)
	s.spilling = done
	go func() {
		full.sort()
		path, err := s.writeRun(full.emit)
		if err == nil {
			s.runs = append(s.runs, path)
			s.Spilled++
			if len(s.runs) >= 2*MaxFanIn {
				err = s.compactRuns()
			}
		}
		full.reset()
		s.spare = full
		done <- err
	}()
	return nil
}

// emit passes b's pairs to fn in key order: its two sorted lists merged.
func (b *buffer) emit(fn func(k, v []byte) error) error {
	i, j := 0, 0
	for i < len(b.asc) || j < len(b.rest) {
		var e entry
		if j == len(b.rest) || i < len(b.asc) && bytes.Compare(b.key(b.asc[i]), b.key(b.rest[j])) <= 0 {
			e, i = b.asc[i], i+1
		} else {
			e, j = b.rest[j], j+1
		}
		if err := fn(b.key(e), b.value(e)); err != nil {
			return err
		}
	}
	return nil
}

// writeRun writes the pairs gen emits as a new run file.
func (s *Sorter) writeRun(gen func(emit func(k, v []byte) error) error) (string, error) {
	s.seq++
	path := filepath.Join(s.dir, fmt.Sprintf("run-%06d", s.seq))
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	w := bufio.NewWriterSize(f, runBufSize)
	var hdr [2 * binary.MaxVarintLen64]byte
	var written int64
	err = gen(func(k, v []byte) error {
		n := binary.PutUvarint(hdr[:], uint64(len(k)))
		n += binary.PutUvarint(hdr[n:], uint64(len(v)))
		written += int64(n + len(k) + len(v))
		if s.DiskQuota > 0 && s.diskUsed+written > s.DiskQuota {
			return fmt.Errorf("%w (%d bytes)", ErrDiskQuota, s.DiskQuota)
		}
		if _, err := w.Write(hdr[:n]); err != nil {
			return err
		}
		if _, err := w.Write(k); err != nil {
			return err
		}
		_, err := w.Write(v)
		return err
	})
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return "", err
	}
	if s.sizes == nil {
		s.sizes = make(map[string]int64)
	}
	s.sizes[path] = written
	s.diskUsed += written
	return path, nil
}

// removeRun removes a run file.
func (s *Sorter) removeRun(path string) error {
	s.diskUsed -= s.sizes[path]
	delete(s.sizes, path)
	err := os.Remove(path)
	if errors.Is(err, os.ErrNotExist) {
		err = nil
	}
	return err
}

// compactRuns merges the oldest MaxFanIn runs into one.
func (s *Sorter) compactRuns() error {
	group := s.runs[:MaxFanIn]
	m, err := s.openMerge(group, false)
	if err != nil {
		return err
	}
	path, err := s.writeRun(func(emit func(k, v []byte) error) error {
		for {
			k, v, ok, err := m.Next()
			if err != nil || !ok {
				return err
			}
			if err := emit(k, v); err != nil {
				return err
			}
		}
	})
	m.Close()
	if err != nil {
		return err
	}
	for _, p := range group {
		s.removeRun(p)
	}
	s.runs = append([]string{path}, s.runs[MaxFanIn:]...)
	return nil
}

// Merge returns the pairs added, in key order. The Sorter takes no more
// pairs after it.
func (s *Sorter) Merge() (*Merger, error) {
	if err := s.wait(); err != nil {
		return nil, err
	}
	for len(s.runs) > MaxFanIn {
		if err := s.compactRuns(); err != nil {
			return nil, err
		}
	}
	s.cur.sort()
	if len(s.cur.asc) == 0 && len(s.cur.rest) >= minRearrange {
		// The spare buffer is idle now, and the budget allows it.
		to := s.spare
		if to == nil {
			to = s.newBuffer()
		}
		s.spare = nil
		s.cur.rearrange(to)
		s.cur.free()
		s.cur = to
	}
	return s.openMerge(s.runs, true)
}

// minRearrange is the number of sorted pairs from which Merge copies them
// in key order before it reads them.
const minRearrange = 4096

// rearrange copies b's pairs, sorted, into the empty buffer to, in their
// order, so that reading them in order reads memory in sequence: the
// sort moved entries only, and the pairs they point to are scattered
// over b's blocks. Its loads are independent of each other (no compare
// waits on them), which lets the processor overlap their cache misses, as
// a merge that compares each pair it reads cannot.
func (b *buffer) rearrange(to *buffer) {
	to.rest = slices.Grow(to.rest[:0], len(b.rest))
	n := to.used
	for _, e := range b.rest {
		n = to.room(n, int(e.klen+e.vlen))
		blk := to.blocks[n-1]
		to.rest = append(to.rest, entry{blk: uint32(n - 1), off: uint32(len(blk)), klen: e.klen, vlen: e.vlen})
		to.blocks[n-1] = append(blk, b.blocks[e.blk][e.off:e.off+e.klen+e.vlen]...)
	}
	to.used, to.size = n, b.size
}

// openMerge opens a merge of the runs at paths, and of the buffer if
// withBuffer.
func (s *Sorter) openMerge(paths []string, withBuffer bool) (*Merger, error) {
	m := &Merger{}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			m.Close()
			return nil, err
		}
		src := &runSource{f: f, r: bufio.NewReaderSize(f, runBufSize)}
		m.files = append(m.files, f)
		if err := m.push(src); err != nil {
			m.Close()
			return nil, err
		}
	}
	if withBuffer {
		for _, ents := range [][]entry{s.cur.asc, s.cur.rest} {
			if err := m.push(&bufSource{b: s.cur, ents: ents}); err != nil {
				m.Close()
				return nil, err
			}
		}
	}
	return m, nil
}

// Close removes the run files.
func (s *Sorter) Close() error {
	errs := []error{s.wait()}
	for _, p := range s.runs {
		errs = append(errs, s.removeRun(p))
	}
	for _, b := range []*buffer{s.cur, s.spare} {
		if b != nil {
			b.free()
		}
	}
	s.runs, s.spare = nil, nil
	return errors.Join(errs...)
}

// source is one sorted input of a merge.
type source interface {
	// next moves to the next pair; false at the end.
	next() (bool, error)
	key() []byte
	value() []byte
}

type runSource struct {
	f    *os.File
	r    *bufio.Reader
	k, v []byte
}

func (r *runSource) next() (bool, error) {
	kl, err := binary.ReadUvarint(r.r)
	if err == io.EOF {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	vl, err := binary.ReadUvarint(r.r)
	if err != nil {
		return false, unexpected(err)
	}
	r.k = slices.Grow(r.k[:0], int(kl))[:kl]
	if _, err := io.ReadFull(r.r, r.k); err != nil {
		return false, unexpected(err)
	}
	r.v = slices.Grow(r.v[:0], int(vl))[:vl]
	if _, err := io.ReadFull(r.r, r.v); err != nil {
		return false, unexpected(err)
	}
	return true, nil
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

func (r *runSource) key() []byte   { return r.k }
func (r *runSource) value() []byte { return r.v }

type bufSource struct {
	b    *buffer
	ents []entry // sorted
	i    int     // 1 + the current entry
}

func (b *bufSource) next() (bool, error) {
	b.i++
	return b.i <= len(b.ents), nil
}
func (b *bufSource) key() []byte   { return b.b.key(b.ents[b.i-1]) }
func (b *bufSource) value() []byte { return b.b.value(b.ents[b.i-1]) }

// Merger yields the pairs of several sorted sources in key order.
type Merger struct {
	h     srcHeap
	files []*os.File
	last  source // the source of the pair returned last, to advance
}

func (m *Merger) push(src source) error {
	ok, err := src.next()
	if err != nil || !ok {
		return err
	}
	heap.Push(&m.h, src)
	return nil
}

// Next returns the next pair; ok is false at the end. The slices are
// valid until the next call.
func (m *Merger) Next() (key, value []byte, ok bool, err error) {
	if m.last != nil {
		ok, err := m.last.next()
		if err != nil {
			return nil, nil, false, err
		}
		if ok {
			heap.Fix(&m.h, 0)
		} else {
			heap.Pop(&m.h)
		}
		m.last = nil
	}
	if len(m.h) == 0 {
		return nil, nil, false, nil
	}
	m.last = m.h[0]
	return m.last.key(), m.last.value(), true, nil
}

// Close closes the run files (the Sorter removes them).
func (m *Merger) Close() {
	for _, f := range m.files {
		f.Close()
	}
	m.files, m.h = nil, nil
}

type srcHeap []source

func (h srcHeap) Len() int           { return len(h) }
func (h srcHeap) Less(i, j int) bool { return bytes.Compare(h[i].key(), h[j].key()) < 0 }
func (h srcHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *srcHeap) Push(x any)        { *h = append(*h, x.(source)) }
func (h *srcHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
