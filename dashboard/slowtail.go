package dashboard

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"

	"github.com/basalt-db/basalt/slowlog"
)

// tailBytes is how much of the slow log's end tail reads: the page shows
// the latest entries, and a log written at threshold 0 grows by
// megabytes a second.
const tailBytes = 256 << 10

// tail returns the last n entries of the slow log file at path (none if
// it does not exist yet), oldest first. It reads only the file's last
// tailBytes, from the first entry that starts in them.
func tail(path string, n int) ([]slowlog.Entry, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	off := max(fi.Size()-tailBytes, 0)
	buf := make([]byte, fi.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil && err != io.EOF {
		return nil, err
	}
	if off > 0 {
		i := bytes.Index(buf, []byte("\n# Time: "))
		if i < 0 {
			return nil, nil
		}
		buf = buf[i+1:]
	}
	entries, err := slowlog.Parse(bytes.NewReader(buf))
	if len(entries) > n {
		entries = entries[len(entries)-n:]
	}
	return entries, err
}
