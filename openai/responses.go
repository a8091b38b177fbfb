package openai

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mcphost/mcphost/internal/toolresult"
	"github.com/mcphost/mcphost/mcphost"
	"github.com/mcphost/mcphost/schema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ResponsesTool is one entry of a Responses API request's "tools" array: a
// function tool (https://platform.openai.com/docs/api-reference/responses/create).
type ResponsesTool struct {
	Type        string          `json:"type"` // always "function"
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
	// Strict is always marshaled, false included, so that no default of
	// the API's applies.
	Strict bool `json:"strict"`
}

// ResponsesTools returns the Responses API tool definitions of tools, in
// order, skipping any tool whose Decision is mcphost.Deny, with Strict set
// as ChatTools sets it. It returns nil when no tool is offered. The result
// shares no memory with tools.
func ResponsesTools(tools []mcphost.Tool) []ResponsesTool {
	var out []ResponsesTool
	for _, t := range tools {
		if !t.Offered() {
			continue
		}
		params, strict := t.SchemaFor(schema.OpenAI)
		out = append(out, ResponsesTool{
			Type:        "function",
			Name:        t.Name,
			Description: t.Description,
			Parameters:  slices.Clone(params),
			Strict:      strict,
		})
	}
	return out
}

// FunctionCall is a "function_call" item of a Responses API output: the
// model calling a tool.
type FunctionCall struct {
	Type   string `json:"type"` // "function_call"
	ID     string `json:"id,omitempty"`
	CallID string `json:"call_id"`
	Name   string `json:"name"`
	// Arguments is the arguments as JSON text, as the model wrote them.
	Arguments string `json:"arguments"`
}

// FunctionCallOutputItem is a "function_call_output" input item: the result
// of the function call CallID, sent back to the model.
type FunctionCallOutputItem struct {
	Type   string         `json:"type"` // always "function_call_output"
	CallID string         `json:"call_id"`
	Output FunctionOutput `json:"output"`
}

// FunctionOutput is the "output" of a function_call_output item. The API
// takes either a string or a list of input content items (input_text,
// input_image, input_file), per the API reference of responses.create
// (input → function tool call output → output) and the function calling
// guide (https://platform.openai.com/docs/guides/function-calling). It
// marshals as the list when Items is non-nil and as the string Text
// otherwise: text-only results stay a string, which every server that
// implements the API accepts.
type FunctionOutput struct {
	Text  string
	Items []InputContent
}

// InputContent is an item of a FunctionOutput list: {"type":"input_text",
// "text":...} or {"type":"input_image","image_url":...,"detail":...}, where
// image_url is a base64 data URL. Text is never empty in what this package
// builds.
type InputContent struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	ImageURL string `json:"image_url,omitempty"`
	Detail   string `json:"detail,omitempty"`
}

// MarshalJSON encodes the output as a JSON string or list (see
// FunctionOutput).
func (o FunctionOutput) MarshalJSON() ([]byte, error) {
	if o.Items != nil {
		return json.Marshal(o.Items)
	}
	return json.Marshal(o.Text)
}

// UnmarshalJSON decodes a JSON string into Text or a JSON list into Items,
// so that a journal of function_call_output items reads back as written.
// Anything else is an error.
func (o *FunctionOutput) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("openai: function output: %w", err)
		}
		*o = FunctionOutput{Text: s}
	case len(b) > 0 && b[0] == '[':
		items := []InputContent{}
		if err := json.Unmarshal(b, &items); err != nil {
			return fmt.Errorf("openai: function output: %w", err)
		}
		*o = FunctionOutput{Items: items}
	default:
		return errors.New("openai: function output: want a JSON string or list")
	}
	return nil
}

// FunctionCallOutput returns the function_call_output item that answers the
// call callID with res, the result of Session.Call. A text-only result is a
// string output, its parts joined by newlines. A result with an image the
// API takes (PNG, JPEG, GIF or WebP bytes) is a list of input_text and
// input_image items, the image as a base64 data URL with detail "auto"; any
// other image, audio and binary resources become text placeholders naming
// type and size. See the package documentation for the whole mapping. A nil
// res is read as a result with no content.
func FunctionCallOutput(callID string, res *mcp.CallToolResult) FunctionCallOutputItem {
	parts := toolresult.Render(res, toolresult.Target{Name: "Responses API function outputs", Images: true})
	item := FunctionCallOutputItem{Type: "function_call_output", CallID: callID}
	if !slices.ContainsFunc(parts, func(p toolresult.Part) bool { return p.Image != nil }) {
		texts := make([]string, len(parts))
		for i, p := range parts {
			texts[i] = p.Text
		}
		item.Output.Text = strings.Join(texts, "\n")
		return item
	}
	item.Output.Items = make([]InputContent, len(parts))
	for i, p := range parts {
		if p.Image == nil {
			item.Output.Items[i] = InputContent{Type: "input_text", Text: p.Text}
			continue
		}
		item.Output.Items[i] = InputContent{
			Type:     "input_image",
			ImageURL: "data:" + p.Image.MediaType + ";base64," + base64.StdEncoding.EncodeToString(p.Image.Data),
			Detail:   "auto",
		}
	}
	return item
}

// FunctionCallError returns the function_call_output item that answers the
// call callID when Session.Call returned err instead of a result: the model
// reads "The call failed: " and the error's text.
func FunctionCallError(callID string, err error) FunctionCallOutputItem {
	return FunctionCallOutputItem{Type: "function_call_output", CallID: callID,
		Output: FunctionOutput{Text: toolresult.ErrorText(err)}}
}
