package kv

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"testing"
)

// The benchmarks here fill a MemBuffer as a bulk load of sysbench's
// sbtest table does: per row one row key (t{table}_r{handle}, 19 bytes)
// with a ~200-byte value and one k_1 index entry (t{table}_i{index}{k}
// {handle}, 37 bytes) with a 1-byte value, in handle order for the rows
// and random order for the index. BASALT_MEMBUF_ROWS changes the row
// count (default 1,000,000).
//
// Besides ns/op, B/op and allocs/op they report gc-ms/op, the CPU time
// the Go collector spent per op (runtime/metrics /cpu/classes/gc/total),
// and heap-MB, the live heap with a filled buffer.

func benchRows(b *testing.B) int {
	if s := os.Getenv("BASALT_MEMBUF_ROWS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			b.Fatal(err)
		}
		return n
	}
	return 1_000_000
}

// sbRow returns the row key, row value and index key of row i, written
// into the scratch buffers (the buffer copies them in).
func sbRow(i int, rowKey, rowVal, idxKey []byte) ([]byte, []byte, []byte) {
	rowKey = append(rowKey[:0], 't', 0x80, 0, 0, 0, 0, 0, 0, 1, '_', 'r')
	rowKey = binary.BigEndian.AppendUint64(rowKey, uint64(i)^1<<63)
	rowVal = rowVal[:0]
	for len(rowVal) < 200 {
		rowVal = strconv.AppendInt(rowVal, int64(i*7919+len(rowVal)), 10)
		rowVal = append(rowVal, '-')
	}
	k := uint64(i) * 0x9E3779B97F4A7C15 >> 44 // pseudo-random k
	idxKey = append(idxKey[:0], 't', 0x80, 0, 0, 0, 0, 0, 0, 1, '_', 'i', 0x80, 0, 0, 0, 0, 0, 0, 1, 3)
	idxKey = binary.BigEndian.AppendUint64(idxKey, k^1<<63)
	idxKey = binary.BigEndian.AppendUint64(idxKey, uint64(i)^1<<63)
	return rowKey, rowVal, idxKey
}

func fillSysbench(buf *MemBuffer, rows int) {
	var rk, rv, ik []byte
	for i := range rows {
		rk, rv, ik = sbRow(i, rk, rv, ik)
		if err := buf.Write(rk, rv, OpInsert); err != nil {
			panic(err)
		}
		buf.Set(ik, []byte{'0'}, OpPut)
	}
}

func gcCPUSeconds() float64 {
	s := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(s)
	return s[0].Value.Float64()
}

// reportGC wraps a benchmark loop so that it reports the collector's CPU
// time per op.
func reportGC(b *testing.B, run func()) {
	runtime.GC()
	gc0 := gcCPUSeconds()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		run()
	}
	b.StopTimer()
	b.ReportMetric((gcCPUSeconds()-gc0)*1000/float64(b.N), "gc-ms/op")
}

// BenchmarkMemBufferLoad: a bulk load's buffer, filled, sorted (one
// iterator over everything, as the commit's Mutations) and walked.
func BenchmarkMemBufferLoad(b *testing.B) {
	rows := benchRows(b)
	reportGC(b, func() {
		buf := NewMemBuffer()
		fillSysbench(buf, rows)
		n := 0
		for it := buf.Iter(nil, nil, false); it.Valid(); it.Next() {
			n += len(it.Value())
		}
		ms := buf.Mutations()
		if len(ms) != 2*rows || n == 0 {
			b.Fatalf("%d mutations", len(ms))
		}
	})
	// The live heap of a filled buffer (outside the timing).
	buf := NewMemBuffer()
	fillSysbench(buf, rows)
	runtime.GC()
	var st runtime.MemStats
	runtime.ReadMemStats(&st)
	b.ReportMetric(float64(st.HeapAlloc)/(1<<20), "heap-MB")
	runtime.KeepAlive(buf)
}

// BenchmarkMemBufferGC: what one collection costs while a filled
// buffer is live (each op is a runtime.GC, which marks the whole heap;
// a statement that allocates while holding the buffer pays this every
// cycle).
func BenchmarkMemBufferGC(b *testing.B) {
	rows := benchRows(b)
	buf := NewMemBuffer()
	fillSysbench(buf, rows)
	reportGC(b, runtime.GC)
	runtime.KeepAlive(buf)
}

// BenchmarkMemBufferSmall: an OLTP transaction's buffer (a few keys, a
// Get of each, the commit's Mutations).
func BenchmarkMemBufferSmall(b *testing.B) {
	for _, n := range []int{1, 4, 32} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			var rk, rv, ik []byte
			b.ReportAllocs()
			for b.Loop() {
				buf := NewMemBuffer()
				for i := range n {
					rk, rv, ik = sbRow(i, rk, rv, ik)
					buf.Set(rk, rv, OpPut)
					buf.Set(ik, []byte{'0'}, OpPut)
				}
				for i := range n {
					rk, rv, ik = sbRow(i, rk, rv, ik)
					if _, _, ok := buf.Get(rk); !ok {
						b.Fatal("lost key")
					}
				}
				if len(buf.Mutations()) != 2*n {
					b.Fatal("lost mutations")
				}
			}
		})
	}
}

// BenchmarkMemBufferOverwrite: one key set over and over (an UPDATE in a
// loop inside one transaction).
func BenchmarkMemBufferOverwrite(b *testing.B) {
	var rk, rv, ik []byte
	rk, rv, _ = sbRow(1, rk, rv, ik)
	buf := NewMemBuffer()
	b.ReportAllocs()
	for b.Loop() {
		buf.Set(rk, rv, OpPut)
	}
}
