package mcphost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// protoFixture is fixture with the tools of the current protocol's
// features (-protocol-tools), allowed.
func protoFixture(name string, flags ...string) ServerConfig {
	sc := fixture(name, append([]string{"-protocol-tools"}, flags...)...)
	sc.Allow = append(slices.Clone(sc.Allow), "structured", "remote_ref", "open_url", "mutate_prompt", "prompt_storm")
	return sc
}

// eraFixtures are one fixture server of each protocol era.
func eraFixtures(flags ...string) []ServerConfig {
	return []ServerConfig{
		protoFixture("modern", append([]string{"-era", "modern"}, flags...)...),
		protoFixture("legacy", append([]string{"-era", "legacy"}, flags...)...),
	}
}

// TestStructuredOutput (issue 29): a result's structuredContent is checked
// against the tool's reviewed outputSchema. One that fits is passed on; one
// that does not, or a result without it, is an error result for the model
// that names where it does not fit (server text bounded and escaped), and a
// notice.
func TestStructuredOutput(t *testing.T) {
	e := newEnv(t)
	s := e.connect(e.opts(), protoFixture("notes"))
	ctx := context.Background()
	tool, ok := s.Tool("mcp__notes__structured")
	if !ok || len(tool.OutputSchema) == 0 {
		t.Fatalf("structured: %v %s", ok, tool.OutputSchema)
	}
	res, err := s.Call(ctx, "mcp__notes__structured", json.RawMessage(`{"shape":"fit"}`))
	if err != nil || res.IsError || res.StructuredContent == nil || resultText(t, res) != "structured fit" {
		t.Fatalf("a fitting result: %v %+v", err, res)
	}
	res, err = s.Call(ctx, "mcp__notes__structured", json.RawMessage(`{"shape":"error"}`))
	if err != nil || !res.IsError || resultText(t, res) != "structured error" {
		t.Errorf("an error result without structuredContent is passed on as it is: %v %+v", err, res)
	}
	for shape, want := range map[string]string{"misfit": "structuredContent/count: ", "none": "no structuredContent", "error-misfit": "structuredContent/count: "} {
		res, err := s.Call(ctx, "mcp__notes__structured", json.RawMessage(`{"shape":"`+shape+`"}`))
		if err != nil {
			t.Fatalf("%s: %v", shape, err)
		}
		text := resultText(t, res)
		if !res.IsError || res.StructuredContent != nil || len(res.Content) != 1 ||
			!strings.Contains(text, "did not match its output schema") || !strings.Contains(text, want) {
			t.Errorf("%s: the model got %+v: %q", shape, res, text)
		}
		if strings.ContainsAny(text, "\u200b\x1b") || strings.Contains(text, "structured "+shape) {
			t.Errorf("%s: server text reached the model unescaped: %q", shape, text)
		}
		if noticeWith(s, "mcp__notes__structured", "does not match its output schema", want) == "" {
			t.Errorf("%s: no notice: %q", shape, s.Notices())
		}
	}
}

// TestRemoteRefCall (issue 29): a tool whose input schema has a remote
// $ref is callable: the referenced part is checked as anything and never
// fetched, the rest is checked, and the tool says it is not strict and
// what is unchecked.
func TestRemoteRefCall(t *testing.T) {
	e := newEnv(t)
	record := filepath.Join(e.worktree, "calls.log")
	s := e.connect(e.opts(), protoFixture("notes", "-record", record))
	tool, _ := s.Tool("mcp__notes__remote_ref")
	if tool.CheckProblem != "" || tool.Strict || !strings.HasPrefix(tool.StrictProblem, "/properties/spec/$ref: ") ||
		len(tool.Unchecked) != 1 || !strings.HasPrefix(tool.Unchecked[0], "/properties/spec/$ref: ") {
		t.Fatalf("remote_ref: check %q strict %v %q unchecked %q", tool.CheckProblem, tool.Strict, tool.StrictProblem, tool.Unchecked)
	}
	if out := call(t, s, "mcp__notes__remote_ref", `{"name":"a","spec":{"any":[1]}}`); out != `{"name":"a","spec":{"any":[1]}}` {
		t.Errorf("call: %s", out)
	}
	if _, err := s.Call(context.Background(), "mcp__notes__remote_ref", json.RawMessage(`{"spec":1}`)); !errors.Is(err, ErrBadArguments) {
		t.Errorf("the rest of the schema is not checked: %v", err)
	}
	if b, _ := os.ReadFile(record); strings.Count(string(b), "remote_ref") != 1 {
		t.Errorf("the server saw %q", b)
	}
}

// TestPromptStorm (found in review): a server that keeps sending
// notifications/prompts/list_changed has its prompts withdrawn after
// maxRelistRounds re-lists, and they stay withdrawn, though the storm goes
// on, until Restart.
func TestPromptStorm(t *testing.T) {
	e := newEnv(t)
	desc := filepath.Join(e.worktree, "prompt.txt")
	os.WriteFile(desc, []byte("Summarize the notes about a topic."), 0o644)
	s := e.connect(e.opts(), protoFixture("storm", "-prompt-file", desc))
	ctx := context.Background()
	if len(s.Prompts()) == 0 {
		t.Fatal("no prompts before the storm")
	}
	// Past the withdrawal (maxRelistRounds re-lists, relistInterval apart).
	storm := time.Duration(maxRelistRounds+6) * relistInterval
	call(t, s, "mcp__storm__prompt_storm", fmt.Sprintf(`{"seconds":%g}`, storm.Seconds()))
	waitNotice(t, s, 10*time.Second, "storm", "prompts did not settle", "withdrawn until Restart")
	// The storm goes on past the withdrawal, and a little after it.
	time.Sleep(storm + relistInterval*2)
	if ps := s.Prompts(); len(ps) != 0 {
		t.Errorf("%d prompts offered again during the storm", len(ps))
	}
	if _, err := s.GetPrompt(ctx, "storm", "summarize", map[string]string{"topic": "x"}); err == nil {
		t.Error("a withdrawn prompt was got")
	}
	if err := s.Restart(ctx, "storm"); err != nil {
		t.Fatal(err)
	}
	if len(s.Prompts()) == 0 {
		t.Error("no prompts after Restart")
	}
}

// TestPromptListChanged (issue 29): on notifications/prompts/list_changed
// mid-session, in either era, the prompts are re-listed and re-pinned: a
// prompt that changed cannot be got (ErrNeedsApproval) until a person
// reviews it, with a notice.
func TestPromptListChanged(t *testing.T) {
	e := newEnv(t)
	desc := filepath.Join(e.worktree, "prompt.txt")
	os.WriteFile(desc, []byte("Summarize the notes about a topic."), 0o644)
	s := e.connect(e.opts(), eraFixtures("-prompt-file", desc)...)
	ctx := context.Background()
	for _, server := range []string{"modern", "legacy"} {
		t.Run(server, func(t *testing.T) {
			if _, err := s.GetPrompt(ctx, server, "summarize", map[string]string{"topic": "x"}); err != nil {
				t.Fatalf("before the change: %v", err)
			}
			call(t, s, "mcp__"+server+"__mutate_prompt", `{}`)
			deadline := time.Now().Add(10 * time.Second)
			for {
				_, err := s.GetPrompt(ctx, server, "summarize", map[string]string{"topic": "x"})
				if errors.Is(err, ErrNeedsApproval) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the changed prompt can still be got after 10s: %v", err)
				}
				time.Sleep(50 * time.Millisecond)
			}
			var p Prompt
			for _, q := range s.AllPrompts() {
				if q.Server == server && q.Name == "summarize" {
					p = q
				}
			}
			for _, q := range s.Prompts() {
				if q.Server == server && q.Name == "summarize" {
					t.Errorf("the changed prompt is still offered to the model: %+v", q)
				}
			}
			if p.Pin != PinChanged || !slices.Contains(p.Changed, "description") {
				t.Errorf("summarize after the change: %s %v", p.Pin, p.Changed)
			}
			if noticeWith(s, "server "+server+" changed prompt", "summarize") == "" {
				t.Errorf("no notice: %q", s.Notices())
			}
			if _, err := s.GetPrompt(ctx, server, "big", map[string]string{"n": "1"}); err != nil {
				t.Errorf("the unchanged prompt: %v", err)
			}
			if err := approve(s, "prompt:"+server+"/summarize"); err != nil {
				t.Fatal(err)
			}
			res, err := s.GetPrompt(ctx, server, "summarize", map[string]string{"topic": "x"})
			if err != nil || len(res.Messages) != 1 || !strings.Contains(res.Messages[0].Content.(*mcp.TextContent).Text, "id_rsa") {
				t.Errorf("after review: %v %+v", err, res)
			}
		})
	}
}

// TestElicitURL (issue 29): a server's request that the person open a URL
// goes to Options.ElicitURL, in either era, with its message and URL made
// visible and the host apart; mcphost opens nothing. Without the hook the
// capability is not advertised (a legacy server cannot ask) and a request
// is declined; outside a call it is declined as form elicitation is.
func TestElicitURL(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	var asked []ElicitURLRequest
	opts := e.opts()
	opts.ElicitURL = func(_ context.Context, req ElicitURLRequest) (ElicitAction, error) {
		mu.Lock()
		asked = append(asked, req)
		mu.Unlock()
		return ElicitAccept, nil
	}
	s := e.connect(opts, eraFixtures()...)
	args := `{"message":"Sign in\u200b","url":"https://xn--80ak6aa92e.example/\u0430uth\u200b?x=1"}`
	for _, server := range []string{"modern", "legacy"} {
		if out := call(t, s, "mcp__"+server+"__open_url", args); out != "accept" {
			t.Errorf("%s: %s", server, out)
		}
		// Form elicitation is not advertised: only URL mode is. (A 2026
		// server's refused input request fails the call.)
		if res, err := s.Call(context.Background(), "mcp__"+server+"__elicit", json.RawMessage(`{}`)); err == nil && strings.HasPrefix(resultText(t, res), "accept") {
			t.Errorf("%s: a form elicitation was answered without Elicit", server)
		}
		// A URL that is not http(s) is refused, with a notice.
		if res, err := s.Call(context.Background(), "mcp__"+server+"__open_url", json.RawMessage(`{"url":"javascript:alert(1)"}`)); err == nil && resultText(t, res) == "accept" {
			t.Errorf("%s: a javascript: URL was shown", server)
		}
	}
	mu.Lock()
	if len(asked) != 2 {
		t.Fatalf("asked %d times: %+v", len(asked), asked)
	}
	for _, req := range asked {
		if req.Message != "Sign in<U+200B>" || req.Host != "xn--80ak6aa92e.example" || req.URL != "https://xn--80ak6aa92e.example/\u0430uth<U+200B>?x=1" {
			t.Errorf("request %+v", req)
		}
	}
	mu.Unlock()
	if noticeWith(s, "open a URL mcphost refused") == "" {
		t.Errorf("no notice for the javascript: URL: %q", s.Notices())
	}
	if r, err := NewElicitURLRequest("x", "", "https://\u0430pple.com:8443/"); err != nil || r.Host != "<U+0430>pple.com:8443" {
		t.Errorf("a look-alike host: %+v %v", r, err)
	}
	for _, bad := range []struct{ message, url string }{
		{"", "https://apple.com:pw@evil.example/"}, // reads as apple.com's
		{"", "https://user@apple.com/"},
		{strings.Repeat("m", maxElicitURLMessage+1), "https://apple.com/"},
	} {
		if _, err := NewElicitURLRequest("x", bad.message, bad.url); !errors.Is(err, ErrBadElicitation) {
			t.Errorf("%.40s %s: %v, want ErrBadElicitation", bad.message, bad.url, err)
		}
	}
	s.Close()

	// No hook: not advertised, declined.
	s = e.connect(e.opts(), eraFixtures()...)
	if out := call(t, s, "mcp__legacy__open_url", args); !strings.Contains(out, `client does not support elicitation`) {
		t.Errorf("legacy without ElicitURL: %s", out)
	}
	s.Close()
	opts = e.opts()
	opts.Elicit = func(context.Context, ElicitRequest) (ElicitAnswer, error) {
		return ElicitAnswer{Action: ElicitAccept}, nil
	}
	s = e.connect(opts, eraFixtures()...)
	if out := call(t, s, "mcp__modern__open_url", args); out != "decline" {
		t.Errorf("modern without ElicitURL: %s", out)
	}
	if out := call(t, s, "mcp__legacy__open_url", args); !strings.Contains(out, `does not support "url" elicitation`) {
		t.Errorf("legacy with only Elicit: %s", out)
	}
}
