package openai_test

import (
	"encoding/json"
	"fmt"

	"github.com/mcphost/mcphost/mcphost"
	"github.com/mcphost/mcphost/openai"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// tools stands for what Session.Tools returns.
var tools = []mcphost.Tool{{
	Name:           "mcp__notes__list_notes",
	Description:    "List the notes.",
	Schema:         json.RawMessage(`{"type":"object","properties":{"query":{"type":["string","null"]}},"required":["query"],"additionalProperties":false}`),
	Strict:         true,
	StrictProblems: map[string]string{"openai": "", "anthropic": ""},
	Decision:       mcphost.Allow,
}, {
	Name:           "mcp__web__fetch",
	Description:    "Fetch a URL.",
	Schema:         json.RawMessage(`{"type":"object","properties":{"url":{"type":"string","format":"uri"}},"required":["url"],"additionalProperties":false}`),
	StrictProblems: map[string]string{"openai": `/properties/url/format: format "uri" is not one OpenAI strict mode accepts`, "anthropic": ""},
	Decision:       mcphost.Approval,
}}

func ExampleChatTools() {
	// In an agent: openai.ChatTools(session.Tools()).
	b, _ := json.Marshal(openai.ChatTools(tools))
	fmt.Println(string(b))
	// Output:
	// [{"type":"function","function":{"name":"mcp__notes__list_notes","description":"List the notes.","parameters":{"type":"object","properties":{"query":{"type":["string","null"]}},"required":["query"],"additionalProperties":false},"strict":true}},{"type":"function","function":{"name":"mcp__web__fetch","description":"Fetch a URL.","parameters":{"type":"object","properties":{"url":{"type":"string","format":"uri"}},"required":["url"],"additionalProperties":false},"strict":false}}]
}

func ExampleResponsesTools() {
	for _, t := range openai.ResponsesTools(tools) {
		fmt.Println(t.Name, "strict:", t.Strict)
	}
	// Output:
	// mcp__notes__list_notes strict: true
	// mcp__web__fetch strict: false
}

func ExampleChatToolMessage() {
	// The model asked for call_1; res is what Session.Call returned.
	res := &mcp.CallToolResult{Content: []mcp.Content{
		&mcp.TextContent{Text: "1: buy milk"},
		&mcp.ImageContent{MIMEType: "image/png", Data: []byte("\x89PNG\r\n\x1a\n...")},
	}}
	b, _ := json.Marshal(openai.ChatToolMessage("call_1", res))
	fmt.Println(string(b))
	// Output:
	// {"role":"tool","content":[{"type":"text","text":"1: buy milk"},{"type":"text","text":"[image (image/png, 11 bytes) not shown: Chat Completions tool messages carry only text]"}],"tool_call_id":"call_1"}
}

func ExampleChatToolError() {
	// Session.Call failed: tell the model why, so it can correct itself.
	err := &mcphost.CallError{Tool: "mcp__notes__delete_note", Err: mcphost.ErrDenied}
	b, _ := json.Marshal(openai.ChatToolError("call_2", err))
	fmt.Println(string(b))
	// Output:
	// {"role":"tool","content":[{"type":"text","text":"The call failed: mcp__notes__delete_note: tool denied by config"}],"tool_call_id":"call_2"}
}

func ExampleFunctionCallOutput() {
	res := &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: `no note with id "7"`}}}
	b, _ := json.Marshal(openai.FunctionCallOutput("call_3", res))
	fmt.Println(string(b))
	// Output:
	// {"type":"function_call_output","call_id":"call_3","output":"[the tool reported an error]\nno note with id \"7\""}
}

func ExampleFunctionCallError() {
	err := fmt.Errorf("mcp__notes__add_note: %w", mcphost.ErrDeclined)
	b, _ := json.Marshal(openai.FunctionCallError("call_4", err))
	fmt.Println(string(b))
	// Output:
	// {"type":"function_call_output","call_id":"call_4","output":"The call failed: mcp__notes__add_note: call declined"}
}
