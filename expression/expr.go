// Package expression compiles parsed SQL expressions into trees that
// evaluate over rows with MySQL's semantics: three-valued logic, implicit
// casts between numbers, strings and times, and MySQL's result types.
//
// An Expr is immutable once built and safe to evaluate concurrently; the
// per-statement state (parameters, the statement's clock, warnings,
// variables) comes in through Ctx.
package expression

import (
	"context"
	"time"

	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// Expr is a compiled expression.
type Expr interface {
	// Eval evaluates the expression over row.
	Eval(ctx *Ctx, row []types.Datum) (types.Datum, error)
	// Type is the expression's result type, for result-set metadata.
	Type() types.FieldType
}

// Session is what expressions read from the session.
type Session interface {
	CurrentDB() string
	User() string // user@host
	ConnectionID() uint64
	LastInsertID() uint64
	UserVar(name string) (types.Datum, bool)
	SysVar(name string, global bool) (types.Datum, error)
	FoundRows() uint64
	RowCount() int64
}

// Ctx is the state one statement's evaluation reads.
type Ctx struct {
	// Context is the statement's: functions that wait (SLEEP) stop when it
	// is cancelled (KILL QUERY) or expires (max_execution_time). nil
	// means never.
	Context context.Context
	Params  []types.Datum
	Now     time.Time
	Session Session
	// Strict is sql_mode's STRICT_TRANS_TABLES: conversions that lose data
	// fail instead of warning (for writes).
	Strict bool
	// Mode is the statement's sql_mode.
	Mode SQLMode
	// RowNum is the 1-based number of the row a write statement is
	// converting, for "at row N" in messages (0: row 1).
	RowNum int
	// InWrite says the statement changes data (INSERT, UPDATE, DELETE,
	// REPLACE), where strict mode turns some warnings into errors.
	InWrite bool
	// Warnings collects the statement's warnings, up to 64 (MySQL's
	// max_error_count); WarningsDropped counts those past it.
	Warnings        []*errno.Error
	WarningsDropped int
	// LastInsertIDSet records LAST_INSERT_ID(expr) calls.
	LastInsertIDSet func(v uint64)
	// Subq runs subqueries; Corr holds the frames of correlated values
	// (see Corr).
	Subq SubqueryRunner
	Corr [][]types.Datum

	// loc is the session's time zone, looked up once per statement.
	loc *time.Location
	// rands are the generators of the statement's RAND(N) calls.
	rands map[*Func]*mysqlRand

	// scratch holds the evaluated arguments of the functions being
	// applied, as a stack: each Func.Eval pushes its arguments and pops
	// them when done, so nested calls share one buffer.
	scratch []types.Datum
}

// Warn records a warning.
func (c *Ctx) Warn(e *errno.Error) {
	if len(c.Warnings) < 64 {
		c.Warnings = append(c.Warnings, e)
	} else {
		c.WarningsDropped++
	}
}

// Note records a note (a warning of level Note).
func (c *Ctx) Note(e *errno.Error) {
	e.Note = true
	c.Warn(e)
}

// Column reads one position of the row.
type Column struct {
	Idx int
	Tp  types.FieldType
	// Name is for EXPLAIN and error messages.
	Name string
}

func (c *Column) Eval(_ *Ctx, row []types.Datum) (types.Datum, error) { return row[c.Idx], nil }
func (c *Column) Type() types.FieldType                               { return c.Tp }

// Constant is a literal value.
type Constant struct {
	Value types.Datum
	Tp    types.FieldType
}

func (c *Constant) Eval(*Ctx, []types.Datum) (types.Datum, error) { return c.Value, nil }
func (c *Constant) Type() types.FieldType                         { return c.Tp }

// Param is a '?' of a prepared statement, read from Ctx.Params, or a
// trigger's NEW.col or OLD.col, whose type Tp is the column's.
type Param struct {
	Order int
	Tp    *types.FieldType
}

func (p *Param) Eval(ctx *Ctx, _ []types.Datum) (types.Datum, error) {
	if p.Order >= len(ctx.Params) {
		return types.Null, errno.New(errno.ErWrongArguments, "Incorrect arguments to EXECUTE")
	}
	return ctx.Params[p.Order], nil
}

// Type of a parameter is unknown until execution; report a string.
func (p *Param) Type() types.FieldType {
	if p.Tp != nil {
		return *p.Tp
	}
	return types.FieldType{Tp: mysql.TypeVarString, Flen: -1}
}

// TypeOf returns the natural field type of a datum's kind.
func TypeOf(d types.Datum) types.FieldType {
	switch d.Kind() {
	case types.KindInt:
		return types.FieldType{Tp: mysql.TypeLonglong, Flen: 21, Flag: mysql.BinaryFlag}
	case types.KindUint:
		return types.FieldType{Tp: mysql.TypeLonglong, Flen: 20, Flag: mysql.UnsignedFlag | mysql.BinaryFlag}
	case types.KindFloat:
		return types.FieldType{Tp: mysql.TypeDouble, Flen: 22, Decimal: 31, Flag: mysql.BinaryFlag}
	case types.KindDecimal:
		dec := 0
		if e := d.Decimal().Exponent; e < 0 {
			dec = int(-e)
		}
		return types.FieldType{Tp: mysql.TypeNewDecimal, Flen: 65, Decimal: dec, Flag: mysql.BinaryFlag}
	case types.KindString:
		return stringType(len(d.Bytes()), d.Collation())
	case types.KindTime:
		_, tt, fsp := d.Time()
		switch tt {
		case types.TimeDate:
			return types.FieldType{Tp: mysql.TypeDate, Flen: 10, Flag: mysql.BinaryFlag}
		case types.TimeTimestamp:
			return types.FieldType{Tp: mysql.TypeTimestamp, Flen: 19, Decimal: fsp, Flag: mysql.BinaryFlag}
		}
		return types.FieldType{Tp: mysql.TypeDatetime, Flen: 19, Decimal: fsp, Flag: mysql.BinaryFlag}
	case types.KindDuration:
		return types.FieldType{Tp: mysql.TypeDuration, Flen: 10, Decimal: d.Fsp(), Flag: mysql.BinaryFlag}
	case types.KindEnum, types.KindSet:
		return stringType(len(d.Bytes()), d.Collation())
	}
	return types.FieldType{Tp: mysql.TypeNull, Flag: mysql.BinaryFlag}
}

var (
	typeInt    = types.FieldType{Tp: mysql.TypeLonglong, Flen: 21, Flag: mysql.BinaryFlag}
	typeBool   = types.FieldType{Tp: mysql.TypeLonglong, Flen: 1, Flag: mysql.BinaryFlag | mysql.IsBooleanFlag}
	typeDouble = types.FieldType{Tp: mysql.TypeDouble, Flen: 22, Decimal: 31, Flag: mysql.BinaryFlag}
	typeString = types.FieldType{Tp: mysql.TypeVarString, Flen: 255, Charset: "utf8mb4"}
	// typeLongText is a string result of unbounded length.
	typeLongText = types.FieldType{Tp: mysql.TypeLongBlob, Flen: 4294967295, Charset: "utf8mb4", Collate: "utf8mb4_general_ci"}
)
