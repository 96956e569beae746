package e2e

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/basalt-db/basalt/testkit"
)

// TestMariaDBCLI runs testdata/cli_session.sql through the mariadb
// command-line client, as a user at a terminal would, and checks the output
// against testdata/cli_session.want (whose header explains the format). The
// client must exit with status 0 and print no ERROR. It skips when the
// client is not installed.
func TestMariaDBCLI(t *testing.T) {
	client, err := exec.LookPath("mariadb")
	if err != nil {
		t.Skip("the mariadb client is not installed (apt-get install mariadb-client)")
	}
	want, err := readWant("testdata/cli_session.want")
	if err != nil {
		t.Fatal(err)
	}
	script, err := os.Open("testdata/cli_session.sql")
	if err != nil {
		t.Fatal(err)
	}
	defer script.Close()

	srv := testkit.StartTarget(t, loadConfig(t).target)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, client,
		"--no-defaults", "--protocol=TCP", "--skip-ssl", "--connect-timeout=10",
		"-h", srv.Host(), "-P", strconv.Itoa(srv.Port()), "-u", "root",
		"--table", "-vvv")
	cmd.Stdin = script
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Errorf("mariadb: %v", err)
	}
	if stderr.Len() > 0 {
		t.Errorf("mariadb wrote to stderr:\n%s", stderr.Bytes())
	}

	out := normalizeCLI(stdout.String())
	for _, line := range out {
		if strings.HasPrefix(line, "ERROR") {
			t.Errorf("mariadb printed %q", line)
		}
	}
	if miss := matchInOrder(out, want); miss != "" {
		t.Errorf("no line matching %q where expected (after the lines before it in %s)", miss, "testdata/cli_session.want")
	}
	if t.Failed() {
		t.Logf("normalised output:\n%s", strings.Join(out, "\n"))
	}
}

// cliMasks replace the values of the client's output that change from run
// to run, or with versions, by placeholders.
var cliMasks = []struct {
	re   *regexp.Regexp
	repl string
}{
	{regexp.MustCompile(`^\S+ +Ver .*`), "<client version>"},
	{regexp.MustCompile(`^(Connection id:) \d+$`), "$1 <id>"},
	{regexp.MustCompile(`^(Server version:) .*`), "$1 <version>"},
	{regexp.MustCompile(`^(TCP port:) \d+$`), "$1 <port>"},
	{regexp.MustCompile(`^(Uptime:) .*`), "$1 <uptime>"},
	{regexp.MustCompile(`^Threads: .*`), "<statistics>"},
	{regexp.MustCompile(`\(\d+\.\d+ sec\)`), "(<time>)"},
}

var tabs = regexp.MustCompile(`\t+`)

// normalizeCLI splits the client's output into lines, turns each run of
// tabs into one space, drops trailing blanks and masks volatile values.
func normalizeCLI(out string) []string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	for i, line := range lines {
		line = strings.TrimRight(tabs.ReplaceAllString(line, " "), " ")
		for _, m := range cliMasks {
			line = m.re.ReplaceAllString(line, m.repl)
		}
		lines[i] = line
	}
	return lines
}

// wantLine is one line of a .want file: a literal line, or a pattern.
type wantLine struct {
	text string
	re   *regexp.Regexp // nil for a literal line
}

// readWant reads a .want file, skipping blank lines and # comments.
func readWant(path string) ([]wantLine, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var want []wantLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "~ "):
			re, err := regexp.Compile(line[2:])
			if err != nil {
				return nil, err
			}
			want = append(want, wantLine{text: line, re: re})
		default:
			want = append(want, wantLine{text: line})
		}
	}
	return want, sc.Err()
}

// matchInOrder finds the wanted lines in out, each after the previous one,
// and returns the first it cannot find ("" if all are found).
func matchInOrder(out []string, want []wantLine) string {
	i := 0
	for _, w := range want {
		for i < len(out) && !w.matches(out[i]) {
			i++
		}
		if i == len(out) {
			return w.text
		}
		i++
	}
	return ""
}

func (w wantLine) matches(line string) bool {
	if w.re != nil {
		return w.re.MatchString(line)
	}
	return line == w.text
}
