package sqllogictest

import (
	"context"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/basalt-db/basalt/testkit"
)

// The corpus and how TestSLT runs it. Each flag defaults to its
// environment variable, so that `go test ./...` need not know the flags.
var (
	sltFiles = flag.String("slt.files", os.Getenv("BASALT_SLT_FILES"),
		"comma-separated globs of the scripts to run, relative to the corpus; a glob naming a directory selects what is under it (default: all)")
	sltLimit = flag.Int("slt.limit", envInt("BASALT_SLT_LIMIT"),
		"stop each script after this many records (0: no limit)")
	sltFailures = flag.Int("slt.failures", 5,
		"how many failures to describe per script")
	sltTimeout = flag.Duration("slt.timeout", time.Minute,
		"bound on each statement and query")
)

// corpusDir is the corpus, relative to the module root.
const corpusDir = "../shared/slt"

// TestSLT runs the sqllogictest corpus against the target named by
// BASALT_SLT_TARGET (basalt by default, or mariadb) and logs each script's
// counts, its first failures and the totals. Until basalt can pass the
// corpus it fails only when the runner cannot run a script, unless
// BASALT_SLT_STRICT=1, which fails on any failed record. It runs only when
// BASALT_SLT is set, and never with -short. With -v it prints a table of
// the counts at the end:
//
//	BASALT_SLT=1 BASALT_SLT_TARGET=mariadb go test -v -run TestSLT ./sqllogictest -slt.files=select1.test,index/between
func TestSLT(t *testing.T) {
	if testing.Short() {
		t.Skip("the sqllogictest corpus takes minutes; not with -short")
	}
	if os.Getenv("BASALT_SLT") == "" {
		t.Skip("set BASALT_SLT=1 to run the sqllogictest corpus")
	}
	strict := os.Getenv("BASALT_SLT_STRICT") == "1"
	root := filepath.Join(testkit.ModuleRoot(t), corpusDir)
	files, err := corpusFiles(root, *sltFiles)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no script in %s matches %q", root, *sltFiles)
	}

	srv := testkit.StartTarget(t, os.Getenv("BASALT_SLT_TARGET"))
	db := srv.OpenDB(t, "")
	opts := Options{MaxRecords: *sltLimit, MaxFailures: *sltFailures, RecordTimeout: *sltTimeout}
	var total Result
	var summary strings.Builder
	for _, name := range files {
		t.Run(name, func(t *testing.T) {
			res, err := RunFile(context.Background(), db, filepath.Join(root, name), opts)
			total.Passed += res.Passed
			total.Failed += res.Failed
			total.Skipped += res.Skipped
			total.Elapsed += res.Elapsed
			line := fmt.Sprintf("%-36s %s", name, counts(res))
			fmt.Fprintln(&summary, line)
			t.Log(line)
			for _, f := range res.Failures {
				t.Log(f)
			}
			if err != nil {
				t.Fatalf("the runner could not run the script: %v", err)
			}
			if strict && res.Failed > 0 {
				t.Errorf("%d records failed", res.Failed)
			}
		})
	}
	fmt.Fprintf(&summary, "%-36s %s", fmt.Sprintf("total (%d scripts, %s)", len(files), srv.Flavor()), counts(total))
	t.Logf("sqllogictest results:\n%s", summary.String())
}

// counts formats a result's counts and time.
func counts(r Result) string {
	return fmt.Sprintf("%7d passed, %6d failed, %6d skipped  %8s",
		r.Passed, r.Failed, r.Skipped, r.Elapsed.Round(10*time.Millisecond))
}

// corpusFiles lists the *.test scripts under root, as slash-separated paths
// relative to it, that match one of the comma-separated globs (all of them
// if globs is empty). A glob matches a script if it matches its path or a
// directory above it.
func corpusFiles(root, globs string) ([]string, error) {
	var patterns []string
	for g := range strings.SplitSeq(globs, ",") {
		if g = strings.TrimSpace(g); g != "" {
			if _, err := path.Match(g, ""); err != nil {
				return nil, fmt.Errorf("-slt.files %q: %w", g, err)
			}
			patterns = append(patterns, g)
		}
	}
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".test") {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		if rel = filepath.ToSlash(rel); selected(rel, patterns) {
			files = append(files, rel)
		}
		return nil
	})
	return files, err
}

// selected reports whether file, or a directory above it, matches one of
// patterns; no patterns select everything.
func selected(file string, patterns []string) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, pat := range patterns {
		for p := file; p != "."; p = path.Dir(p) {
			if ok, _ := path.Match(pat, p); ok {
				return true
			}
		}
	}
	return false
}

// envInt is the integer value of an environment variable, 0 if unset or
// not a number.
func envInt(name string) int {
	n, _ := strconv.Atoi(os.Getenv(name))
	return n
}
