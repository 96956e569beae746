package metrics

import "github.com/prometheus/client_golang/prometheus"

// queryTotal is TiDB's tidb_server_query_total: the commands of the MySQL
// protocol the server answered, by type (TiDB's names of the command:
// "Query", "StmtExecute", ...) and result ("OK", "Error"). A COM_QUERY
// with several statements counts once.
var queryTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Namespace: "tidb",
	Subsystem: "server",
	Name:      "query_total",
	Help:      "Counter of queries.",
}, []string{"type", "result"})

// commandLabels are TiDB's type labels, by command byte. Commands TiDB
// does not count are not counted.
var commandLabels = [...]string{
	0x00: "Sleep", 0x01: "Quit", 0x02: "InitDB", 0x03: "Query", 0x04: "FieldList",
	0x0e: "Ping", 0x16: "StmtPrepare", 0x17: "StmtExecute", 0x18: "StmtSendLongData",
	0x19: "StmtClose", 0x1a: "StmtReset", 0x1b: "SetOption", 0x1c: "StmtFetch",
}

// queryTotalBy[cmd][ok], nil for a command not counted.
var queryTotalBy [len(commandLabels)][2]prometheus.Counter

func init() {
	for cmd, name := range commandLabels {
		if name != "" {
			queryTotalBy[cmd][0] = queryTotal.WithLabelValues(name, "Error")
			queryTotalBy[cmd][1] = queryTotal.WithLabelValues(name, "OK")
		}
	}
}

// ObserveCommand counts a command (its first byte) that the server
// answered, with success or with an error. It does not allocate.
func ObserveCommand(cmd byte, ok bool) {
	if int(cmd) < len(queryTotalBy) {
		if c := queryTotalBy[cmd][b2i(ok)]; c != nil {
			c.Inc()
		}
	}
}
