package ddl

// SetBeforeIngest makes every backfill by ingestion run fn between its
// scan and its ingest, until the returned function is called.
func SetBeforeIngest(fn func()) (restore func()) {
	old := beforeIngest
	beforeIngest = fn
	return func() { beforeIngest = old }
}
