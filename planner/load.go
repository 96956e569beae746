package planner

import (
	"strings"

	"github.com/basalt-db/basalt/errno"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// Load is a planned LOAD DATA: where each field of an input line goes, the
// SET assignments, and how the input is cut into lines and fields. The
// input itself (a server file or the client's stream) is the session's.
type Load struct {
	// Insert is the target table and what a duplicate key does (Replace,
	// or Ignore: skip the line); its Columns and Rows are unused.
	Insert *Insert
	// Fields maps the fields of a line, in order, to columns or user
	// variables: the statement's list, or every column of the table.
	Fields []LoadTarget
	// Set holds the SET assignments, over the table's row layout (its
	// columns, then the hidden handle), evaluated after the fields.
	Set []Assignment
	// IgnoreErrors turns data errors (short and long lines, bad values,
	// NULL into NOT NULL) into warnings: IGNORE, or LOCAL (the server
	// cannot stop a client half way through its file), as in MySQL.
	IgnoreErrors bool
	// IgnoreLines is how many lines to skip first (IGNORE n LINES).
	IgnoreLines uint64
	// Charset is the input's character set, lower case ("" for the
	// database's, utf8mb4).
	Charset string
	Format  LoadFormat
}

// LoadTarget is where one input field goes: column Col (an offset in the
// table), or, when Col is -1, the user variable Var (lower case).
type LoadTarget struct {
	Col int
	Var string
}

// LoadFormat is how the input is cut: MySQL's FIELDS and LINES clauses,
// with their defaults (tab-separated fields, newline-terminated lines,
// backslash escapes, no enclosing quotes).
type LoadFormat struct {
	FieldsTerminated string
	Enclosed         byte // 0: none
	Escaped          byte // 0: none
	LinesStarting    string
	LinesTerminated  string
	// AnyNewline makes "\r\n" and "\r" end a line too, besides
	// LinesTerminated ("\n"): IMPORT INTO's default, as TiDB's.
	AnyNewline bool
}

// BuildLoad plans a LOAD DATA statement.
func BuildLoad(c *Context, s *ast.LoadDataStmt) (*Load, error) {
	if s.Format != nil && !strings.EqualFold(*s.Format, "delimited data") {
		return nil, errno.New(errno.ErNotSupportedYet, "LOAD DATA FORMAT '%s' is not supported", *s.Format)
	}
	if len(s.Options) > 0 {
		return nil, errno.New(errno.ErNotSupportedYet, "LOAD DATA ... WITH options are not supported")
	}
	db, t, err := c.TableRef(s.Table)
	if err != nil {
		return nil, err
	}
	if t.View != nil {
		return nil, errno.New(1471, "The target table %s of the LOAD is not insertable-into", t.Name)
	}
	local := s.FileLocRef == ast.FileLocClient
	p := &Load{
		Insert: &Insert{DB: db, Table: t,
			Replace: s.OnDuplicate == ast.OnDuplicateKeyHandlingReplace,
			Ignore:  s.OnDuplicate == ast.OnDuplicateKeyHandlingIgnore || (local && s.OnDuplicate != ast.OnDuplicateKeyHandlingReplace)},
		IgnoreErrors: s.OnDuplicate == ast.OnDuplicateKeyHandlingIgnore || local,
	}
	if s.IgnoreLines != nil {
		p.IgnoreLines = *s.IgnoreLines
	}
	if s.Charset != nil {
		p.Charset = strings.ToLower(*s.Charset)
	}
	if p.Format, err = loadFormat(s); err != nil {
		return nil, err
	}

	if len(s.ColumnsAndUserVars) == 0 {
		for _, col := range t.Columns {
			p.Fields = append(p.Fields, LoadTarget{Col: col.Offset})
		}
	}
	for _, cv := range s.ColumnsAndUserVars {
		if cv.UserVar != nil {
			p.Fields = append(p.Fields, LoadTarget{Col: -1, Var: strings.ToLower(cv.UserVar.Name)})
			continue
		}
		col := t.FindColumn(cv.ColumnName.Name.O)
		if col == nil {
			return nil, errno.New(errno.ErBadField, "Unknown column '%s' in 'field list'", cv.ColumnName.Name.O)
		}
		p.Fields = append(p.Fields, LoadTarget{Col: col.Offset})
	}
	eb := c.builder(SourceSchema(db, t, ""), "field list")
	for _, a := range s.ColumnAssignments {
		col := t.FindColumn(a.Column.Name.O)
		if col == nil {
			return nil, errno.New(errno.ErBadField, "Unknown column '%s' in 'field list'", a.Column.Name.O)
		}
		e, err := eb.Build(a.Expr)
		if err != nil {
			return nil, err
		}
		p.Set = append(p.Set, Assignment{Col: col.Offset, Expr: e})
	}
	return p, nil
}

// loadFormat reads the FIELDS and LINES clauses. Fixed-width input (empty
// terminators) is not supported.
func loadFormat(s *ast.LoadDataStmt) (LoadFormat, error) {
	f := LoadFormat{FieldsTerminated: "\t", Escaped: '\\', LinesTerminated: "\n"}
	if fi := s.FieldsInfo; fi != nil {
		if fi.DefinedNullBy != nil {
			return f, errno.New(errno.ErNotSupportedYet, "LOAD DATA ... DEFINED NULL BY is not supported")
		}
		if fi.Terminated != nil {
			f.FieldsTerminated = *fi.Terminated
		}
		if fi.Enclosed != nil && *fi.Enclosed != "" {
			f.Enclosed = (*fi.Enclosed)[0]
		}
		if fi.Escaped != nil {
			f.Escaped = 0
			if *fi.Escaped != "" {
				f.Escaped = (*fi.Escaped)[0]
			}
		}
	}
	if li := s.LinesInfo; li != nil {
		if li.Starting != nil {
			f.LinesStarting = *li.Starting
		}
		if li.Terminated != nil {
			f.LinesTerminated = *li.Terminated
		}
	}
	if f.FieldsTerminated == "" || f.LinesTerminated == "" {
		return f, errno.New(errno.ErNotSupportedYet, "LOAD DATA with an empty FIELDS or LINES TERMINATED BY (fixed-width rows) is not supported")
	}
	return f, nil
}
