package session_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/basalt-db/basalt/session"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/expression"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/tablecodec"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// TestModifyColumnLeavesNothing checks what a MODIFY COLUMN that rewrites
// rows (ddl/modify.go) leaves behind, below SQL: after a failed one, the
// table's definition is the one it had (no hidden column, the same
// indexes) and the changing indexes' entries are gone; after one that
// succeeds, no hidden column is left, the indexes have new ids and the
// old ones' entries are gone. The failures happen while writers change
// other columns, also of the row whose value does not convert, and must
// not see an error.
func TestModifyColumnLeavesNothing(t *testing.T) {
	drv, _, addr := serveBasalt(t)
	db, err := sql.Open("mysql", fmt.Sprintf("root@tcp(%s)/?multiStatements=true", addr))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	exec := func(q string) error {
		_, err := db.ExecContext(ctx, "USE mc; "+q)
		return err
	}
	if _, err := db.Exec("CREATE DATABASE mc"); err != nil {
		t.Fatal(err)
	}
	if err := exec("CREATE TABLE t (id INT PRIMARY KEY, s VARCHAR(10), v INT NOT NULL, UNIQUE KEY us (s), KEY ksv (s, v))"); err != nil {
		t.Fatal(err)
	}
	var vals []string
	for i := range 1000 {
		vals = append(vals, fmt.Sprintf("(%d, '%d', 0)", i, i))
	}
	if err := exec("INSERT INTO t VALUES " + strings.Join(vals, ", ")); err != nil {
		t.Fatal(err)
	}
	table := func() *catalog.TableInfo { return drv.Catalog().InfoSchema().Table("mc", "t") }
	// entries counts the keys of index id.
	entries := func(id int64) int { return indexEntries(t, drv, table().ID, id) }
	indexIDs := func() []int64 {
		var ids []int64
		for _, ix := range table().Indexes {
			ids = append(ids, ix.ID)
		}
		return ids
	}
	before, maxBefore := indexIDs(), table().MaxIndexID

	// Writers update v of rows 1..98 and 900 while MODIFYs fail on row
	// 900, the backfill's last batch.
	if err := exec("UPDATE t SET s = '0150' WHERE id = 900"); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var ops atomic.Int64
	werr := make(chan error, 2)
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				id := 1 + w + 2*(i%49)
				if w == 0 && i%5 == 0 {
					id = 900 // whose s does not convert
				}
				if _, err := db.ExecContext(ctx, "UPDATE mc.t SET v = v + 1 WHERE id = ?", id); err != nil {
					werr <- err
					return
				}
				ops.Add(1)
			}
		}()
	}
	for ops.Load() < 10 {
		time.Sleep(time.Millisecond)
	}
	// '150' and '0150' are one integer: the unique index fails (1062);
	// 'x' is no integer (1366).
	err1 := exec("ALTER TABLE t MODIFY s INT")
	if err := exec("UPDATE t SET s = 'x' WHERE id = 900"); err != nil {
		t.Fatal(err)
	}
	err2 := exec("ALTER TABLE t MODIFY s INT")
	stop.Store(true)
	wg.Wait()
	close(werr)
	for err := range werr {
		t.Errorf("writer: %v", err)
	}
	if err1 == nil || !strings.Contains(err1.Error(), "1062") {
		t.Errorf("MODIFY with duplicates: %v, want 1062", err1)
	}
	if err2 == nil || !strings.Contains(err2.Error(), "1366") {
		t.Errorf("MODIFY of 'x' to INT: %v, want 1366", err2)
	}
	t.Logf("%d writer updates during the two failed MODIFYs", ops.Load())
	tb := table()
	if len(tb.Hidden) != 0 {
		t.Errorf("hidden columns left after failed MODIFYs: %+v", tb.Hidden)
	}
	if got := indexIDs(); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Errorf("indexes %v after failed MODIFYs, want %v", got, before)
	}
	if tb.MaxIndexID <= maxBefore {
		t.Errorf("MaxIndexID %d: the MODIFYs built no index", tb.MaxIndexID)
	}
	for id := maxBefore + 1; id <= tb.MaxIndexID; id++ {
		if n := entries(id); n != 0 {
			t.Errorf("abandoned index %d keeps %d entries", id, n)
		}
	}
	if c := tb.FindColumn("s"); c == nil || !c.Type.IsString() {
		t.Errorf("column s after failed MODIFYs: %+v", c)
	}
	if err := exec("ADMIN CHECK TABLE t"); err != nil {
		t.Fatal(err)
	}
	var sum int
	if err := db.QueryRow("SELECT SUM(v) FROM mc.t").Scan(&sum); err != nil || int64(sum) != ops.Load() {
		t.Errorf("SUM(v) = %d, %v; want the %d updates", sum, err, ops.Load())
	}

	// Without the bad values it converts.
	if err := exec("UPDATE t SET s = '1000' WHERE id = 900"); err != nil {
		t.Fatal(err)
	}
	if err := exec("ALTER TABLE t MODIFY s INT"); err != nil {
		t.Fatal(err)
	}
	tb = table()
	if len(tb.Hidden) != 0 {
		t.Errorf("hidden columns left after MODIFY: %+v", tb.Hidden)
	}
	for _, id := range before {
		if id == tb.PrimaryKey().ID {
			continue // the handle: not rebuilt
		}
		if findIndex(tb, id) != nil {
			t.Errorf("index %d still in the schema after MODIFY", id)
		}
		if n := entries(id); n != 0 {
			t.Errorf("old index %d keeps %d entries", id, n)
		}
	}
	for _, name := range []string{"us", "ksv"} {
		ix := tb.FindIndex(name)
		if ix == nil || ix.State != catalog.StatePublic || entries(ix.ID) != 1000 {
			t.Errorf("index %s after MODIFY: %+v", name, ix)
		}
	}
	if err := exec("ADMIN CHECK TABLE t"); err != nil {
		t.Fatal(err)
	}
	var id int
	if err := db.QueryRow("SELECT id FROM mc.t WHERE s = 150").Scan(&id); err != nil || id != 150 {
		t.Errorf("s = 150: id %d, %v", id, err)
	}
}

func findIndex(t *catalog.TableInfo, id int64) *catalog.IndexInfo {
	for _, ix := range t.Indexes {
		if ix.ID == id {
			return ix
		}
	}
	return nil
}

// TestModifyColumnRecovery opens a store whose schema holds a MODIFY
// COLUMN that a restart interrupted, before and after its swap, written
// as ddl/modify.go leaves it: the driver takes the hidden column and its
// indexes away, with their entries, and the table works as before.
func TestModifyColumnRecovery(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	// open serves the store in dir until the returned function stops it.
	open := func() (*session.Driver, *sql.DB, func()) {
		drv, _, addr, stop := serveStore(t, dir, session.Config{PessimisticByDefault: true, LockWaitTimeout: time.Second})
		db, err := sql.Open("mysql", fmt.Sprintf("root@tcp(%s)/?multiStatements=true", addr))
		if err != nil {
			t.Fatal(err)
		}
		return drv, db, func() {
			db.Close()
			stop()
		}
	}
	drv, db, stop := open()
	for _, q := range []string{"CREATE DATABASE mr", "USE mr",
		"CREATE TABLE t (id INT PRIMARY KEY, s VARCHAR(10), KEY ks (s))",
		"INSERT INTO t VALUES (1, '1'), (2, '2')"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	// interrupt publishes the state of a MODIFY s INT: before the swap
	// a changing column derived from s and an index on it (write-only);
	// after it, the old column derived from s and its index, write-only
	// until setState makes it delete-only as the swap leaves it.
	interrupt := func(swapped bool) int64 {
		var ixID int64
		err := drv.Catalog().RunDDL(ctx, func(m *catalog.Meta, is *catalog.InfoSchema) error {
			nt := is.Table("mr", "t").Clone()
			s := nt.FindColumn("s")
			nt.MaxColumnID++
			c := &catalog.ColumnInfo{ID: nt.MaxColumnID, Name: "_Col$_s", Type: types.FieldType{Tp: mysql.TypeLong, Flen: 11},
				State: catalog.StateWriteOnly, ChangeFrom: s.ID, ChangeMode: uint32(expression.ModeStrictTransTables)}
			if swapped {
				c.Name, c.Type, c.ChangeMode = "_Col$_old_s", s.Type, 0
			}
			nt.Hidden = append(nt.Hidden, c)
			nt.MaxIndexID++
			ixID = nt.MaxIndexID
			nt.Indexes = append(nt.Indexes, &catalog.IndexInfo{ID: ixID, Name: "ks", State: catalog.StateWriteOnly,
				Columns: []catalog.IndexColumn{{Name: c.Name, Length: -1}}})
			nt.FixOffsets()
			is.PutTable(is.DB("mr"), nt)
			return m.PutTable(nt)
		})
		if err != nil {
			t.Fatal(err)
		}
		return ixID
	}
	entries := func(drv *session.Driver, id int64) int {
		return indexEntries(t, drv, drv.Catalog().InfoSchema().Table("mr", "t").ID, id)
	}
	for i, swapped := range []bool{false, true} {
		ixID := interrupt(swapped)
		// Writers maintain the hidden index; before the swap they
		// convert strictly, and 'x' is no integer.
		if _, err := db.Exec(fmt.Sprintf("INSERT INTO mr.t VALUES (%d, '%d')", 10+i, 10+i)); err != nil {
			t.Fatal(err)
		}
		_, err := db.Exec("INSERT INTO mr.t VALUES (99, 'x')")
		if !swapped && (err == nil || !strings.Contains(err.Error(), "1366")) {
			t.Fatalf("insert of 'x' with a changing INT column: %v, want 1366", err)
		}
		if swapped && err == nil {
			db.Exec("DELETE FROM mr.t WHERE id = 99")
		}
		if n := entries(drv, ixID); n != 1 {
			t.Fatalf("hidden index %d has %d entries, want the one written", ixID, n)
		}
		if swapped {
			err := drv.Catalog().RunDDL(ctx, func(m *catalog.Meta, is *catalog.InfoSchema) error {
				nt := is.Table("mr", "t").Clone()
				findIndex(nt, ixID).State = catalog.StateDeleteOnly
				is.PutTable(is.DB("mr"), nt)
				return m.PutTable(nt)
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		stop()
		drv, db, stop = open()
		tb := drv.Catalog().InfoSchema().Table("mr", "t")
		if len(tb.Hidden) != 0 || findIndex(tb, ixID) != nil || len(tb.Indexes) != 2 {
			t.Fatalf("after restart: hidden %+v, indexes %+v", tb.Hidden, tb.Indexes)
		}
		if n := entries(drv, ixID); n != 0 {
			t.Errorf("index %d keeps %d entries after restart", ixID, n)
		}
		for _, q := range []string{"INSERT INTO mr.t VALUES (99, 'x')", "DELETE FROM mr.t WHERE id = 99", "ADMIN CHECK TABLE mr.t"} {
			if _, err := db.Exec(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM mr.t WHERE s >= '1'").Scan(&n); err != nil || n != 4 {
		t.Errorf("rows: %d, %v; want 4", n, err)
	}
	stop()
}

// indexEntries counts the keys of index indexID of table tableID, as of
// now.
func indexEntries(t *testing.T, drv *session.Driver, tableID, indexID int64) int {
	t.Helper()
	ts, err := drv.Store().CurrentTS()
	if err != nil {
		t.Fatal(err)
	}
	p := tablecodec.IndexPrefix(tableID, indexID)
	it, err := drv.Store().Snapshot(ts).Iter(p, kv.PrefixEnd(p))
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	n := 0
	for ; it.Valid(); it.Next() {
		n++
	}
	return n
}
