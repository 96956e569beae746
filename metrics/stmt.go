package metrics

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// StmtType is the kind of a statement, the sql_type label of
// tidb_server_handle_query_duration_seconds. The SQL layer classifies each
// statement once (from its AST) and passes the StmtType to ObserveQuery.
// The label values are TiDB's (its ast.GetStmtLabel): "Select",
// "CreateTable", ...; a statement TiDB names but Basalt does not tell
// apart counts as "other", as in TiDB.
type StmtType uint8

const (
	StmtSelect StmtType = iota
	StmtInsert          // INSERT and REPLACE
	StmtUpdate
	StmtDelete
	StmtLoadData
	StmtBegin // BEGIN, START TRANSACTION
	StmtCommit
	StmtRollback
	StmtSet // SET (variables, names, transaction characteristics)
	StmtShow
	StmtUse
	StmtExplain // EXPLAIN [ANALYZE] of a statement
	StmtPrepare
	StmtExecute
	StmtDeallocate
	StmtCreateDatabase
	StmtDropDatabase
	StmtCreateTable
	StmtDropTable
	StmtCreateView
	StmtTruncateTable
	StmtCreateIndex
	StmtDropIndex
	StmtAlterTable
	StmtRenameTable
	StmtAnalyzeTable
	StmtOther

	numStmtTypes // the number of StmtTypes; not one itself
)

var stmtTypeNames = [numStmtTypes]string{
	StmtSelect:         "Select",
	StmtInsert:         "Insert",
	StmtUpdate:         "Update",
	StmtDelete:         "Delete",
	StmtLoadData:       "LoadData",
	StmtBegin:          "Begin",
	StmtCommit:         "Commit",
	StmtRollback:       "Rollback",
	StmtSet:            "Set",
	StmtShow:           "Show",
	StmtUse:            "Use",
	StmtExplain:        "Explain",
	StmtPrepare:        "Prepare",
	StmtExecute:        "Execute",
	StmtDeallocate:     "Deallocate",
	StmtCreateDatabase: "CreateDatabase",
	StmtDropDatabase:   "DropDatabase",
	StmtCreateTable:    "CreateTable",
	StmtDropTable:      "DropTable",
	StmtCreateView:     "CreateView",
	StmtTruncateTable:  "TruncateTable",
	StmtCreateIndex:    "CreateIndex",
	StmtDropIndex:      "DropIndex",
	StmtAlterTable:     "AlterTable",
	StmtRenameTable:    "RenameTable",
	StmtAnalyzeTable:   "AnalyzeTable",
	StmtOther:          "other",
}

// String is the label value: "Select", "Insert", ...; "other" for a value
// out of range.
func (t StmtType) String() string {
	if t >= numStmtTypes {
		t = StmtOther
	}
	return stmtTypeNames[t]
}

// LatencyBuckets are the upper bounds, in seconds, of the query latency
// histogram: 1-2.5-5 steps from 50µs (a point get served from the cache)
// to 10s. TiDB's start at 0.5 ms and double, too coarse for statements
// that take tens of microseconds; PromQL's histogram_quantile reads
// either.
var LatencyBuckets = []float64{
	50e-6, 100e-6, 250e-6, 500e-6,
	1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 500e-3,
	1, 2.5, 5, 10,
}

var (
	queryDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "tidb",
		Subsystem: "server",
		Name:      "handle_query_duration_seconds",
		Help:      "Bucketed histogram of processing time (s) of handled queries, by statement type.",
		Buckets:   LatencyBuckets,
	}, []string{"sql_type"})
	executeErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "tidb",
		Subsystem: "server",
		Name:      "execute_error_total",
		Help:      "Counter of execute errors, by MySQL error code.",
	}, []string{"type"})
	planCache = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "tidb",
		Subsystem: "server",
		Name:      "plan_cache_total",
		Help:      "Counter of query using plan cache.",
	}, []string{"type"})
	planCacheMiss = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "tidb",
		Subsystem: "server",
		Name:      "plan_cache_miss_total",
		Help:      "Counter of plan cache miss.",
	}, []string{"type"})
	planCacheHits   = planCache.WithLabelValues("prepare")
	planCacheMisses = planCacheMiss.WithLabelValues("prepare")
)

// queryDurationBy holds the children of queryDuration, resolved once so
// that ObserveQuery neither hashes labels nor allocates.
var queryDurationBy [numStmtTypes]prometheus.Observer

func init() {
	for t := range numStmtTypes {
		queryDurationBy[t] = queryDuration.WithLabelValues(t.String())
	}
}

// ObserveQuery records one statement of type t that took elapsed. It does
// not allocate. A t out of range counts as StmtOther.
func ObserveQuery(t StmtType, elapsed time.Duration) {
	if t >= numStmtTypes {
		t = StmtOther
	}
	queryDurationBy[t].Observe(elapsed.Seconds())
}

// ExecuteError counts a statement that failed with MySQL error code (0
// for an error without one: label "unknown"). TiDB's label is its error
// class and code ("kv:9007"); Basalt's is the MySQL code alone ("9007"),
// which TiDB's carries too. Errors are the slow path: this formats the
// label.
func ExecuteError(code uint16) {
	label := "unknown"
	if code != 0 {
		label = strconv.Itoa(int(code))
	}
	executeErrors.WithLabelValues(label).Inc()
}

// PlanCacheHit counts a prepared statement whose plan came from the plan
// cache; PlanCacheMiss one that was planned again with the cache on.
func PlanCacheHit()  { planCacheHits.Inc() }
func PlanCacheMiss() { planCacheMisses.Inc() }
