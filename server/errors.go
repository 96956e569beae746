package server

import (
	"context"
	"errors"

	"github.com/basalt-db/basalt/errno"
)

// The errors the protocol layer raises are *errno.Error, the tree's one
// error type with a MySQL code; the Session returns it (or wraps it) to
// choose what the client reads. The server writes it as an ERR packet:
//
//	┌──────┬──────────┬─────┬──────────┬─────────────────────┐
//	│ 0xFF │ code (2) │ '#' │ state (5)│ message (to the end)│
//	└──────┴──────────┴─────┴──────────┴─────────────────────┘
//
// Any other error reaching the server is mapped by toSQLError.

func errPacketTooLargeSQL() *errno.Error {
	return errno.New(errno.ErNetPacketTooLarge, "Got a packet bigger than 'max_allowed_packet' bytes")
}

func errWrongArguments(where string) *errno.Error {
	return errno.New(errno.ErWrongArguments, "Incorrect arguments to %s", where)
}

func errUnknownStmt(id uint32, where string) *errno.Error {
	return errno.New(errno.ErUnknownStmtHandler, "Unknown prepared statement handler (%d) given to %s", id, where)
}

// maxErrMessage is MYSQL_ERRMSG_SIZE less its NUL: clients keep no more.
const maxErrMessage = 511

// toSQLError maps any error a session returns to what the client reads:
// an *errno.Error anywhere in the chain as it is, a cancelled context as
// ER_QUERY_INTERRUPTED (that is how KILL QUERY reaches a statement), an
// expired one as ER_QUERY_TIMEOUT, and anything else as ER_UNKNOWN_ERROR
// with the error's text.
func toSQLError(err error) *errno.Error {
	var se *errno.Error
	switch {
	case errors.As(err, &se):
		return se
	case errors.Is(err, context.Canceled):
		return errno.QueryInterrupted()
	case errors.Is(err, context.DeadlineExceeded):
		return errno.New(errno.ErQueryTimeout, "Query execution was interrupted, maximum statement execution time exceeded")
	default:
		return errno.New(errno.ErUnknown, "%s", err.Error())
	}
}

// appendErrPacket appends an ERR packet's payload.
func appendErrPacket(b []byte, e *errno.Error) []byte {
	b = append(b, 0xff)
	b = appendUint16(b, e.Code)
	b = append(b, '#')
	b = append(b, e.SQLState()...)
	msg := e.Msg
	if len(msg) > maxErrMessage {
		msg = msg[:maxErrMessage]
	}
	return append(b, msg...)
}
