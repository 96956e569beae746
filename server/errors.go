package server

import (
	"context"
	"errors"
	"fmt"
)

// SQLError is an error as a MySQL client sees it: a code, a five-character
// SQLSTATE and a message. Sessions return it (or wrap it) to choose what the
// client reads; the server writes it as an ERR packet:
//
//	┌──────┬──────────┬─────┬──────────┬─────────────────────┐
//	│ 0xFF │ code (2) │ '#' │ state (5)│ message (to the end)│
//	└──────┴──────────┴─────┴──────────┴─────────────────────┘
//
// Any other error reaching the server is mapped by toSQLError.
type SQLError struct {
	Code    uint16
	State   string // SQLSTATE; empty means "HY000"
	Message string
}

func (e *SQLError) Error() string {
	return fmt.Sprintf("ERROR %d (%s): %s", e.Code, e.sqlState(), e.Message)
}

func (e *SQLError) sqlState() string {
	if len(e.State) != 5 {
		return "HY000"
	}
	return e.State
}

// MySQL error codes the protocol layer produces, and a few that every SQL
// layer needs at this edge.
const (
	CodeConCount           = 1040 // ER_CON_COUNT_ERROR
	CodeHandshake          = 1043 // ER_HANDSHAKE_ERROR
	CodeDBAccessDenied     = 1044 // ER_DBACCESS_DENIED_ERROR
	CodeAccessDenied       = 1045 // ER_ACCESS_DENIED_ERROR
	CodeNoDB               = 1046 // ER_NO_DB_ERROR
	CodeUnknownCom         = 1047 // ER_UNKNOWN_COM_ERROR
	CodeBadDB              = 1049 // ER_BAD_DB_ERROR
	CodeParse              = 1064 // ER_PARSE_ERROR
	CodeEmptyQuery         = 1065 // ER_EMPTY_QUERY
	CodeNoSuchThread       = 1094 // ER_NO_SUCH_THREAD
	CodeKillDenied         = 1095 // ER_KILL_DENIED_ERROR
	CodeUnknown            = 1105 // ER_UNKNOWN_ERROR
	CodeNetPacketTooLarge  = 1153 // ER_NET_PACKET_TOO_LARGE
	CodeNetPacketsOutOfOrd = 1156 // ER_NET_PACKETS_OUT_OF_ORDER
	CodeWrongArguments     = 1210 // ER_WRONG_ARGUMENTS
	CodeUnknownStmtHandler = 1243 // ER_UNKNOWN_STMT_HANDLER
	CodeNotSupportedAuth   = 1251 // ER_NOT_SUPPORTED_AUTH_MODE
	CodeQueryInterrupted   = 1317 // ER_QUERY_INTERRUPTED
	CodePSManyParams       = 1390 // ER_PS_MANY_PARAM
	CodePluginNotLoaded    = 1524 // ER_PLUGIN_IS_NOT_LOADED
	CodeMalformedPacket    = 1835 // ER_MALFORMED_PACKET
	CodeQueryTimeout       = 3024 // ER_QUERY_TIMEOUT

	CodeClientInteractionTimeout = 4031 // ER_CLIENT_INTERACTION_TIMEOUT
)

// sqlStates is the SQLSTATE of each code above; codes not listed are HY000.
var sqlStates = map[uint16]string{
	CodeConCount:           "08004",
	CodeHandshake:          "08S01",
	CodeDBAccessDenied:     "42000",
	CodeAccessDenied:       "28000",
	CodeNoDB:               "3D000",
	CodeUnknownCom:         "08S01",
	CodeBadDB:              "42000",
	CodeParse:              "42000",
	CodeEmptyQuery:         "42000",
	CodeNetPacketTooLarge:  "08S01",
	CodeNetPacketsOutOfOrd: "08S01",
	CodeNotSupportedAuth:   "08004",
	CodeQueryInterrupted:   "70100",
}

// NewError returns an error with the given code, the code's SQLSTATE, and a
// message formatted from format and args.
func NewError(code uint16, format string, args ...any) *SQLError {
	state, ok := sqlStates[code]
	if !ok {
		state = "HY000"
	}
	msg := format
	if len(args) > 0 {
		msg = fmt.Sprintf(format, args...)
	}
	return &SQLError{Code: code, State: state, Message: msg}
}

// ErrAccessDenied is MySQL's answer to a wrong user or password.
func ErrAccessDenied(user, host string, usingPassword bool) *SQLError {
	yes := "NO"
	if usingPassword {
		yes = "YES"
	}
	return NewError(CodeAccessDenied, "Access denied for user '%s'@'%s' (using password: %s)", user, host, yes)
}

// ErrBadDB is MySQL's answer to a database that does not exist.
func ErrBadDB(db string) *SQLError {
	return NewError(CodeBadDB, "Unknown database '%s'", db)
}

// ErrNoSuchThread is MySQL's answer to KILL of an unknown connection id.
func ErrNoSuchThread(id uint32) *SQLError {
	return NewError(CodeNoSuchThread, "Unknown thread id: %d", id)
}

// ErrQueryInterrupted is what a statement cancelled by KILL QUERY returns.
func ErrQueryInterrupted() *SQLError {
	return NewError(CodeQueryInterrupted, "Query execution was interrupted")
}

func errPacketTooLargeSQL() *SQLError {
	return NewError(CodeNetPacketTooLarge, "Got a packet bigger than 'max_allowed_packet' bytes")
}

func errWrongArguments(where string) *SQLError {
	return NewError(CodeWrongArguments, "Incorrect arguments to %s", where)
}

func errUnknownStmt(id uint32, where string) *SQLError {
	return NewError(CodeUnknownStmtHandler, "Unknown prepared statement handler (%d) given to %s", id, where)
}

// maxErrMessage is MYSQL_ERRMSG_SIZE less its NUL: clients keep no more.
const maxErrMessage = 511

// toSQLError maps any error a session returns to what the client reads:
// a *SQLError anywhere in the chain as it is, a cancelled context as
// ER_QUERY_INTERRUPTED (that is how KILL QUERY reaches a statement), an
// expired one as ER_QUERY_TIMEOUT, and anything else as ER_UNKNOWN_ERROR
// with the error's text.
func toSQLError(err error) *SQLError {
	var se *SQLError
	switch {
	case errors.As(err, &se):
		return se
	case errors.Is(err, context.Canceled):
		return ErrQueryInterrupted()
	case errors.Is(err, context.DeadlineExceeded):
		return NewError(CodeQueryTimeout, "Query execution was interrupted, maximum statement execution time exceeded")
	default:
		return NewError(CodeUnknown, "%s", err.Error())
	}
}

// appendErrPacket appends an ERR packet's payload.
func appendErrPacket(b []byte, e *SQLError) []byte {
	b = append(b, 0xff)
	b = appendUint16(b, e.Code)
	b = append(b, '#')
	b = append(b, e.sqlState()...)
	msg := e.Message
	if len(msg) > maxErrMessage {
		msg = msg[:maxErrMessage]
	}
	return append(b, msg...)
}
