package mcphost

import (
	"bytes"
	"strings"
	"sync"
	"testing"
)

// lockedWriter is a bytes.Buffer for writers on several goroutines.
type lockedWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func (w *lockedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestPhaseTrace: with MCPHOST_START_TRACE=1, a server's start and close
// and the session's Connect and Close each write one line with every
// phase, as BENCHMARKS.md reads them.
func TestPhaseTrace(t *testing.T) {
	t.Setenv("MCPHOST_START_TRACE", "1")
	var out lockedWriter
	saved := traceOut
	traceOut = &out
	t.Cleanup(func() { traceOut = saved })
	e := newEnv(t)
	s := e.connect(e.opts(), fixture("one"))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		prefix string
		phases []string
	}{
		{`mcphost: start "one": total `, []string{"config", "sandbox", "initialize", "list"}},
		{`mcphost: session connect: total `, []string{"setup", "protect", "gitless", "servers", "publish"}},
		{`mcphost: close "one": total `, []string{"process", "client"}},
		{`mcphost: session close: total `, []string{"servers", "records"}},
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != len(want) {
		t.Fatalf("want %d lines, got:\n%s", len(want), out.String())
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w.prefix) {
			t.Errorf("line %d: want %q..., got %s", i, w.prefix, lines[i])
		}
		for _, p := range w.phases {
			if !strings.Contains(lines[i], " "+p+" ") {
				t.Errorf("line %d lacks the phase %q: %s", i, p, lines[i])
			}
		}
	}
}
