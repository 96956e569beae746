package e2e

import (
	"database/sql"
	"fmt"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/basalt-db/basalt/testkit"
)

// TestBackupUnderSysbench is issue 17's check of BACKUP DATABASE: taken
// while real sysbench oltp_write_only writes to the tables, the backup
// restores to tables that pass ADMIN CHECK TABLE and hold exactly what a
// read of the past at the backup's timestamp (tidb_snapshot = BackupTS)
// sees, which is not what the tables hold once the load has ended (the
// load wrote on after the backup's moment).
func TestBackupUnderSysbench(t *testing.T) {
	cfg := loadConfig(t)
	if cfg.target != "" && cfg.target != string(testkit.Basalt) {
		t.Skipf("BACKUP runs on the embedded store only (target %q)", cfg.target)
	}
	if _, err := exec.LookPath("sysbench"); err != nil {
		t.Skip("sysbench is not installed (apt-get install sysbench)")
	}
	srv := testkit.StartBasalt(t, testkit.BasaltOptions{})
	admin := srv.OpenDB(t, "")
	mustExec(t, admin, "CREATE DATABASE sbtest")
	runSysbench(t, srv, "oltp_common", "prepare", sysbenchTables...)

	// The load runs from before the backup starts until after it ends.
	const loadSeconds = 8
	type result struct {
		res testkit.SysbenchResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		args := append([]string{"oltp_write_only"}, sysbenchTables...)
		args = append(args, "--time="+strconv.Itoa(loadSeconds), "--threads=8", "run")
		res, err := testkit.Sysbench(t, srv, args...)
		done <- result{res, err}
	}()
	time.Sleep(2 * time.Second)
	dir := filepath.Join(t.TempDir(), "backup")
	var dest string
	var size, backupTS uint64
	var queued, started sql.NullString
	began := time.Now()
	err := admin.QueryRow("BACKUP DATABASE sbtest TO 'local://"+dir+"'").Scan(&dest, &size, &backupTS, &queued, &started)
	took := time.Since(began)
	load := <-done
	if err != nil {
		t.Fatalf("BACKUP under load: %v", err)
	}
	if load.err != nil {
		t.Fatalf("sysbench: %v", load.err)
	}
	t.Logf("BACKUP took %v (%d bytes, BackupTS %d) while oltp_write_only ran %d transactions (%.1f/s), %d ignored errors",
		took, size, backupTS, load.res.Transactions, load.res.TPS, load.res.IgnoredErrors)
	if load.res.Transactions == 0 {
		t.Fatalf("the load wrote nothing:\n%s", load.res.Output)
	}

	// One connection: tidb_snapshot is a session variable.
	conn, err := admin.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), "SET @@tidb_snapshot = ?", strconv.FormatUint(backupTS, 10)); err != nil {
		t.Fatalf("tidb_snapshot = BackupTS: %v", err)
	}
	atBackup := tableSums(t, conn)
	if _, err := conn.ExecContext(t.Context(), "SET @@tidb_snapshot = ''"); err != nil {
		t.Fatal(err)
	}
	afterLoad := tableSums(t, conn)
	if reflect.DeepEqual(atBackup, afterLoad) {
		t.Fatalf("the tables at BackupTS are the tables after the load: the load wrote nothing after the backup's moment; the check proves nothing")
	}

	mustExec(t, admin, "DROP DATABASE sbtest")
	var restored [5]sql.NullString
	if err := admin.QueryRow("RESTORE DATABASE sbtest FROM 'local://"+dir+"'").Scan(&restored[0], &restored[1], &restored[2], &restored[3], &restored[4], new(sql.NullString)); err != nil {
		t.Fatalf("RESTORE: %v", err)
	}
	for _, table := range sbtestTables() {
		checkTable(t, testkit.Basalt, admin, table)
		mustExec(t, admin, "ANALYZE TABLE "+table)
	}
	if got := tableSums(t, conn); !reflect.DeepEqual(got, atBackup) {
		t.Errorf("restored tables differ from a read at BackupTS:\nrestored:  %v\nat backup: %v", got, atBackup)
	}
}

// tableSums sums up each sysbench table through SQL: its row count and a
// hash of every column of every row, read through both the primary key
// and the secondary index on k.
func tableSums(t *testing.T, conn *sql.Conn) map[string][3]string {
	t.Helper()
	out := map[string][3]string{}
	for i, table := range sbtestTables() {
		var n, rows, byK string
		q := fmt.Sprintf("SELECT COUNT(*), COALESCE(SUM(CRC32(CONCAT_WS('|', id, k, c, pad))), 0) FROM %s", table)
		if err := conn.QueryRowContext(t.Context(), q).Scan(&n, &rows); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		// sysbench names table N's index k_N.
		q = fmt.Sprintf("SELECT COALESCE(SUM(k), 0) FROM %s FORCE INDEX (k_%d) WHERE k >= 0", table, i+1)
		if err := conn.QueryRowContext(t.Context(), q).Scan(&byK); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		out[table] = [3]string{n, rows, byK}
	}
	return out
}
