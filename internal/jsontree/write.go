package jsontree

import "strings"

// Append appends the compact JSON text of v: no white space, members in
// the order of v.Obj, and every literal as it was read (Raw, RawName)
// where there is one; strings and names a program made are written by
// AppendQuoted.
func Append(b []byte, v *Value) []byte { return appendValue(b, v, true) }

// AppendMinimal appends the compact JSON text of v with every string and
// name written by AppendQuoted, whatever escapes the sender used, and
// numbers as written, members in the order of v.Obj. Two trees that mean
// the same code points, numbers and order get the same text: on a tree
// whose members are sorted by name, it is pin's canonical form.
func AppendMinimal(b []byte, v *Value) []byte { return appendValue(b, v, false) }

func appendValue(b []byte, v *Value, asWritten bool) []byte {
	switch v.Kind {
	case Null:
		return append(b, "null"...)
	case Bool:
		if v.Bool {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	case Number:
		return append(b, v.Raw...)
	case String:
		if asWritten && v.Raw != "" {
			return append(b, v.Raw...)
		}
		return AppendQuoted(b, v.Str)
	case Array:
		b = append(b, '[')
		for i, e := range v.Arr {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendValue(b, e, asWritten)
		}
		return append(b, ']')
	default:
		b = append(b, '{')
		for i, m := range v.Obj {
			if i > 0 {
				b = append(b, ',')
			}
			if asWritten && m.RawName != "" {
				b = append(b, m.RawName...)
			} else {
				b = AppendQuoted(b, m.Name)
			}
			b = append(b, ':')
			b = appendValue(b, m.Val, asWritten)
		}
		return append(b, '}')
	}
}

// Size returns the length of Append's text for v, so that a caller that
// keeps the text can allocate it once, at its size.
func Size(v *Value) int {
	switch v.Kind {
	case Null:
		return len("null")
	case Bool:
		if v.Bool {
			return len("true")
		}
		return len("false")
	case Number:
		return len(v.Raw)
	case String:
		if v.Raw != "" {
			return len(v.Raw)
		}
		return QuotedSize(v.Str)
	case Array:
		n := 2 + max(len(v.Arr)-1, 0) // brackets and commas
		for _, e := range v.Arr {
			n += Size(e)
		}
		return n
	default:
		n := 2 + max(len(v.Obj)-1, 0) // braces and commas
		for _, m := range v.Obj {
			if m.RawName != "" {
				n += len(m.RawName)
			} else {
				n += QuotedSize(m.Name)
			}
			n += 1 + Size(m.Val) // the colon and the value
		}
		return n
	}
}

const hexDigits = "0123456789abcdef"

// AppendQuoted appends s, which must be valid UTF-8, as a JSON string
// literal that escapes only what JSON requires: the quote, the backslash
// and U+0000..U+001F (as \b, \t, \n, \f, \r or \u00xx, in lower case
// hex). Everything else, '<', '>', '&', U+2028 and U+2029 included, is
// written as its own UTF-8, so one sequence of code points has exactly one
// literal: pin's canonical form relies on it.
func AppendQuoted(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// QuotedSize returns the length of AppendQuoted's literal for s.
func QuotedSize(s string) int {
	n := len(s) + 2
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
			n++
		case c < 0x20:
			n += 5
		}
	}
	return n
}

// Quote returns AppendQuoted's literal for s as a string. A string that
// needs no escape costs one allocation.
func Quote(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' {
			return string(AppendQuoted(make([]byte, 0, QuotedSize(s)), s))
		}
	}
	return `"` + s + `"`
}

// EscapeToken escapes one JSON pointer reference token (RFC 6901 §3): ~
// as ~0 and / as ~1.
func EscapeToken(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

// UnescapeToken undoes EscapeToken.
func UnescapeToken(s string) string {
	if !strings.Contains(s, "~") {
		return s
	}
	return strings.NewReplacer("~1", "/", "~0", "~").Replace(s)
}
