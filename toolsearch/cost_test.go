package toolsearch

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcphost/mcphost/anthropic"
	"github.com/mcphost/mcphost/mcphost"
	"github.com/mcphost/mcphost/openai"
)

func TestCost(t *testing.T) {
	tl := fixture[4]
	for _, tc := range []struct {
		profile string
		def     any
	}{
		{"openai", openai.ResponsesTools([]mcphost.Tool{tl})[0]},
		{"anthropic", anthropic.Tools([]mcphost.Tool{tl})[0]},
	} {
		b, _ := json.Marshal(tc.def)
		bytes, tokens, err := Cost(tl, tc.profile)
		if err != nil {
			t.Fatal(err)
		}
		if bytes != len(b) || tokens != EstimateTokens(b) {
			t.Errorf("%s: Cost = %d bytes, %d tokens; want %d, %d (%s)", tc.profile, bytes, tokens, len(b), EstimateTokens(b), b)
		}
		// A tool not offered is costed as if it were.
		denied := tl
		denied.Decision = mcphost.Deny
		denied.Withheld = true
		if db, dt, _ := Cost(denied, tc.profile); db != bytes || dt != tokens {
			t.Errorf("%s: denied tool costs %d, %d; offered %d, %d", tc.profile, db, dt, bytes, tokens)
		}
	}
	if _, _, err := Cost(tl, "gemini"); err == nil {
		t.Error("Cost accepted an unknown profile")
	}
	broken := tl
	broken.Schema = json.RawMessage(`{"type":`)
	broken.Schemas = nil
	if _, _, err := Cost(broken, "openai"); err == nil {
		t.Error("Cost accepted a schema that is not JSON")
	}
}

func TestEstimateTokens(t *testing.T) {
	tests := []struct {
		text string
		want int
	}{
		{"", 0},
		{"hello", 1},
		{"hello world", 2},
		{"internationalization", 2},
		{"getHTTPServer", 2},  // get, HTTPServer: only lower-to-upper changes split
		{"1234567", 3},        // 123 456 7
		{`{"a":"b"}`, 5},      // {" a ":" b "}
		{"line\n\n  next", 3}, // line, white space, next
		{`"a\nb\"c"`, 7},      // " a \n b \" c " (o200k_base: 6)
		{"日本語", 3},            // one per character outside ASCII
		{"\xff\xfe", 2},       // one per invalid byte
		{strings.Repeat(" ", 10), 1},
	}
	for _, tc := range tests {
		if got := EstimateTokens([]byte(tc.text)); got != tc.want {
			t.Errorf("EstimateTokens(%q) = %d, want %d", tc.text, got, tc.want)
		}
	}
}
