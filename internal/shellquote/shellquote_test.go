package shellquote

import (
	"os/exec"
	"testing"
)

func TestQuote(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"mcp__notes__write", "mcp__notes__write"},
		{"program:notes", "program:notes"},
		{"/tmp/a b/mcphost.toml", "'/tmp/a b/mcphost.toml'"},
		{"", "''"},
		{"it's", `'it'\''s'`},
		{"$(touch x)", "'$(touch x)'"},
		{"a;b", "'a;b'"},
	} {
		if got := Quote(tc.in); got != tc.want {
			t.Errorf("Quote(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// TestQuoteShell has a real shell read each quoted word back.
func TestQuoteShell(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh here")
	}
	for _, s := range []string{"plain", "a b", "it's", "'", "''x'", "$HOME", "`id`", "$(id)", "a\\b", "*", "~", "x\ny", "-n"} {
		out, err := exec.Command(sh, "-c", "printf '%s' "+Quote(s)).Output()
		if err != nil || string(out) != s {
			t.Errorf("sh read %s back as %q (%v), want %q", Quote(s), out, err, s)
		}
	}
}
