package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// StmtType is the kind of a statement, the "type" label of the query
// metrics. The SQL layer classifies each statement once (from its AST) and
// passes the StmtType to ObserveQuery.
type StmtType uint8

const (
	StmtSelect StmtType = iota
	StmtInsert          // INSERT and REPLACE
	StmtUpdate
	StmtDelete
	StmtBegin // BEGIN, START TRANSACTION
	StmtCommit
	StmtRollback
	StmtSet  // SET (variables, names, transaction characteristics)
	StmtShow // SHOW, DESCRIBE / EXPLAIN of a table
	StmtDDL  // CREATE, ALTER, DROP, TRUNCATE, RENAME
	StmtOther

	numStmtTypes // the number of StmtTypes; not one itself
)

var stmtTypeNames = [numStmtTypes]string{
	StmtSelect:   "select",
	StmtInsert:   "insert",
	StmtUpdate:   "update",
	StmtDelete:   "delete",
	StmtBegin:    "begin",
	StmtCommit:   "commit",
	StmtRollback: "rollback",
	StmtSet:      "set",
	StmtShow:     "show",
	StmtDDL:      "ddl",
	StmtOther:    "other",
}

// String is the label value: "select", "insert", ...; "other" for a value
// out of range.
func (t StmtType) String() string {
	if t >= numStmtTypes {
		t = StmtOther
	}
	return stmtTypeNames[t]
}

// LatencyBuckets are the upper bounds, in seconds, of the query latency
// histogram: 1-2.5-5 steps from 50µs (a point get served from the cache)
// to 10s.
var LatencyBuckets = []float64{
	50e-6, 100e-6, 250e-6, 500e-6,
	1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 500e-3,
	1, 2.5, 5, 10,
}

var (
	queryTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Subsystem: "server",
		Name:      "query_total",
		Help:      "Statements run, by type.",
	}, []string{"type"})
	queryErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Subsystem: "server",
		Name:      "query_errors_total",
		Help:      "Statements that returned an error, by type.",
	}, []string{"type"})
	queryDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace,
		Subsystem: "server",
		Name:      "query_duration_seconds",
		Help:      "Statement latency, by type.",
		Buckets:   LatencyBuckets,
	}, []string{"type"})
)

// The children of the vectors above, resolved once so that ObserveQuery
// neither hashes labels nor allocates.
var (
	queryTotalBy    [numStmtTypes]prometheus.Counter
	queryErrorsBy   [numStmtTypes]prometheus.Counter
	queryDurationBy [numStmtTypes]prometheus.Observer
)

func init() {
	for t := range numStmtTypes {
		name := t.String()
		queryTotalBy[t] = queryTotal.WithLabelValues(name)
		queryErrorsBy[t] = queryErrors.WithLabelValues(name)
		queryDurationBy[t] = queryDuration.WithLabelValues(name)
	}
}

// ObserveQuery records one statement of type t that took elapsed and
// failed if err is not nil. It does not allocate. A t out of range counts
// as StmtOther.
func ObserveQuery(t StmtType, elapsed time.Duration, err error) {
	if t >= numStmtTypes {
		t = StmtOther
	}
	queryTotalBy[t].Inc()
	queryDurationBy[t].Observe(elapsed.Seconds())
	if err != nil {
		queryErrorsBy[t].Inc()
	}
}
