package session

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"

	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/trigger"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// checksumTable runs CHECKSUM TABLE: for each table, as MySQL, one row
// with the table's name and a checksum of its rows that does not depend
// on their order (the sum, modulo 2^32, of one CRC-32 per row), 0 for an
// empty table, and NULL with a warning for a missing one. The rows are
// read as a SELECT * would (with its privilege check) in the session's
// snapshot. The value is Basalt's own: MySQL checksums its record format,
// so the numbers compare tables across Basalt servers (a dump and its
// load), not with MySQL. QUICK and EXTENDED are the same here.
func (s *Session) checksumTable(ctx context.Context, x *trigger.Checksum) (Result, error) {
	var data [][]types.Datum
	for _, t := range x.Tables {
		db := t.Schema
		if db == "" {
			db = s.db
		}
		if db == "" {
			return Result{}, errno.New(errno.ErNoDB, "No database selected")
		}
		name := str(db + "." + t.Name)
		sum, err := s.tableChecksum(ctx, db, t.Name)
		var e *errno.Error
		switch {
		case err == nil:
			data = append(data, []types.Datum{name, types.NewUint(uint64(sum))})
		case errors.As(err, &e) && e.Code == errno.ErNoSuchTable:
			s.warnings = append(s.warnings, e)
			data = append(data, []types.Datum{name, types.Null})
		default:
			return Result{}, err
		}
	}
	cols := textFields("Table", "Checksum")
	cols[1].Type = types.FieldType{Tp: mysql.TypeLonglong, Flen: 21, Flag: mysql.BinaryFlag}
	return Result{Rows: &staticRows{fields: cols, data: data}}, nil
}

// tableChecksum is CHECKSUM TABLE's value for db.name.
func (s *Session) tableChecksum(ctx context.Context, db, name string) (uint32, error) {
	st, err := s.parser.ParseOneStmt("SELECT * FROM "+quoteName(db)+"."+quoteName(name), "", "")
	if err != nil {
		return 0, err
	}
	if err := s.checkPrivileges(st); err != nil {
		return 0, err
	}
	res, err := s.execSelect(ctx, st.(ast.ResultSetNode), nil, nil)
	if err != nil {
		return 0, mapError(err, s.d.catalog.InfoSchema())
	}
	defer res.Rows.Close()
	var sum uint32
	var buf []byte
	for {
		row, err := res.Rows.Next()
		if err != nil {
			return 0, err
		}
		if row == nil {
			return sum, nil
		}
		// Each value length-prefixed, NULL apart from every string.
		buf = buf[:0]
		for _, d := range row {
			if d.IsNull() {
				buf = append(buf, 0xff)
				continue
			}
			v := types.ToText(d)
			buf = binary.AppendUvarint(append(buf, 0), uint64(len(v)))
			buf = append(buf, v...)
		}
		sum += crc32.ChecksumIEEE(buf)
	}
}
