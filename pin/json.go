package pin

import (
	"errors"
	"strings"

	"github.com/mcphost/mcphost/internal/jsontree"
)

// appendDisplay appends v pretty-printed for a person: two-space indents,
// keys sorted, numbers as written, strings by appendDisplayString. The text
// keeps the real code points of strings (control characters included); it
// must go through the display escaping of Format before it reaches a
// terminal.
func appendDisplay(b []byte, v *jsontree.Value, indent int) []byte {
	switch v.Kind {
	case jsontree.Array:
		if len(v.Arr) == 0 {
			return append(b, "[]"...)
		}
		b = append(b, '[')
		for i, e := range v.Arr {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendNewline(b, indent+1)
			b = appendDisplay(b, e, indent+1)
		}
		b = appendNewline(b, indent)
		return append(b, ']')
	case jsontree.Object:
		if len(v.Obj) == 0 {
			return append(b, "{}"...)
		}
		b = append(b, '{')
		for i := range v.Obj {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendNewline(b, indent+1)
			b = appendDisplayString(b, v.Obj[i].Name, true)
			b = append(b, ':', ' ')
			b = appendDisplay(b, v.Obj[i].Val, indent+1)
		}
		b = appendNewline(b, indent)
		return append(b, '}')
	case jsontree.String:
		return appendDisplayString(b, v.Str, true)
	default:
		return jsontree.AppendMinimal(b, v)
	}
}

func appendNewline(b []byte, indent int) []byte {
	b = append(b, '\n')
	for range indent {
		b = append(b, ' ', ' ')
	}
	return b
}

// appendDisplayString quotes s for the diff display. Only the quote and the
// backslash are escaped here, so that every backslash in display text starts
// an escape and a quote inside a string cannot pass for the end of it. A
// newline is written as the two characters \n and, if breakLines, followed
// by a real line break, so that the line diff follows the lines of a long
// description; a line ending in \n is therefore always inside a string.
// Every other code point is kept as is, for Format's escaping to show.
func appendDisplayString(b []byte, s string, breakLines bool) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '"' && c != '\\' && c != '\n' {
			continue
		}
		b = append(b, s[start:i]...)
		b = append(b, '\\')
		if c == '\n' {
			b = append(b, 'n')
			if breakLines {
				b = append(b, '\n')
			}
		} else {
			b = append(b, c)
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// errString is a refusal's text without the ErrInvalid prefix, for
// contexts that add their own prefix.
func errString(err error) string {
	if je, ok := errors.AsType[*jsontree.Error](err); ok {
		return je.Error()
	}
	if s, ok := strings.CutPrefix(err.Error(), ErrInvalid.Error()+": "); ok {
		return s
	}
	return err.Error()
}
