package expression

import (
	"bytes"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/types"
	"github.com/cockroachdb/apd/v3"
	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// String functions. A text string is a sequence of characters; a binary
// string (BINARY, VARBINARY, BLOB, x'..', CAST(... AS BINARY)) one of
// bytes, and positions and lengths count those. A function's result is
// binary if one of its string arguments is.

// str is a string argument as characters (bytes for binary strings).
type str struct {
	r    []rune
	bin  bool
	coll types.Collation
}

func toStr(d types.Datum) str {
	b := types.ToText(d)
	c := types.CollationGeneralCI
	if d.Kind() == types.KindString || d.IsEnumOrSet() {
		c = d.Collation()
	}
	if c.IsBinary() {
		return str{r: bytesAsRunes(b), bin: true, coll: c}
	}
	return str{r: []rune(string(b)), coll: c}
}

// datum turns characters back into a string datum like s.
func (s str) datum(r []rune) types.Datum {
	if s.bin {
		b := make([]byte, len(r))
		for i, c := range r {
			b[i] = byte(c)
		}
		return types.NewCollatedBytes(b, types.CollationBinary)
	}
	return types.NewCollatedBytes([]byte(string(r)), s.coll)
}

// resultCollation is the collation of a function result built from v's
// strings: binary if one is, else the strongest.
func resultCollation(v []types.Datum) types.Collation {
	c := types.CollationGeneralCI
	for _, d := range v {
		if d.Kind() == types.KindString || d.IsEnumOrSet() {
			if dc := d.Collation(); dc != types.CollationJSON {
				c = max(c, dc)
			}
		}
	}
	return c
}

// strType is a string function's result type: binary if an argument is.
func strType(args []Expr) types.FieldType {
	for _, a := range args {
		if t := a.Type(); t.Charset == "binary" && (t.IsString() || t.Tp == mysql.TypeVarString) {
			return stringType(255, types.CollationBinary)
		}
	}
	return typeString
}

func argInt(d types.Datum) int64 {
	v, _, _ := types.ToInt(d)
	if d.Kind() == types.KindUint && d.Uint() > math.MaxInt64 {
		return math.MaxInt64
	}
	return v
}

// indexRunes finds sub in s from position from (0-based), comparing
// characters under coll: the position, or -1.
func indexRunes(s, sub []rune, from int, coll types.Collation) int {
	if len(sub) == 0 {
		return from
	}
outer:
	for i := from; i+len(sub) <= len(s); i++ {
		for j := range sub {
			if !types.EqualRunes(s[i+j], sub[j], coll) {
				continue outer
			}
		}
		return i
	}
	return -1
}

func stringBuiltins() map[string]builtin {
	fixedStr := strType
	substring := builtin{minArgs: 2, maxArgs: 3, tp: fixedStr, fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
		s := toStr(v[0])
		pos := argInt(v[1])
		n := int64(len(s.r))
		var start int64
		switch {
		case pos > 0:
			start = pos - 1
		case pos < 0:
			start = n + pos
		default:
			return s.datum(nil), nil
		}
		if start < 0 || start >= n {
			return s.datum(nil), nil
		}
		end := n
		if len(v) == 3 {
			l := argInt(v[2])
			if l <= 0 {
				return s.datum(nil), nil
			}
			end = min(n, start+l)
		}
		return s.datum(s.r[start:end]), nil
	}}
	caseMap := func(f func(rune) rune) builtin {
		return builtin{minArgs: 1, maxArgs: 1, tp: func(a []Expr) types.FieldType { return strType(a) }, fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			s := toStr(v[0])
			if s.bin {
				return v[0], nil
			}
			out := make([]rune, len(s.r))
			for i, c := range s.r {
				out[i] = f(c)
			}
			return s.datum(out), nil
		}}
	}
	trim := func(leading, trailing bool) builtin {
		return builtin{minArgs: 1, maxArgs: 1, tp: fixedStr, fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			s := toStr(v[0])
			return s.datum(trimRunes(s.r, []rune{' '}, leading, trailing)), nil
		}}
	}
	pad := func(left bool) builtin {
		return builtin{minArgs: 3, maxArgs: 3, tp: fixedStr, fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			s, p := toStr(v[0]), toStr(v[2])
			n := argInt(v[1])
			if n < 0 || n > 1<<26 {
				return types.Null, nil
			}
			if int(n) <= len(s.r) {
				return s.datum(s.r[:n]), nil
			}
			if len(p.r) == 0 {
				return types.Null, nil
			}
			fill := make([]rune, 0, int(n)-len(s.r))
			for len(fill) < int(n)-len(s.r) {
				fill = append(fill, p.r[len(fill)%len(p.r)])
			}
			if left {
				return s.datum(append(fill, s.r...)), nil
			}
			return s.datum(append(append([]rune(nil), s.r...), fill...)), nil
		}}
	}
	locate := func(ctx *Ctx, sub, s types.Datum, from int64) types.Datum {
		ss, sub2 := toStr(s), toStr(sub)
		coll := max(ss.coll, sub2.coll)
		if from < 1 || from > int64(len(ss.r))+1 {
			return types.NewInt(0)
		}
		return types.NewInt(int64(indexRunes(ss.r, sub2.r, int(from-1), coll) + 1))
	}
	return map[string]builtin{
		"isnull": {minArgs: 1, maxArgs: 1, tp: fixed(typeBool), nullSafe: true, fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			return types.NewBool(v[0].IsNull()), nil
		}},
		"concat": {minArgs: 1, maxArgs: -1, tp: fixedStr, fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			var b []byte
			for _, d := range v {
				b = append(b, types.ToText(d)...)
			}
			return types.NewCollatedBytes(b, resultCollation(v)), nil
		}},
		"concat_ws": {minArgs: 2, maxArgs: -1, tp: fixedStr, nullSafe: true, fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			if v[0].IsNull() {
				return types.Null, nil
			}
			sep := types.ToText(v[0])
			var b []byte
			first := true
			for _, d := range v[1:] {
				if d.IsNull() {
					continue
				}
				if !first {
					b = append(b, sep...)
				}
				first = false
				b = append(b, types.ToText(d)...)
			}
			return types.NewCollatedBytes(b, resultCollation(v)), nil
		}},
		"substring": substring, "substr": substring, "mid": substring,
		"substring_index": {minArgs: 3, maxArgs: 3, tp: fixedStr, fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			s, delim := types.ToText(v[0]), types.ToText(v[1])
			n := argInt(v[2])
			c := resultCollation(v)
			if len(delim) == 0 || n == 0 {
				return types.NewCollatedBytes(nil, c), nil
			}
			parts := bytes.Split(s, delim)
			if n > 0 {
				if int(n) >= len(parts) {
					return types.NewCollatedBytes(s, c), nil
				}
				return types.NewCollatedBytes(bytes.Join(parts[:n], delim), c), nil
			}
			if int(-n) >= len(parts) {
				return types.NewCollatedBytes(s, c), nil
			}
			return types.NewCollatedBytes(bytes.Join(parts[len(parts)+int(n):], delim), c), nil
		}},
		"upper": caseMap(unicode.ToUpper), "ucase": caseMap(unicode.ToUpper),
		"lower": caseMap(unicode.ToLower), "lcase": caseMap(unicode.ToLower),
		"length": {minArgs: 1, maxArgs: 1, tp: fixed(typeInt), fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			return types.NewInt(int64(len(types.ToText(v[0])))), nil
		}},
		"octet_length": {minArgs: 1, maxArgs: 1, tp: fixed(typeInt), fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			return types.NewInt(int64(len(types.ToText(v[0])))), nil
		}},
		"char_length": {minArgs: 1, maxArgs: 1, tp: fixed(typeInt), fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			return types.NewInt(int64(charLen(v[0]))), nil
		}},
		"character_length": {minArgs: 1, maxArgs: 1, tp: fixed(typeInt), fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			return types.NewInt(int64(charLen(v[0]))), nil
		}},
		"bit_length": {minArgs: 1, maxArgs: 1, tp: fixed(typeInt), fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			return types.NewInt(8 * int64(len(types.ToText(v[0])))), nil
		}},
		"trim": {minArgs: 1, maxArgs: 3, tp: fixedStr, fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			s := toStr(v[0])
			rem := []rune{' '}
			if len(v) >= 2 {
				rem = toStr(v[1]).r
			}
			leading, trailing := true, true
			if len(v) == 3 {
				switch argInt(v[2]) {
				case trimLeading:
					trailing = false
				case trimTrailing:
					leading = false
				}
			}
			return s.datum(trimRunes(s.r, rem, leading, trailing)), nil
		}},
		"ltrim": trim(true, false), "rtrim": trim(false, true),
		"replace": {minArgs: 3, maxArgs: 3, tp: fixedStr, fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			s, from, to := types.ToText(v[0]), types.ToText(v[1]), types.ToText(v[2])
			c := resultCollation(v)
			if len(from) == 0 {
				return types.NewCollatedBytes(s, c), nil
			}
			return types.NewCollatedBytes(bytes.ReplaceAll(s, from, to), c), nil
		}},
		"lpad": pad(true), "rpad": pad(false),
		"locate": {minArgs: 2, maxArgs: 3, tp: fixed(typeInt), fn: func(ctx *Ctx, v []types.Datum) (types.Datum, error) {
			from := int64(1)
			if len(v) == 3 {
				from = argInt(v[2])
			}
			return locate(ctx, v[0], v[1], from), nil
		}},
		"position": {minArgs: 2, maxArgs: 2, tp: fixed(typeInt), fn: func(ctx *Ctx, v []types.Datum) (types.Datum, error) {
			return locate(ctx, v[0], v[1], 1), nil
		}},
		"instr": {minArgs: 2, maxArgs: 2, tp: fixed(typeInt), fn: func(ctx *Ctx, v []types.Datum) (types.Datum, error) {
			return locate(ctx, v[1], v[0], 1), nil
		}},
		"left": {minArgs: 2, maxArgs: 2, tp: fixedStr, fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			s := toStr(v[0])
			n := argInt(v[1])
			if n <= 0 {
				return s.datum(nil), nil
			}
			return s.datum(s.r[:min(int64(len(s.r)), n)]), nil
		}},
		"right": {minArgs: 2, maxArgs: 2, tp: fixedStr, fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			s := toStr(v[0])
			n := argInt(v[1])
			if n <= 0 {
				return s.datum(nil), nil
			}
			return s.datum(s.r[int64(len(s.r))-min(int64(len(s.r)), n):]), nil
		}},
		"repeat": {minArgs: 2, maxArgs: 2, tp: fixedStr, fn: func(ctx *Ctx, v []types.Datum) (types.Datum, error) {
			b := types.ToText(v[0])
			n := argInt(v[1])
			c := resultCollation(v[:1])
			if n <= 0 || len(b) == 0 {
				return types.NewCollatedBytes(nil, c), nil
			}
			if int64(len(b))*n > maxAllowedPacket {
				ctx.Warn(errno.New(1301, "Result of repeat() was larger than max_allowed_packet (%d) - truncated", maxAllowedPacket))
				return types.Null, nil
			}
			return types.NewCollatedBytes(bytes.Repeat(b, int(n)), c), nil
		}},
		"space": {minArgs: 1, maxArgs: 1, tp: fixedStr, fn: func(ctx *Ctx, v []types.Datum) (types.Datum, error) {
			n := argInt(v[0])
			if n <= 0 {
				return types.NewString(""), nil
			}
			if n > maxAllowedPacket {
				return types.Null, nil
			}
			return types.NewString(strings.Repeat(" ", int(n))), nil
		}},
		"reverse": {minArgs: 1, maxArgs: 1, tp: fixedStr, fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			s := toStr(v[0])
			out := make([]rune, len(s.r))
			for i, c := range s.r {
				out[len(s.r)-1-i] = c
			}
			return s.datum(out), nil
		}},
		"insert_func": {minArgs: 4, maxArgs: 4, tp: fixedStr, fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			s, ins := toStr(v[0]), toStr(v[3])
			pos, n := argInt(v[1]), argInt(v[2])
			if pos < 1 || pos > int64(len(s.r)) {
				return s.datum(s.r), nil
			}
			end := int64(len(s.r))
			if n >= 0 && pos-1+n < end {
				end = pos - 1 + n
			}
			out := append(append(append([]rune(nil), s.r[:pos-1]...), ins.r...), s.r[end:]...)
			return s.datum(out), nil
		}},
		"hex": {minArgs: 1, maxArgs: 1, tp: fixed(typeString), fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			d := v[0]
			switch d.Kind() {
			case types.KindString, types.KindEnum, types.KindSet:
				return types.NewString(strings.ToUpper(hex.EncodeToString(d.Bytes()))), nil
			}
			var u uint64
			if d.Kind() == types.KindUint {
				u = d.Uint()
			} else {
				f, _ := types.ToFloat(d)
				if f >= 1<<63 {
					u = math.MaxUint64
					if f < 1<<64 {
						u = uint64(f)
					}
				} else {
					i, _, _ := types.ToInt(d)
					u = uint64(i)
				}
			}
			return types.NewString(strings.ToUpper(strconv.FormatUint(u, 16))), nil
		}},
		"unhex": {minArgs: 1, maxArgs: 1, tp: fixed(stringType(255, types.CollationBinary)), fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			s := string(types.ToText(v[0]))
			if len(s)%2 == 1 {
				s = "0" + s
			}
			b, err := hex.DecodeString(s)
			if err != nil {
				return types.Null, nil
			}
			return types.NewCollatedBytes(b, types.CollationBinary), nil
		}},
		"ascii": {minArgs: 1, maxArgs: 1, tp: fixed(typeInt), fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			b := types.ToText(v[0])
			if len(b) == 0 {
				return types.NewInt(0), nil
			}
			return types.NewInt(int64(b[0])), nil
		}},
		"ord": {minArgs: 1, maxArgs: 1, tp: fixed(typeInt), fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			b := types.ToText(v[0])
			if len(b) == 0 {
				return types.NewInt(0), nil
			}
			_, n := utf8.DecodeRune(b)
			if toStr(v[0]).bin {
				n = 1
			}
			var r int64
			for _, c := range b[:n] {
				r = r<<8 | int64(c)
			}
			return types.NewInt(r), nil
		}},
		"char_func": {minArgs: 1, maxArgs: -1, tp: fixed(stringType(255, types.CollationBinary)), nullSafe: true, fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			// The parser passes CHAR(n, ... USING cs) with the character
			// set as the last argument.
			cs := v[len(v)-1]
			var b []byte
			for _, d := range v[:len(v)-1] {
				if d.IsNull() {
					continue
				}
				u := uint32(argInt(d))
				var tmp [4]byte
				n := 0
				for x := u; x > 0; x >>= 8 {
					n++
				}
				for i := n - 1; i >= 0; i-- {
					tmp[i] = byte(u)
					u >>= 8
				}
				b = append(b, tmp[:n]...)
			}
			if cs.IsNull() || strings.EqualFold(string(types.ToText(cs)), "binary") {
				return types.NewCollatedBytes(b, types.CollationBinary), nil
			}
			return types.NewBytes(b), nil
		}},
		"strcmp": {minArgs: 2, maxArgs: 2, tp: fixed(typeInt), fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			c := types.CompareStrings(types.ToText(v[0]), types.ToText(v[1]), resultCollation(v))
			return types.NewInt(int64(c)), nil
		}},
		"find_in_set": {minArgs: 2, maxArgs: 2, tp: fixed(typeInt), fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			s, list := types.ToText(v[0]), types.ToText(v[1])
			c := resultCollation(v)
			if bytes.IndexByte(s, ',') >= 0 || len(list) == 0 {
				return types.NewInt(0), nil
			}
			for i, part := range bytes.Split(list, []byte(",")) {
				if types.CompareStrings(part, s, c) == 0 && (len(part) > 0 || len(s) == 0) {
					return types.NewInt(int64(i + 1)), nil
				}
			}
			return types.NewInt(0), nil
		}},
		"field": {minArgs: 2, maxArgs: -1, tp: fixed(typeInt), nullSafe: true, fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			if v[0].IsNull() {
				return types.NewInt(0), nil
			}
			allStr := true
			for _, d := range v {
				if !d.IsNull() && d.Kind() != types.KindString {
					allStr = false
				}
			}
			for i, d := range v[1:] {
				if d.IsNull() {
					continue
				}
				var eq bool
				if allStr {
					eq = types.Compare(v[0], d) == 0
				} else {
					a, _ := types.ToFloat(v[0])
					b, _ := types.ToFloat(d)
					eq = a == b
				}
				if eq {
					return types.NewInt(int64(i + 1)), nil
				}
			}
			return types.NewInt(0), nil
		}},
		"elt": {minArgs: 2, maxArgs: -1, tp: fixedStr, nullSafe: true, fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			if v[0].IsNull() {
				return types.Null, nil
			}
			n := argInt(v[0])
			if n < 1 || n >= int64(len(v)) {
				return types.Null, nil
			}
			d := v[n]
			if d.IsNull() {
				return d, nil
			}
			return types.NewCollatedBytes(types.ToText(d), resultCollation(v[1:])), nil
		}},
		"quote": {minArgs: 1, maxArgs: 1, tp: fixedStr, nullSafe: true, fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			if v[0].IsNull() {
				return types.NewString("NULL"), nil
			}
			var b []byte
			b = append(b, '\'')
			for _, c := range types.ToText(v[0]) {
				switch c {
				case '\'', '\\':
					b = append(b, '\\', c)
				case 0:
					b = append(b, '\\', '0')
				case 0x1a:
					b = append(b, '\\', 'Z')
				default:
					b = append(b, c)
				}
			}
			return types.NewBytes(append(b, '\'')), nil
		}},
		"format": {minArgs: 2, maxArgs: 3, tp: fixed(typeString), fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			dec := argInt(v[1])
			dec = max(0, min(dec, 30))
			d, _ := types.ToDecimal(v[0])
			if v[0].Kind() == types.KindFloat {
				d, _ = types.ToDecimal(types.NewString(strconv.FormatFloat(v[0].Float(), 'f', int(dec), 64)))
			}
			r := new(apd.Decimal)
			types.DecimalContext().Quantize(r, d, -int32(dec))
			return types.NewString(groupThousands(string(types.AppendDecimal(nil, r)))), nil
		}},
		"bin": {minArgs: 1, maxArgs: 1, tp: fixed(typeString), fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			return types.NewString(strconv.FormatUint(uint64(argInt(v[0])), 2)), nil
		}},
		"oct": {minArgs: 1, maxArgs: 1, tp: fixed(typeString), fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			return types.NewString(strconv.FormatUint(uint64(argInt(v[0])), 8)), nil
		}},
		"conv": {minArgs: 3, maxArgs: 3, tp: fixed(typeString), fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			from, to := argInt(v[1]), argInt(v[2])
			if from < 0 {
				from = -from
			}
			neg := to < 0
			if neg {
				to = -to
			}
			if from < 2 || from > 36 || to < 2 || to > 36 {
				return types.Null, nil
			}
			s := strings.TrimSpace(string(types.ToText(v[0])))
			sign := ""
			if strings.HasPrefix(s, "-") {
				sign, s = "-", s[1:]
			}
			end := 0
			for end < len(s) {
				c := unicode.ToLower(rune(s[end]))
				d := int64(36)
				switch {
				case c >= '0' && c <= '9':
					d = int64(c - '0')
				case c >= 'a' && c <= 'z':
					d = int64(c-'a') + 10
				}
				if d >= from {
					break
				}
				end++
			}
			u, err := strconv.ParseUint(s[:end], int(from), 64)
			if err != nil && end > 0 {
				u = math.MaxUint64
			}
			if sign == "-" {
				if neg {
					return types.NewString("-" + strings.ToUpper(strconv.FormatUint(u, int(to)))), nil
				}
				u = -u
			}
			return types.NewString(strings.ToUpper(strconv.FormatUint(u, int(to)))), nil
		}},
		"md5": {minArgs: 1, maxArgs: 1, tp: fixed(stringType(32, types.CollationGeneralCI)), fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			h := md5.Sum(types.ToText(v[0]))
			return types.NewString(hex.EncodeToString(h[:])), nil
		}},
		"sha1": {minArgs: 1, maxArgs: 1, tp: fixed(stringType(40, types.CollationGeneralCI)), fn: sha1Fn},
		"sha":  {minArgs: 1, maxArgs: 1, tp: fixed(stringType(40, types.CollationGeneralCI)), fn: sha1Fn},
		"sha2": {minArgs: 2, maxArgs: 2, tp: fixed(stringType(128, types.CollationGeneralCI)), fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			b := types.ToText(v[0])
			var sum []byte
			switch argInt(v[1]) {
			case 0, 256:
				h := sha256.Sum256(b)
				sum = h[:]
			case 224:
				h := sha256.Sum224(b)
				sum = h[:]
			case 384:
				h := sha512.Sum384(b)
				sum = h[:]
			case 512:
				h := sha512.Sum512(b)
				sum = h[:]
			default:
				return types.Null, nil
			}
			return types.NewString(hex.EncodeToString(sum)), nil
		}},
		"crc32": {minArgs: 1, maxArgs: 1, tp: fixed(typeInt), fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			return types.NewInt(int64(crc32.ChecksumIEEE(types.ToText(v[0])))), nil
		}},
		"to_base64": {minArgs: 1, maxArgs: 1, tp: fixed(typeString), fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			s := base64.StdEncoding.EncodeToString(types.ToText(v[0]))
			// MySQL wraps lines at 76 characters.
			var sb strings.Builder
			for len(s) > 76 {
				sb.WriteString(s[:76])
				sb.WriteByte('\n')
				s = s[76:]
			}
			sb.WriteString(s)
			return types.NewString(sb.String()), nil
		}},
		"from_base64": {minArgs: 1, maxArgs: 1, tp: fixed(stringType(255, types.CollationBinary)), fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			s := strings.Map(func(r rune) rune {
				if unicode.IsSpace(r) {
					return -1
				}
				return r
			}, string(types.ToText(v[0])))
			b, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				return types.Null, nil
			}
			return types.NewCollatedBytes(b, types.CollationBinary), nil
		}},
		"convert": {minArgs: 2, maxArgs: 2, tp: func(a []Expr) types.FieldType {
			if c, ok := a[1].(*Constant); ok && strings.EqualFold(c.Value.Str(), "binary") {
				return stringType(255, types.CollationBinary)
			}
			return typeString
		}, fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			// CONVERT(expr USING charset).
			cs := strings.ToLower(string(types.ToText(v[1])))
			if cs == "binary" {
				return types.NewCollatedBytes(types.ToText(v[0]), types.CollationBinary), nil
			}
			if _, _, ok := types.LookupCharset(cs); !ok {
				return types.Null, errno.New(errno.ErUnknownCharacterSet, "Unknown character set: '%s'", cs)
			}
			b := types.ToText(v[0])
			if !utf8.Valid(b) {
				b = []byte(strings.ToValidUTF8(string(b), "?"))
			}
			return types.NewBytes(b), nil
		}},
		"uuid": {tp: fixed(stringType(36, types.CollationGeneralCI)), fn: func(*Ctx, []types.Datum) (types.Datum, error) {
			return types.NewString(newUUID()), nil
		}},
	}
}

// maxAllowedPacket bounds the strings REPEAT, SPACE and LPAD build.
const maxAllowedPacket = 64 << 20

// TRIM's direction argument, as the parser numbers it.
const (
	trimBoth     = 1
	trimLeading  = 2
	trimTrailing = 3
)

func trimRunes(s, rem []rune, leading, trailing bool) []rune {
	if len(rem) == 0 {
		return s
	}
	has := func(at int) bool {
		if at < 0 || at+len(rem) > len(s) {
			return false
		}
		for i, c := range rem {
			if s[at+i] != c {
				return false
			}
		}
		return true
	}
	start, end := 0, len(s)
	if leading {
		for end-start >= len(rem) && has(start) {
			start += len(rem)
		}
	}
	if trailing {
		for end-start >= len(rem) && has(end-len(rem)) {
			end -= len(rem)
		}
	}
	return s[start:end]
}

func sha1Fn(_ *Ctx, v []types.Datum) (types.Datum, error) {
	h := sha1.Sum(types.ToText(v[0]))
	return types.NewString(hex.EncodeToString(h[:])), nil
}

// groupThousands puts commas in the integer part of a decimal text.
func groupThousands(s string) string {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	intPart, frac, hasFrac := strings.Cut(s, ".")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if hasFrac {
		b.WriteByte('.')
		b.WriteString(frac)
	}
	return b.String()
}

func newUUID() string {
	var b [16]byte
	for i := range b {
		b[i] = byte(randSource.Uint32())
	}
	b[6] = b[6]&0x0f | 0x10
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
