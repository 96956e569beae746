package server

import (
	"bytes"
	"context"
	"database/sql"
	"strconv"
	"strings"
	"testing"

	"github.com/basalt-db/basalt/errno"
)

// TestPacketSplit writes payloads around the 16 MiB boundary, checks the
// chunk headers, and reads them back joined.
func TestPacketSplit(t *testing.T) {
	sizes := []int{0, 1, 250, maxPayload - 1, maxPayload, maxPayload + 1, 2*maxPayload + 7}
	var wire bytes.Buffer
	w := newPacketIO(&wire, 0)
	var want [][]byte
	for i, n := range sizes {
		p := bytes.Repeat([]byte{byte('a' + i)}, n)
		want = append(want, p)
		w.writePacket(p)
	}
	if err := w.flush(); err != nil {
		t.Fatal(err)
	}

	// The headers: chunks of maxPayload, then the rest (maybe empty), with
	// sequence ids counting every chunk.
	b := wire.Bytes()
	seq := byte(0)
	for _, n := range sizes {
		for {
			size := int(b[0]) | int(b[1])<<8 | int(b[2])<<16
			if b[3] != seq {
				t.Fatalf("payload of %d: chunk sequence %d, want %d", n, b[3], seq)
			}
			seq++
			want := min(n, maxPayload)
			if size != want {
				t.Fatalf("payload of %d: chunk of %d, want %d", n, size, want)
			}
			b = b[4+size:]
			n -= size
			if size < maxPayload {
				break
			}
		}
	}
	if len(b) != 0 {
		t.Fatalf("%d bytes left over", len(b))
	}

	r := newPacketIO(&wire, 1<<30)
	for i, p := range want {
		got, err := r.readPacket()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, p) {
			t.Fatalf("packet %d: read %d bytes, want %d", i, len(got), len(p))
		}
	}
}

func TestPacketReadLimits(t *testing.T) {
	var wire bytes.Buffer
	w := newPacketIO(&wire, 0)
	w.writePacket(make([]byte, 100))
	w.flush()
	r := newPacketIO(bytes.NewBuffer(bytes.Clone(wire.Bytes())), 99)
	if _, err := r.readPacket(); err != errPacketTooLarge {
		t.Fatalf("got %v, want errPacketTooLarge", err)
	}
	r = newPacketIO(bytes.NewBuffer(bytes.Clone(wire.Bytes())), 100)
	r.seq = 3
	if _, err := r.readPacket(); err != errPacketsOutOfOrder {
		t.Fatalf("got %v, want errPacketsOutOfOrder", err)
	}
}

// A packet bigger than max_allowed_packet is refused with 1153 and closes
// its connection; one just under it passes; other connections go on.
func TestMaxAllowedPacket(t *testing.T) {
	const limit = 1 << 20
	ts := startServer(t, Config{MaxAllowedPacket: limit})
	db := ts.openDB(t, "root", "", "test")

	pad := func(n int) string { return "select long 3" + strings.Repeat(" ", n-len("select long 3")) }
	var s string
	// The limit counts the command byte.
	if err := db.QueryRow(pad(limit - 1)).Scan(&s); err != nil || s != "abc" {
		t.Fatalf("query of max_allowed_packet bytes: %q, %v", s, err)
	}
	c, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = c.QueryRowContext(context.Background(), pad(limit)).Scan(&s)
	if mysqlCode(err) != errno.ErNetPacketTooLarge || !strings.Contains(err.Error(), "Got a packet bigger than 'max_allowed_packet' bytes") {
		t.Fatalf("got %v, want 1153", err)
	}
	if err := c.PingContext(context.Background()); err == nil {
		t.Fatal("the connection survived ER_NET_PACKET_TOO_LARGE")
	}
	// A prepared statement's parameter counts too.
	_, err = db.Exec("select ?", strings.Repeat("x", limit))
	if mysqlCode(err) != errno.ErNetPacketTooLarge {
		t.Fatalf("got %v, want 1153", err)
	}
	// The server goes on serving. (A new pool: the one above may still
	// hold the connection the server just closed, which the driver then
	// reports as "invalid connection".)
	if err := ts.openDB(t, "root", "", "test").QueryRow("select long 3").Scan(&s); err != nil {
		t.Fatal(err)
	}
}

// TestLargeValues moves values past 16 MiB both ways, so that packets are
// split and joined, in text and binary rows, including payloads of exactly
// 16 MiB - 1 bytes (which are followed by an empty packet), and through
// COM_STMT_SEND_LONG_DATA.
func TestLargeValues(t *testing.T) {
	if testing.Short() {
		t.Skip("moves about 150 MB")
	}
	ts := startServer(t, Config{})
	db := ts.openDB(t, "root", "", "test")
	pattern := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = 'a' + byte(i%26)
		}
		return b
	}
	check := func(what string, got []byte, n int) {
		t.Helper()
		if len(got) != n || !bytes.Equal(got, pattern(n)) {
			t.Fatalf("%s: got %d bytes, want %d of the pattern", what, len(got), n)
		}
	}
	query := func(q string, args ...any) []byte {
		t.Helper()
		var b []byte
		if err := db.QueryRow(q, args...).Scan(&b); err != nil {
			t.Fatalf("%.40s: %v", q, err)
		}
		return b
	}
	prepared := func(q string) []byte {
		t.Helper()
		st, err := db.Prepare(q)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		var b []byte
		if err := st.QueryRow().Scan(&b); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return b
	}

	// Server to client. A text row holding n bytes is n+4 bytes long under
	// 16 MiB (n+9 above); a binary one n+6.
	for _, n := range []int{17 << 20, maxPayload - 4} {
		check("text row", query("select long "+strconv.Itoa(n)), n)
	}
	for _, n := range []int{17 << 20, maxPayload - 6} {
		check("binary row", prepared("select long "+strconv.Itoa(n)), n)
	}

	// Client to server: a 17 MiB query, and a 17 MiB parameter (sent
	// inline: the driver's threshold for long data is half its 64 MiB limit).
	check("COM_QUERY", query("select long 5"+strings.Repeat(" ", 17<<20)), 5)
	check("parameter", query("select ?", pattern(17<<20)), 17<<20)

	// A smaller client-side limit makes the driver send the parameter with
	// COM_STMT_SEND_LONG_DATA, in chunks.
	small, err := sql.Open("mysql", ts.dsn("root", "", "test", "maxAllowedPacket=1048576"))
	if err != nil {
		t.Fatal(err)
	}
	defer small.Close()
	var b []byte
	if err := small.QueryRow("select ?", pattern(3<<20)).Scan(&b); err != nil {
		t.Fatal(err)
	}
	check("long data", b, 3<<20)
}
