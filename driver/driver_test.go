package driver_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/basalt-db/basalt/driver"
	"github.com/basalt-db/basalt/server"
	"github.com/basalt-db/basalt/session"
	"github.com/basalt-db/basalt/store/local"
	"github.com/cockroachdb/datadriven"
	parsertypes "github.com/pingcap/tidb/pkg/parser/types"
)

// TestDriver runs the scripts in testdata/ through the adapter as the
// server calls it, and prints what the server would put on the wire: each
// result's columns (protocol type, length, decimals, flags, collation id)
// and rows of wire values with their kinds, or the OK's counts, and the
// status flags after each command.
//
//	exec                  one COM_QUERY (statements separated by ';')
//	prepare name          COM_STMT_PREPARE of the input
//	execute name [args]   COM_STMT_EXECUTE; args are int:N, uint:N,
//	                      float:F, str:S, null, date:Y-M-D
func TestDriver(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		st, err := local.Open(t.TempDir(), local.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		drv, err := session.Open(st, session.Config{PessimisticByDefault: true, PlanCacheCapacity: 100, LockWaitTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		s, err := driver.New(drv).OpenSession(ctx, server.ConnInfo{ID: 1, User: "root", Host: "127.0.0.1"})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		stmts := map[string]server.Stmt{}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			var out strings.Builder
			w := &printer{out: &out}
			var err error
			switch d.Cmd {
			case "exec":
				err = s.ExecuteQuery(ctx, d.Input, true, w)
			case "prepare":
				var ps server.Stmt
				if ps, err = s.Prepare(ctx, d.Input); err == nil {
					stmts[d.CmdArgs[0].Key] = ps
					fmt.Fprintf(&out, "params: %d\n", ps.NumParams())
					printColumns(&out, ps.Columns())
				}
			case "execute":
				ps := stmts[d.CmdArgs[0].Key]
				var params []server.Value
				for _, a := range d.CmdArgs[1:] {
					params = append(params, param(t, a.Key))
				}
				err = ps.Execute(ctx, params, w)
			default:
				t.Fatalf("unknown command %s", d.Cmd)
			}
			if err != nil {
				fmt.Fprintf(&out, "error: %v\n", err)
			}
			fmt.Fprintf(&out, "status: %s warnings: %d\n", status(s.Status()), s.WarningCount())
			return out.String()
		})
	})
}

// param reads an execute argument as a bound parameter.
func param(t *testing.T, a string) server.Value {
	kind, text, _ := strings.Cut(a, ":")
	switch kind {
	case "null":
		return server.NullValue()
	case "int":
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return server.IntValue(n)
	case "uint":
		n, err := strconv.ParseUint(text, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return server.UintValue(n)
	case "float":
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			t.Fatal(err)
		}
		return server.Float64Value(f)
	case "str":
		return server.StringValue(text)
	case "date":
		var y, m, d int
		if _, err := fmt.Sscanf(text, "%d-%d-%d", &y, &m, &d); err != nil {
			t.Fatal(err)
		}
		return server.DateValue(y, m, d)
	}
	t.Fatalf("bad argument %q", a)
	return server.Value{}
}

// printer is a server.ResultWriter that prints what it is given.
type printer struct{ out *strings.Builder }

func (p *printer) WriteResult(r server.Result, more bool) error {
	if r.Rows == nil {
		fmt.Fprintf(p.out, "ok: affected %d, last insert id %d", r.AffectedRows, r.LastInsertID)
		if r.Info != "" {
			fmt.Fprintf(p.out, ", %q", r.Info)
		}
		p.out.WriteString("\n")
		return nil
	}
	defer r.Rows.Close()
	cols := r.Rows.Columns()
	printColumns(p.out, cols)
	row := make([]server.Value, len(cols))
	for {
		ok, err := r.Rows.Next(row)
		if err != nil || !ok {
			return err
		}
		for i, v := range row {
			if i > 0 {
				p.out.WriteString(" | ")
			}
			if v.Kind() == server.KindBytes {
				fmt.Fprintf(p.out, "%s %q", v.Kind(), v.Bytes())
			} else {
				fmt.Fprintf(p.out, "%s %s", v.Kind(), v)
			}
		}
		p.out.WriteString("\n")
	}
}

func printColumns(out *strings.Builder, cols []server.Column) {
	for _, c := range cols {
		fmt.Fprintf(out, "column %s (%s.%s.%s): %s length %d decimals %d flags %#x charset %d\n",
			c.Name, c.Schema, c.OrgTable, c.OrgName, parsertypes.TypeStr(byte(c.Type)), c.Length, c.Decimals, uint16(c.Flags), c.Charset)
	}
}

func status(f server.StatusFlags) string {
	var s []string
	if f&server.StatusInTrans != 0 {
		s = append(s, "in-trans")
	}
	if f&server.StatusAutocommit != 0 {
		s = append(s, "autocommit")
	}
	if len(s) == 0 {
		return "-"
	}
	return strings.Join(s, ",")
}
