package server

import (
	"bufio"
	"encoding/binary"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestStmt drives the prepared-statement commands with rawClient scripts
// (testdata/stmt), including every parameter type of the binary protocol.
func TestStmt(t *testing.T) {
	ts := startServer(t, Config{})
	datadriven.RunTest(t, "testdata/stmt", func(t *testing.T, d *datadriven.TestData) string {
		return runRawScript(t, ts, d)
	})
}

// BenchmarkPointSelect measures the server's side of a sysbench point
// select: one prepared statement, one parameter, one row of one 120-byte
// column, over loopback TCP. The client is a bare loop that allocates
// nothing, so allocs/op is the server's (and the test session's: none).
func BenchmarkPointSelect(b *testing.B) {
	ts := startServer(b, Config{})
	c, err := dialRaw(ts.addr, "root", "", "test", rawDeprecateEOF)
	if err != nil {
		b.Fatal(err)
	}
	defer c.close()
	c.command(append([]byte{comStmtPrepare}, pointQuery...))
	if lines := c.readPrepare(); len(lines) != 3 {
		b.Fatalf("prepare: %v", lines)
	}
	// COM_STMT_EXECUTE of statement 1 with id = 42 (a LONGLONG).
	payload := []byte{comStmtExecute, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 8, 0}
	payload = binary.LittleEndian.AppendUint64(payload, 42)
	benchRoundTrips(b, c, payload)
}

// BenchmarkPointSelectText is BenchmarkPointSelect over COM_QUERY.
func BenchmarkPointSelectText(b *testing.B) {
	ts := startServer(b, Config{})
	c, err := dialRaw(ts.addr, "root", "", "test", rawDeprecateEOF)
	if err != nil {
		b.Fatal(err)
	}
	defer c.close()
	benchRoundTrips(b, c, append([]byte{comQuery}, pointQueryText...))
}

// benchRoundTrips sends payload as a command b.N times, reading each
// response up to the OK packet that ends its result set.
func benchRoundTrips(b *testing.B, c *rawClient, payload []byte) {
	pkt := append([]byte{byte(len(payload)), byte(len(payload) >> 8), byte(len(payload) >> 16), 0}, payload...)
	r := bufio.NewReader(c.nc)
	var hdr [4]byte
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.nc.Write(pkt); err != nil {
			b.Fatal(err)
		}
		for {
			if _, err := r.Read(hdr[:1]); err != nil {
				b.Fatal(err)
			}
			if _, err := r.Read(hdr[1:4]); err != nil {
				b.Fatal(err)
			}
			n := int(hdr[0]) | int(hdr[1])<<8 | int(hdr[2])<<16
			first, err := r.Peek(1)
			if err != nil {
				b.Fatal(err)
			}
			end := first[0] == 0xfe && n < 9 || first[0] == 0xff
			if _, err := r.Discard(n); err != nil {
				b.Fatal(err)
			}
			if end {
				break
			}
		}
	}
}
