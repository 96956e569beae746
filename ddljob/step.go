package ddljob

import (
	"errors"
	"fmt"
	"strings"

	"github.com/basalt-db/basalt/catalog"
)

// ErrTakenOver fails a step of a job that another owner took over.
var ErrTakenOver = errors.New("ddljob: the DDL job was taken over by another owner")

// stepHook returns the hook that rewrites job j's record in each schema
// step's transaction: the schema state the step reached, the table and
// database it concerns, and what it took out of the schema (whose data a
// recovery deletes again).
func (o *Owner) stepHook(j *catalog.Job) catalog.StepHook {
	return func(m *catalog.Meta, base, is *catalog.InfoSchema) error {
		// The fence: a runner whose job another owner took over (it lost
		// the lock, and came back) commits no more steps of it. The read
		// and the write of the record make a concurrent takeover conflict.
		cur, err := m.Job(j.ID)
		if err != nil {
			return err
		}
		if cur == nil || cur.State != catalog.JobRunning || cur.Runner != j.Runner {
			return fmt.Errorf("%w: job %d", ErrTakenOver, j.ID)
		}
		// A cancelled job's context ends (watchCancel), which stops its
		// forward steps; the steps that take it back must commit.
		j.Cancelling = cur.Cancelling
		for _, db := range base.DBs() {
			for _, t := range base.Tables(db.Name) {
				nt := is.TableByID(t.ID)
				if nt == nil {
					if t.View == nil {
						j.DroppedTables = appendNew(j.DroppedTables, t.ID)
					}
					continue
				}
				for _, ix := range t.Indexes {
					if findIndex(nt, ix.ID) == nil {
						j.DroppedIndexes = appendNewPair(j.DroppedIndexes, [2]int64{t.ID, ix.ID})
					}
				}
			}
		}
		j.SchemaState = schemaState(j, is)
		return m.PutJob(j)
	}
}

// schemaState is TiDB's SCHEMA_STATE of job j in schema is: the least
// advanced state (farthest from public) of an object of its table, else
// "public"; "none" once its table or database is gone.
func schemaState(j *catalog.Job, is *catalog.InfoSchema) string {
	if j.TableName == "" {
		if is.DB(j.DBName) == nil {
			return "none"
		}
		return "public"
	}
	t := is.Table(j.DBName, j.TableName)
	if t == nil && j.TableID != 0 {
		t = is.TableByID(j.TableID)
	}
	if t == nil {
		return "none"
	}
	j.TableID, j.SchemaID = t.ID, t.DBID
	st := catalog.StatePublic
	for _, c := range t.Hidden {
		st = max(st, c.State)
	}
	for _, ix := range t.Indexes {
		st = max(st, ix.State)
	}
	return stateName(st)
}

func stateName(st catalog.SchemaState) string {
	switch st {
	case catalog.StateDeleteOnly:
		return "delete only"
	case catalog.StateWriteOnly:
		return "write only"
	case catalog.StatePublic:
		return "public"
	}
	return strings.ToLower(st.String())
}

func findIndex(t *catalog.TableInfo, id int64) *catalog.IndexInfo {
	for _, ix := range t.Indexes {
		if ix.ID == id {
			return ix
		}
	}
	return nil
}

func appendNew(s []int64, v int64) []int64 {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}

func appendNewPair(s [][2]int64, v [2]int64) [][2]int64 {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}
