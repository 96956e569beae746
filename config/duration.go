package config

import (
	"errors"
	"fmt"
	"time"
)

// Duration is a length of time. In a file it is a string in Go's notation,
// as TiDB's tidb_gc_life_time: "10m", "1h30m", "90s". A bare number is
// refused, since its unit would be a guess.
type Duration time.Duration

// String writes the duration as time.Duration does ("10m0s").
func (d Duration) String() string { return time.Duration(d).String() }

// UnmarshalTOML implements toml.Unmarshaler.
func (d *Duration) UnmarshalTOML(v any) error {
	s, ok := v.(string)
	if !ok {
		return errors.New("invalid duration: want a string with a unit, such as \"10m\" or \"1h30m\"")
	}
	t, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("invalid duration %q: want a number and a unit, such as \"10m\" or \"1h30m\"", s)
	}
	*d = Duration(t)
	return nil
}

// MarshalText writes the duration as String does.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }
