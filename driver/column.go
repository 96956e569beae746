package driver

import (
	"time"

	"github.com/basalt-db/basalt/planner"
	"github.com/basalt-db/basalt/server"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// wireColumns appends to cols the wire description of each field.
func wireColumns(cols []server.Column, fields []planner.ResultField) []server.Column {
	for i := range fields {
		cols = append(cols, wireColumn(&fields[i]))
	}
	return cols
}

// wireColumn describes a result column for the client.
func wireColumn(f *planner.ResultField) server.Column {
	tp := f.Type
	c := server.Column{Schema: f.DB, Table: f.Table, OrgTable: f.OrgTable, Name: f.Name, OrgName: f.OrgName}
	c.Type, c.Length, c.Decimals = wireType(&tp)
	if tp.Flag&mysql.NotNullFlag != 0 {
		c.Flags |= server.FlagNotNull
	}
	if tp.Flag&mysql.PriKeyFlag != 0 {
		c.Flags |= server.FlagPriKey
	}
	if tp.Unsigned() {
		c.Flags |= server.FlagUnsigned
	}
	if tp.IsBinary() || (!tp.IsString() && tp.Tp != mysql.TypeNull) {
		c.Flags |= server.FlagBinary
	}
	if tp.IsString() && !tp.IsBinary() {
		c.Charset = uint16(types.CollationID(tp.CollationName()))
	}
	if tp.Tp == mysql.TypeNewDecimal || tp.IsInteger() || tp.Tp == mysql.TypeDouble || tp.Tp == mysql.TypeFloat {
		c.Flags |= server.FlagNum
	}
	return c
}

// wireType returns the protocol type, display length and decimals. A
// type without a display width (MySQL 8 dropped INT(11) and friends)
// has the length MySQL 8 still sends for it.
func wireType(tp *types.FieldType) (server.FieldType, uint32, uint8) {
	flen := tp.Flen
	if flen <= 0 {
		flen = defaultLength(tp)
	}
	switch tp.Tp {
	case mysql.TypeVarchar:
		return server.TypeVarString, uint32(flen * 4), 0
	case mysql.TypeString:
		if tp.IsBinary() {
			return server.TypeString, uint32(flen), 0
		}
		return server.TypeString, uint32(flen * 4), 0
	case mysql.TypeDouble, mysql.TypeFloat:
		dec := tp.Decimal
		if dec < 0 || dec > 30 {
			dec = server.NotFixedDecimals
		}
		return server.FieldType(tp.Tp), uint32(flen), uint8(dec)
	case mysql.TypeNewDecimal:
		// The precision, a point if there are decimals, and a sign.
		n := flen
		if tp.Decimal > 0 {
			n++
		}
		if !tp.Unsigned() {
			n++
		}
		return server.TypeNewDecimal, uint32(n), uint8(max(tp.Decimal, 0))
	case mysql.TypeDatetime, mysql.TypeTimestamp, mysql.TypeDuration:
		return server.FieldType(tp.Tp), uint32(flen), uint8(max(tp.Decimal, 0))
	case mysql.TypeEnum, mysql.TypeSet:
		return server.TypeString, uint32(flen * 4), 0
	}
	return server.FieldType(tp.Tp), uint32(flen), 0
}

// defaultLength is MySQL 8's display length of a type declared without
// one: the widest value's characters, sign included.
func defaultLength(tp *types.FieldType) int {
	u := tp.Unsigned()
	fsp := 0
	if tp.Decimal > 0 && tp.Decimal <= 6 {
		fsp = tp.Decimal + 1
	}
	switch tp.Tp {
	case mysql.TypeTiny:
		return map[bool]int{false: 4, true: 3}[u]
	case mysql.TypeShort:
		return map[bool]int{false: 6, true: 5}[u]
	case mysql.TypeInt24:
		return map[bool]int{false: 9, true: 8}[u]
	case mysql.TypeLong:
		return map[bool]int{false: 11, true: 10}[u]
	case mysql.TypeLonglong:
		return 20
	case mysql.TypeYear:
		return 4
	case mysql.TypeDate:
		return 10
	case mysql.TypeDatetime, mysql.TypeTimestamp:
		return 19 + fsp
	case mysql.TypeDuration:
		return 10 + fsp
	case mysql.TypeDouble:
		return 22
	case mysql.TypeFloat:
		return 12
	}
	return 0
}

// wireValue converts a datum to the wire value of a column of type t.
func wireValue(d types.Datum, t server.FieldType) server.Value {
	if d.IsNull() {
		return server.NullValue()
	}
	switch t {
	case server.TypeTiny, server.TypeShort, server.TypeLong, server.TypeLongLong, server.TypeInt24, server.TypeYear:
		switch d.Kind() {
		case types.KindInt:
			return server.IntValue(d.Int())
		case types.KindUint:
			return server.UintValue(d.Uint())
		}
		v, _, _ := types.ToInt(d)
		return server.IntValue(v)
	case server.TypeDouble:
		f, _ := types.ToFloat(d)
		return server.Float64Value(f + 0) // -0 + 0 is 0
	case server.TypeFloat:
		f, _ := types.ToFloat(d)
		return server.Float32Value(float32(f + 0))
	case server.TypeNewDecimal:
		if d.Kind() == types.KindDecimal {
			return server.DecimalValue(types.AppendDecimal(nil, d.Decimal()))
		}
		dec, _ := types.ToDecimal(d)
		return server.DecimalValue(types.AppendDecimal(nil, dec))
	case server.TypeDate, server.TypeDateTime, server.TypeTimestamp:
		if d.Kind() == types.KindTime {
			t0, _, _ := d.Time()
			switch t {
			case server.TypeDate:
				return server.DateValue(t0.Year(), t0.Month(), t0.Day())
			case server.TypeTimestamp:
				return server.TimestampValue(dateTime(t0))
			}
			return server.DateTimeValue(dateTime(t0))
		}
	case server.TypeTime:
		if d.Kind() == types.KindDuration {
			return server.TimeValue(time.Duration(d.Duration()) * time.Microsecond)
		}
	}
	return server.BytesValue(types.ToText(d))
}

func dateTime(t types.Time) server.DateTime {
	return server.DateTime{Year: t.Year(), Month: t.Month(), Day: t.Day(), Hour: t.Hour(), Minute: t.Minute(), Second: t.Second(), Microsecond: t.Microsecond()}
}
