package config

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ByteSize is a size in bytes. In a file it is either an integer (bytes) or
// a string of a number and a unit, as TiDB and TiKV write sizes: "256MiB",
// "1GB", "1.5 GiB", "512K". Units are powers of 1024 whether or not they
// carry the "i" (TiKV's convention): K, KB, KiB = 1024; M, MB, MiB = 1024²;
// likewise G, T and P; B or no unit is bytes. Units ignore case.
type ByteSize int64

// Units of ByteSize.
const (
	B   ByteSize = 1
	KiB ByteSize = 1 << (10 * iota)
	MiB
	GiB
	TiB
	PiB
)

var sizeUnits = map[string]ByteSize{
	"": B, "b": B,
	"k": KiB, "kb": KiB, "kib": KiB,
	"m": MiB, "mb": MiB, "mib": MiB,
	"g": GiB, "gb": GiB, "gib": GiB,
	"t": TiB, "tb": TiB, "tib": TiB,
	"p": PiB, "pb": PiB, "pib": PiB,
}

// ParseByteSize parses a size as the file writes it (see ByteSize).
func ParseByteSize(s string) (ByteSize, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i < 0 {
		i = len(t)
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	if num == "" {
		return 0, fmt.Errorf("invalid size %q: want a number and a unit, such as \"256MiB\" or \"1GB\"", s)
	}
	mult, ok := sizeUnits[unit]
	if !ok {
		return 0, fmt.Errorf("invalid size %q: unknown unit %q (want B, KiB, MiB, GiB, TiB, PiB, or KB, MB, GB, TB, PB)", s, t[i:])
	}
	if !strings.Contains(num, ".") {
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil || n > math.MaxInt64/int64(mult) {
			return 0, fmt.Errorf("invalid size %q: too large", s)
		}
		return ByteSize(n) * mult, nil
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("invalid size %q: bad number %q", s, num)
	}
	v := math.Round(f * float64(mult))
	if v >= math.MaxInt64 {
		return 0, fmt.Errorf("invalid size %q: too large", s)
	}
	return ByteSize(v), nil
}

// String writes the size in the largest binary unit that divides it:
// "256MiB", "1536KiB", "1000B".
func (b ByteSize) String() string {
	if b == 0 {
		return "0B"
	}
	units := [...]struct {
		n    ByteSize
		name string
	}{{PiB, "PiB"}, {TiB, "TiB"}, {GiB, "GiB"}, {MiB, "MiB"}, {KiB, "KiB"}}
	for _, u := range units {
		if b%u.n == 0 {
			return strconv.FormatInt(int64(b/u.n), 10) + u.name
		}
	}
	return strconv.FormatInt(int64(b), 10) + "B"
}

// UnmarshalTOML implements toml.Unmarshaler: an integer is bytes, a string
// is parsed by ParseByteSize.
func (b *ByteSize) UnmarshalTOML(v any) error {
	switch v := v.(type) {
	case int64:
		if v < 0 {
			return fmt.Errorf("invalid size %d: negative", v)
		}
		*b = ByteSize(v)
		return nil
	case string:
		n, err := ParseByteSize(v)
		if err != nil {
			return err
		}
		*b = n
		return nil
	}
	return errors.New("invalid size: want a string such as \"256MiB\" or an integer number of bytes")
}

// MarshalText writes the size as String does, so that an encoded Config
// reads back.
func (b ByteSize) MarshalText() ([]byte, error) { return []byte(b.String()), nil }
