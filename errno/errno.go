// Package errno is the MySQL error vocabulary: Error (a code, its SQLSTATE
// and a message in MySQL's wording), the codes Basalt raises and their
// SQLSTATEs. It is a leaf: the SQL layer returns its errors, the protocol
// server raises its own and writes any of them as ERR packets. Other errors
// (storage, internal) are mapped to codes at the session edge
// (session/errors.go).
package errno

import "fmt"

// Error is a MySQL error as a client reads it: a code, a five-character
// SQLSTATE and a message. It is the one error type of the tree that carries
// a MySQL code: the SQL layer returns it (or wraps it) to choose what the
// client sees, and the protocol layer writes it as an ERR packet.
type Error struct {
	Code  uint16
	State string
	Msg   string
	// Note marks a warning that SHOW WARNINGS lists at level Note.
	Note bool
}

func (e *Error) Error() string {
	return fmt.Sprintf("ERROR %d (%s): %s", e.Code, e.SQLState(), e.Msg)
}

// SQLState is the error's SQLSTATE; "HY000" when State is not five
// characters long.
func (e *Error) SQLState() string {
	if len(e.State) != 5 {
		return "HY000"
	}
	return e.State
}

// The codes Basalt raises. Names follow MySQL's ER_ constants.
const (
	ErDupEntry                     = 1062
	ErParse                        = 1064
	ErBadDB                        = 1049
	ErDBCreateExists               = 1007
	ErDBDropExists                 = 1008
	ErNoSuchTable                  = 1146
	ErTableExists                  = 1050
	ErBadTable                     = 1051
	ErBadField                     = 1054
	ErNonUniq                      = 1052
	ErDupFieldName                 = 1060
	ErDupKeyName                   = 1061
	ErCantDropFieldOrKey           = 1091
	ErMultiplePriKey               = 1068
	ErNoDB                         = 1046
	ErWrongValueCount              = 1136
	ErWrongValueCountOnRow         = 1136
	ErBadNull                      = 1048
	ErDataTooLong                  = 1406
	ErWarnDataOutOfRange           = 1264
	ErTruncatedWrongValue          = 1292
	ErTruncatedWrongValueFor       = 1366
	ErDivisionByZero               = 1365
	ErUnknownSystemVariable        = 1193
	ErWrongValueForVar             = 1231
	ErIncorrectGlobalLocalVar      = 1229
	ErNotSupportedYet              = 1235
	ErWrongArguments               = 1210
	ErUnknownStmtHandler           = 1243
	ErLockDeadlock                 = 1213
	ErLockWaitTimeout              = 1205
	ErNoSuchIndex                  = 1176
	ErKeyDoesNotExist              = 1176
	ErWrongAutoKey                 = 1075
	ErTooLongKey                   = 1071
	ErUnknown                      = 1105
	ErInvalidGroupFuncUse          = 1111
	ErWrongFieldWithGroup          = 1055
	ErFieldSpecifiedTwice          = 1110
	ErNoSuchThread                 = 1094
	ErQueryInterrupted             = 1317
	ErUnknownTable                 = 1109
	ErSubqueryNo1Row               = 1242
	ErOperandColumns               = 1241
	ErWrongDBName                  = 1102
	ErWrongTableName               = 1103
	ErWrongColumnName              = 1166
	ErTooBigPrecision              = 1426
	ErTooBigScale                  = 1425
	ErTooBigDisplaywidth           = 1439
	ErInvalidDefault               = 1067
	ErUnknownCharacterSet          = 1115
	ErCheckNotImplemented          = 1178
	ErIllegalReference             = 1247
	ErWrongUsage                   = 1221
	ErTxnRetryable                 = 8002
	ErAdminCheckTable              = 8003
	ErMemoryExceedForQuery         = 8175
	ErPDServerTimeout              = 9001 // TiDB's, for a cluster
	ErTiKVServerTimeout            = 9002
	ErRegionUnavailable            = 9005
	ErGCTooEarly                   = 9006
	ErSpDoesNotExist               = 1305
	ErFunctionNotExists            = 1305
	ErWrongParamcountToFunc        = 1582
	ErCantAggregate2Collation      = 1267
	ErUnknownTimeZone              = 1298
	ErWrongTypeForVar              = 1232
	ErVarCantBeRead                = 1233
	ErIncorrectValue               = 1231
	ErDerivedMustHaveAlias         = 1248
	ErWrongNumberOfColumnsInSelect = 1222
	ErNoTablesUsed                 = 1096
	ErStackOverrunNeedMore         = 1436
	ErWrongObject                  = 1347
	ErTrgAlreadyExists             = 1359
	ErTrgDoesNotExist              = 1360
	ErTrgCantChangeRow             = 1362
	ErTrgNoSuchRowInTrg            = 1363
	ErSpNoRetset                   = 1415
	ErCommitNotAllowedInSfOrTrg    = 1422
	ErTrgInWrongSchema             = 1435
	ErCantUpdateUsedTableInSfOrTrg = 1442
	ErReferencedTrgDoesNotExist    = 3011
	ErTooManyRows                  = 1172
	ErSpFetchNoData                = 1329
	ErMixOfGroupFuncAndFields      = 1140
	ErWarnTooFewRecords            = 1261
	ErWarnTooManyRecords           = 1262
	ErWarnNullToNotnull            = 1263
	ErOptionPreventsStatement      = 1290
	ErClientLocalFilesDisabled     = 3948
	ErNotAllowedCommand            = 1148
	ErFileNotFound                 = 29
	ErCantGetStat                  = 13
)

var states = map[uint16]string{
	ErDupEntry: "23000", ErParse: "42000", ErBadDB: "42000", ErDBCreateExists: "HY000",
	ErDBDropExists: "HY000", ErNoSuchTable: "42S02", ErTableExists: "42S01", ErBadTable: "42S02",
	ErBadField: "42S22", ErNonUniq: "23000", ErDupFieldName: "42S21", ErDupKeyName: "42000",
	ErCantDropFieldOrKey: "42000", ErMultiplePriKey: "42000", ErNoDB: "3D000",
	ErWrongValueCount: "21S01", ErBadNull: "23000", ErDataTooLong: "22001",
	ErWarnDataOutOfRange: "22003", ErTruncatedWrongValue: "22007", ErTruncatedWrongValueFor: "HY000",
	ErDivisionByZero: "22012", ErUnknownSystemVariable: "HY000", ErWrongValueForVar: "42000",
	ErIncorrectGlobalLocalVar: "HY000", ErNotSupportedYet: "42000", ErWrongArguments: "HY000",
	ErUnknownStmtHandler: "HY000", ErLockDeadlock: "40001", ErLockWaitTimeout: "HY000",
	ErNoSuchIndex: "42000", ErWrongAutoKey: "42000", ErTooLongKey: "42000", ErUnknown: "HY000",
	ErInvalidGroupFuncUse: "HY000", ErWrongFieldWithGroup: "42000", ErFieldSpecifiedTwice: "HY000",
	ErNoSuchThread: "HY000", ErQueryInterrupted: "70100", ErUnknownTable: "42S02",
	ErSubqueryNo1Row: "21000", ErOperandColumns: "21000", ErWrongDBName: "42000",
	ErWrongTableName: "42000", ErWrongColumnName: "42000", ErTooBigPrecision: "42000",
	ErTooBigScale: "42000", ErTooBigDisplaywidth: "42000", ErInvalidDefault: "42000",
	ErUnknownCharacterSet: "42000", ErCheckNotImplemented: "42000", ErIllegalReference: "42S22",
	ErWrongUsage: "HY000", ErTxnRetryable: "HY000", ErAdminCheckTable: "HY000",
	ErPDServerTimeout: "HY000", ErTiKVServerTimeout: "HY000", ErRegionUnavailable: "HY000",
	ErFunctionNotExists: "42000", ErWrongParamcountToFunc: "42000", ErCantAggregate2Collation: "HY000",
	ErUnknownTimeZone: "HY000", ErWrongTypeForVar: "42000", ErVarCantBeRead: "HY000",
	ErDerivedMustHaveAlias: "42000", ErWrongNumberOfColumnsInSelect: "21000",
	ErSpNoRetset: "0A000", ErTooManyRows: "42000", ErSpFetchNoData: "02000", ErMixOfGroupFuncAndFields: "42000",
	ErWarnTooFewRecords: "01000", ErWarnTooManyRecords: "01000", ErWarnNullToNotnull: "22004",
	ErNotAllowedCommand: "42000",
}

// New returns the error code with a message formatted from format and args.
func New(code uint16, format string, args ...any) *Error {
	st, ok := states[code]
	if !ok {
		st = "HY000"
	}
	return &Error{Code: code, State: st, Msg: fmt.Sprintf(format, args...)}
}
