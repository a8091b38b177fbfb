package pin

import (
	"strconv"
	"unicode"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// Visible returns s with every character a person could not see, or that a
// terminal would act on instead of showing, replaced by a visible escape.
// The result holds only printable ASCII and visible, non-space Unicode
// characters, so it is safe to write to a terminal, and two different inputs
// never give the same output.
//
// The escapes:
//
//	\\          a backslash (so a backslash in s cannot pass for an escape)
//	\t  \n      tab and newline
//	\x1b        the other C0 controls and DEL (U+0000..U+001F, U+007F)
//	\u009b      C1 controls (U+0080..U+009F)
//	\xff        a byte that is not part of valid UTF-8 (always 0x80 or above)
//	<U+200B>    a code point that is invisible, does not print, or only
//	            formats: zero-width characters (U+200B..U+200F, U+2060..),
//	            bidi controls (U+202A..U+202E, U+2066..U+2069, U+061C), the
//	            byte order mark, tag characters (U+E0000..U+E007F), variation
//	            selectors, every other format (Cf) and default-ignorable code
//	            point (such as Hangul fillers), private use and unassigned
//	            code points, and every space other than U+0020 (such as
//	            U+00A0), which a reader cannot tell from a plain space
//	\<          a '<' that is followed by "U+", so text cannot imitate the
//	            escape above
//
// Hex digits are lower case in \x and \u escapes and upper case, at least
// four, in <U+...>.
func Visible(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '\\' || c == '<' {
			return string(appendVisible(make([]byte, 0, len(s)+16), s, true))
		}
	}
	return s
}

// appendVisible appends s escaped as documented at Visible. With
// escapeBackslash false, backslashes are copied unchanged; Format uses that
// for display text, whose every backslash already starts an escape made by
// appendDisplayString.
func appendVisible(b []byte, s string, escapeBackslash bool) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '\\':
				if escapeBackslash {
					b = append(b, '\\', '\\')
				} else {
					b = append(b, '\\')
				}
			case c == '\t':
				b = append(b, '\\', 't')
			case c == '\n':
				b = append(b, '\\', 'n')
			case c < 0x20 || c == 0x7f:
				b = append(b, '\\', 'x', hexDigits[c>>4], hexDigits[c&0xf])
			case c == '<' && len(s) > i+2 && s[i+1] == 'U' && s[i+2] == '+':
				b = append(b, '\\', '<')
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, '\\', 'x', hexDigits[c>>4], hexDigits[c&0xf])
		case r <= 0x9f:
			b = append(b, '\\', 'u', '0', '0', hexDigits[r>>4], hexDigits[r&0xf])
		case invisible(r):
			b = append(b, "<U+"...)
			if r < 0x1000 {
				b = append(b, '0')
				if r < 0x100 {
					b = append(b, '0')
				}
			}
			b = strconv.AppendUint(b, uint64(r), 16)
			// AppendUint writes lower case; the <U+...> notation is upper case.
			for j := len(b) - 1; b[j] != '+'; j-- {
				if b[j] >= 'a' {
					b[j] -= 'a' - 'A'
				}
			}
			b = append(b, '>')
		default:
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return b
}

// invisible reports whether a non-ASCII code point above the C1 range must
// be shown as <U+...>: anything that is not a graphic character, every space
// but U+0020, and the code points Unicode says a renderer may ignore.
func invisible(r rune) bool {
	if !unicode.IsGraphic(r) {
		// Cc, Cf, Cs, Co, unassigned and noncharacters.
		return true
	}
	return unicode.In(r, unicode.Zs, unicode.Variation_Selector, unicode.Other_Default_Ignorable_Code_Point)
}

// Escaped reports whether Visible writes the code point r as an escape
// instead of as itself because a person could not see it or a terminal
// would act on it: every C0 control (tab and newline included), DEL, every
// C1 control, and every code point Visible shows as <U+...>. It is false for
// the backslash and '<', which Visible escapes only to keep its escapes
// unambiguous. Other encoders (JSON, for one) use it to keep the same
// characters from reaching a terminal raw.
func Escaped(r rune) bool {
	switch {
	case r < 0x20 || r == 0x7f:
		return true
	case r < utf8.RuneSelf:
		return false
	case r <= 0x9f:
		return true
	}
	return invisible(r)
}

// EscapeJSON rewrites every code point of b that Escaped reports, other
// than the tab, newline and carriage return of JSON's own white space, as
// a \uXXXX escape (a surrogate pair above U+FFFF), so that JSON text shown
// to a person, or kept in a file a person reviews, hides nothing and
// drives no terminal. b must be encoding/json's output (valid UTF-8, every
// other control character already escaped, such code points only inside
// strings, where the escape means the same code point). It returns b
// itself when nothing needs an escape.
func EscapeJSON(b []byte) []byte {
	var out []byte
	for i := 0; i < len(b); {
		r, size := rune(b[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRune(b[i:])
		}
		if r == '\t' || r == '\n' || r == '\r' || !Escaped(r) {
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
			out = appendEscapeU(appendEscapeU(out, 0xd800+(r>>10)), 0xdc00+(r&0x3ff))
		} else {
			out = appendEscapeU(out, r)
		}
		i += size
	}
	if out == nil {
		return b
	}
	return out
}

func appendEscapeU(b []byte, r rune) []byte {
	return append(b, '\\', 'u', hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
}
