package openai

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcphost/mcphost/internal/toolresult"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// addResultSeeds adds the tool results of testdata/results to f's corpus.
func addResultSeeds(f *testing.F) {
	paths, err := filepath.Glob("testdata/results/*.json")
	if err != nil || len(paths) == 0 {
		f.Fatalf("no seeds in testdata/results: %v", err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// FuzzResult feeds tool results a server could send through both
// conversions: they must always marshal, never be empty, never carry an
// empty text part, pass on only images whose bytes match their media type,
// and show at least one part for every content item that holds something.
func FuzzResult(f *testing.F) {
	addResultSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var res mcp.CallToolResult
		if json.Unmarshal(data, &res) != nil {
			return
		}
		items := 0
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); !ok || tc.Text != "" {
				items++
			}
		}

		m := ChatToolMessage("c", &res)
		if _, err := json.Marshal(m); err != nil {
			t.Fatalf("chat message does not marshal: %v", err)
		}
		if len(m.Content) == 0 || len(m.Content) < items {
			t.Fatalf("%d content items became %d parts", items, len(m.Content))
		}
		for _, p := range m.Content {
			if p.Type != "text" || p.Text == "" {
				t.Fatalf("chat part %+v", p)
			}
		}

		o := FunctionCallOutput("c", &res)
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatalf("function output does not marshal: %v", err)
		}
		var back FunctionCallOutputItem
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("function output does not read back: %v", err)
		}
		if o.Output.Items == nil {
			if o.Output.Text == "" {
				t.Fatal("empty string output")
			}
			return
		}
		if len(o.Output.Items) < items {
			t.Fatalf("%d content items became %d output items", items, len(o.Output.Items))
		}
		for _, it := range o.Output.Items {
			switch it.Type {
			case "input_text":
				if it.Text == "" {
					t.Fatal("empty input_text")
				}
			case "input_image":
				mt, data, ok := strings.Cut(strings.TrimPrefix(it.ImageURL, "data:"), ";base64,")
				raw, err := base64.StdEncoding.DecodeString(data)
				if !ok || err != nil || toolresult.SniffImage(raw) != mt || mt == "" {
					t.Fatalf("image item %q is not a data URL of its own type", it.ImageURL[:min(len(it.ImageURL), 60)])
				}
			default:
				t.Fatalf("output item of type %q", it.Type)
			}
		}
	})
}

// FuzzFunctionOutput checks that whatever FunctionOutput.UnmarshalJSON
// accepts marshals back to JSON that reads back the same.
func FuzzFunctionOutput(f *testing.F) {
	for _, s := range []string{`"text"`, `""`, `[]`, `[{"type":"input_text","text":"a"}]`,
		`[{"type":"input_image","image_url":"data:image/png;base64,AA==","detail":"auto"}]`, `{}`, `null`, `"\u00e9\n"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var o FunctionOutput
		if o.UnmarshalJSON(data) != nil {
			return
		}
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		var again FunctionOutput
		if err := json.Unmarshal(b, &again); err != nil {
			t.Fatalf("%s does not read back: %v", b, err)
		}
		b2, _ := json.Marshal(again)
		if !bytes.Equal(b, b2) {
			t.Fatalf("round trip changed %s into %s", b, b2)
		}
	})
}
