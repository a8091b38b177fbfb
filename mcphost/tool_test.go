package mcphost

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/mcphost/mcphost/schema"
)

// The regular expressions the byte loops of ModelName and validServerName
// replaced, kept as their specification.
var (
	modelNameRE  = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	serverNameRE = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
)

func TestNameCharsMatchRegexps(t *testing.T) {
	for _, s := range []string{
		"", "a", "Z", "0", "_", "-", "--", "a-", "-a", "a-b", "a--b", "a-b-c", "a_b", "A",
		"ab9", "9-9", "a\n", "a\n\n", "\na", "a ", " a", "a\x00", "\x00", "a.b", "a/b",
		"é", "a\xff", "\xff", "\xc3", "a\u200bb", "\U0001F600", "a-\u00e9", "x\r", "\t",
		"{", "`", "@", "[", "^", "~", strings.Repeat("a", 33), strings.Repeat("a-", 16) + "a",
	} {
		if got, want := modelNameChars(s), modelNameRE.MatchString(s); got != want {
			t.Errorf("modelNameChars(%q) = %v; the regexp says %v", s, got, want)
		}
		if got, want := serverNameChars(s), serverNameRE.MatchString(s); got != want {
			t.Errorf("serverNameChars(%q) = %v; the regexp says %v", s, got, want)
		}
	}
}

// FuzzNameChars: the byte loops accept exactly what the regexps accept.
func FuzzNameChars(f *testing.F) {
	for _, s := range []string{"a-b", "a--b", "-a", "a-", "A_b-9", "é", "a\n", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := modelNameChars(s), modelNameRE.MatchString(s); got != want {
			t.Fatalf("modelNameChars(%q) = %v; the regexp says %v", s, got, want)
		}
		if got, want := serverNameChars(s), serverNameRE.MatchString(s); got != want {
			t.Fatalf("serverNameChars(%q) = %v; the regexp says %v", s, got, want)
		}
	})
}

func TestModelName(t *testing.T) {
	tests := []struct {
		server, tool, want string
	}{
		{"notes", "list_notes", "mcp__notes__list_notes"},
		{"everything", "get-env", "mcp__everything__get-env"},
		{"my-server", "Tool_X", "mcp__my_server__Tool_X"},
		{"a", "b__c", "mcp__a__b__c"},
		{"s", strings.Repeat("x", 64-len("mcp__s__")), "mcp__s__" + strings.Repeat("x", 64-len("mcp__s__"))},
	}
	for _, tt := range tests {
		got, err := ModelName(tt.server, tt.tool)
		if err != nil || got != tt.want {
			t.Errorf("ModelName(%q, %q) = %q, %v; want %q", tt.server, tt.tool, got, err, tt.want)
		}
		s, tl, ok := SplitModelName(got)
		if !ok || s != tt.server || tl != tt.tool {
			t.Errorf("SplitModelName(%q) = %q, %q, %v", got, s, tl, ok)
		}
	}
}

func TestModelNameRefuses(t *testing.T) {
	for _, tc := range []struct{ server, tool string }{
		{"notes", ""},
		{"notes", "has space"},
		{"notes", "dotted.name"},
		{"notes", "slash/name"},
		{"notes", "ünïcode"},
		{"notes", "zero\u200bwidth"},
		{"notes", "new\nline"},
		{"notes", strings.Repeat("x", 64)},
		{"Bad", "t"},
		{"fs", "t"},
	} {
		if got, err := ModelName(tc.server, tc.tool); err == nil {
			t.Errorf("ModelName(%q, %q) = %q; want an error", tc.server, tc.tool, got)
		}
	}
}

func TestSplitModelNameRejects(t *testing.T) {
	for _, n := range []string{"", "mcp__", "mcp__x", "mcp____t", "mcp__a__", "fs__x__y", "mcp__A__t", "mcp__a__b c"} {
		if s, tl, ok := SplitModelName(n); ok {
			t.Errorf("SplitModelName(%q) = %q, %q, true", n, s, tl)
		}
	}
}

// FuzzModelName: a model name is valid for providers, maps back to exactly
// its server and tool, and two different (server, tool) pairs never share
// one.
func FuzzModelName(f *testing.F) {
	f.Add("notes", "list_notes")
	f.Add("a-b", "c")
	f.Add("a", "b__c")
	f.Add("a--b", "c")
	f.Add("x", "é")
	f.Fuzz(func(t *testing.T, server, tool string) {
		name, err := ModelName(server, tool)
		if err != nil {
			return
		}
		if len(name) > maxNameLen || !modelNameRE.MatchString(name) {
			t.Fatalf("ModelName(%q, %q) = %q: not a valid model name", server, tool, name)
		}
		s, tl, ok := SplitModelName(name)
		if !ok || s != server || tl != tool {
			t.Fatalf("SplitModelName(%q) = %q, %q, %v; want %q, %q", name, s, tl, ok, server, tool)
		}
	})
}

// TestSchemaFor: the one way to a provider's schema takes the profile's own
// form, strict only where the profile is ready; a hand-built tool without
// forms falls back to Schema, strict only with Strict; an unknown profile is
// never strict.
func TestSchemaFor(t *testing.T) {
	strictForm, closedForm := json.RawMessage(`{"strict":1}`), json.RawMessage(`{"closed":1}`)
	for _, tt := range []struct {
		name       string
		tool       Tool
		profile    schema.Profile
		want       string
		wantStrict bool
	}{
		{"ready", Tool{Schema: closedForm, Schemas: map[string]json.RawMessage{"anthropic": strictForm}, StrictProblems: map[string]string{"anthropic": ""}}, schema.Anthropic, `{"strict":1}`, true},
		{"not ready", Tool{Schema: strictForm, Strict: true, Schemas: map[string]json.RawMessage{"openai": closedForm}, StrictProblems: map[string]string{"openai": "too deep"}}, schema.OpenAI, `{"closed":1}`, false},
		{"hand-built, strict", Tool{Schema: strictForm, Strict: true, StrictProblems: map[string]string{"openai": ""}}, schema.OpenAI, `{"strict":1}`, true},
		{"hand-built, not strict", Tool{Schema: closedForm, StrictProblems: map[string]string{"openai": ""}}, schema.OpenAI, `{"closed":1}`, false},
		{"profile unknown to the tool", Tool{Schema: strictForm, Strict: true}, schema.Anthropic, `{"strict":1}`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, strict := tt.tool.SchemaFor(tt.profile)
			if string(got) != tt.want || strict != tt.wantStrict {
				t.Errorf("SchemaFor(%s) = %s %v, want %s %v", tt.profile, got, strict, tt.want, tt.wantStrict)
			}
		})
	}
}
