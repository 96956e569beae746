package types

import (
	"errors"
	"strconv"
	"strings"
	"unicode"
)

// JSON paths: $ followed by legs .key, ."quoted key", .*, [n], [last],
// [last-n], [m to n], [*] and **.

type legKind uint8

const (
	legMember legKind = iota
	legAnyMember
	legIndex
	legAnyIndex
	legRange
	legAnyDepth
)

// arrayIndex is n, or last-n when fromLast.
type arrayIndex struct {
	n        int
	fromLast bool
}

func (a arrayIndex) resolve(length int) int {
	if a.fromLast {
		return length - 1 - a.n
	}
	return a.n
}

type pathLeg struct {
	kind     legKind
	key      string
	idx, end arrayIndex
}

// JSONPath is a parsed path expression.
type JSONPath struct {
	legs []pathLeg
}

// ErrJSONPath reports a malformed path.
var ErrJSONPath = errors.New("invalid JSON path expression")

// ParseJSONPath parses a path expression.
func ParseJSONPath(s string) (JSONPath, error) {
	var p JSONPath
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "$") {
		return p, ErrJSONPath
	}
	i := 1
	for {
		for i < len(s) && unicode.IsSpace(rune(s[i])) {
			i++
		}
		if i >= len(s) {
			break
		}
		switch {
		case s[i] == '.':
			i++
			for i < len(s) && unicode.IsSpace(rune(s[i])) {
				i++
			}
			if i >= len(s) {
				return p, ErrJSONPath
			}
			switch {
			case s[i] == '*':
				p.legs = append(p.legs, pathLeg{kind: legAnyMember})
				i++
			case s[i] == '"':
				j := i + 1
				var sb strings.Builder
				for j < len(s) && s[j] != '"' {
					if s[j] == '\\' && j+1 < len(s) {
						j++
					}
					sb.WriteByte(s[j])
					j++
				}
				if j >= len(s) {
					return p, ErrJSONPath
				}
				p.legs = append(p.legs, pathLeg{kind: legMember, key: sb.String()})
				i = j + 1
			default:
				j := i
				for j < len(s) && (s[j] == '_' || s[j] == '$' || s[j] >= 0x80 || unicode.IsLetter(rune(s[j])) || unicode.IsDigit(rune(s[j]))) {
					j++
				}
				if j == i {
					return p, ErrJSONPath
				}
				if c := s[i]; c >= '0' && c <= '9' {
					return p, ErrJSONPath
				}
				p.legs = append(p.legs, pathLeg{kind: legMember, key: s[i:j]})
				i = j
			}
		case s[i] == '[':
			j := strings.IndexByte(s[i:], ']')
			if j < 0 {
				return p, ErrJSONPath
			}
			inner := strings.TrimSpace(s[i+1 : i+j])
			i += j + 1
			if inner == "*" {
				p.legs = append(p.legs, pathLeg{kind: legAnyIndex})
				continue
			}
			if from, to, ok := strings.Cut(inner, " to "); ok {
				a, err := parseArrayIndex(from)
				if err != nil {
					return p, err
				}
				b, err := parseArrayIndex(to)
				if err != nil {
					return p, err
				}
				p.legs = append(p.legs, pathLeg{kind: legRange, idx: a, end: b})
				continue
			}
			a, err := parseArrayIndex(inner)
			if err != nil {
				return p, err
			}
			p.legs = append(p.legs, pathLeg{kind: legIndex, idx: a})
		case strings.HasPrefix(s[i:], "**"):
			i += 2
			if i >= len(s) {
				return p, ErrJSONPath // ** must be followed by a leg
			}
			p.legs = append(p.legs, pathLeg{kind: legAnyDepth})
		default:
			return p, ErrJSONPath
		}
	}
	return p, nil
}

func parseArrayIndex(s string) (arrayIndex, error) {
	s = strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(s, "last"); ok {
		rest = strings.TrimSpace(rest)
		if rest == "" {
			return arrayIndex{fromLast: true}, nil
		}
		rest, ok = strings.CutPrefix(rest, "-")
		if !ok {
			return arrayIndex{}, ErrJSONPath
		}
		n, err := strconv.Atoi(strings.TrimSpace(rest))
		if err != nil || n < 0 {
			return arrayIndex{}, ErrJSONPath
		}
		return arrayIndex{n: n, fromLast: true}, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return arrayIndex{}, ErrJSONPath
	}
	return arrayIndex{n: n}, nil
}

// HasWildcard reports a path that can match several values.
func (p JSONPath) HasWildcard() bool {
	for _, l := range p.legs {
		if l.kind == legAnyMember || l.kind == legAnyIndex || l.kind == legAnyDepth || l.kind == legRange {
			return true
		}
	}
	return false
}

// IsRoot reports the path $.
func (p JSONPath) IsRoot() bool { return len(p.legs) == 0 }

// Extract returns the values p selects in j, in document order.
func (j JSON) Extract(p JSONPath) []JSON {
	var out []JSON
	extract(j, p.legs, &out)
	return out
}

func extract(j JSON, legs []pathLeg, out *[]JSON) {
	if len(legs) == 0 {
		*out = append(*out, j)
		return
	}
	l, rest := legs[0], legs[1:]
	switch l.kind {
	case legMember:
		if j.Kind == JSONObject {
			if v, ok := j.Get(l.key); ok {
				extract(v, rest, out)
			}
		}
	case legAnyMember:
		if j.Kind == JSONObject {
			for _, v := range j.Vals {
				extract(v, rest, out)
			}
		}
	case legIndex:
		if j.Kind != JSONArray {
			// A scalar or object is an array of itself for [0] and [last].
			if l.idx.resolve(1) == 0 {
				extract(j, rest, out)
			}
			return
		}
		if i := l.idx.resolve(len(j.Arr)); i >= 0 && i < len(j.Arr) {
			extract(j.Arr[i], rest, out)
		}
	case legAnyIndex:
		if j.Kind == JSONArray {
			for _, v := range j.Arr {
				extract(v, rest, out)
			}
		}
	case legRange:
		arr := j.Arr
		if j.Kind != JSONArray {
			arr = []JSON{j}
		}
		from, to := l.idx.resolve(len(arr)), l.end.resolve(len(arr))
		for i := max(from, 0); i <= to && i < len(arr); i++ {
			extract(arr[i], rest, out)
		}
	case legAnyDepth:
		extract(j, rest, out)
		switch j.Kind {
		case JSONObject:
			for _, v := range j.Vals {
				extract(v, legs, out)
			}
		case JSONArray:
			for _, v := range j.Arr {
				extract(v, legs, out)
			}
		}
	}
}

// JSONSetMode says what JSON_SET, JSON_INSERT and JSON_REPLACE do.
type JSONSetMode uint8

const (
	JSONSetAny     JSONSetMode = iota // JSON_SET: replace or add
	JSONSetInsert                     // JSON_INSERT: add only
	JSONSetReplace                    // JSON_REPLACE: replace only
)

// SetPath returns j with the value at p (a path without wildcards) set to
// v as mode allows. A missing last member is added to its object; an
// index past the end of an array appends; a scalar at an index position
// is wrapped into an array first.
func (j JSON) SetPath(p JSONPath, v JSON, mode JSONSetMode) JSON {
	return setPath(j, p.legs, v, mode)
}

func setPath(j JSON, legs []pathLeg, v JSON, mode JSONSetMode) JSON {
	if len(legs) == 0 {
		if mode == JSONSetInsert {
			return j
		}
		return v
	}
	l, rest := legs[0], legs[1:]
	switch l.kind {
	case legMember:
		if j.Kind != JSONObject {
			return j
		}
		cur, ok := j.Get(l.key)
		if !ok {
			if len(rest) == 0 && mode != JSONSetReplace {
				return j.Set(l.key, v)
			}
			return j
		}
		return j.Set(l.key, setPath(cur, rest, v, mode))
	case legIndex:
		if j.Kind != JSONArray {
			if l.idx.resolve(1) == 0 {
				return setPath(j, rest, v, mode)
			}
			if len(rest) == 0 && mode != JSONSetReplace {
				return JSON{Kind: JSONArray, Arr: []JSON{j, v}}
			}
			return j
		}
		i := l.idx.resolve(len(j.Arr))
		if i < 0 {
			return j
		}
		if i >= len(j.Arr) {
			if len(rest) == 0 && mode != JSONSetReplace {
				j.Arr = append(append([]JSON(nil), j.Arr...), v)
			}
			return j
		}
		arr := append([]JSON(nil), j.Arr...)
		arr[i] = setPath(arr[i], rest, v, mode)
		j.Arr = arr
		return j
	}
	return j
}

// RemovePath returns j without the value at p (a path without wildcards,
// not $).
func (j JSON) RemovePath(p JSONPath) JSON { return removePath(j, p.legs) }

func removePath(j JSON, legs []pathLeg) JSON {
	if len(legs) == 0 {
		return j
	}
	l, rest := legs[0], legs[1:]
	switch l.kind {
	case legMember:
		if j.Kind != JSONObject {
			return j
		}
		cur, ok := j.Get(l.key)
		if !ok {
			return j
		}
		if len(rest) == 0 {
			return j.Remove(l.key)
		}
		return j.Set(l.key, removePath(cur, rest))
	case legIndex:
		if j.Kind != JSONArray {
			return j
		}
		i := l.idx.resolve(len(j.Arr))
		if i < 0 || i >= len(j.Arr) {
			return j
		}
		arr := append([]JSON(nil), j.Arr...)
		if len(rest) == 0 {
			arr = append(arr[:i], arr[i+1:]...)
		} else {
			arr[i] = removePath(arr[i], rest)
		}
		j.Arr = arr
		return j
	}
	return j
}

// Contains reports whether candidate is contained in j (JSON_CONTAINS):
// scalars equal, an array contains an array whose every element it
// contains (or a scalar it has), an object contains an object whose every
// member it has with a contained value.
func (j JSON) Contains(candidate JSON) bool {
	switch j.Kind {
	case JSONArray:
		if candidate.Kind == JSONArray {
			for _, c := range candidate.Arr {
				if !j.Contains(c) {
					return false
				}
			}
			return true
		}
		for _, e := range j.Arr {
			if e.Contains(candidate) {
				return true
			}
		}
		return false
	case JSONObject:
		if candidate.Kind != JSONObject {
			return false
		}
		for i, k := range candidate.Keys {
			v, ok := j.Get(k)
			if !ok || !v.Contains(candidate.Vals[i]) {
				return false
			}
		}
		return true
	}
	if candidate.Kind == JSONArray || candidate.Kind == JSONObject {
		return false
	}
	return CompareJSON(j, candidate) == 0 && (j.Kind == candidate.Kind || (j.isNumber() && candidate.isNumber()))
}

// Depth is JSON_DEPTH: 1 for scalars and empty containers.
func (j JSON) Depth() int {
	d := 0
	switch j.Kind {
	case JSONArray:
		for _, v := range j.Arr {
			d = max(d, v.Depth())
		}
	case JSONObject:
		for _, v := range j.Vals {
			d = max(d, v.Depth())
		}
	default:
		return 1
	}
	return d + 1
}

// MergePatch is JSON_MERGE_PATCH of j and patch (RFC 7396).
func (j JSON) MergePatch(patch JSON) JSON {
	if patch.Kind != JSONObject {
		return patch
	}
	if j.Kind != JSONObject {
		j = NewJSONObject()
	}
	for i, k := range patch.Keys {
		v := patch.Vals[i]
		if v.Kind == JSONNull {
			j = j.Remove(k)
			continue
		}
		cur, _ := j.Get(k)
		j = j.Set(k, cur.MergePatch(v))
	}
	return j
}

// MergePreserve is JSON_MERGE_PRESERVE of j and other: arrays
// concatenate, objects merge (values of a shared key merged in turn),
// anything else is wrapped in an array first.
func (j JSON) MergePreserve(other JSON) JSON {
	if j.Kind == JSONObject && other.Kind == JSONObject {
		out := j
		for i, k := range other.Keys {
			if cur, ok := out.Get(k); ok {
				out = out.Set(k, cur.MergePreserve(other.Vals[i]))
			} else {
				out = out.Set(k, other.Vals[i])
			}
		}
		return out
	}
	a, b := j.asArray(), other.asArray()
	return JSON{Kind: JSONArray, Arr: append(append([]JSON(nil), a...), b...)}
}

func (j JSON) asArray() []JSON {
	if j.Kind == JSONArray {
		return j.Arr
	}
	return []JSON{j}
}
