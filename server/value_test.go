package server

import (
	"math"
	"testing"
	"time"
)

// TestValueText checks the text protocol's form of values that the
// round-trip tests do not reach.
func TestValueText(t *testing.T) {
	point1, point2, negZero := 0.1, 0.2, math.Copysign(0, -1) // not constants: those are exact
	double := &Column{Type: TypeDouble, Decimals: NotFixedDecimals}
	float := &Column{Type: TypeFloat, Decimals: NotFixedDecimals}
	for _, tc := range []struct {
		v    Value
		c    *Column
		want string
	}{
		{Float64Value(1), double, "1"},
		{Float64Value(negZero), double, "-0"},
		{Float64Value(100), double, "100"},
		{Float64Value(point1 + point2), double, "0.30000000000000004"},
		{Float64Value(1e14), double, "100000000000000"},
		{Float64Value(1e15), double, "1e15"},
		{Float64Value(123456789012345678), double, "1.2345678901234568e17"},
		{Float64Value(1e-15), double, "0.000000000000001"},
		{Float64Value(1.5e-16), double, "1.5e-16"},
		{Float64Value(-2.5e-300), double, "-2.5e-300"},
		{Float64Value(math.Inf(1)), double, "inf"},
		{Float64Value(2.5), &Column{Type: TypeDouble, Decimals: 3}, "2.500"},
		{Float64Value(1e20), &Column{Type: TypeDouble, Decimals: 1}, "100000000000000000000.0"},
		{Float32Value(3.14159265), float, "3.14159"},
		{Float32Value(123456789), float, "123457000"},
		{Float32Value(0.1), float, "0.1"},
		{Float32Value(1e20), float, "1e20"},
		{Float64Value(0.1), float, "0.1"}, // a DOUBLE value in a FLOAT column
		{IntValue(7), &Column{Type: TypeLong, Flags: FlagZerofill, Length: 5}, "00007"},
		{IntValue(5), &Column{Type: TypeYear}, "0005"},
		{DateTimeValue(DateTime{Year: 2024, Month: 1, Day: 2, Hour: 3, Minute: 4, Second: 5, Microsecond: 120000}), nil, "2024-01-02 03:04:05.120000"},
		{DateTimeValue(DateTime{Year: 2024, Month: 1, Day: 2, Hour: 3, Minute: 4, Second: 5, Microsecond: 120000}), &Column{Type: TypeDateTime, Decimals: 2}, "2024-01-02 03:04:05.12"},
		{DateTimeValue(DateTime{Year: 2024, Month: 1, Day: 2, Hour: 3}), &Column{Type: TypeDate}, "2024-01-02"},
		{TimeValue(-(100*time.Hour + time.Minute + 2*time.Second + 3*time.Microsecond)), nil, "-100:01:02.000003"},
		{TimeValue(5 * time.Second), &Column{Type: TypeTime}, "00:00:05"},
		{UintValue(math.MaxUint64), nil, "18446744073709551615"},
		{DecimalValue([]byte("-0.50")), nil, "-0.50"},
	} {
		if got := string(tc.v.appendText(nil, tc.c)); got != tc.want {
			t.Errorf("%s value %v: got %q, want %q", tc.v.Kind(), tc.v, got, tc.want)
		}
	}
}

func TestValueAccessors(t *testing.T) {
	dt := DateTime{Year: 9999, Month: 12, Day: 31, Hour: 23, Minute: 59, Second: 59, Microsecond: 999999}
	if got := DateTimeValue(dt).DateTime(); got != dt {
		t.Errorf("DateTime round trip: %+v", got)
	}
	d := -(838*time.Hour + 59*time.Minute + 59*time.Second + 999999*time.Microsecond)
	if got := TimeValue(d).Duration(); got != d {
		t.Errorf("Duration round trip: %v", got)
	}
	if v := IntValue(math.MinInt64); v.Int() != math.MinInt64 || v.Kind() != KindInt {
		t.Errorf("IntValue: %v", v)
	}
	if v := Float32Value(1.5); v.Float() != 1.5 || v.Kind() != KindFloat32 {
		t.Errorf("Float32Value: %v", v)
	}
	var zero Value
	if !zero.IsNull() || zero.String() != "NULL" {
		t.Errorf("the zero Value is %v", zero)
	}
}
