package anthropic

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
	"github.com/mcphost/mcphost/schema"
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
	golden(t, "tools.golden", Tools(loadTools(t)))
}

// TestToolsStrict checks the strict flag per tool, that it is always
// marshaled, and that denied tools are never offered.
func TestToolsStrict(t *testing.T) {
	want := map[string]bool{
		"mcp__notes__list_notes": true,  // ready for every profile
		"mcp__notes__add_note":   false, // ready for openai, not anthropic
		"mcp__web__fetch":        false, // anthropic-ready, but Schema is the closed form
		"mcp__legacy__ping":      false, // no profile recorded: fail closed
	}
	got := Tools(loadTools(t))
	if len(got) != len(want) {
		t.Fatalf("offered %d tools, want %d (the denied one left out)", len(got), len(want))
	}
	for _, tool := range got {
		strict, ok := want[tool.Name]
		if !ok {
			t.Errorf("offered %s, which is denied or unknown", tool.Name)
			continue
		}
		if tool.Strict != strict {
			t.Errorf("%s: strict %v, want %v", tool.Name, tool.Strict, strict)
		}
		b, _ := json.Marshal(tool)
		if !bytes.Contains(b, []byte(fmt.Sprintf(`"strict":%v`, strict))) {
			t.Errorf("%s: %s lacks an explicit strict", tool.Name, b)
		}
	}
}

func TestToolsNoneOffered(t *testing.T) {
	denied := []mcphost.Tool{{Name: "mcp__a__b", Decision: mcphost.Deny, Schema: json.RawMessage(`{}`)}}
	for _, tools := range [][]mcphost.Tool{nil, denied} {
		if got := Tools(tools); got != nil {
			t.Errorf("Tools(%v) = %v, want nil", tools, got)
		}
	}
}

func TestToolsNoAliasing(t *testing.T) {
	tools := loadTools(t)
	got := Tools(tools)
	tools[0].Schema[0] = 'X'
	if got[0].InputSchema[0] != '{' {
		t.Error("a tool definition shares its schema with the tool")
	}
}

// readyTool is a strict-ready tool with the given schema.
func readyTool(i int, schema string) mcphost.Tool {
	return mcphost.Tool{
		Name:           fmt.Sprintf("mcp__s__t%02d", i),
		Schema:         json.RawMessage(schema),
		Strict:         true,
		StrictProblems: map[string]string{"openai": "", "anthropic": ""},
		Decision:       mcphost.Allow,
	}
}

const (
	plain    = `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false}`
	oneUnion = `{"type":"object","properties":{"a":{"type":["string","null"]}},"required":["a"],"additionalProperties":false}`
	optional = `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["a"],"additionalProperties":false}`
)

// TestToolsStrictBudget checks that one request never marks more strict
// tools, optional properties or unions than Anthropic allows, and that a
// tool over the budget does not keep later, smaller ones from being strict.
func TestToolsStrictBudget(t *testing.T) {
	many := func(n int, schema string) []string {
		s := make([]string, n)
		for i := range s {
			s[i] = schema
		}
		return s
	}
	var seventeenUnions strings.Builder
	seventeenUnions.WriteString(`{"type":"object","properties":{`)
	for i := range 17 {
		if i > 0 {
			seventeenUnions.WriteString(",")
		}
		fmt.Fprintf(&seventeenUnions, `"p%d":{"anyOf":[{"type":"string"},{"type":"null"}]}`, i)
	}
	seventeenUnions.WriteString(`},"additionalProperties":false}`)

	tests := []struct {
		name    string
		schemas []string
		strict  int // how many tools, from the first, are strict
		also    []int
	}{
		{"20 plain tools", many(20, plain), 20, nil},
		{"21 plain tools", many(21, plain), 20, nil},
		{"16 unions", many(16, oneUnion), 16, nil},
		{"17 unions", many(17, oneUnion), 16, nil},
		{"24 optional", many(24, optional), 20, nil},
		{"13 tools of 2 optional", many(13, `{"type":"object","properties":{"a":{},"b":{}}}`), 12, nil},
		{"too big alone, then small", append([]string{seventeenUnions.String()}, plain, oneUnion), 0, []int{1, 2}},
		{"not JSON", []string{`{"type":`, plain}, 0, []int{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tools []mcphost.Tool
			for i, s := range tt.schemas {
				tools = append(tools, readyTool(i, s))
			}
			got := Tools(tools)
			for i, tool := range got {
				want := i < tt.strict
				for _, j := range tt.also {
					want = want || i == j
				}
				if tool.Strict != want {
					t.Errorf("tool %d: strict %v, want %v", i, tool.Strict, want)
				}
			}
		})
	}
}

func TestCount(t *testing.T) {
	tests := []struct {
		schema           string
		optional, unions int
		ok               bool
	}{
		{plain, 0, 0, true},
		{oneUnion, 0, 1, true},
		{optional, 1, 0, true},
		{`{"type":["string"]}`, 0, 0, true},
		{`{"properties":{"x":{"properties":{"y":{"anyOf":[{"type":["integer","null"]}]}}}},"required":["x"]}`, 1, 2, true},
		{`{"properties":{"a":{}},"required":"a"}`, 1, 0, true},
		{`{"$defs":{"d":{"anyOf":[]}}}`, 0, 1, true},
		{`[`, 0, 0, false},
		{``, 0, 0, false},
	}
	for _, tt := range tests {
		o, u, ok := count(json.RawMessage(tt.schema))
		if o != tt.optional || u != tt.unions || ok != tt.ok {
			t.Errorf("count(%s) = %d, %d, %v; want %d, %d, %v", tt.schema, o, u, ok, tt.optional, tt.unions, tt.ok)
		}
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

func TestResultsGolden(t *testing.T) {
	paths, err := filepath.Glob("testdata/results/*.json")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no results in testdata/results: %v", err)
	}
	for _, path := range paths {
		name := strings.TrimSuffix(filepath.Base(path), ".json")
		t.Run(name, func(t *testing.T) {
			golden(t, "results/"+name+".golden", ToolResult("toolu_1", loadResult(t, path)))
		})
	}
}

func TestToolResult(t *testing.T) {
	png := loadResult(t, "testdata/results/image.json").Content[1].(*mcp.ImageContent).Data
	tests := []struct {
		name    string
		res     *mcp.CallToolResult
		isError bool
		want    []string // text of each block, or "image/<type>" for an image block
	}{
		{"nil result", nil, false, []string{toolresult.NoContentNote}},
		{"error flag", &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "disk full"}}}, true, []string{"disk full"}},
		{"error without content", &mcp.CallToolResult{IsError: true}, true, []string{toolresult.NoContentNote}},
		{"image", &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{MIMEType: "image/png", Data: png}}}, false, []string{"image/png"}},
		{"mislabelled image uses its real type", &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{MIMEType: "image/gif", Data: png}}}, false, []string{"image/png"}},
		{"svg is not passed on", &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{MIMEType: "image/svg+xml", Data: []byte("<svg/>")}}}, false,
			[]string{"[image (image/svg+xml, 6 bytes) not shown: its data is not a PNG, JPEG, GIF or WebP image]"}},
		{"typed nil items skipped", &mcp.CallToolResult{Content: []mcp.Content{(*mcp.ImageContent)(nil), nil, &mcp.TextContent{Text: "ok"}}}, false, []string{"ok"}},
		{"not valid in a result", wire(t, `{"content":[{"type":"tool_use","id":"x","name":"y","input":{}}]}`), false,
			[]string{`[content of type "tool_use" not shown: it is not valid in a tool result]`}},
		{"structured mirrored", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `{"n":1}`}}, StructuredContent: map[string]int{"n": 1}}, false, []string{`{"n":1}`}},
		{"structured added", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "one"}}, StructuredContent: map[string]int{"n": 1}}, false, []string{"one", `{"n":1}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := ToolResult("toolu_9", tt.res)
			if b.Type != "tool_result" || b.ToolUseID != "toolu_9" || b.IsError != tt.isError {
				t.Errorf("block %+v", b)
			}
			if len(b.Content) != len(tt.want) {
				t.Fatalf("%d blocks, want %d: %+v", len(b.Content), len(tt.want), b.Content)
			}
			for i, w := range tt.want {
				c := b.Content[i]
				if strings.HasPrefix(w, "image/") {
					if c.Type != "image" || c.Source == nil || c.Source.Type != "base64" || c.Source.MediaType != w || c.Text != "" {
						t.Errorf("block %d = %+v, want a %s image", i, c, w)
						continue
					}
					if data, err := base64.StdEncoding.DecodeString(c.Source.Data); err != nil || !bytes.Equal(data, png) {
						t.Errorf("block %d: image data does not round-trip: %v", i, err)
					}
					continue
				}
				if c.Type != "text" || c.Text != w || c.Source != nil {
					t.Errorf("block %d = %+v, want text %q", i, c, w)
				}
			}
			raw, _ := json.Marshal(b)
			if !bytes.Contains(raw, []byte(`"is_error":`)) {
				t.Errorf("%s lacks an explicit is_error", raw)
			}
		})
	}
}

func TestToolError(t *testing.T) {
	err := &mcphost.CallError{Tool: "mcp__notes__add_note", Err: fmt.Errorf("%w: the approver declined", mcphost.ErrDeclined)}
	b := ToolError("toolu_2", err)
	want := "The call failed: mcp__notes__add_note: call declined: the approver declined"
	if b.Type != "tool_result" || b.ToolUseID != "toolu_2" || !b.IsError || len(b.Content) != 1 || b.Content[0].Text != want {
		t.Errorf("ToolError = %+v", b)
	}
	if b := ToolError("toolu_3", nil); b.Content[0].Text != "The call failed: no reason was given" {
		t.Errorf("ToolError(nil) = %+v", b)
	}
}

// TestToolUse decodes the model's tool_use block as the API sends it, and
// checks that it marshals back unchanged.
func TestToolUse(t *testing.T) {
	in := `{"type":"tool_use","id":"toolu_1","name":"mcp__notes__add_note","input":{"text":"buy milk"}}`
	var u ToolUse
	if err := json.Unmarshal([]byte(in), &u); err != nil {
		t.Fatal(err)
	}
	if u.ID != "toolu_1" || u.Name != "mcp__notes__add_note" || string(u.Input) != `{"text":"buy milk"}` {
		t.Errorf("decoded %+v", u)
	}
	if b, _ := json.Marshal(u); string(b) != in {
		t.Errorf("round trip: %s", b)
	}
}

// TestToolsProfileSchema: a tool strict-ready for Anthropic but not for
// OpenAI is offered to Anthropic in its strict form, from Tool.Schemas.
func TestToolsProfileSchema(t *testing.T) {
	closed := json.RawMessage(`{"type":"object","properties":{"u":{"type":"string","format":"uri"}},"additionalProperties":false}`)
	strict := json.RawMessage(`{"type":"object","properties":{"u":{"type":["string","null"],"format":"uri"}},"required":["u"],"additionalProperties":false}`)
	tool := mcphost.Tool{
		Name: "mcp__s__fetch", Decision: mcphost.Allow, Schema: closed, Strict: false,
		StrictProblems: map[string]string{"openai": "/properties/u: format \"uri\" is not supported", "anthropic": ""},
		Schemas:        map[string]json.RawMessage{"openai": closed, "anthropic": strict},
	}
	got := Tools([]mcphost.Tool{tool})
	if len(got) != 1 || !got[0].Strict || string(got[0].InputSchema) != string(strict) {
		t.Errorf("Tools = %+v; want the strict form, strict", got)
	}
	tool.StrictProblems["anthropic"] = "(root): something"
	tool.Schemas["anthropic"] = closed
	if got := Tools([]mcphost.Tool{tool}); got[0].Strict || string(got[0].InputSchema) != string(closed) {
		t.Errorf("not ready: %+v", got)
	}
}

// TestToolsStrictBudgetClosed: the "anthropic" forms schema.Close makes
// keep optional properties optional and so count against
// MaxStrictOptional, not MaxStrictUnions: thirteen tools of two optional
// properties each fill the 24 with twelve; the thirteenth goes non-strict.
func TestToolsStrictBudgetClosed(t *testing.T) {
	c, err := schema.Close(json.RawMessage(`{"type":"object","properties":{"q":{"type":"string","minLength":3},"n":{"type":"integer","minimum":1},"m":{"type":"integer"}},"required":["m"]}`))
	if err != nil {
		t.Fatal(err)
	}
	form, strict := c.For(schema.Anthropic)
	if !strict {
		t.Fatalf("not strict-ready for Anthropic: %s", c.Problems[schema.Anthropic])
	}
	var tools []mcphost.Tool
	for i := range 13 {
		tools = append(tools, mcphost.Tool{
			Name: fmt.Sprintf("mcp__s__t%02d", i), Decision: mcphost.Allow, Strict: c.Strict, Schema: c.Schema,
			StrictProblems: map[string]string{"openai": c.Problems[schema.OpenAI], "anthropic": ""},
			Schemas:        map[string]json.RawMessage{"openai": c.Schema, "anthropic": form},
		})
	}
	got := Tools(tools)
	for i, tool := range got {
		if want := i < 12; tool.Strict != want {
			t.Errorf("tool %d: strict %v, want %v", i, tool.Strict, want)
		}
		if string(tool.InputSchema) != string(form) {
			t.Errorf("tool %d: schema %s, want the anthropic form %s", i, tool.InputSchema, form)
		}
	}
}
