package openai

import (
	"encoding/json"
	"slices"

	"github.com/mcphost/mcphost/internal/toolresult"
	"github.com/mcphost/mcphost/mcphost"
	"github.com/mcphost/mcphost/schema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ChatTool is one entry of a Chat Completions request's "tools" array
// (https://platform.openai.com/docs/api-reference/chat/create).
type ChatTool struct {
	Type     string       `json:"type"` // always "function"
	Function ChatFunction `json:"function"`
}

// ChatFunction is the function a ChatTool describes.
type ChatFunction struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Parameters is the tool's input schema as mcphost offers it (the
	// strict form when Strict).
	Parameters json.RawMessage `json:"parameters"`
	// Strict asks for structured decoding of the arguments. It is always
	// marshaled, false included.
	Strict bool `json:"strict"`
}

// ChatMessage is a message of a Chat Completions conversation, with the
// fields a tool loop uses: a user's or the assistant's text, the assistant's
// tool calls, and a tool's result (Role "tool", with ToolCallID).
type ChatMessage struct {
	Role string `json:"role"`
	// Content is a list of text parts (for a tool message the API accepts
	// nothing else). It is omitted when empty, as in an assistant message
	// that only calls tools.
	Content []ChatContentPart `json:"content,omitempty"`
	// ToolCalls are the assistant's calls, in an assistant message.
	ToolCalls []ChatToolCall `json:"tool_calls,omitempty"`
	// ToolCallID is the call a tool message answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
}

// ChatContentPart is a text content part.
type ChatContentPart struct {
	Type string `json:"type"` // always "text"
	Text string `json:"text"`
}

// ChatToolCall is one call in an assistant message's "tool_calls".
type ChatToolCall struct {
	ID       string           `json:"id"`
	Type     string           `json:"type"` // "function"
	Function ChatFunctionCall `json:"function"`
}

// ChatFunctionCall names the function a ChatToolCall calls and carries the
// model's arguments.
type ChatFunctionCall struct {
	Name string `json:"name"`
	// Arguments is the arguments as JSON text, as the model wrote them (it
	// may not be valid JSON; Session.Call says so to the model).
	Arguments string `json:"arguments"`
}

// ChatTools returns the Chat Completions tool definitions of tools, in
// order, skipping any tool whose Decision is mcphost.Deny. Strict is true
// when the tool is strict (its Schema is the strict form) and its "openai"
// profile reports no problem; it is false otherwise, a missing profile
// included. It returns nil when no tool is offered, so that a
// request field tagged omitempty leaves "tools" out. The result shares no
// memory with tools.
func ChatTools(tools []mcphost.Tool) []ChatTool {
	var out []ChatTool
	for _, t := range tools {
		if !t.Offered() {
			continue
		}
		params, strict := t.SchemaFor(schema.OpenAI)
		out = append(out, ChatTool{
			Type: "function",
			Function: ChatFunction{
				Name:        t.Name,
				Description: t.Description,
				Parameters:  slices.Clone(params),
				Strict:      strict,
			},
		})
	}
	return out
}

// ChatToolMessage returns the tool message that answers the call callID
// with res, the result of Session.Call. Chat Completions tool messages carry
// only text: an image becomes a text placeholder naming its MIME type and
// size ("[image (image/png, 1234 bytes) not shown: ...]"), as do audio and
// binary resources. See the package documentation for the whole mapping. A
// nil res is read as a result with no content.
func ChatToolMessage(callID string, res *mcp.CallToolResult) ChatMessage {
	parts := toolresult.Render(res, toolresult.Target{Name: "Chat Completions tool messages"})
	content := make([]ChatContentPart, len(parts))
	for i, p := range parts {
		// Render returns images only for a Target that accepts them.
		content[i] = ChatContentPart{Type: "text", Text: p.Text}
	}
	return ChatMessage{Role: "tool", ToolCallID: callID, Content: content}
}

// ChatToolError returns the tool message that answers the call callID when
// Session.Call returned err instead of a result: the model reads "The call
// failed: " and the error's text (which says whether the tool was denied,
// declined, or called with bad arguments, and how to correct the call).
func ChatToolError(callID string, err error) ChatMessage {
	return ChatMessage{Role: "tool", ToolCallID: callID,
		Content: []ChatContentPart{{Type: "text", Text: toolresult.ErrorText(err)}}}
}
