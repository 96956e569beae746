package server

import (
	"errors"
	"io"
)

// LOAD DATA LOCAL INFILE: the file is on the client, which sends it when
// asked in the middle of the COM_QUERY exchange, in the same sequence
// numbering:
//
//	server → 0xFB | file name (to the end of the packet)
//	client → the file's bytes, in packets of any size
//	client → an empty packet: the end of the file
//	server → the statement's OK or ERR
//
// A client that cannot (or will not) read the file sends the empty packet
// at once. Whatever the statement decides, the server reads up to the empty
// packet before it answers: anything else would leave file data to be read
// as the next command.

// LocalFileOpener is implemented by the ResultWriter of a COM_QUERY whose
// client announced CLIENT_LOCAL_FILES. OpenLocalFile asks the client for
// the file name and returns the stream of what it sends. The stream must
// be closed (which reads what is left of it) before the statement's result
// is written; a stream that is not read to its end is not an error.
type LocalFileOpener interface {
	OpenLocalFile(name string) (io.ReadCloser, error)
}

// errLocalFileOpen is OpenLocalFile called while another stream is open.
var errLocalFileOpen = errors.New("server: a LOAD DATA LOCAL stream is already open")

// OpenLocalFile implements LocalFileOpener. The session checks the
// client's capability (ConnInfo.Capabilities) before asking.
func (w *resultWriter) OpenLocalFile(name string) (io.ReadCloser, error) {
	c := w.c
	if w.local != nil {
		return nil, errLocalFileOpen
	}
	c.pio.begin()
	c.pio.wbuf = append(c.pio.wbuf, 0xfb)
	c.pio.wbuf = append(c.pio.wbuf, name...)
	c.pio.end()
	if err := c.pio.flush(); err != nil {
		c.quit = true
		return nil, err
	}
	w.local = &localFile{c: c, w: w}
	return w.local, nil
}

// localFile reads the packets of one LOCAL INFILE transfer. It hands out
// each packet's payload as it comes: it holds at most one packet in memory,
// however large the file.
type localFile struct {
	c    *conn
	w    *resultWriter
	buf  []byte // unread rest of the last packet (the packetIO's buffer)
	done bool   // the empty packet has been read
	err  error  // a read error: the connection is unusable
}

func (f *localFile) Read(p []byte) (int, error) {
	for len(f.buf) == 0 {
		if f.err != nil {
			return 0, f.err
		}
		if f.done {
			return 0, io.EOF
		}
		f.next()
	}
	n := copy(p, f.buf)
	f.buf = f.buf[n:]
	return n, nil
}

// next reads the next packet.
func (f *localFile) next() {
	data, err := f.c.pio.readPacket()
	switch {
	case err != nil:
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		f.err = err
		f.c.quit = true // out of step with the client
	case len(data) == 0:
		f.done = true
	default:
		f.buf = data
	}
}

// Close reads and drops what the client still sends, up to the empty
// packet, so that the response comes after it.
func (f *localFile) Close() error {
	f.buf = nil
	for !f.done && f.err == nil {
		f.next()
	}
	f.w.local = nil
	return f.err
}
