package playground

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestLayout runs testdata/layout: each command lays out a playground in
// /pg and prints its nodes and their command lines (or the error), with
// free ports handed out from 30001 up.
//
//	layout pd=N kv=N db=N [db.port=P] [haproxy.port=P] [haproxy] [in-use=P,P...] [again] [configs]
//	       [pd.env=K=V,...] [kv.env=K=V,...] [db.env=K=V,...]
//	    configs: each role has a config file, /etc/{pd,kv,db}.toml
//	    ROLE.env: what --pd.env, --kv.env, --db.env add to the role's environment
//	    big-machine: more than two CPUs (PD and stores keep Go's GOMAXPROCS)
//	    again: the last layout's nodes are the previous run's
//	grow role=store|sql count=N
//	    a scale-out of the last layout: the nodes added
//	remove name=NODE
//	    a scale-in: the node leaves the last layout
//	haproxy-config
//	    HAProxy's configuration for the last layout
func TestLayout(t *testing.T) {
	var last []Node
	var lastOptions layoutOptions
	datadriven.RunTest(t, "testdata/layout", func(t *testing.T, d *datadriven.TestData) string {
		switch d.Cmd {
		case "layout":
			o := layoutOptions{logLevel: "warn", oneProc: true}
			inUse := map[int]bool{}
			prev := map[string]Node{}
			for _, arg := range d.CmdArgs {
				v := func() int {
					n, err := strconv.Atoi(arg.Vals[0])
					if err != nil {
						d.Fatalf(t, "%s: %v", arg.Key, err)
					}
					return n
				}
				switch arg.Key {
				case "pd":
					o.pd = v()
				case "kv":
					o.kv = v()
				case "db":
					o.db = v()
				case "db.port":
					o.dbPort = v()
				case "haproxy.port":
					o.haproxyPort = v()
				case "haproxy":
					o.haproxy = true
				case "in-use":
					for _, p := range arg.Vals {
						n, _ := strconv.Atoi(p)
						inUse[n] = true
					}
				case "pd.env", "kv.env", "db.env":
					if o.env == nil {
						o.env = map[Role][]string{}
					}
					role := map[string]Role{"pd.env": RolePD, "kv.env": RoleStore, "db.env": RoleSQL}[arg.Key]
					o.env[role] = append(o.env[role], arg.Vals...)
				case "big-machine":
					o.oneProc = false
				case "configs":
					o.pdConfig, o.kvConfig, o.dbConfig = "/etc/pd.toml", "/etc/kv.toml", "/etc/db.toml"
				case "again":
					for _, n := range last {
						prev[n.Name] = n
					}
				default:
					d.Fatalf(t, "unknown argument %s", arg.Key)
				}
			}
			next := 30000
			p := &ports{inUse: func(port int) bool { return inUse[port] }, taken: map[int]bool{},
				free: func() (int, error) { next++; return next, nil }}
			nodes, err := layout("/pg", o, prev, p)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			last, lastOptions = nodes, o
			return printNodes(nodes)
		case "grow":
			var role string
			var count int
			d.ScanArgs(t, "role", &role)
			d.ScanArgs(t, "count", &count)
			next := 30000
			p := &ports{inUse: func(int) bool { return false }, taken: map[int]bool{},
				free: func() (int, error) { next++; return next, nil }}
			nodes, err := grow("/pg", last, Role(role), count, lastOptions, p)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			last = append(last, nodes...)
			return printNodes(nodes)
		case "remove":
			var name string
			d.ScanArgs(t, "name", &name)
			last = slices.DeleteFunc(last, func(n Node) bool { return n.Name == name })
			return ""
		case "haproxy-config":
			var sql []Node
			var listen string
			for _, n := range last {
				switch n.Role {
				case RoleSQL:
					sql = append(sql, n)
				case RoleHAProxy:
					listen = n.Addr
				}
			}
			return haproxyConfig("test", listen, sql)
		}
		d.Fatalf(t, "unknown command %s", d.Cmd)
		return ""
	})
}

func printNodes(nodes []Node) string {
	var b strings.Builder
	for _, n := range nodes {
		fmt.Fprintf(&b, "%s %s %s", n.Name, n.Role, n.Addr)
		if n.PeerAddr != "" {
			fmt.Fprintf(&b, " peer=%s", n.PeerAddr)
		}
		if n.StatusAddr != "" {
			fmt.Fprintf(&b, " status=%s", n.StatusAddr)
		}
		fmt.Fprintf(&b, " log=%s\n  %s%s\n", n.LogFile, envPrefix(n.Env), strings.Join(n.Args, " "))
	}
	return b.String()
}
