package mcphost

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Bounds on what a server writes to stdout that is not JSON-RPC. Real
// servers print a warning, a banner or a stray log line there; such a line
// is skipped (as the TypeScript SDK's client does), shown in a notice for
// the first few, and the server is stopped only when it writes more than
// maxStrayLines such lines, or maxStrayBytes of them, in a row: without a
// JSON-RPC message in between.
const (
	maxStrayLines   = 1000
	maxStrayBytes   = 1 << 20
	maxStrayNotices = 5   // per server process; later lines go to the debug log
	strayShown      = 200 // runes of a stray line shown in a notice or log
)

// stdoutReader reads a server's stdout as MCP's stdio transport frames it:
// one JSON-RPC message per line. A line that is not one (not JSON, or JSON
// that is no JSON-RPC message: a log record, a batch) is handed to stray and
// skipped. Blank lines are skipped silently. It is used by one goroutine.
type stdoutReader struct {
	br    *bufio.Reader
	limit int // the longest message, in bytes (lineLimit)
	// stray is called for each skipped line, with its start (at most a
	// few KiB), its whole length, and how many lines were skipped in a row
	// so far, this one included.
	stray func(start []byte, n int, row int)

	buf      []byte
	rowLines int // stray lines since the last message
	rowBytes int
}

func newStdoutReader(r io.Reader, limit int, stray func([]byte, int, int)) *stdoutReader {
	return &stdoutReader{br: bufio.NewReaderSize(r, 64<<10), limit: limit, stray: stray}
}

// errStrayFlood is wrapped by the error read returns when a server wrote
// more stray lines in a row than the bounds allow.
var errStrayFlood = errors.New("stdout flooded with lines that are not JSON-RPC")

// read returns the next JSON-RPC message. Its errors: the reader's (io.EOF
// at the end), a message longer than limit, or errStrayFlood.
func (r *stdoutReader) read() (jsonrpc.Message, error) {
	for {
		line, n, err := r.line()
		if len(bytes.TrimSpace(line)) > 0 {
			if n > r.limit {
				if b := bytes.TrimLeft(line, " \t\r"); b[0] == '{' {
					return nil, fmt.Errorf("a message of more than %d bytes (the bound for a result of max_output)", r.limit)
				}
			} else if msg, derr := jsonrpc.DecodeMessage(bytes.TrimSpace(line)); derr == nil {
				r.rowLines, r.rowBytes = 0, 0
				r.shrink()
				return msg, nil
			}
			r.rowLines++
			r.rowBytes += n
			r.stray(line, n, r.rowLines)
			if r.rowLines > maxStrayLines || r.rowBytes > maxStrayBytes {
				return nil, fmt.Errorf("%w: it wrote %d lines (%d bytes) to stdout in a row that are not JSON-RPC, more than the %d lines or %d bytes mcphost skips; the last: %s",
					errStrayFlood, r.rowLines, r.rowBytes, maxStrayLines, maxStrayBytes, strayText(line, n))
			}
		}
		if err != nil {
			return nil, err
		}
	}
}

// line reads one line without its newline. It keeps the whole line when
// it is at most limit bytes long, else only its start; n is its length.
// err is the reader's, for a last line without a newline.
func (r *stdoutReader) line() (line []byte, n int, err error) {
	r.buf = r.buf[:0]
	for {
		frag, err := r.br.ReadSlice('\n')
		n += len(frag)
		if n <= r.limit+1 {
			r.buf = append(r.buf, frag...)
		} else if len(r.buf) < 4<<10 {
			r.buf = append(r.buf, frag[:min(len(frag), 4<<10-len(r.buf))]...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		line := r.buf
		if err == nil {
			n-- // the newline
			line = bytes.TrimSuffix(line, []byte("\n"))
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		return line, n, err
	}
}

// shrink drops a buffer that a large message grew, so that one large
// result does not stay allocated for the server's life.
func (r *stdoutReader) shrink() {
	if cap(r.buf) > 1<<20 {
		r.buf = nil
	}
}

// strayText shows the start of a stray line of n bytes, made safe to print.
func strayText(start []byte, n int) string {
	t := "«" + printable(string(start), strayShown) + "»"
	if n > len(start) || len([]rune(string(start))) > strayShown {
		t += fmt.Sprintf(" (%d bytes)", n)
	}
	return t
}
