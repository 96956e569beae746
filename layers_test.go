package basalt

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The layering of the tree is a test: every Basalt package may import only
// the Basalt packages its row below allows (its tests may import more). A
// new package, or a new arrow between packages, is a decision: make it
// here, in one place, where the next reader sees the whole house. The rows
// follow ARCHITECTURE.md's data flow, from the leaves up:
//
//   - the SQL packages never import a concrete store (store/local,
//     store/pebble, store/tikv) nor the cluster's pd/ and storenode/: they
//     speak kv;
//   - the storage packages never import a SQL package;
//   - pd/ never imports kv or a store: it knows key ranges and timestamps,
//     not transactions;
//   - storenode/ never imports store/local or pd/ (it talks to PD over
//     gRPC, through pd/client);
//   - server/ knows only errno and metrics; session/ never imports server/ (driver/
//     adapts one to the other);
//   - only cmd/basalt wires concrete parts together.
//
// A pattern "p/..." names p and every package below it.
var layers = []layer{
	// Leaves: values, codes, encodings, the kv seam.
	{"codec", nil},
	{"types", nil},
	{"errno", nil},
	{"scripttest", []string{"errno", "types"}},
	{"tso", nil},
	{"kv", nil},
	{"kv/kvtest", []string{"kv"}},
	{"config", nil},
	{"metrics", nil},
	{"privilege", nil},
	{"trigger", nil},
	// What the SQL layer records of its statements: the slow query log
	// and the statement summary.
	{"slowlog", nil},
	{"stmtsummary", []string{"parserdriver", "types"}},
	// The status port's /dashboard: the metrics, the summary and the slow
	// log as one page.
	{"dashboard", []string{"slowlog", "stmtsummary"}},

	// SQL, bottom up.
	{"parserdriver", []string{"types"}},
	{"tablecodec", []string{"codec", "types"}},
	{"catalog", []string{"codec", "kv", "tablecodec", "types"}},
	{"expression", []string{"errno", "parserdriver", "types"}},
	{"table", []string{"catalog", "codec", "errno", "expression", "kv", "tablecodec", "types"}},
	{"planner", []string{"catalog", "errno", "expression", "kv", "tablecodec", "types"}},
	// SQL plan bindings: statements normalized, hints moved.
	{"bindinfo", nil},
	{"executor", []string{"catalog", "errno", "expression", "kv", "planner", "table", "tablecodec", "types"}},
	// ddl builds a non-unique index by ingestion with importer's sorter.
	{"ddl", []string{"catalog", "errno", "expression", "importer", "kv", "parserdriver", "table", "tablecodec", "types"}},
	// The schema shared by a cluster's SQL nodes, through PD's etcd.
	{"schemasync", []string{"catalog", "codec"}},
	// Global variables and privilege changes shared by the SQL nodes, and
	// their GC leader, through PD's etcd.
	{"clustersync", nil},
	{"gcworker", []string{"tso"}},
	// The DDL job queue and the DDL owner election, through PD's etcd.
	{"ddljob", []string{"catalog", "kv"}},
	// BACKUP and RESTORE: a snapshot's keys to files and back.
	{"brie", []string{"catalog", "kv", "tablecodec"}},
	// IMPORT INTO's external sort and its commit through kv.Importer.
	{"importer", []string{"kv"}},
	{"session", []string{"bindinfo", "brie", "catalog", "clustersync", "codec", "ddl", "ddljob", "errno", "executor", "expression",
		"gcworker", "importer", "kv", "metrics", "parserdriver", "planner", "privilege", "schemasync", "slowlog", "stmtsummary",
		"table", "tablecodec", "trigger", "tso", "types"}},

	// The protocol, and the adapter between it and the SQL layer.
	{"server", []string{"errno", "metrics"}},
	{"driver", []string{"errno", "planner", "server", "session", "types"}},

	// Storage: MVCC over an engine, the engine, the stores behind kv.
	{"store/mvcc", []string{"codec", "kv", "tso"}},
	{"store/pebble", []string{"codec", "kv", "store/mvcc", "tso"}},
	{"store/local", []string{"codec", "kv", "store/mvcc", "store/pebble", "tso"}},
	{"store/tikv/...", []string{"codec", "grpccodec", "kv", "tso", "store/tikv/..."}},

	// The cluster's roles, and the gRPC codec of their kvproto traffic
	// (the storage node's server, the SQL node's read streams).
	{"grpccodec", nil},
	{"pd/...", []string{"config", "metrics", "tso", "pd/..."}},
	{"storenode/...", []string{"codec", "config", "grpccodec", "kv", "metrics", "store/mvcc", "store/pebble", "tso", "storenode/..."}},

	// Tools and tests. playground runs the roles as processes of the
	// binary, so it imports none of them.
	{"playground", nil},
	{"bench", nil},
	{"testkit", []string{"bench"}},
	{"sqllogictest", nil},
	{"e2e", nil},

	// The binary wires everything.
	{"cmd/basalt", []string{"..."}},
}

// layer is a row of the table: the packages pkg names may import the
// Basalt packages may names.
type layer struct {
	pkg string
	may []string
}

const module = "github.com/basalt-db/basalt"

// matches reports whether pkg is named by pattern.
func matches(pattern, pkg string) bool {
	if pattern == "..." {
		return true
	}
	if p, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == p || strings.HasPrefix(pkg, p+"/")
	}
	return pkg == pattern
}

func TestLayers(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 10 {
		t.Fatalf("go list found %d packages: %q", len(lines), out)
	}
	for _, line := range lines {
		f := strings.Fields(line)
		if f[0] == module {
			continue // this test's own package
		}
		pkg := strings.TrimPrefix(f[0], module+"/")
		i := slices.IndexFunc(layers, func(l layer) bool { return matches(l.pkg, pkg) })
		if i < 0 {
			t.Errorf("package %s has no row in the layers table (layers_test.go): say what it may import", pkg)
			continue
		}
		for _, imp := range f[1:] {
			dep, ok := strings.CutPrefix(imp, module+"/")
			if !ok {
				continue // not Basalt's
			}
			if !slices.ContainsFunc(layers[i].may, func(p string) bool { return matches(p, dep) }) {
				t.Errorf("%s imports %s, against the layers table (layers_test.go): %s may import %v",
					pkg, dep, layers[i].pkg, layers[i].may)
			}
		}
	}
}
