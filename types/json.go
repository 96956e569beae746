package types

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// JSON values. A JSON column or function result is a string datum of
// collation CollationJSON holding the value's text in MySQL's normal
// form: object members sorted by key (shorter keys first, then bytewise),
// one space after ':' and ',', e.g. {"a": 1, "bb": [true, null, "x"]}.
// Functions parse that text into a JSON tree and write trees back out.

// JSONKind is the type of a JSON value.
type JSONKind uint8

const (
	JSONNull JSONKind = iota
	JSONBool
	JSONInt
	JSONUint
	JSONDouble
	JSONString
	JSONArray
	JSONObject
)

// JSON is a parsed JSON value. Objects keep their members sorted by key in
// MySQL's order (see jsonKeyLess), without duplicates.
type JSON struct {
	Kind JSONKind
	B    bool
	I    int64
	U    uint64
	F    float64
	S    string
	Arr  []JSON
	Keys []string
	Vals []JSON
}

// ErrJSONSyntax reports text that is not JSON.
var ErrJSONSyntax = errors.New("invalid JSON text")

// JSONSyntaxError says where text stopped being JSON.
type JSONSyntaxError struct {
	Msg string
	Pos int
}

func (e *JSONSyntaxError) Error() string { return fmt.Sprintf("%s at position %d", e.Msg, e.Pos) }
func (e *JSONSyntaxError) Unwrap() error { return ErrJSONSyntax }

// ParseJSON parses JSON text.
func ParseJSON(text []byte) (JSON, error) {
	p := &jsonParser{s: text}
	p.space()
	v, err := p.value(0)
	if err != nil {
		return JSON{}, err
	}
	p.space()
	if p.i != len(p.s) {
		return JSON{}, p.fail("The document root must not be followed by other values.")
	}
	return v, nil
}

type jsonParser struct {
	s []byte
	i int
}

func (p *jsonParser) fail(msg string) error { return &JSONSyntaxError{Msg: msg, Pos: p.i} }

func (p *jsonParser) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

const maxJSONDepth = 100

func (p *jsonParser) value(depth int) (JSON, error) {
	if depth > maxJSONDepth {
		return JSON{}, p.fail("The JSON document exceeds the maximum depth.")
	}
	if p.i >= len(p.s) {
		return JSON{}, p.fail("The document is empty.")
	}
	switch c := p.s[p.i]; {
	case c == '{':
		p.i++
		obj := JSON{Kind: JSONObject}
		p.space()
		if p.i < len(p.s) && p.s[p.i] == '}' {
			p.i++
			return obj, nil
		}
		for {
			p.space()
			if p.i >= len(p.s) || p.s[p.i] != '"' {
				return JSON{}, p.fail("Missing a name for object member.")
			}
			k, err := p.str()
			if err != nil {
				return JSON{}, err
			}
			p.space()
			if p.i >= len(p.s) || p.s[p.i] != ':' {
				return JSON{}, p.fail("Missing a colon after a name of object member.")
			}
			p.i++
			p.space()
			v, err := p.value(depth + 1)
			if err != nil {
				return JSON{}, err
			}
			obj.set(k, v)
			p.space()
			if p.i < len(p.s) && p.s[p.i] == ',' {
				p.i++
				continue
			}
			if p.i < len(p.s) && p.s[p.i] == '}' {
				p.i++
				return obj, nil
			}
			return JSON{}, p.fail("Missing a comma or '}' after an object member.")
		}
	case c == '[':
		p.i++
		arr := JSON{Kind: JSONArray, Arr: []JSON{}}
		p.space()
		if p.i < len(p.s) && p.s[p.i] == ']' {
			p.i++
			return arr, nil
		}
		for {
			p.space()
			v, err := p.value(depth + 1)
			if err != nil {
				return JSON{}, err
			}
			arr.Arr = append(arr.Arr, v)
			p.space()
			if p.i < len(p.s) && p.s[p.i] == ',' {
				p.i++
				continue
			}
			if p.i < len(p.s) && p.s[p.i] == ']' {
				p.i++
				return arr, nil
			}
			return JSON{}, p.fail("Missing a comma or ']' after an array element.")
		}
	case c == '"':
		s, err := p.str()
		return JSON{Kind: JSONString, S: s}, err
	case c == 't' && bytes.HasPrefix(p.s[p.i:], []byte("true")):
		p.i += 4
		return JSON{Kind: JSONBool, B: true}, nil
	case c == 'f' && bytes.HasPrefix(p.s[p.i:], []byte("false")):
		p.i += 5
		return JSON{Kind: JSONBool}, nil
	case c == 'n' && bytes.HasPrefix(p.s[p.i:], []byte("null")):
		p.i += 4
		return JSON{Kind: JSONNull}, nil
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	}
	return JSON{}, p.fail("Invalid value.")
}

func (p *jsonParser) number() (JSON, error) {
	start := p.i
	if p.s[p.i] == '-' {
		p.i++
	}
	digits := func() int {
		n := 0
		for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if digits() == 0 {
		return JSON{}, p.fail("Invalid value.")
	}
	isFloat := false
	if p.i < len(p.s) && p.s[p.i] == '.' {
		p.i++
		isFloat = true
		if digits() == 0 {
			return JSON{}, p.fail("Missing fraction in number.")
		}
	}
	if p.i < len(p.s) && (p.s[p.i] == 'e' || p.s[p.i] == 'E') {
		p.i++
		isFloat = true
		if p.i < len(p.s) && (p.s[p.i] == '+' || p.s[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return JSON{}, p.fail("Missing exponent in number.")
		}
	}
	text := string(p.s[start:p.i])
	if !isFloat {
		if v, err := strconv.ParseInt(text, 10, 64); err == nil {
			return JSON{Kind: JSONInt, I: v}, nil
		}
		if v, err := strconv.ParseUint(text, 10, 64); err == nil {
			return JSON{Kind: JSONUint, U: v}, nil
		}
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil && !math.IsInf(f, 0) {
		return JSON{}, p.fail("Invalid value.")
	}
	if math.IsInf(f, 0) {
		return JSON{}, p.fail("Number too big to be stored in double.")
	}
	return JSON{Kind: JSONDouble, F: f}, nil
}

func (p *jsonParser) str() (string, error) {
	p.i++ // opening quote
	var sb []byte
	for {
		if p.i >= len(p.s) {
			return "", p.fail("Missing a closing quotation mark in string.")
		}
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			if !utf8.Valid(sb) {
				return "", p.fail("Invalid encoding in string.")
			}
			return string(sb), nil
		case c == '\\':
			if p.i+1 >= len(p.s) {
				return "", p.fail("Invalid escape character in string.")
			}
			e := p.s[p.i+1]
			p.i += 2
			switch e {
			case '"', '\\', '/':
				sb = append(sb, e)
			case 'b':
				sb = append(sb, '\b')
			case 'f':
				sb = append(sb, '\f')
			case 'n':
				sb = append(sb, '\n')
			case 'r':
				sb = append(sb, '\r')
			case 't':
				sb = append(sb, '\t')
			case 'u':
				r, ok := p.hex4()
				if !ok {
					return "", p.fail("Incorrect hex digit after \\u escape in string.")
				}
				if utf16.IsSurrogate(r) && p.i+1 < len(p.s) && p.s[p.i] == '\\' && p.s[p.i+1] == 'u' {
					p.i += 2
					r2, ok := p.hex4()
					if !ok {
						return "", p.fail("Incorrect hex digit after \\u escape in string.")
					}
					r = utf16.DecodeRune(r, r2)
				}
				sb = utf8.AppendRune(sb, r)
			default:
				return "", p.fail("Invalid escape character in string.")
			}
		case c < 0x20:
			return "", p.fail("Invalid encoding in string.")
		default:
			sb = append(sb, c)
			p.i++
		}
	}
}

func (p *jsonParser) hex4() (rune, bool) {
	if p.i+4 > len(p.s) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(p.s[p.i:p.i+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	p.i += 4
	return rune(v), true
}

// jsonKeyLess is MySQL's order of object keys: shorter first, then bytes.
func jsonKeyCompare(a, b string) int {
	if len(a) != len(b) {
		return cmp.Compare(len(a), len(b))
	}
	return strings.Compare(a, b)
}

// set adds or replaces an object member.
func (j *JSON) set(k string, v JSON) {
	i, found := slices.BinarySearchFunc(j.Keys, k, jsonKeyCompare)
	if found {
		j.Vals[i] = v
		return
	}
	j.Keys = slices.Insert(j.Keys, i, k)
	j.Vals = slices.Insert(j.Vals, i, v)
}

// Get returns an object member.
func (j JSON) Get(k string) (JSON, bool) {
	i, found := slices.BinarySearchFunc(j.Keys, k, jsonKeyCompare)
	if !found {
		return JSON{}, false
	}
	return j.Vals[i], true
}

// NewJSONObject returns an empty object.
func NewJSONObject() JSON { return JSON{Kind: JSONObject} }

// Set returns a copy of object j with member k set to v.
func (j JSON) Set(k string, v JSON) JSON {
	j.Keys = slices.Clone(j.Keys)
	j.Vals = slices.Clone(j.Vals)
	j.set(k, v)
	return j
}

// Remove returns a copy of object j without member k.
func (j JSON) Remove(k string) JSON {
	i, found := slices.BinarySearchFunc(j.Keys, k, jsonKeyCompare)
	if !found {
		return j
	}
	j.Keys = slices.Delete(slices.Clone(j.Keys), i, i+1)
	j.Vals = slices.Delete(slices.Clone(j.Vals), i, i+1)
	return j
}

// Append writes j in MySQL's normal form.
func (j JSON) Append(b []byte) []byte {
	switch j.Kind {
	case JSONNull:
		return append(b, "null"...)
	case JSONBool:
		if j.B {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	case JSONInt:
		return strconv.AppendInt(b, j.I, 10)
	case JSONUint:
		return strconv.AppendUint(b, j.U, 10)
	case JSONDouble:
		return appendJSONDouble(b, j.F)
	case JSONString:
		return AppendJSONString(b, j.S)
	case JSONArray:
		b = append(b, '[')
		for i, v := range j.Arr {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = v.Append(b)
		}
		return append(b, ']')
	case JSONObject:
		b = append(b, '{')
		for i, k := range j.Keys {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = AppendJSONString(b, k)
			b = append(b, ": "...)
			b = j.Vals[i].Append(b)
		}
		return append(b, '}')
	}
	return b
}

// String is j's text.
func (j JSON) String() string { return string(j.Append(nil)) }

func appendJSONDouble(b []byte, f float64) []byte {
	start := len(b)
	b = AppendFloat(b, f, 64)
	if !bytes.ContainsAny(b[start:], ".eEIN") {
		b = append(b, ".0"...)
	}
	return b
}

// AppendJSONString writes s as a JSON string literal.
func AppendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			b = append(b, '\\', '"')
		case '\\':
			b = append(b, '\\', '\\')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		default:
			if c < 0x20 {
				b = fmt.Appendf(b, "\\u%04x", c)
			} else {
				b = append(b, c)
			}
		}
	}
	return append(b, '"')
}

// TypeName is JSON_TYPE's name of j.
func (j JSON) TypeName() string {
	switch j.Kind {
	case JSONNull:
		return "NULL"
	case JSONBool:
		return "BOOLEAN"
	case JSONInt:
		return "INTEGER"
	case JSONUint:
		return "UNSIGNED INTEGER"
	case JSONDouble:
		return "DOUBLE"
	case JSONString:
		return "STRING"
	case JSONArray:
		return "ARRAY"
	}
	return "OBJECT"
}

// CompareJSON orders JSON values as MySQL compares them: numbers by value,
// strings bytewise, arrays and objects element by element; values of
// different types by a fixed order of types.
func CompareJSON(a, b JSON) int {
	na, nb := a.isNumber(), b.isNumber()
	if na && nb {
		return compareJSONNumbers(a, b)
	}
	if ra, rb := jsonRank(a), jsonRank(b); ra != rb {
		return cmp.Compare(ra, rb)
	}
	switch a.Kind {
	case JSONBool:
		return cmp.Compare(boolInt(a.B), boolInt(b.B))
	case JSONString:
		return strings.Compare(a.S, b.S)
	case JSONArray:
		for i := 0; i < len(a.Arr) && i < len(b.Arr); i++ {
			if c := CompareJSON(a.Arr[i], b.Arr[i]); c != 0 {
				return c
			}
		}
		return cmp.Compare(len(a.Arr), len(b.Arr))
	case JSONObject:
		if c := cmp.Compare(len(a.Keys), len(b.Keys)); c != 0 {
			return c
		}
		for i := range a.Keys {
			if c := strings.Compare(a.Keys[i], b.Keys[i]); c != 0 {
				return c
			}
			if c := CompareJSON(a.Vals[i], b.Vals[i]); c != 0 {
				return c
			}
		}
	}
	return 0
}

func (j JSON) isNumber() bool { return j.Kind == JSONInt || j.Kind == JSONUint || j.Kind == JSONDouble }

// jsonRank orders JSON types for comparison (MySQL: NULL lowest,
// then numbers, strings, objects, arrays, booleans).
func jsonRank(j JSON) int {
	switch j.Kind {
	case JSONNull:
		return 0
	case JSONInt, JSONUint, JSONDouble:
		return 1
	case JSONString:
		return 2
	case JSONObject:
		return 3
	case JSONArray:
		return 4
	}
	return 5
}

func compareJSONNumbers(a, b JSON) int {
	if a.Kind != JSONDouble && b.Kind != JSONDouble {
		return Compare(a.number(), b.number())
	}
	fa, _ := ToFloat(a.number())
	fb, _ := ToFloat(b.number())
	return cmp.Compare(fa, fb)
}

func (j JSON) number() Datum {
	switch j.Kind {
	case JSONInt:
		return NewInt(j.I)
	case JSONUint:
		return NewUint(j.U)
	}
	return NewFloat(j.F)
}

// Datum converts a JSON scalar to the SQL value it reads as (strings
// unquoted, true and false as 1 and 0); arrays and objects give their
// text.
func (j JSON) Datum() Datum {
	switch j.Kind {
	case JSONNull:
		return Null
	case JSONBool:
		return NewBool(j.B)
	case JSONInt, JSONUint, JSONDouble:
		return j.number()
	case JSONString:
		return NewString(j.S)
	}
	return NewCollatedBytes(j.Append(nil), CollationJSON)
}

// JSONDatum wraps a JSON value as a datum.
func JSONDatum(j JSON) Datum { return NewCollatedBytes(j.Append(nil), CollationJSON) }

// IsJSON reports a JSON datum.
func (d Datum) IsJSON() bool { return d.k == KindString && d.c == CollationJSON }
