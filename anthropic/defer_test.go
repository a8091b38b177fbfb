package anthropic

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/mcphost/mcphost/mcphost"
)

func deferFixture() []mcphost.Tool {
	mk := func(server, tool string, d mcphost.Decision) mcphost.Tool {
		name, _ := mcphost.ModelName(server, tool)
		return mcphost.Tool{Name: name, Server: server, Tool: tool, Description: tool + ".",
			Schema: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`), Strict: true,
			StrictProblems: map[string]string{"openai": "", "anthropic": ""}, Decision: d}
	}
	held := mk("web", "post", mcphost.Approval)
	held.Withheld = true
	return []mcphost.Tool{
		mk("notes", "list_notes", mcphost.Allow),
		mk("notes", "delete_note", mcphost.Deny),
		mk("web", "fetch", mcphost.Approval),
		held,
		mk("web", "search", mcphost.Approval),
	}
}

func TestDeferredTools(t *testing.T) {
	tools := deferFixture()
	got := DeferredTools(tools, func(t mcphost.Tool) bool { return t.Server == "notes" })
	b, _ := json.Marshal(got)
	want := `[` +
		`{"name":"mcp__notes__list_notes","description":"list_notes.","input_schema":{"type":"object","properties":{},"additionalProperties":false},"strict":true},` +
		`{"name":"mcp__web__fetch","description":"fetch.","input_schema":{"type":"object","properties":{},"additionalProperties":false},"strict":true,"defer_loading":true},` +
		`{"name":"mcp__web__search","description":"search.","input_schema":{"type":"object","properties":{},"additionalProperties":false},"strict":true,"defer_loading":true}]`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	for _, d := range DeferredTools(tools, nil) {
		if !d.DeferLoading {
			t.Errorf("nil keep: %s not deferred", d.Name)
		}
	}
	if got := DeferredTools(tools[1:2], nil); got != nil {
		t.Errorf("only a denied tool: got %v, want nil", got)
	}
	// Deferred tools count against the strict limits as Tools counts them.
	many := make([]mcphost.Tool, MaxStrictTools+3)
	for i := range many {
		many[i] = tools[0]
	}
	var strict int
	for _, d := range DeferredTools(many, nil) {
		if d.Strict {
			strict++
		}
	}
	if strict != MaxStrictTools {
		t.Errorf("%d strict deferred tools, want %d", strict, MaxStrictTools)
	}
}

func TestToolSearchTools(t *testing.T) {
	tests := []struct {
		v    any
		want string
	}{
		{ToolSearchBM25(), `{"type":"tool_search_tool_bm25_20251119","name":"tool_search_tool_bm25"}`},
		{ToolSearchRegex(), `{"type":"tool_search_tool_regex_20251119","name":"tool_search_tool_regex"}`},
		{ToolReferences("toolu_1", deferFixture()[2:3]),
			`{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"tool_reference","tool_name":"mcp__web__fetch"}]}`},
	}
	for _, tc := range tests {
		if b, _ := json.Marshal(tc.v); string(b) != tc.want {
			t.Errorf("got  %s\nwant %s", b, tc.want)
		}
	}
	b, _ := json.Marshal(ToolReferences("toolu_2", nil))
	if !strings.Contains(string(b), `"content":[{"type":"text","text":"No tool matches.`) {
		t.Errorf("nothing found: %s", b)
	}
}

func TestReferencedTools(t *testing.T) {
	// The blocks of a response in which Claude searched.
	resp := `[{"type":"server_tool_use","id":"srvtoolu_1","name":"tool_search_tool_bm25","input":{"query":"web"}},
		{"type":"tool_search_tool_result","tool_use_id":"srvtoolu_1","content":{"type":"tool_search_tool_search_result","tool_references":[
			{"type":"tool_reference","tool_name":"mcp__web__search"},
			{"type":"tool_reference","tool_name":"mcp__web__search"},
			{"type":"tool_reference","tool_name":"mcp__evil__exfiltrate"},
			{"type":"tool_reference","tool_name":"mcp__notes__delete_note"},
			{"type":"tool_reference","tool_name":"mcp__web__post"},
			{"type":"tool_reference","tool_name":"mcp__web__fetch"}]}}]`
	var blocks []json.RawMessage
	if err := json.Unmarshal([]byte(resp), &blocks); err != nil {
		t.Fatal(err)
	}
	var res ToolSearchResult
	if err := json.Unmarshal(blocks[1], &res); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tl := range ReferencedTools(res.Content.ToolReferences, deferFixture()) {
		got = append(got, tl.Name)
	}
	if want := []string{"mcp__web__search", "mcp__web__fetch"}; !slices.Equal(got, want) {
		t.Errorf("ReferencedTools = %v, want %v", got, want)
	}
}
