package sqllogictest

import (
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// The corpus's expected results were written by dolthub's generator, which
// read MySQL's column types and printed integers with %d, DECIMAL, FLOAT
// and DOUBLE values (read as float64) with %.3f, and text as it came; the
// query's type letters are those column types. Rendering by the letter,
// from the value's text, reproduces that for MySQL and tolerates servers
// that type an expression differently but compute the same value, as
// dolthub's own runner does: an integer where R is expected gets ".000",
// a whole DECIMAL or DOUBLE where I is expected loses its fraction.

// render returns the expected-result spelling of one value, given the text
// the server sent (null for SQL NULL) and the column's type letter.
func render(text string, null bool, typ byte) string {
	if null {
		return "NULL"
	}
	switch typ {
	case 'R':
		if f, err := strconv.ParseFloat(text, 64); err == nil {
			return fmt.Sprintf("%.3f", f)
		}
	case 'I':
		if i, err := strconv.ParseInt(text, 10, 64); err == nil {
			return strconv.FormatInt(i, 10)
		}
		if f, err := strconv.ParseFloat(text, 64); err == nil && f == math.Trunc(f) {
			return strconv.FormatFloat(f, 'f', 0, 64)
		}
	}
	if text == "" {
		return "(empty)"
	}
	return text
}

// valueText is the text of a value as go-sql-driver/mysql returns it from
// the text protocol: []byte, or int64, uint64, float32, float64 parsed
// from the text of numeric columns, or nil for NULL. Floats are printed in
// their shortest form, which gives back the server's text.
func valueText(v any) (text string, null bool) {
	switch v := v.(type) {
	case nil:
		return "", true
	case []byte:
		return string(v), false
	case string:
		return v, false
	case int64:
		return strconv.FormatInt(v, 10), false
	case uint64:
		return strconv.FormatUint(v, 10), false
	case float32:
		return strconv.FormatFloat(float64(v), 'g', -1, 32), false
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64), false
	default:
		return fmt.Sprint(v), false
	}
}

// sortValues orders a query's rendered values, ncol to a row, as mode says.
func sortValues(values []string, ncol int, mode SortMode) {
	switch mode {
	case ValueSort:
		slices.Sort(values)
	case RowSort:
		rows := make([][]string, 0, len(values)/ncol)
		for i := 0; i+ncol <= len(values); i += ncol {
			rows = append(rows, values[i:i+ncol:i+ncol])
		}
		slices.SortFunc(rows, slices.Compare)
		sorted := make([]string, 0, len(values))
		for _, row := range rows {
			sorted = append(sorted, row...)
		}
		copy(values, sorted)
	}
}

// hashValues is the MD5 of the values, each followed by a newline, as in
// "N values hashing to <md5>".
func hashValues(values []string) string {
	h := md5.New()
	for _, v := range values {
		h.Write([]byte(v))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// summarize shows at most the first few values, for a failure report.
func summarize(values []string) string {
	const max = 12
	if len(values) <= max {
		return strings.Join(values, " ")
	}
	return fmt.Sprintf("%s ... (%d values)", strings.Join(values[:max], " "), len(values))
}
