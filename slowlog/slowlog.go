// Package slowlog writes and reads the slow query log in TiDB's format, so
// that TiDB's tools and habits (pt-query-digest's tidb mode, grep for
// "# Query_time:", information_schema.SLOW_QUERY) work on Basalt's.
//
// One entry is a block of "# Field: value" lines, then "use db;" when the
// statement ran in a database, then the statement ending with ';':
//
//	# Time: 2026-11-26T23:59:59.123456789Z
//	# Txn_start_ts: 452468163380723713
//	# User@Host: root[root] @ 127.0.0.1 [127.0.0.1]
//	# Conn_ID: 3
//	# Query_time: 0.051234567
//	# Parse_time: 0.000012
//	# Compile_time: 0.000034
//	# Process_time: 0.05 Total_keys: 10 Process_keys: 10
//	# DB: test
//	# Is_internal: false
//	# Digest: 7a0e...
//	# Mem_max: 1024
//	# Prepared: false
//	# Plan_from_cache: false
//	# Result_rows: 1
//	# Succ: true
//	# Plan_digest: 4e1f...
//	use test;
//	select sleep(0.05);
//
// A statement's text may span lines; the entry ends at the first line,
// after the header, that ends with ';'. Basalt writes its statements with
// their ';' (adding one when the text has none), so a text that itself
// holds a line ending in ';' is read back cut short: TiDB has the same
// limit.
package slowlog

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"gopkg.in/natefinch/lumberjack.v2"
)

// Entry is one statement of the log.
type Entry struct {
	Time        time.Time // when the statement ended
	TxnStartTS  uint64
	User, Host  string
	ConnID      uint64
	QueryTime   time.Duration // from the start of parsing to the last row sent
	ParseTime   time.Duration
	CompileTime time.Duration // planning
	// ProcessTime is the time spent running the plan (Query_time less
	// parsing and planning); TotalKeys and ProcessKeys count the keys the
	// statement's scans stepped over and returned, when known (-1: not).
	ProcessTime   time.Duration
	TotalKeys     int64
	ProcessKeys   int64
	DB            string
	IsInternal    bool
	Digest        string
	MemMax        int64
	Prepared      bool
	PlanFromCache bool
	ResultRows    int64
	Succ          bool
	PlanDigest    string
	Query         string // with its ';'
}

// The field names, TiDB's.
const (
	fTime          = "Time"
	fTxnStartTS    = "Txn_start_ts"
	fUserHost      = "User@Host"
	fConnID        = "Conn_ID"
	fQueryTime     = "Query_time"
	fParseTime     = "Parse_time"
	fCompileTime   = "Compile_time"
	fProcessTime   = "Process_time"
	fTotalKeys     = "Total_keys"
	fProcessKeys   = "Process_keys"
	fDB            = "DB"
	fIsInternal    = "Is_internal"
	fDigest        = "Digest"
	fMemMax        = "Mem_max"
	fPrepared      = "Prepared"
	fPlanFromCache = "Plan_from_cache"
	fResultRows    = "Result_rows"
	fSucc          = "Succ"
	fPlanDigest    = "Plan_digest"
)

// seconds writes d as TiDB does: seconds with up to nine decimals.
func seconds(b []byte, d time.Duration) []byte {
	return strconv.AppendFloat(b, d.Seconds(), 'f', -1, 64)
}

// Append appends e in the log's format to b.
func (e *Entry) Append(b []byte) []byte {
	field := func(name string) { b = append(b, "# "...); b = append(b, name...); b = append(b, ": "...) }
	field(fTime)
	b = e.Time.AppendFormat(b, time.RFC3339Nano)
	b = append(b, '\n')
	field(fTxnStartTS)
	b = strconv.AppendUint(b, e.TxnStartTS, 10)
	b = append(b, '\n')
	field(fUserHost)
	b = append(b, e.User...)
	b = append(b, '[')
	b = append(b, e.User...)
	b = append(b, "] @ "...)
	b = append(b, e.Host...)
	b = append(b, " ["...)
	b = append(b, e.Host...)
	b = append(b, "]\n"...)
	field(fConnID)
	b = strconv.AppendUint(b, e.ConnID, 10)
	b = append(b, '\n')
	field(fQueryTime)
	b = append(seconds(b, e.QueryTime), '\n')
	field(fParseTime)
	b = append(seconds(b, e.ParseTime), '\n')
	field(fCompileTime)
	b = append(seconds(b, e.CompileTime), '\n')
	field(fProcessTime)
	b = seconds(b, e.ProcessTime)
	if e.TotalKeys >= 0 {
		b = append(b, " "+fTotalKeys+": "...)
		b = strconv.AppendInt(b, e.TotalKeys, 10)
	}
	if e.ProcessKeys >= 0 {
		b = append(b, " "+fProcessKeys+": "...)
		b = strconv.AppendInt(b, e.ProcessKeys, 10)
	}
	b = append(b, '\n')
	if e.DB != "" {
		field(fDB)
		b = append(b, e.DB...)
		b = append(b, '\n')
	}
	field(fIsInternal)
	b = append(strconv.AppendBool(b, e.IsInternal), '\n')
	field(fDigest)
	b = append(append(b, e.Digest...), '\n')
	field(fMemMax)
	b = append(strconv.AppendInt(b, e.MemMax, 10), '\n')
	field(fPrepared)
	b = append(strconv.AppendBool(b, e.Prepared), '\n')
	field(fPlanFromCache)
	b = append(strconv.AppendBool(b, e.PlanFromCache), '\n')
	field(fResultRows)
	b = append(strconv.AppendInt(b, e.ResultRows, 10), '\n')
	field(fSucc)
	b = append(strconv.AppendBool(b, e.Succ), '\n')
	if e.PlanDigest != "" {
		field(fPlanDigest)
		b = append(append(b, e.PlanDigest...), '\n')
	}
	if e.DB != "" {
		b = append(b, "use "...)
		b = append(b, e.DB...)
		b = append(b, ";\n"...)
	}
	q := strings.TrimRight(e.Query, " \t\r\n")
	b = append(b, q...)
	if !strings.HasSuffix(q, ";") {
		b = append(b, ';')
	}
	return append(b, '\n')
}

// Parse reads the entries of a log. Lines it does not know (fields of
// TiDB's it does not keep, a header cut short by a crash) are skipped; an
// entry without its "# Time:" line is dropped.
func Parse(r io.Reader) ([]Entry, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	var out []Entry
	var e Entry
	inEntry := false // a "# Time:" line began one
	var query []string
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "# ") && len(query) == 0 {
			if strings.HasPrefix(line, "# "+fTime+": ") {
				e, inEntry = Entry{TotalKeys: -1, ProcessKeys: -1}, true
			}
			if inEntry {
				e.parseFields(line[2:])
			}
			continue
		}
		if !inEntry {
			continue
		}
		if len(query) == 0 && e.DB != "" && line == "use "+e.DB+";" {
			continue
		}
		query = append(query, line)
		if strings.HasSuffix(line, ";") {
			e.Query = strings.Join(query, "\n")
			out = append(out, e)
			query, inEntry = query[:0], false
		}
	}
	return out, sc.Err()
}

// parseFields reads one header line: a field, or several on one line
// ("Process_time: 0.05 Total_keys: 10"). Only User@Host's value holds
// spaces, and it is alone on its line.
func (e *Entry) parseFields(line string) {
	if v, ok := strings.CutPrefix(line, fUserHost+": "); ok {
		// root[root] @ 127.0.0.1 [127.0.0.1]
		user, rest, _ := strings.Cut(v, "[")
		e.User = strings.TrimSpace(user)
		if _, host, ok := strings.Cut(rest, "@ "); ok {
			h, _, _ := strings.Cut(host, " [")
			e.Host = strings.TrimSpace(h)
		}
		return
	}
	f := strings.Fields(line)
	for i := 0; i+1 < len(f); i += 2 {
		e.set(strings.TrimSuffix(f[i], ":"), f[i+1])
	}
	if len(f) == 1 { // a field with an empty value
		e.set(strings.TrimSuffix(f[0], ":"), "")
	}
}

func (e *Entry) set(name, v string) {
	dur := func() time.Duration {
		f, _ := strconv.ParseFloat(v, 64)
		return time.Duration(f * float64(time.Second))
	}
	i64 := func() int64 { n, _ := strconv.ParseInt(v, 10, 64); return n }
	switch name {
	case fTime:
		e.Time, _ = time.Parse(time.RFC3339Nano, v)
	case fTxnStartTS:
		e.TxnStartTS, _ = strconv.ParseUint(v, 10, 64)
	case fConnID:
		e.ConnID, _ = strconv.ParseUint(v, 10, 64)
	case fQueryTime:
		e.QueryTime = dur()
	case fParseTime:
		e.ParseTime = dur()
	case fCompileTime:
		e.CompileTime = dur()
	case fProcessTime:
		e.ProcessTime = dur()
	case fTotalKeys:
		e.TotalKeys = i64()
	case fProcessKeys:
		e.ProcessKeys = i64()
	case fDB:
		e.DB = v
	case fIsInternal:
		e.IsInternal = v == "true"
	case fDigest:
		e.Digest = v
	case fMemMax:
		e.MemMax = i64()
	case fPrepared:
		e.Prepared = v == "true"
	case fPlanFromCache:
		e.PlanFromCache = v == "true"
	case fResultRows:
		e.ResultRows = i64()
	case fSucc:
		e.Succ = v == "true"
	case fPlanDigest:
		e.PlanDigest = v
	}
}

// Logger appends entries to a file, rotated by size: when the file would
// pass maxSize, it is renamed with the time of the rotation
// (name-2006-01-02T15-04-05.000.ext, lumberjack's scheme) and a new one
// begun. It is safe for concurrent use.
type Logger struct {
	path string
	mu   sync.Mutex
	w    *lumberjack.Logger
	buf  []byte
}

// Open returns a logger appending to path (created on the first entry),
// rotated past maxSizeMB megabytes (<= 0: 300), keeping maxBackups old
// files (0: all).
func Open(path string, maxSizeMB, maxBackups int) *Logger {
	if maxSizeMB <= 0 {
		maxSizeMB = 300
	}
	return &Logger{path: path, w: &lumberjack.Logger{Filename: path, MaxSize: maxSizeMB, MaxBackups: maxBackups}}
}

// Path is the file the logger appends to.
func (l *Logger) Path() string { return l.path }

// Write appends e, in one write.
func (l *Logger) Write(e *Entry) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = e.Append(l.buf[:0])
	_, err := l.w.Write(l.buf)
	if cap(l.buf) > 64<<10 {
		l.buf = nil // do not keep one huge statement's buffer
	}
	return err
}

// Close closes the file.
func (l *Logger) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Close()
}

// Files lists the log's files, oldest first: the rotated ones, then the
// current one (which may not exist yet).
func (l *Logger) Files() []string {
	ext := filepath.Ext(l.path)
	prefix := strings.TrimSuffix(l.path, ext) + "-"
	old, _ := filepath.Glob(globEscape(prefix) + "*" + globEscape(ext))
	// The names carry the time of rotation in a sortable form.
	slices.Sort(old)
	return append(old, l.path)
}

func globEscape(s string) string {
	r := strings.NewReplacer(`*`, `\*`, `?`, `\?`, `[`, `\[`, `\`, `\\`)
	return r.Replace(s)
}

// ReadAll parses every file of the log, oldest first. A file that does not
// exist is skipped.
func (l *Logger) ReadAll() ([]Entry, error) {
	var out []Entry
	for _, name := range l.Files() {
		f, err := os.Open(name)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		es, err := Parse(f)
		f.Close()
		if err != nil {
			return nil, err
		}
		out = append(out, es...)
	}
	return out, nil
}
