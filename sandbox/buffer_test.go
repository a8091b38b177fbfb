package sandbox

import (
	"bytes"
	"sync"
)

// lockedBuffer is a bytes.Buffer safe for the concurrent Write (from
// Process's stderr copy) and String (from a test).
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
