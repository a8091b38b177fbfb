package openai

import (
	"encoding/json"
	"testing"
)

// FuzzLoadedTools: a tool_search_output from the API, whatever it holds,
// maps only to tools the agent offered, each once.
func FuzzLoadedTools(f *testing.F) {
	f.Add([]byte(`{"type":"tool_search_output","tools":[{"type":"function","name":"mcp__web__search"},{"type":"namespace","name":"x"}]}`))
	f.Add([]byte(`{"tools":[{"type":"function","name":"mcp__notes__delete_note"},{"type":"function","name":"mcp__web__post"}]}`))
	offered := deferFixture()
	f.Fuzz(func(t *testing.T, item []byte) {
		var out ToolSearchOutput
		if json.Unmarshal(item, &out) != nil {
			return
		}
		seen := map[string]bool{}
		for _, tl := range LoadedTools(out, offered) {
			if !tl.Offered() || seen[tl.Name] {
				t.Fatalf("LoadedTools returned %s (offered %v, repeated %v)", tl.Name, tl.Offered(), seen[tl.Name])
			}
			seen[tl.Name] = true
		}
	})
}
