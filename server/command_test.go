package server

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestCommands drives every command byte by byte with rawClient scripts
// (testdata/command): responses are printed packet by packet.
func TestCommands(t *testing.T) {
	ts := startServer(t, Config{})
	datadriven.RunTest(t, "testdata/command", func(t *testing.T, d *datadriven.TestData) string {
		return runRawScript(t, ts, d)
	})
}

// runRawScript runs the "raw" command: it logs in with rawClient
//
//	raw [user=U] [password=P] [db=D] [deprecate-eof] [multi]
//
// then runs each input line and prints what came back:
//
//	query SQL | init-db DB | ping | statistics | reset-connection | quit
//	field-list TABLE [WILDCARD]
//	set-option N
//	change-user USER PASSWORD|- DB|-
//	process-kill ID|self
//	prepare SQL
//	execute ID HEX        HEX: the parameter block after flags and iteration count
//	long-data ID PARAM TEXT
//	stmt-reset ID | stmt-close ID
//	send HEX              any packet; prints the first response packet
func runRawScript(t *testing.T, ts *testServer, d *datadriven.TestData) string {
	if d.Cmd != "raw" {
		t.Fatalf("unknown command %q", d.Cmd)
	}
	user, password, db := "root", "", ""
	var caps uint32
	for _, a := range d.CmdArgs {
		switch a.Key {
		case "user":
			user = a.Vals[0]
		case "password":
			password = a.Vals[0]
		case "db":
			db = a.Vals[0]
		case "deprecate-eof":
			caps |= rawDeprecateEOF
		case "multi":
			caps |= rawMultiStatements
		}
	}
	c, err := dialRaw(ts.addr, user, password, db, caps)
	if err != nil {
		return "connect: " + err.Error() + "\n"
	}
	defer c.close()

	var out strings.Builder
	for _, line := range strings.Split(d.Input, "\n") {
		if line == "" {
			continue
		}
		fmt.Fprintf(&out, "> %s\n", line)
		verb, arg, _ := strings.Cut(line, " ")
		for _, l := range c.run(t, verb, arg) {
			fmt.Fprintf(&out, "%s\n", l)
		}
	}
	return out.String()
}

func (c *rawClient) run(t *testing.T, verb, arg string) []string {
	fields := strings.Fields(arg)
	u32 := func(s string) []byte {
		n, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			t.Fatal(err)
		}
		return binary.LittleEndian.AppendUint32(nil, uint32(n))
	}
	// A write to a closed connection is not reported here: the read that
	// follows it reports the connection closed.
	send := func(payload []byte) { c.command(payload) }
	switch verb {
	case "query":
		send(append([]byte{comQuery}, arg...))
		return c.readResults(false)
	case "init-db":
		send(append([]byte{comInitDB}, arg...))
		return c.readResults(false)
	case "ping":
		send([]byte{comPing})
		return c.readResults(false)
	case "statistics":
		send([]byte{comStatistics})
		p, err := c.readPacket()
		if err != nil {
			return []string{"read: " + describeReadErr(err)}
		}
		return []string{"STATISTICS " + digitsRE.ReplaceAllString(string(p), "N")}
	case "reset-connection":
		send([]byte{comResetConnection})
		return c.readResults(false)
	case "quit":
		send([]byte{comQuit})
		return c.expectClosed()
	case "field-list":
		table, wildcard, _ := strings.Cut(arg, " ")
		send(append(append(append([]byte{comFieldList}, table...), 0), wildcard...))
		var lines []string
		for {
			p, err := c.readPacket()
			switch {
			case err != nil:
				return append(lines, "read: "+describeReadErr(err))
			case p[0] == 0xff:
				return append(lines, describeErr(p))
			case isEOF(p) && c.caps&rawDeprecateEOF != 0:
				return append(lines, "END "+describeOK(p))
			case isEOF(p):
				return append(lines, describeEOF(p))
			}
			_, l := parseColumn(p)
			lines = append(lines, l)
		}
	case "set-option":
		n, _ := strconv.Atoi(arg)
		send([]byte{comSetOption, byte(n), byte(n >> 8)})
		p, err := c.readPacket()
		switch {
		case err != nil:
			return []string{"read: " + describeReadErr(err)}
		case p[0] == 0xff:
			return []string{describeErr(p)}
		case c.caps&rawDeprecateEOF != 0:
			return []string{"END " + describeOK(p)}
		default:
			return []string{describeEOF(p)}
		}
	case "change-user":
		user, password, db := fields[0], fields[1], fields[2]
		if password == "-" {
			password = ""
		}
		if db == "-" {
			db = ""
		}
		auth := nativeScramble(c.scramble, password)
		p := append([]byte{comChangeUser}, user...)
		p = append(append(p, 0, byte(len(auth))), auth...)
		p = append(append(p, db...), 0)
		p = append(p, 45, 0)
		p = append(append(p, "mysql_native_password"...), 0)
		send(p)
		if err := c.finishAuth(password); err != nil {
			return []string{err.Error()}
		}
		return []string{"OK"}
	case "process-kill":
		if arg == "self" {
			arg = strconv.FormatUint(uint64(c.connID), 10)
		}
		send(append([]byte{comProcessKill}, u32(arg)...))
		return c.readResults(false)
	case "prepare":
		send(append([]byte{comStmtPrepare}, arg...))
		return c.readPrepare()
	case "execute":
		id := fields[0]
		block := ""
		if len(fields) > 1 {
			block = fields[1]
		}
		params, err := hex.DecodeString(block)
		if err != nil {
			t.Fatal(err)
		}
		p := append([]byte{comStmtExecute}, u32(id)...)
		p = append(p, 0, 1, 0, 0, 0)
		send(append(p, params...))
		return c.readResults(true)
	case "long-data":
		param, _ := strconv.Atoi(fields[1])
		p := append([]byte{comStmtSendLongData}, u32(fields[0])...)
		p = append(p, byte(param), byte(param>>8))
		send(append(p, strings.Join(fields[2:], " ")...))
		return nil
	case "stmt-reset":
		send(append([]byte{comStmtReset}, u32(arg)...))
		return c.readResults(false)
	case "stmt-close":
		send(append([]byte{comStmtClose}, u32(arg)...))
		return nil
	case "send":
		p, err := hex.DecodeString(arg)
		if err != nil {
			t.Fatal(err)
		}
		send(p)
		return c.readResults(false)
	}
	t.Fatalf("unknown raw verb %q", verb)
	return nil
}

// readPrepare reads COM_STMT_PREPARE's response.
func (c *rawClient) readPrepare() []string {
	p, err := c.readPacket()
	if err != nil {
		return []string{"read: " + describeReadErr(err)}
	}
	if p[0] == 0xff {
		return []string{describeErr(p)}
	}
	id := binary.LittleEndian.Uint32(p[1:])
	ncols := int(binary.LittleEndian.Uint16(p[5:]))
	nparams := int(binary.LittleEndian.Uint16(p[7:]))
	lines := []string{fmt.Sprintf("PREPARED id=%d columns=%d params=%d warnings=%d",
		id, ncols, nparams, binary.LittleEndian.Uint16(p[10:]))}
	for _, n := range []int{nparams, ncols} {
		if n == 0 {
			continue
		}
		for i := 0; i < n; i++ {
			p, err := c.readPacket()
			if err != nil {
				return append(lines, "read: "+describeReadErr(err))
			}
			_, l := parseColumn(p)
			lines = append(lines, l)
		}
		if c.caps&rawDeprecateEOF == 0 {
			p, err := c.readPacket()
			if err != nil {
				return append(lines, "read: "+describeReadErr(err))
			}
			lines = append(lines, describeEOF(p))
		}
	}
	return lines
}

func (c *rawClient) expectClosed() []string {
	p, err := c.readPacket()
	if err != nil {
		return []string{"read: " + describeReadErr(err)}
	}
	return []string{fmt.Sprintf("unexpected packet % x", p)}
}
