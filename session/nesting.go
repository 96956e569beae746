package session

import (
	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/parserdriver"
)

// maxNesting bounds how deeply a statement may nest: parentheses,
// function calls and subqueries, chains of operators.
//
// Everything that reads a statement recurses once per level of its syntax
// tree — the parser's own pass over the tree it built, the expression
// builder, the planner, evaluation — and a goroutine whose stack passes
// Go's 1 GB limit kills the whole process: SELECT ABS(ABS(...)) a million
// deep did, and the parser alone does at ten million levels, which a
// 64 MiB packet holds. MySQL and MariaDB refuse such statements too (1436,
// or 1064 "memory exhausted"; MariaDB already at a thousand levels of
// "1 + 1 + ..."). Real statements stay far below: ten thousand keeps OR
// chains of thousands of terms working.
const maxNesting = 10000

// checkNesting refuses, before it is parsed, a statement that may nest
// deeper than maxNesting (ER_STACK_OVERRUN_NEED_MORE).
func checkNesting(sql string) error {
	if nestingBound(sql, maxNesting) > maxNesting {
		return errno.New(errno.ErStackOverrunNeedMore,
			"Thread stack overrun: the statement nests deeper than %d levels", maxNesting)
	}
	return nil
}

// nestingBound returns an upper bound of the depth of the syntax tree
// that sql parses to, counted lexically, or a number above limit as soon
// as the bound passes it. Outside string literals, quoted identifiers and
// comments, every operator character (+ - * / % ^ & | ~ ! = < >) and
// every keyword that joins or prefixes expressions (AND, OR, XOR, NOT, IS,
// LIKE, CASE, ...) may add a level to the expression it is part of, and
// every open parenthesis adds one. A comma ends a list element, whose
// depth does not add to the next one's, so it resets the count of its
// parenthesis level: long select lists, IN lists and multi-row VALUES do
// not add up, and neither do the statements of a multi-statement.
func nestingBound(sql string, limit int) int {
	// counts[i] is the number of operators seen in the current list
	// element at parenthesis depth i; sum is their total.
	counts := []int{0}
	sum, bound := 0, 0
	for i := 0; i < len(sql); i++ {
		c := sql[i]
		switch {
		case c == '\'' || c == '"' || c == '`':
			i = skipQuoted(sql, i)
			continue
		case c == '#' || c == '-' && i+2 < len(sql) && sql[i+1] == '-' && (sql[i+2] <= ' ') ||
			c == '-' && i+2 == len(sql) && sql[i+1] == '-':
			for i < len(sql) && sql[i] != '\n' {
				i++
			}
			continue
		case c == '/' && i+1 < len(sql) && sql[i+1] == '*' && (i+2 >= len(sql) || sql[i+2] != '!' && sql[i+2] != '+'):
			// A comment; /*! ... */ and /*+ ... */ hold SQL and hints, which
			// are scanned as such.
			end := indexFrom(sql, i+2, "*/")
			if end < 0 {
				return bound
			}
			i = end + 1
			continue
		case c == '/' && i+1 < len(sql) && sql[i+1] == '*': // the start of /*! or /*+
			i += 2
			continue
		case c == '*' && i+1 < len(sql) && sql[i+1] == '/': // and its end
			i++
			continue
		case c == '(':
			counts = append(counts, 0)
		case c == ')':
			if len(counts) > 1 {
				sum -= counts[len(counts)-1]
				counts = counts[:len(counts)-1]
			}
		case c == ',':
			sum -= counts[len(counts)-1]
			counts[len(counts)-1] = 0
		case c == ';': // the next statement of a multi-statement
			counts, sum = counts[:1], 0
			counts[0] = 0
		case isOperatorByte(c):
			counts[len(counts)-1]++
			sum++
		case isWordByte(c):
			j := i
			for j < len(sql) && isWordByte(sql[j]) {
				j++
			}
			if (i == 0 || !isWordByte(sql[i-1])) && isNestingKeyword(sql[i:j]) {
				counts[len(counts)-1]++
				sum++
			}
			i = j - 1
		default:
			continue
		}
		if d := len(counts) - 1 + sum; d > bound {
			bound = d
			if bound > limit {
				return bound
			}
		}
	}
	return bound
}

// skipQuoted returns the index of the quote that closes the literal or
// identifier opened at sql[i] (the last index if it is never closed).
// Backslash escapes apply inside strings, doubled quotes anywhere.
func skipQuoted(sql string, i int) int {
	if e, ok := parserdriver.QuotedEnd(sql, i); ok {
		return e - 1
	}
	return len(sql) - 1
}

func indexFrom(s string, from int, sub string) int {
	for i := from; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

func isOperatorByte(c byte) bool {
	switch c {
	case '+', '-', '*', '/', '%', '^', '&', '|', '~', '!', '=', '<', '>':
		return true
	}
	return false
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '$' || c >= 0x80
}

// nestingKeywords join or prefix expressions without parentheses.
var nestingKeywords = []string{
	"AND", "OR", "XOR", "NOT", "IS", "LIKE", "ILIKE", "REGEXP", "RLIKE", "BETWEEN", "IN", "CASE", "WHEN",
	"THEN", "ELSE", "BINARY", "COLLATE", "DIV", "MOD", "INTERVAL", "ESCAPE", "SOUNDS", "MEMBER", "EXISTS",
	"ANY", "SOME", "ALL", "UNION", "EXCEPT", "INTERSECT",
}

func isNestingKeyword(w string) bool {
	if len(w) < 2 || len(w) > 9 {
		return false
	}
	for _, k := range nestingKeywords {
		if len(k) == len(w) && equalFoldASCII(k, w) {
			return true
		}
	}
	return false
}

// equalFoldASCII compares an upper-case keyword with a word in any case.
func equalFoldASCII(upper, w string) bool {
	for i := 0; i < len(w); i++ {
		c := w[i]
		if c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		if c != upper[i] {
			return false
		}
	}
	return true
}
