package anthropic

import (
	"encoding/base64"
	"encoding/json"
	"slices"

	"github.com/mcphost/mcphost/internal/strictlimit"
	"github.com/mcphost/mcphost/internal/toolresult"
	"github.com/mcphost/mcphost/mcphost"
	"github.com/mcphost/mcphost/schema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Anthropic's limits on strict tools in one request ("Structured outputs",
// JSON Schema limitations,
// https://platform.claude.com/docs/en/build-with-claude/structured-outputs).
// Anthropic refuses a request over any of them whole (HTTP 400,
// invalid_request_error): the model sees none of its tools. Tools never
// builds such a request; see its documentation.
const (
	// MaxStrictTools is the most tools one request may mark strict.
	MaxStrictTools = strictlimit.AnthropicTools
	// MaxStrictOptional is the most optional properties the strict tools
	// of one request may have together.
	MaxStrictOptional = strictlimit.AnthropicOptional
	// MaxStrictUnions is the most schemas with anyOf or a type list the
	// strict tools of one request may have together.
	MaxStrictUnions = strictlimit.AnthropicUnions
)

// Tool is one entry of a Messages API request's "tools" array
// (https://docs.anthropic.com/en/api/messages).
type Tool struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// InputSchema is the tool's input schema as mcphost offers it (the
	// strict form when Strict).
	InputSchema json.RawMessage `json:"input_schema"`
	// Strict asks for strict tool use. It is always marshaled, false
	// included.
	Strict bool `json:"strict"`
}

// ToolUse is a "tool_use" content block of an assistant message: the model
// calling a tool.
type ToolUse struct {
	Type  string          `json:"type"` // "tool_use"
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// ToolResultBlock is a "tool_result" content block of a user message: the
// result of the tool use ToolUseID, sent back to the model.
type ToolResultBlock struct {
	Type      string         `json:"type"` // always "tool_result"
	ToolUseID string         `json:"tool_use_id"`
	Content   []ContentBlock `json:"content"`
	// IsError tells the model the call failed. It is always marshaled.
	IsError bool `json:"is_error"`
}

// ContentBlock is a block of a tool result's content: {"type":"text",
// "text":...} or {"type":"image","source":{...}}. Text is never empty in
// what this package builds (the API refuses empty text blocks).
type ContentBlock struct {
	Type   string       `json:"type"`
	Text   string       `json:"text,omitempty"`
	Source *ImageSource `json:"source,omitempty"`
}

// ImageSource is the source of an image block: base64 data of a PNG, JPEG,
// GIF or WebP image.
type ImageSource struct {
	Type      string `json:"type"` // always "base64"
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
}

// Tools returns the Messages API tool definitions of tools, in order,
// skipping any tool whose Decision is mcphost.Deny. A tool is strict when
// its form for the "anthropic" profile (Tool.SchemaFor) is strict and ready
// for it, and marking it strict keeps the request within
// MaxStrictTools, MaxStrictOptional and MaxStrictUnions, counting the
// strict tools before it; every other tool has "strict": false. It returns
// nil when no tool is offered, so that a request field tagged omitempty
// leaves "tools" out. The result shares no memory with tools.
//
// The limits apply to one request: pass Tools every tool the request
// carries, not a part of them. A tool sent non-strict because of them is
// still offered, in its strict-ready form, and its calls are checked by
// mcphost against the server's schema as every call is; only the
// provider's guarantee that the arguments fit is lost. A single tool whose
// own form has more optional properties or union-typed parameters than
// the request limits is never strict-ready for this profile
// (Tool.StrictProblems["anthropic"] says so), so it cannot take the
// budget of the others.
//
// Anthropic also compiles the strict schemas of a request into one
// grammar and refuses, with HTTP 400 and "The compiled grammar is too
// large", a request whose grammar passes a size it does not document
// (reported in anthropics/anthropic-sdk-python#1185). Tools cannot keep
// within a limit that is not published: an agent that meets that error
// should pass Tools fewer tools, or mark fewer of them strict.
func Tools(tools []mcphost.Tool) []Tool {
	var (
		out    []Tool
		budget = strictBudget{tools: MaxStrictTools, optional: MaxStrictOptional, unions: MaxStrictUnions}
	)
	for _, t := range tools {
		if !t.Offered() {
			continue
		}
		input, ready := t.SchemaFor(schema.Anthropic)
		out = append(out, Tool{
			Name:        t.Name,
			Description: t.Description,
			InputSchema: slices.Clone(input),
			Strict:      ready && budget.take(input),
		})
	}
	return out
}

// ToolResult returns the tool_result block that answers the tool use
// toolUseID with res, the result of Session.Call: text blocks, image blocks
// for PNG, JPEG, GIF and WebP images, text placeholders for what the API
// cannot take, and is_error from res.IsError. See the package documentation
// for the whole mapping. A nil res is read as a result with no content.
func ToolResult(toolUseID string, res *mcp.CallToolResult) ToolResultBlock {
	parts := toolresult.Render(res, toolresult.Target{Name: "Anthropic tool results", Images: true, ErrorFlag: true})
	block := ToolResultBlock{Type: "tool_result", ToolUseID: toolUseID,
		Content: make([]ContentBlock, len(parts)), IsError: res != nil && res.IsError}
	for i, p := range parts {
		if p.Image == nil {
			block.Content[i] = ContentBlock{Type: "text", Text: p.Text}
			continue
		}
		block.Content[i] = ContentBlock{Type: "image", Source: &ImageSource{
			Type:      "base64",
			MediaType: p.Image.MediaType,
			Data:      base64.StdEncoding.EncodeToString(p.Image.Data),
		}}
	}
	return block
}

// ToolError returns the tool_result block that answers the tool use
// toolUseID when Session.Call returned err instead of a result: is_error is
// set and the model reads "The call failed: " and the error's text (which
// says whether the tool was denied, declined, or called with bad arguments,
// and how to correct the call).
func ToolError(toolUseID string, err error) ToolResultBlock {
	return ToolResultBlock{Type: "tool_result", ToolUseID: toolUseID, IsError: true,
		Content: []ContentBlock{{Type: "text", Text: toolresult.ErrorText(err)}}}
}
