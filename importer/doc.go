// Package importer is IMPORT INTO's fast path, as TiDB's Lightning in its
// physical mode: the rows of the input are encoded into their row and
// index keys as INSERT would write them, sorted externally in bounded
// memory, checked for duplicate keys, and handed in key order to a
// kv.Importer, which commits them all at one timestamp by ingesting
// files (store/local).
//
// The pipeline:
//
//	input lines ─ executor.ExecLoad (the session's) ─▶ Collector (a kv.Txn that only collects)
//	    ─▶ Sorter: sorted runs of at most the memory budget, spilled to temp files
//	    ─▶ merge of the runs, duplicates found as equal neighbours
//	    ─▶ kv.Importer.Import (SSTs, ingested at one commit ts)
//
// Memory is the sorter's budget plus a read buffer per run being merged,
// whatever the size of the input; disk is about twice the encoded data
// (the runs, then the SSTs).
package importer
