package parserdriver

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// ParseBulkInsert parses a long multi-row INSERT or REPLACE of literal
// rows (sysbench's prepare, mariadb-dump) into the statement the parser
// would build, at a fraction of the parser's cost; ok is false when sql is
// not one (the caller then parses it with the parser).
//
// The parser parses the statement with its first row only; the rows
// after it are read by the scanner of rows.go and built as the parser
// builds literals (rowBuilder). It applies only when the whole text is
// printable ASCII and blanks, the text before VALUES holds no quote, every
// row holds only literals the builder is sure of, and nothing but blanks
// and one ';' follows the last row (so that every other node, and its
// offset in the text, is the parser's). Being printable ASCII, the
// statement's Text(), which the parser would convert from the
// connection's character set (and in which it would turn strings with
// control characters into hex), is the text itself. The tests compare its
// trees with the parser's.
//
// mode must be the SQL mode p parses with (SetSQLMode).
func ParseBulkInsert(p *parser.Parser, mode mysql.SQLMode, sql string) (stmts []ast.StmtNode, ok bool) {
	if len(sql) < bulkInsertMinLen || !printableASCII(sql) {
		return nil, false
	}
	i := ValuesListStart(sql)
	if i < 0 || strings.ContainsAny(sql[:i], "'\"") {
		return nil, false
	}
	b := rowBuilder{escapes: !mode.HasNoBackslashEscapesMode()}
	firstEnd, ok := literalRow(sql, i, &b)
	if !ok {
		return nil, false
	}
	var (
		rows  [][]ast.ExprNode
		exprs []ast.ExprNode // allocated for rows, not handed out yet
	)
	end := firstEnd
	for {
		k, ok := NextRow(sql, end)
		if !ok {
			break
		}
		e, ok := literalRow(sql, k, &b)
		if !ok {
			return nil, false
		}
		if len(exprs) < len(b.row) {
			exprs = make([]ast.ExprNode, max(1024, len(b.row)))
		}
		row := exprs[:len(b.row):len(b.row)]
		exprs = exprs[len(b.row):]
		copy(row, b.row)
		rows = append(rows, row)
		end = e
	}
	if len(rows) == 0 || !blankTail(sql[end:]) {
		return nil, false
	}
	short := sql[:firstEnd] + sql[end:]
	stmts, _, err := p.ParseSQL(short)
	if err != nil || len(stmts) != 1 {
		return nil, false
	}
	ins, isInsert := stmts[0].(*ast.InsertStmt)
	if !isInsert || len(ins.Lists) != 1 || ins.Select != nil || ins.Setlist || ins.OnDuplicate != nil {
		return nil, false
	}
	// The parser's text of the statement is short[a:a+len(t)] (it leaves
	// out a newline at either end); the same span of sql, with the rows.
	t := ins.OriginalText()
	a := strings.Index(short, t)
	if a < 0 || a > firstEnd || a+len(t) < firstEnd {
		return nil, false
	}
	ins.Lists = append(ins.Lists, rows...)
	// sql is printable ASCII, which every connection character set reads
	// as itself: no encoding to convert from.
	ins.SetText(nil, sql[a:a+len(t)+end-firstEnd])
	return stmts, true
}

// bulkInsertMinLen is how long a statement must be for ParseBulkInsert
// to try: the parser is quick enough on shorter ones. A variable for the
// tests.
var bulkInsertMinLen = 8192

// blankTail reports whether s is blanks, with at most one ';' among them.
func blankTail(s string) bool {
	semi := false
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\n', '\r':
		case ';':
			if semi {
				return false
			}
			semi = true
		default:
			return false
		}
	}
	return true
}

// printableASCII reports whether every byte of s is in 0x20..0x7e or a
// tab, newline or return, eight bytes at a time.
func printableASCII(s string) bool {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		// A byte < 0x20: x - 0x20 borrows into its high bit; a byte
		// >= 0x7f: x + 0x01 carries into it (or it was set already).
		if ((x-0x20*ones)|(x+ones)|x)&highs != 0 && !printableBytes(s[i:i+8]) {
			return false
		}
	}
	return printableBytes(s[i:])
}

func printableBytes(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 || c > 0x7e) && c != '\t' && c != '\n' && c != '\r' {
			return false
		}
	}
	return true
}

// PrintableASCII reports whether every byte of s is in 0x20..0x7e or a
// tab, newline or return: text that every connection character set
// reads as itself.
func PrintableASCII(s string) bool { return printableASCII(s) }
