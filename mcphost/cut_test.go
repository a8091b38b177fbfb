package mcphost

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// jsonLen is the size of res as the agent gets it, encoded.
func jsonLen(t *testing.T, res *mcp.CallToolResult) int64 {
	t.Helper()
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return int64(len(b))
}

// cutNote returns the text of cut's note, the last item, or "".
func cutNote(res *mcp.CallToolResult) string {
	if len(res.Content) == 0 {
		return ""
	}
	if t, ok := res.Content[len(res.Content)-1].(*mcp.TextContent); ok && strings.HasPrefix(t.Text, "[mcphost: this result was cut") {
		return t.Text
	}
	return ""
}

// TestCutBoundsEverything: max_output bounds the whole result, its
// metadata too (issue 26, case 5): what does not fit is dropped, content
// is kept before metadata, and the note names what is missing.
func TestCutBoundsEverything(t *testing.T) {
	const limit = 4 << 10
	big := strings.Repeat("m", 2<<20)
	bigMeta := func() mcp.Meta { return mcp.Meta{"pad": big} }
	bigAnn := func() *mcp.Annotations { return &mcp.Annotations{LastModified: big} }
	small := &mcp.Annotations{Audience: []mcp.Role{"user"}, Priority: 0.5}
	text := func(s string) *mcp.TextContent { return &mcp.TextContent{Text: s} }
	tests := []struct {
		name  string
		res   *mcp.CallToolResult
		cut   bool     // a note is expected
		texts []string // the texts expected before the note, in order
		names []string // what the note must name
		check func(t *testing.T, res *mcp.CallToolResult)
	}{{
		name: "small result with metadata fits",
		res: &mcp.CallToolResult{Meta: mcp.Meta{"k": "v"}, StructuredContent: map[string]any{"n": 1},
			Content: []mcp.Content{&mcp.TextContent{Text: "ok", Meta: mcp.Meta{"k": "v"}, Annotations: small}}},
		texts: []string{"ok"},
		check: func(t *testing.T, res *mcp.CallToolResult) {
			if res.Meta == nil || res.StructuredContent == nil || res.Content[0].(*mcp.TextContent).Annotations != small {
				t.Errorf("metadata of a result that fits was dropped: %+v", res)
			}
		},
	}, {
		name: "issue: 2 bytes of text and 6 MiB of metadata",
		res: &mcp.CallToolResult{Meta: bigMeta(),
			Content: []mcp.Content{&mcp.TextContent{Text: "ok", Meta: bigMeta(), Annotations: bigAnn()}}},
		cut:   true,
		texts: []string{"ok"},
		names: []string{"_meta of the result", "_meta of item 1", "annotations of item 1"},
		check: func(t *testing.T, res *mcp.CallToolResult) {
			if res.Meta != nil {
				t.Error("the result's _meta was kept")
			}
		},
	}, {
		name: "small metadata is kept where the big is dropped",
		res: &mcp.CallToolResult{Meta: bigMeta(),
			Content: []mcp.Content{&mcp.TextContent{Text: "ok", Meta: mcp.Meta{"k": "v"}, Annotations: small}, text("more")}},
		cut:   true,
		texts: []string{"ok", "more"},
		names: []string{"_meta of the result"},
		check: func(t *testing.T, res *mcp.CallToolResult) {
			if c := res.Content[0].(*mcp.TextContent); c.Annotations != small || c.Meta["k"] != "v" {
				t.Errorf("the first item lost its small metadata: %+v", c)
			}
		},
	}, {
		name: "metadata of every kind of item",
		res: &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.ImageContent{MIMEType: "image/png", Data: []byte("png"), Meta: bigMeta(), Annotations: small},
			&mcp.AudioContent{MIMEType: "audio/wav", Data: []byte("wav"), Annotations: bigAnn()},
			&mcp.ResourceLink{URI: "file:///a", Name: "a", Meta: bigMeta()},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///b", Text: "b", Meta: bigMeta()}},
			text("end"),
		}},
		cut:   true,
		names: []string{"_meta of item 1", "annotations of item 2", "_meta of item 3", "_meta of item 4"},
		check: func(t *testing.T, res *mcp.CallToolResult) {
			if len(res.Content) != 6 {
				t.Fatalf("%d items; want the 5 without their big metadata, and the note", len(res.Content))
			}
			if c := res.Content[0].(*mcp.ImageContent); string(c.Data) != "png" || c.Annotations != small || c.Meta != nil {
				t.Errorf("image: %+v", c)
			}
			if c := res.Content[3].(*mcp.EmbeddedResource); c.Resource.Text != "b" || c.Resource.Meta != nil {
				t.Errorf("embedded resource: %+v", c.Resource)
			}
			if res.Content[4].(*mcp.TextContent).Text != "end" {
				t.Errorf("last item: %+v", res.Content[4])
			}
		},
	}, {
		name: "a text that does not fit is cut, its metadata dropped",
		res: &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: strings.Repeat("y", 3*limit), Meta: mcp.Meta{"k": "v"}}, text("after")}},
		cut:   true,
		texts: []string{strings.Repeat("y", limit)},
		names: []string{"the end of item 1", "item 2", "_meta of item 1"},
	}, {
		name: "structuredContent, requestState",
		res: &mcp.CallToolResult{StructuredContent: map[string]any{"pad": big}, RequestState: big,
			Content: []mcp.Content{text("ok")}},
		cut:   true,
		texts: []string{"ok"},
		names: []string{"structuredContent", "requestState"},
		check: func(t *testing.T, res *mcp.CallToolResult) {
			if res.StructuredContent != nil || res.RequestState != "" {
				t.Errorf("kept: %+v", res)
			}
		},
	}, {
		name: "many empty items",
		res: func() *mcp.CallToolResult {
			res := &mcp.CallToolResult{Content: []mcp.Content{text("first")}}
			for range 100000 {
				res.Content = append(res.Content, text(""))
			}
			return res
		}(),
		cut:   true,
		names: []string{"items 159–100001"},
	}, {
		name: "many small annotations",
		res: func() *mcp.CallToolResult {
			res := &mcp.CallToolResult{}
			for range 1000 {
				res.Content = append(res.Content, &mcp.TextContent{Text: "t", Annotations: small})
			}
			return res
		}(),
		cut:   true,
		names: []string{"annotations of item", " more"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.res
			first := func() mcp.Content {
				if len(in.Content) > 0 {
					return in.Content[0]
				}
				return nil
			}()
			res := cut(in, limit, "a-server-with-a-name-of-32-bytes")
			if n := jsonLen(t, res); n > limit+cutAllowance {
				t.Errorf("the result's JSON is %d bytes; want at most %d", n, limit+cutAllowance)
			}
			note := cutNote(res)
			switch {
			case tt.cut && note == "":
				t.Fatalf("no note: %d items", len(res.Content))
			case !tt.cut && note != "":
				t.Fatalf("a note for a result that fits: %s", note)
			case !tt.cut && (res != in || len(res.Content) > 0 && res.Content[0] != first):
				t.Error("a result that fits was copied")
			}
			for _, name := range tt.names {
				if !strings.Contains(note, name) {
					t.Errorf("the note does not name %q: %s", name, note)
				}
			}
			for i, want := range tt.texts {
				if got := res.Content[i].(*mcp.TextContent).Text; got != want {
					t.Errorf("text %d is %d bytes %.20q; want %d bytes %.20q", i+1, len(got), got, len(want), want)
				}
			}
			if tt.check != nil {
				tt.check(t, res)
			}
		})
	}
}

// TestCutRandom: for results of random parts and limits, the result's
// JSON stays within the limit and the allowance, and a result without a
// note is the one the tool sent, unchanged.
func TestCutRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(26, 5))
	pad := func() string { return strings.Repeat("x", r.IntN(3000)) }
	meta := func() mcp.Meta {
		if r.IntN(3) == 0 {
			return nil
		}
		return mcp.Meta{"p": pad()}
	}
	ann := func() *mcp.Annotations {
		if r.IntN(3) == 0 {
			return nil
		}
		return &mcp.Annotations{LastModified: pad()}
	}
	for i := range 2000 {
		res := &mcp.CallToolResult{Meta: meta(), IsError: r.IntN(2) == 0}
		if r.IntN(4) == 0 {
			res.StructuredContent = map[string]any{"s": pad()}
		}
		for range r.IntN(5) {
			switch r.IntN(6) {
			case 0, 1:
				// ASCII letters only: the bound leaves out JSON escapes.
				res.Content = append(res.Content, &mcp.TextContent{Text: pad(), Meta: meta(), Annotations: ann()})
			case 2:
				res.Content = append(res.Content, &mcp.ImageContent{MIMEType: "image/png", Data: []byte(pad()), Meta: meta(), Annotations: ann()})
			case 3:
				res.Content = append(res.Content, &mcp.AudioContent{MIMEType: "audio/wav", Data: []byte(pad()), Meta: meta(), Annotations: ann()})
			case 4:
				res.Content = append(res.Content, &mcp.ResourceLink{URI: "file:///" + pad(), Name: "n", Meta: meta(), Annotations: ann()})
			case 5:
				res.Content = append(res.Content, &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///r", Text: pad(), Meta: meta()},
					Meta: meta(), Annotations: ann()})
			}
		}
		limit := int64(1 + r.IntN(12000))
		before, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		got := cut(res, limit, "x")
		after, err := json.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(after)) > limit+cutAllowance {
			t.Fatalf("case %d: %d bytes cut to %d; want at most %d + %d", i, len(before), len(after), limit, cutAllowance)
		}
		if cutNote(got) == "" && string(after) != string(before) {
			t.Fatalf("case %d: the result changed without a note:\n%.300s\n%.300s", i, before, after)
		}
		if cutNote(got) != "" && int64(len(before)) <= limit {
			t.Fatalf("case %d: a result of %d bytes was cut to %d", i, len(before), limit)
		}
	}
}

// TestMaxOutputBoundsMeta: through Session.Call, a tool's result of 2
// bytes of text and 6 MiB of metadata comes back within max_output, with
// its text and a note.
func TestMaxOutputBoundsMeta(t *testing.T) {
	e := newEnv(t)
	sc := fixture("big", "-big-meta", strconv.Itoa(2<<20))
	sc.MaxOutput = 4 << 10
	s := e.connect(e.opts(), sc)
	res, err := s.Call(context.Background(), "mcp__big__big", json.RawMessage(`{"n":2}`))
	if err != nil {
		t.Fatal(err)
	}
	if n := jsonLen(t, res); n > sc.MaxOutput+cutAllowance {
		t.Errorf("the result's JSON is %d bytes; want at most %d", n, sc.MaxOutput+cutAllowance)
	}
	if len(res.Content) != 2 || res.Content[0].(*mcp.TextContent).Text != "yy" {
		t.Fatalf("content: %+v", res.Content)
	}
	note := cutNote(res)
	for _, name := range []string{"max_output of [mcp.big]", "_meta of the result", "_meta of item 1", "annotations of item 1"} {
		if !strings.Contains(note, name) {
			t.Errorf("the note does not name %q: %s", name, note)
		}
	}
}

// TestCutPromptAndResourceMeta: a prompt's and a resource's metadata are
// bounded as a tool result's are.
func TestCutPromptAndResourceMeta(t *testing.T) {
	const limit = 4 << 10
	big := strings.Repeat("m", 2<<20)
	size := func(v any) int64 {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return int64(len(b))
	}
	lastText := func(c mcp.Content) string {
		if t, ok := c.(*mcp.TextContent); ok {
			return t.Text
		}
		return ""
	}

	t.Run("prompt", func(t *testing.T) {
		p := cutPrompt(&mcp.GetPromptResult{Meta: mcp.Meta{"pad": big}, Description: big, Messages: []*mcp.PromptMessage{
			{Role: "user", Content: &mcp.TextContent{Text: "hello", Meta: mcp.Meta{"pad": big}}},
			{Role: "user", Content: &mcp.TextContent{Text: "world"}}}}, limit, "x")
		if n := size(p); n > limit+cutAllowance {
			t.Errorf("the prompt's JSON is %d bytes; want at most %d", n, limit+cutAllowance)
		}
		if len(p.Messages) != 3 || lastText(p.Messages[0].Content) != "hello" || lastText(p.Messages[1].Content) != "world" {
			t.Fatalf("messages: %d, first %+v", len(p.Messages), p.Messages[0].Content)
		}
		note := lastText(p.Messages[2].Content)
		for _, name := range []string{"prompt was cut", "_meta and annotations of message 1", "the description", "_meta of the result"} {
			if !strings.Contains(note, name) {
				t.Errorf("the note does not name %q: %s", name, note)
			}
		}
	})
	t.Run("prompt of many empty messages and a long role", func(t *testing.T) {
		// Found in review: a message's frame and role were not counted,
		// so 20,000 empty messages passed a 4 KiB bound.
		var msgs []*mcp.PromptMessage
		msgs = append(msgs, &mcp.PromptMessage{Role: mcp.Role(strings.Repeat("r", 50<<10)), Content: &mcp.TextContent{Text: "a"}})
		for range 20000 {
			msgs = append(msgs, &mcp.PromptMessage{Role: "user", Content: &mcp.TextContent{}}, nil)
		}
		p := cutPrompt(&mcp.GetPromptResult{Messages: msgs}, limit, "x")
		if n := size(p); n > limit+cutAllowance {
			t.Errorf("the prompt's JSON is %d bytes; want at most %d", n, limit+cutAllowance)
		}
		if p.Messages[0].Role != "user" || lastText(p.Messages[0].Content) != "a" {
			t.Errorf("first message: role %.20q, %+v", p.Messages[0].Role, p.Messages[0].Content)
		}
		note := lastText(p.Messages[len(p.Messages)-1].Content)
		shown := len(p.Messages) - 1
		if want := fmt.Sprintf("%d message(s) were not shown", len(msgs)-shown); !strings.Contains(note, want) || !strings.Contains(note, "the role of message 1") {
			t.Errorf("the note: %s; want %q and the role named", note, want)
		}
	})
	t.Run("prompt whose messages fit", func(t *testing.T) {
		p := cutPrompt(&mcp.GetPromptResult{Meta: mcp.Meta{"pad": big}, Description: "d", Messages: []*mcp.PromptMessage{
			{Role: "user", Content: &mcp.TextContent{Text: "hello"}}}}, limit, "x")
		if n := size(p); n > limit+cutAllowance {
			t.Errorf("the prompt's JSON is %d bytes; want at most %d", n, limit+cutAllowance)
		}
		note := lastText(p.Messages[len(p.Messages)-1].Content)
		if len(p.Messages) != 2 || lastText(p.Messages[0].Content) != "hello" || p.Description != "d" ||
			!strings.Contains(note, "not shown: _meta of the result") {
			t.Errorf("%d messages, description %q, note %q", len(p.Messages), p.Description, note)
		}
	})
	t.Run("resource", func(t *testing.T) {
		r := cutResource(&mcp.ReadResourceResult{Meta: mcp.Meta{"pad": big}, Cacheable: mcp.Cacheable{CacheScope: big},
			Contents: []*mcp.ResourceContents{
				{URI: "file:///a", Text: "hello", Meta: mcp.Meta{"pad": big}},
				{URI: "file:///b", Text: "world"}}}, limit, "x")
		if n := size(r); n > limit+cutAllowance {
			t.Errorf("the resource's JSON is %d bytes; want at most %d", n, limit+cutAllowance)
		}
		note := r.Contents[len(r.Contents)-1].Text
		if len(r.Contents) != 3 || r.Contents[0].Text != "hello" || r.Contents[1].Text != "world" {
			t.Errorf("contents: %+v", r.Contents)
		}
		for _, name := range []string{"resource was cut", "_meta of item 1", "cacheScope", "_meta of the result"} {
			if !strings.Contains(note, name) {
				t.Errorf("the note does not name %q: %s", name, note)
			}
		}
	})
	t.Run("resource of many empty contents", func(t *testing.T) {
		res := &mcp.ReadResourceResult{}
		for range 100000 {
			res.Contents = append(res.Contents, &mcp.ResourceContents{URI: "file:///a"})
		}
		r := cutResource(res, limit, "x")
		if n := size(r); n > limit+cutAllowance {
			t.Errorf("the resource's JSON is %d bytes; want at most %d", n, limit+cutAllowance)
		}
		if note := r.Contents[len(r.Contents)-1].Text; !strings.Contains(note, "resource was cut") {
			t.Errorf("no note: %q", note)
		}
	})
	t.Run("resource that fits", func(t *testing.T) {
		in := &mcp.ReadResourceResult{Meta: mcp.Meta{"k": "v"}, Contents: []*mcp.ResourceContents{{URI: "file:///a", Text: "hello", Meta: mcp.Meta{"k": "v"}}}}
		r := cutResource(in, limit, "x")
		if len(r.Contents) != 1 || r.Contents[0].Meta == nil || r.Meta == nil {
			t.Errorf("changed: %+v", r)
		}
	})
}
