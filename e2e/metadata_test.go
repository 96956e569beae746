package e2e

import (
	"context"
	"os/exec"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/basalt-db/basalt/testkit"
)

// metadataQueries are result sets whose column metadata MySQL 8 and
// MariaDB agree on (type, length, decimals, NOT NULL), so that Basalt's
// can be compared with MariaDB's. Where the two differ (SELECT 1 is a
// BIGINT in MySQL 8 and an INT in MariaDB) the case is left out.
var metadataQueries = []string{
	"SELECT id, i, u, d, dz, f, da, dt, y, t, s FROM meta",
	"SELECT 1.5, COALESCE(SUM(d), 0), IFNULL(SUM(d), 0), SUM(d), AVG(d), SUM(i), COUNT(*) FROM meta",
	"SELECT MAX(d), MIN(dt), CASE WHEN 1 THEN 0 ELSE SUM(d) END FROM meta",
}

const metadataSchema = "CREATE TABLE meta (id INT PRIMARY KEY, i INT, u BIGINT UNSIGNED, d DECIMAL(10,2), dz DECIMAL(6,0)," +
	" f DOUBLE, da DATE, dt DATETIME(3), y YEAR, t TINYINT, s VARCHAR(10) NOT NULL)"

// TestColumnMetadata compares the column metadata the mariadb client
// prints (--column-type-info) for metadataQueries on Basalt and on
// MariaDB. It skips when MariaDB or its client is not installed.
func TestColumnMetadata(t *testing.T) {
	client, err := exec.LookPath("mariadb")
	if err != nil {
		t.Skip("the mariadb client is not installed")
	}
	got := map[testkit.Flavor][]string{}
	for _, srv := range []*testkit.Server{testkit.StartBasalt(t, testkit.BasaltOptions{}), testkit.StartMariaDB(t)} {
		mustExec(t, srv.OpenDB(t, ""), "CREATE DATABASE md")
		mustExecAll(t, srv.OpenDB(t, "md"), metadataSchema)
		for _, q := range metadataQueries {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			out, err := exec.CommandContext(ctx, client, "--no-defaults", "--protocol=TCP", "--skip-ssl",
				"-h", srv.Host(), "-P", strconv.Itoa(srv.Port()), "-u", "root", "-D", "md",
				"--default-character-set=utf8mb4", "--column-type-info", "--table", "-e", q).CombinedOutput()
			cancel()
			if err != nil {
				t.Fatalf("%s on %s: %v\n%s", q, srv.Flavor(), err, out)
			}
			got[srv.Flavor()] = append(got[srv.Flavor()], columnInfo(string(out))...)
		}
		srv.Stop()
	}
	b, m := got[testkit.Basalt], got[testkit.MariaDB]
	if len(b) == 0 || !reflect.DeepEqual(b, m) {
		t.Errorf("column metadata differs:\nbasalt:  %s\nmariadb: %s", strings.Join(b, "\n         "), strings.Join(m, "\n         "))
	}
}

var (
	fieldRe = regexp.MustCompile("(?m)^Field +\\d+: +`([^`]*)`")
	attrRe  = regexp.MustCompile(`(?m)^(Type|Length|Decimals|Flags): +(.*)$`)
)

// columnInfo reads the --column-type-info blocks of the mariadb client:
// for each field its name, type, length, decimals and whether it is NOT
// NULL (the other flags differ between the servers for reasons of their
// own: NO_DEFAULT_VALUE, PART_KEY, BINARY on decimals, ...).
func columnInfo(out string) []string {
	var fields []string
	blocks := fieldRe.FindAllStringSubmatchIndex(out, -1)
	for i, loc := range blocks {
		end := len(out)
		if i+1 < len(blocks) {
			end = blocks[i+1][0]
		}
		attrs := map[string]string{}
		for _, m := range attrRe.FindAllStringSubmatch(out[loc[1]:end], -1) {
			attrs[m[1]] = strings.TrimSpace(m[2])
		}
		notNull := strings.Contains(attrs["Flags"], "NOT_NULL")
		fields = append(fields, out[loc[2]:loc[3]]+" "+attrs["Type"]+" "+attrs["Length"]+" "+attrs["Decimals"]+" notnull="+strconv.FormatBool(notNull))
	}
	return fields
}
