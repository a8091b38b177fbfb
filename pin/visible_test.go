package pin

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestVisible(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain ASCII unchanged", "Search notes (max 20) <b>&</b> ~!", "Search notes (max 20) <b>&</b> ~!"},
		{"letters and emoji unchanged", "naïve 日本語 مرحبا 😀 ©", "naïve 日本語 مرحبا 😀 ©"},
		{"combining mark unchanged", "e\u0301", "e\u0301"},
		{"empty", "", ""},
		{"backslash doubled", `C:\x1b\n`, `C:\\x1b\\n`},
		{"escape imitation", "<U+200B>", `\<U+200B>`},
		{"angle bracket alone", "<U>U+ a<b", "<U>U+ a<b"},
		{"tab and newline", "a\tb\nc", `a\tb\nc`},
		{"ESC", "\x1b[8mhidden\x1b[0m", `\x1b[8mhidden\x1b[0m`},
		{"BEL CR BS NUL DEL", "\a\r\b\x00\x7f", `\x07\x0d\x08\x00\x7f`},
		{"OSC title", "\x1b]0;title\x07", `\x1b]0;title\x07`},
		{"C1 controls", "\u0085\u009b31m", `\u0085\u009b31m`},
		{"invalid UTF-8", "a\xffb\xc3", `a\xffb\xc3`},
		{"encoded surrogate", "\xed\xa0\x80", `\xed\xa0\x80`},
		{"zero-width", "a\u200bb\u200cc\u200dd\u200ee\u200ff", "a<U+200B>b<U+200C>c<U+200D>d<U+200E>e<U+200F>f"},
		{"word joiner and invisible operators", "\u2060\u2061\u2062\u2063\u2064", "<U+2060><U+2061><U+2062><U+2063><U+2064>"},
		{"byte order mark", "\ufeffx", "<U+FEFF>x"},
		{"bidi embeddings and overrides", "\u202a\u202b\u202c\u202d\u202e", "<U+202A><U+202B><U+202C><U+202D><U+202E>"},
		{"bidi isolates", "\u2066\u2067\u2068\u2069", "<U+2066><U+2067><U+2068><U+2069>"},
		{"arabic letter mark", "\u061c", "<U+061C>"},
		{"tag characters", "\U000E0000\U000E0001\U000E0041\U000E007F", "<U+E0000><U+E0001><U+E0041><U+E007F>"},
		{"variation selectors", "\ufe00\ufe0f\U000E0100\U000E01EF\u180b", "<U+FE00><U+FE0F><U+E0100><U+E01EF><U+180B>"},
		{"soft hyphen", "a\u00adb", "a<U+00AD>b"},
		{"hangul fillers", "\u115f\u1160\u3164\uffa0", "<U+115F><U+1160><U+3164><U+FFA0>"},
		{"combining grapheme joiner", "a\u034fb", "a<U+034F>b"},
		{"spaces other than U+0020", "\u00a0\u2000\u2007\u200a\u202f\u205f\u3000", "<U+00A0><U+2000><U+2007><U+200A><U+202F><U+205F><U+3000>"},
		{"line and paragraph separators", "\u2028\u2029", "<U+2028><U+2029>"},
		{"private use", "\ue000\U000F0000\U0010FFFD", "<U+E000><U+F0000><U+10FFFD>"},
		{"noncharacters", "\ufffe\uffff\ufdd0", "<U+FFFE><U+FFFF><U+FDD0>"},
		{"unassigned", "\U0001FFFF\U000E0080", "<U+1FFFF><U+E0080>"},
		{"interlinear annotation", "\ufff9x\ufffb", "<U+FFF9>x<U+FFFB>"},
		{"replacement character kept", "\ufffd", "\ufffd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Visible(tt.in)
			if got != tt.want {
				t.Errorf("Visible(%+q) = %q, want %q", tt.in, got, tt.want)
			}
			checkVisible(t, got)
			if back, err := unvisible(got); err != nil || back != tt.in {
				t.Errorf("unvisible(%q) = %+q, %v; want %+q", got, back, err, tt.in)
			}
		})
	}
}

// checkVisible fails t if s holds anything Visible promises to escape.
func checkVisible(t testing.TB, s string) {
	t.Helper()
	for i, r := range s {
		switch {
		case r == utf8.RuneError:
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				t.Fatalf("raw invalid UTF-8 at byte %d of %q", i, s)
			}
		case r < 0x20 || (r >= 0x7f && r <= 0x9f):
			t.Fatalf("raw control character %U at byte %d of %q", r, i, s)
		case r > 0x7f && invisible(r):
			t.Fatalf("raw invisible character %U at byte %d of %q", r, i, s)
		case unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Co, r) || (unicode.IsSpace(r) && r != ' '):
			t.Fatalf("raw format, private or space character %U at byte %d of %q", r, i, s)
		}
	}
}

// unvisible decodes the escapes documented at Visible. It is the proof that
// Visible loses nothing: unvisible(Visible(s)) == s for every s.
func unvisible(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); {
		switch {
		case s[i] == '\\':
			if i+1 >= len(s) {
				return "", fmt.Errorf("lone backslash at %d", i)
			}
			switch s[i+1] {
			case '\\', '<':
				b.WriteByte(s[i+1])
				i += 2
			case 't':
				b.WriteByte('\t')
				i += 2
			case 'n':
				b.WriteByte('\n')
				i += 2
			case 'x':
				if i+4 > len(s) {
					return "", fmt.Errorf("short \\x at %d", i)
				}
				n, err := strconv.ParseUint(s[i+2:i+4], 16, 8)
				if err != nil || strings.ToLower(s[i+2:i+4]) != s[i+2:i+4] {
					return "", fmt.Errorf("bad \\x at %d", i)
				}
				if n >= 0x20 && n != 0x7f && n < 0x80 {
					return "", fmt.Errorf("\\x%02x escapes a printable character", n)
				}
				b.WriteByte(byte(n))
				i += 4
			case 'u':
				if i+6 > len(s) {
					return "", fmt.Errorf("short \\u at %d", i)
				}
				n, err := strconv.ParseUint(s[i+2:i+6], 16, 16)
				if err != nil || n < 0x80 || n > 0x9f {
					return "", fmt.Errorf("bad \\u at %d", i)
				}
				b.WriteRune(rune(n))
				i += 6
			default:
				return "", fmt.Errorf("unknown escape at %d", i)
			}
		case strings.HasPrefix(s[i:], "<U+"):
			end := strings.IndexByte(s[i:], '>')
			if end < 0 {
				return "", fmt.Errorf("unterminated <U+ at %d", i)
			}
			hexPart := s[i+3 : i+end]
			n, err := strconv.ParseUint(hexPart, 16, 32)
			if err != nil || len(hexPart) < 4 || strings.ToUpper(hexPart) != hexPart || (len(hexPart) > 4 && hexPart[0] == '0') {
				return "", fmt.Errorf("bad <U+%s> at %d", hexPart, i)
			}
			if !invisible(rune(n)) {
				return "", fmt.Errorf("<U+%s> escapes a visible character", hexPart)
			}
			b.WriteRune(rune(n))
			i += end + 1
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String(), nil
}

func TestVisibleUnchangedAllocatesNothing(t *testing.T) {
	s := "Search the user's notes by full-text query."
	if n := testing.AllocsPerRun(100, func() { _ = Visible(s) }); n != 0 {
		t.Errorf("Visible of plain text allocates %v times, want 0", n)
	}
}

// TestEscapedAgreesWithVisible checks Escaped against Visible for every
// code point that is not a surrogate.
func TestEscapedAgreesWithVisible(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if 0xd800 <= r && r <= 0xdfff || r == '\\' || r == '<' {
			continue
		}
		s := string(r)
		if got, want := Escaped(r), Visible(s) != s; got != want {
			t.Fatalf("Escaped(%U) = %v; Visible(%q) = %q", r, got, s, Visible(s))
		}
	}
	for _, r := range []rune{0x9b, 0x202e, 0x2066, 0x200e, 0x061c, 0x200b, 0x1b} {
		if !Escaped(r) {
			t.Errorf("Escaped(%U) = false", r)
		}
	}
}
