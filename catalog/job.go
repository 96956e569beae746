package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/basalt-db/basalt/kv"
)

// A DDL job is one schema-change statement queued for the cluster's DDL
// owner (package ddljob), as TiDB's: the node that receives the statement
// enqueues it and waits; the owner runs the jobs one at a time, in id
// order. Its record:
//
//	m DDLJob {id}      → Job (JSON), while queueing or running
//	m DDLHistory {id}  → Job (JSON), once it ended (synced, rollback
//	                     done, cancelled)
//
// The owner rewrites the record in the same transaction as each schema
// step of the job (WithStepHook), so that the record's SchemaState and
// its Dropped lists are exactly what the stored schema reached: a new
// owner that finds the job running after its runner died knows what to
// finish or take back.
type Job struct {
	ID int64 `json:"id"`
	// Type is TiDB's job type ("add index", "drop column", "create table",
	// ...); DBName, TableName what the statement names.
	Type      string `json:"type"`
	DBName    string `json:"db_name"`
	TableName string `json:"table_name"`
	SchemaID  int64  `json:"schema_id"`
	TableID   int64  `json:"table_id"`
	// Query is the statement's text; CurrentDB and Vars the session
	// state it runs with (the current database; sql_mode,
	// foreign_key_checks, time_zone and the other variables a schema
	// change reads).
	Query     string            `json:"query"`
	CurrentDB string            `json:"current_db"`
	Vars      map[string]string `json:"vars,omitempty"`
	// State is TiDB's job state (JobQueueing ...); SchemaState the state
	// of the object it changes that the stored schema reached.
	State       string `json:"state"`
	SchemaState string `json:"schema_state"`
	// Runner is the node that runs it (schemasync's node id).
	Runner     string    `json:"runner,omitempty"`
	CreateTime time.Time `json:"create_time"`
	StartTime  time.Time `json:"start_time,omitzero"`
	EndTime    time.Time `json:"end_time,omitzero"`
	// What the statement returned to its client.
	RowCount uint64     `json:"row_count"`
	Info     string     `json:"info,omitempty"`
	Error    *JobError  `json:"error,omitempty"`
	Warnings []JobError `json:"warnings,omitempty"`
	// DroppedTables and DroppedIndexes ({table id, index id}) are what
	// the job's committed steps took out of the schema; their data is
	// deleted after the step, and again by a recovery.
	DroppedTables  []int64    `json:"dropped_tables,omitempty"`
	DroppedIndexes [][2]int64 `json:"dropped_indexes,omitempty"`
	// Recovered says a new owner finished or took back what the job
	// left when its runner died.
	Recovered bool `json:"recovered,omitempty"`
	// Cancelling says ADMIN CANCEL DDL JOBS asked the running job to
	// stop: its runner fails its next step and takes it back.
	Cancelling bool `json:"cancelling,omitempty"`
}

// JobError is a MySQL error or warning of a job, as its client gets it.
type JobError struct {
	Code  uint16 `json:"code"`
	State string `json:"state,omitempty"`
	Msg   string `json:"msg"`
	Note  bool   `json:"note,omitempty"`
}

// TiDB's job states (ADMIN SHOW DDL JOBS's STATE).
const (
	JobQueueing     = "queueing"
	JobRunning      = "running"
	JobSynced       = "synced"
	JobRollbackDone = "rollback done"
	JobCancelled    = "cancelled"
)

// Done reports whether the job has ended.
func (j *Job) Done() bool {
	return j.State == JobSynced || j.State == JobRollbackDone || j.State == JobCancelled
}

// PutJob writes a job's record in the queue.
func (m *Meta) PutJob(j *Job) error { return m.putJSON(metaKey("DDLJob", j.ID), j) }

// FinishJob moves a job from the queue to the history.
func (m *Meta) FinishJob(j *Job) error {
	if err := m.txn.Delete(metaKey("DDLJob", j.ID)); err != nil {
		return err
	}
	return m.putJSON(metaKey("DDLHistory", j.ID), j)
}

// Jobs lists the queued and running jobs, oldest first.
func (m *Meta) Jobs() ([]*Job, error) { return scanJSON[Job](m.txn, metaKey("DDLJob")) }

// Job reads a job from the queue or, once it ended, the history; nil if
// neither holds it.
func (m *Meta) Job(id int64) (*Job, error) {
	for _, k := range [][]byte{metaKey("DDLJob", id), metaKey("DDLHistory", id)} {
		v, err := m.txn.Get(context.Background(), k)
		if errors.Is(err, kv.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		j := new(Job)
		return j, json.Unmarshal(v, j)
	}
	return nil, nil
}

// History lists the last n ended jobs, newest first.
func (m *Meta) History(n int) ([]*Job, error) {
	prefix := metaKey("DDLHistory")
	it, err := m.txn.IterReverse(prefix, kv.PrefixEnd(prefix))
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []*Job
	for it.Valid() && len(out) < n {
		j := new(Job)
		if err := json.Unmarshal(it.Value(), j); err != nil {
			return nil, err
		}
		out = append(out, j)
		if err := it.Next(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// StepHook is called by each schema step of a job (RunDDL, RunDDLLocked)
// in the step's transaction, after the step changed is from base, before
// the commit: the job's record is rewritten with the step.
type StepHook func(m *Meta, base, is *InfoSchema) error

type stepHookKey struct{}

// WithStepHook returns ctx with h called by every schema step run under
// it.
func WithStepHook(ctx context.Context, h StepHook) context.Context {
	return context.WithValue(ctx, stepHookKey{}, h)
}

type lockHeldKey struct{}

// WithLockHeld marks ctx as run by the holder of the schema-change lock
// (LockDDL): the DDL owner holds it for a whole job, and the statement's
// own LockDDL under ctx takes nothing (it reloads the schema).
func WithLockHeld(ctx context.Context) context.Context {
	return context.WithValue(ctx, lockHeldKey{}, true)
}

// NewJobID hands out the next job id (a counter of its own, so that
// queueing a job never conflicts with a schema change's ids).
func (m *Meta) NewJobID() (int64, error) {
	k := metaKey("DDLJobID")
	v, err := m.getInt(k)
	if err != nil {
		return 0, err
	}
	return v + 1, m.setInt(k, v+1)
}
