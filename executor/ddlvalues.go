package executor

import (
	"time"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/ddl"
	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/expression"
	"github.com/basalt-db/basalt/types"
)

// DDLValues lends schema changes (ddl.Values) the conversions INSERT uses.
type DDLValues struct{}

func strictCtx() *expression.Ctx { return &expression.Ctx{Strict: true, Now: time.Now()} }

// Convert converts v to col's type as a strict INSERT would.
func (DDLValues) Convert(v types.Datum, col *catalog.ColumnInfo) (types.Datum, error) {
	return ConvertForColumn(strictCtx(), v, col)
}

// Reorg rewrites rows for a MODIFY COLUMN in progress (see Reorg in
// write.go).
func (DDLValues) Reorg(t *catalog.TableInfo) ddl.RowReorg { return NewReorg(t) }

// OriginDefault is the value a column being added takes in existing rows,
// as text: its default (CURRENT_TIMESTAMP is now), NULL, or for a NOT NULL
// column without a default the type's zero value, as MySQL fills it.
func (DDLValues) OriginDefault(col *catalog.ColumnInfo) (*string, error) {
	ctx := &Ctx{Eval: strictCtx()}
	var v types.Datum
	switch {
	case col.HasDefault && !col.DefaultNull && !col.DefaultNow:
		var err error
		if v, err = ConvertForColumn(ctx.Eval, types.NewString(col.Default), col); err != nil {
			return nil, errno.New(errno.ErInvalidDefault, "Invalid default value for '%s'", col.Name)
		}
	case col.DefaultNow:
		var err error
		if v, err = defaultValue(ctx, col); err != nil {
			return nil, err
		}
	case col.HasDefault || !col.Type.NotNull():
		return nil, nil
	default:
		v = zeroValue(col)
	}
	if v.IsNull() {
		return nil, nil
	}
	s := string(types.ToText(v))
	return &s, nil
}
