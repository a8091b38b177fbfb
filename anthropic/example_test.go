package anthropic_test

import (
	"encoding/json"
	"fmt"

	"github.com/mcphost/mcphost/anthropic"
	"github.com/mcphost/mcphost/mcphost"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func ExampleTools() {
	// In an agent: anthropic.Tools(session.Tools()).
	tools := []mcphost.Tool{{
		Name:           "mcp__notes__add_note",
		Description:    "Add a note.",
		Schema:         json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`),
		Strict:         true,
		StrictProblems: map[string]string{"openai": "", "anthropic": ""},
		Decision:       mcphost.Approval,
	}, {
		Name:     "mcp__notes__delete_note",
		Schema:   json.RawMessage(`{"type":"object"}`),
		Decision: mcphost.Deny, // never offered
	}}
	b, _ := json.Marshal(anthropic.Tools(tools))
	fmt.Println(string(b))
	// Output:
	// [{"name":"mcp__notes__add_note","description":"Add a note.","input_schema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false},"strict":true}]
}

func ExampleToolResult() {
	// The model used toolu_1; res is what Session.Call returned.
	res := &mcp.CallToolResult{Content: []mcp.Content{
		&mcp.TextContent{Text: "the chart:"},
		&mcp.ImageContent{MIMEType: "image/png", Data: []byte("\x89PNG\r\n\x1a\n")},
	}}
	b, _ := json.Marshal(anthropic.ToolResult("toolu_1", res))
	fmt.Println(string(b))
	// Output:
	// {"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"the chart:"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}],"is_error":false}
}

func ExampleToolError() {
	// Session.Call failed: tell the model why, so it can correct itself.
	err := &mcphost.CallError{Tool: "mcp__notes__delete_note", Err: mcphost.ErrDenied}
	b, _ := json.Marshal(anthropic.ToolError("toolu_2", err))
	fmt.Println(string(b))
	// Output:
	// {"type":"tool_result","tool_use_id":"toolu_2","content":[{"type":"text","text":"The call failed: mcp__notes__delete_note: tool denied by config"}],"is_error":true}
}
