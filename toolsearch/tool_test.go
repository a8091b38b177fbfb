package toolsearch

import (
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost/mcphost/mcphost"
	"github.com/mcphost/mcphost/schema"
)

func TestSearchToolDefinition(t *testing.T) {
	st := SearchTool()
	if !regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`).MatchString(st.Name) || strings.HasPrefix(st.Name, "mcp__") {
		t.Errorf("name %q is not valid for both providers, or could be a server's tool", st.Name)
	}
	c, err := schema.Close(st.Schema)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range schema.Profiles() {
		if problem := c.Problems[p]; problem != "" {
			t.Errorf("%s: not strict-ready: %s", p, problem)
		}
		if _, strict := c.For(p); !strict {
			t.Errorf("%s: no strict form", p)
		}
		if !st.Strict || st.StrictProblems[string(p)] != "" || string(st.Schemas[string(p)]) != string(st.Schema) {
			t.Errorf("%s: Tool says it is not strict for the profile", p)
		}
	}
	if !st.Offered() {
		t.Error("the search tool is not offered")
	}
}

func TestParseArgs(t *testing.T) {
	tests := []struct {
		args string
		want Args
		bad  bool
	}{
		{args: `{"query":"take a screenshot","limit":3}`, want: Args{"take a screenshot", 3}},
		{args: `{"query":"x","limit":null}`, want: Args{"x", DefaultLimit}},
		{args: `{"query":"x"}`, want: Args{"x", DefaultLimit}},
		{args: `{"query":"x","limit":0}`, want: Args{"x", 1}},
		{args: `{"query":"x","limit":-4}`, want: Args{"x", 1}},
		{args: `{"query":"x","limit":500}`, want: Args{"x", MaxLimit}},
		{args: `{"query":"x","limit":1e400}`, bad: true},
		{args: `{"query":"x","limit":99999999999999999999}`, bad: true},
		{args: `{"query":"x","limit":2.5}`, bad: true},
		{args: `{"query":"x","limit":"3"}`, bad: true},
		{args: `{"query":"","limit":3}`, bad: true},
		{args: `{"query":"   ","limit":3}`, bad: true},
		{args: `{"query":null,"limit":3}`, bad: true},
		{args: `{"limit":3}`, bad: true},
		{args: `{"query":3}`, bad: true},
		{args: `{"query":"x","limt":3}`, bad: true},
		{args: `{"query":"x"} {}`, bad: true},
		{args: `["x"]`, bad: true},
		{args: ``, bad: true},
		{args: `null`, bad: true},
		// What encoding/json would have let through: a stray bracket
		// after the object, a name in another case, a name twice.
		{args: `{"querY":"0"}}`, bad: true},
		{args: `{"query":"x"}}`, bad: true},
		{args: `{"Query":"x"}`, bad: true},
		{args: `{"query":"x","Limit":3}`, bad: true},
		{args: `{"query":"x","query":"y"}`, bad: true},
		{args: `{"query":"x","limit":3,"limit":4}`, bad: true},
		{args: `{"query":"x","limit":3.0}`, bad: true},
		{args: `{"query":"x","limit":[3]}`, bad: true},
		{args: `{"query":"\ud800"}`, bad: true},
		{args: " \n{\"query\":\"x\",\"limit\":-0}\t", want: Args{"x", 1}},
	}
	for _, tc := range tests {
		got, err := ParseArgs(json.RawMessage(tc.args))
		switch {
		case tc.bad && err == nil:
			t.Errorf("ParseArgs(%s) = %+v, want an error", tc.args, got)
		case tc.bad && !errors.Is(err, mcphost.ErrBadArguments):
			t.Errorf("ParseArgs(%s): error %v does not wrap ErrBadArguments", tc.args, err)
		case !tc.bad && err != nil:
			t.Errorf("ParseArgs(%s): %v", tc.args, err)
		case !tc.bad && got != tc.want:
			t.Errorf("ParseArgs(%s) = %+v, want %+v", tc.args, got, tc.want)
		}
	}
}

func TestLoaderCall(t *testing.T) {
	idx := New(func() []mcphost.Tool { return fixture })
	if _, err := idx.NewLoader("gemini"); err == nil {
		t.Error("NewLoader accepted an unknown profile")
	}
	for _, tc := range []struct {
		profile, schemaKey string
	}{{"openai", "parameters"}, {"anthropic", "input_schema"}} {
		t.Run(tc.profile, func(t *testing.T) {
			l, err := idx.NewLoader(tc.profile)
			if err != nil {
				t.Fatal(err)
			}
			if got := l.Loaded(); got != nil {
				t.Fatalf("Loaded before any search = %v", got)
			}
			res, err := l.Call(json.RawMessage(`{"query":"write text to a file","limit":1}`))
			if err != nil {
				t.Fatal(err)
			}
			var body struct {
				Tools []map[string]json.RawMessage `json:"tools"`
				Note  string                       `json:"note"`
			}
			if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &body); err != nil {
				t.Fatal(err)
			}
			if len(body.Tools) != 1 || string(body.Tools[0]["name"]) != `"mcp__files__write_file"` || body.Tools[0][tc.schemaKey] == nil ||
				string(body.Tools[0]["strict"]) != "true" {
				t.Errorf("result = %s", res.Content[0].(*mcp.TextContent).Text)
			}
			if _, err := l.Call(json.RawMessage(`{"query":"capture the page","limit":1}`)); err != nil {
				t.Fatal(err)
			}
			// A repeated search does not load a tool twice.
			if _, err := l.Call(json.RawMessage(`{"query":"write a file","limit":1}`)); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, tl := range l.Loaded() {
				got = append(got, tl.Name)
			}
			if want := []string{"mcp__files__write_file", "mcp__browser__take_screenshot"}; !slices.Equal(got, want) {
				t.Errorf("Loaded = %v, want %v", got, want)
			}
			res, err = l.Call(json.RawMessage(`{"query":"zebra","limit":5}`))
			if err != nil {
				t.Fatal(err)
			}
			if text := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(text, `"tools":[]`) || !strings.Contains(text, "No tool matches") {
				t.Errorf("no match: result = %s", text)
			}
			if _, err := l.Call(json.RawMessage(`{"query":""}`)); !errors.Is(err, mcphost.ErrBadArguments) {
				t.Errorf("empty query: err = %v", err)
			}
			l.Reset()
			if got := l.Loaded(); got != nil {
				t.Errorf("Loaded after Reset = %v", got)
			}
		})
	}
}

func TestKeep(t *testing.T) {
	keep := Any(Servers("browser"), Names("mcp__notes__add_note"), nil)
	kept, deferred := Split(fixture, keep)
	var got []string
	for _, tl := range kept {
		got = append(got, tl.Name)
	}
	if want := []string{"mcp__notes__add_note", "mcp__browser__take_screenshot", "mcp__browser__navigate"}; !slices.Equal(got, want) {
		t.Errorf("kept = %v, want %v", got, want)
	}
	if len(kept)+len(deferred) != len(fixture) {
		t.Errorf("Split lost tools: %d + %d != %d", len(kept), len(deferred), len(fixture))
	}
	if kept, _ := Split(fixture, nil); kept != nil {
		t.Errorf("a nil Keep kept %v", kept)
	}
}
