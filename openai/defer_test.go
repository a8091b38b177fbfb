package openai

import (
	"encoding/json"
	"slices"
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

func TestDeferredResponsesTools(t *testing.T) {
	tools := deferFixture()
	keepNotes := func(t mcphost.Tool) bool { return t.Server == "notes" }
	tests := []struct {
		name string
		keep func(mcphost.Tool) bool
		want string
	}{
		{"keep notes", keepNotes, `[` +
			`{"type":"function","name":"mcp__notes__list_notes","description":"list_notes.","parameters":{"type":"object","properties":{},"additionalProperties":false},"strict":true},` +
			`{"type":"function","name":"mcp__web__fetch","description":"fetch.","parameters":{"type":"object","properties":{},"additionalProperties":false},"strict":true,"defer_loading":true},` +
			`{"type":"function","name":"mcp__web__search","description":"search.","parameters":{"type":"object","properties":{},"additionalProperties":false},"strict":true,"defer_loading":true}]`},
		{"nil keep defers all", nil, ""},
	}
	for _, tc := range tests {
		got := DeferredResponsesTools(tools, tc.keep)
		if tc.want != "" {
			b, _ := json.Marshal(got)
			if string(b) != tc.want {
				t.Errorf("%s:\n got %s\nwant %s", tc.name, b, tc.want)
			}
		}
		if tc.keep == nil {
			for _, d := range got {
				if !d.DeferLoading {
					t.Errorf("%s: %s not deferred", tc.name, d.Name)
				}
			}
		}
		if len(got) != 3 {
			t.Errorf("%s: %d tools, want 3 (denied and withheld skipped)", tc.name, len(got))
		}
	}
	if got := DeferredResponsesTools(tools[1:2], nil); got != nil {
		t.Errorf("only a denied tool: got %v, want nil", got)
	}
}

func TestToolSearchTools(t *testing.T) {
	tests := []struct {
		v    any
		want string
	}{
		{HostedToolSearch(), `{"type":"tool_search"}`},
		{ClientToolSearch("Find tools.", json.RawMessage(`{"type":"object"}`)),
			`{"type":"tool_search","execution":"client","description":"Find tools.","parameters":{"type":"object"}}`},
		{ToolSearchOutputItem("call_1", nil), `{"type":"tool_search_output","call_id":"call_1","execution":"client","tools":[]}`},
		{ToolSearchOutputItem("call_2", deferFixture()[1:3]),
			`{"type":"tool_search_output","call_id":"call_2","execution":"client","tools":[{"type":"function","name":"mcp__web__fetch","description":"fetch.","parameters":{"type":"object","properties":{},"additionalProperties":false},"strict":true}]}`},
	}
	for _, tc := range tests {
		if b, _ := json.Marshal(tc.v); string(b) != tc.want {
			t.Errorf("got  %s\nwant %s", b, tc.want)
		}
	}
}

func TestLoadedTools(t *testing.T) {
	// A hosted search's output, as a response carries it: a function
	// offered, one repeated, one the agent never sent, a denied one and a
	// namespace.
	item := `{"type":"tool_search_output","id":"tso_1","call_id":null,"execution":"server","status":"completed","tools":[
		{"type":"function","name":"mcp__web__search","description":"search.","parameters":{},"strict":true,"defer_loading":true},
		{"type":"function","name":"mcp__web__search","parameters":{}},
		{"type":"function","name":"mcp__evil__exfiltrate","parameters":{}},
		{"type":"function","name":"mcp__notes__delete_note","parameters":{}},
		{"type":"function","name":"mcp__web__post","parameters":{}},
		{"type":"namespace","name":"mcp__web__fetch","tools":[]}]}`
	var out ToolSearchOutput
	if err := json.Unmarshal([]byte(item), &out); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tl := range LoadedTools(out, deferFixture()) {
		got = append(got, tl.Name)
	}
	if want := []string{"mcp__web__search"}; !slices.Equal(got, want) {
		t.Errorf("LoadedTools = %v, want %v", got, want)
	}

	var call ToolSearchCall
	if err := json.Unmarshal([]byte(`{"type":"tool_search_call","id":"tsc_1","call_id":"call_9","execution":"client","arguments":{"query":"fetch a page","limit":3},"status":"completed"}`), &call); err != nil {
		t.Fatal(err)
	}
	if call.CallID != "call_9" || call.Execution != "client" || string(call.Arguments) != `{"query":"fetch a page","limit":3}` {
		t.Errorf("ToolSearchCall = %+v", call)
	}
}
