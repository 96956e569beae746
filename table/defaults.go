package table

import (
	"time"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/expression"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// DefaultValue is a column's value in a row that an INSERT does not give
// it: its default (CURRENT_TIMESTAMP is ctx's now), NULL, or for a NOT
// NULL column without a default 1364 in a strict sql_mode and the type's
// zero value otherwise.
func DefaultValue(ctx *expression.Ctx, col *catalog.ColumnInfo) (types.Datum, error) {
	switch {
	case col.DefaultNow:
		return Convert(ctx, types.NewTime(types.FromGoTime(ctx.NowInZone()), types.TimeDatetime, 6), col)
	case col.HasDefault && !col.DefaultNull:
		return Convert(ctx, types.NewString(col.Default), col)
	case col.HasDefault || !col.Type.NotNull() || col.AutoIncrement:
		return types.Null, nil
	}
	if ctx.Strict {
		return types.Null, errno.New(1364, "Field '%s' doesn't have a default value", col.Name)
	}
	return ZeroValue(col), nil
}

// ZeroValue is the implicit default of a NOT NULL column without one.
func ZeroValue(col *catalog.ColumnInfo) types.Datum {
	switch {
	case col.Type.IsString():
		return types.NewString("")
	case col.Type.Tp == mysql.TypeDouble || col.Type.Tp == mysql.TypeFloat:
		return types.NewFloat(0)
	case col.Type.Tp == mysql.TypeNewDecimal:
		d, _ := types.ParseDecimal("0")
		return types.NewDecimal(d)
	case col.Type.Tp == mysql.TypeDate:
		return types.NewTime(0, types.TimeDate, 0)
	case col.Type.Tp == mysql.TypeDatetime || col.Type.Tp == mysql.TypeTimestamp:
		return types.NewTime(0, types.TimeDatetime, 0)
	case col.Type.Tp == mysql.TypeDuration:
		return types.NewDuration(0, 0)
	case col.Type.Unsigned():
		return types.NewUint(0)
	}
	return types.NewInt(0)
}

// OriginDefault is the value, as text, that a column being added takes in
// the rows that exist (nil for NULL): its default (CURRENT_TIMESTAMP is
// now), NULL, or for a NOT NULL column without a default the type's zero
// value, as MySQL fills it. A default the column's type cannot hold is
// 1067.
func OriginDefault(col *catalog.ColumnInfo) (*string, error) {
	ctx := strictCtx()
	var v types.Datum
	switch {
	case col.HasDefault && !col.DefaultNull && !col.DefaultNow:
		var err error
		if v, err = Convert(ctx, types.NewString(col.Default), col); err != nil {
			return nil, errno.New(errno.ErInvalidDefault, "Invalid default value for '%s'", col.Name)
		}
	case col.DefaultNow:
		var err error
		if v, err = DefaultValue(ctx, col); err != nil {
			return nil, err
		}
	case col.HasDefault || !col.Type.NotNull():
		return nil, nil
	default:
		v = ZeroValue(col)
	}
	if v.IsNull() {
		return nil, nil
	}
	s := string(types.ToText(v))
	return &s, nil
}

// ConvertStrict converts v to col's type as an INSERT in a strict sql_mode
// would: a value that does not fit is an error.
func ConvertStrict(v types.Datum, col *catalog.ColumnInfo) (types.Datum, error) {
	return Convert(strictCtx(), v, col)
}

func strictCtx() *expression.Ctx { return &expression.Ctx{Strict: true, Now: time.Now()} }

// originDefaults are the values columns have in rows written before the
// columns were added (NULL for columns the table was created with).
func originDefaults(cols []*catalog.ColumnInfo) []types.Datum {
	out := make([]types.Datum, len(cols))
	for i, c := range cols {
		out[i] = originDefault(c)
	}
	return out
}

// originDefault is the value c has in rows written before it was added.
func originDefault(c *catalog.ColumnInfo) types.Datum {
	if c.OriginDefault == nil {
		return types.Null
	}
	v, err := Convert(nil, types.NewString(*c.OriginDefault), c)
	if err != nil {
		return types.Null
	}
	return v
}

// SameValue reports whether a and b are the same value: both NULL, or
// of one kind, equal and printed alike (so 1.0 and 1.00 differ, as an
// UPDATE that changes one to the other changes the row).
func SameValue(a, b types.Datum) bool {
	if a.IsNull() || b.IsNull() {
		return a.IsNull() && b.IsNull()
	}
	return a.Kind() == b.Kind() && types.Compare(a, b) == 0 && a.String() == b.String()
}
