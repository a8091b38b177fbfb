package anthropic_test

import (
	"encoding/json"
	"fmt"

	"github.com/mcphost/mcphost/anthropic"
	"github.com/mcphost/mcphost/mcphost"
	"github.com/mcphost/mcphost/toolsearch"
)

// A Messages API request with Claude's tool search: the notes server's
// tools stay loaded, the others are deferred until a search references
// them. The search's result maps back to the session's tools.
func ExampleDeferredTools() {
	tools := []mcphost.Tool{ // in an agent: session.Tools()
		{Name: "mcp__notes__list_notes", Server: "notes", Description: "List the notes.",
			Schema: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`), Decision: mcphost.Allow},
		{Name: "mcp__web__fetch", Server: "web", Description: "Fetch a URL.",
			Schema: json.RawMessage(`{"type":"object","properties":{"url":{"type":"string"}},"required":["url"],"additionalProperties":false}`), Decision: mcphost.Approval},
	}
	reqTools := []any{anthropic.ToolSearchBM25()}
	for _, t := range anthropic.DeferredTools(tools, toolsearch.Servers("notes")) {
		reqTools = append(reqTools, t)
	}
	b, _ := json.Marshal(reqTools)
	fmt.Println(string(b))

	// Claude's response: a tool_search_tool_result block.
	var res anthropic.ToolSearchResult
	_ = json.Unmarshal([]byte(`{"type":"tool_search_tool_result","tool_use_id":"srvtoolu_1","content":{"type":"tool_search_tool_search_result","tool_references":[{"type":"tool_reference","tool_name":"mcp__web__fetch"}]}}`), &res)
	for _, t := range anthropic.ReferencedTools(res.Content.ToolReferences, tools) {
		// Its calls go to Session.Call, with every check.
		fmt.Println("loaded:", t.Name, t.Decision)
	}
	// Output:
	// [{"type":"tool_search_tool_bm25_20251119","name":"tool_search_tool_bm25"},{"name":"mcp__notes__list_notes","description":"List the notes.","input_schema":{"type":"object","properties":{},"additionalProperties":false},"strict":false},{"name":"mcp__web__fetch","description":"Fetch a URL.","input_schema":{"type":"object","properties":{"url":{"type":"string"}},"required":["url"],"additionalProperties":false},"strict":false,"defer_loading":true}]
	// loaded: mcp__web__fetch approval
}

// mcphost's own search instead of Claude's: the agent offers the search
// tool, defers the rest, and answers a search with tool references, which
// the API expands into the deferred definitions.
func ExampleToolReferences() {
	tools := []mcphost.Tool{
		{Name: "mcp__web__fetch", Server: "web", Tool: "fetch", Description: "Fetch a URL.",
			Schema: json.RawMessage(`{"type":"object","properties":{"url":{"type":"string"}},"required":["url"],"additionalProperties":false}`), Decision: mcphost.Approval},
	}
	idx := toolsearch.New(func() []mcphost.Tool { return tools }) // session.Tools
	loader, _ := idx.NewLoader("anthropic")
	reqTools := anthropic.DeferredTools(append(tools, toolsearch.SearchTool()), toolsearch.Names(toolsearch.ToolName))
	fmt.Println(len(reqTools), "tools, search tool deferred:", reqTools[1].DeferLoading)

	// Claude's tool_use of the search tool.
	use := anthropic.ToolUse{Type: "tool_use", ID: "toolu_3", Name: toolsearch.ToolName, Input: json.RawMessage(`{"query":"fetch a url","limit":3}`)}
	found, err := loader.Find(use.Input)
	if err != nil {
		b, _ := json.Marshal(anthropic.ToolError(use.ID, err))
		fmt.Println(string(b))
		return
	}
	b, _ := json.Marshal(anthropic.ToolReferences(use.ID, found))
	fmt.Println(string(b))
	// Output:
	// 2 tools, search tool deferred: false
	// {"type":"tool_result","tool_use_id":"toolu_3","content":[{"type":"tool_reference","tool_name":"mcp__web__fetch"}]}
}
