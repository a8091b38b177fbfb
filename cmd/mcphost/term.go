package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/mcphost/mcphost/mcphost"
	"github.com/mcphost/mcphost/pin"
)

// writeJSON writes v as indented JSON in which no character that could drive
// a terminal or hide from a reader appears raw: encoding/json already writes
// C0 controls as \u00XX escapes, and safeJSON escapes the rest (DEL, C1
// controls such as U+009B, bidi controls such as U+202E, zero-width and
// other invisible characters). The JSON means exactly what it meant, so it
// stays valid and equal when piped to a program, and its bytes are safe on
// a terminal.
func writeJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(safeJSON(buf.Bytes()))
	return err
}

// safeJSON rewrites every code point of b that pin.Escaped reports, other
// than the tab, newline and carriage return JSON's own whitespace uses, as a
// \uXXXX escape (a surrogate pair above U+FFFF). b must be encoding/json's
// output: valid UTF-8, with every other control character already escaped
// and such code points only inside strings, where the escape means the
// same code point.
func safeJSON(b []byte) []byte {
	var out []byte
	for i := 0; i < len(b); {
		r, size := rune(b[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRune(b[i:])
		}
		if r == '\t' || r == '\n' || r == '\r' || !pin.Escaped(r) {
			if out != nil {
				out = append(out, b[i:i+size]...)
			}
			i += size
			continue
		}
		if out == nil {
			out = append(make([]byte, 0, len(b)+64), b[:i]...)
		}
		if r > 0xffff {
			r -= 0x10000
			out = appendU(appendU(out, 0xd800+(r>>10)), 0xdc00+(r&0x3ff))
		} else {
			out = appendU(out, r)
		}
		i += size
	}
	if out == nil {
		return b
	}
	return out
}

func appendU(b []byte, r rune) []byte {
	const hex = "0123456789abcdef"
	return append(b, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
}

// isTerminal reports whether f is a terminal.
func isTerminal(f any) bool {
	file, ok := f.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(file.Fd()), unix.TCGETS)
	return err == nil
}

// progressPrinter writes a call's progress to w: on a terminal one line
// that each update rewrites, elsewhere a line per update. The server's
// message goes through pin.Visible and is kept to one line.
type progressPrinter struct {
	mu       sync.Mutex
	w        io.Writer
	terminal bool
	written  bool // an updating line is on the terminal
}

func (p *progressPrinter) print(pr mcphost.Progress) {
	line := fmt.Sprintf("progress %s: %g", pr.Tool, pr.Progress)
	if pr.Total > 0 {
		line += fmt.Sprintf("/%g", pr.Total)
	}
	if pr.Message != "" {
		line += " " + strings.ReplaceAll(pin.Visible(pr.Message), "\n", `\n`)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.terminal {
		if len(line) > 200 {
			line = line[:200] // Visible is ASCII-safe escapes and valid text; cut on a rune
			for !utf8.ValidString(line) {
				line = line[:len(line)-1]
			}
		}
		fmt.Fprintf(p.w, "\r\x1b[K%s", line)
		p.written = true
		return
	}
	fmt.Fprintln(p.w, line)
}

// done ends an updating line, so what follows starts on a line of its own.
func (p *progressPrinter) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.written {
		fmt.Fprintln(p.w)
		p.written = false
	}
}
