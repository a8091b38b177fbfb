package toolsearch_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost/mcphost/mcphost"
	"github.com/mcphost/mcphost/openai"
	"github.com/mcphost/mcphost/toolsearch"
)

// offered stands for Session.Tools.
func offered() []mcphost.Tool {
	tool := func(server, name, desc, schema string) mcphost.Tool {
		n, _ := mcphost.ModelName(server, name)
		return mcphost.Tool{Name: n, Server: server, Tool: name, Description: desc,
			Schema: json.RawMessage(schema), Decision: mcphost.Approval, Pin: mcphost.PinSame}
	}
	return []mcphost.Tool{
		tool("notes", "list_notes", "List the notes.", `{"type":"object","properties":{"query":{"type":"string"}},"additionalProperties":false}`),
		tool("browser", "take_screenshot", "Capture an image of the current page.", `{"type":"object","properties":{"fullPage":{"type":"boolean"}},"additionalProperties":false}`),
		tool("browser", "navigate", "Go to a URL.", `{"type":"object","properties":{"url":{"type":"string"}},"required":["url"],"additionalProperties":false}`),
	}
}

// call stands for Session.Call: every check mcphost makes for a tool
// happens there, for a loaded tool as for any other.
func call(ctx context.Context, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "(the result of " + name + ")"}}}, nil
}

// An agent loop that keeps the notes server's tools loaded and lets the
// model search for the rest.
func Example() {
	ctx := context.Background()
	idx := toolsearch.New(offered) // in an agent: toolsearch.New(session.Tools)
	loader, _ := idx.NewLoader("openai")
	always, _ := toolsearch.Split(offered(), toolsearch.Servers("notes"))

	// What the model does, turn by turn.
	model := []openai.ChatToolCall{
		{ID: "call_1", Function: openai.ChatFunctionCall{Name: toolsearch.ToolName, Arguments: `{"query":"screenshot of the page","limit":1}`}},
		{ID: "call_2", Function: openai.ChatFunctionCall{Name: "mcp__browser__take_screenshot", Arguments: `{"fullPage":true}`}},
	}
	for turn, tc := range model {
		// Each request: the always-loaded tools, the search tool, and
		// what searches loaded so far.
		tools := append(append(always, toolsearch.SearchTool()), loader.Loaded()...)
		var names []string
		for _, t := range openai.ChatTools(tools) {
			names = append(names, t.Function.Name)
		}
		fmt.Printf("turn %d offers %v\n", turn+1, names)

		var msg openai.ChatMessage
		if tc.Function.Name == toolsearch.ToolName {
			res, err := loader.Call(json.RawMessage(tc.Function.Arguments))
			if err != nil {
				msg = openai.ChatToolError(tc.ID, err)
			} else {
				msg = openai.ChatToolMessage(tc.ID, res)
			}
		} else {
			res, err := call(ctx, tc.Function.Name, json.RawMessage(tc.Function.Arguments))
			if err != nil {
				msg = openai.ChatToolError(tc.ID, err)
			} else {
				msg = openai.ChatToolMessage(tc.ID, res)
			}
		}
		text := msg.Content[0].Text
		if len(text) > 72 {
			text = text[:72] + "..."
		}
		fmt.Printf("  %s -> %s\n", tc.Function.Name, text)
	}
	// Output:
	// turn 1 offers [mcp__notes__list_notes mcphost_search_tools]
	//   mcphost_search_tools -> {"tools":[{"type":"function","name":"mcp__browser__take_screenshot","des...
	// turn 2 offers [mcp__notes__list_notes mcphost_search_tools mcp__browser__take_screenshot]
	//   mcp__browser__take_screenshot -> (the result of mcp__browser__take_screenshot)
}

func ExampleCost() {
	for _, t := range offered()[:1] {
		for _, profile := range []string{"openai", "anthropic"} {
			bytes, tokens, _ := toolsearch.Cost(t, profile)
			fmt.Printf("%s %s: %d bytes, ~%d tokens\n", t.Name, profile, bytes, tokens)
		}
	}
	// Output:
	// mcp__notes__list_notes openai: 199 bytes, ~45 tokens
	// mcp__notes__list_notes anthropic: 183 bytes, ~43 tokens
}
