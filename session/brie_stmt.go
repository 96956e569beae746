package session

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/basalt-db/basalt/brie"
	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/planner"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// BACKUP DATABASE and RESTORE DATABASE run brie (TiDB's BRIE statements)
// in the statement's own connection, which waits for the job to end; the
// jobs of the server are listed by SHOW BACKUPS and SHOW RESTORES.
// Failures are TiDB's 8124 "Backup failed: ..." and 8125 "Restore
// failed: ...".

const (
	errBackupFailed  = 8124
	errRestoreFailed = 8125
)

func (s *Session) brieStmt(ctx context.Context, x *ast.BRIEStmt, _ stmtArgs) (Result, error) {
	code, verb := uint16(errBackupFailed), "Backup"
	if x.Kind == ast.BRIEKindRestore {
		code, verb = errRestoreFailed, "Restore"
	}
	fail := func(err error) error {
		return &errno.Error{Code: code, State: "HY000", Msg: fmt.Sprintf("%s failed: %v", verb, err)}
	}
	if x.Kind != ast.BRIEKindBackup && x.Kind != ast.BRIEKindRestore {
		return Result{}, errno.New(errno.ErNotSupportedYet, "This version of Basalt doesn't yet support '%s'", x.Kind)
	}
	if len(x.Tables) > 0 {
		return Result{}, errno.New(errno.ErNotSupportedYet, "This version of Basalt doesn't yet support '%s TABLE': back up or restore whole databases", x.Kind)
	}
	if len(x.Options) > 0 {
		return Result{}, errno.New(errno.ErNotSupportedYet, "This version of Basalt doesn't yet support '%s' options", x.Kind)
	}
	if s.d.sync != nil {
		return Result{}, errno.New(errno.ErNotSupportedYet, "This version of Basalt doesn't yet support '%s' on a cluster: only on the embedded store", x.Kind)
	}
	if s.txn != nil {
		// As DDL does, BRIE ends the open transaction first.
		if err := s.commit(ctx); err != nil {
			return Result{}, err
		}
	}
	dir, err := brie.LocalPath(x.Storage)
	if err != nil {
		return Result{}, fail(err)
	}
	var dbs []string // nil: every database
	if len(x.Schemas) > 0 {
		dbs = x.Schemas
	}
	job := s.d.brie.start(x.Kind, x.Storage, s.ConnectionID())
	var sum brie.Summary
	progress := func(done, total int64) { s.d.brie.progress(job, done, total) }
	if x.Kind == ast.BRIEKindBackup {
		sum, err = brie.Backup(ctx, s.d.store, dbs, dir, progress)
	} else {
		sum, err = brie.Restore(ctx, s.d.store, s.d.catalog, dbs, dir, progress)
	}
	s.d.brie.finish(job, err)
	if err != nil {
		return Result{}, fail(err)
	}
	row := []types.Datum{types.NewString(x.Storage), types.NewUint(uint64(sum.Size)), types.NewUint(sum.BackupTS)}
	fields := briefields("Destination", "Size", "BackupTS")
	if x.Kind == ast.BRIEKindRestore {
		ts, err := s.d.store.CurrentTS()
		if err != nil {
			return Result{}, fail(err)
		}
		row = append(row, types.NewUint(ts))
		fields = append(fields, briefields("Cluster TS")...)
	}
	row = append(row, datetime(job.queued), datetime(job.started))
	fields = append(fields, dateFields("Queue Time", "Execution Time")...)
	return Result{Rows: &staticRows{fields: fields, data: [][]types.Datum{row}}}, nil
}

// briefields are BRIE's result columns: Destination a string, the rest
// BIGINT UNSIGNED.
func briefields(names ...string) []planner.ResultField {
	out := textFields(names...)
	for i := range out {
		if out[i].Name != "Destination" {
			out[i].Type = intField(true)
			out[i].Type.Flag |= mysql.UnsignedFlag
		}
	}
	return out
}

func dateFields(names ...string) []planner.ResultField {
	out := textFields(names...)
	for i := range out {
		out[i].Type = types.FieldType{Tp: mysql.TypeDatetime, Flen: 19}
	}
	return out
}

func datetime(t time.Time) types.Datum {
	if t.IsZero() {
		return types.Datum{}
	}
	return types.NewTime(types.FromGoTime(t.Local()), types.TimeDatetime, 0)
}

// brieJob is one BACKUP or RESTORE of this server, running or done.
type brieJob struct {
	id                        uint64
	kind                      ast.BRIEKind
	dest                      string
	conn                      uint64
	queued, started, finished time.Time
	err                       error
	// percent done, as SHOW BACKUPS's Progress
	percent float64
}

// brieJobs lists the server's BRIE jobs since it started.
type brieJobs struct {
	mu   sync.Mutex
	jobs []*brieJob
}

func (b *brieJobs) start(kind ast.BRIEKind, dest string, conn uint64) *brieJob {
	now := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	j := &brieJob{id: uint64(len(b.jobs) + 1), kind: kind, dest: dest, conn: conn, queued: now, started: now}
	b.jobs = append(b.jobs, j)
	return j
}

func (b *brieJobs) progress(j *brieJob, done, total int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if total > 0 {
		j.percent = 100 * float64(done) / float64(total)
	}
}

func (b *brieJobs) finish(j *brieJob, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	j.finished, j.err = time.Now(), err
}

// showBRIE answers SHOW BACKUPS and SHOW RESTORES with TiDB's columns.
func (s *Session) showBRIE(kind ast.BRIEKind) (Result, error) {
	fields := textFields("Id", "Destination", "State", "Progress", "Queue_time", "Execution_time", "Finish_time", "Connection", "Message")
	fields[0].Type = intField(true)
	fields[3].Type = types.FieldType{Tp: mysql.TypeDouble, Flen: 22, Decimal: 1}
	for i := 4; i <= 6; i++ {
		fields[i].Type = types.FieldType{Tp: mysql.TypeDatetime, Flen: 19}
	}
	fields[7].Type = intField(true)
	fields[8].Type.Flen = 65535
	b := &s.d.brie
	b.mu.Lock()
	defer b.mu.Unlock()
	var data [][]types.Datum
	for _, j := range b.jobs {
		if j.kind != kind {
			continue
		}
		state, progress, msg := "Running", j.percent, types.Datum{}
		switch {
		case j.finished.IsZero():
		case j.err != nil:
			state, msg = "Failed", types.NewString(j.err.Error())
		default:
			state, progress = "Finished", 100
		}
		data = append(data, []types.Datum{types.NewInt(int64(j.id)), types.NewString(j.dest), types.NewString(state),
			types.NewFloat(progress), datetime(j.queued), datetime(j.started), datetime(j.finished),
			types.NewInt(int64(j.conn)), msg})
	}
	return Result{Rows: &staticRows{fields: fields, data: data}}, nil
}

// errBRIEDenied is what an account without SUPER gets from BACKUP or
// RESTORE (TiDB also accepts its dynamic BACKUP_ADMIN / RESTORE_ADMIN,
// which Basalt does not have).
func errBRIEDenied(x *ast.BRIEStmt) error {
	if x.Kind == ast.BRIEKindRestore {
		return errSpecificDenied("SUPER or RESTORE_ADMIN")
	}
	return errSpecificDenied("SUPER or BACKUP_ADMIN")
}
