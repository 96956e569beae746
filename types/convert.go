package types

import (
	"bytes"
	"math"
	"strconv"
	"strings"

	"github.com/cockroachdb/apd/v3"
)

// This file converts datums between kinds with MySQL's lenient rules: a
// string used as a number contributes its longest numeric prefix ('12abc'
// is 12, 'abc' is 0), with truncated set so the caller can warn.

// decimalCtx computes decimals with the 65 digits MySQL allows, rounding
// half away from zero as MySQL does.
var decimalCtx = func() *apd.Context {
	c := apd.BaseContext.WithPrecision(65)
	c.Rounding = apd.RoundHalfUp
	return c
}()

// DecimalContext returns the context decimal arithmetic uses.
func DecimalContext() *apd.Context { return decimalCtx }

// numericPrefix returns the longest prefix of s (after leading spaces) that
// reads as a number, and whether anything was dropped.
func numericPrefix(s []byte) (string, bool) {
	t := bytes.TrimLeft(s, " \t\n\r")
	i := 0
	if i < len(t) && (t[i] == '+' || t[i] == '-') {
		i++
	}
	digits := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
		digits++
	}
	if i < len(t) && t[i] == '.' {
		i++
		for i < len(t) && t[i] >= '0' && t[i] <= '9' {
			i++
			digits++
		}
	}
	if digits > 0 && i < len(t) && (t[i] == 'e' || t[i] == 'E') {
		j := i + 1
		if j < len(t) && (t[j] == '+' || t[j] == '-') {
			j++
		}
		if j < len(t) && t[j] >= '0' && t[j] <= '9' {
			for j < len(t) && t[j] >= '0' && t[j] <= '9' {
				j++
			}
			i = j
		}
	}
	if digits == 0 {
		return "0", len(bytes.TrimSpace(s)) > 0
	}
	rest := bytes.TrimRight(t[i:], " \t\n\r")
	return string(t[:i]), len(rest) > 0
}

// ToFloat converts d to a float64. truncated reports a string with
// non-numeric characters.
func ToFloat(d Datum) (f float64, truncated bool) {
	switch d.k {
	case KindInt:
		return float64(d.i), false
	case KindUint:
		return float64(uint64(d.i)), false
	case KindFloat:
		return d.Float(), false
	case KindDecimal:
		f, _ := d.d.Float64()
		return f, false
	case KindString:
		p, tr := numericPrefix(d.b)
		f, err := strconv.ParseFloat(p, 64)
		if err != nil {
			// Out of range: ParseFloat returns ±Inf; clamp as MySQL does.
			if math.IsInf(f, 1) {
				return math.MaxFloat64, true
			}
			if math.IsInf(f, -1) {
				return -math.MaxFloat64, true
			}
		}
		return f, tr
	case KindTime:
		return timeNumber(d), false
	case KindDuration:
		return durationNumber(d.i), false
	case KindEnum, KindSet:
		return float64(uint64(d.i)), false
	}
	return 0, false
}

// timeNumber is a time as MySQL's number form, e.g. 20240131123000.
func timeNumber(d Datum) float64 {
	t := Time(d.i)
	date := float64(t.Year()*10000 + t.Month()*100 + t.Day())
	if d.tt == TimeDate {
		return date
	}
	v := date*1e6 + float64(t.Hour()*10000+t.Minute()*100+t.Second())
	if d.fsp > 0 {
		v += float64(t.Microsecond()) / 1e6
	}
	return v
}

func durationNumber(us int64) float64 {
	neg := us < 0
	if neg {
		us = -us
	}
	s := us / 1_000_000
	v := float64(s/3600*10000+s/60%60*100+s%60) + float64(us%1_000_000)/1e6
	if neg {
		v = -v
	}
	return v
}

// ToInt converts d to an int64, rounding fractions half away from zero.
// overflow reports a value outside int64 (clamped); truncated reports a
// string with non-numeric characters.
func ToInt(d Datum) (v int64, overflow, truncated bool) {
	switch d.k {
	case KindInt:
		return d.i, false, false
	case KindUint:
		if uint64(d.i) > math.MaxInt64 {
			return math.MaxInt64, true, false
		}
		return d.i, false, false
	case KindString:
		p, tr := numericPrefix(d.b)
		if n, err := strconv.ParseInt(p, 10, 64); err == nil {
			return n, false, tr
		}
		f, _ := strconv.ParseFloat(p, 64)
		v, of := floatToInt(f)
		return v, of, tr
	case KindDecimal:
		var r apd.Decimal
		decimalCtx.RoundToIntegralValue(&r, d.d)
		n, err := r.Int64()
		if err != nil {
			if r.Negative {
				return math.MinInt64, true, false
			}
			return math.MaxInt64, true, false
		}
		return n, false, false
	case KindTime, KindDuration:
		f, _ := ToFloat(d)
		v, of := floatToInt(f)
		return v, of, false
	case KindEnum, KindSet:
		return ToInt(NewUint(uint64(d.i)))
	}
	f, _ := ToFloat(d)
	v, of := floatToInt(f)
	return v, of, false
}

func floatToInt(f float64) (int64, bool) {
	r := math.Round(f)
	if r >= 9.223372036854775807e18 {
		return math.MaxInt64, true
	}
	if r < -9.223372036854775808e18 {
		return math.MinInt64, true
	}
	return int64(r), false
}

// ToUint converts d to a uint64 for an UNSIGNED column. negative reports a
// value below zero (the result is 0), overflow one above the maximum.
func ToUint(d Datum) (v uint64, negative, overflow, truncated bool) {
	switch d.k {
	case KindUint, KindEnum, KindSet:
		return uint64(d.i), false, false, false
	case KindInt:
		if d.i < 0 {
			return 0, true, false, false
		}
		return uint64(d.i), false, false, false
	case KindString:
		p, tr := numericPrefix(d.b)
		if n, err := strconv.ParseUint(p, 10, 64); err == nil {
			return n, false, false, tr
		}
		f, _ := strconv.ParseFloat(p, 64)
		u, neg, of := floatToUint(f)
		return u, neg, of, tr
	}
	if d.k == KindDecimal {
		var r apd.Decimal
		decimalCtx.RoundToIntegralValue(&r, d.d)
		if r.Negative && !r.IsZero() {
			return 0, true, false, false
		}
		var bi apd.BigInt
		bi.Set(&r.Coeff)
		if r.Exponent > 0 {
			s := r.Text('f')
			n, err := strconv.ParseUint(s, 10, 64)
			return n, false, err != nil, false
		}
		if !bi.IsUint64() {
			return math.MaxUint64, false, true, false
		}
		return bi.Uint64(), false, false, false
	}
	f, _ := ToFloat(d)
	u, neg, of := floatToUint(f)
	return u, neg, of, false
}

func floatToUint(f float64) (uint64, bool, bool) {
	r := math.Round(f)
	if r < 0 {
		return 0, true, false
	}
	if r >= 1.8446744073709552e19 {
		return math.MaxUint64, false, true
	}
	return uint64(r), false, false
}

// ToDecimal converts d to a decimal.
func ToDecimal(d Datum) (dec *apd.Decimal, truncated bool) {
	switch d.k {
	case KindDecimal:
		return d.d, false
	case KindInt:
		return apd.New(d.i, 0), false
	case KindUint, KindEnum, KindSet:
		var r apd.Decimal
		r.Coeff.SetUint64(uint64(d.i))
		return &r, false
	case KindFloat:
		var r apd.Decimal
		if _, err := r.SetFloat64(d.Float()); err != nil {
			return apd.New(0, 0), true
		}
		return &r, false
	case KindString:
		p, tr := numericPrefix(d.b)
		r, _, err := apd.NewFromString(p)
		if err != nil {
			return apd.New(0, 0), true
		}
		return r, tr
	}
	f, _ := ToFloat(d)
	var r apd.Decimal
	r.SetFloat64(f)
	return &r, false
}

// ToBool reports d's truth as a condition (NULL is handled by the caller).
func ToBool(d Datum) bool {
	switch d.k {
	case KindInt, KindUint, KindEnum, KindSet:
		return d.i != 0
	case KindDecimal:
		return !d.d.IsZero()
	case KindTime:
		return d.i != 0
	}
	f, _ := ToFloat(d)
	return f != 0
}

// ToText returns d's text form as bytes (a string datum's own bytes).
func ToText(d Datum) []byte {
	if d.k == KindString || d.k == KindEnum || d.k == KindSet {
		return d.b
	}
	return d.AppendText(nil)
}

// ParseDecimal parses a decimal literal.
func ParseDecimal(s string) (*apd.Decimal, error) {
	d, _, err := apd.NewFromString(strings.TrimSpace(s))
	return d, err
}

// StringToInt reads the integer at the front of a string, as CAST(... AS
// SIGNED) does: '-3.7' is -3, '12abc' 12 (truncated), 'abc' 0 (truncated);
// values beyond int64 clamp.
func StringToInt(s []byte) (v int64, truncated bool) {
	t := bytes.TrimSpace(s)
	i := 0
	if i < len(t) && (t[i] == '+' || t[i] == '-') {
		i++
	}
	start := i
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i == start {
		return 0, len(t) > 0
	}
	n, err := strconv.ParseInt(string(t[:i]), 10, 64)
	if err != nil {
		if t[0] == '-' {
			n = math.MinInt64
		} else {
			n = math.MaxInt64
		}
		truncated = true
	}
	return n, truncated || i < len(t)
}
