package session

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/ddljob"
	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// ADMIN SHOW DDL JOBS [n] [WHERE ...] and ADMIN SHOW DDL JOB QUERIES id,
// ..., as TiDB's: the queued and running jobs, then the last n (10) that
// ended, newest first; ADMIN CANCEL DDL JOBS id, .... On an embedded
// store, whose statements are not queued, there are no jobs.

// ddlJobColumns are TiDB's columns of ADMIN SHOW DDL JOBS.
var ddlJobColumns = []string{"JOB_ID", "DB_NAME", "TABLE_NAME", "JOB_TYPE", "SCHEMA_STATE", "SCHEMA_ID",
	"TABLE_ID", "ROW_COUNT", "CREATE_TIME", "START_TIME", "END_TIME", "STATE"}

func (s *Session) showDDLJobs(ctx context.Context, x *ast.AdminStmt) (Result, error) {
	n := int(x.JobNumber)
	if n <= 0 {
		n = 10
	}
	queue, err := ddljob.Queue(s.d.store)
	if err != nil {
		return Result{}, err
	}
	hist, err := ddljob.History(s.d.store, n)
	if err != nil {
		return Result{}, err
	}
	sort.Slice(queue, func(i, k int) bool { return queue[i].ID > queue[k].ID })
	fields := textFields(ddlJobColumns...)
	for _, i := range []int{0, 5, 6, 7} {
		fields[i].Type = intField(true)
	}
	for _, i := range []int{8, 9, 10} {
		fields[i] = dateFields(ddlJobColumns[i])[0]
	}
	var data [][]types.Datum
	for _, j := range append(queue, hist...) {
		data = append(data, jobRow(j))
	}
	if data, err = s.showWhere(ctx, x.Where, fields, data); err != nil {
		return Result{}, err
	}
	return Result{Rows: &staticRows{fields: fields, data: data}}, nil
}

func jobRow(j *catalog.Job) []types.Datum {
	schemaState := j.SchemaState
	if schemaState == "" {
		schemaState = "none"
	}
	return []types.Datum{types.NewInt(j.ID), types.NewString(j.DBName), types.NewString(j.TableName),
		types.NewString(j.Type), types.NewString(schemaState), types.NewInt(j.SchemaID), types.NewInt(j.TableID),
		types.NewInt(int64(j.RowCount)), datetime(j.CreateTime), datetime(j.StartTime), datetime(j.EndTime),
		types.NewString(j.State)}
}

// showDDLJobQueries lists the statements of the given jobs.
func (s *Session) showDDLJobQueries(x *ast.AdminStmt) (Result, error) {
	txn, err := s.d.store.Begin(kv.TxnOptions{Mode: kv.Optimistic})
	if err != nil {
		return Result{}, err
	}
	defer txn.Rollback()
	m := catalog.NewMeta(txn)
	var data [][]types.Datum
	for _, id := range x.JobIDs {
		j, err := m.Job(id)
		if err != nil {
			return Result{}, err
		}
		if j != nil {
			data = append(data, []types.Datum{types.NewString(j.Query)})
		}
	}
	return Result{Rows: &staticRows{fields: textFields("QUERY"), data: data}}, nil
}

// adminShowDDL is ADMIN SHOW DDL: the schema version, the owner (this
// node or another) and the running job.
func (s *Session) adminShowDDL(ctx context.Context) (Result, error) {
	if s.d.jobs == nil {
		return Result{}, errno.New(errno.ErNotSupportedYet, "ADMIN SHOW DDL needs a cluster (--store tikv)")
	}
	queue, err := ddljob.Queue(s.d.store)
	if err != nil {
		return Result{}, err
	}
	running, query := "", ""
	for _, j := range queue {
		if j.State == catalog.JobRunning {
			running, query = j.Type+" "+j.DBName+"."+j.TableName, j.Query
		}
	}
	owner, err := s.d.jobs.OwnerID(ctx)
	if err != nil {
		return Result{}, err
	}
	// OWNER_ADDRESS is TiDB's column; the election records only the
	// owner's node id (schemasync's, host-pid-random), so it is empty.
	row := []types.Datum{types.NewInt(s.d.catalog.InfoSchema().Version), types.NewString(owner), types.NewString(""),
		types.NewString(running), types.NewString(s.d.sync.ID()), types.NewString(query)}
	fields := textFields("SCHEMA_VER", "OWNER_ID", "OWNER_ADDRESS", "RUNNING_JOBS", "SELF_ID", "QUERY")
	fields[0].Type = intField(true)
	return Result{Rows: &staticRows{fields: fields, data: [][]types.Datum{row}}}, nil
}

// cancelDDLJobs is ADMIN CANCEL DDL JOBS: a row per job, "successful" or
// TiDB's error.
func (s *Session) cancelDDLJobs(ctx context.Context, x *ast.AdminStmt) (Result, error) {
	var data [][]types.Datum
	for _, id := range x.JobIDs {
		res := "successful"
		err := ddljob.ErrJobNotFound
		if s.d.jobs != nil {
			err = s.d.jobs.Cancel(ctx, id)
		}
		switch {
		case errors.Is(err, ddljob.ErrJobNotFound):
			res = fmt.Sprintf("error: [ddl:8224]DDL Job:%d not found", id)
		case errors.Is(err, ddljob.ErrJobFinished):
			res = fmt.Sprintf("error: [ddl:8225]This job:%d is finished, so can't be cancelled", id)
		case err != nil:
			return Result{}, err
		}
		data = append(data, []types.Datum{types.NewInt(id), types.NewString(res)})
	}
	fields := textFields("JOB_ID", "RESULT")
	fields[0].Type = intField(true)
	return Result{Rows: &staticRows{fields: fields, data: data}}, nil
}
