package mcphost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcphost/mcphost/pin"
)

const elicitSchema = `{"type":"object","properties":{"name":{"type":"string","description":"Your\u200b name"},"age":{"type":"integer","minimum":0}},"required":["name"]}`

func elicitArgs(message, schema string) string {
	b, _ := json.Marshal(map[string]string{"message": message, "schema": schema})
	return string(b)
}

// TestElicit: a server's question reaches the Elicitor with its invisible
// characters visible; accepted, declined and cancelled answers reach the
// server; an answer that does not fit the schema is refused and its
// content never sent.
func TestElicit(t *testing.T) {
	tests := []struct {
		name   string
		answer ElicitAnswer
		err    error
		want   string // prefix of the tool's result
	}{
		{"accept", ElicitAnswer{Action: ElicitAccept, Content: map[string]any{"name": "Ada", "age": 36}}, nil, `accept {"age":36,"name":"Ada"}`},
		{"decline", ElicitAnswer{Action: ElicitDecline}, nil, "decline"},
		{"zero value declines", ElicitAnswer{}, nil, "decline"},
		{"cancel", ElicitAnswer{Action: ElicitCancel}, nil, "cancel"},
		{"wrong type", ElicitAnswer{Action: ElicitAccept, Content: map[string]any{"name": "Ada", "age": "old"}}, nil, "error: "},
		{"missing required", ElicitAnswer{Action: ElicitAccept, Content: map[string]any{"age": 3}}, nil, "error: "},
		{"unknown field", ElicitAnswer{Action: ElicitAccept, Content: map[string]any{"name": "Ada", "ssh_key": "secret-key-material"}}, nil, "error: "},
		{"elicitor error", ElicitAnswer{}, errors.New("the person left"), "error: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			var got ElicitRequest
			opts := e.opts()
			opts.Elicit = func(ctx context.Context, req ElicitRequest) (ElicitAnswer, error) {
				got = req
				return tt.answer, tt.err
			}
			s := e.connect(opts, fixture("notes", "-era", "legacy"))
			out := call(t, s, "mcp__notes__elicit", elicitArgs("Who are you?\u202e\x1b[2J", elicitSchema))
			if !strings.HasPrefix(out, tt.want) {
				t.Fatalf("result %q; want %q", out, tt.want)
			}
			if tt.want == "error: " && (strings.Contains(out, "Ada") || strings.Contains(out, "old")) {
				t.Errorf("the refused answer's values reached the server: %q", out)
			}
			if strings.Contains(out, "secret-key-material") {
				t.Errorf("refused content reached the server: %q", out)
			}
			if got.Server != "notes" || got.Message != `Who are you?<U+202E>\x1b[2J` {
				t.Errorf("request: server %q message %q", got.Server, got.Message)
			}
			if !strings.Contains(string(got.Schema), "Your<U+200B> name") || strings.Contains(string(got.Schema), "\u200b") {
				t.Errorf("schema not made visible: %s", got.Schema)
			}
			if len(got.Fields) != 2 || got.Fields[0].Name != "age" || got.Fields[0].Type != "integer" || got.Fields[1].Name != "name" || !got.Fields[1].Required {
				t.Errorf("fields: %+v", got.Fields)
			}
		})
	}
}

// TestElicitRefusedRequests: requests mcphost cannot show faithfully never
// reach the Elicitor.
func TestElicitRefusedRequests(t *testing.T) {
	e := newEnv(t)
	var asked atomic.Int32
	opts := e.opts()
	opts.Elicit = func(context.Context, ElicitRequest) (ElicitAnswer, error) {
		asked.Add(1)
		return ElicitAnswer{Action: ElicitAccept}, nil
	}
	s := e.connect(opts, fixture("notes", "-era", "legacy"))
	for name, schema := range map[string]string{
		"invisible name": `{"type":"object","properties":{"pass\u200bword":{"type":"string"}}}`,
		"nested object":  `{"type":"object","properties":{"a":{"type":"object"}}}`,
		"not an object":  `{"type":"string"}`,
	} {
		out := call(t, s, "mcp__notes__elicit", elicitArgs("?", schema))
		if !strings.HasPrefix(out, "error: ") {
			t.Errorf("%s: result %q; want an error", name, out)
		}
	}
	if n := asked.Load(); n != 0 {
		t.Errorf("the Elicitor was asked %d times", n)
	}
}

// TestElicitNoHook: without an Elicitor the capability is not advertised
// and a request is refused; with one, a server eliciting while none of
// its calls is in flight is declined unless the agent allows it.
func TestElicitNoHook(t *testing.T) {
	e := newEnv(t)
	s := e.connect(e.opts(), fixture("notes", "-era", "legacy"))
	if out := call(t, s, "mcp__notes__elicit", `{}`); !strings.HasPrefix(out, "error: ") {
		t.Errorf("no hook: %q", out)
	}
}

func TestElicitOutsideCalls(t *testing.T) {
	for _, allow := range []bool{false, true} {
		e := newEnv(t)
		var asked atomic.Int32
		opts := e.opts()
		opts.ElicitOutsideCalls = allow
		opts.Elicit = func(context.Context, ElicitRequest) (ElicitAnswer, error) {
			asked.Add(1)
			return ElicitAnswer{Action: ElicitAccept, Content: map[string]any{"name": "x"}}, nil
		}
		out := filepath.Join(e.worktree, "idle.txt")
		e.connect(opts, fixture("notes", "-era", "legacy", "-elicit-idle", out))
		deadline := time.Now().Add(10 * time.Second)
		for e.file("idle.txt") == "" && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		want, wantAsked := "decline", int32(0)
		if allow {
			want, wantAsked = "accept", 1
		}
		if got := e.file("idle.txt"); got != want || asked.Load() != wantAsked {
			t.Errorf("ElicitOutsideCalls %v: server saw %q, Elicitor asked %d times; want %q, %d", allow, got, asked.Load(), want, wantAsked)
		}
		os.Remove(out)
	}
}

// FuzzElicitRequest: whatever schema a server sends, newElicitRequest
// does not panic, and what it accepts shows only visible text and checks
// answers without panicking.
func FuzzElicitRequest(f *testing.F) {
	f.Add("Who?", []byte(elicitSchema))
	f.Add("x\u202e", []byte(`{"type":"object","properties":{"a":{"type":"array","items":{"anyOf":[{"const":"x"}]}}}}`))
	f.Add("", []byte(`{"type":"object","properties":{"b":{"type":"string","oneOf":[{"const":"a\u200b"}]}}}`))
	f.Fuzz(func(t *testing.T, msg string, schema []byte) {
		if !json.Valid(schema) {
			return
		}
		req, err := NewElicitRequest("s", msg, schema)
		if err != nil {
			return
		}
		if pin.Visible(req.Message) != req.Message && strings.ContainsAny(req.Message, "\u200b\u202e\x1b") {
			t.Fatalf("message not made visible: %q", req.Message)
		}
		for _, fl := range req.Fields {
			if pin.Visible(fl.Name) != fl.Name {
				t.Fatalf("field name %q is not plain", fl.Name)
			}
		}
		_ = req.Check(map[string]any{"a": "x"})
	})
}

// TestElicitFieldDefault (issue 31): a field carries the schema's default
// to pre-fill, only when it fits the field, and made visible.
func TestElicitFieldDefault(t *testing.T) {
	schema := `{"type":"object","properties":{
		"name":{"type":"string","default":"ada\u200b"},
		"age":{"type":"integer","default":36},
		"half":{"type":"integer","default":1.5},
		"ok":{"type":"boolean","default":true},
		"color":{"type":"string","enum":["red","blue"],"default":"green"},
		"tags":{"type":"array","items":{"enum":["a","b"]},"default":["b"]},
		"none":{"type":"string"}}}`
	req, err := NewElicitRequest("s", "?", json.RawMessage(schema))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"name": "ada<U+200B>", "age": 36.0, "half": nil, "ok": true, "color": nil, "tags": []string{"b"}, "none": nil}
	for _, f := range req.Fields {
		if fmt.Sprint(f.Default) != fmt.Sprint(want[f.Name]) {
			t.Errorf("%s: default %#v, want %#v", f.Name, f.Default, want[f.Name])
		}
	}
}
