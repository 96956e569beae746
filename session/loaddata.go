package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/executor"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/metrics"
	"github.com/basalt-db/basalt/planner"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// LOAD DATA [LOCAL] INFILE: the input is the client's file, streamed
// through the protocol (LocalFileOpener; local_infile and the client's
// CLIENT_LOCAL_FILES must both allow it, else 3948), or a file the server
// reads (the FILE privilege, privcheck.go, and secure_file_priv, else
// 1290). Either is read as a stream (executor.LoadReader): memory holds a
// buffer of input, not the file.
//
// The whole load is one statement of one transaction, as in MySQL
// (InnoDB) and TiDB since v7.0: it commits whole or leaves nothing. Its
// rows are in the transaction's write buffer until the commit, so the
// size of a load is bounded by tidb_mem_quota_query (8175 past it), which
// counts that buffer. Outside a transaction a write conflict at the
// commit fails the statement: the input is gone and cannot be read again
// for a retry.
//
// A load into an empty table outside a transaction takes a faster path
// with the same outcome (loaddata_ingest.go): its keys are sorted outside
// the heap and ingested as files at one commit, not held in a write
// buffer.

// errClientLocalFilesDisabled is MySQL 8's answer to LOAD DATA LOCAL when
// the server's local_infile or the client's CLIENT_LOCAL_FILES is off.
const errClientLocalFilesDisabled = errno.ErClientLocalFilesDisabled

func (s *Session) loadDataStmt(ctx context.Context, x *ast.LoadDataStmt, a stmtArgs) (Result, error) {
	local := x.FileLocRef == ast.FileLocClient
	if local {
		if err := s.localInfileAllowed(); err != nil {
			return Result{}, err
		}
	} else if err := s.secureFilePriv(x.Path); err != nil {
		return Result{}, err
	}
	is, release, err := s.pinStmt()
	if err != nil {
		return Result{}, err
	}
	defer release()
	s.stmtIS = is
	p, err := planner.BuildLoad(s.planContext(), x)
	s.stmtIS = nil
	if err != nil {
		return Result{}, err
	}

	var in io.ReadCloser
	if local {
		in, err = s.out.(LocalFileOpener).OpenLocalFile(x.Path)
	} else {
		in, err = openServerFile(x.Path)
	}
	if err != nil {
		return Result{}, err
	}
	// Closing a client's stream reads what is left of it, which the
	// protocol requires before the answer, failed load or not.
	defer in.Close()

	eval := s.evalCtx(ctx, a.params)
	eval.InWrite = true
	r := executor.NewLoadReader(in, p.Format)
	setVar := func(name string, v types.Datum) { s.userVars[name] = v.Clone() }
	dml := &dmlPlan{insert: p.Insert}
	trig := s.newTriggerRun(is, dml)
	run := func(txn kv.Txn) (executor.LoadResult, error) {
		ec := &executor.Ctx{Context: ctx, Eval: eval, Reader: txn, Txn: txn, ForUpdateTS: txn.StartTS(),
			LockWait: s.lockWait(), Catalog: s.d.catalog, Mem: s.stmtMem(txn), Triggers: trig}
		executor.BindSubqueries(ec)
		if txn.Mode() == kv.Pessimistic {
			ts, err := s.freshForUpdateTS()
			if err != nil {
				return executor.LoadResult{}, err
			}
			ec.ForUpdateTS, ec.Reader = ts, txn.ReaderAt(ts)
		}
		return executor.ExecLoad(ec, p, r, setVar)
	}
	imp, err := s.loadIngester(ctx, x, p)
	if err != nil {
		return Result{}, err
	}

	var res executor.LoadResult
	if imp != nil {
		// An empty table, in a statement of its own: loaddata_ingest.go.
		began := time.Now()
		res, err = s.ingestLoad(ctx, imp, p, run)
		metrics.ObserveTxn(false, err == nil, time.Since(began))
	} else if txn := s.txn; txn != nil {
		sp := txn.Savepoint()
		if res, err = run(txn); err == nil {
			txn.ReleaseSavepoint(sp)
		} else {
			txn.RollbackTo(sp)
			if errors.Is(err, kv.ErrDeadlock) {
				s.rollback()
			}
		}
	} else {
		var txn kv.Txn
		began := time.Now()
		if txn, err = s.d.store.Begin(kv.TxnOptions{Mode: kv.Optimistic}); err != nil {
			return Result{}, err
		}
		s.d.checkSchemaAtCommit(txn, is)
		if res, err = run(txn); err == nil {
			err = txn.Commit(ctx)
		} else {
			txn.Rollback()
		}
		metrics.ObserveTxn(false, err == nil, time.Since(began))
	}
	s.warnings = append(s.warnings, eval.Warnings...)
	if err == nil {
		err = in.Close()
	}
	if err != nil {
		s.rowCount = -1
		return Result{}, err
	}
	if res.LastInsertID != 0 {
		s.lastInsertID = res.LastInsertID
	}
	s.rowCount = int64(res.Affected)
	return Result{AffectedRows: res.Affected, LastInsertID: res.LastInsertID,
		Info: fmt.Sprintf("Records: %d  Deleted: %d  Skipped: %d  Warnings: %d",
			res.Records, res.Deleted, res.Skipped, len(eval.Warnings)+eval.WarningsDropped)}, nil
}

// localInfileAllowed says whether LOAD DATA LOCAL may run: local_infile is
// on and the client takes part (CLIENT_LOCAL_FILES, over a command that can
// carry the file).
func (s *Session) localInfileAllowed() error {
	on, err := s.sysVar("local_infile", true)
	if err != nil {
		return err
	}
	if _, ok := s.out.(LocalFileOpener); !ok || !s.info.LocalFiles || on.Int() == 0 {
		return ErrNoLocalFiles
	}
	return nil
}

// secureFilePriv applies secure_file_priv to a file the server is asked
// to read: "" allows any, NULL none, a directory the files under it.
func (s *Session) secureFilePriv(path string) error {
	priv := s.d.cfg.SecureFilePriv
	if priv == "" {
		return nil
	}
	refuse := errno.New(errno.ErOptionPreventsStatement, "The MySQL server is running with the --secure-file-priv option so it cannot execute this statement")
	if strings.EqualFold(priv, "NULL") {
		return refuse
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return refuse
	}
	// Symbolic links are followed, so that a link inside the directory
	// cannot reach a file outside it.
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	dir, err := filepath.Abs(priv)
	if err != nil {
		return refuse
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	if rel, err := filepath.Rel(dir, abs); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return refuse
	}
	return nil
}

// openServerFile opens a file for LOAD DATA INFILE, with MySQL's error
// when it cannot (13: "Can't get stat of ...").
func openServerFile(path string) (io.ReadCloser, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	f, err := os.Open(abs)
	if err == nil {
		var st fs.FileInfo
		if st, err = f.Stat(); err == nil && st.IsDir() {
			err = syscall.EISDIR
		}
		if err == nil {
			return f, nil
		}
		f.Close()
	}
	code, msg := 0, err.Error()
	var errNo syscall.Errno
	if errors.As(err, &errNo) {
		code, msg = int(errNo), errNo.Error()
	}
	return nil, errno.New(errno.ErCantGetStat, "Can't get stat of '%s' (OS errno %d - %s)", abs, code, upperFirst(msg))
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
