package main

import (
	"bytes"
	"encoding/json"
	"io"
	"unicode/utf8"

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
