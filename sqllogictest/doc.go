// Package sqllogictest runs sqllogictest scripts against a MySQL-protocol
// server through database/sql.
//
// The scripts are SQLite's sqllogictest corpus in the variant whose
// expected results were regenerated against MySQL 8 (dolthub/sqllogictest).
// A script is a sequence of records separated by blank lines:
//
//	statement ok | statement error     then SQL that must succeed / fail
//	query <types> [<sort> [<label>]]   then SQL, "----" and the expected
//	                                   values, one per line, or the single
//	                                   line "N values hashing to <md5>"
//	skipif <engine> | onlyif <engine>  guard the record that follows
//	hash-threshold N                   (only matters when writing results)
//	halt                               stop reading the script
//	connection <name>                  run the records that follow on the
//	                                   connection of that name, opened on
//	                                   first use ("default" is the first)
//	file <name> [noeol]                then the lines of a file, up to a line
//	                                   "EOF", each ending in a newline (the
//	                                   last not, with noeol): written in a
//	                                   directory of the run, which the SQL
//	                                   of later records names $FILES
//
// Lines starting with # before a record are comments. A record's line
// number, in failures, is the line of its statement or query keyword.
//
// The contract of RunFile: one script runs top to bottom, on one connection
// unless "connection" lines name others (each opened on first use in the
// same database, so that a script can interleave transactions), in a
// database created empty for it and dropped afterwards. Each statement
// and query record counts once, as passed, failed or skipped (guarded out
// for the engine, "mysql" unless told otherwise); halt ends the count.
// Expected results are compared as their generator wrote them (values.go):
// values rendered by the column's type letter, sorted by the sort mode,
// and compared one by one or by the MD5 of all of them.
//
// The files: record.go is a parsed record, parse.go reads a script,
// values.go renders, sorts and hashes results, run.go executes a script.
package sqllogictest
