package mcphost

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"regexp"
	"slices"
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
	// A notice shows the last noticeLines lines of stderr, at most
	// noticeBytes of them, and the first line that looks like an error
	// when it is not among them.
	noticeLines = 20
	noticeBytes = 4 << 10
)

// stderrLog receives a server's stderr: it keeps a bounded tail for notices
// and routes whole lines to the logger at debug level. Memory stays bounded
// however much a server writes: the tail is a fixed window and a line longer
// than maxLogLine is cut.
type stderrLog struct {
	server string
	logger *slog.Logger

	mu       sync.Mutex
	tail     []byte // the last stderrTail bytes, at most
	line     []byte // the current, unfinished line, at most maxLogLine
	cut      bool   // the current line was cut
	written  int64
	firstErr string // the first line that looks like an error, "" until one is seen
	lines    int64  // lines written so far
	errLine  int64  // the line number of firstErr
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
	// Lines are gathered to be logged, and until one that looks like an
	// error is seen (a server's first error is the one worth showing).
	gather := debug || s.firstErr == ""
	for len(p) > 0 && gather {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		{
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
		s.lines++
		if s.firstErr == "" && looksLikeError(s.line) {
			s.firstErr, s.errLine = printable(strings.ToValidUTF8(string(s.line), "\uFFFD"), 300), s.lines
		}
		if debug {
			s.flushLine()
		}
		s.line, s.cut = s.line[:0], false
		p = p[i+1:]
	}
	if !gather {
		s.lines += int64(bytes.Count(p, []byte{'\n'}))
	}
	return n, nil
}

// errorMarks are what the first error line of common runtimes contains:
// Node's "Error: ..." and "TypeError: ...", Python's traceback and
// exception lines, Go's panic, .NET's unhandled exception, and the words
// loggers use.
var errorMarks = []string{"Error:", "Error [", "error:", "ERROR", "Exception", "Traceback", "panic:", "FATAL", "fatal:", "Fatal"}

func looksLikeError(line []byte) bool {
	for _, m := range errorMarks {
		if bytes.Contains(line, []byte(m)) {
			return true
		}
	}
	return false
}

func (s *stderrLog) flushLine() {
	line := strings.ToValidUTF8(string(s.line), "\uFFFD")
	if s.cut {
		line += " [cut]"
	}
	s.logger.Debug("server stderr", "server", s.server, "line", line)
}

// Excerpt returns what a notice shows of the server's stderr: the last
// noticeLines lines, at most noticeBytes of them (the last line alone is
// cut to fit), preceded by the first line that looked like an error when
// that one is not among them. Control characters other than tab are shown as '?', so a server cannot
// drive the person's terminal through a notice.
func (s *stderrLog) Excerpt() string {
	s.mu.Lock()
	t := string(s.tail)
	first, errLine, lines := s.firstErr, s.errLine, s.lines
	s.mu.Unlock()
	t = strings.TrimRight(strings.ToValidUTF8(t, "\uFFFD"), "\n")
	if t == "" {
		return ""
	}
	all := strings.Split(t, "\n")
	var kept []string
	size := 0
	for i := len(all) - 1; i >= 0 && len(kept) < noticeLines; i-- {
		l := printable(all[i], 300)
		if size+len(l)+1 > noticeBytes {
			if len(kept) == 0 {
				kept = append(kept, printable(all[i], noticeBytes/4))
			}
			break
		}
		size += len(l) + 1
		kept = append(kept, l)
	}
	slices.Reverse(kept)
	out := strings.Join(kept, "\n")
	// The lines kept are the last len(kept) of the lines written (the
	// last one maybe unfinished).
	if first != "" && errLine <= lines-int64(len(kept))+1 && !strings.Contains(out, first) {
		out = first + "\n…\n" + out
	}
	return out
}

// networkMarks are what a runtime writes when it cannot resolve or reach a
// host: Node's and libuv's error codes, glibc's and Python's messages, and
// the errno text of a socket the sandbox refused.
var networkMarks = []string{"ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ENETUNREACH", "EHOSTUNREACH", "EAFNOSUPPORT",
	"getaddrinfo", "Temporary failure in name resolution", "Name or service not known", "Network is unreachable",
	"network is unreachable", "Address family not supported", "address family not supported", "fetch failed"}

// networkFailure returns the first network failure mark in the kept
// stderr, or "".
func (s *stderrLog) networkFailure() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range networkMarks {
		if bytes.Contains(s.tail, []byte(m)) {
			return m
		}
	}
	return ""
}

// destinations returns the destinations the server's stderr names in its
// network errors (networkDests): in the kept tail, and in the first error
// line when the tail no longer holds it.
func (s *stderrLog) destinations() []netDest {
	s.mu.Lock()
	text := string(s.tail)
	if !strings.Contains(text, s.firstErr) {
		text = s.firstErr + "\n" + text
	}
	s.mu.Unlock()
	return networkDests(text)
}

// text returns the kept tail of the server's stderr.
func (s *stderrLog) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.tail)
}

// Written reports how many bytes the server has written to stderr.
func (s *stderrLog) Written() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.written
}

// maxServerErrorText bounds, in characters, the text of an error that
// may carry a server's own words (see serverError).
const maxServerErrorText = 300

// serverError is an error from a request to a server (a JSON-RPC error it
// answered with, a result that did not decode, a start that failed):
// its text may be the server's own, of any length and with any
// characters, and it reaches the caller and, through a tool's error, the
// model. Error gives it printable and cut to maxServerErrorText
// characters; errors.Is and errors.As still reach the error it wraps.
type serverError struct{ err error }

func (e *serverError) Error() string { return printable(e.err.Error(), maxServerErrorText) }
func (e *serverError) Unwrap() error { return e.err }

// fromServer wraps err, if not nil, as a serverError.
func fromServer(err error) error {
	var se *serverError
	if err == nil || errors.As(err, &se) {
		return err
	}
	return &serverError{err}
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

// missingMarks find, in what a runtime writes when it cannot open a file,
// the absolute path it wanted: Node's module resolution and fs errors,
// Python's, and the C library's message. Compiled on first use, as
// destFinders.
var missingMarks = sync.OnceValue(func() []*regexp.Regexp {
	return []*regexp.Regexp{
		regexp.MustCompile(`Cannot find module '(/[^'\n]+)'`),
		regexp.MustCompile(`ENOENT: no such file or directory, [a-z]+ '(/[^'\n]+)'`),
		regexp.MustCompile(`\[Errno 2\] No such file or directory: '(/[^'\n]+)'`),
		regexp.MustCompile(`can't open file '(/[^'\n]+)'`),
		regexp.MustCompile(`(/[^\s:'"]+): No such file or directory`),
	}
})

// maxMissing bounds the paths missingPaths returns.
const maxMissing = 4

// missingPaths returns the absolute paths the kept stderr says the server
// could not find, at most maxMissing, each once.
func (s *stderrLog) missingPaths() []string {
	s.mu.Lock()
	t := string(s.tail)
	s.mu.Unlock()
	var out []string
	for _, re := range missingMarks() {
		for _, m := range re.FindAllStringSubmatch(t, -1) {
			if p := filepath.Clean(m[1]); !slices.Contains(out, p) && len(out) < maxMissing {
				out = append(out, p)
			}
		}
	}
	return out
}
