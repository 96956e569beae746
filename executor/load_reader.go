package executor

import (
	"bufio"
	"io"

	"github.com/basalt-db/basalt/planner"
)

// LoadReader cuts LOAD DATA input into lines of fields, as MySQL's
// READ_INFO does, reading the input as a stream: it holds one line and a
// buffer of input, never the whole file.
//
//   - A line is what lies between LINES STARTING BY (when given: input
//     before it is skipped, so a line without it is skipped whole) and
//     LINES TERMINATED BY; the input's end ends the last line. Nothing
//     after the last terminator is not a line.
//   - Fields are separated by FIELDS TERMINATED BY. A field that begins
//     with the ENCLOSED BY character runs to the next one followed by a
//     terminator (or the end); two of them inside stand for one.
//   - ESCAPED BY c: c0 c b c n c r c t c Z are NUL, backspace, newline,
//     carriage return, tab and ^Z; c followed by any other byte is that
//     byte (so an escaped terminator is data). A field that is exactly c N
//     is NULL, and so is the unenclosed word NULL when ENCLOSED BY is set.
type LoadReader struct {
	r   *bufio.Reader
	f   planner.LoadFormat
	buf []byte // the bytes of the current line's fields, one after another
	// spans are the fields of the current line: offsets into buf, and
	// whether the field is NULL.
	spans  []fieldSpan
	fields []LoadField
}

type fieldSpan struct {
	start, end int
	null       bool
}

// LoadField is one field of a line. Value is valid until the next call to
// Next.
type LoadField struct {
	Value []byte
	Null  bool
}

// loadBufSize is the input buffer: big enough that a read from the client
// or the disk moves many lines at once.
const loadBufSize = 256 << 10

// NewLoadReader reads lines from r in format f.
func NewLoadReader(r io.Reader, f planner.LoadFormat) *LoadReader {
	return &LoadReader{r: bufio.NewReaderSize(r, loadBufSize), f: f}
}

// Next returns the fields of the next line, or nil at the end of the
// input. The slice is reused by the next call.
func (lr *LoadReader) Next() ([]LoadField, error) {
	lr.buf, lr.spans = lr.buf[:0], lr.spans[:0]
	if lr.f.LinesStarting != "" {
		found, err := lr.skipPast(lr.f.LinesStarting)
		if !found || err != nil {
			return nil, err
		}
	} else if _, err := lr.r.Peek(1); err != nil {
		if err == io.EOF {
			err = nil
		}
		return nil, err
	}
	for {
		endLine, err := lr.field()
		if err != nil {
			return nil, err
		}
		if endLine {
			break
		}
	}
	lr.fields = lr.fields[:0]
	for _, s := range lr.spans {
		lr.fields = append(lr.fields, LoadField{Value: lr.buf[s.start:s.end:s.end], Null: s.null})
	}
	return lr.fields, nil
}

// skipPast reads up to and past the next occurrence of s; found is false
// when the input ends first.
func (lr *LoadReader) skipPast(s string) (bool, error) {
	for {
		c, err := lr.r.ReadByte()
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return false, err
		}
		if ok, err := lr.at(c, s); ok || err != nil {
			return ok, err
		}
	}
}

// at reports whether term begins with c, the byte just read, and the input
// after it; if so it consumes the rest of term.
func (lr *LoadReader) at(c byte, term string) (bool, error) {
	if c != term[0] {
		return false, nil
	}
	if len(term) == 1 {
		return true, nil
	}
	rest, err := lr.r.Peek(len(term) - 1)
	if err != nil {
		if err == io.EOF || err == bufio.ErrBufferFull {
			return false, nil
		}
		return false, err
	}
	if string(rest) != term[1:] {
		return false, nil
	}
	_, err = lr.r.Discard(len(rest))
	return true, err
}

// consume reports whether the input continues with term, and if so
// consumes it.
func (lr *LoadReader) consume(term string) (bool, error) {
	next, err := lr.r.Peek(len(term))
	if err != nil {
		if err == io.EOF || err == bufio.ErrBufferFull {
			return false, nil
		}
		return false, err
	}
	if string(next) != term {
		return false, nil
	}
	_, err = lr.r.Discard(len(term))
	return true, err
}

// field reads one field into buf and spans; endLine says the line ended
// with it (at its terminator or the end of the input).
func (lr *LoadReader) field() (endLine bool, err error) {
	f := &lr.f
	start := len(lr.buf)
	span := fieldSpan{start: start}
	quoted := false
	if f.Enclosed != 0 {
		if b, err := lr.r.Peek(1); err == nil && b[0] == f.Enclosed {
			lr.r.Discard(1)
			quoted = true
		}
	}
	raw := 0          // bytes of input the field's content took
	escapedN := false // the content so far is exactly the escape and N
	defer func() {
		span.end = len(lr.buf)
		if escapedN && raw == 2 {
			span.null = true
			span.end = start
		} else if !quoted && f.Enclosed != 0 && string(lr.buf[start:]) == "NULL" {
			span.null = true
		}
		lr.spans = append(lr.spans, span)
	}()
	for {
		// The bytes up to the next one that may mean something are data:
		// copy them at once.
		if n, err := lr.ordinary(quoted); n > 0 || err != nil {
			if err == io.EOF {
				return true, nil
			}
			if err != nil {
				return false, err
			}
			raw += n
			continue
		}
		c, err := lr.r.ReadByte()
		if err == io.EOF {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		if f.Escaped != 0 && c == f.Escaped {
			e, err := lr.r.ReadByte()
			if err == io.EOF {
				lr.buf = append(lr.buf, c)
				return true, nil
			}
			if err != nil {
				return false, err
			}
			escapedN = raw == 0 && e == 'N'
			raw += 2
			lr.buf = append(lr.buf, unescape(e))
			continue
		}
		if quoted {
			if c == f.Enclosed {
				next, err := lr.r.Peek(1)
				if err == nil && next[0] == f.Enclosed {
					lr.r.Discard(1)
					lr.buf = append(lr.buf, c)
					raw += 2
					continue
				}
				if err == io.EOF {
					return true, nil
				}
				if err != nil {
					return false, err
				}
				// The closing quote, if a terminator follows; otherwise
				// data, as in MySQL.
				if ok, err := lr.consumeLineEnd(); ok || err != nil {
					return true, err
				}
				if ok, err := lr.consume(f.FieldsTerminated); ok || err != nil {
					return false, err
				}
			}
			lr.buf = append(lr.buf, c)
			raw++
			continue
		}
		if ok, err := lr.lineEnd(c); ok || err != nil {
			return true, err
		}
		if ok, err := lr.at(c, f.FieldsTerminated); ok || err != nil {
			return false, err
		}
		lr.buf = append(lr.buf, c)
		raw++
	}
}

// lineEnd reports whether c, the byte just read, and the input after it
// end a line (LinesTerminated, or with AnyNewline also "\r\n" and "\r");
// if so it consumes the rest of the terminator.
func (lr *LoadReader) lineEnd(c byte) (bool, error) {
	if !lr.f.AnyNewline || c != '\r' {
		return lr.at(c, lr.f.LinesTerminated)
	}
	if next, err := lr.r.Peek(1); err == nil && next[0] == '\n' {
		_, err = lr.r.Discard(1)
		return true, err
	}
	return true, nil
}

// consumeLineEnd reports whether the input continues with a line's end,
// and if so consumes it.
func (lr *LoadReader) consumeLineEnd() (bool, error) {
	if lr.f.AnyNewline {
		if next, err := lr.r.Peek(1); err == nil && next[0] == '\r' {
			lr.r.Discard(1)
			return lr.lineEnd('\r')
		}
	}
	return lr.consume(lr.f.LinesTerminated)
}

// ordinary appends to buf the buffered input up to the first byte that
// may be special in a field (quoted or not): the escape character, and
// the enclosing one in a quoted field, or the first byte of either
// terminator in an unquoted one. It returns how many bytes it took.
func (lr *LoadReader) ordinary(quoted bool) (int, error) {
	if lr.r.Buffered() == 0 {
		if _, err := lr.r.Peek(1); err != nil {
			return 0, err
		}
	}
	in, _ := lr.r.Peek(lr.r.Buffered())
	f := &lr.f
	n := 0
	if quoted {
		for n < len(in) && (in[n] != f.Escaped || f.Escaped == 0) && in[n] != f.Enclosed {
			n++
		}
	} else {
		l, t := f.LinesTerminated[0], f.FieldsTerminated[0]
		for n < len(in) && (in[n] != f.Escaped || f.Escaped == 0) && in[n] != l && in[n] != t && (in[n] != '\r' || !f.AnyNewline) {
			n++
		}
	}
	lr.buf = append(lr.buf, in[:n]...)
	_, err := lr.r.Discard(n)
	return n, err
}

// unescape is the byte an escape character followed by c stands for.
func unescape(c byte) byte {
	switch c {
	case '0':
		return 0
	case 'b':
		return '\b'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'Z':
		return 0x1a
	}
	return c
}

// Reading ahead: a load's lines are cut on a goroutine of their own
// (lineAhead) while the statement's goroutine turns the lines before
// them into rows (ExecLoad). Cutting lines, and reading the client's
// packets for LOCAL, is a good part of a load's work and needs nothing
// of the statement, so on a machine with a spare core the load goes
// that much faster. The goroutine owns the LoadReader, and with it the
// input, until close returns.

// lineBatch holds lines cut ahead: their fields' bytes one after
// another, the fields' spans, and where each line's spans start. err,
// after the last line, is why there are no more: io.EOF at the input's
// end.
type lineBatch struct {
	buf   []byte
	spans []fieldSpan
	lines []int
	err   error
}

// A batch ends after batchLines lines or batchBytes bytes of fields,
// whichever comes first; aheadBatches are in flight at most.
const (
	batchLines   = 256
	batchBytes   = 64 << 10
	aheadBatches = 4
)

type lineAhead struct {
	full, free chan *lineBatch
	stop, done chan struct{}
	cur        *lineBatch
	next       int // cur's next line
	fields     []LoadField
}

// readAhead starts cutting lr's lines ahead; lr must not be used until
// the lineAhead's close returns.
func (lr *LoadReader) readAhead() *lineAhead {
	a := &lineAhead{full: make(chan *lineBatch, aheadBatches), free: make(chan *lineBatch, aheadBatches),
		stop: make(chan struct{}), done: make(chan struct{})}
	for i := 0; i < aheadBatches; i++ {
		a.free <- &lineBatch{}
	}
	go a.run(lr)
	return a
}

func (a *lineAhead) run(lr *LoadReader) {
	defer close(a.done)
	for {
		var b *lineBatch
		select {
		case b = <-a.free:
		case <-a.stop:
			return
		}
		b.buf, b.spans, b.lines, b.err = b.buf[:0], b.spans[:0], b.lines[:0], nil
		for len(b.lines) < batchLines && len(b.buf) < batchBytes {
			fields, err := lr.Next()
			if err == nil && fields == nil {
				err = io.EOF
			}
			if err != nil {
				b.err = err
				break
			}
			b.lines = append(b.lines, len(b.spans))
			for _, f := range fields {
				b.spans = append(b.spans, fieldSpan{start: len(b.buf), end: len(b.buf) + len(f.Value), null: f.Null})
				b.buf = append(b.buf, f.Value...)
			}
		}
		select {
		case a.full <- b:
		case <-a.stop:
			return
		}
		if b.err != nil {
			return
		}
	}
}

// Next is LoadReader.Next over the lines read ahead: the fields of the
// next line, valid until the next call, or nil at the input's end.
func (a *lineAhead) Next() ([]LoadField, error) {
	for a.cur == nil || a.next == len(a.cur.lines) {
		if a.cur != nil {
			if err := a.cur.err; err != nil {
				if err == io.EOF {
					return nil, nil
				}
				return nil, err
			}
			a.free <- a.cur
		}
		a.cur, a.next = <-a.full, 0
	}
	b := a.cur
	end := len(b.spans)
	if a.next+1 < len(b.lines) {
		end = b.lines[a.next+1]
	}
	a.fields = a.fields[:0]
	for _, s := range b.spans[b.lines[a.next]:end] {
		a.fields = append(a.fields, LoadField{Value: b.buf[s.start:s.end:s.end], Null: s.null})
	}
	a.next++
	return a.fields, nil
}

// close stops the reading ahead, and returns once the goroutine has let
// go of the LoadReader (after the read it may be in the middle of).
func (a *lineAhead) close() {
	close(a.stop)
	<-a.done
}
