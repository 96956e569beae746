package ddl

// SetBeforeIngest makes every backfill by ingestion run fn between its
// scan and its ingest, until the returned function is called.
func SetBeforeIngest(fn func()) (restore func()) {
	old := beforeIngest
	beforeIngest = fn
	return func() { beforeIngest = old }
}

// SetIngestParts makes every backfill by ingestion read the table in n
// parts (fewer for a table of few rows), until the returned function is
// called.
func SetIngestParts(n int) (restore func()) {
	old := ingestParts
	ingestParts = func() int { return n }
	return func() { ingestParts = old }
}
