package bench

import (
	"fmt"
	"sync"
)

// logLimit is how much of a server's output a TailBuffer keeps.
const logLimit = 1 << 20

// TailBuffer is an io.Writer that keeps the last logLimit bytes written to
// it, for a server's output. It is safe for concurrent use.
type TailBuffer struct {
	mu      sync.Mutex
	buf     []byte
	dropped int
}

func (b *TailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	// Trim only when twice over the limit, so that trimming is amortised.
	if over := len(b.buf) - logLimit; over > logLimit {
		b.dropped += over
		b.buf = append([]byte(nil), b.buf[over:]...)
	}
	return len(p), nil
}

// String returns what is kept, with a note of how much was dropped.
func (b *TailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dropped > 0 {
		return fmt.Sprintf("[... %d bytes dropped ...]\n%s", b.dropped, b.buf)
	}
	return string(b.buf)
}
