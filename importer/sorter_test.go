package importer

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
)

// TestSorterSpills sorts many more pairs than a tiny budget holds: the
// sorter must spill several runs (and, with a small fan-in, merge runs
// into longer ones first), and the merge must return every pair once, in
// key order, with a duplicate key as neighbours.
func TestSorterSpills(t *testing.T) {
	defer func(n int) { MaxFanIn = n }(MaxFanIn)
	MaxFanIn = 4
	dir := t.TempDir()
	s, err := NewSorter(dir, 4096)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 5000
	want := make([]string, 0, n+1)
	for _, i := range rng.Perm(n) {
		k := fmt.Sprintf("key-%08d", i)
		want = append(want, k)
		if err := s.Add([]byte(k), []byte("v"+k)); err != nil {
			t.Fatal(err)
		}
	}
	// One key twice.
	want = append(want, "key-00000042")
	if err := s.Add([]byte("key-00000042"), []byte("vkey-00000042")); err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	m, err := s.Merge()
	if err != nil {
		t.Fatal(err)
	}
	if s.Spilled < 10 {
		t.Fatalf("%d runs spilled with a 4 KiB budget; want many", s.Spilled)
	}
	if len(s.runs) > MaxFanIn {
		t.Fatalf("merging %d runs at once, above the fan-in %d", len(s.runs), MaxFanIn)
	}
	var got []string
	for {
		k, v, ok, err := m.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		if !bytes.Equal(v, append([]byte("v"), k...)) {
			t.Fatalf("key %q came with value %q", k, v)
		}
		got = append(got, string(k))
	}
	m.Close()
	if !slices.Equal(got, want) {
		t.Fatalf("merged %d keys, want %d, or out of order", len(got), len(want))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("run files left: %d", len(left))
	}
}

// TestSorterInMemory: what fits the budget is never written to disk.
func TestSorterInMemory(t *testing.T) {
	s, err := NewSorter(t.TempDir(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"c", "a", "b"} {
		if err := s.Add([]byte(k), []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	m, err := s.Merge()
	if err != nil {
		t.Fatal(err)
	}
	var got string
	for {
		k, _, ok, err := m.Next()
		if err != nil || !ok {
			break
		}
		got += string(k)
	}
	if got != "abc" || s.Spilled != 0 {
		t.Fatalf("got %q with %d runs spilled, want abc and none", got, s.Spilled)
	}
}

// TestSorterRadix sorts keys made to meet every case of the radix sort
// (sortByPfx): a long common prefix, keys shorter than it plus 8 bytes
// (their pfx zero-padded, so "ab" and "ab\x00" tie there), many equal
// pfx, duplicates, buckets above and below smallSort, a few keys in
// order first; in memory and spilled. The merge must give them as
// slices.Sort does.
func TestSorterRadix(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, budget := range []int{16 << 20, 64 << 10} {
		s, err := NewSorter(t.TempDir(), budget)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		add := func(k string) {
			want = append(want, k)
			if err := s.Add([]byte(k), []byte("v"+k)); err != nil {
				t.Fatal(err)
			}
		}
		add("prefix-")
		add("prefix-\x00\x00")
		for range 20000 {
			k := []byte("prefix-")
			for range rng.IntN(14) {
				// Few byte values: deep buckets, equal pfx, duplicates.
				k = append(k, byte(rng.IntN(3)), byte(rng.IntN(256)))
			}
			add(string(k))
		}
		m, err := s.Merge()
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(want)
		for i := 0; ; i++ {
			k, v, ok, err := m.Next()
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				if i != len(want) {
					t.Fatalf("budget %d: %d pairs, want %d", budget, i, len(want))
				}
				break
			}
			if string(k) != want[i] || string(v) != "v"+want[i] {
				t.Fatalf("budget %d: pair %d is %q=%q, want %q", budget, i, k, v, want[i])
			}
		}
		m.Close()
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSorterFixedLength sorts keys of one length, whose pfx are their
// bytes at the positions where keys differ (pfxBytes): an index's
// entries on integers (6 varying bytes, some duplicates), keys varying
// at 12 positions between constant ones (the pfx holds the first 8; few
// byte values, so that many tie there), keys varying only past the 64
// bytes pfxBytes scans and at one position before, and equal keys (after
// a larger one, so that they are sorted). The
// merge must give them as slices.Sort does.
func TestSorterFixedLength(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	shapes := []struct {
		name string
		key  func(i int) []byte
	}{
		{"index", func(i int) []byte {
			k := []byte("t\x80\x00\x00\x00\x00\x00\x00\x69_i\x80\x00\x00\x00\x00\x00\x00\x02\x03")
			k = binary.BigEndian.AppendUint64(k, 1<<63|uint64(rng.IntN(5000)))
			return binary.BigEndian.AppendUint64(k, 1<<63|uint64(i))
		}},
		{"12 positions", func(int) []byte {
			k := []byte("prefix-")
			for range 12 {
				k = append(k, 'c', byte(rng.IntN(3)), 'c')
			}
			return k
		}},
		{"past the scan", func(int) []byte {
			k := append([]byte("prefix-"), byte(rng.IntN(2)))
			k = append(k, make([]byte, 63)...) // to the end of the scan
			return append(k, byte(rng.IntN(256)), 'c', byte(rng.IntN(256)))
		}},
		{"equal", func(i int) []byte {
			if i == 0 {
				return []byte("prefix-z-larger-key-of-a-length")
			}
			return []byte("prefix-a-same-key-of-the-length")
		}},
	}
	for _, sh := range shapes {
		name, key := sh.name, sh.key
		s, err := NewSorter(t.TempDir(), 16<<20)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for i := range 10000 {
			k := key(i)
			want = append(want, string(k))
			if err := s.Add(k, []byte("v"+string(k))); err != nil {
				t.Fatal(err)
			}
		}
		m, err := s.Merge()
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(want)
		for i := 0; ; i++ {
			k, v, ok, err := m.Next()
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				if i != len(want) {
					t.Fatalf("%s: %d pairs, want %d", name, i, len(want))
				}
				break
			}
			if string(k) != want[i] || string(v) != "v"+want[i] {
				t.Fatalf("%s: pair %d is %q, want %q", name, i, k, want[i])
			}
		}
		m.Close()
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSorterDiskQuota: runs past DISK_QUOTA fail the sort.
func TestSorterDiskQuota(t *testing.T) {
	s, err := NewSorter(t.TempDir(), 4096)
	if err != nil {
		t.Fatal(err)
	}
	s.DiskQuota = 10000
	defer s.Close()
	for i := 0; ; i++ {
		err := s.Add([]byte(fmt.Sprintf("key-%08d", i)), bytes.Repeat([]byte("x"), 100))
		if errors.Is(err, ErrDiskQuota) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if i > 1000 {
			t.Fatalf("%d pairs of 112 bytes sorted within a quota of 10000 bytes", i)
		}
	}
}

// TestSorterMixedOrder: keys in order (row keys of an input sorted by
// primary key) interleaved with keys in random order (index entries),
// as an import adds them, come out merged in order, in memory and
// across spills.
func TestSorterMixedOrder(t *testing.T) {
	for _, budget := range []int{1 << 20, 8192} {
		s, err := NewSorter(t.TempDir(), budget)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(3, 4))
		var want []string
		for i := 0; i < 3000; i++ {
			for _, k := range []string{fmt.Sprintf("r%06d", i), fmt.Sprintf("i%06d-%d", rng.IntN(1000), i)} {
				want = append(want, k)
				if err := s.Add([]byte(k), []byte(k)); err != nil {
					t.Fatal(err)
				}
			}
		}
		slices.Sort(want)
		m, err := s.Merge()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for {
			k, v, ok, err := m.Next()
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			if !bytes.Equal(k, v) {
				t.Fatalf("key %q with value %q", k, v)
			}
			got = append(got, string(k))
		}
		m.Close()
		s.Close()
		if !slices.Equal(got, want) {
			t.Fatalf("budget %d: %d keys merged, want %d in order", budget, len(got), len(want))
		}
	}
}

// TestCollectorHoldsNothing: what the collector passes to the sorter is
// not counted as a write buffer (the statement's memory quota counts
// txn.Size and txn.Len: an import of 10M rows failed with 8175 when Len
// counted the keys collected).
func TestCollectorHoldsNothing(t *testing.T) {
	j, err := NewJob(t.TempDir(), 4096, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	c := j.Txn()
	for i := 0; i < 1000; i++ {
		if err := c.Set([]byte(fmt.Sprintf("k%06d", i)), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if c.Len() != 0 || c.Size() != 0 {
		t.Fatalf("Len %d, Size %d after 1000 keys: want 0, the keys are in the sorter", c.Len(), c.Size())
	}
	if keys, _ := c.Collected(); keys != 1000 {
		t.Fatalf("Collected %d keys, want 1000", keys)
	}
}
