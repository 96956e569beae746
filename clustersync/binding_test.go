package clustersync_test

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/basalt-db/basalt/testkit"
)

// bindings: a GLOBAL binding made on A is used by B's planner and listed
// by B's SHOW GLOBAL BINDINGS within 5 s; dropped on A, B stops using it.
func bindings(t *testing.T, dbA, dbB *sql.DB) {
	testkit.MustExec(t, dbA, "CREATE TABLE bind_t (id INT PRIMARY KEY, a INT, b INT, KEY ka (a), KEY kb (b))")
	testkit.MustExec(t, dbA, "INSERT INTO bind_t VALUES (1, 1, 1), (2, 1, 2), (3, 2, 2)")
	// plan is the access operator of the query's plan on db, and whether
	// it came from a binding (on one connection: the variable is the
	// session's).
	plan := func(db *sql.DB) (string, int) {
		conn, err := db.Conn(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		rows, err := conn.QueryContext(t.Context(), "EXPLAIN SELECT id FROM bind_t WHERE a = 1 AND b = 2")
		if err != nil {
			t.Fatal(err)
		}
		var ops []string
		for rows.Next() {
			var id, est, info string
			if err := rows.Scan(&id, &est, &info); err != nil {
				t.Fatal(err)
			}
			ops = append(ops, strings.TrimSpace(id)+" "+info)
		}
		rows.Close()
		var used int
		if err := conn.QueryRowContext(t.Context(), "SELECT @@last_plan_from_binding").Scan(&used); err != nil {
			t.Fatal(err)
		}
		return ops[len(ops)-1], used
	}
	globalBindings := func(db *sql.DB) []string {
		rows, err := db.Query("SHOW GLOBAL BINDINGS")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			v := make([]sql.NullString, 11)
			p := make([]any, 11)
			for i := range v {
				p[i] = &v[i]
			}
			if err := rows.Scan(p...); err != nil {
				t.Fatal(err)
			}
			out = append(out, v[0].String+" | "+v[1].String)
		}
		return out
	}

	before, _ := plan(dbB)
	if !strings.Contains(before, "index:ka(a)") {
		t.Fatalf("without a binding B reads %q, not ka: the test cannot tell the binding's effect", before)
	}
	testkit.MustExec(t, dbA, "CREATE GLOBAL BINDING FOR SELECT id FROM bind_t WHERE a = 1 AND b = 2 "+
		"USING SELECT id FROM bind_t USE INDEX (kb) WHERE a = 1 AND b = 2")
	if p, used := plan(dbA); !strings.Contains(p, "index:kb(b)") || used != 1 {
		t.Fatalf("A does not use its own binding: %q, last_plan_from_binding %d", p, used)
	}
	want := "select `id` from `test` . `bind_t` where `a` = ? and `b` = ? | " +
		"SELECT `id` FROM `test`.`bind_t` USE INDEX (`kb`) WHERE `a` = 1 AND `b` = 2"
	testkit.WaitFor(t, within, "B to use A's global binding", func() (bool, string) {
		p, used := plan(dbB)
		shown := globalBindings(dbB)
		return strings.Contains(p, "index:kb(b)") && used == 1 && len(shown) == 1 && shown[0] == want,
			fmt.Sprintf("plan %q, last_plan_from_binding %d, SHOW GLOBAL BINDINGS %q", p, used, shown)
	})

	testkit.MustExec(t, dbA, "DROP GLOBAL BINDING FOR SELECT id FROM bind_t WHERE a = 1 AND b = 2")
	testkit.WaitFor(t, within, "B to drop the binding A dropped", func() (bool, string) {
		p, used := plan(dbB)
		shown := globalBindings(dbB)
		return strings.Contains(p, "index:ka(a)") && used == 0 && len(shown) == 0,
			fmt.Sprintf("plan %q, last_plan_from_binding %d, SHOW GLOBAL BINDINGS %q", p, used, shown)
	})
}
