package openai

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcphost/mcphost/internal/goldenfile"
	"github.com/mcphost/mcphost/internal/toolresult"
	"github.com/mcphost/mcphost/mcphost"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got, indented, with testdata/name (or writes it with
// -update).
func golden(t *testing.T, name string, got any) {
	t.Helper()
	goldenfile.Compare(t, filepath.Join("testdata", name), got, *update)
}

func loadTools(t *testing.T) []mcphost.Tool {
	t.Helper()
	return goldenfile.Load[[]mcphost.Tool](t, "testdata/tools.json")
}

// loadResult reads a tool result in MCP's wire form.
func loadResult(t testing.TB, path string) *mcp.CallToolResult {
	t.Helper()
	res := goldenfile.Load[mcp.CallToolResult](t, path)
	return &res
}

func TestToolsGolden(t *testing.T) {
	tools := loadTools(t)
	golden(t, "chat_tools.golden", ChatTools(tools))
	golden(t, "responses_tools.golden", ResponsesTools(tools))
}

// TestToolsStrict checks the strict flag per tool, that it is always
// marshaled, and that denied tools are never offered.
func TestToolsStrict(t *testing.T) {
	want := map[string]bool{
		"mcp__notes__list_notes": true,  // ready for every profile
		"mcp__notes__add_note":   true,  // ready for openai, not anthropic
		"mcp__web__fetch":        false, // not strict: Schema is the closed form
		"mcp__legacy__ping":      false, // no profile recorded: fail closed
	}
	tools := loadTools(t)
	chat, resp := ChatTools(tools), ResponsesTools(tools)
	if len(chat) != len(want) || len(resp) != len(want) {
		t.Fatalf("offered %d chat and %d responses tools, want %d each (the denied one left out)", len(chat), len(resp), len(want))
	}
	for i := range chat {
		name := chat[i].Function.Name
		strict, ok := want[name]
		if !ok {
			t.Errorf("offered %s, which is denied or unknown", name)
			continue
		}
		if chat[i].Function.Strict != strict || resp[i].Strict != strict {
			t.Errorf("%s: strict chat=%v responses=%v, want %v", name, chat[i].Function.Strict, resp[i].Strict, strict)
		}
		for _, v := range []any{chat[i].Function, resp[i]} {
			b, _ := json.Marshal(v)
			if !bytes.Contains(b, []byte(fmt.Sprintf(`"strict":%v`, strict))) {
				t.Errorf("%s: %s lacks an explicit strict", name, b)
			}
		}
	}
}

func TestToolsNoneOffered(t *testing.T) {
	denied := []mcphost.Tool{{Name: "mcp__a__b", Decision: mcphost.Deny, Schema: json.RawMessage(`{}`)}}
	for _, tools := range [][]mcphost.Tool{nil, denied} {
		if got := ChatTools(tools); got != nil {
			t.Errorf("ChatTools(%v) = %v, want nil", tools, got)
		}
		if got := ResponsesTools(tools); got != nil {
			t.Errorf("ResponsesTools(%v) = %v, want nil", tools, got)
		}
	}
}

// TestToolsNoAliasing checks that the definitions do not share the schema's
// memory with the tools they came from.
func TestToolsNoAliasing(t *testing.T) {
	tools := loadTools(t)
	chat, resp := ChatTools(tools), ResponsesTools(tools)
	tools[0].Schema[0] = 'X'
	if chat[0].Function.Parameters[0] != '{' || resp[0].Parameters[0] != '{' {
		t.Error("a tool definition shares its schema with the tool")
	}
}

func TestResultsGolden(t *testing.T) {
	paths, err := filepath.Glob("testdata/results/*.json")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no results in testdata/results: %v", err)
	}
	for _, path := range paths {
		name := strings.TrimSuffix(filepath.Base(path), ".json")
		t.Run(name, func(t *testing.T) {
			res := loadResult(t, path)
			golden(t, "results/"+name+".chat.golden", ChatToolMessage("call_1", res))
			golden(t, "results/"+name+".responses.golden", FunctionCallOutput("call_1", res))
		})
	}
}

// wire decodes a tool result from MCP's wire form.
func wire(t *testing.T, s string) *mcp.CallToolResult {
	t.Helper()
	var res mcp.CallToolResult
	if err := json.Unmarshal([]byte(s), &res); err != nil {
		t.Fatal(err)
	}
	return &res
}

// text returns the text a chat message carries.
func text(m ChatMessage) string {
	var b strings.Builder
	for _, p := range m.Content {
		b.WriteString(p.Text + "\n")
	}
	return b.String()
}

func TestChatToolMessage(t *testing.T) {
	png := loadResult(t, "testdata/results/image.json").Content[1].(*mcp.ImageContent).Data
	tests := []struct {
		name string
		res  *mcp.CallToolResult
		want []string // texts the message must carry, in order
	}{
		{"nil result", nil, []string{toolresult.NoContentNote}},
		{"empty text only", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{}}}, []string{toolresult.NoContentNote}},
		{"image placeholder", &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{MIMEType: "image/png", Data: png}}},
			[]string{fmt.Sprintf("[image (image/png, %d bytes) not shown: Chat Completions tool messages carry only text]", len(png))}},
		{"error first", &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "disk full"}}},
			[]string{toolresult.ErrorNote, "disk full"}},
		{"error without content", &mcp.CallToolResult{IsError: true}, []string{toolresult.ErrorNote, toolresult.NoContentNote}},
		{"typed nil items skipped", &mcp.CallToolResult{Content: []mcp.Content{(*mcp.TextContent)(nil), nil, &mcp.TextContent{Text: "ok"}}},
			[]string{"ok"}},
		{"not valid in a result", wire(t, `{"content":[{"type":"tool_use","id":"x","name":"y","input":{}}]}`),
			[]string{`[content of type "tool_use" not shown: it is not valid in a tool result]`}},
		{"structured without text", &mcp.CallToolResult{StructuredContent: map[string]any{"a": "<b>"}}, []string{`{"a":"<b>"}`}},
		{"structured that cannot be encoded", &mcp.CallToolResult{StructuredContent: func() {}},
			[]string{"[structured content not shown: it cannot be encoded as JSON"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := ChatToolMessage("call_9", tt.res)
			if m.Role != "tool" || m.ToolCallID != "call_9" {
				t.Errorf("role %q, tool_call_id %q", m.Role, m.ToolCallID)
			}
			if len(m.Content) != len(tt.want) {
				t.Fatalf("%d parts, want %d:\n%s", len(m.Content), len(tt.want), text(m))
			}
			for i, w := range tt.want {
				if m.Content[i].Type != "text" || !strings.HasPrefix(m.Content[i].Text, w) {
					t.Errorf("part %d = %+v, want text starting %q", i, m.Content[i], w)
				}
			}
		})
	}
}

func TestFunctionCallOutput(t *testing.T) {
	res := loadResult(t, "testdata/results/image.json")
	png := res.Content[1].(*mcp.ImageContent).Data
	out := FunctionCallOutput("call_2", res)
	if out.Type != "function_call_output" || out.CallID != "call_2" {
		t.Fatalf("type %q, call_id %q", out.Type, out.CallID)
	}
	if len(out.Output.Items) != 2 {
		t.Fatalf("want a text and an image item, got %+v", out.Output)
	}
	img := out.Output.Items[1]
	data, ok := strings.CutPrefix(img.ImageURL, "data:image/png;base64,")
	if img.Type != "input_image" || !ok || img.Detail != "auto" {
		t.Fatalf("image item %+v", img)
	}
	if b, err := base64.StdEncoding.DecodeString(data); err != nil || !bytes.Equal(b, png) {
		t.Errorf("image data does not round-trip: %v", err)
	}

	// Text only: a string, parts joined by newlines.
	out = FunctionCallOutput("call_3", loadResult(t, "testdata/results/error.json"))
	if out.Output.Items != nil || out.Output.Text != toolresult.ErrorNote+"\n"+`no note with id "7"` {
		t.Errorf("error output = %+v", out.Output)
	}
	b, err := json.Marshal(out)
	if err != nil || !bytes.Contains(b, []byte(`"output":"[the tool reported an error]\n`)) {
		t.Errorf("marshaled %s, %v: want output as a JSON string", b, err)
	}
}

func TestCallErrors(t *testing.T) {
	err := &mcphost.CallError{Tool: "mcp__notes__delete_note", Err: fmt.Errorf("%w: [mcp.notes] denies %q", mcphost.ErrDenied, "delete_note")}
	want := `The call failed: mcp__notes__delete_note: tool denied by config: [mcp.notes] denies "delete_note"`
	if m := ChatToolError("c1", err); m.Role != "tool" || m.ToolCallID != "c1" || text(m) != want+"\n" {
		t.Errorf("ChatToolError = %+v", m)
	}
	if o := FunctionCallError("c1", err); o.CallID != "c1" || o.Type != "function_call_output" || o.Output.Text != want {
		t.Errorf("FunctionCallError = %+v", o)
	}
	if o := FunctionCallError("c1", nil); o.Output.Text != "The call failed: no reason was given" {
		t.Errorf("FunctionCallError(nil) = %+v", o)
	}
}

func TestFunctionOutputJSON(t *testing.T) {
	tests := []struct {
		in      string
		want    FunctionOutput
		wantErr bool
	}{
		{`"done"`, FunctionOutput{Text: "done"}, false},
		{`""`, FunctionOutput{}, false},
		{`[]`, FunctionOutput{Items: []InputContent{}}, false},
		{`[{"type":"input_text","text":"a"}]`, FunctionOutput{Items: []InputContent{{Type: "input_text", Text: "a"}}}, false},
		{`{"text":"a"}`, FunctionOutput{}, true},
		{`null`, FunctionOutput{}, true},
		{`12`, FunctionOutput{}, true},
		{`"unterminated`, FunctionOutput{}, true},
		{`[{"type":1}]`, FunctionOutput{}, true},
	}
	for _, tt := range tests {
		var got FunctionOutput
		err := json.Unmarshal([]byte(tt.in), &got)
		if (err != nil) != tt.wantErr {
			t.Errorf("Unmarshal(%s): error %v, want error %v", tt.in, err, tt.wantErr)
			continue
		}
		if err != nil {
			continue
		}
		b, _ := json.Marshal(got)
		if string(b) != tt.in {
			t.Errorf("Unmarshal(%s) then Marshal = %s", tt.in, b)
		}
		if fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("Unmarshal(%s) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

func TestFunctionOutputUnmarshalIntoItem(t *testing.T) {
	var item FunctionCallOutputItem
	in := `{"type":"function_call_output","call_id":"c","output":[{"type":"input_image","image_url":"data:image/png;base64,AA==","detail":"auto"}]}`
	if err := json.Unmarshal([]byte(in), &item); err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(item); string(b) != in {
		t.Errorf("round trip: %s", b)
	}
	var bad FunctionCallOutputItem
	if err := json.Unmarshal([]byte(`{"output":{}}`), &bad); err == nil || !strings.Contains(err.Error(), "want a JSON string or list") {
		t.Errorf("object output: error %v", err)
	}
}

// TestModelCalls decodes the model's side of a tool call as the APIs send
// it, and checks that it marshals back unchanged (an agent keeps it in the
// conversation).
func TestModelCalls(t *testing.T) {
	tests := []struct {
		in   string
		into any
		name string
		args string
	}{
		{`{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"mcp__notes__list_notes","arguments":"{\"query\":null}"}}]}`,
			&ChatMessage{}, "mcp__notes__list_notes", `{"query":null}`},
		{`{"type":"function_call","id":"fc_1","call_id":"call_1","name":"mcp__notes__add_note","arguments":"{\"text\":\"x\"}"}`,
			&FunctionCall{}, "mcp__notes__add_note", `{"text":"x"}`},
	}
	for _, tt := range tests {
		if err := json.Unmarshal([]byte(tt.in), tt.into); err != nil {
			t.Fatalf("%s: %v", tt.in, err)
		}
		var name, args string
		switch v := tt.into.(type) {
		case *ChatMessage:
			name, args = v.ToolCalls[0].Function.Name, v.ToolCalls[0].Function.Arguments
		case *FunctionCall:
			name, args = v.Name, v.Arguments
		}
		if name != tt.name || args != tt.args {
			t.Errorf("%s: decoded name %q, arguments %q", tt.in, name, args)
		}
		if b, _ := json.Marshal(tt.into); string(b) != tt.in {
			t.Errorf("round trip: %s\nwant %s", b, tt.in)
		}
	}
}
