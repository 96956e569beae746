package bench

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// PrepareByImport makes sbtest1..sbtest<tables> of tableSize rows each in
// database sbtest (which must exist) of a Basalt on this machine as
// sysbench oltp_common prepare does (SysbenchDDL, WriteSysbenchCSV with
// sysbench's default --rand-type, special), through IMPORT INTO: each
// table's rows are written as a CSV file in workDir, which the server
// reads, and removed after.
// Two tables are made at once: while one imports, the next one's file is
// written, and the server's two cores both work. It returns the setup
// steps, for the results.
func PrepareByImport(ctx context.Context, db *sql.DB, tables, tableSize int, workDir string) ([]string, error) {
	dir, err := os.MkdirTemp(workDir, "basalt-bench-import-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	setup := []string{fmt.Sprintf("# each table's rows written as sysbench oltp_common prepare makes them "+
		"(ids 1..%d, k by --rand-type=special, c and pad digit groups) to a CSV file, then:", tableSize)}
	for i := 1; i <= tables; i++ {
		create, index := SysbenchDDL(i)
		setup = append(setup, create+";", index+";",
			fmt.Sprintf("IMPORT INTO sbtest.sbtest%d FROM '<sbtest%d.csv>';", i, i))
	}
	todo := make(chan int, tables)
	for i := 1; i <= tables; i++ {
		todo <- i
	}
	close(todo)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for w := 0; w < min(tables, 2); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := db.Conn(ctx)
			if err == nil {
				defer conn.Close()
				_, err = conn.ExecContext(ctx, "USE sbtest")
			}
			for i := range todo {
				if err == nil && ctx.Err() == nil {
					err = importTable(ctx, conn, dir, i, tableSize)
				}
				if err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					cancel()
					return
				}
			}
		}()
	}
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return setup, first
}

// importTable creates sbtest<n> in conn's database, sbtest, and imports
// its rows.
func importTable(ctx context.Context, conn *sql.Conn, dir string, n, rows int) error {
	create, index := SysbenchDDL(n)
	for _, q := range []string{create, index} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	path := filepath.Join(dir, fmt.Sprintf("sbtest%d.csv", n))
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = WriteSysbenchCSV(f, rows, "special", uint64(n))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(path)
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	q := fmt.Sprintf("IMPORT INTO sbtest.sbtest%d FROM '%s'", n, abs)
	rs, err := conn.QueryContext(ctx, q)
	if err != nil {
		return fmt.Errorf("%s: %w", q, err)
	}
	return rs.Close()
}
