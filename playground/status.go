package playground

import (
	"bufio"
	"context"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The status page: GET / on the control port is one self-contained HTML
// page (no scripts, no external assets) that reloads itself every few
// seconds, for a person who would rather look than read display's table:
// the nodes and their state, each store's regions and leaders as PD
// counts them, and each SQL node's statements per second and
// connections, from its /metrics. A rate is measured between two loads
// of the page, so the first load shows none.

// statusRefresh is how often the page reloads itself.
const statusRefresh = 2 * time.Second

// statusPage is what the template shows.
type statusPage struct {
	Name, Dir string
	Refresh   int
	Nodes     []Node
	Stores    []storeRow
	StoresErr string
	SQL       []sqlRow
	Taken     string
}

type storeRow struct {
	ID      uint64
	Address string
	State   string
	Regions int
	Leaders int
}

type sqlRow struct {
	Name, Addr  string
	QPS         string // "" until two samples
	Connections int64
	Err         string
}

// queryRates remembers each SQL node's last count of statements, to turn
// the next into a rate.
type queryRates struct {
	mu   sync.Mutex
	last map[string]querySample
}

type querySample struct {
	total float64
	at    time.Time
}

// rate records total for node at now and returns the statements per
// second since the last sample ("" if there was none, or the count went
// back: the node restarted).
func (q *queryRates) rate(node string, total float64, now time.Time) string {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.last == nil {
		q.last = map[string]querySample{}
	}
	prev, ok := q.last[node]
	q.last[node] = querySample{total: total, at: now}
	if !ok || total < prev.total || !now.After(prev.at) {
		return ""
	}
	return strconv.FormatFloat((total-prev.total)/now.Sub(prev.at).Seconds(), 'f', 1, 64)
}

// serveStatus answers GET / with the status page.
func (p *playground) serveStatus(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), probeTimeout)
	defer cancel()
	st := p.snapshot()
	page := statusPage{Name: st.Name, Dir: st.Dir, Refresh: int(statusRefresh / time.Second), Nodes: st.Nodes,
		Taken: time.Now().Format(time.DateTime)}
	var wg sync.WaitGroup
	wg.Go(func() { page.Stores, page.StoresErr = storeRows(ctx, st.Nodes) })
	for _, n := range st.Nodes {
		if n.Role != RoleSQL {
			continue
		}
		page.SQL = append(page.SQL, sqlRow{Name: n.Name, Addr: n.Addr})
	}
	for i := range page.SQL {
		row := &page.SQL[i]
		status := nodeByName(st.Nodes, row.Name).StatusAddr
		wg.Go(func() {
			total, conns, err := sqlMetrics(ctx, status)
			if err != nil {
				row.Err = err.Error()
				return
			}
			row.QPS, row.Connections = p.rates.rate(row.Name, total, time.Now()), conns
		})
	}
	wg.Wait()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := statusTemplate.Execute(w, page); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

func nodeByName(nodes []Node, name string) Node {
	for _, n := range nodes {
		if n.Name == name {
			return n
		}
	}
	return Node{}
}

// storeRows asks the first PD member that answers for its stores.
func storeRows(ctx context.Context, nodes []Node) ([]storeRow, string) {
	var last error
	for _, n := range nodes {
		if n.Role != RolePD {
			continue
		}
		var stores []pdStore
		if stores, last = pdStores(ctx, n.Addr); last != nil {
			continue
		}
		var rows []storeRow
		for _, s := range stores {
			rows = append(rows, storeRow{ID: s.Store.ID, Address: s.Store.Address, State: s.Status.StateName,
				Regions: s.Status.RegionCount, Leaders: s.Status.LeaderCount})
		}
		return rows, ""
	}
	if last == nil {
		return nil, "no PD member"
	}
	return nil, last.Error()
}

// sqlMetrics reads a SQL node's statements run (the handle-query
// histogram's counts, all statement types) and open connections from its
// Prometheus text at /metrics.
func sqlMetrics(ctx context.Context, statusAddr string) (queries float64, conns int64, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+statusAddr+"/metrics", nil)
	if err != nil {
		return 0, 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, 0, fmt.Errorf("/metrics: %s", resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		name, rest, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		if i := strings.IndexByte(name, '{'); i >= 0 {
			name = name[:i]
		}
		// A labelled sample's labels may hold spaces: its value is the
		// last field.
		v, err := strconv.ParseFloat(rest[strings.LastIndexByte(rest, ' ')+1:], 64)
		if err != nil {
			continue
		}
		switch name {
		case "tidb_server_handle_query_duration_seconds_count":
			queries += v
		case "tidb_server_connections":
			conns = int64(v)
		}
	}
	return queries, conns, sc.Err()
}

var statusTemplate = template.Must(template.New("status").Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><meta http-equiv="refresh" content="{{.Refresh}}">
<title>Playground {{.Name}}</title>
<style>
body { font-family: sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; margin-bottom: 1.5em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; }
th { background: #f0f0f0; }
td.n { text-align: right; }
.bad { color: #b00; }
</style></head>
<body>
<h1>Playground {{.Name}}</h1>
<p>{{.Dir}} &middot; {{.Taken}} &middot; reloads every {{.Refresh}} s</p>
<h2>SQL nodes</h2>
<table id="sql"><tr><th>Node</th><th>Address</th><th>Statements/s</th><th>Connections</th></tr>
{{range .SQL}}<tr><td>{{.Name}}</td><td>{{.Addr}}</td>{{if .Err}}<td colspan="2" class="bad">{{.Err}}</td>{{else}}<td class="n">{{or .QPS "…"}}</td><td class="n">{{.Connections}}</td>{{end}}</tr>
{{end}}</table>
<h2>Stores</h2>
{{if .StoresErr}}<p class="bad">PD: {{.StoresErr}}</p>{{end}}
<table id="stores"><tr><th>Store</th><th>Address</th><th>State</th><th>Regions</th><th>Leaders</th></tr>
{{range .Stores}}<tr><td>{{.ID}}</td><td>{{.Address}}</td><td>{{.State}}</td><td class="n">{{.Regions}}</td><td class="n">{{.Leaders}}</td></tr>
{{end}}</table>
<h2>Nodes</h2>
<table id="nodes"><tr><th>Node</th><th>Role</th><th>Address</th><th>Status port</th><th>PID</th><th>Status</th></tr>
{{range .Nodes}}<tr><td>{{.Name}}</td><td>{{.Role}}</td><td>{{.Addr}}</td><td>{{.StatusAddr}}</td><td class="n">{{.PID}}</td><td>{{.Status}}</td></tr>
{{end}}</table>
</body></html>
`))
