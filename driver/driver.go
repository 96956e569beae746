// Package driver adapts the SQL layer to the protocol server, as TiDB's
// server/driver_tidb.go does: it implements server.Driver, server.Session
// and server.Stmt over session.Driver, session.Session and session.Stmt,
// and is the one place where the two vocabularies meet:
//
//   - results: a session.RecordSet yields rows of types.Datum described by
//     planner.ResultField; the server reads rows of server.Value described
//     by server.Column (column.go here: wireColumn, wireValue);
//   - parameters: the server's bound server.Values become types.Datums
//     (params.go);
//   - connections: the server's ConnInfo, Credential and status flags, and
//     session.Connections (KILL, the process list, the auth cache,
//     max_connections) over *server.Server (conns.go).
//
// Errors need no conversion: both layers speak errno.Error.
//
// cmd/basalt wires the parts: server.New(cfg, driver.New(sqlDriver)), then
// sqlDriver.SetConnections(driver.Connections(srv)).
package driver

import (
	"context"
	"time"

	"github.com/basalt-db/basalt/server"
	"github.com/basalt-db/basalt/session"
	"github.com/basalt-db/basalt/types"
)

// Driver is a server.Driver over a session.Driver.
type Driver struct {
	d *session.Driver
}

// New returns the server's view of d.
func New(d *session.Driver) *Driver { return &Driver{d: d} }

// LookupUser implements server.Driver.
func (a *Driver) LookupUser(ctx context.Context, user, host string) (server.Credential, bool, error) {
	c, ok, err := a.d.LookupUser(ctx, user, host)
	if err != nil || !ok {
		return server.Credential{}, ok, err
	}
	return server.Credential{Plugin: c.Plugin, NativeHash: c.NativeHash, CheckPassword: c.CheckPassword}, true, nil
}

// OpenSession implements server.Driver.
func (a *Driver) OpenSession(ctx context.Context, info server.ConnInfo) (server.Session, error) {
	s, err := a.d.OpenSession(ctx, session.ConnInfo{
		ID:          info.ID,
		User:        info.User,
		Host:        info.Host,
		RemoteAddr:  info.RemoteAddr,
		DB:          info.DB,
		FoundRows:   info.Capabilities&server.ClientFoundRows != 0,
		Interactive: info.Capabilities&server.ClientInteractive != 0,
		LocalFiles:  info.Capabilities&server.ClientLocalFiles != 0,
		TLSCipher:   info.TLSCipher,
		TLSVersion:  info.TLSVersion,
	})
	if err != nil {
		return nil, err
	}
	c := &conn{s: s}
	c.w.c = c
	return c, nil
}

// RequireSecureTransport implements server.SecureTransportPolicy.
func (a *Driver) RequireSecureTransport() bool { return a.d.RequireSecureTransport() }

// conn is a server.Session over a session.Session. Like the session, it is
// used by one connection's goroutine at a time.
type conn struct {
	s *session.Session
	w writer // the session.ResultWriter handed to the session, reused
}

// ExecuteQuery implements server.Session.
func (c *conn) ExecuteQuery(ctx context.Context, sql string, multi bool, w server.ResultWriter) error {
	c.w.out = w
	err := c.s.ExecuteQuery(ctx, sql, multi, &c.w)
	c.w.out = nil
	return err
}

// Prepare implements server.Session.
func (c *conn) Prepare(ctx context.Context, sql string) (server.Stmt, error) {
	st, err := c.s.Prepare(ctx, sql)
	if err != nil {
		return nil, err
	}
	return &stmt{c: c, st: st, cols: wireColumns(nil, st.Fields())}, nil
}

// UseDB implements server.Session.
func (c *conn) UseDB(ctx context.Context, db string) error { return c.s.UseDB(ctx, db) }

// FieldList implements server.Session.
func (c *conn) FieldList(ctx context.Context, table, wildcard string) ([]server.Column, error) {
	fields, err := c.s.FieldList(ctx, table, wildcard)
	if err != nil {
		return nil, err
	}
	return wireColumns(nil, fields), nil
}

// Status implements server.Session.
func (c *conn) Status() server.StatusFlags {
	var f server.StatusFlags
	if c.s.Autocommit() {
		f |= server.StatusAutocommit
	}
	if c.s.InTransaction() {
		f |= server.StatusInTrans
	}
	return f
}

// WarningCount implements server.Session.
func (c *conn) WarningCount() uint16 { return c.s.WarningCount() }

// CurrentDB implements server.Session.
func (c *conn) CurrentDB() string { return c.s.CurrentDB() }

// Reset implements server.Session.
func (c *conn) Reset(ctx context.Context) error { return c.s.Reset(ctx) }

// Close implements server.Session.
func (c *conn) Close() error { return c.s.Close() }

// IdleTimeout implements server.IdleTimeouter: wait_timeout, or
// interactive_timeout for interactive clients.
func (c *conn) IdleTimeout() time.Duration { return c.s.IdleTimeout() }

// stmt is a server.Stmt over a session.Stmt.
type stmt struct {
	c    *conn
	st   *session.Stmt
	cols []server.Column // the result columns known at prepare
}

// NumParams implements server.Stmt.
func (s *stmt) NumParams() int { return s.st.NumParams() }

// Columns implements server.Stmt.
func (s *stmt) Columns() []server.Column { return s.cols }

// Execute implements server.Stmt. The parameters are converted to datums
// that own their bytes: the server reuses its buffer after the call.
func (s *stmt) Execute(ctx context.Context, params []server.Value, w server.ResultWriter) error {
	ps := make([]types.Datum, len(params))
	for i, p := range params {
		ps[i] = datumOf(p)
	}
	s.c.w.out = w
	err := s.st.Execute(ctx, ps, &s.c.w)
	s.c.w.out = nil
	return err
}

// Close implements server.Stmt.
func (s *stmt) Close() error { return s.st.Close() }
