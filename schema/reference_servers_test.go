package schema

import (
	"testing"
)

// The input schemas of the npm reference servers
// (@modelcontextprotocol/server-everything, -filesystem and -memory, as
// their tools/list returned them; testdata/dump_tools.js wrote
// testdata/reference_servers.json). These are what mcphost meets first.

// TestReferenceServers closes every reference server tool and compares
// with testdata/reference_servers.golden.json (reviewed by hand).
func TestReferenceServers(t *testing.T) {
	compareGolden(t, "reference_servers.golden.json", referenceServers(t))
}

// TestReferenceServersRoundTrip checks generated arguments for every
// reference server tool: the required-only and the full set pass Check,
// and for tools with a strict form survive the null round trip.
func TestReferenceServersRoundTrip(t *testing.T) {
	for _, s := range referenceServers(t) {
		c, err := Close(s.Schema)
		if err != nil {
			t.Fatalf("%s: %v", s.ID, err)
		}
		for _, a := range generate(t, s.Schema) {
			roundTrip(t, s.ID, c, a)
		}
	}
}

// TestStrictShare reports, per profile, how many tools come out
// strict-ready, for the corpus and for the reference servers, and pins
// the numbers (they change only with a reviewed change of the goldens).
func TestStrictShare(t *testing.T) {
	for _, tc := range []struct {
		name   string
		set    []namedSchema
		openai int
		anthro int
	}{
		{"corpus", corpus(t), 7, 8},
		{"reference servers", referenceServers(t), 35, 35},
	} {
		ready := map[Profile]int{}
		for _, s := range tc.set {
			c, err := Close(s.Schema)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range Profiles() {
				if c.Problems[p] == "" {
					ready[p]++
				}
			}
		}
		n := len(tc.set)
		t.Logf("%s: %d schemas; strict-ready: OpenAI %d (%.0f%%), Anthropic %d (%.0f%%)",
			tc.name, n, ready[OpenAI], 100*float64(ready[OpenAI])/float64(n), ready[Anthropic], 100*float64(ready[Anthropic])/float64(n))
		if ready[OpenAI] != tc.openai || ready[Anthropic] != tc.anthro {
			t.Errorf("%s: strict-ready OpenAI %d, Anthropic %d; want %d, %d", tc.name, ready[OpenAI], ready[Anthropic], tc.openai, tc.anthro)
		}
	}
}
