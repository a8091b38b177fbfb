package anthropic

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcphost/mcphost/internal/toolresult"
	"github.com/mcphost/mcphost/mcphost"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// FuzzResult feeds tool results a server could send through ToolResult:
// the block must always marshal, never be empty, never carry an empty text
// block, pass on only images whose bytes match their media type, keep the
// error flag, and show at least one block for every content item that
// holds something.
func FuzzResult(f *testing.F) {
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
		b := ToolResult("t", &res)
		if _, err := json.Marshal(b); err != nil {
			t.Fatalf("block does not marshal: %v", err)
		}
		if b.IsError != res.IsError {
			t.Fatalf("is_error %v, result's isError %v", b.IsError, res.IsError)
		}
		if len(b.Content) == 0 || len(b.Content) < items {
			t.Fatalf("%d content items became %d blocks", items, len(b.Content))
		}
		for _, c := range b.Content {
			switch c.Type {
			case "text":
				if c.Text == "" || c.Source != nil {
					t.Fatalf("text block %+v", c)
				}
			case "image":
				raw, err := base64.StdEncoding.DecodeString(c.Source.Data)
				if err != nil || c.Source.MediaType == "" || toolresult.SniffImage(raw) != c.Source.MediaType {
					t.Fatalf("image block of type %q does not hold such an image (%v)", c.Source.MediaType, err)
				}
			default:
				t.Fatalf("block of type %q", c.Type)
			}
		}
	})
}

// FuzzCount checks that counting a schema's optional properties and unions
// never fails on any input and that Tools never marks strict a tool whose
// schema count says it is over Anthropic's limits.
func FuzzCount(f *testing.F) {
	for _, s := range []string{plain, oneUnion, optional, `{"$defs":{"d":{"anyOf":[]}}}`, `[]`, `null`, `{"properties":{"a":{}},"required":[1]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, schema []byte) {
		o, u, ok := count(schema)
		if o < 0 || u < 0 {
			t.Fatalf("negative counts %d, %d", o, u)
		}
		got := Tools([]mcphost.Tool{readyTool(0, string(schema))})
		if len(got) != 1 {
			t.Fatalf("%d tools", len(got))
		}
		if got[0].Strict && (!ok || o > MaxStrictOptional || u > MaxStrictUnions) {
			t.Fatalf("strict with %d optional and %d unions (ok %v)", o, u, ok)
		}
	})
}
