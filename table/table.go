// Package table is what both DML and DDL do to a table's rows: convert a
// value for a column as an INSERT stores it (convert.go, defaults.go),
// turn a row into its KV entries, the row and one entry per index
// (writer.go, index.go), rewrite stored rows for a MODIFY COLUMN
// (reorg.go), and decode stored rows, only the columns a statement reads
// (decoder.go, typed.go), with TIMESTAMP values moved between UTC and the
// session's zone (timezone.go). The executor writes and reads rows with
// it; ddl backfills indexes and rewrites rows with it.
//
// Keys and values are tablecodec's; the table's schema is catalog's.
package table
