package server

import "github.com/basalt-db/basalt/errno"

// Prepared statements (the binary protocol's commands).
//
// COM_STMT_PREPARE: the rest of the packet is the SQL text. Response:
//
//	0x00 | 4 statement id | 2 columns | 2 params | 0x00 | 2 warnings
//	params × column definition, then EOF       — if params > 0
//	columns × column definition, then EOF      — if columns > 0
//	(no EOFs with CLIENT_DEPRECATE_EOF)
//
// COM_STMT_EXECUTE:
//
//	4 statement id | 1 flags (cursor type; ignored) | 4 iteration count (1)
//	if params > 0:
//	  null bitmap, (params+7)/8 bytes, param i at bit i
//	  1 new-params-bound flag
//	  if the flag is not 0: params × (1 type, 1 flags; 0x80 = unsigned)
//	  (MySQL and MariaDB read any non-zero byte as set)
//	  the non-NULL values, in binary.go's encoding — except parameters
//	  sent with COM_STMT_SEND_LONG_DATA, which take those bytes instead
//
// Response: results as for COM_QUERY, with binary rows.
//
// COM_STMT_SEND_LONG_DATA: 4 statement id | 2 param id | data; no response.
// COM_STMT_RESET: 4 statement id; OK (drops the long data).
// COM_STMT_CLOSE: 4 statement id; no response.

// maxParams is the most placeholders a statement may have: the prepare
// response counts them in 2 bytes.
const maxParams = 1<<16 - 1

// stmtState is the server's side of one prepared statement.
type stmtState struct {
	id      uint32
	sql     string
	stmt    Stmt
	columns []Column

	// types is 2 bytes per parameter, from the last execution that bound
	// them; nil before the first.
	types []byte

	// longData gathers COM_STMT_SEND_LONG_DATA chunks per parameter until
	// the next execution; longSent marks parameters that received any.
	longData [][]byte
	longSent []bool

	params []Value // reused by each execution
}

func (s *stmtState) numParams() int { return len(s.params) }

func (s *stmtState) dropLongData() {
	for i := range s.longSent {
		s.longData[i], s.longSent[i] = nil, false
	}
}

func (c *conn) comStmtPrepare(body []byte) {
	sql := string(body)
	c.setInfo(sql)
	st, err := c.sess.Prepare(c.ctx, sql)
	if err != nil {
		c.writeErr(err)
		return
	}
	n := st.NumParams()
	cols := st.Columns()
	if n > maxParams || len(cols) > maxParams {
		c.safely("closing statement", func() { st.Close() })
		c.writeErr(errno.New(errno.ErPSManyParam, "Prepared statement contains too many placeholders"))
		return
	}
	c.lastStmtID++
	s := &stmtState{
		id:       c.lastStmtID,
		sql:      sql,
		stmt:     st,
		columns:  cols,
		params:   make([]Value, n),
		longData: make([][]byte, n),
		longSent: make([]bool, n),
	}
	c.stmts[s.id] = s

	c.pio.begin()
	b := append(c.pio.wbuf, 0x00)
	b = appendUint32(b, s.id)
	b = appendUint16(b, uint16(len(cols)))
	b = appendUint16(b, uint16(n))
	b = append(b, 0x00)
	c.pio.wbuf = appendUint16(b, c.sess.WarningCount())
	c.pio.end()
	if n > 0 {
		param := Column{Name: "?", Type: TypeVarString, Charset: CollationBinary}
		for i := 0; i < n; i++ {
			c.pio.begin()
			c.pio.wbuf = appendColumnDef(c.pio.wbuf, &param, c.collation, false)
			c.pio.end()
		}
		if c.caps&ClientDeprecateEOF == 0 {
			c.writeEOFStatus(c.sess.Status(), 0)
		}
	}
	if len(cols) > 0 {
		for i := range cols {
			c.pio.begin()
			c.pio.wbuf = appendColumnDef(c.pio.wbuf, &cols[i], c.collation, false)
			c.pio.end()
		}
		if c.caps&ClientDeprecateEOF == 0 {
			c.writeEOFStatus(c.sess.Status(), 0)
		}
	}
}

func (c *conn) comStmtExecute(body []byte) {
	r := newReader(body)
	id := r.uint32()
	r.uint8()  // cursor flags: results are always sent whole
	r.uint32() // iteration count: always 1
	if r.bad {
		c.malformed()
		return
	}
	s := c.stmts[id]
	if s == nil {
		c.writeErr(errUnknownStmt(id, "mysqld_stmt_execute"))
		return
	}
	defer s.dropLongData()
	if !s.decodeParams(&r) {
		c.writeErr(errWrongArguments("mysqld_stmt_execute"))
		return
	}
	c.setInfo(s.sql)
	c.rw.reset(true)
	err := s.stmt.Execute(c.ctx, s.params, &c.rw)
	clear(s.params) // let go of the read buffer
	c.finishResults(err)
	c.noteDB()
}

// decodeParams reads the parameter block of COM_STMT_EXECUTE into s.params.
// It reports false when the block does not hold exactly the values the
// statement's parameters need (ER_WRONG_ARGUMENTS).
func (s *stmtState) decodeParams(r *reader) bool {
	n := s.numParams()
	if n == 0 {
		return true
	}
	nulls := r.take((n + 7) / 8)
	bound := r.uint8()
	if r.bad {
		return false
	}
	if bound != 0 {
		types := r.take(2 * n)
		if r.bad {
			return false
		}
		s.types = append(s.types[:0], types...)
	} else if s.types == nil {
		return false
	}
	for i := 0; i < n; i++ {
		typ, unsigned := FieldType(s.types[2*i]), s.types[2*i+1]&0x80 != 0
		switch {
		case s.longSent[i]:
			if typ == TypeDecimal || typ == TypeNewDecimal {
				s.params[i] = DecimalValue(s.longData[i])
			} else {
				s.params[i] = BytesValue(s.longData[i])
			}
		case nulls[i/8]&(1<<(i%8)) != 0:
			s.params[i] = NullValue()
		default:
			v, ok := readBinaryParam(r, typ, unsigned)
			if !ok {
				return false
			}
			s.params[i] = v
		}
	}
	// Bytes past the last value are ignored, as MySQL does.
	return true
}

func (c *conn) comStmtSendLongData(body []byte) {
	r := newReader(body)
	id := r.uint32()
	param := int(r.uint16())
	data := r.rest()
	if r.bad {
		c.malformed()
		return
	}
	// Errors here have no response; MySQL reports them at execution. An
	// unknown statement or parameter is reported then as well (1243, 1210).
	s := c.stmts[id]
	if s == nil || param >= s.numParams() {
		return
	}
	if !s.longSent[param] {
		s.longData[param] = make([]byte, 0, len(data))
	}
	s.longData[param] = append(s.longData[param], data...)
	s.longSent[param] = true
}

func (c *conn) comStmtReset(body []byte) {
	r := newReader(body)
	id := r.uint32()
	if r.bad {
		c.malformed()
		return
	}
	s := c.stmts[id]
	if s == nil {
		c.writeErr(errUnknownStmt(id, "mysqld_stmt_reset"))
		return
	}
	s.dropLongData()
	c.writeOK(0, 0, "")
}

func (c *conn) comStmtClose(body []byte) {
	r := newReader(body)
	id := r.uint32()
	if r.bad {
		c.malformed()
		return
	}
	if s := c.stmts[id]; s != nil {
		delete(c.stmts, id)
		c.safely("closing statement", func() { s.stmt.Close() })
	}
}

// closeStmts closes every prepared statement of the connection.
func (c *conn) closeStmts() {
	for id, s := range c.stmts {
		delete(c.stmts, id)
		c.safely("closing statement", func() { s.stmt.Close() })
	}
}
