package sqllogictest

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// hashedResult is the line that stands for a query's values when there are
// more than the hash threshold of them.
var hashedResult = regexp.MustCompile(`^(\d+) values hashing to ([0-9a-f]{32})$`)

// ParseFile reads the script at path.
func ParseFile(path string) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	records, err := Parse(f)
	if err != nil {
		return nil, fmt.Errorf("%s:%w", path, err)
	}
	return records, nil
}

// Parse reads a script. It rejects what it does not understand, with the
// line number, rather than guess.
func Parse(r io.Reader) ([]Record, error) {
	p := &parser{sc: bufio.NewScanner(r)}
	p.sc.Buffer(nil, 16<<20) // select5's joins of 64 tables make long lines
	var records []Record
	for {
		rec, err := p.record()
		if err != nil {
			return nil, fmt.Errorf("%d: %w", p.line, err)
		}
		if rec == nil {
			return records, p.sc.Err()
		}
		records = append(records, *rec)
	}
}

// parser reads a script line by line.
type parser struct {
	sc   *bufio.Scanner
	line int // number of the line last read
	// conn is the connection the last "connection" line named.
	conn string
}

// next returns the next line, without its line ending; ok is false at the
// end of the input.
func (p *parser) next() (line string, ok bool) {
	if !p.sc.Scan() {
		return "", false
	}
	p.line++
	return strings.TrimSuffix(p.sc.Text(), "\r"), true
}

// record reads the next statement, query or halt record, with the
// conditions before it; it returns nil at the end of the script.
func (p *parser) record() (*Record, error) {
	var conds []Condition
	for {
		line, ok := p.next()
		if !ok {
			if len(conds) > 0 {
				return nil, fmt.Errorf("%s at the end of the script guards nothing", conds[len(conds)-1].keyword())
			}
			return nil, nil
		}
		fields := controlFields(line)
		if len(fields) == 0 {
			continue // a blank line or a comment
		}
		switch fields[0] {
		case "skipif", "onlyif":
			if len(fields) < 2 {
				return nil, fmt.Errorf("%s without an engine", fields[0])
			}
			conds = append(conds, Condition{Only: fields[0] == "onlyif", Engine: fields[1]})
		case "hash-threshold":
			// Only matters when writing expected results: the file says
			// whether each query's results are listed or hashed.
			if len(fields) < 2 {
				return nil, fmt.Errorf("hash-threshold without a number")
			}
			if _, err := strconv.Atoi(fields[1]); err != nil {
				return nil, fmt.Errorf("hash-threshold: %w", err)
			}
		case "connection":
			if len(fields) != 2 || len(conds) > 0 {
				return nil, fmt.Errorf("want connection <name>, unguarded, got %q", line)
			}
			p.conn = fields[1]
			if p.conn == DefaultConn {
				p.conn = ""
			}
		case "halt":
			return &Record{Kind: Halt, Line: p.line, Conditions: conds}, nil
		case "file":
			if len(fields) < 2 || len(fields) > 3 || (len(fields) == 3 && fields[2] != "noeol") || strings.ContainsAny(fields[1], `/\`) {
				return nil, fmt.Errorf("want file <name> [noeol], got %q", line)
			}
			rec := &Record{Kind: File, Line: p.line, Conditions: conds, Name: fields[1]}
			var lines []string
			for {
				l, ok := p.next()
				if !ok {
					return nil, fmt.Errorf("file %s has no EOF line", fields[1])
				}
				if l == "EOF" {
					break
				}
				lines = append(lines, l)
			}
			if len(lines) > 0 {
				rec.Content = strings.Join(lines, "\n")
				if len(fields) == 2 {
					rec.Content += "\n"
				}
			}
			return rec, nil
		case "statement":
			rec := &Record{Kind: Statement, Line: p.line, Conditions: conds, Conn: p.conn}
			switch {
			case len(fields) >= 2 && fields[1] == "ok":
			case len(fields) >= 2 && fields[1] == "error":
				rec.ExpectError = true
				if len(fields) >= 3 {
					// Basalt's own scripts name the MySQL error number.
					code, err := strconv.Atoi(fields[2])
					if err != nil {
						return nil, fmt.Errorf("want statement error [code], got %q", line)
					}
					rec.ErrorCode = code
				}
			default:
				return nil, fmt.Errorf("want statement ok or statement error, got %q", line)
			}
			rec.SQL, _ = p.sql()
			return rec, nil
		case "query":
			rec := &Record{Kind: Query, Line: p.line, Conditions: conds, Sort: NoSort, Conn: p.conn}
			if len(fields) < 2 || strings.Trim(fields[1], "ITR") != "" {
				return nil, fmt.Errorf("want query <types of I, T, R> [sort] [label], got %q", line)
			}
			rec.Types = fields[1]
			if len(fields) >= 3 {
				rec.Sort = SortMode(fields[2])
				if rec.Sort != NoSort && rec.Sort != RowSort && rec.Sort != ValueSort {
					return nil, fmt.Errorf("unknown sort mode %q", fields[2])
				}
			}
			if len(fields) >= 4 {
				rec.Label = fields[3]
			}
			var separated bool
			if rec.SQL, separated = p.sql(); separated {
				p.results(rec)
			}
			return rec, nil
		default:
			return nil, fmt.Errorf("unknown record %q", line)
		}
	}
}

// sql reads SQL lines up to a blank line, the end of the script, or a
// "----" line; separated says whether it ended at "----".
func (p *parser) sql() (sql string, separated bool) {
	var lines []string
	for {
		line, ok := p.next()
		if !ok || strings.TrimSpace(line) == "" {
			break
		}
		if line == "----" {
			separated = true
			break
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n"), separated
}

// results reads a query's expected values up to a blank line or the end of
// the script.
func (p *parser) results(rec *Record) {
	for {
		line, ok := p.next()
		if !ok || strings.TrimSpace(line) == "" {
			break
		}
		rec.Expected = append(rec.Expected, line)
	}
	if len(rec.Expected) == 1 {
		if m := hashedResult.FindStringSubmatch(rec.Expected[0]); m != nil {
			rec.HashCount, _ = strconv.Atoi(m[1])
			rec.Hash = m[2]
			rec.Expected = nil
		}
	}
}

// controlFields splits a line outside SQL and results into fields, without
// a trailing "# comment"; a comment line has none.
func controlFields(line string) []string {
	if i := strings.IndexByte(line, '#'); i >= 0 {
		line = line[:i]
	}
	return strings.Fields(line)
}

func (c Condition) keyword() string {
	if c.Only {
		return "onlyif " + c.Engine
	}
	return "skipif " + c.Engine
}
