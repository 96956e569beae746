package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/basalt-db/basalt/testkit"
)

// TestORMs runs the real SQLAlchemy and Django, on PyMySQL, against
// Basalt: the scripts in testdata/orm create their schema (create_all,
// migrate), write through the ORM, read back with joins, aggregates,
// time zone and JSON lookups, and reflect the schema, each checking what
// it gets and printing OK. The Python is $BASALT_PYTHON, else python3;
// each part skips when its packages are not installed (pip install
// sqlalchemy pymysql django).
func TestORMs(t *testing.T) {
	python := os.Getenv("BASALT_PYTHON")
	if python == "" {
		python = "python3"
	}
	has := func(modules string) bool {
		return exec.Command(python, "-c", "import "+modules).Run() == nil
	}
	sa, dj := has("sqlalchemy, pymysql"), has("django, pymysql")
	if !sa && !dj {
		t.Skip("neither SQLAlchemy nor Django (with PyMySQL) is installed for " + python)
	}
	srv := testkit.StartBasalt(t, testkit.BasaltOptions{})
	admin := srv.OpenDB(t, "")
	port := strconv.Itoa(srv.Port())
	run := func(t *testing.T, env []string, args ...string) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, python, args...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), "OK") {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	t.Run("sqlalchemy", func(t *testing.T) {
		if !sa {
			t.Skip("SQLAlchemy and PyMySQL are not installed")
		}
		mustExec(t, admin, "CREATE DATABASE sa")
		run(t, nil, "testdata/orm/sqlalchemy_app.py", srv.Host(), port, "sa")
	})
	t.Run("django", func(t *testing.T) {
		if !dj {
			t.Skip("Django and PyMySQL are not installed")
		}
		mustExec(t, admin, "CREATE DATABASE dj")
		// The script writes its migrations beside the app: run a copy.
		dir := filepath.Join(t.TempDir(), "djangoapp")
		if err := os.CopyFS(dir, os.DirFS("testdata/orm/djangoapp")); err != nil {
			t.Fatal(err)
		}
		run(t, []string{"DJ_HOST=" + srv.Host(), "DJ_PORT=" + port, "DJ_DB=dj", "PYTHONDONTWRITEBYTECODE=1"},
			filepath.Join(dir, "run.py"))
	})
}
