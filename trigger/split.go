package trigger

import "strings"

// Piece is one statement of a multi-statement query.
type Piece struct {
	SQL string
	// Trigger marks CREATE TRIGGER, DROP TRIGGER and SHOW CREATE TRIGGER,
	// which Parse reads; other statements are for the TiDB parser.
	Trigger bool
}

// Mentions is a cheap test for whether a query may hold a trigger
// statement; only such queries need Split. It reports whether "trigger"
// or "checksum" occurs in sql in any mix of case (ASCII: a byte window
// of a word's length can hold no other fold of its letters, which are
// longer in UTF-8).
func Mentions(sql string) bool {
	// Each word is looked for at the places of two of its letters, which
	// strings.Index finds in a bulk INSERT's megabyte of text much faster
	// than a loop over its bytes.
	return mentions(sql, "trigger", 3) || mentions(sql, "checksum", 3)
}

// mentions reports whether word occurs in sql in any mix of case, by
// looking for the four cases of its letters at k and k+1 and then at
// the whole word around them.
func mentions(sql, word string, k int) bool {
	lo := word[k : k+2]
	up := strings.ToUpper(lo)
	for _, pair := range [4]string{lo, up, lo[:1] + up[1:], up[:1] + lo[1:]} {
		for from := 0; ; {
			i := strings.Index(sql[from:], pair)
			if i < 0 {
				break
			}
			p := from + i - k
			if p >= 0 && p+len(word) <= len(sql) && strings.EqualFold(sql[p:p+len(word)], word) {
				return true
			}
			from += i + 1
		}
	}
	return false
}

// Split cuts a query into its statements at each ';' outside quotes and
// comments and, in a CREATE TRIGGER, outside the BEGIN ... END of its body
// (as the server must, since a client sends such a statement whole after
// DELIMITER //). Empty statements are left out. hasTrigger reports whether
// any piece is a trigger statement.
func Split(sql string) (pieces []Piece, hasTrigger bool) {
	toks := lex(sql)
	start, from := 0, 0 // the statement's first token and text offset
	for start < len(toks) {
		isTrig := isTriggerStmt(toks[start:])
		end := start
		if isTrig && isCreate(toks[start:]) {
			end = start + bodyEnd(toks[start:])
		} else {
			for end < len(toks) && !toks[end].isSym(';') {
				end++
			}
		}
		to := len(sql)
		if end < len(toks) {
			to = toks[end].pos
		}
		if end > start {
			pieces = append(pieces, Piece{SQL: strings.TrimSpace(sql[from:to]), Trigger: isTrig})
			hasTrigger = hasTrigger || isTrig
		}
		start, from = end+1, min(to+1, len(sql)) // past the ';'
	}
	return pieces, hasTrigger
}

// isTriggerStmt reports whether a statement's tokens start one of the
// statements this package parses.
func isTriggerStmt(t []token) bool {
	switch {
	case len(t) >= 2 && t[0].is("DROP") && t[1].is("TRIGGER"):
		return true
	case len(t) >= 3 && t[0].is("SHOW") && t[1].is("CREATE") && t[2].is("TRIGGER"):
		return true
	case len(t) >= 2 && t[0].is("CHECKSUM") && (t[1].is("TABLE") || t[1].is("TABLES")):
		return true
	}
	return isCreate(t)
}

// isCreate reports whether tokens start CREATE [DEFINER = user] TRIGGER.
func isCreate(t []token) bool {
	if len(t) < 2 || !t[0].is("CREATE") {
		return false
	}
	i := 1
	if t[i].is("DEFINER") {
		// The account is at most "user @ host" or CURRENT_USER ( ).
		for i++; i < len(t) && i < 8; i++ {
			if t[i].is("TRIGGER") {
				return true
			}
		}
		return false
	}
	return t[i].is("TRIGGER")
}

// bodyEnd returns the index of the ';' (or len(t)) that ends the CREATE
// TRIGGER statement starting t: the first one outside every BEGIN ... END,
// CASE ... END and compound statement (IF, LOOP, WHILE, REPEAT ... END x)
// of its body.
func bodyEnd(t []token) int {
	depth := 0
	for i := 0; i < len(t); i++ {
		switch {
		case t[i].isSym(';'):
			if depth == 0 {
				return i
			}
		case t[i].is("BEGIN"), t[i].is("CASE"):
			depth++
		case depth > 0 && opensCompound(t, i):
			depth++
		case t[i].is("END"):
			if depth > 0 {
				depth--
			}
			if i+1 < len(t) && compoundEnd[strings.ToUpper(t[i+1].val)] && t[i+1].kind == word {
				i++ // END IF, END LOOP, ...: one END
			}
		}
	}
	return len(t)
}

// compoundEnd are the words after an END that close a compound statement.
var compoundEnd = map[string]bool{"IF": true, "CASE": true, "LOOP": true, "WHILE": true, "REPEAT": true}

// opensCompound reports whether t[i] starts an IF, LOOP, WHILE or REPEAT
// statement: one of those words at the start of a statement of a body
// (after ';', BEGIN, THEN, ELSE, DO or a label's ':'). Elsewhere IF is the
// function or IF NOT EXISTS.
func opensCompound(t []token, i int) bool {
	if i == 0 || t[i].kind != word {
		return false
	}
	switch strings.ToUpper(t[i].val) {
	case "IF", "LOOP", "WHILE", "REPEAT":
	default:
		return false
	}
	p := t[i-1]
	return p.isSym(';') || p.isSym(':') || p.is("BEGIN") || p.is("THEN") || p.is("ELSE") || p.is("DO")
}
