package toolsearch

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcphost/mcphost/mcphost"
)

// FuzzParseArgs: ParseArgs never panics, and what it accepts is a
// non-empty query with a limit in range, which the search answers.
func FuzzParseArgs(f *testing.F) {
	for _, s := range []string{`{"query":"take a screenshot","limit":3}`, `{"query":"x","limit":null}`,
		`{"query":"x","limit":2.5}`, `{"query":"\u0000","limit":-1}`, `[]`, ``, `{"query":"x"}{}`} {
		f.Add([]byte(s))
	}
	idx := New(func() []mcphost.Tool { return fixture })
	f.Fuzz(func(t *testing.T, args []byte) {
		a, err := ParseArgs(args)
		if err != nil {
			return
		}
		if strings.TrimSpace(a.Query) == "" || a.Limit < 1 || a.Limit > MaxLimit {
			t.Fatalf("ParseArgs(%q) = %+v", args, a)
		}
		if !json.Valid(args) {
			t.Fatalf("ParseArgs accepted invalid JSON %q", args)
		}
		if got := idx.Search(a.Query, a.Limit); len(got) > a.Limit {
			t.Fatalf("Search returned %d results, limit %d", len(got), a.Limit)
		}
	})
}

// FuzzTerms: splitting any text into terms never panics, yields only
// non-empty valid UTF-8 lower-case terms, and the estimate of its tokens
// is at most one per byte.
func FuzzTerms(f *testing.F) {
	for _, s := range []string{"browser_take_screenshot", "getHTTPServerURL", "Größe\xff日本", "  ", "a1b2C3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, term := range terms(nil, s) {
			if term == "" || !utf8.ValidString(term) || stopWords[term] {
				t.Fatalf("terms(%q) has %q", s, term)
			}
		}
		if n := EstimateTokens([]byte(s)); n < 0 || n > len(s) || (n == 0) != (s == "") {
			t.Fatalf("EstimateTokens(%q) = %d", s, n)
		}
	})
}
