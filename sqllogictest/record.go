package sqllogictest

// Kind is what a record asks of the server.
type Kind int

const (
	// Statement runs SQL that must succeed, or fail if ExpectError.
	Statement Kind = iota
	// Query runs SQL whose results must equal the expected ones.
	Query
	// Halt ends the script.
	Halt
	// File writes a file for the statements that follow to read (LOAD
	// DATA): Name, in the runner's directory, holding Content.
	File
)

// SortMode says how a query's values are ordered before comparison.
type SortMode string

const (
	// NoSort compares values in the order the server returned them.
	NoSort SortMode = "nosort"
	// RowSort sorts rows, comparing them value by value as strings.
	RowSort SortMode = "rowsort"
	// ValueSort sorts all values as strings, ignoring rows.
	ValueSort SortMode = "valuesort"
)

// Record is one record of a script.
type Record struct {
	Kind Kind
	// Line is the line number of the statement, query or halt keyword.
	Line int
	// Conditions guard the record; see Applies.
	Conditions []Condition
	// SQL is the statement or query text, its lines joined by newlines.
	SQL string
	// Conn names the connection the record runs on, as the last
	// "connection" line before it said; "" is the script's first
	// connection (DefaultConn).
	Conn string

	// ExpectError: a Statement that must fail. ErrorCode, if not zero, is
	// the MySQL error number it must fail with ("statement error 1062").
	ExpectError bool
	ErrorCode   int

	// Types has one letter per result column: I integer, R real, T text.
	Types string
	Sort  SortMode
	// Label names queries that must return the same results; the corpus
	// spells every query's results out, so it is not checked.
	Label string
	// Expected holds the expected values, unless the results are hashed:
	// then HashCount values have the MD5 Hash (lower-case hex).
	Expected  []string
	HashCount int
	Hash      string

	// Name and Content are a File's.
	Name    string
	Content string
}

// DefaultConn is the name of a script's first connection, the one its
// records run on until a "connection" line names another.
const DefaultConn = "default"

// Condition is a skipif or onlyif line.
type Condition struct {
	Only   bool // onlyif; false for skipif
	Engine string
}

// Applies reports whether the record runs on engine: no skipif names it,
// and every onlyif does.
func (r *Record) Applies(engine string) bool {
	for _, c := range r.Conditions {
		if c.Only != (c.Engine == engine) {
			return false
		}
	}
	return true
}
