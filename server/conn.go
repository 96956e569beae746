package server

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/basalt-db/basalt/errno"
)

// connState is where a connection is in its life; only the connection's
// goroutine changes it.
type connState uint8

const (
	stateHandshake connState = iota // greeting and authentication
	stateIdle                       // waiting for the next command
	stateBusy                       // running a command
	stateClosed                     // done
)

// conn is one client connection. Its goroutine (serve) owns every field
// above mu; the fields below mu are also read by Server.ProcessList and
// written by Server.Kill and Server.Shutdown.
type conn struct {
	srv      *Server
	id       uint32
	nc       net.Conn
	pio      *packetIO
	scramble []byte
	secure   bool // TLS or a Unix socket: caching_sha2_password may take the password in cleartext

	tlsCipher, tlsVersion string // of a TLS connection (tls.go)

	caps      Capability // negotiated: the client's flags that the server supports
	collation uint16     // the client's collation id
	host      string     // client IP, or "localhost"
	addr      string     // client host:port
	sess      Session    // nil until authenticated

	idle IdleTimeouter // sess, if it has an idle timeout (wait_timeout)

	multiStmts bool // CLIENT_MULTI_STATEMENTS, as switched by COM_SET_OPTION
	quit       bool // set by a command handler: close after this command
	failed     bool // the command answered with an error: tidb_server_query_total's result

	stmts      map[uint32]*stmtState
	lastStmtID uint32

	rw resultWriter // the ResultWriter handed to the session, reused

	mu    sync.Mutex
	state connState
	// closing asks the connection to close instead of reading another
	// command (Kill, Shutdown, the connection's own end).
	closing bool
	user    string
	db      string
	command byte      // the command running, or comSleep
	info    string    // its statement text
	since   time.Time // when the command (or the idleness) began
	// idleTimeout is the session's idle timeout as the wait for a command
	// began (0: none); timedOut says the idle reaper has ended that wait.
	idleTimeout time.Duration
	timedOut    bool
	// ctx is the context of the running command. KILL QUERY cancels it;
	// the next command then starts with a fresh one. Replacing it only after
	// a cancel keeps the hot path free of allocations. Only the connection's
	// goroutine replaces it (under mu), so that goroutine reads it freely.
	ctx    context.Context
	cancel context.CancelFunc
}

func newConn(srv *Server, id uint32, nc net.Conn) *conn {
	c := &conn{
		srv:     srv,
		id:      id,
		nc:      nc,
		pio:     newPacketIO(nc, srv.MaxAllowedPacket()),
		addr:    nc.RemoteAddr().String(),
		stmts:   make(map[uint32]*stmtState),
		command: comConnect,
		since:   time.Now(),
	}
	c.rw.c = c
	c.ctx, c.cancel = context.WithCancel(srv.baseCtx)
	switch a := nc.RemoteAddr().(type) {
	case *net.TCPAddr:
		c.host = a.IP.String()
	case *net.UnixAddr:
		c.host, c.addr, c.secure = "localhost", "localhost", true
	default:
		c.host = c.addr
		if h, _, err := net.SplitHostPort(c.addr); err == nil {
			c.host = h
		}
	}
	return c
}

// serve runs the connection to its end: handshake, then one command at a
// time until the client quits, the connection breaks or is killed, or the
// server shuts down. A panic anywhere ends only this connection.
func (c *conn) serve() {
	defer c.close()
	defer func() {
		if r := recover(); r != nil {
			c.srv.logger.Error("panic in connection", "conn", c.id, "panic", r, "stack", string(debug.Stack()))
		}
	}()
	if err := c.handshake(); err != nil {
		c.srv.logger.Debug("handshake failed", "conn", c.id, "addr", c.addr, "err", err)
		return
	}
	for {
		c.pio.resetSeq()
		if !c.setIdle() {
			return
		}
		data, err := c.pio.readPacket()
		if err != nil {
			c.readFailed(err)
			return
		}
		if len(data) == 0 {
			c.writeErr(errno.New(errno.ErMalformedPacket, "Malformed communication packet."))
			c.pio.flush()
			return
		}
		if !c.setBusy(data[0]) {
			return
		}
		c.dispatchSafe(data)
		c.pio.flush()
		if c.quit || c.pio.err != nil {
			return
		}
	}
}

// handshake greets the client, authenticates it and opens its session.
func (c *conn) handshake() error {
	if t := c.srv.cfg.ConnectTimeout; t > 0 {
		c.nc.SetDeadline(time.Now().Add(t))
		defer c.nc.SetDeadline(time.Time{})
	}
	var err error
	if c.scramble, err = newScramble(); err != nil {
		return err
	}
	c.pio.begin()
	c.pio.wbuf = appendGreeting(c.pio.wbuf, c.srv.cfg.ServerVersion, c.id, c.scramble,
		c.srv.caps, c.srv.cfg.Collation, StatusAutocommit, c.srv.cfg.DefaultAuthPlugin)
	c.pio.end()
	if err := c.pio.flush(); err != nil {
		return err
	}
	data, err := c.pio.readPacket()
	if err != nil {
		if err == errPacketTooLarge {
			c.writeErr(errPacketTooLargeSQL())
			c.pio.flush()
		}
		return err
	}
	h, err := parseHandshakeResponse(data, c.srv.caps)
	if err == errSSLRequest && c.srv.TLSEnabled() {
		if err := c.upgradeTLS(); err != nil {
			return err
		}
		if data, err = c.pio.readPacket(); err != nil {
			return err
		}
		if h, err = parseHandshakeResponse(data, c.srv.caps); err == errSSLRequest {
			err = errMalformed
		}
	}
	if err != nil {
		switch err {
		case errOldClient:
			c.writeErr(errno.New(errno.ErNotSupportedAuthMode, "Client does not support authentication protocol requested by server; consider upgrading MySQL client"))
		case errSSLRequest:
			c.writeErr(errno.New(errno.ErHandshake, "Bad handshake: TLS is not supported"))
		default:
			c.writeErr(errno.New(errno.ErHandshake, "Bad handshake"))
		}
		c.pio.flush()
		return err
	}
	c.caps = h.caps & c.srv.caps
	if c.refuseInsecure() {
		c.writeErr(errSecureTransportRequired())
		c.pio.flush()
		return errSecureTransportRequired()
	}
	return c.login(h, false)
}

// login authenticates h's user and opens the session, ending with OK or ERR.
// For COM_CHANGE_USER (changeUser), the old session is closed first.
func (c *conn) login(h *handshakeResponse, changeUser bool) error {
	ctx := c.ctx
	if err := c.authenticate(ctx, h.user, h.authResp, h.plugin); err != nil {
		c.writeErr(err)
		c.pio.flush()
		return err
	}
	if changeUser {
		c.closeSession()
	}
	c.collation = h.collation
	sess, err := c.srv.drv.OpenSession(ctx, ConnInfo{
		ID:           c.id,
		User:         h.user,
		Host:         c.host,
		RemoteAddr:   c.addr,
		DB:           h.db,
		Capabilities: c.caps,
		Collation:    c.collation,
		Attrs:        h.attrs,
		TLSCipher:    c.tlsCipher,
		TLSVersion:   c.tlsVersion,
	})
	if err != nil {
		c.writeErr(err)
		c.pio.flush()
		return err
	}
	c.sess = sess
	c.idle, _ = sess.(IdleTimeouter)
	c.multiStmts = c.caps&ClientMultiStatements != 0
	c.mu.Lock()
	c.user, c.db = h.user, sess.CurrentDB()
	c.mu.Unlock()
	c.writeOK(0, 0, "")
	return c.pio.flush()
}

// closeSession closes the session and its prepared statements.
func (c *conn) closeSession() {
	c.closeStmts()
	if c.sess != nil {
		c.safely("closing session", func() { c.sess.Close() })
		c.sess, c.idle = nil, nil
	}
}

// close ends the connection: the client sees it closed at once; the
// session's statements and the session are closed (rolling back); then the
// server forgets the connection.
func (c *conn) close() {
	c.mu.Lock()
	c.state, c.closing = stateClosed, true
	c.cancel()
	c.mu.Unlock()
	c.nc.Close()
	c.closeSession()
	c.srv.unregister(c)
}

// safely runs f, logging a panic instead of propagating it.
func (c *conn) safely(what string, f func()) {
	defer func() {
		if r := recover(); r != nil {
			c.srv.logger.Error("panic "+what, "conn", c.id, "panic", r, "stack", string(debug.Stack()))
		}
	}()
	f()
}

// dispatchSafe runs one command. A panic is logged with its stack and
// reported to the client as ER_UNKNOWN_ERROR; the connection then closes,
// because the session's state is no longer known.
func (c *conn) dispatchSafe(data []byte) {
	defer func() {
		if r := recover(); r != nil {
			c.srv.logger.Error("panic running command", "conn", c.id, "command", commandName(data[0]),
				"panic", r, "stack", string(debug.Stack()))
			c.pio.abort()
			c.writeErr(errno.New(errno.ErUnknown, "Internal error: %v", r))
			c.quit = true
		}
	}()
	c.dispatch(data)
}

// readFailed answers what can be answered about a failed read, then the
// connection closes.
func (c *conn) readFailed(err error) {
	switch {
	case err == errPacketTooLarge:
		c.writeErr(errPacketTooLargeSQL())
		c.pio.flush()
		c.lingeringClose()
	case err == errPacketsOutOfOrder:
		c.writeErr(errno.New(errno.ErNetPacketsOutOfOrder, "Got packets out of order"))
		c.pio.flush()
	case errors.Is(err, os.ErrDeadlineExceeded):
		// The idle timeout: say why before closing, as MySQL 8.0.24+ does.
		// The client reads it when it next sends a command (clients accept
		// an error packet whose sequence id they did not expect).
		c.writeErr(errno.New(errno.ErClientInteractionTimeout, "The client was disconnected by the server because of inactivity. See wait_timeout and interactive_timeout for configuring this behavior."))
		c.pio.flush()
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
	default:
		c.srv.logger.Debug("read failed", "conn", c.id, "err", err)
	}
}

// lingeringClose stops sending and discards what the client is still
// sending, for a moment, before the connection closes. Closing a socket
// with unread input resets it, and the client would lose the error just
// written before reading it.
func (c *conn) lingeringClose() {
	if tc, ok := c.nc.(interface{ CloseWrite() error }); ok {
		tc.CloseWrite()
	}
	c.nc.SetReadDeadline(time.Now().Add(2 * time.Second))
	io.Copy(io.Discard, c.pio.r)
}

// setIdle marks the end of a command. It reports false if the connection
// is to close instead of reading another.
func (c *conn) setIdle() bool {
	var idle time.Duration
	if c.idle != nil {
		idle = c.idle.IdleTimeout()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return false
	}
	c.idleTimeout = idle
	c.state = stateIdle
	c.command = comSleep
	c.info = ""
	c.since = time.Now()
	return true
}

// setBusy marks the start of command cmd, with a live context. It reports
// false if the connection is to close instead of running it.
func (c *conn) setBusy(cmd byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return false
	}
	c.state = stateBusy
	c.command = cmd
	c.since = time.Now()
	if c.timedOut {
		// The reaper ended the wait just as this command arrived whole:
		// run it, and take back the deadline that woke the read.
		c.timedOut = false
		c.nc.SetReadDeadline(time.Time{})
	}
	if c.ctx.Err() != nil {
		c.ctx, c.cancel = context.WithCancel(c.srv.baseCtx)
	}
	return true
}

// setInfo records the statement text the command runs, for SHOW PROCESSLIST.
func (c *conn) setInfo(info string) {
	c.mu.Lock()
	c.info = info
	c.mu.Unlock()
}

// noteDB records the session's current database after a command that may
// have changed it.
func (c *conn) noteDB() {
	db := c.sess.CurrentDB()
	c.mu.Lock()
	c.db = db
	c.mu.Unlock()
}

// kill cancels the running statement and, unless queryOnly, closes the
// connection. Safe to call from any goroutine.
func (c *conn) kill(queryOnly bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if queryOnly {
		if c.state == stateBusy {
			c.cancel()
		}
		return
	}
	c.closing = true
	c.cancel()
	c.nc.Close()
}

// expireIfIdle ends the wait for a command of a connection that has waited
// longer than its idle timeout: an expired read deadline wakes the read,
// which fails with os.ErrDeadlineExceeded, and the connection's goroutine
// says why and closes (readFailed). Safe to call from any goroutine.
func (c *conn) expireIfIdle(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state != stateIdle || c.idleTimeout <= 0 || c.timedOut || now.Sub(c.since) < c.idleTimeout {
		return
	}
	c.timedOut = true
	c.nc.SetReadDeadline(now)
}

// closeWhenIdle closes the connection now if it waits for a command, and
// after its command otherwise (graceful shutdown).
func (c *conn) closeWhenIdle() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closing = true
	if c.state != stateBusy {
		c.nc.Close()
	}
}

// processInfo snapshots the connection for SHOW PROCESSLIST.
func (c *conn) processInfo(now time.Time) ProcessInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := ProcessInfo{
		ID:      c.id,
		User:    c.user,
		Host:    c.addr,
		DB:      c.db,
		Command: commandName(c.command),
		Time:    now.Sub(c.since),
		Info:    c.info,
	}
	switch {
	case c.state == stateHandshake:
		p.User, p.State = "unauthenticated user", "login"
	case c.state == stateBusy && (c.command == comQuery || c.command == comStmtExecute):
		p.State = "executing"
	}
	return p
}
