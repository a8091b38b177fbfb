package anthropic

import (
	"encoding/json"
	"testing"
)

// FuzzReferencedTools: a tool_search_tool_result from the API, whatever it
// holds, maps only to tools the agent offered, each once.
func FuzzReferencedTools(f *testing.F) {
	f.Add([]byte(`{"type":"tool_search_tool_result","content":{"type":"tool_search_tool_search_result","tool_references":[{"type":"tool_reference","tool_name":"mcp__web__search"}]}}`))
	f.Add([]byte(`{"content":{"tool_references":[{"tool_name":"mcp__notes__delete_note"},{"tool_name":"mcp__web__post"},{"tool_name":"mcp__web__fetch"}]}}`))
	offered := deferFixture()
	f.Fuzz(func(t *testing.T, block []byte) {
		var res ToolSearchResult
		if json.Unmarshal(block, &res) != nil {
			return
		}
		seen := map[string]bool{}
		for _, tl := range ReferencedTools(res.Content.ToolReferences, offered) {
			if !tl.Offered() || seen[tl.Name] {
				t.Fatalf("ReferencedTools returned %s (offered %v, repeated %v)", tl.Name, tl.Offered(), seen[tl.Name])
			}
			seen[tl.Name] = true
		}
	})
}
