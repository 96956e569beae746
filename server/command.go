package server

import (
	"fmt"
	"strconv"
	"time"

	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/metrics"
)

// Command bytes: the first byte of every packet that starts an exchange.
const (
	comSleep            = 0x00
	comQuit             = 0x01
	comInitDB           = 0x02
	comQuery            = 0x03
	comFieldList        = 0x04
	comCreateDB         = 0x05
	comDropDB           = 0x06
	comRefresh          = 0x07
	comShutdown         = 0x08
	comStatistics       = 0x09
	comProcessInfo      = 0x0a
	comConnect          = 0x0b
	comProcessKill      = 0x0c
	comDebug            = 0x0d
	comPing             = 0x0e
	comTime             = 0x0f
	comDelayedInsert    = 0x10
	comChangeUser       = 0x11
	comBinlogDump       = 0x12
	comTableDump        = 0x13
	comConnectOut       = 0x14
	comRegisterSlave    = 0x15
	comStmtPrepare      = 0x16
	comStmtExecute      = 0x17
	comStmtSendLongData = 0x18
	comStmtClose        = 0x19
	comStmtReset        = 0x1a
	comSetOption        = 0x1b
	comStmtFetch        = 0x1c
	comDaemon           = 0x1d
	comBinlogDumpGTID   = 0x1e
	comResetConnection  = 0x1f
)

// commandNames are the names SHOW PROCESSLIST gives commands.
var commandNames = [...]string{
	comSleep: "Sleep", comQuit: "Quit", comInitDB: "Init DB", comQuery: "Query",
	comFieldList: "Field List", comCreateDB: "Create DB", comDropDB: "Drop DB",
	comRefresh: "Refresh", comShutdown: "Shutdown", comStatistics: "Statistics",
	comProcessInfo: "Processlist", comConnect: "Connect", comProcessKill: "Kill",
	comDebug: "Debug", comPing: "Ping", comTime: "Time", comDelayedInsert: "Delayed insert",
	comChangeUser: "Change user", comBinlogDump: "Binlog Dump", comTableDump: "Table Dump",
	comConnectOut: "Connect Out", comRegisterSlave: "Register Replica",
	comStmtPrepare: "Prepare", comStmtExecute: "Execute", comStmtSendLongData: "Long Data",
	comStmtClose: "Close stmt", comStmtReset: "Reset stmt", comSetOption: "Set option",
	comStmtFetch: "Fetch", comDaemon: "Daemon", comBinlogDumpGTID: "Binlog Dump GTID",
	comResetConnection: "Reset Connection",
}

func commandName(cmd byte) string {
	if int(cmd) < len(commandNames) {
		return commandNames[cmd]
	}
	return "Error"
}

// COM_SET_OPTION's options.
const (
	optionMultiStatementsOn  = 0
	optionMultiStatementsOff = 1
)

// dispatch runs one command. data is the whole packet: the command byte,
// then its arguments. Every command but COM_QUIT, COM_STMT_SEND_LONG_DATA
// and COM_STMT_CLOSE is answered with exactly one response.
func (c *conn) dispatch(data []byte) {
	cmd, body := data[0], data[1:]
	c.srv.questions.Add(1)
	c.failed = false
	switch cmd {
	case comQuit:
		c.quit = true
	case comQuery:
		c.comQuery(body)
	case comPing:
		c.writeOK(0, 0, "")
	case comInitDB:
		c.comInitDB(body)
	case comFieldList:
		c.comFieldList(body)
	case comStmtPrepare:
		c.comStmtPrepare(body)
	case comStmtExecute:
		c.comStmtExecute(body)
	case comStmtSendLongData:
		c.comStmtSendLongData(body)
	case comStmtClose:
		c.comStmtClose(body)
	case comStmtReset:
		c.comStmtReset(body)
	case comSetOption:
		c.comSetOption(body)
	case comStatistics:
		c.comStatistics()
	case comProcessKill:
		c.comProcessKill(body)
	case comResetConnection:
		c.comResetConnection()
	case comChangeUser:
		c.comChangeUser(body)
	default:
		c.writeErr(errno.New(errno.ErUnknownCom, "Unknown command"))
	}
	metrics.ObserveCommand(cmd, !c.failed)
}

// malformed answers a command whose arguments cannot be parsed, and closes
// the connection: after a malformed packet nothing that follows can be
// trusted to be in step.
func (c *conn) malformed() {
	c.writeErr(errno.New(errno.ErMalformedPacket, "Malformed communication packet."))
	c.quit = true
}

// COM_QUERY: the rest of the packet is the SQL text.
func (c *conn) comQuery(body []byte) {
	sql := string(body)
	c.setInfo(sql)
	c.rw.reset(false)
	err := c.sess.ExecuteQuery(c.ctx, sql, c.multiStmts, &c.rw)
	c.finishResults(err)
	c.noteDB()
}

// COM_INIT_DB: the rest of the packet is the database name.
func (c *conn) comInitDB(body []byte) {
	if err := c.sess.UseDB(c.ctx, string(body)); err != nil {
		c.writeErr(err)
		return
	}
	c.noteDB()
	c.writeOK(0, 0, "")
}

// COM_FIELD_LIST: string<NUL> table, then the wildcard to the end. The
// response is one column definition per column (with a default value
// field), then EOF.
func (c *conn) comFieldList(body []byte) {
	r := newReader(body)
	table := string(r.nulBytes())
	wildcard := string(r.rest())
	cols, err := c.sess.FieldList(c.ctx, table, wildcard)
	if err != nil {
		c.writeErr(err)
		return
	}
	for i := range cols {
		c.pio.begin()
		c.pio.wbuf = appendColumnDef(c.pio.wbuf, &cols[i], c.collation, true)
		c.pio.end()
	}
	c.writeEOF(c.sess.Status())
}

// COM_SET_OPTION: a 2-byte option, answered with EOF.
func (c *conn) comSetOption(body []byte) {
	r := newReader(body)
	opt := r.uint16()
	switch {
	case r.bad:
		c.malformed()
	case opt == optionMultiStatementsOn:
		c.multiStmts = true
		c.writeEOF(c.sess.Status())
	case opt == optionMultiStatementsOff:
		c.multiStmts = false
		c.writeEOF(c.sess.Status())
	default:
		c.writeErr(errno.New(errno.ErUnknownCom, "Unknown command"))
	}
}

// COM_STATISTICS: answered with a bare human-readable string, not an OK.
func (c *conn) comStatistics() {
	s := c.srv
	up := time.Since(s.started)
	q := s.questions.Load()
	qps := 0.0
	if secs := up.Seconds(); secs >= 1 {
		qps = float64(q) / secs
	}
	c.pio.begin()
	c.pio.wbuf = fmt.Appendf(c.pio.wbuf,
		"Uptime: %d  Threads: %d  Questions: %d  Slow queries: 0  Opens: 0  Flush tables: 0  Open tables: 0  Queries per second avg: %.3f",
		int64(up.Seconds()), s.ConnectionCount(), q, qps)
	c.pio.end()
}

// COM_PROCESS_KILL: a 4-byte connection id. The SQL layer owns the
// privilege check of KILL, so the command runs as the statement it stands
// for, KILL CONNECTION id.
func (c *conn) comProcessKill(body []byte) {
	r := newReader(body)
	id := r.uint32()
	if r.bad {
		c.malformed()
		return
	}
	sql := "KILL CONNECTION " + strconv.FormatUint(uint64(id), 10)
	c.setInfo(sql)
	c.rw.reset(false)
	c.finishResults(c.sess.ExecuteQuery(c.ctx, sql, false, &c.rw))
}

// COM_RESET_CONNECTION: forget the session state but keep the connection
// and its user.
func (c *conn) comResetConnection() {
	c.closeStmts()
	if err := c.sess.Reset(c.ctx); err != nil {
		c.writeErr(err)
		return
	}
	c.multiStmts = c.caps&ClientMultiStatements != 0
	c.noteDB()
	c.writeOK(0, 0, "")
}

// COM_CHANGE_USER: authenticate again, as another user perhaps, and start
// a new session. On failure the connection closes.
func (c *conn) comChangeUser(body []byte) {
	h, err := parseChangeUser(body, c.caps)
	if err != nil {
		c.malformed()
		return
	}
	if h.collation == 0 {
		h.collation = c.collation
	}
	if err := c.login(h, true); err != nil {
		c.quit = true
	}
}
