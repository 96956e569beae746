package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
)

// sysbenchConn is how sysbench reaches a server.
type sysbenchConn struct {
	Host, Port, User, Password string
	// DB is the database sysbench works in; empty means sbtest.
	DB string
}

// sysbenchArgs returns the command line of "sysbench script [args] command"
// against conn's database (sbtest unless conn.DB says otherwise).
func sysbenchArgs(conn sysbenchConn, script, command string, args ...string) []string {
	db := conn.DB
	if db == "" {
		db = "sbtest"
	}
	out := []string{
		script,
		"--db-driver=mysql",
		"--mysql-host=" + conn.Host,
		"--mysql-port=" + conn.Port,
		"--mysql-user=" + conn.User,
		"--mysql-password=" + conn.Password,
		"--mysql-db=" + db,
	}
	return append(append(out, args...), command)
}

// commandString quotes a command line for results and reports, with the
// password masked.
func commandString(bin string, args []string) string {
	parts := []string{bin}
	for _, a := range args {
		if strings.HasPrefix(a, "--mysql-password=") && a != "--mysql-password=" {
			a = "--mysql-password=***"
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}

// runSysbench runs sysbench with args, calls onInterval (if not nil) for
// each interval line as it is printed, and returns the whole output. The
// error is non-nil if sysbench exits with a non-zero status or prints a
// FATAL line, and quotes those lines or the end of the output.
func runSysbench(ctx context.Context, args []string, onInterval func(Interval)) (string, error) {
	bin, err := exec.LookPath("sysbench")
	if err != nil {
		return "", errors.New("sysbench is not installed (apt-get install sysbench)")
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		return "", err
	}
	var out bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			line := sc.Text()
			out.WriteString(line)
			out.WriteByte('\n')
			if iv, ok := parseInterval(line); ok && onInterval != nil {
				onInterval(iv)
			}
		}
		io.Copy(io.Discard, pr)
	}()
	runErr := cmd.Wait()
	pw.Close()
	<-done
	text := out.String()
	fatal := FatalLines(text)
	name := strings.Join(args[:1], "")
	switch {
	case ctx.Err() != nil:
		return text, fmt.Errorf("sysbench %s: %w", name, ctx.Err())
	case runErr != nil && len(fatal) == 0:
		return text, fmt.Errorf("sysbench %s: %v; its output ends:\n%s", name, runErr, Tail(text, 20))
	case runErr != nil:
		return text, fmt.Errorf("sysbench %s: %v\n%s", name, runErr, strings.Join(fatal, "\n"))
	case len(fatal) > 0:
		return text, fmt.Errorf("sysbench %s reported errors:\n%s", name, strings.Join(fatal, "\n"))
	}
	return text, nil
}

// sysbenchVersion returns the first line of sysbench --version.
func sysbenchVersion() string {
	out, err := exec.Command("sysbench", "--version").Output()
	if err != nil {
		return ""
	}
	return firstLine(string(out))
}

var intervalLine = regexp.MustCompile(`^\[ *([\d.]+)s \] thds: (\d+) tps: ([\d.]+) qps: ([\d.]+) \(r/w/o: ([\d.]+)/([\d.]+)/([\d.]+)\) lat \(ms,95%\): ([\d.]+) err/s:? ([\d.]+) reconn/s:? ([\d.]+)`)

// ParseIntervals reads every --report-interval line of sysbench's output.
func ParseIntervals(out string) []Interval {
	var iv []Interval
	for _, line := range strings.Split(out, "\n") {
		if i, ok := parseInterval(line); ok {
			iv = append(iv, i)
		}
	}
	return iv
}

// parseInterval reads one line of sysbench 1.0's --report-interval output.
func parseInterval(line string) (Interval, bool) {
	m := intervalLine.FindStringSubmatch(line)
	if m == nil {
		return Interval{}, false
	}
	f := func(i int) float64 {
		v, _ := strconv.ParseFloat(m[i], 64)
		return v
	}
	threads, _ := strconv.Atoi(m[2])
	return Interval{
		Second: f(1), Threads: threads, TPS: f(3), QPS: f(4),
		ReadQPS: f(5), WriteQPS: f(6), OtherQPS: f(7),
		P95Ms: f(8), ErrPerSec: f(9), ReconnPerSec: f(10),
	}, true
}

var (
	summaryTransactions = regexp.MustCompile(`(?m)^\s*transactions:\s+(\d+)\s+\(([\d.]+) per sec\.\)`)
	summaryQueries      = regexp.MustCompile(`(?m)^\s*queries:\s+(\d+)\s+\(([\d.]+) per sec\.\)`)
	summaryIgnored      = regexp.MustCompile(`(?m)^\s*ignored errors:\s+(\d+)`)
	summaryReconnects   = regexp.MustCompile(`(?m)^\s*reconnects:\s+(\d+)`)
	summaryTime         = regexp.MustCompile(`(?m)^\s*total time:\s+([\d.]+)s`)
	summaryAvg          = regexp.MustCompile(`(?m)^\s*avg:\s+([\d.]+)`)
	summaryMax          = regexp.MustCompile(`(?m)^\s*max:\s+([\d.]+)`)
	summaryP95          = regexp.MustCompile(`(?m)^\s*95th percentile:\s+([\d.]+)`)
)

// ParseSummary reads the final report of a sysbench 1.0 run ("SQL
// statistics", "General statistics", "Latency (ms)"). ok is false when the
// output has no summary.
func ParseSummary(out string) (s Summary, ok bool) {
	m := summaryTransactions.FindStringSubmatch(out)
	if m == nil {
		return s, false
	}
	s.Transactions, _ = strconv.ParseInt(m[1], 10, 64)
	s.TPS, _ = strconv.ParseFloat(m[2], 64)
	float := func(re *regexp.Regexp, dst *float64) {
		if m := re.FindStringSubmatch(out); m != nil {
			*dst, _ = strconv.ParseFloat(m[1], 64)
		}
	}
	integer := func(re *regexp.Regexp, dst *int64) {
		if m := re.FindStringSubmatch(out); m != nil {
			*dst, _ = strconv.ParseInt(m[1], 10, 64)
		}
	}
	if m := summaryQueries.FindStringSubmatch(out); m != nil {
		s.Queries, _ = strconv.ParseInt(m[1], 10, 64)
		s.QPS, _ = strconv.ParseFloat(m[2], 64)
	}
	integer(summaryIgnored, &s.Errors)
	integer(summaryReconnects, &s.Reconnects)
	float(summaryTime, &s.Seconds)
	float(summaryAvg, &s.AvgLatencyMs)
	float(summaryMax, &s.MaxLatencyMs)
	float(summaryP95, &s.P95LatencyMs)
	return s, true
}

// FatalLines returns sysbench's FATAL lines, each cut to a readable
// length (a failed bulk INSERT is quoted whole), at most ten of them.
func FatalLines(out string) []string {
	const maxLines, maxLen = 10, 400
	var lines []string
	for _, line := range strings.Split(out, "\n") {
		i := strings.Index(line, "FATAL:")
		if i < 0 {
			continue
		}
		if line = line[i:]; len(line) > maxLen {
			line = line[:maxLen] + "..."
		}
		if lines = append(lines, line); len(lines) == maxLines {
			break
		}
	}
	return lines
}

// Tail returns the last n lines of out.
func Tail(out string, n int) string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(s)
}
