package session_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/basalt-db/basalt/sqllogictest"
	"github.com/basalt-db/basalt/testkit"
)

// compareScripts are the scripts TestScriptsMatchMariaDB runs by default:
// the ones about values, types and functions, where MariaDB's answers are
// the reference. BASALT_COMPARE_ALL=1 runs every script.
var compareScripts = []string{"isolation.test", "savepoint.test", "prepare.test", "collation.test", "types.test", "sqlmode.test", "functions.test", "json.test", "modify.test", "vars.test", "rowexpr.test", "rowsubquery.test", "key_ranges.test", "decorrelate.test", "fk.test", "loaddata.test"}

// TestScriptsMatchMariaDB runs SQL scripts on Basalt and on a MariaDB
// started for the test, side by side, and fails where they differ: the
// same statements must succeed (with the same affected-row counts) or fail
// with the same error code, and the same queries return the same rows (in
// the same order when the query orders them). The scripts' own expected
// results play no part, so this catches differences the scripts do not
// spell out. Records guarded with onlyif/skipif for one server are
// skipped. Needs mariadbd (skipped without it, and with -short).
func TestScriptsMatchMariaDB(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a MariaDB")
	}
	files := compareScripts
	if os.Getenv("BASALT_COMPARE_ALL") != "" {
		all, err := filepath.Glob("testdata/*.test")
		if err != nil {
			t.Fatal(err)
		}
		files = nil
		for _, f := range all {
			files = append(files, filepath.Base(f))
		}
	}
	maria := testkit.StartMariaDB(t)
	mdb, err := sql.Open("mysql", maria.DSN("")+"&multiStatements=true&allowAllFiles=true")
	if err != nil {
		t.Fatal(err)
	}
	defer mdb.Close()
	bdb, err := sql.Open("mysql", startBasalt(t))
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	for _, f := range files {
		t.Run(f, func(t *testing.T) {
			res, err := sqllogictest.CompareFile(context.Background(), bdb, mdb, filepath.Join("testdata", f),
				sqllogictest.CompareOptions{Engines: [2]string{"basalt", "mariadb"}, RecordTimeout: 30 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d records compared, %d skipped, %d differ", res.Compared, res.Skipped, res.Failed)
			if res.Compared == 0 {
				t.Error("no record ran on both servers")
			}
			for _, m := range res.Mismatches {
				t.Errorf("Basalt (A) and MariaDB (B) differ at %s", m)
			}
		})
	}
}
