package bench

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"time"
)

// bulk_insert, the eleventh workload of sysbench 1.0 (issue 16), is unlike
// the others: it does not use the prepared sbtest tables. Each of its
// threads inserts into a table of its own, sbtestN for thread N, (id, k)
// rows numbered from 1 in multi-row INSERTs, so its tables must exist,
// one per thread, and be empty when a run starts. They cannot be the
// oltp tables (same names, other columns), so they are made in a
// database of their own, bulkDB, by sysbench's own "bulk_insert prepare"
// with the run's thread count, and dropped after the run ("bulk_insert
// cleanup", then the database), before the next thread count makes its
// own. The prepared sbtest tables are left as they are: the restore
// before each workload, and a dsn target's later workloads, see the same
// data as without bulk_insert.
//
// sysbench counts one event per row: its "transactions" per second are
// rows per second, its queries the multi-row INSERTs it sent. Reports show
// rows/s for it (see rateOf).

// BulkInsert is sysbench's bulk_insert workload.
const BulkInsert = "bulk_insert"

// bulkDB is the database of bulk_insert's tables.
const bulkDB = "sbtest_bulk"

// bulkConn is conn in bulkDB.
func bulkConn(conn sysbenchConn) sysbenchConn {
	conn.DB = bulkDB
	return conn
}

// bulkPrepare makes bulk_insert's tables for a run of threads threads: a
// fresh bulkDB, then sysbench bulk_insert prepare. It returns the commands
// and statements it ran.
func bulkPrepare(ctx context.Context, t target, threads int) ([]string, error) {
	steps := []string{"DROP DATABASE IF EXISTS " + bulkDB, "CREATE DATABASE " + bulkDB}
	done, err := execOn(ctx, t, steps...)
	if err != nil {
		return done, err
	}
	args := sysbenchArgs(bulkConn(t.Conn()), BulkInsert, "prepare", "--threads="+strconv.Itoa(threads))
	done = append(done, commandString("sysbench", args))
	if _, err = runSysbench(ctx, args, nil); err != nil {
		// Leave no half-made tables behind (a dsn target keeps them).
		more, _ := execOn(context.WithoutCancel(ctx), t, "DROP DATABASE IF EXISTS "+bulkDB)
		done = append(done, more...)
	}
	return done, err
}

// bulkCleanup drops bulk_insert's tables of a run of threads threads
// (sysbench bulk_insert cleanup) and their database. It runs even when ctx
// is done, for a minute at most, so that a dsn target is not left with
// them.
func bulkCleanup(ctx context.Context, t target, threads int) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	args := sysbenchArgs(bulkConn(t.Conn()), BulkInsert, "cleanup", "--threads="+strconv.Itoa(threads))
	done := []string{commandString("sysbench", args)}
	if _, err := runSysbench(ctx, args, nil); err != nil {
		return done, err
	}
	more, err := execOn(ctx, t, "DROP DATABASE IF EXISTS "+bulkDB)
	return append(done, more...), err
}

// execOn runs statements in order on a connection of its own to t, and
// returns them, each with a semicolon, up to and including the one that
// failed.
func execOn(ctx context.Context, t target, stmts ...string) ([]string, error) {
	db, err := sql.Open("mysql", t.DSN(""))
	if err != nil {
		return nil, err
	}
	defer db.Close()
	var done []string
	for _, q := range stmts {
		done = append(done, q+";")
		if _, err := db.ExecContext(ctx, q); err != nil {
			return done, fmt.Errorf("%s: %w", q, err)
		}
	}
	return done, nil
}
