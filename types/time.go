package types

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// TimeType tells DATE, DATETIME and TIMESTAMP apart.
type TimeType uint8

const (
	TimeDatetime TimeType = iota
	TimeDate
	TimeTimestamp
)

// Time is a calendar date and time of day, packed so that integer order is
// time order:
//
//	year (14 bits) | month (4) | day (5) | hour (5) | minute (6) | second (6) | microsecond (20)
//	   bit 46          42         37        32          26           20            0
//
// The zero Time is MySQL's zero date '0000-00-00 00:00:00'.
type Time uint64

// ErrInvalidTime reports a string that is not a date or time.
var ErrInvalidTime = errors.New("invalid time value")

// MakeTime packs the given fields. It does not validate them.
func MakeTime(year, month, day, hour, minute, second, micro int) Time {
	return Time(uint64(year)<<46 | uint64(month)<<42 | uint64(day)<<37 |
		uint64(hour)<<32 | uint64(minute)<<26 | uint64(second)<<20 | uint64(micro))
}

func (t Time) Year() int        { return int(t >> 46) }
func (t Time) Month() int       { return int(t>>42) & 0xF }
func (t Time) Day() int         { return int(t>>37) & 0x1F }
func (t Time) Hour() int        { return int(t>>32) & 0x1F }
func (t Time) Minute() int      { return int(t>>26) & 0x3F }
func (t Time) Second() int      { return int(t>>20) & 0x3F }
func (t Time) Microsecond() int { return int(t) & 0xFFFFF }

// FromGoTime packs a Go time (its wall clock in its own location).
func FromGoTime(g time.Time) Time {
	return MakeTime(g.Year(), int(g.Month()), g.Day(), g.Hour(), g.Minute(), g.Second(), g.Nanosecond()/1000)
}

// GoTime unpacks t in loc. The zero date becomes the zero time.Time.
func (t Time) GoTime(loc *time.Location) time.Time {
	if t == 0 {
		return time.Time{}
	}
	return time.Date(t.Year(), time.Month(t.Month()), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Microsecond()*1000, loc)
}

// DateOnly drops the time of day.
func (t Time) DateOnly() Time { return MakeTime(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0) }

// Round rounds the microseconds to fsp digits.
func (t Time) Round(fsp int) Time {
	if fsp >= 6 || t.Microsecond() == 0 {
		return t
	}
	unit := pow10[6-fsp]
	us := t.Microsecond()
	r := (us + unit/2) / unit * unit
	if r < 1_000_000 {
		return t&^0xFFFFF | Time(r)
	}
	g := t.GoTime(time.UTC).Truncate(time.Second).Add(time.Second)
	return FromGoTime(g)
}

// Trunc drops the microseconds past fsp digits, as MySQL's clock
// functions (NOW, CURTIME, UTC_TIMESTAMP) do with the statement's time:
// NOW() at 10:52:31.76 is 10:52:31, never a moment still to come.
func (t Time) Trunc(fsp int) Time {
	if fsp >= 6 {
		return t
	}
	unit := pow10[6-fsp]
	return t&^0xFFFFF | Time(t.Microsecond()/unit*unit)
}

var pow10 = [...]int{1, 10, 100, 1000, 10000, 100000, 1000000}

// Append formats t as tt with fsp fractional digits.
func (t Time) Append(buf []byte, tt TimeType, fsp int) []byte {
	buf = appendPadded(buf, t.Year(), 4)
	buf = append(buf, '-')
	buf = appendPadded(buf, t.Month(), 2)
	buf = append(buf, '-')
	buf = appendPadded(buf, t.Day(), 2)
	if tt == TimeDate {
		return buf
	}
	buf = append(buf, ' ')
	buf = appendPadded(buf, t.Hour(), 2)
	buf = append(buf, ':')
	buf = appendPadded(buf, t.Minute(), 2)
	buf = append(buf, ':')
	buf = appendPadded(buf, t.Second(), 2)
	if fsp > 0 {
		buf = append(buf, '.')
		buf = appendPadded(buf, t.Microsecond()/pow10[6-fsp], fsp)
	}
	return buf
}

func appendPadded(buf []byte, v, width int) []byte {
	var tmp [20]byte
	s := strconv.AppendInt(tmp[:0], int64(v), 10)
	for i := len(s); i < width; i++ {
		buf = append(buf, '0')
	}
	return append(buf, s...)
}

// IsValidDate reports whether t's date exists on the calendar (the zero
// date counts as valid, as MySQL allows it outside strict NO_ZERO_DATE).
func (t Time) IsValidDate() bool {
	if t == 0 {
		return true
	}
	y, m, d := t.Year(), t.Month(), t.Day()
	if y > 9999 || m < 1 || m > 12 || d < 1 || d > DaysInMonth(m, y) {
		return false
	}
	return t.Hour() < 24 && t.Minute() < 60 && t.Second() < 60
}

// DaysInMonth is the number of days of month m (1-12) of year y in the
// proleptic Gregorian calendar.
func DaysInMonth(m, y int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// ParseTime parses the date and datetime literals MySQL accepts:
// 'YYYY-MM-DD', 'YYYY-MM-DD hh:mm:ss[.ffffff]', with 'T' or ' ' between,
// and the digit-only forms 'YYYYMMDD' and 'YYYYMMDDhhmmss'. Two-digit years
// map 70-99 to 19xx and 00-69 to 20xx.
func ParseTime(s string) (Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("%w: ''", ErrInvalidTime)
	}
	var fields []int
	var frac string
	if isDigits(s) {
		switch len(s) {
		case 6, 8, 12, 14:
		default:
			return 0, fmt.Errorf("%w: '%s'", ErrInvalidTime, s)
		}
		yl := 4
		if len(s) == 6 || len(s) == 12 {
			yl = 2
		}
		y, _ := strconv.Atoi(s[:yl])
		fields = append(fields, y)
		for i := yl; i+2 <= len(s); i += 2 {
			v, _ := strconv.Atoi(s[i : i+2])
			fields = append(fields, v)
		}
		if yl == 2 {
			fields[0] = twoDigitYear(fields[0])
		}
	} else {
		if i := strings.IndexByte(s, '.'); i >= 0 && strings.ContainsAny(s[:i], " T:") {
			s, frac = s[:i], s[i+1:]
		}
		start, yearDigits := 0, 0
		for i := 0; i <= len(s); i++ {
			if i < len(s) && s[i] >= '0' && s[i] <= '9' {
				continue
			}
			if i == start {
				return 0, fmt.Errorf("%w: '%s'", ErrInvalidTime, s)
			}
			v, err := strconv.Atoi(s[start:i])
			if err != nil {
				return 0, fmt.Errorf("%w: '%s'", ErrInvalidTime, s)
			}
			if len(fields) == 0 {
				yearDigits = i - start
			}
			fields = append(fields, v)
			start = i + 1
		}
		if len(fields) > 0 && yearDigits <= 2 {
			fields[0] = twoDigitYear(fields[0])
		}
	}
	if len(fields) != 3 && len(fields) != 5 && len(fields) != 6 {
		return 0, fmt.Errorf("%w: '%s'", ErrInvalidTime, s)
	}
	for len(fields) < 6 {
		fields = append(fields, 0)
	}
	micro := 0
	if frac != "" {
		if !isDigits(frac) {
			return 0, fmt.Errorf("%w: '%s'", ErrInvalidTime, s)
		}
		if len(frac) > 6 {
			frac = frac[:6]
		}
		micro, _ = strconv.Atoi(frac + strings.Repeat("0", 6-len(frac)))
	}
	t := MakeTime(fields[0], fields[1], fields[2], fields[3], fields[4], fields[5], micro)
	if fields[0] > 9999 || fields[1] > 12 || fields[2] > 31 || fields[3] > 23 || fields[4] > 59 || fields[5] > 59 {
		return 0, fmt.Errorf("%w: '%s'", ErrInvalidTime, s)
	}
	if !(fields[1] == 0 && fields[2] == 0) && !t.IsValidDate() {
		return 0, fmt.Errorf("%w: '%s'", ErrInvalidTime, s)
	}
	return t, nil
}

func twoDigitYear(y int) int {
	if y < 70 {
		return 2000 + y
	}
	if y < 100 {
		return 1900 + y
	}
	return y
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// AppendDuration formats microseconds as MySQL's TIME: [-]hh:mm:ss[.f].
func AppendDuration(buf []byte, us int64, fsp int) []byte {
	if us < 0 {
		buf = append(buf, '-')
		us = -us
	}
	sec := us / 1_000_000
	buf = appendPadded(buf, int(sec/3600), 2)
	buf = append(buf, ':')
	buf = appendPadded(buf, int(sec/60%60), 2)
	buf = append(buf, ':')
	buf = appendPadded(buf, int(sec%60), 2)
	if fsp > 0 {
		buf = append(buf, '.')
		buf = appendPadded(buf, int(us%1_000_000)/pow10[6-fsp], fsp)
	}
	return buf
}

// ParseDuration parses MySQL TIME literals: [-][D ]hh:mm[:ss[.f]],
// [-]hhmmss, or seconds.
func ParseDuration(s string) (int64, error) {
	s = strings.TrimSpace(s)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var frac string
	if i := strings.IndexByte(s, '.'); i >= 0 {
		s, frac = s[:i], s[i+1:]
	}
	var days, h, m, sec int
	var err error
	if d, rest, ok := strings.Cut(s, " "); ok {
		if days, err = strconv.Atoi(d); err != nil {
			return 0, fmt.Errorf("%w: '%s'", ErrInvalidTime, s)
		}
		s = rest
	}
	parts := strings.Split(s, ":")
	nums := make([]int, len(parts))
	for i, p := range parts {
		if nums[i], err = strconv.Atoi(p); err != nil || p == "" {
			return 0, fmt.Errorf("%w: '%s'", ErrInvalidTime, s)
		}
	}
	switch len(nums) {
	case 1:
		v := nums[0]
		h, m, sec = v/10000, v/100%100, v%100
	case 2:
		h, m = nums[0], nums[1]
	case 3:
		h, m, sec = nums[0], nums[1], nums[2]
	default:
		return 0, fmt.Errorf("%w: '%s'", ErrInvalidTime, s)
	}
	if m > 59 || sec > 59 {
		return 0, fmt.Errorf("%w: '%s'", ErrInvalidTime, s)
	}
	micro := 0
	if frac != "" {
		if !isDigits(frac) {
			return 0, fmt.Errorf("%w: '%s'", ErrInvalidTime, s)
		}
		if len(frac) > 6 {
			frac = frac[:6]
		}
		micro, _ = strconv.Atoi(frac + strings.Repeat("0", 6-len(frac)))
	}
	us := ((int64(days*24+h)*60+int64(m))*60+int64(sec))*1_000_000 + int64(micro)
	if neg {
		us = -us
	}
	return us, nil
}

// RoundMicros rounds microseconds to fsp fractional digits (0-6), half away
// from zero; an fsp outside 0-5 leaves us as it is.
func RoundMicros(us int64, fsp int) int64 {
	if fsp >= 6 || fsp < 0 {
		return us
	}
	unit := int64([]int{1000000, 100000, 10000, 1000, 100, 10}[fsp])
	neg := us < 0
	if neg {
		us = -us
	}
	us = (us + unit/2) / unit * unit
	if neg {
		us = -us
	}
	return us
}
