package server

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/basalt-db/basalt/errno"
)

// FuzzCommands logs in to a Server (with the test driver behind it) and
// sends the fuzz input as command packets, one at a time, reading each
// response. The server must never panic, answer every command that has an
// answer with well-framed packets, and close the connection only where the
// protocol says so: after COM_QUIT, after ER_MALFORMED_PACKET (which it
// must then do), after a failed COM_CHANGE_USER, or when the command
// killed its own connection. The connection must still answer COM_PING at
// the end if it is open.
//
// Input: a flags byte (0x01 CLIENT_DEPRECATE_EOF, 0x02 multi-statements,
// 0x04 connect to database test), then commands, each a length byte and
// that many bytes of packet payload (command byte first).
func FuzzCommands(f *testing.F) {
	seeds := [][][]byte{
		{q("select 1"), {comPing}, {comInitDB, 'o', 't', 'h', 'e', 'r'}, {comInitDB, 'x'}},
		{q("select types"), q("select rows 3"), q("select rowerror"), q("select error"), q("insert")},
		{q("select 1; select database()"), {comSetOption, 0, 0}, q("select 1; select 1"), {comSetOption, 1, 0}, {comSetOption, 9}},
		{q("begin"), q("commit"), q("show processlist"), q("use other"), q("select connection_id()"), q(""), q("nonsense")},
		{p("select ?, ?"), x(1, 0x00, 0x01, byte(TypeLongLong), 0, byte(TypeVarString), 0, 1, 0, 0, 0, 0, 0, 0, 0, 3, 'a', 'b', 'c')},
		{p("select ?, ?"), x(1, 0x03, 0x01, byte(TypeDate), 0, byte(TypeTime), 0), x(1, 0x00, 0x00, 4, 0xe8, 0x07, 1, 1, 8, 0, 1, 0, 0, 0, 1, 2, 3)},
		{p("select ?"), append([]byte{comStmtSendLongData, 1, 0, 0, 0, 0, 0}, "long"...), x(1, 0x00, 0x01, byte(TypeBlob), 0), {comStmtReset, 1, 0, 0, 0}, x(1, 0x00, 0x00, 1, 'z')},
		{p("select ?"), x(1, 0x00, 0x01, byte(TypeDateTime), 0, 7, 0xff, 0xff, 13, 40, 0, 0, 0), x(2), {comStmtClose, 1, 0, 0, 0}, x(1)},
		{p("select 1"), x(1), p("select types"), x(2), p("nonsense"), {comStmtReset, 9, 0, 0, 0}},
		{{comFieldList, 't', 0, 'i', '%'}, {comFieldList, 't', 0}, {comFieldList, 'n', 'o', 0}, {comStatistics}},
		{{comResetConnection}, q("select database()"), {comProcessKill, 0xff, 0, 0, 0}, {0x42}, {comSleep}},
		{changeUser("root", nil, "test", ""), q("select database()")},
		{changeUser("native", []byte{0}, "", "")},
		{changeUser("sha2", make([]byte, 32), "", PluginCachingSHA2Password)},
		{changeUser("sha2-nopw", nil, "", PluginNativePassword), q("select 1")},
		{{comStmtExecute, 1, 0}},
		{{comSetOption}},
		{{}},
		{{comQuit}},
		{{comStmtClose}},
		{q("kill 0"), q("kill query 1"), {comProcessKill, 1}},
	}
	for i, cmds := range seeds {
		in := []byte{byte(i % 8)}
		for _, c := range cmds {
			in = append(append(in, byte(len(c))), c...)
		}
		f.Add(in)
	}

	fs := startFuzzServer(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		flags, rest := in[0], in[1:]
		var caps uint32
		if flags&0x01 != 0 {
			caps |= rawDeprecateEOF
		}
		if flags&0x02 != 0 {
			caps |= rawMultiStatements
		}
		db := ""
		if flags&0x04 != 0 {
			db = "test"
		}
		c, err := dialRaw(fs.addr, "root", "", db, caps)
		if err != nil {
			t.Fatalf("login: %v", err)
		}
		defer c.close()
		c.nc.SetDeadline(time.Now().Add(20 * time.Second))
		fc := &fuzzClient{rawClient: c}
		for n := 0; len(rest) > 0 && n < 16; n++ {
			l := min(int(rest[0]), len(rest)-1)
			payload := rest[1 : 1+l]
			rest = rest[1+l:]
			if closed := fc.exchange(t, payload); closed {
				break
			}
		}
		if !fc.closed {
			c.command([]byte{comPing})
			if p, err := c.readPacket(); err != nil || p[0] != 0x00 {
				t.Fatalf("COM_PING after the commands: % x, %v", p, err)
			}
		}
		if l := fs.logs.String(); l != "" {
			t.Fatalf("the server logged:\n%s", l)
		}
	})
}

// q, p and x build COM_QUERY, COM_STMT_PREPARE and COM_STMT_EXECUTE
// packets for the seeds; x's block follows the flags and iteration count.
func q(sql string) []byte { return append([]byte{comQuery}, sql...) }
func p(sql string) []byte { return append([]byte{comStmtPrepare}, sql...) }
func x(id uint32, block ...byte) []byte {
	b := binary.LittleEndian.AppendUint32([]byte{comStmtExecute}, id)
	return append(append(b, 0, 1, 0, 0, 0), block...)
}

func changeUser(user string, auth []byte, db, plugin string) []byte {
	b := append(append([]byte{comChangeUser}, user...), 0, byte(len(auth)))
	b = append(append(append(b, auth...), db...), 0, 45, 0)
	if plugin != "" {
		b = append(append(b, plugin...), 0)
	}
	return b
}

type fuzzServer struct {
	addr string
	logs *syncBuffer
}

// startFuzzServer serves the test driver, less the statements that would
// make a run slow or huge (see fuzzSafe), and logs only errors: panics.
func startFuzzServer(tb testing.TB) *fuzzServer {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	fs := &fuzzServer{addr: l.Addr().String(), logs: &syncBuffer{}}
	drv := &fuzzDriver{newTestDriver()}
	srv, err := New(Config{
		RSAKey: testRSAKey(),
		Logger: slog.New(slog.NewTextHandler(fs.logs, &slog.HandlerOptions{Level: slog.LevelError})),
	}, drv)
	if err != nil {
		tb.Fatal(err)
	}
	drv.srv = srv
	go srv.Serve(l)
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		if o, c := drv.opened.Load(), drv.closed.Load(); o != c {
			tb.Errorf("%d sessions opened, %d closed", o, c)
		}
	})
	return fs
}

type fuzzDriver struct{ *testDriver }

func (d *fuzzDriver) OpenSession(ctx context.Context, info ConnInfo) (Session, error) {
	s, err := d.testDriver.OpenSession(ctx, info)
	if err != nil {
		return nil, err
	}
	return fuzzSession{s.(*testSession)}, nil
}

// fuzzSession refuses the test vocabulary's statements that wait, panic on
// purpose, or make results of unbounded size.
type fuzzSession struct{ *testSession }

func fuzzSafe(sql string) error {
	l := strings.ToLower(sql)
	if strings.Contains(l, "sleep") || strings.Contains(l, "panic") {
		return syntaxError(sql)
	}
	for _, f := range strings.FieldsFunc(l, func(r rune) bool { return r < '0' || r > '9' }) {
		if n, err := strconv.Atoi(f); err != nil || n > 100000 {
			return syntaxError(sql)
		}
	}
	return nil
}

func (s fuzzSession) ExecuteQuery(ctx context.Context, sql string, multi bool, w ResultWriter) error {
	if err := fuzzSafe(sql); err != nil {
		return err
	}
	return s.testSession.ExecuteQuery(ctx, sql, multi, w)
}

func (s fuzzSession) Prepare(ctx context.Context, sql string) (Stmt, error) {
	if err := fuzzSafe(sql); err != nil {
		return nil, err
	}
	return s.testSession.Prepare(ctx, sql)
}

// fuzzClient reads the response to any command, checking its framing.
type fuzzClient struct {
	*rawClient
	closed bool
}

// exchange sends one command and reads its response. It reports whether
// the connection is now closed, failing t if it closed where it must not,
// stayed open where it must close, or broke the protocol.
func (fc *fuzzClient) exchange(t *testing.T, payload []byte) (closed bool) {
	c := fc.rawClient
	c.command(payload)
	if len(payload) == 0 {
		fc.expectErrThenClose(t, payload)
		return true
	}
	cmd, body := payload[0], payload[1:]
	// A command that may kill its own connection: the connection may close
	// instead of answering.
	mayKill := cmd == comProcessKill || strings.Contains(strings.ToLower(string(payload)), "kill")
	var code uint16
	var err error
	switch cmd {
	case comQuit:
		fc.expectClosed(t, payload)
		return true
	case comStmtClose, comStmtSendLongData:
		if (cmd == comStmtClose && len(body) < 4) || (cmd == comStmtSendLongData && len(body) < 6) {
			fc.expectErrThenClose(t, payload)
			return true
		}
		return false // no response
	case comStmtPrepare:
		code, err = fc.readPrepareResponse()
	case comFieldList:
		code, err = fc.readUntilEOF()
	case comStatistics:
		_, err = c.readPacket()
	case comSetOption:
		var p []byte
		if p, err = c.readPacket(); err == nil {
			code, err = errCode(p)
			if err == nil && code == 0 && p[0] != 0xfe {
				err = fmt.Errorf("COM_SET_OPTION answered % x", p)
			}
		}
	case comChangeUser:
		code, err = fc.readChangeUser()
		if err == nil && code != 0 {
			fc.expectClosed(t, payload)
			return true
		}
	default:
		code, err = fc.readResults()
	}
	switch {
	case err == nil && code == errno.ErMalformedPacket:
		fc.expectClosed(t, payload)
		return true
	case err == nil:
		return false
	case isClosed(err) && mayKill:
		fc.closed = true
		return true
	case isClosed(err):
		t.Fatalf("the connection closed after % x without an error", payload)
	case isTimeout(err):
		t.Fatalf("no answer to % x: %v", payload, err)
	}
	t.Fatalf("answer to % x: %v", payload, err)
	return true
}

func (fc *fuzzClient) expectErrThenClose(t *testing.T, payload []byte) {
	t.Helper()
	p, err := fc.readPacket()
	if err != nil {
		t.Fatalf("no answer to malformed % x: %v", payload, err)
	}
	if code, _ := errCode(p); code != errno.ErMalformedPacket {
		t.Fatalf("malformed % x answered % x, want ER_MALFORMED_PACKET", payload, p)
	}
	fc.expectClosed(t, payload)
}

func (fc *fuzzClient) expectClosed(t *testing.T, payload []byte) {
	t.Helper()
	fc.closed = true
	p, err := fc.readPacket()
	if err == nil {
		t.Fatalf("after % x: packet % x where the connection must close", payload, p)
	}
	if !isClosed(err) {
		t.Fatalf("after % x: %v where the connection must close", payload, err)
	}
}

// errCode returns the error code of an ERR packet, 0 for any other.
func errCode(p []byte) (uint16, error) {
	if len(p) == 0 {
		return 0, errors.New("empty packet")
	}
	if p[0] != 0xff {
		return 0, nil
	}
	if len(p) < 9 || p[3] != '#' {
		return 0, fmt.Errorf("short ERR packet % x", p)
	}
	return binary.LittleEndian.Uint16(p[1:]), nil
}

// lenenc decodes a length-encoded integer at the front of b.
func lenenc(b []byte) (v uint64, n int, ok bool) {
	if len(b) == 0 {
		return 0, 0, false
	}
	switch b[0] {
	case 0xfc:
		n = 3
	case 0xfd:
		n = 4
	case 0xfe:
		n = 9
	case 0xfb, 0xff:
		return 0, 0, false
	default:
		return uint64(b[0]), 1, true
	}
	if len(b) < n {
		return 0, 0, false
	}
	for i := n - 1; i >= 1; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v, n, true
}

// okStatusOf returns the status flags of an OK packet (0x00 or 0xfe header).
func okStatusOf(p []byte) (uint16, error) {
	pos := 1
	for range 2 {
		_, n, ok := lenenc(p[pos:])
		if !ok {
			return 0, fmt.Errorf("bad OK packet % x", p)
		}
		pos += n
	}
	if len(p) < pos+4 {
		return 0, fmt.Errorf("short OK packet % x", p)
	}
	return binary.LittleEndian.Uint16(p[pos:]), nil
}

const statusMoreResults = 0x0008

// readResults reads the results of a command that runs statements (or an
// OK or ERR), following MORE_RESULTS. It returns the code of a final ERR.
func (fc *fuzzClient) readResults() (uint16, error) {
	c := fc.rawClient
	for {
		p, err := c.readPacket()
		if err != nil {
			return 0, err
		}
		if code, err := errCode(p); code != 0 || err != nil {
			return code, err
		}
		if p[0] == 0x00 {
			st, err := okStatusOf(p)
			if err != nil || st&statusMoreResults == 0 {
				return 0, err
			}
			continue
		}
		n, _, ok := lenenc(p)
		if !ok || n == 0 || p[0] == 0xfe {
			return 0, fmt.Errorf("bad result set header % x", p)
		}
		for range n {
			if p, err = c.readPacket(); err != nil {
				return 0, err
			}
			if p[0] == 0xff || p[0] == 0xfe {
				return 0, fmt.Errorf("column definition % x", p)
			}
		}
		if c.caps&rawDeprecateEOF == 0 {
			if p, err = c.readPacket(); err != nil {
				return 0, err
			}
			if !isEOF(p) {
				return 0, fmt.Errorf("% x where the EOF after the columns belongs", p)
			}
		}
		more := false
	rows:
		for {
			if p, err = c.readPacket(); err != nil {
				return 0, err
			}
			switch {
			case p[0] == 0xff:
				return errCode(p)
			case isEOF(p) && c.caps&rawDeprecateEOF != 0:
				st, err := okStatusOf(p)
				if err != nil {
					return 0, err
				}
				more = st&statusMoreResults != 0
				break rows
			case isEOF(p):
				if len(p) != 5 {
					return 0, fmt.Errorf("bad EOF packet % x", p)
				}
				more = binary.LittleEndian.Uint16(p[3:])&statusMoreResults != 0
				break rows
			}
		}
		if !more {
			return 0, nil
		}
	}
}

// readPrepareResponse reads COM_STMT_PREPARE's answer.
func (fc *fuzzClient) readPrepareResponse() (uint16, error) {
	c := fc.rawClient
	p, err := c.readPacket()
	if err != nil {
		return 0, err
	}
	if code, err := errCode(p); code != 0 || err != nil {
		return code, err
	}
	if p[0] != 0x00 || len(p) != 12 {
		return 0, fmt.Errorf("bad COM_STMT_PREPARE OK % x", p)
	}
	cols, params := int(binary.LittleEndian.Uint16(p[5:])), int(binary.LittleEndian.Uint16(p[7:]))
	for _, n := range []int{params, cols} {
		if n == 0 {
			continue
		}
		for range n {
			if p, err = c.readPacket(); err != nil {
				return 0, err
			}
		}
		if c.caps&rawDeprecateEOF == 0 {
			if p, err = c.readPacket(); err != nil {
				return 0, err
			}
			if !isEOF(p) {
				return 0, fmt.Errorf("% x where an EOF belongs", p)
			}
		}
	}
	return 0, nil
}

// readUntilEOF reads COM_FIELD_LIST's column definitions and EOF.
func (fc *fuzzClient) readUntilEOF() (uint16, error) {
	for {
		p, err := fc.readPacket()
		if err != nil {
			return 0, err
		}
		if code, err := errCode(p); code != 0 || err != nil {
			return code, err
		}
		if isEOF(p) {
			return 0, nil
		}
	}
}

// readChangeUser follows a COM_CHANGE_USER exchange to its OK or ERR,
// answering the server's requests with bytes that authenticate nobody.
func (fc *fuzzClient) readChangeUser() (uint16, error) {
	c := fc.rawClient
	for range 6 {
		p, err := c.readPacket()
		if err != nil {
			return 0, err
		}
		if code, err := errCode(p); code != 0 || err != nil {
			return code, err
		}
		switch {
		case p[0] == 0x00:
			return 0, nil
		case p[0] == authSwitch:
			err = c.writePacket(make([]byte, 20))
		case p[0] == authMoreData && len(p) == 2 && p[1] == sha2FastOK:
		case p[0] == authMoreData && len(p) == 2 && p[1] == sha2FullAuth:
			err = c.writePacket([]byte{sha2RequestKey})
		case p[0] == authMoreData:
			err = c.writePacket(make([]byte, 256))
		default:
			return 0, fmt.Errorf("COM_CHANGE_USER answered % x", p)
		}
		if err != nil {
			return 0, err
		}
	}
	return 0, errors.New("COM_CHANGE_USER exchange does not end")
}

func isClosed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

func isTimeout(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }
