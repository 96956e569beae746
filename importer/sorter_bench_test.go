//go:build unix

package importer

import (
	"encoding/binary"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"
)

// BenchmarkSorterIndexEntries sorts the entries of a non-unique index on
// an integer column as ADD INDEX's fast path gives them to a sorter: 't',
// the table ID, "_i", the index ID, the value and the handle (ascending),
// in rows' order; then reads them back in key order, in memory (no
// spill). The values are uniform (few duplicates), or, in "special",
// drawn as sysbench's default distribution draws k (rand_special: 75% of
// them from 1% of the range, so most values repeat many times). ns/pair
// and cpu-ns/pair (the process's CPU time) are per pair.
func BenchmarkSorterIndexEntries(b *testing.B) {
	const n = 250000
	b.Run("uniform", func(b *testing.B) {
		rng := rand.New(rand.NewPCG(1, 2))
		benchSorterIndexEntries(b, n, func() uint64 { return uint64(1 + rng.IntN(4*n)) })
	})
	b.Run("special", func(b *testing.B) {
		rng := rand.New(rand.NewPCG(1, 2))
		benchSorterIndexEntries(b, n, func() uint64 {
			if rng.IntN(100) < 75 {
				return uint64(n/2 + rng.IntN(n/100))
			}
			return uint64(1 + rng.IntN(n))
		})
	})
}

func benchSorterIndexEntries(b *testing.B, n int, value func() uint64) {
	keys := make([][]byte, n)
	for i := range keys {
		k := append([]byte{'t'}, binary.BigEndian.AppendUint64(nil, 1<<63|105)...)
		k = append(k, "_i"...)
		k = binary.BigEndian.AppendUint64(k, 1<<63|2)
		k = append(k, 3)
		k = binary.BigEndian.AppendUint64(k, 1<<63|value())
		k = append(k, 3)
		k = binary.BigEndian.AppendUint64(k, 1<<63|uint64(i+1))
		keys[i] = k
	}
	v := []byte{'0'}
	b.ResetTimer()
	cpu0 := processCPU()
	for range b.N {
		s, err := NewSorter(b.TempDir(), DefaultMemBudget/4)
		if err != nil {
			b.Fatal(err)
		}
		for _, k := range keys {
			if err := s.Add(k, v); err != nil {
				b.Fatal(err)
			}
		}
		m, err := s.Merge()
		if err != nil {
			b.Fatal(err)
		}
		var prev []byte
		for got := 0; ; got++ {
			k, _, ok, err := m.Next()
			if err != nil {
				b.Fatal(err)
			}
			if !ok {
				if got != n {
					b.Fatalf("%d pairs, want %d", got, n)
				}
				break
			}
			if string(k) <= string(prev) {
				b.Fatalf("%x after %x", k, prev)
			}
			prev = append(prev[:0], k...)
		}
		m.Close()
		s.Close()
	}
	b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(b.N)/float64(n), "cpu-ns/pair")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/pair")
}

// processCPU is the CPU time (user and system) the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
