package mcphost

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

const (
	// stderrTail is how much of a server's stderr is kept for diagnostics.
	stderrTail = 16 << 10
	// maxLogLine bounds one stderr line routed to the logger.
	maxLogLine = 1 << 10
)

// stderrLog receives a server's stderr: it keeps a bounded tail for notices
// and routes whole lines to the logger at debug level. Memory stays bounded
// however much a server writes: the tail is a fixed window and a line longer
// than maxLogLine is cut.
type stderrLog struct {
	server string
	logger *slog.Logger

	mu      sync.Mutex
	tail    []byte // the last stderrTail bytes, at most
	line    []byte // the current, unfinished line, at most maxLogLine
	cut     bool   // the current line was cut
	written int64
}

func newStderrLog(server string, logger *slog.Logger) *stderrLog {
	return &stderrLog{server: server, logger: logger}
}

// Write never fails and never blocks on anything but the logger, so the
// child's stderr pipe is always drained.
func (s *stderrLog) Write(p []byte) (int, error) {
	n := len(p)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.written += int64(n)
	if len(p) >= stderrTail {
		s.tail = append(s.tail[:0], p[len(p)-stderrTail:]...)
	} else {
		if over := len(s.tail) + len(p) - stderrTail; over > 0 {
			s.tail = s.tail[:copy(s.tail, s.tail[over:])]
		}
		s.tail = append(s.tail, p...)
	}
	debug := s.logger.Enabled(context.Background(), slog.LevelDebug)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if debug {
			if room := maxLogLine - len(s.line); room < len(chunk) {
				s.line = append(s.line, chunk[:max(room, 0)]...)
				s.cut = true
			} else {
				s.line = append(s.line, chunk...)
			}
		}
		if i < 0 {
			break
		}
		if debug {
			s.flushLine()
		}
		p = p[i+1:]
	}
	return n, nil
}

func (s *stderrLog) flushLine() {
	line := strings.ToValidUTF8(string(s.line), "\uFFFD")
	if s.cut {
		line += " [cut]"
	}
	s.logger.Debug("server stderr", "server", s.server, "line", line)
	s.line, s.cut = s.line[:0], false
}

// Tail returns the last n lines (at most) of what the server wrote, for a
// notice. Control characters other than tab are shown as '?', so a server
// cannot drive the person's terminal through a notice.
func (s *stderrLog) Tail(n int) string {
	s.mu.Lock()
	t := string(s.tail)
	s.mu.Unlock()
	t = strings.TrimRight(strings.ToValidUTF8(t, "\uFFFD"), "\n")
	if t == "" {
		return ""
	}
	lines := strings.Split(t, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for i, l := range lines {
		lines[i] = printable(l, 200)
	}
	return strings.Join(lines, "\n")
}

// Written reports how many bytes the server has written to stderr.
func (s *stderrLog) Written() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.written
}

// printable makes server-supplied text safe to show in a notice: control
// and format characters become '?', and it is cut to max runes.
func printable(s string, limit int) string {
	var b strings.Builder
	n := 0
	for _, r := range s {
		if n == limit {
			b.WriteString("…")
			break
		}
		n++
		switch {
		case r == '\t':
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == utf8.RuneError || unicode.Is(unicode.Cf, r):
			b.WriteByte('?')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
