package stmtsummary

import (
	"github.com/basalt-db/basalt/parserdriver"
	"github.com/pingcap/tidb/pkg/parser"
)

// NormalizeDigest returns a statement's normalized text and digest, as
// parser.NormalizeDigest does (TiDB's), and as cheaply for a multi-row
// INSERT of a million bytes as for a short one.
//
// TiDB's normalizer already folds a list of literal rows into one:
// "insert into t values (1, 'a'), (2, 'b'), (3, 'c')" normalizes to
// "insert into t values ( ... )". But it lexes every row to get there, and
// a bulk INSERT (sysbench prepare, mariadb-dump) spent more time being
// digested than being executed. So a long INSERT or REPLACE whose first
// two rows hold only literals is normalized without its later rows of
// literals: the normalizer ends the second such row in a state that every
// further row of literals leaves as it was (see literalRowsEnd), so the
// text without them has the same normalized form and digest. Anything
// the scanner (parserdriver.LiteralRowEnd) is not sure of (comments,
// ROW(), an expression, a string with an introducer) ends the shortcut: that row and the rest are kept,
// and the result is still the normalizer's own.
func NormalizeDigest(sql string) (normalized, digest string) {
	if len(sql) >= shortcutMinLen {
		sql = dropLiteralRows(sql)
	}
	n, d := parser.NormalizeDigest(sql)
	return n, d.String()
}

// shortcutMinLen is how long a statement must be for NormalizeDigest to
// look for rows to drop: shorter ones cost little to normalize whole. A
// variable for the tests.
var shortcutMinLen = 2048

// dropLiteralRows returns sql without the rows of literals of its VALUES
// list that follow its first two rows, when sql is an INSERT or REPLACE
// whose first two rows hold only literals; otherwise sql.
//
// Why the normalizer cannot tell the difference (parser/digester.go,
// reduceLit): a row of literals "( v1 , v2 , ... )" right after
// "( ?-or-... ) ," has its first literal fold the previous row's tail
// "?-or-... ) , (" into "...", each further ", literal" folds into "...",
// and its ")" closes it: the tokens end "( ... )" again, as they did
// before. The first row may end "( ? )" (a single value), which the
// second row turns into "( ... )"; from the second row on the state is
// fixed. A sign before a number is dropped first (isPrefixByUnary after
// "(" or ","), so signed numbers count as literals too; a sign before a
// string is not, so it does not.
func dropLiteralRows(sql string) string {
	i := parserdriver.ValuesListStart(sql)
	if i < 0 {
		return sql
	}
	// i is at the first row's "(".
	first, ok := parserdriver.LiteralRowEnd(sql, i)
	if !ok {
		return sql
	}
	j, ok := parserdriver.NextRow(sql, first)
	if !ok {
		return sql
	}
	keepTo, ok := parserdriver.LiteralRowEnd(sql, j)
	if !ok {
		return sql
	}
	// Drop ", (row)" while the rows hold only literals.
	end := keepTo
	for {
		k, ok := parserdriver.NextRow(sql, end)
		if !ok {
			break
		}
		e, ok := parserdriver.LiteralRowEnd(sql, k)
		if !ok {
			break
		}
		end = e
	}
	if end == keepTo {
		return sql
	}
	return sql[:keepTo] + sql[end:]
}
