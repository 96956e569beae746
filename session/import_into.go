package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/executor"
	"github.com/basalt-db/basalt/importer"
	"github.com/basalt-db/basalt/kv"
	"github.com/basalt-db/basalt/planner"
	"github.com/basalt-db/basalt/tablecodec"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// IMPORT INTO tbl [(col_or_@var, ...)] [SET col = expr, ...] FROM 'path'
// [FORMAT 'csv'] [WITH opt [= val], ...]: TiDB's fast path for loads
// larger than memory (package importer). The file (or the files a
// wildcard in its name matches) is read from the server's filesystem
// under LOAD DATA's rules (FILE, secure_file_priv); its lines become rows
// as LOAD DATA makes them (executor.ExecLoad, strict: a bad value fails
// the import); their row and index keys are sorted in bounded memory and
// committed at one timestamp by the store (kv.Importer), which only the
// embedded store is. The table must be empty, and stays so if the import
// fails (a duplicate key in the input, for one). The answer is TiDB's:
// one row of SHOW IMPORT JOB's columns.

// TiDB's error codes of IMPORT INTO.
const (
	errLoadDataUnsupportedFormat    = 8157 // The FORMAT '%s' is not supported
	errUnknownOption                = 8163 // Unknown option %s
	errInvalidOptionVal             = 8164 // Invalid option value for %s
	errDuplicateOption              = 8165 // Option %s specified more than once
	errLoadDataUnsupportedOption    = 8166 // Unsupported option %s for %s
	errLoadDataDuplicateKeyConflict = 8167
	errLoadDataPreCheckFailed       = 8173 // PreCheck failed: %s
)

var importJobIDs atomic.Int64

// importOptions are the WITH options Basalt implements.
type importOptions struct {
	load      *ast.LoadDataStmt // FIELDS, LINES, SKIP_ROWS, CHARACTER_SET
	diskQuota int64             // bytes; 0: none
	// anyNewline: no LINES_TERMINATED_BY, so "\n", "\r\n" and "\r" all
	// end a line, as in TiDB.
	anyNewline bool
}

func (s *Session) importIntoStmt(ctx context.Context, x *ast.ImportIntoStmt, a stmtArgs) (Result, error) {
	if s.txn != nil || s.deferred {
		return Result{}, errno.New(errno.ErUnknown, "cannot run IMPORT INTO in explicit transaction")
	}
	if x.Select != nil {
		return Result{}, errno.New(errno.ErNotSupportedYet, "IMPORT INTO ... FROM SELECT is not supported")
	}
	imp, ok := s.d.store.(kv.Importer)
	if !ok {
		return Result{}, errno.New(errno.ErNotSupportedYet, "IMPORT INTO is not supported on this store (only the embedded store imports); use LOAD DATA")
	}
	if x.Format != nil && !strings.EqualFold(*x.Format, "csv") {
		return Result{}, errno.New(errLoadDataUnsupportedFormat, "The FORMAT '%s' is not supported", *x.Format)
	}
	if strings.Contains(x.Path, "://") {
		return Result{}, errno.New(errno.ErNotSupportedYet, "IMPORT INTO from external storage (%s) is not supported: give a file of the server", x.Path[:strings.Index(x.Path, "://")])
	}
	opts, err := importOptionsOf(x)
	if err != nil {
		return Result{}, err
	}
	paths, size, err := s.importFiles(x.Path)
	if err != nil {
		return Result{}, err
	}

	is, release, err := s.pinStmt()
	if err != nil {
		return Result{}, err
	}
	defer release()
	s.stmtIS = is
	ld := opts.load
	ld.Table, ld.ColumnsAndUserVars, ld.ColumnAssignments = x.Table, x.ColumnsAndUserVars, x.ColumnAssignments
	p, err := planner.BuildLoad(s.planContext(), ld)
	s.stmtIS = nil
	if err != nil {
		return Result{}, err
	}
	p.Format.AnyNewline = opts.anyNewline
	t := p.Insert.Table
	start, end := tablecodec.TablePrefix(t.ID), tablecodec.TableEnd(t.ID)
	created := time.Now()
	// TiDB's precheck, before the input is read; the store checks again
	// when it commits.
	if err := s.importTargetEmpty(ctx, start, end); err != nil {
		return Result{}, err
	}

	ts, err := s.d.store.CurrentTS()
	if err != nil {
		return Result{}, err
	}
	job, err := importer.NewJob("", 0, ts)
	if err != nil {
		return Result{}, err
	}
	defer job.Close()
	job.Sorter().DiskQuota = opts.diskQuota

	eval := s.evalCtx(ctx, a.params)
	eval.InWrite = true
	setVar := func(name string, v types.Datum) { s.userVars[name] = v.Clone() }
	txn := job.Txn()
	ec := &executor.Ctx{Context: ctx, Eval: eval, Reader: txn, Txn: txn, ForUpdateTS: ts,
		Catalog: s.d.catalog, Mem: s.stmtMem(txn), LazyUniqueChecks: true, NoFKChecks: true}
	var rows uint64
	for _, path := range paths {
		in, err := openServerFile(path)
		if err != nil {
			return Result{}, err
		}
		res, err := executor.ExecLoad(ec, p, executor.NewLoadReader(in, p.Format), setVar)
		in.Close()
		if err != nil {
			s.warnings = append(s.warnings, eval.Warnings...)
			return Result{}, s.importError(err)
		}
		rows += res.Records
	}
	s.warnings = append(s.warnings, eval.Warnings...)
	if _, err := job.Commit(ctx, imp, start, end); err != nil {
		return Result{}, s.importError(err)
	}
	s.rowCount = int64(rows)

	db := p.Insert.DB
	row := []types.Datum{
		types.NewInt(importJobIDs.Add(1)), types.NewString(x.Path),
		types.NewString(fmt.Sprintf("`%s`.`%s`", db, t.Name)), types.NewInt(t.ID),
		types.NewString(""), types.NewString("finished"), types.NewString(humanSize(size)),
		types.NewUint(rows), types.NewString(""),
		datetime(created), datetime(created), datetime(time.Now()), types.NewString(s.User()),
	}
	fields := textFields("Job_ID", "Data_Source", "Target_Table", "Table_ID", "Phase", "Status",
		"Source_File_Size", "Imported_Rows", "Result_Message", "Create_Time", "Start_Time", "End_Time", "Created_By")
	for _, i := range []int{0, 3, 7} {
		fields[i].Type = intField(true)
	}
	fields[7].Type.Flag |= mysql.UnsignedFlag
	for i := 9; i < 12; i++ {
		fields[i].Type = types.FieldType{Tp: mysql.TypeDatetime, Flen: 26, Decimal: 6}
	}
	return Result{Rows: &staticRows{fields: fields, data: [][]types.Datum{row}}}, nil
}

// importError maps what an import fails with that is its own: a
// duplicate key, a target found not empty, DISK_QUOTA; other errors
// pass through.
func (s *Session) importError(err error) error {
	var dup *importer.DuplicateKeyError
	switch {
	case errors.As(err, &dup):
		detail := mapError(&kv.KeyExistsError{Key: dup.Key}, s.schema())
		return errno.New(errLoadDataDuplicateKeyConflict, "Duplicate key conflict found. Please resolve conflicts in the input dataset (%s)", errMsg(detail))
	case errors.Is(err, kv.ErrImportTargetNotEmpty):
		return errno.New(errLoadDataPreCheckFailed, "PreCheck failed: target table is not empty")
	case errors.Is(err, importer.ErrDiskQuota):
		return errno.New(errno.ErUnknown, "The import's sorted data needs more disk than DISK_QUOTA allows")
	}
	return err
}

func errMsg(err error) string {
	var e *errno.Error
	if errors.As(err, &e) {
		return e.Msg
	}
	return err.Error()
}

// importTargetEmpty is TiDB's precheck: the table holds no row or index
// entry now.
func (s *Session) importTargetEmpty(ctx context.Context, start, end []byte) error {
	ts, err := s.d.store.CurrentTS()
	if err != nil {
		return err
	}
	it, err := s.d.store.Snapshot(ts).Iter(start, end)
	if err != nil {
		return err
	}
	defer it.Close()
	if it.Valid() {
		return errno.New(errLoadDataPreCheckFailed, "PreCheck failed: target table is not empty")
	}
	return nil
}

// importFiles resolves IMPORT INTO's path: one file, or those that the
// wildcards (*, ?, [...]) of its last element match, in name order, each
// allowed by secure_file_priv. size is their total size.
func (s *Session) importFiles(path string) (paths []string, size int64, err error) {
	if !strings.ContainsAny(filepath.Base(path), "*?[") {
		paths = []string{path}
	} else if paths, err = filepath.Glob(path); err != nil {
		return nil, 0, errno.New(errLoadDataPreCheckFailed, "PreCheck failed: bad file pattern %s", path)
	}
	if len(paths) == 0 {
		return nil, 0, errno.New(errLoadDataPreCheckFailed, "PreCheck failed: No file matched, or the file is empty. Please provide a valid file location.")
	}
	for _, p := range paths {
		if err := s.secureFilePriv(p); err != nil {
			return nil, 0, err
		}
		f, err := openServerFile(p)
		if err != nil {
			return nil, 0, err
		}
		f.Close()
		if st, err := os.Stat(p); err == nil {
			size += st.Size()
		}
	}
	return paths, size, nil
}

// importOptionsOf reads the WITH options: TiDB's names, their CSV
// defaults (fields terminated by ',', enclosed by '"', escaped by '\',
// lines by "\n", "\r\n" or "\r"), an error for an unknown one (8163), a bad value (8164), one given twice
// (8165), and one of TiDB's that Basalt does not implement (8166).
func importOptionsOf(x *ast.ImportIntoStmt) (importOptions, error) {
	comma, quote, backslash, newline := ",", `"`, `\`, "\n"
	ld := &ast.LoadDataStmt{
		FieldsInfo: &ast.FieldsClause{Terminated: &comma, Enclosed: &quote, Escaped: &backslash},
		LinesInfo:  &ast.LinesClause{Terminated: &newline},
	}
	o := importOptions{load: ld, anyNewline: true}
	seen := map[string]bool{}
	for _, opt := range x.Options {
		name := strings.ToLower(opt.Name)
		if seen[name] {
			return o, errno.New(errDuplicateOption, "Option %s specified more than once", name)
		}
		seen[name] = true
		str := func() (string, error) {
			if v, ok := optValue(opt.Value).(string); ok {
				return v, nil
			}
			return "", errno.New(errInvalidOptionVal, "Invalid option value for %s", name)
		}
		num := func() (int64, error) {
			switch v := optValue(opt.Value).(type) {
			case int64:
				if v >= 0 {
					return v, nil
				}
			case uint64:
				return int64(v), nil
			}
			return 0, errno.New(errInvalidOptionVal, "Invalid option value for %s", name)
		}
		var err error
		switch name {
		case "character_set":
			var cs string
			if cs, err = str(); err == nil {
				ld.Charset = &cs
			}
		case "fields_terminated_by", "lines_terminated_by":
			var v string
			if v, err = str(); err == nil && v == "" {
				err = errno.New(errInvalidOptionVal, "Invalid option value for %s", name)
			}
			if name == "fields_terminated_by" {
				ld.FieldsInfo.Terminated = &v
			} else {
				ld.LinesInfo.Terminated, o.anyNewline = &v, false
			}
		case "fields_enclosed_by", "fields_escaped_by":
			var v string
			if v, err = str(); err == nil && len(v) > 1 {
				err = errno.New(errInvalidOptionVal, "Invalid option value for %s", name)
			}
			if name == "fields_enclosed_by" {
				ld.FieldsInfo.Enclosed = &v
			} else {
				ld.FieldsInfo.Escaped = &v
			}
		case "fields_defined_null_by":
			var v string
			if v, err = str(); err == nil && v != `\N` {
				err = errno.New(errLoadDataUnsupportedOption, "Unsupported option %s for %s", name+" other than '\\N'", "IMPORT INTO")
			}
		case "skip_rows":
			var n int64
			if n, err = num(); err == nil {
				u := uint64(n)
				ld.IgnoreLines = &u
			}
		case "thread":
			// The rows are encoded by one goroutine; THREAD is accepted
			// (a positive number) as a bound that is always met.
			var n int64
			if n, err = num(); err == nil && n == 0 {
				err = errno.New(errInvalidOptionVal, "Invalid option value for %s", name)
			}
		case "disk_quota":
			var v string
			if v, err = str(); err == nil {
				if o.diskQuota, err = parseSize(v); err != nil {
					err = errno.New(errInvalidOptionVal, "Invalid option value for %s", name)
				}
			}
		case "disable_tikv_import_mode":
			// Nothing to disable: the embedded store has no import mode.
			if opt.Value != nil {
				err = errno.New(errInvalidOptionVal, "Invalid option value for %s", name)
			}
		case "split_file", "max_write_speed", "checksum_table", "record_errors", "detached",
			"disable_precheck", "cloud_storage_uri", "group_key", "max_engine_size", "manual_recovery":
			err = errno.New(errLoadDataUnsupportedOption, "Unsupported option %s for %s", name, "IMPORT INTO")
		default:
			err = errno.New(errUnknownOption, "Unknown option %s", name)
		}
		if err != nil {
			return o, err
		}
	}
	return o, nil
}

// optValue is an option's literal: a string, an int64 (a negative number
// is a unary minus over a literal) or a uint64; nil without a value.
func optValue(e ast.ExprNode) any {
	switch v := e.(type) {
	case nil:
		return nil
	case ast.ValueExpr:
		return v.GetValue()
	case *ast.UnaryOperationExpr:
		if n, ok := optValue(v.V).(int64); ok {
			return -n
		}
		return int64(-1)
	}
	return nil
}

// parseSize reads a size as TiDB's DISK_QUOTA takes it: a number of
// bytes, or one with a unit (KB, MB, GB, TB, KiB, ..., case-insensitive;
// units are powers of 1024 as in TiDB).
func parseSize(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"TIB", 1 << 40}, {"GIB", 1 << 30}, {"MIB", 1 << 20}, {"KIB", 1 << 10},
		{"TB", 1 << 40}, {"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10},
		{"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1}} {
		if rest, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = strings.TrimSpace(rest), u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f <= 0 {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return int64(f * float64(mult)), nil
}

// humanSize is a size as SHOW IMPORT JOB shows it: TiDB's
// units.BytesSize, four significant digits and a binary unit ("184.9MiB").
func humanSize(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	f, i := float64(n), 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	return fmt.Sprintf("%.4g%s", f, units[i])
}
