package expression

// Time zones as MySQL has them with its time zone tables loaded: offsets,
// SYSTEM, and the names of the system's tz database (the IANA names Go's
// time.LoadLocation reads from /usr/share/zoneinfo, or from the copy
// embedded in the basalt binary), matched without regard to case as
// MySQL's mysql.time_zone_name lookups are.
//
// A local date-time names an instant by MySQL's rules (TIME_to_gmt_sec):
// one that a daylight saving change skips is the instant of the change,
// one that it repeats is the first of the two.

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	// The IANA zone database, for zone names on machines without
	// /usr/share/zoneinfo (Go reads the system's copy first), in the
	// server and in every test that names a zone; about 450 KB.
	_ "time/tzdata"

	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// loadZone loads a named zone, trying the name as given and then the
// tz database's own spelling of it.
func loadZone(name string) (*time.Location, bool) {
	if name == "" || strings.EqualFold(name, "Local") {
		return nil, false
	}
	if loc, err := time.LoadLocation(name); err == nil {
		return loc, true
	}
	if real, ok := zoneNames()[strings.ToLower(name)]; ok && real != name {
		if loc, err := time.LoadLocation(real); err == nil {
			return loc, true
		}
	}
	// Without a zoneinfo directory to list (the embedded database cannot
	// be), guess the usual spellings: Europe/Paris, America/New_York, UTC.
	for _, guess := range []string{titleZone(name), strings.ToUpper(name)} {
		if guess != name && !strings.Contains(guess, "..") {
			if loc, err := time.LoadLocation(guess); err == nil {
				return loc, true
			}
		}
	}
	return nil, false
}

// titleZone capitalizes each word of a zone name, words being separated
// by '/', '_' and '-'.
func titleZone(name string) string {
	b := []byte(strings.ToLower(name))
	for i := range b {
		if (i == 0 || b[i-1] == '/' || b[i-1] == '_' || b[i-1] == '-') && b[i] >= 'a' && b[i] <= 'z' {
			b[i] -= 'a' - 'A'
		}
	}
	return string(b)
}

var (
	zoneNamesOnce sync.Once
	zoneNamesMap  map[string]string
)

// zoneNames maps the lowercase names of the system's zone files to their
// names. Without a zoneinfo directory it is empty: only exact names then
// load (from the embedded database).
func zoneNames() map[string]string {
	zoneNamesOnce.Do(func() {
		zoneNamesMap = map[string]string{}
		dir := os.Getenv("ZONEINFO")
		if st, err := os.Stat(dir); dir == "" || err != nil || !st.IsDir() {
			dir = "/usr/share/zoneinfo"
		}
		_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			rel, err := filepath.Rel(dir, path)
			if err == nil && rel[0] >= 'A' && rel[0] <= 'Z' {
				zoneNamesMap[strings.ToLower(rel)] = rel
			}
			return nil
		})
	})
	return zoneNamesMap
}

// localInstant is the instant that the local date-time t names in loc.
func localInstant(t types.Time, loc *time.Location) time.Time {
	g := time.Date(t.Year(), time.Month(t.Month()), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Microsecond()*1000, loc)
	wall := t.GoTime(time.UTC)
	shown := types.FromGoTime(g).GoTime(time.UTC)
	switch {
	case shown.After(wall):
		// Skipped: Go read t with the offset in force before the change,
		// which lands after it.
		start, _ := g.ZoneBounds()
		return start
	case shown.Before(wall):
		_, end := g.ZoneBounds()
		return end
	}
	// Repeated: the same wall clock may also be read with the offset of
	// the period before g's.
	start, _ := g.ZoneBounds()
	if start.IsZero() {
		return g
	}
	_, prevOff := start.Add(-time.Nanosecond).Zone()
	_, off := g.Zone()
	if prevOff > off {
		if earlier := g.Add(-time.Duration(prevOff-off) * time.Second); earlier.Before(start) {
			return earlier
		}
	}
	return g
}

// maxTimestampSeconds is the last second of MySQL 8's 64-bit TIMESTAMP
// range for UNIX_TIMESTAMP, FROM_UNIXTIME and CONVERT_TZ
// (3001-01-18 23:59:59 UTC).
const maxTimestampSeconds = 32536771199

// convertTZ is CONVERT_TZ(dt, from, to): NULL for an unknown zone or an
// invalid date-time; a date-time outside the TIMESTAMP range (before
// 1970-01-01 00:00:01 UTC) comes back as it is.
var convertTZ = builtin{minArgs: 3, maxArgs: 3, tp: func(a []Expr) types.FieldType {
	fsp := 6
	switch tp := a[0].Type(); {
	case tp.Tp == mysql.TypeDatetime || tp.Tp == mysql.TypeTimestamp || tp.Tp == mysql.TypeDate || tp.Tp == mysql.TypeDuration:
		fsp = max(tp.Decimal, 0)
	case tp.Tp == mysql.TypeLonglong || tp.Tp == mysql.TypeLong || tp.Tp == mysql.TypeNull:
		fsp = 0
	default:
		if c, ok := a[0].(*Constant); ok {
			if _, _, f, ok := dateArg(&Ctx{}, c.Value, true); ok {
				fsp = f
			}
		}
	}
	ft := types.FieldType{Tp: mysql.TypeDatetime, Flen: 19, Decimal: fsp, Flag: mysql.BinaryFlag}
	if fsp > 0 {
		ft.Flen += 1 + fsp
	}
	return ft
}, fn: func(ctx *Ctx, v []types.Datum) (types.Datum, error) {
	t, _, fsp, ok := dateArg(ctx, v[0], false)
	if !ok {
		return types.Null, nil
	}
	from, ok1 := ParseTimeZone(string(types.ToText(v[1])))
	to, ok2 := ParseTimeZone(string(types.ToText(v[2])))
	if !ok1 || !ok2 {
		return types.Null, nil
	}
	if v[0].Kind() != types.KindTime && v[0].Kind() != types.KindString {
		fsp = 0
	}
	g := localInstant(t, from)
	if secs := g.Unix(); secs >= 1 && secs <= maxTimestampSeconds {
		t = types.FromGoTime(g.In(to))
	}
	return types.NewTime(t, types.TimeDatetime, fsp), nil
}}
