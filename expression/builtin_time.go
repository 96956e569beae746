package expression

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/types"
	"github.com/cockroachdb/apd/v3"
	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// Date and time functions. Dates compute on Go times in UTC (so no
// daylight saving shifts them); NOW(), UNIX_TIMESTAMP() and FROM_UNIXTIME()
// use the session's time_zone. A value that is not a valid date gives
// NULL with warning 1292, as in MySQL.

var (
	typeTime      = types.FieldType{Tp: mysql.TypeDuration, Flen: 10, Flag: mysql.BinaryFlag}
	typeDatetime6 = types.FieldType{Tp: mysql.TypeDatetime, Flen: 26, Decimal: 6, Flag: mysql.BinaryFlag}
)

// location is the session's time zone.
func (c *Ctx) location() *time.Location {
	if c.loc != nil {
		return c.loc
	}
	c.loc = time.Local
	if c.Session != nil {
		if v, err := c.Session.SysVar("time_zone", false); err == nil {
			if loc, ok := ParseTimeZone(string(types.ToText(v))); ok {
				c.loc = loc
			}
		}
	}
	return c.loc
}

// ParseTimeZone reads a time_zone value: SYSTEM (the server's zone), an
// offset from '-13:59' to '+14:00', or a zone name from the system's
// time zone database (MySQL's with its tz tables loaded).
func ParseTimeZone(s string) (*time.Location, bool) {
	s = strings.TrimSpace(s)
	switch {
	case strings.EqualFold(s, "SYSTEM"):
		return time.Local, true
	case s == "" || strings.EqualFold(s, "Local"):
		return nil, false
	case strings.HasPrefix(s, "+") || strings.HasPrefix(s, "-"):
		h, m, ok := strings.Cut(s[1:], ":")
		hh, err1 := strconv.Atoi(h)
		mm, err2 := strconv.Atoi(m)
		if !ok || err1 != nil || err2 != nil || len(h) == 0 || len(h) > 2 || len(m) != 2 || mm > 59 {
			return nil, false
		}
		off := hh*3600 + mm*60
		if s[0] == '-' {
			off = -off
		}
		if off > 14*3600 || off < -(13*3600+59*60) {
			return nil, false
		}
		return time.FixedZone(s, off), true
	}
	return loadZone(s)
}

// Location is the session's time zone (time_zone).
func (c *Ctx) Location() *time.Location { return c.location() }

// NowInZone is the statement's time in the session's time zone, what
// NOW() and CURRENT_TIMESTAMP defaults read.
func (c *Ctx) NowInZone() time.Time { return c.now() }

// now is the statement's time in the session's time zone.
func (c *Ctx) now() time.Time {
	n := c.Now
	if n.IsZero() {
		n = time.Now()
	}
	return n.In(c.location())
}

// dateArg converts a function argument to a date and time. A string or
// number must read as one; a TIME means today at that time. ok is false
// (with a warning) for anything else, and for zero dates when
// allowZero is false.
func dateArg(ctx *Ctx, d types.Datum, allowZero bool) (t types.Time, tt types.TimeType, fsp int, ok bool) {
	switch d.Kind() {
	case types.KindTime:
		t, tt, fsp = d.Time()
	case types.KindDuration:
		g := types.FromGoTime(ctx.now()).DateOnly().GoTime(time.UTC).Add(time.Duration(d.Duration()) * time.Microsecond)
		t, tt, fsp = types.FromGoTime(g), types.TimeDatetime, d.Fsp()
	case types.KindInt, types.KindUint, types.KindDecimal, types.KindFloat:
		f, _ := types.ToFloat(d)
		s := strconv.FormatFloat(math.Trunc(f), 'f', 0, 64)
		var err error
		if t, err = types.ParseTime(s); err != nil {
			if f == 0 {
				t, err = 0, nil
			} else {
				warnBadDate(ctx, d)
				return 0, 0, 0, false
			}
		}
		tt = types.TimeDatetime
		if len(s) <= 8 {
			tt = types.TimeDate
		}
	default:
		s := strings.TrimSpace(string(types.ToText(d)))
		var err error
		if t, err = types.ParseTime(s); err != nil {
			warnBadDate(ctx, d)
			return 0, 0, 0, false
		}
		tt = types.TimeDatetime
		if !strings.ContainsAny(s, " T:") && (len(s) <= 8 || !isAllDigits(s)) {
			tt = types.TimeDate
		}
		if i := strings.IndexByte(s, '.'); i >= 0 && strings.ContainsAny(s[:i], " T:") {
			fsp = min(len(s)-i-1, 6)
		}
	}
	if !allowZero && (t == 0 || t.Month() == 0 || t.Day() == 0) {
		if t == 0 && d.Kind() == types.KindTime {
			return 0, 0, 0, false
		}
		warnBadDate(ctx, d)
		return 0, 0, 0, false
	}
	return t, tt, fsp, true
}

func warnBadDate(ctx *Ctx, d types.Datum) {
	ctx.Warn(errno.New(errno.ErTruncatedWrongValue, "Incorrect datetime value: '%s'", d.String()))
}

// durationArg converts an argument to TIME microseconds.
func durationArg(ctx *Ctx, d types.Datum) (int64, int, bool) {
	switch d.Kind() {
	case types.KindDuration:
		return d.Duration(), d.Fsp(), true
	case types.KindTime:
		t, _, fsp := d.Time()
		return timeOfDay(t), fsp, true
	}
	s := strings.TrimSpace(string(types.ToText(d)))
	if strings.ContainsAny(s, "-") && strings.Count(s, "-") >= 2 {
		if t, err := types.ParseTime(s); err == nil {
			return timeOfDay(t), 0, true
		}
	}
	us, err := types.ParseDuration(s)
	if err != nil {
		ctx.Warn(errno.New(errno.ErTruncatedWrongValue, "Truncated incorrect time value: '%s'", d.String()))
		return 0, 0, false
	}
	fsp := 0
	if i := strings.IndexByte(s, '.'); i >= 0 {
		fsp = min(len(s)-i-1, 6)
	}
	return us, fsp, true
}

func timeOfDay(t types.Time) int64 {
	return ((int64(t.Hour())*60+int64(t.Minute()))*60+int64(t.Second()))*1_000_000 + int64(t.Microsecond())
}

func goTime(t types.Time) time.Time { return t.GoTime(time.UTC) }

// daynr is MySQL's day number (calc_daynr): days since year 0.
func daynr(year, month, day int) int64 {
	if year == 0 && month == 0 {
		return 0
	}
	y := int64(year)
	delsum := 365*y + 31*int64(month-1) + int64(day)
	if month <= 2 {
		y--
	} else {
		delsum -= int64(month*4+23) / 10
	}
	temp := ((y/100 + 1) * 3) / 4
	return delsum + y/4 - temp
}

func daysInYear(y int) int64 {
	if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
		return 366
	}
	return 365
}

// weekday is MySQL's calc_weekday: 0 = Monday (or Sunday if sundayFirst).
func weekday(dn int64, sundayFirst bool) int {
	s := int64(0)
	if sundayFirst {
		s = 1
	}
	return int((dn + 5 + s) % 7)
}

const (
	weekMondayFirst  = 1
	weekYear         = 2
	weekFirstWeekday = 4
)

// calcWeek is MySQL's calc_week.
func calcWeek(t types.Time, behaviour int) (week, year int) {
	dn := daynr(t.Year(), t.Month(), t.Day())
	first := daynr(t.Year(), 1, 1)
	mondayFirst := behaviour&weekMondayFirst != 0
	wy := behaviour&weekYear != 0
	firstWeekday := behaviour&weekFirstWeekday != 0
	wd := weekday(first, !mondayFirst)
	year = t.Year()
	if t.Month() == 1 && t.Day() <= 7-wd {
		if !wy && ((firstWeekday && wd != 0) || (!firstWeekday && wd >= 4)) {
			return 0, year
		}
		wy = true
		year--
		days := daysInYear(year)
		first -= days
		wd = int((int64(wd) + 53*7 - days) % 7)
	}
	var days int64
	if (firstWeekday && wd != 0) || (!firstWeekday && wd >= 4) {
		days = dn - (first + int64(7-wd))
	} else {
		days = dn - (first - int64(wd))
	}
	if wy && days >= 52*7 {
		wd = int((int64(wd) + daysInYear(year)) % 7)
		if (!firstWeekday && wd < 4) || (firstWeekday && wd == 0) {
			return 1, year + 1
		}
	}
	return int(days/7 + 1), year
}

// weekMode is MySQL's week_mode: WEEK()'s mode as calc_week flags.
func weekMode(mode int) int {
	f := mode & 7
	if f&weekMondayFirst == 0 {
		f ^= weekFirstWeekday
	}
	return f
}

var (
	monthNames = []string{"January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"}
	dayNames   = []string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}
)

// interval is an INTERVAL value: months and microseconds.
type interval struct {
	months int64
	micros int64
}

// parseInterval reads INTERVAL value unit.
func parseInterval(d types.Datum, unit string) (interval, bool) {
	unit = strings.ToUpper(unit)
	simple := func(scale int64) (interval, bool) {
		if unit == "SECOND" && (d.Kind() == types.KindDecimal || d.Kind() == types.KindFloat || d.Kind() == types.KindString) {
			dec, _ := types.ToDecimal(d)
			r := new(apd.Decimal)
			types.DecimalContext().Mul(r, dec, apd.New(1_000_000, 0))
			us, over, _ := types.ToInt(types.NewDecimal(r))
			return interval{micros: us}, !over
		}
		n, over, _ := types.ToInt(d)
		if over {
			return interval{}, false
		}
		return interval{micros: n * scale}, true
	}
	switch unit {
	case "MICROSECOND":
		return simple(1)
	case "SECOND":
		return simple(1_000_000)
	case "MINUTE":
		return simple(60_000_000)
	case "HOUR":
		return simple(3600_000_000)
	case "DAY":
		return simple(86400_000_000)
	case "WEEK":
		return simple(7 * 86400_000_000)
	case "MONTH", "QUARTER", "YEAR":
		n, over, _ := types.ToInt(d)
		if over {
			return interval{}, false
		}
		switch unit {
		case "QUARTER":
			n *= 3
		case "YEAR":
			n *= 12
		}
		return interval{months: n}, true
	}
	// Compound units: numbers separated by anything, the last ones the
	// smallest parts.
	parts := map[string][]string{
		"SECOND_MICROSECOND": {"s", "us"}, "MINUTE_MICROSECOND": {"m", "s", "us"}, "MINUTE_SECOND": {"m", "s"},
		"HOUR_MICROSECOND": {"h", "m", "s", "us"}, "HOUR_SECOND": {"h", "m", "s"}, "HOUR_MINUTE": {"h", "m"},
		"DAY_MICROSECOND": {"d", "h", "m", "s", "us"}, "DAY_SECOND": {"d", "h", "m", "s"}, "DAY_MINUTE": {"d", "h", "m"},
		"DAY_HOUR": {"d", "h"}, "YEAR_MONTH": {"y", "mo"},
	}[unit]
	if parts == nil {
		return interval{}, false
	}
	s := strings.TrimSpace(string(types.ToText(d)))
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var nums []string
	cur := ""
	for _, c := range s {
		if c >= '0' && c <= '9' {
			cur += string(c)
			continue
		}
		if cur != "" {
			nums = append(nums, cur)
			cur = ""
		}
	}
	if cur != "" {
		nums = append(nums, cur)
	}
	if len(nums) > len(parts) || len(nums) == 0 {
		return interval{}, false
	}
	var iv interval
	off := len(parts) - len(nums)
	for i, n := range nums {
		v, err := strconv.ParseInt(n, 10, 64)
		if err != nil {
			return interval{}, false
		}
		switch parts[off+i] {
		case "y":
			iv.months += v * 12
		case "mo":
			iv.months += v
		case "d":
			iv.micros += v * 86400_000_000
		case "h":
			iv.micros += v * 3600_000_000
		case "m":
			iv.micros += v * 60_000_000
		case "s":
			iv.micros += v * 1_000_000
		case "us":
			// Fewer than 6 digits are a fraction: '1.5' is 500000 µs.
			if len(n) < 6 {
				v *= int64(math.Pow10(6 - len(n)))
			}
			iv.micros += v
		}
	}
	if neg {
		iv.months, iv.micros = -iv.months, -iv.micros
	}
	return iv, true
}

// addInterval adds iv to t; ok is false when the result leaves years
// 1..9999.
func addInterval(t types.Time, iv interval) (types.Time, bool) {
	g := goTime(t)
	if iv.months != 0 {
		total := int64(g.Year())*12 + int64(g.Month()-1) + iv.months
		y, m := total/12, total%12
		if m < 0 {
			y, m = y-1, m+12
		}
		day := min(g.Day(), types.DaysInMonth(int(m)+1, int(y)))
		g = time.Date(int(y), time.Month(m+1), day, g.Hour(), g.Minute(), g.Second(), g.Nanosecond(), time.UTC)
	}
	g = g.Add(time.Duration(iv.micros) * time.Microsecond)
	if g.Year() < 1 || g.Year() > 9999 {
		return 0, false
	}
	return types.FromGoTime(g), true
}

func isDateUnit(unit string) bool {
	switch strings.ToUpper(unit) {
	case "YEAR", "QUARTER", "MONTH", "WEEK", "DAY", "YEAR_MONTH":
		return true
	}
	return false
}

func dateAdd(sign int64) builtin {
	return builtin{minArgs: 3, maxArgs: 3, tp: func(a []Expr) types.FieldType {
		unit := ""
		if c, ok := a[2].(*Constant); ok {
			unit = c.Value.Str()
		}
		return dateAddType(a[0].Type(), unit)
	}, fn: func(ctx *Ctx, v []types.Datum) (types.Datum, error) {
		unit := v[2].Str()
		t, tt, fsp, ok := dateArg(ctx, v[0], false)
		if !ok {
			return types.Null, nil
		}
		iv, ok := parseInterval(v[1], unit)
		if !ok {
			return types.Null, nil
		}
		iv.months, iv.micros = sign*iv.months, sign*iv.micros
		r, ok := addInterval(t, iv)
		if !ok {
			ctx.Warn(errno.New(1441, "Datetime function: datetime field overflow"))
			return types.Null, nil
		}
		if tt == types.TimeDate && isDateUnit(unit) {
			return types.NewTime(r, types.TimeDate, 0), nil
		}
		if strings.Contains(strings.ToUpper(unit), "MICROSECOND") || r.Microsecond() != 0 {
			fsp = 6
		}
		return types.NewTime(r, types.TimeDatetime, fsp), nil
	}}
}

// dateAddType is DATE_ADD's result type: DATE for a DATE plus days or
// more, DATETIME for other dates and times (with microseconds when the
// unit has them), a string for strings, as in MySQL.
func dateAddType(at types.FieldType, unit string) types.FieldType {
	switch at.Tp {
	case mysql.TypeDate, mysql.TypeDatetime, mysql.TypeTimestamp:
		if at.Tp == mysql.TypeDate && isDateUnit(unit) {
			return typeDate
		}
		t := typeDatetime
		t.Decimal = max(at.Decimal, 0)
		if strings.Contains(strings.ToUpper(unit), "MICROSECOND") {
			t.Decimal = 6
		}
		if t.Decimal > 0 {
			t.Flen += 1 + t.Decimal
		}
		return t
	}
	return stringType(29, types.CollationGeneralCI)
}

// timestampDiff is TIMESTAMPDIFF(unit, a, b): b - a in whole units.
func timestampDiff(unit string, a, b types.Time) (int64, bool) {
	ga, gb := goTime(a), goTime(b)
	switch strings.ToUpper(unit) {
	case "MONTH", "QUARTER", "YEAR":
		months := int64(gb.Year()-ga.Year())*12 + int64(gb.Month()-ga.Month())
		// A month counts only once b's day and time reach a's.
		ra := int64(ga.Day())*86400_000_000 + timeOfDay(a)
		rb := int64(gb.Day())*86400_000_000 + timeOfDay(b)
		if months > 0 && rb < ra {
			months--
		} else if months < 0 && rb > ra {
			months++
		}
		switch strings.ToUpper(unit) {
		case "QUARTER":
			return months / 3, true
		case "YEAR":
			return months / 12, true
		}
		return months, true
	}
	us := gb.Sub(ga).Microseconds()
	scale := map[string]int64{"MICROSECOND": 1, "SECOND": 1_000_000, "MINUTE": 60_000_000, "HOUR": 3600_000_000,
		"DAY": 86400_000_000, "WEEK": 7 * 86400_000_000}[strings.ToUpper(unit)]
	if scale == 0 {
		return 0, false
	}
	return us / scale, true
}

// formatDate is DATE_FORMAT and TIME_FORMAT.
func formatDate(t types.Time, us int64, isTime bool, format string) string {
	var b strings.Builder
	hour := t.Hour()
	if isTime {
		neg := us < 0
		if neg {
			us = -us
		}
		hour = int(us / 3600_000_000)
		if neg {
			b.WriteByte('-')
		}
	}
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' || i+1 >= len(format) {
			b.WriteByte(c)
			continue
		}
		i++
		switch format[i] {
		case 'Y':
			fmt.Fprintf(&b, "%04d", t.Year())
		case 'y':
			fmt.Fprintf(&b, "%02d", t.Year()%100)
		case 'm':
			fmt.Fprintf(&b, "%02d", t.Month())
		case 'c':
			fmt.Fprintf(&b, "%d", t.Month())
		case 'M':
			if t.Month() >= 1 {
				b.WriteString(monthNames[t.Month()-1])
			}
		case 'b':
			if t.Month() >= 1 {
				b.WriteString(monthNames[t.Month()-1][:3])
			}
		case 'd':
			fmt.Fprintf(&b, "%02d", t.Day())
		case 'e':
			fmt.Fprintf(&b, "%d", t.Day())
		case 'D':
			b.WriteString(strconv.Itoa(t.Day()) + ordinalSuffix(t.Day()))
		case 'H':
			fmt.Fprintf(&b, "%02d", hour)
		case 'k':
			fmt.Fprintf(&b, "%d", hour)
		case 'h', 'I':
			fmt.Fprintf(&b, "%02d", (hour+11)%12+1)
		case 'l':
			fmt.Fprintf(&b, "%d", (hour+11)%12+1)
		case 'i':
			fmt.Fprintf(&b, "%02d", t.Minute())
		case 's', 'S':
			fmt.Fprintf(&b, "%02d", t.Second())
		case 'f':
			fmt.Fprintf(&b, "%06d", t.Microsecond())
		case 'p':
			if hour%24 < 12 {
				b.WriteString("AM")
			} else {
				b.WriteString("PM")
			}
		case 'r':
			ampm := "AM"
			if hour%24 >= 12 {
				ampm = "PM"
			}
			fmt.Fprintf(&b, "%02d:%02d:%02d %s", (hour+11)%12+1, t.Minute(), t.Second(), ampm)
		case 'T':
			fmt.Fprintf(&b, "%02d:%02d:%02d", hour, t.Minute(), t.Second())
		case 'j':
			fmt.Fprintf(&b, "%03d", daynr(t.Year(), t.Month(), t.Day())-daynr(t.Year(), 1, 1)+1)
		case 'W':
			if t.Month() >= 1 {
				b.WriteString(dayNames[weekday(daynr(t.Year(), t.Month(), t.Day()), false)])
			}
		case 'a':
			if t.Month() >= 1 {
				b.WriteString(dayNames[weekday(daynr(t.Year(), t.Month(), t.Day()), false)][:3])
			}
		case 'w':
			fmt.Fprintf(&b, "%d", weekday(daynr(t.Year(), t.Month(), t.Day()), true))
		case 'U':
			w, _ := calcWeek(t, weekFirstWeekday)
			fmt.Fprintf(&b, "%02d", w)
		case 'u':
			w, _ := calcWeek(t, weekMondayFirst)
			fmt.Fprintf(&b, "%02d", w)
		case 'V':
			w, _ := calcWeek(t, weekYear|weekFirstWeekday)
			fmt.Fprintf(&b, "%02d", w)
		case 'v':
			w, _ := calcWeek(t, weekYear|weekMondayFirst)
			fmt.Fprintf(&b, "%02d", w)
		case 'X':
			_, y := calcWeek(t, weekYear|weekFirstWeekday)
			fmt.Fprintf(&b, "%04d", y)
		case 'x':
			_, y := calcWeek(t, weekYear|weekMondayFirst)
			fmt.Fprintf(&b, "%04d", y)
		default:
			b.WriteByte(format[i])
		}
	}
	return b.String()
}

func ordinalSuffix(d int) string {
	if d%100 >= 11 && d%100 <= 13 {
		return "th"
	}
	switch d % 10 {
	case 1:
		return "st"
	case 2:
		return "nd"
	case 3:
		return "rd"
	}
	return "th"
}

// strToDate parses s by a DATE_FORMAT format. It reports which parts the
// format has.
func strToDate(s, format string) (t types.Time, hasDate, hasTime, ok bool) {
	year, month, day, hour, minute, second, micro := 0, 0, 0, 0, 0, 0, 0
	pm, hasAMPM, hour12 := false, false, false
	yday := -1
	i := 0
	skipSpace := func() {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
	}
	num := func(maxDigits int) (int, bool) {
		skipSpace()
		start := i
		for i < len(s) && i-start < maxDigits && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == start {
			return 0, false
		}
		n, _ := strconv.Atoi(s[start:i])
		return n, true
	}
	name := func(names []string, abbrev bool) (int, bool) {
		skipSpace()
		for k, n := range names {
			if abbrev {
				n = n[:3]
			}
			if len(s)-i >= len(n) && strings.EqualFold(s[i:i+len(n)], n) {
				i += len(n)
				return k, true
			}
		}
		return 0, false
	}
	for j := 0; j < len(format); j++ {
		c := format[j]
		if c != '%' || j+1 >= len(format) {
			if c == ' ' {
				skipSpace()
				continue
			}
			if i >= len(s) || s[i] != c {
				return 0, false, false, false
			}
			i++
			continue
		}
		j++
		var good bool
		switch format[j] {
		case 'Y':
			year, good = num(4)
			hasDate = true
		case 'y':
			year, good = num(2)
			if year < 70 {
				year += 2000
			} else {
				year += 1900
			}
			hasDate = true
		case 'm', 'c':
			month, good = num(2)
			hasDate = true
		case 'M':
			month, good = name(monthNames, false)
			month++
			hasDate = true
		case 'b':
			month, good = name(monthNames, true)
			month++
			hasDate = true
		case 'd', 'e':
			day, good = num(2)
			hasDate = true
		case 'D':
			day, good = num(2)
			if good && i+2 <= len(s) {
				i += 2
			}
			hasDate = true
		case 'j':
			yday, good = num(3)
			hasDate = true
		case 'H', 'k':
			hour, good = num(2)
			hasTime = true
		case 'h', 'I', 'l':
			hour, good = num(2)
			hour12, hasTime = true, true
		case 'i':
			minute, good = num(2)
			hasTime = true
		case 's', 'S':
			second, good = num(2)
			hasTime = true
		case 'f':
			skipSpace()
			start := i
			for i < len(s) && i-start < 6 && s[i] >= '0' && s[i] <= '9' {
				i++
			}
			good = i > start
			if good {
				micro, _ = strconv.Atoi(s[start:i] + strings.Repeat("0", 6-(i-start)))
			}
			hasTime = true
		case 'p':
			skipSpace()
			good = i+2 <= len(s)
			if good {
				switch strings.ToUpper(s[i : i+2]) {
				case "AM":
				case "PM":
					pm = true
				default:
					good = false
				}
				i += 2
			}
			hasAMPM = true
		case 'T', 'r':
			colon := func() bool {
				if i < len(s) && s[i] == ':' {
					i++
					return true
				}
				return false
			}
			var ok1, ok2, ok3 bool
			hour, ok1 = num(2)
			ok2 = colon()
			if ok2 {
				minute, ok2 = num(2)
			}
			ok3 = colon()
			if ok3 {
				second, ok3 = num(2)
			}
			good, hasTime = ok1 && ok2 && ok3, true
			if format[j] == 'T' {
				break
			}
			skipSpace()
			if i+2 <= len(s) && strings.EqualFold(s[i:i+2], "PM") {
				pm = true
			}
			i += 2
			good, hasTime, hour12, hasAMPM = ok1 && ok2 && ok3, true, true, true
		case 'W':
			_, good = name(dayNames, false)
		case 'a':
			_, good = name(dayNames, true)
		case '%':
			good = i < len(s) && s[i] == '%'
			i++
		default:
			good = i < len(s) && s[i] == format[j]
			i++
		}
		if !good {
			return 0, false, false, false
		}
	}
	if hour12 || hasAMPM {
		if hour > 12 || hour < 1 {
			if hour12 {
				return 0, false, false, false
			}
		}
		hour %= 12
		if pm {
			hour += 12
		}
	}
	if yday >= 1 {
		g := time.Date(year, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, yday-1)
		month, day = int(g.Month()), g.Day()
	}
	t = types.MakeTime(year, month, day, hour, minute, second, micro)
	if month > 12 || day > 31 || hour > 23 || minute > 59 || second > 59 {
		return 0, false, false, false
	}
	if month != 0 && day != 0 && !t.IsValidDate() {
		return 0, false, false, false
	}
	return t, hasDate, hasTime, true
}

// formatParts reports whether a DATE_FORMAT format has date and time parts.
func formatParts(format string) (hasDate, hasTime bool) {
	for j := 0; j+1 < len(format); j++ {
		if format[j] != '%' {
			continue
		}
		j++
		switch format[j] {
		case 'Y', 'y', 'm', 'c', 'M', 'b', 'd', 'e', 'D', 'j', 'U', 'u', 'V', 'v', 'X', 'x', 'W', 'a', 'w':
			hasDate = true
		case 'H', 'k', 'h', 'I', 'l', 'i', 's', 'S', 'f', 'p', 'T', 'r':
			hasTime = true
		}
	}
	return
}

func extractUnit(unit string, t types.Time, us int64, isDuration bool) (int64, bool) {
	var y, mo, d, h, mi, s, f int64
	if isDuration {
		neg := us < 0
		if neg {
			us = -us
		}
		h, mi, s, f = us/3600_000_000, us/60_000_000%60, us/1_000_000%60, us%1_000_000
		r, ok := extractFields(strings.ToUpper(unit), 0, 0, 0, h, mi, s, f, t)
		if neg {
			r = -r
		}
		return r, ok
	}
	y, mo, d = int64(t.Year()), int64(t.Month()), int64(t.Day())
	h, mi, s, f = int64(t.Hour()), int64(t.Minute()), int64(t.Second()), int64(t.Microsecond())
	return extractFields(strings.ToUpper(unit), y, mo, d, h, mi, s, f, t)
}

func extractFields(unit string, y, mo, d, h, mi, s, f int64, t types.Time) (int64, bool) {
	switch unit {
	case "YEAR":
		return y, true
	case "QUARTER":
		return (mo + 2) / 3, true
	case "MONTH":
		return mo, true
	case "WEEK":
		w, _ := calcWeek(t, weekMode(0))
		return int64(w), true
	case "DAY":
		return d, true
	case "HOUR":
		return h, true
	case "MINUTE":
		return mi, true
	case "SECOND":
		return s, true
	case "MICROSECOND":
		return f, true
	case "YEAR_MONTH":
		return y*100 + mo, true
	case "DAY_HOUR":
		return d*100 + h, true
	case "DAY_MINUTE":
		return (d*100+h)*100 + mi, true
	case "DAY_SECOND":
		return ((d*100+h)*100+mi)*100 + s, true
	case "DAY_MICROSECOND":
		return (((d*100+h)*100+mi)*100+s)*1_000_000 + f, true
	case "HOUR_MINUTE":
		return h*100 + mi, true
	case "HOUR_SECOND":
		return (h*100+mi)*100 + s, true
	case "HOUR_MICROSECOND":
		return ((h*100+mi)*100+s)*1_000_000 + f, true
	case "MINUTE_SECOND":
		return mi*100 + s, true
	case "MINUTE_MICROSECOND":
		return (mi*100+s)*1_000_000 + f, true
	case "SECOND_MICROSECOND":
		return s*1_000_000 + f, true
	}
	return 0, false
}

func dateFieldFn(f func(t types.Time) int64) builtin {
	return builtin{minArgs: 1, maxArgs: 1, tp: fixed(typeInt), fn: func(ctx *Ctx, v []types.Datum) (types.Datum, error) {
		t, _, _, ok := dateArg(ctx, v[0], true)
		if !ok {
			return types.Null, nil
		}
		return types.NewInt(f(t)), nil
	}}
}

// dateFieldNZ is a date field function that is NULL for zero dates.
func dateFieldNZ(tp types.FieldType, f func(t types.Time) types.Datum) builtin {
	return builtin{minArgs: 1, maxArgs: 1, tp: fixed(tp), fn: func(ctx *Ctx, v []types.Datum) (types.Datum, error) {
		t, _, _, ok := dateArg(ctx, v[0], false)
		if !ok {
			return types.Null, nil
		}
		return f(t), nil
	}}
}

func timeFieldFn(f func(us int64) int64) builtin {
	return builtin{minArgs: 1, maxArgs: 1, tp: fixed(typeInt), fn: func(ctx *Ctx, v []types.Datum) (types.Datum, error) {
		us, _, ok := durationArg(ctx, v[0])
		if !ok {
			return types.Null, nil
		}
		if us < 0 {
			us = -us
		}
		return types.NewInt(f(us)), nil
	}}
}

// unixSeconds converts a local date-time in loc to seconds since the epoch.
func unixSeconds(t types.Time, loc *time.Location) (int64, int) {
	return localInstant(t, loc).Unix(), t.Microsecond()
}

func timeBuiltins() map[string]builtin {
	curtime := builtin{maxArgs: 1, tp: fixed(typeTime), nullSafe: true, fn: func(ctx *Ctx, v []types.Datum) (types.Datum, error) {
		fsp := 0
		if len(v) == 1 {
			fsp = int(min(max(argInt(v[0]), 0), 6))
		}
		t := types.FromGoTime(ctx.now()).Trunc(fsp)
		return types.NewDuration(timeOfDay(t), fsp), nil
	}}
	curdate := builtin{tp: fixed(typeDate), fn: func(ctx *Ctx, _ []types.Datum) (types.Datum, error) {
		return types.NewTime(types.FromGoTime(ctx.now()).DateOnly(), types.TimeDate, 0), nil
	}}
	utcNow := builtin{maxArgs: 1, tp: fixed(typeDatetime), nullSafe: true, fn: func(ctx *Ctx, v []types.Datum) (types.Datum, error) {
		fsp := 0
		if len(v) == 1 {
			fsp = int(min(max(argInt(v[0]), 0), 6))
		}
		n := ctx.Now
		if n.IsZero() {
			n = time.Now()
		}
		return types.NewTime(types.FromGoTime(n.UTC()).Trunc(fsp), types.TimeDatetime, fsp), nil
	}}
	m := map[string]builtin{
		"curdate": curdate, "current_date": curdate,
		"curtime": curtime, "current_time": curtime,
		"utc_timestamp": utcNow,
		"utc_date": {tp: fixed(typeDate), fn: func(ctx *Ctx, _ []types.Datum) (types.Datum, error) {
			return types.NewTime(types.FromGoTime(ctx.Now.UTC()).DateOnly(), types.TimeDate, 0), nil
		}},
		"date_add": dateAdd(1), "adddate": dateAdd(1), "date_sub": dateAdd(-1), "subdate": dateAdd(-1),
		"datediff": {minArgs: 2, maxArgs: 2, tp: fixed(typeInt), fn: func(ctx *Ctx, v []types.Datum) (types.Datum, error) {
			a, _, _, ok1 := dateArg(ctx, v[0], false)
			b, _, _, ok2 := dateArg(ctx, v[1], false)
			if !ok1 || !ok2 {
				return types.Null, nil
			}
			return types.NewInt(daynr(a.Year(), a.Month(), a.Day()) - daynr(b.Year(), b.Month(), b.Day())), nil
		}},
		"timestampdiff": {minArgs: 3, maxArgs: 3, tp: fixed(typeInt), fn: func(ctx *Ctx, v []types.Datum) (types.Datum, error) {
			a, _, _, ok1 := dateArg(ctx, v[1], false)
			b, _, _, ok2 := dateArg(ctx, v[2], false)
			if !ok1 || !ok2 {
				return types.Null, nil
			}
			n, ok := timestampDiff(v[0].Str(), a, b)
			if !ok {
				return types.Null, nil
			}
			return types.NewInt(n), nil
		}},
		"timestampadd": {minArgs: 3, maxArgs: 3, tp: func(a []Expr) types.FieldType {
			unit := ""
			if c, ok := a[0].(*Constant); ok {
				unit = c.Value.Str()
			}
			return dateAddType(a[2].Type(), unit)
		}, fn: func(ctx *Ctx, v []types.Datum) (types.Datum, error) {
			return dateAdd(1).fn(ctx, []types.Datum{v[2], v[1], v[0]})
		}},
		"date_format": {minArgs: 2, maxArgs: 2, tp: fixed(typeString), fn: func(ctx *Ctx, v []types.Datum) (types.Datum, error) {
			t, _, _, ok := dateArg(ctx, v[0], true)
			if !ok {
				return types.Null, nil
			}
			return types.NewString(formatDate(t, 0, false, string(types.ToText(v[1])))), nil
		}},
		"time_format": {minArgs: 2, maxArgs: 2, tp: fixed(typeString), fn: func(ctx *Ctx, v []types.Datum) (types.Datum, error) {
			us, _, ok := durationArg(ctx, v[0])
			if !ok {
				return types.Null, nil
			}
			a := us
			if a < 0 {
				a = -a
			}
			t := types.MakeTime(0, 0, 0, int(a/3600_000_000%24), int(a/60_000_000%60), int(a/1_000_000%60), int(a%1_000_000))
			return types.NewString(formatDate(t, us, true, string(types.ToText(v[1])))), nil
		}},
		"str_to_date": {minArgs: 2, maxArgs: 2, tp: func(a []Expr) types.FieldType {
			if c, ok := a[1].(*Constant); ok {
				d, t := formatParts(c.Value.Str())
				switch {
				case d && !t:
					return typeDate
				case t && !d:
					return typeTime
				}
				if !strings.Contains(c.Value.Str(), "%f") {
					return typeDatetime
				}
			}
			return typeDatetime6
		}, fn: func(ctx *Ctx, v []types.Datum) (types.Datum, error) {
			s, f := string(types.ToText(v[0])), string(types.ToText(v[1]))
			t, _, _, ok := strToDate(s, f)
			if !ok {
				ctx.Warn(errno.New(errno.ErWrongValueForType, "Incorrect datetime value: '%s' for function str_to_date", s))
				return types.Null, nil
			}
			hasDate, hasTime := formatParts(f)
			switch {
			case hasDate && !hasTime:
				return types.NewTime(t.DateOnly(), types.TimeDate, 0), nil
			case hasTime && !hasDate:
				return types.NewDuration(timeOfDay(t), fspOf(t)), nil
			}
			return types.NewTime(t, types.TimeDatetime, fspOf(t)), nil
		}},
		"extract": {minArgs: 2, maxArgs: 2, tp: fixed(typeInt), fn: func(ctx *Ctx, v []types.Datum) (types.Datum, error) {
			unit := v[0].Str()
			if v[1].Kind() == types.KindDuration {
				n, ok := extractUnit(unit, 0, v[1].Duration(), true)
				if !ok {
					return types.Null, nil
				}
				return types.NewInt(n), nil
			}
			t, _, _, ok := dateArg(ctx, v[1], true)
			if !ok {
				return types.Null, nil
			}
			n, ok := extractUnit(unit, t, 0, false)
			if !ok {
				return types.Null, nil
			}
			return types.NewInt(n), nil
		}},
		"convert_tz": convertTZ,
		"unix_timestamp": {maxArgs: 1, tp: func(a []Expr) types.FieldType {
			if len(a) == 1 && a[0].Type().Decimal > 0 && a[0].Type().Decimal <= 6 {
				return types.FieldType{Tp: mysql.TypeNewDecimal, Flen: 18, Decimal: a[0].Type().Decimal, Flag: mysql.BinaryFlag}
			}
			return typeInt
		}, fn: func(ctx *Ctx, v []types.Datum) (types.Datum, error) {
			if len(v) == 0 {
				return types.NewInt(ctx.now().Unix()), nil
			}
			t, _, fsp, ok := dateArg(ctx, v[0], true)
			if !ok {
				return types.Null, nil
			}
			if t == 0 {
				return types.NewInt(0), nil
			}
			secs, us := unixSeconds(t, ctx.location())
			if secs < 0 {
				return types.NewInt(0), nil
			}
			if fsp > 0 || us != 0 {
				d := apd.New(secs*1_000_000+int64(us), -6)
				r := new(apd.Decimal)
				types.DecimalContext().Quantize(r, d, -int32(max(fsp, 1)))
				if fsp == 0 {
					types.DecimalContext().Quantize(r, d, -6)
				}
				return types.NewDecimal(r), nil
			}
			return types.NewInt(secs), nil
		}},
		"from_unixtime": {minArgs: 1, maxArgs: 2, tp: func(a []Expr) types.FieldType {
			if len(a) == 2 {
				return typeString
			}
			return typeDatetime
		}, fn: func(ctx *Ctx, v []types.Datum) (types.Datum, error) {
			dec, _ := types.ToDecimal(v[0])
			if dec.Negative {
				return types.Null, nil
			}
			r := new(apd.Decimal)
			types.DecimalContext().Mul(r, dec, apd.New(1_000_000, 0))
			us, over, _ := types.ToInt(types.NewDecimal(r))
			if over || us > 32536771199*1_000_000 {
				return types.Null, nil
			}
			fsp := 0
			if v[0].Kind() == types.KindDecimal && dec.Exponent < 0 {
				fsp = int(min(-dec.Exponent, 6))
			}
			if v[0].Kind() == types.KindFloat || v[0].Kind() == types.KindString {
				fsp = 6
			}
			g := time.UnixMicro(us).In(ctx.location())
			t := types.FromGoTime(g)
			if len(v) == 2 {
				return types.NewString(formatDate(t, 0, false, string(types.ToText(v[1])))), nil
			}
			return types.NewTime(t.Round(fsp), types.TimeDatetime, fsp), nil
		}},
		"date": dateFieldNZ(typeDate, func(t types.Time) types.Datum { return types.NewTime(t.DateOnly(), types.TimeDate, 0) }),
		"time": {minArgs: 1, maxArgs: 1, tp: fixed(typeTime), fn: func(ctx *Ctx, v []types.Datum) (types.Datum, error) {
			us, fsp, ok := durationArg(ctx, v[0])
			if !ok {
				return types.Null, nil
			}
			return types.NewDuration(us, fsp), nil
		}},
		"year":        dateFieldFn(func(t types.Time) int64 { return int64(t.Year()) }),
		"month":       dateFieldFn(func(t types.Time) int64 { return int64(t.Month()) }),
		"day":         dateFieldFn(func(t types.Time) int64 { return int64(t.Day()) }),
		"dayofmonth":  dateFieldFn(func(t types.Time) int64 { return int64(t.Day()) }),
		"quarter":     dateFieldFn(func(t types.Time) int64 { return int64(t.Month()+2) / 3 }),
		"hour":        timeFieldFn(func(us int64) int64 { return us / 3600_000_000 }),
		"minute":      timeFieldFn(func(us int64) int64 { return us / 60_000_000 % 60 }),
		"second":      timeFieldFn(func(us int64) int64 { return us / 1_000_000 % 60 }),
		"microsecond": timeFieldFn(func(us int64) int64 { return us % 1_000_000 }),
		"dayofweek": dateFieldNZ(typeInt, func(t types.Time) types.Datum {
			return types.NewInt(int64(weekday(daynr(t.Year(), t.Month(), t.Day()), true) + 1))
		}),
		"weekday": dateFieldNZ(typeInt, func(t types.Time) types.Datum {
			return types.NewInt(int64(weekday(daynr(t.Year(), t.Month(), t.Day()), false)))
		}),
		"dayofyear": dateFieldNZ(typeInt, func(t types.Time) types.Datum {
			return types.NewInt(daynr(t.Year(), t.Month(), t.Day()) - daynr(t.Year(), 1, 1) + 1)
		}),
		"dayname": dateFieldNZ(typeString, func(t types.Time) types.Datum {
			return types.NewString(dayNames[weekday(daynr(t.Year(), t.Month(), t.Day()), false)])
		}),
		"monthname": dateFieldNZ(typeString, func(t types.Time) types.Datum {
			return types.NewString(monthNames[t.Month()-1])
		}),
		"last_day": dateFieldNZ(typeDate, func(t types.Time) types.Datum {
			return types.NewTime(types.MakeTime(t.Year(), t.Month(), types.DaysInMonth(t.Month(), t.Year()), 0, 0, 0, 0), types.TimeDate, 0)
		}),
		"to_days": dateFieldNZ(typeInt, func(t types.Time) types.Datum {
			return types.NewInt(daynr(t.Year(), t.Month(), t.Day()))
		}),
		"weekofyear": dateFieldNZ(typeInt, func(t types.Time) types.Datum {
			w, _ := calcWeek(t, weekMode(3))
			return types.NewInt(int64(w))
		}),
		"week": {minArgs: 1, maxArgs: 2, tp: fixed(typeInt), fn: func(ctx *Ctx, v []types.Datum) (types.Datum, error) {
			t, _, _, ok := dateArg(ctx, v[0], false)
			if !ok {
				return types.Null, nil
			}
			mode := 0
			if len(v) == 2 {
				mode = int(argInt(v[1]))
			}
			w, _ := calcWeek(t, weekMode(mode))
			return types.NewInt(int64(w)), nil
		}},
		"yearweek": {minArgs: 1, maxArgs: 2, tp: fixed(typeInt), fn: func(ctx *Ctx, v []types.Datum) (types.Datum, error) {
			t, _, _, ok := dateArg(ctx, v[0], false)
			if !ok {
				return types.Null, nil
			}
			mode := 0
			if len(v) == 2 {
				mode = int(argInt(v[1]))
			}
			w, y := calcWeek(t, weekMode(mode)|weekYear)
			return types.NewInt(int64(y*100 + w)), nil
		}},
		"from_days": {minArgs: 1, maxArgs: 1, tp: fixed(typeDate), fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			n := argInt(v[0])
			if n <= 365 || n > 3652424 {
				return types.NewTime(0, types.TimeDate, 0), nil
			}
			g := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, int(n-daynr(2000, 1, 1)))
			return types.NewTime(types.FromGoTime(g), types.TimeDate, 0), nil
		}},
		"makedate": {minArgs: 2, maxArgs: 2, tp: fixed(typeDate), fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			y, doy := argInt(v[0]), argInt(v[1])
			if doy <= 0 || y < 0 || y > 9999 {
				return types.Null, nil
			}
			if y < 70 {
				y += 2000
			} else if y < 100 {
				y += 1900
			}
			g := time.Date(int(y), 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, int(doy-1))
			if g.Year() > 9999 {
				return types.Null, nil
			}
			return types.NewTime(types.FromGoTime(g), types.TimeDate, 0), nil
		}},
		"maketime": {minArgs: 3, maxArgs: 3, tp: fixed(typeTime), fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			h, m := argInt(v[0]), argInt(v[1])
			sec, _ := types.ToDecimal(v[2])
			if m < 0 || m > 59 {
				return types.Null, nil
			}
			r := new(apd.Decimal)
			types.DecimalContext().Mul(r, sec, apd.New(1_000_000, 0))
			sus, _, _ := types.ToInt(types.NewDecimal(r))
			if sus < 0 || sus >= 60_000_000 {
				return types.Null, nil
			}
			neg := h < 0
			if neg {
				h = -h
			}
			us := h*3600_000_000 + m*60_000_000 + sus
			if us > 838*3600_000_000+59*60_000_000+59_000_000 {
				us = 838*3600_000_000 + 59*60_000_000 + 59_000_000
			}
			if neg {
				us = -us
			}
			fsp := 0
			if sec.Exponent < 0 {
				fsp = int(min(-sec.Exponent, 6))
			}
			return types.NewDuration(us, fsp), nil
		}},
		"sec_to_time": {minArgs: 1, maxArgs: 1, tp: fixed(typeTime), fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			dec, _ := types.ToDecimal(v[0])
			r := new(apd.Decimal)
			types.DecimalContext().Mul(r, dec, apd.New(1_000_000, 0))
			us, _, _ := types.ToInt(types.NewDecimal(r))
			limit := int64(838*3600+59*60+59) * 1_000_000
			us = max(min(us, limit), -limit)
			fsp := 0
			if dec.Exponent < 0 {
				fsp = int(min(-dec.Exponent, 6))
			}
			return types.NewDuration(us, fsp), nil
		}},
		"time_to_sec": {minArgs: 1, maxArgs: 1, tp: fixed(typeInt), fn: func(ctx *Ctx, v []types.Datum) (types.Datum, error) {
			us, _, ok := durationArg(ctx, v[0])
			if !ok {
				return types.Null, nil
			}
			return types.NewInt(us / 1_000_000), nil
		}},
		"timediff": {minArgs: 2, maxArgs: 2, tp: fixed(typeTime), fn: func(ctx *Ctx, v []types.Datum) (types.Datum, error) {
			isTime := func(d types.Datum) bool {
				if d.Kind() == types.KindDuration {
					return true
				}
				if d.Kind() == types.KindTime {
					return false
				}
				s := string(types.ToText(d))
				return strings.Count(s, "-") < 2
			}
			if isTime(v[0]) != isTime(v[1]) {
				return types.Null, nil
			}
			if isTime(v[0]) {
				a, fa, ok1 := durationArg(ctx, v[0])
				b, fb, ok2 := durationArg(ctx, v[1])
				if !ok1 || !ok2 {
					return types.Null, nil
				}
				return clampDuration(a-b, max(fa, fb)), nil
			}
			a, _, fa, ok1 := dateArg(ctx, v[0], true)
			b, _, fb, ok2 := dateArg(ctx, v[1], true)
			if !ok1 || !ok2 {
				return types.Null, nil
			}
			return clampDuration(goTime(a).Sub(goTime(b)).Microseconds(), max(fa, fb)), nil
		}},
		"addtime": addTime(1), "subtime": addTime(-1),
		"period_add": {minArgs: 2, maxArgs: 2, tp: fixed(typeInt), fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			p, n := argInt(v[0]), argInt(v[1])
			if p == 0 {
				return types.NewInt(0), nil
			}
			m := periodMonths(p) + n
			return types.NewInt(m/12*100 + m%12 + 1), nil
		}},
		"period_diff": {minArgs: 2, maxArgs: 2, tp: fixed(typeInt), fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			return types.NewInt(periodMonths(argInt(v[0])) - periodMonths(argInt(v[1]))), nil
		}},
	}
	return m
}

func periodMonths(p int64) int64 {
	y, m := p/100, p%100
	if y < 70 {
		y += 2000
	} else if y < 100 {
		y += 1900
	}
	return y*12 + m - 1
}

func fspOf(t types.Time) int {
	if t.Microsecond() != 0 {
		return 6
	}
	return 0
}

func clampDuration(us int64, fsp int) types.Datum {
	limit := int64(838*3600+59*60+59) * 1_000_000
	return types.NewDuration(max(min(us, limit), -limit), fsp)
}

// addTime is ADDTIME and SUBTIME: a date-time or time plus a time.
func addTime(sign int64) builtin {
	return builtin{minArgs: 2, maxArgs: 2, tp: func(a []Expr) types.FieldType {
		switch a[0].Type().Tp {
		case mysql.TypeDatetime, mysql.TypeTimestamp, mysql.TypeDate:
			return typeDatetime6
		case mysql.TypeDuration:
			return typeTime
		}
		return typeString
	}, fn: func(ctx *Ctx, v []types.Datum) (types.Datum, error) {
		b, fb, ok := durationArg(ctx, v[1])
		if !ok {
			return types.Null, nil
		}
		s := string(types.ToText(v[0]))
		if v[0].Kind() == types.KindTime || (v[0].Kind() != types.KindDuration && strings.Count(s, "-") >= 2) {
			t, _, fa, ok := dateArg(ctx, v[0], true)
			if !ok {
				return types.Null, nil
			}
			r, ok := addInterval(t, interval{micros: sign * b})
			if !ok {
				return types.Null, nil
			}
			return types.NewTime(r, types.TimeDatetime, max(fa, fb)), nil
		}
		a, fa, ok := durationArg(ctx, v[0])
		if !ok {
			return types.Null, nil
		}
		return clampDuration(a+sign*b, max(fa, fb)), nil
	}}
}

func isAllDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
