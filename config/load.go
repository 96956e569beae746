package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"strings"

	"github.com/BurntSushi/toml"
)

// Load reads the TOML file at path over Default and validates the result.
// It refuses a file with a syntax error, a key it does not know, a value of
// the wrong type or an invalid value (a key of TiDB's that Basalt ignores,
// or one without effect with the configured store, is not an error but one
// of Config.Warnings); the error names the file, the line
// and the key, one line per problem, e.g.
//
//	basalt.toml:12: unknown key "status-port" (did you mean "status.status-port"?)
//	basalt.toml:20: storage.block-cache-size: invalid size "1XB": unknown unit "XB" (...)
func Load(path string) (*Config, error) {
	cfg, src, err := readFile(path)
	if err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, src.locate(err, nil)
	}
	cfg.Warnings = src.warnings(cfg)
	return cfg, nil
}

// source is a decoded file, kept to place errors on its lines.
type source struct {
	name string
	data []byte
	md   toml.MetaData
	tidb []string // the TiDB keys it sets, which Basalt ignores (tidbkeys.go)
}

// warnings are the lines to log about the file, given the configuration
// it ended in (flags included); nil for no file.
func (src *source) warnings(cfg *Config) []string {
	if src == nil {
		return nil
	}
	return warnings(src.tidb, src.md, cfg)
}

// readFile reads and decodes the file at path over Default, without
// validating the values.
func readFile(path string) (*Config, *source, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("config file: %w", err)
	}
	return decode(path, data)
}

// decode is readFile of data read from the file name.
func decode(name string, data []byte) (*Config, *source, error) {
	cfg := Default()
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(cfg)
	if err != nil {
		return nil, nil, DecodeError(name, err)
	}
	left, err := applyRenamed(name, data, md, md.Undecoded(), cfg)
	if err != nil {
		return nil, nil, err
	}
	tidb, unknown, err := checkTiDBKeys(name, data, md, left)
	if err != nil {
		return nil, nil, err
	}
	if len(unknown) > 0 {
		return nil, nil, unknownKeys(name, data, unknown)
	}
	return cfg, &source{name: name, data: data, md: md, tidb: tidb}, nil
}

// typeErrorRE matches the decoder's errors that are not ParseErrors, such
// as a string where an integer belongs.
var typeErrorRE = regexp.MustCompile(`^toml: line (\d+) \(last key "(.*?)"\): (.*)$`)

// DecodeError rewrites an error of BurntSushi/toml's decoder, of the file
// name, as "file:line: key: message". The storage node's configuration
// (storenode.LoadConfig) writes its errors so too.
func DecodeError(name string, err error) error {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		if pe.LastKey != "" {
			return fmt.Errorf("%s:%d: %s: %s", name, pe.Position.Line, pe.LastKey, pe.Message)
		}
		return fmt.Errorf("%s:%d: %s", name, pe.Position.Line, pe.Message)
	}
	if m := typeErrorRE.FindStringSubmatch(err.Error()); m != nil {
		return fmt.Errorf("%s:%s: %s: %s", name, m[1], m[2], m[3])
	}
	return fmt.Errorf("%s: %s", name, strings.TrimPrefix(err.Error(), "toml: "))
}

// unknownKeys reports the keys of the file that no field took. Of an
// unknown table only the table is named, not each of its keys.
func unknownKeys(name string, data []byte, keys []toml.Key) error {
	var errs []error
	reported := map[string]bool{}
	for _, k := range keys {
		if len(k) > 1 && reported[toml.Key(k[:len(k)-1]).String()] {
			reported[k.String()] = true
			continue
		}
		reported[k.String()] = true
		msg := fmt.Sprintf("unknown key %q", k.String())
		if s := suggest(k.String()); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
		errs = append(errs, withLine(name, keyLine(data, k), msg))
	}
	return errors.Join(errs...)
}

// locate rewrites the errors of Validate: a key given by a flag (in
// flagKeys) is said to come from the command line; one the file sets gets
// the file's name and line. src may be nil (no file).
func (src *source) locate(err error, flagKeys map[string]bool) error {
	var list []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		list = j.Unwrap()
	} else {
		list = []error{err}
	}
	out := make([]error, len(list))
	for i, e := range list {
		out[i] = e
		var ve *ValueError
		if !errors.As(e, &ve) {
			continue
		}
		switch {
		case flagKeys[ve.Key]:
			out[i] = fmt.Errorf("%w (set by a command-line flag)", e)
		case src != nil:
			// The file may set the key by its older name.
			if as := definedAs(src.md, ve.Key); as != "" {
				out[i] = withLine(src.name, keyLine(src.data, strings.Split(as, ".")), as+": "+ve.Reason)
			}
		}
	}
	return errors.Join(out...)
}

func withLine(name string, line int, msg string) error {
	if line == 0 {
		return fmt.Errorf("%s: %s", name, msg)
	}
	return fmt.Errorf("%s:%d: %s", name, line, msg)
}

// keyLine returns the line (from 1) where the file defines key or the
// first key under it, or 0 if it cannot tell (a key inside an inline
// table, for one). The decoder keeps key positions to itself, so this reads
// table headers and "key = value" lines; it does not follow multi-line
// strings, which a config file has no use for.
func keyLine(data []byte, key toml.Key) int {
	var table []string
	for i, line := range strings.Split(string(data), "\n") {
		s := strings.TrimSpace(line)
		switch {
		case s == "" || s[0] == '#':
			continue
		case strings.HasPrefix(s, "["):
			h := strings.Trim(stripComment(s), "[] \t")
			table = splitKey(h)
			if hasPrefix(table, key) {
				return i + 1
			}
		default:
			eq := strings.IndexByte(s, '=')
			if eq < 0 {
				continue
			}
			full := append(append([]string(nil), table...), splitKey(s[:eq])...)
			if hasPrefix(full, key) {
				return i + 1
			}
		}
	}
	return 0
}

// stripComment removes a trailing comment from a table header line.
func stripComment(s string) string {
	if i := strings.IndexByte(s, '#'); i >= 0 {
		return s[:i]
	}
	return s
}

// splitKey splits a dotted key, removing spaces and quotes around parts.
func splitKey(s string) []string {
	parts := strings.Split(s, ".")
	for i, p := range parts {
		parts[i] = strings.Trim(strings.TrimSpace(p), `"'`)
	}
	return parts
}

func hasPrefix(full []string, key toml.Key) bool {
	if len(full) < len(key) {
		return false
	}
	for i := range key {
		if full[i] != key[i] {
			return false
		}
	}
	return true
}

// knownKeys lists every key of Config, sections included, in file order.
var knownKeys = func() []string {
	var keys []string
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := f.Tag.Get("toml")
			if tag == "" || tag == "-" {
				continue
			}
			keys = append(keys, prefix+tag)
			if f.Type.Kind() == reflect.Struct {
				walk(f.Type, prefix+tag+".")
			}
		}
	}
	walk(reflect.TypeOf(Config{}), "")
	return keys
}()

// suggest returns the known key an unknown one was probably meant to be:
// one that ends in the same name ("status-port" for "status.status-port"),
// or else one a typo or two away; "" if none.
func suggest(unknown string) string {
	last := unknown[strings.LastIndexByte(unknown, '.')+1:]
	for _, k := range knownKeys {
		if k[strings.LastIndexByte(k, '.')+1:] == last {
			return k
		}
	}
	best, bestDist := "", 3
	for _, k := range knownKeys {
		if d := editDistance(unknown, k); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
