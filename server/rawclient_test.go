package server

import (
	"bufio"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// rawClient is a minimal MySQL client for the tests that no real client can
// drive: it sends any command bytes and prints every packet of the answer.
// It shares no code with the server's encoders on purpose.
type rawClient struct {
	nc        net.Conn
	r         *bufio.Reader
	seq       byte
	caps      uint32
	scramble  []byte
	connID    uint32
	version   string
	stmtTypes map[uint32][]rawColumn // result columns of prepared statements, by id
}

const (
	rawProtocol41      = 1 << 9
	rawConnectWithDB   = 1 << 3
	rawSecureConn      = 1 << 15
	rawMultiStatements = 1 << 16
	rawMultiResults    = 1 << 17
	rawPluginAuth      = 1 << 19
	rawDeprecateEOF    = 1 << 24
)

// dialRaw connects and logs in with mysql_native_password.
func dialRaw(addr, user, password, db string, extraCaps uint32) (*rawClient, error) {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	c := &rawClient{nc: nc, r: bufio.NewReader(nc), stmtTypes: map[uint32][]rawColumn{}}
	g, err := c.readPacket()
	if err != nil {
		nc.Close()
		return nil, err
	}
	if g[0] == 0xff {
		nc.Close()
		return nil, errors.New(describeErr(g))
	}
	// protocol(1) version NUL connid(4) scramble1(8) filler(1) caps(2) charset(1) status(2) caps(2) len(1) reserved(10) scramble2(13) plugin NUL
	end := 1 + strings.IndexByte(string(g[1:]), 0)
	c.version = string(g[1:end])
	p := end + 1
	c.connID = binary.LittleEndian.Uint32(g[p:])
	c.scramble = append(append([]byte{}, g[p+4:p+12]...), g[p+31:p+43]...)

	c.caps = rawProtocol41 | rawSecureConn | rawPluginAuth | rawMultiResults | extraCaps
	if db != "" {
		c.caps |= rawConnectWithDB
	}
	resp := binary.LittleEndian.AppendUint32(nil, c.caps)
	resp = binary.LittleEndian.AppendUint32(resp, 1<<24)
	resp = append(resp, 45)
	resp = append(resp, make([]byte, 23)...)
	resp = append(append(resp, user...), 0)
	auth := nativeScramble(c.scramble, password)
	resp = append(append(resp, byte(len(auth))), auth...)
	if db != "" {
		resp = append(append(resp, db...), 0)
	}
	resp = append(append(resp, "mysql_native_password"...), 0)
	if err := c.writePacket(resp); err != nil {
		nc.Close()
		return nil, err
	}
	if err := c.finishAuth(password); err != nil {
		nc.Close()
		return nil, err
	}
	nc.SetDeadline(time.Time{})
	return c, nil
}

// finishAuth reads the end of an authentication exchange, answering a
// switch to mysql_native_password.
func (c *rawClient) finishAuth(password string) error {
	for {
		p, err := c.readPacket()
		if err != nil {
			return err
		}
		switch p[0] {
		case 0x00:
			return nil
		case 0xff:
			return errors.New(describeErr(p))
		case 0xfe:
			end := 1 + strings.IndexByte(string(p[1:]), 0)
			if plugin := string(p[1:end]); plugin != "mysql_native_password" {
				return fmt.Errorf("raw client cannot switch to %s", plugin)
			}
			c.scramble = append([]byte{}, p[end+1:end+21]...)
			if err := c.writePacket(nativeScramble(c.scramble, password)); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unexpected auth packet % x", p)
		}
	}
}

func nativeScramble(scramble []byte, password string) []byte {
	if password == "" {
		return nil
	}
	s1 := sha1.Sum([]byte(password))
	s2 := sha1.Sum(s1[:])
	h := sha1.New()
	h.Write(scramble)
	h.Write(s2[:])
	out := h.Sum(nil)
	for i := range out {
		out[i] ^= s1[i]
	}
	return out
}

func (c *rawClient) close() { c.nc.Close() }

// writePacket sends one payload, split into 16 MiB chunks if needed.
func (c *rawClient) writePacket(payload []byte) error {
	for {
		n := min(len(payload), 1<<24-1)
		hdr := []byte{byte(n), byte(n >> 8), byte(n >> 16), c.seq}
		c.seq++
		if _, err := c.nc.Write(append(hdr, payload[:n]...)); err != nil {
			return err
		}
		payload = payload[n:]
		if n < 1<<24-1 {
			return nil
		}
	}
}

// command starts a new exchange with payload (command byte first).
func (c *rawClient) command(payload []byte) error {
	c.seq = 0
	return c.writePacket(payload)
}

func (c *rawClient) readPacket() ([]byte, error) {
	var out []byte
	for {
		var hdr [4]byte
		if _, err := io.ReadFull(c.r, hdr[:]); err != nil {
			return nil, err
		}
		n := int(hdr[0]) | int(hdr[1])<<8 | int(hdr[2])<<16
		if hdr[3] != c.seq {
			return nil, fmt.Errorf("sequence %d, want %d", hdr[3], c.seq)
		}
		c.seq++
		buf := make([]byte, n)
		if _, err := io.ReadFull(c.r, buf); err != nil {
			return nil, err
		}
		out = append(out, buf...)
		if n < 1<<24-1 {
			return out, nil
		}
	}
}

func describeErr(p []byte) string {
	return fmt.Sprintf("ERR %d (%s) %s", binary.LittleEndian.Uint16(p[1:]), p[4:9], p[9:])
}

func describeOK(p []byte) string {
	pos := 1
	affected, n := rawLenenc(p[pos:])
	pos += n
	lastID, n := rawLenenc(p[pos:])
	pos += n
	s := fmt.Sprintf("OK affected=%d lastid=%d status=%s warnings=%d", affected, lastID,
		describeStatus(binary.LittleEndian.Uint16(p[pos:])), binary.LittleEndian.Uint16(p[pos+2:]))
	if rest := p[pos+4:]; len(rest) > 0 {
		n, w := rawLenenc(rest)
		s += fmt.Sprintf(" info=%q", rest[w:w+int(n)])
	}
	return s
}

func describeEOF(p []byte) string {
	return fmt.Sprintf("EOF warnings=%d status=%s", binary.LittleEndian.Uint16(p[1:]), describeStatus(binary.LittleEndian.Uint16(p[3:])))
}

func describeStatus(s uint16) string {
	var names []string
	for _, f := range []struct {
		bit  uint16
		name string
	}{{0x1, "IN_TRANS"}, {0x2, "AUTOCOMMIT"}, {0x8, "MORE_RESULTS"}} {
		if s&f.bit != 0 {
			names = append(names, f.name)
			s &^= f.bit
		}
	}
	if s != 0 {
		names = append(names, fmt.Sprintf("0x%04x", s))
	}
	if len(names) == 0 {
		return "0"
	}
	return strings.Join(names, "|")
}

func rawLenenc(b []byte) (uint64, int) {
	switch b[0] {
	case 0xfc:
		return uint64(binary.LittleEndian.Uint16(b[1:])), 3
	case 0xfd:
		return uint64(b[1]) | uint64(b[2])<<8 | uint64(b[3])<<16, 4
	case 0xfe:
		return binary.LittleEndian.Uint64(b[1:]), 9
	}
	return uint64(b[0]), 1
}

type rawColumn struct {
	name     string
	typ      byte
	flags    uint16
	decimals byte
}

// parseColumn decodes a column definition into its fields and a line.
func parseColumn(p []byte) (rawColumn, string) {
	var f [6]string
	pos := 0
	for i := range f {
		n, w := rawLenenc(p[pos:])
		f[i] = string(p[pos+w : pos+w+int(n)])
		pos += w + int(n)
	}
	pos++ // 0x0c
	charset := binary.LittleEndian.Uint16(p[pos:])
	length := binary.LittleEndian.Uint32(p[pos+2:])
	col := rawColumn{name: f[4], typ: p[pos+6], flags: binary.LittleEndian.Uint16(p[pos+7:]), decimals: p[pos+9]}
	line := fmt.Sprintf("COL %s schema=%s table=%s org=%s.%s type=0x%02x flags=0x%04x charset=%d length=%d decimals=%d",
		col.name, f[1], f[2], f[3], f[5], col.typ, col.flags, charset, length, col.decimals)
	if rest := p[pos+12:]; len(rest) > 0 {
		line += fmt.Sprintf(" default=% x", rest)
	}
	return col, line
}

// isEOF reports whether p ends a list: an EOF packet, or an OK packet with
// the 0xFE header under CLIENT_DEPRECATE_EOF.
func isEOF(p []byte) bool { return p[0] == 0xfe && len(p) < 9 }

// readResults reads a whole response to a command that runs statements, one
// line per packet, following MORE_RESULTS.
func (c *rawClient) readResults(binaryRows bool) []string {
	var out []string
	for {
		lines, more := c.readResult(binaryRows, nil)
		out = append(out, lines...)
		if !more {
			return out
		}
	}
}

// readResult reads one result. cols, if given, receives the column list.
func (c *rawClient) readResult(binaryRows bool, cols *[]rawColumn) (lines []string, more bool) {
	p, err := c.readPacket()
	if err != nil {
		return []string{"read: " + describeReadErr(err)}, false
	}
	switch p[0] {
	case 0x00:
		return []string{describeOK(p)}, okStatus(p)&0x8 != 0
	case 0xff:
		return []string{describeErr(p)}, false
	}
	n, _ := rawLenenc(p)
	var columns []rawColumn
	for i := uint64(0); i < n; i++ {
		p, err := c.readPacket()
		if err != nil {
			return append(lines, "read: "+describeReadErr(err)), false
		}
		col, line := parseColumn(p)
		columns = append(columns, col)
		lines = append(lines, line)
	}
	if cols != nil {
		*cols = columns
	}
	if c.caps&rawDeprecateEOF == 0 {
		p, err := c.readPacket()
		if err != nil {
			return append(lines, "read: "+describeReadErr(err)), false
		}
		lines = append(lines, describeEOF(p))
	}
	for {
		p, err := c.readPacket()
		switch {
		case err != nil:
			return append(lines, "read: "+describeReadErr(err)), false
		case p[0] == 0xff:
			return append(lines, describeErr(p)), false
		case isEOF(p) && c.caps&rawDeprecateEOF != 0:
			return append(lines, "END "+describeOK(p)), okStatus(p)&0x8 != 0
		case isEOF(p):
			return append(lines, describeEOF(p)), binary.LittleEndian.Uint16(p[3:])&0x8 != 0
		case binaryRows:
			lines = append(lines, "ROW "+decodeBinaryRow(p, columns))
		default:
			lines = append(lines, "ROW "+decodeTextRow(p))
		}
	}
}

func okStatus(p []byte) uint16 {
	pos := 1
	_, n := rawLenenc(p[pos:])
	pos += n
	_, n = rawLenenc(p[pos:])
	pos += n
	return binary.LittleEndian.Uint16(p[pos:])
}

func describeReadErr(err error) string {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		strings.Contains(err.Error(), "connection reset") {
		return "connection closed"
	}
	return err.Error()
}

func decodeTextRow(p []byte) string {
	var vals []string
	for pos := 0; pos < len(p); {
		if p[pos] == 0xfb {
			vals = append(vals, "NULL")
			pos++
			continue
		}
		n, w := rawLenenc(p[pos:])
		vals = append(vals, printable(p[pos+w:pos+w+int(n)]))
		pos += w + int(n)
	}
	return strings.Join(vals, " | ")
}

// decodeBinaryRow decodes a binary row by its columns' types.
func decodeBinaryRow(p []byte, cols []rawColumn) string {
	bitmap := p[1 : 1+(len(cols)+9)/8]
	pos := 1 + len(bitmap)
	vals := make([]string, len(cols))
	for i, col := range cols {
		if bitmap[(i+2)/8]&(1<<((i+2)%8)) != 0 {
			vals[i] = "NULL"
			continue
		}
		unsigned := col.flags&0x20 != 0
		switch col.typ {
		case 0x01:
			if unsigned {
				vals[i] = strconv.FormatUint(uint64(p[pos]), 10)
			} else {
				vals[i] = strconv.FormatInt(int64(int8(p[pos])), 10)
			}
			pos++
		case 0x02, 0x0d:
			v := binary.LittleEndian.Uint16(p[pos:])
			if unsigned {
				vals[i] = strconv.FormatUint(uint64(v), 10)
			} else {
				vals[i] = strconv.FormatInt(int64(int16(v)), 10)
			}
			pos += 2
		case 0x03, 0x09:
			v := binary.LittleEndian.Uint32(p[pos:])
			if unsigned {
				vals[i] = strconv.FormatUint(uint64(v), 10)
			} else {
				vals[i] = strconv.FormatInt(int64(int32(v)), 10)
			}
			pos += 4
		case 0x08:
			v := binary.LittleEndian.Uint64(p[pos:])
			if unsigned {
				vals[i] = strconv.FormatUint(v, 10)
			} else {
				vals[i] = strconv.FormatInt(int64(v), 10)
			}
			pos += 8
		case 0x04:
			vals[i] = "float:" + strconv.FormatFloat(float64(math.Float32frombits(binary.LittleEndian.Uint32(p[pos:]))), 'g', -1, 32)
			pos += 4
		case 0x05:
			vals[i] = "double:" + strconv.FormatFloat(math.Float64frombits(binary.LittleEndian.Uint64(p[pos:])), 'g', -1, 64)
			pos += 8
		case 0x07, 0x0a, 0x0c:
			n := int(p[pos])
			d := p[pos+1 : pos+1+n]
			s := fmt.Sprintf("len%d:", n)
			if n >= 4 {
				s += fmt.Sprintf("%04d-%02d-%02d", binary.LittleEndian.Uint16(d), d[2], d[3])
			}
			if n >= 7 {
				s += fmt.Sprintf(" %02d:%02d:%02d", d[4], d[5], d[6])
			}
			if n == 11 {
				s += fmt.Sprintf(".%06d", binary.LittleEndian.Uint32(d[7:]))
			}
			vals[i] = s
			pos += 1 + n
		case 0x0b:
			n := int(p[pos])
			d := p[pos+1 : pos+1+n]
			s := fmt.Sprintf("len%d:", n)
			if n >= 8 {
				sign := ""
				if d[0] == 1 {
					sign = "-"
				}
				s += fmt.Sprintf("%s%dd %02d:%02d:%02d", sign, binary.LittleEndian.Uint32(d[1:]), d[5], d[6], d[7])
			}
			if n == 12 {
				s += fmt.Sprintf(".%06d", binary.LittleEndian.Uint32(d[8:]))
			}
			vals[i] = s
			pos += 1 + n
		default:
			n, w := rawLenenc(p[pos:])
			vals[i] = printable(p[pos+w : pos+w+int(n)])
			pos += w + int(n)
		}
	}
	return strings.Join(vals, " | ")
}

// printable shows UTF-8 text as it is and anything else as hex.
func printable(b []byte) string {
	if !utf8.Valid(b) || strings.ContainsFunc(string(b), func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "0x" + hex.EncodeToString(b)
	}
	return string(b)
}

var digitsRE = regexp.MustCompile(`[0-9]+(\.[0-9]+)?`)
