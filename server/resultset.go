package server

import (
	"errors"
	"fmt"
)

// A response to a command that runs statements is a sequence of results,
// each either an OK packet or a result set; SERVER_MORE_RESULTS_EXISTS in
// a result's closing status says another follows. An ERR packet may replace
// any result, or the end of a result set's rows, and ends the response.
//
// OK packet (CLIENT_PROTOCOL_41, no CLIENT_SESSION_TRACK):
//
//	0x00 | lenenc affected rows | lenenc last insert id | 2 status | 2 warnings | [lenenc info]
//
// The protocol documents the info as running to the end of the packet, but
// MySQL writes it length-encoded and libmysqlclient and libmariadb read it
// so; it is left out when empty.
//
// Result set:
//
//	lenenc column count
//	column count × column definition (column.go)
//	EOF                                       — only without CLIENT_DEPRECATE_EOF
//	rows: text (below) or binary (binary.go)
//	EOF, or with CLIENT_DEPRECATE_EOF an OK packet whose header is 0xFE
//
// EOF packet: 0xFE | 2 warnings | 2 status.
//
// Text row: each value as a lenenc string of its text form, NULL as 0xFB.

var errResultAfterLast = errors.New("server: WriteResult called after the last result")

// resultWriter is the conn's ResultWriter: it writes each result as it
// comes, in text rows or (for COM_STMT_EXECUTE) binary rows, and keeps what
// finishResults needs to close the response correctly.
type resultWriter struct {
	c      *conn
	binary bool
	// done is set once a result announcing no other has been written whole:
	// the response is complete, and nothing more may be written.
	done bool
	row  []Value // reused for each row
	// local is the open LOAD DATA LOCAL stream, if any (localinfile.go).
	local *localFile
}

func (w *resultWriter) reset(binary bool) {
	w.binary, w.done, w.local = binary, false, nil
}

// WriteResult implements ResultWriter.
func (w *resultWriter) WriteResult(r Result, more bool) error {
	c := w.c
	if w.done {
		if r.Rows != nil {
			r.Rows.Close()
		}
		return errResultAfterLast
	}
	if r.Rows == nil {
		status := c.sess.Status() | moreFlag(more)
		c.writeOKStatus(r.AffectedRows, r.LastInsertID, status, c.sess.WarningCount(), r.Info)
	} else if err := w.writeRows(r.Rows, more); err != nil {
		return err
	}
	w.done = !more
	return c.pio.err
}

// writeRows streams a result set. A failing Next leaves the rows written so
// far on the wire; the caller's error then becomes the ERR packet that ends
// the response in place of the closing EOF.
func (w *resultWriter) writeRows(rows Rows, more bool) error {
	c := w.c
	closed := false
	defer func() {
		if !closed {
			rows.Close()
		}
	}()
	cols := rows.Columns()
	if len(cols) == 0 {
		return fmt.Errorf("server: result set without columns")
	}
	c.writeColumns(cols)
	if c.caps&ClientDeprecateEOF == 0 {
		c.writeEOFStatus(c.sess.Status()|moreFlag(more), 0)
	}
	if cap(w.row) < len(cols) {
		w.row = make([]Value, len(cols))
	}
	row := w.row[:len(cols)]
	for {
		clear(row)
		ok, err := rows.Next(row)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		if w.binary {
			c.pio.begin()
			c.pio.wbuf, err = appendBinaryRow(c.pio.wbuf, cols, row)
			if err != nil {
				c.pio.abort()
				return err
			}
			c.pio.end()
		} else {
			c.writeTextRow(cols, row)
		}
		if c.pio.err != nil {
			return c.pio.err
		}
	}
	clear(row) // let go of the session's row buffers
	// Close before the end of the result: its error can still replace it.
	closed = true
	if err := rows.Close(); err != nil {
		return err
	}
	status := c.sess.Status() | moreFlag(more)
	warnings := c.sess.WarningCount()
	if c.caps&ClientDeprecateEOF != 0 {
		c.pio.begin()
		c.pio.wbuf = appendOK(c.pio.wbuf, 0xfe, 0, 0, status, warnings, "")
		c.pio.end()
	} else {
		c.writeEOFStatus(status, warnings)
	}
	return c.pio.err
}

func moreFlag(more bool) StatusFlags {
	if more {
		return StatusMoreResultsExists
	}
	return 0
}

// finishResults ends the response of a command that ran statements, given
// the session's error. It writes the error, or closes a response the
// session left open.
func (c *conn) finishResults(err error) {
	w := &c.rw
	switch {
	case c.pio.err != nil:
		// The client is gone; nothing more can be said.
	case err != nil && w.done:
		// The response is already complete: an ERR now would be read as the
		// answer to the client's next command.
		c.srv.logger.Error("session returned an error after its last result", "conn", c.id, "err", err)
		c.quit = true
	case err != nil:
		c.writeErr(err)
	case !w.done:
		// Nothing written, or a "more" that never came: end with an OK.
		c.writeOK(0, 0, "")
	}
}

func (c *conn) writeColumns(cols []Column) {
	c.pio.begin()
	c.pio.wbuf = appendLenencInt(c.pio.wbuf, uint64(len(cols)))
	c.pio.end()
	for i := range cols {
		c.pio.begin()
		c.pio.wbuf = appendColumnDef(c.pio.wbuf, &cols[i], c.collation, false)
		c.pio.end()
	}
}

// writeTextRow writes one text-protocol row.
func (c *conn) writeTextRow(cols []Column, row []Value) {
	c.pio.begin()
	b := c.pio.wbuf
	for i := range row {
		v := &row[i]
		switch v.kind {
		case KindNull:
			b = append(b, lenencNull)
		case KindBytes, KindDecimal:
			b = appendLenencBytes(b, v.b)
		default:
			start := len(b)
			b = append(b, 0)
			b = v.appendText(b, &cols[i])
			b = patchLenenc(b, start)
		}
	}
	c.pio.wbuf = b
	c.pio.end()
}

// appendOK appends an OK packet's payload with the given header byte: 0x00,
// or 0xFE where it replaces an EOF packet.
func appendOK(b []byte, header byte, affected, lastID uint64, status StatusFlags, warnings uint16, info string) []byte {
	b = append(b, header)
	b = appendLenencInt(b, affected)
	b = appendLenencInt(b, lastID)
	b = appendUint16(b, uint16(status))
	b = appendUint16(b, warnings)
	if info != "" {
		b = appendLenencString(b, info)
	}
	return b
}

// writeOK writes an OK packet with the session's status and warnings.
func (c *conn) writeOK(affected, lastID uint64, info string) {
	var status StatusFlags = StatusAutocommit
	var warnings uint16
	if c.sess != nil {
		status, warnings = c.sess.Status(), c.sess.WarningCount()
	}
	c.writeOKStatus(affected, lastID, status, warnings, info)
}

func (c *conn) writeOKStatus(affected, lastID uint64, status StatusFlags, warnings uint16, info string) {
	c.pio.begin()
	c.pio.wbuf = appendOK(c.pio.wbuf, 0x00, affected, lastID, status, warnings, info)
	c.pio.end()
}

// writeEOF writes the packet that ends a list of definitions or rows: an
// EOF packet, or with CLIENT_DEPRECATE_EOF an OK packet with header 0xFE.
func (c *conn) writeEOF(status StatusFlags) {
	if c.caps&ClientDeprecateEOF != 0 {
		c.pio.begin()
		c.pio.wbuf = appendOK(c.pio.wbuf, 0xfe, 0, 0, status, 0, "")
		c.pio.end()
		return
	}
	c.writeEOFStatus(status, 0)
}

// writeEOFStatus writes a classic EOF packet.
func (c *conn) writeEOFStatus(status StatusFlags, warnings uint16) {
	c.pio.begin()
	c.pio.wbuf = append(c.pio.wbuf, 0xfe)
	c.pio.wbuf = appendUint16(c.pio.wbuf, warnings)
	c.pio.wbuf = appendUint16(c.pio.wbuf, uint16(status))
	c.pio.end()
}

// writeErr writes err as an ERR packet (see toSQLError).
func (c *conn) writeErr(err error) {
	c.failed = true
	c.pio.begin()
	c.pio.wbuf = appendErrPacket(c.pio.wbuf, toSQLError(err))
	c.pio.end()
}
