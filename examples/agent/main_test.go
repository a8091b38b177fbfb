package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcphost/mcphost/mcphost"
	"github.com/mcphost/mcphost/openai"

	"github.com/mcphost/mcphost/internal/testbin"
)

// binDir holds bin/notes, the example server, built once for the tests.
var binDir string

func TestMain(m *testing.M) {
	os.Exit(testbin.Run(m, "agent-test-", func(dir string) error {
		binDir = dir
		return testbin.Build(filepath.Join(dir, "bin", "notes"), "../notes")
	}))
}

// wantInOrder fails unless every line of want appears in got, in order.
func wantInOrder(t *testing.T, got string, want []string) {
	t.Helper()
	rest := got
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Errorf("transcript lacks %q after the lines before it; transcript:\n%s", w, got)
			return
		}
		rest = rest[i+len(w):]
	}
}

func TestRun(t *testing.T) {
	config, err := filepath.Abs("agent.toml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		args  []string
		stdin io.Reader
		want  []string
		never []string
	}{{
		name:  "approved with -yes, scratch worktree",
		args:  []string{"-yes"},
		stdin: strings.NewReader(""),
		want: []string{
			"server notes: command bin/notes resolved to " + filepath.Join(binDir, "bin", "notes"),
			"approvals: -yes",
			"server notes: running, 3 tools",
			`[approval] {"type":"function","function":{"name":"mcp__notes__add_note"`,
			`[allow] {"type":"function","function":{"name":"mcp__notes__list_notes"`,
			`model calls mcp__notes__list_notes {"query":""}`,
			"journal: mcp__notes__list_notes decision=allow",
			`to the model: {"notes":[]}`,
			`model calls mcp__notes__add_note {"text":"buy milk"}`,
			"approval needed: mcp__notes__add_note: [mcp.notes] does not list it in allow",
			`arguments:   {"text":"buy milk"}`,
			"approved this call (-yes; nothing recorded as reviewed)",
			`to the model: {"id":"1","text":"buy milk"}`,
			`model calls mcp__notes__delete_note {"id":"1"}`,
			`to the model: The call failed: mcp__notes__delete_note: tool denied by config: [mcp.notes] denies "delete_note"`,
			"(restarting server notes, as after an upgrade)",
			"event: the tools of server notes changed",
			"offered to the model",
			`model calls mcp__notes__add_note {"txt":5}`,
			"to the model: The call failed: mcp__notes__add_note: bad arguments:",
			`to the model: {"notes":[{"id":"1","text":"buy milk"}]}`,
			"model: I noted that you need to buy milk.",
			"closed: every server",
		},
		never: []string{"delete_note\",\"description", "[deny]"},
	}, {
		name:  "declined: stdin is not a terminal, explicit worktree",
		args:  []string{"-worktree", binDir},
		stdin: strings.NewReader("y\n"), // not a terminal: never read
		want: []string{
			"worktree: " + binDir,
			"approvals: stdin is not a terminal, so calls that need approval are declined",
			"approval needed: mcp__notes__add_note",
			"declined: stdin is not a terminal, so nobody can be asked",
			"to the model: The call failed: mcp__notes__add_note: call declined",
			`to the model: The call failed: mcp__notes__delete_note: tool denied by config`,
			`to the model: {"notes":[]}`,
			"model: I could not add the note",
			"closed: every server",
		},
		never: []string{"approved this call (-yes", "    approved\n", "resolved to"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Chdir(binDir)
			os.Remove(filepath.Join(binDir, "notes.json"))
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var out bytes.Buffer
			args := append([]string{"-config", config, "-state", t.TempDir()}, tt.args...)
			if err := run(ctx, args, tt.stdin, &out); err != nil {
				t.Fatalf("run: %v\ntranscript:\n%s", err, out.String())
			}
			wantInOrder(t, out.String(), tt.want)
			for _, n := range tt.never {
				if strings.Contains(out.String(), n) {
					t.Errorf("transcript contains %q:\n%s", n, out.String())
				}
			}
		})
	}
}

func TestRunFails(t *testing.T) {
	config, err := filepath.Abs("agent.toml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		args  []string
		usage bool
		want  string
	}{
		{"no config", []string{"-config", filepath.Join(t.TempDir(), "none.toml")}, true, "run from the repository root, or pass -config"},
		{"bad flag", []string{"-nope"}, true, "flag provided but not defined"},
		{"stray argument", []string{"-config", config, "extra"}, true, `unexpected arguments ["extra"]`},
		// An empty directory as the current one: bin/notes is not there.
		{"server not built", []string{"-config", config, "-state", t.TempDir()}, false, "build the example server first"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var out bytes.Buffer
			err := run(ctx, tt.args, strings.NewReader(""), &out)
			var usage usageError
			if err == nil || errors.As(err, &usage) != tt.usage || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("run = %v (usage error: %v), want an error containing %q (usage error: %v)", err, errors.As(err, &usage), tt.want, tt.usage)
			}
		})
	}
}

func TestParseAgentConfig(t *testing.T) {
	const servers = "\n[mcp.notes]\ncommand = [\"x\"]\nunknown_to_the_agent = 1\n"
	tests := []struct {
		name    string
		toml    string
		want    agentConfig
		wantErr string
	}{
		{"full", "[agent]\nmodel = \"scripted\"\nmax_turns = 3\ntask = \"t\"\n" + servers, agentConfig{"scripted", 3, "t"}, ""},
		{"default turns", "[agent]\nmodel = \"scripted\"\n", agentConfig{"scripted", 10, ""}, ""},
		{"other model", "[agent]\nmodel = \"gpt\"\n", agentConfig{}, `model = "gpt": this example has only the model "scripted"`},
		{"no agent table", servers, agentConfig{}, `model = "": this example`},
		{"negative turns", "[agent]\nmodel = \"scripted\"\nmax_turns = -1\n", agentConfig{}, "max_turns = -1"},
		{"unknown agent key", "[agent]\nmodel = \"scripted\"\nmodle = 1\n", agentConfig{}, "unknown key agent.modle"},
		{"unknown top-level key", "model = \"scripted\"\n", agentConfig{}, "unknown key model"},
		{"not TOML", "[agent", agentConfig{}, "toml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseAgentConfig([]byte(tt.toml))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestApprover(t *testing.T) {
	req := mcphost.ApprovalRequest{
		Tool:      mcphost.Tool{Name: "mcp__notes__add_note", Description: "Add a note."},
		Arguments: []byte(`{"text":"x"}`),
		Reason:    "[mcp.notes] does not list it in allow",
	}
	tests := []struct {
		name        string
		input       string
		yes         bool
		interactive bool
		want        []mcphost.Verdict // one answer per question asked
		says        string
	}{
		{"y", "y\n", false, true, []mcphost.Verdict{mcphost.ApproveOnce}, "approved"},
		{"yes, spaced", "  YES \n", false, true, []mcphost.Verdict{mcphost.ApproveOnce}, "approved"},
		{"n", "n\n", false, true, []mcphost.Verdict{mcphost.Decline}, "declined"},
		{"empty line is no", "\n", false, true, []mcphost.Verdict{mcphost.Decline}, "declined"},
		{"anything else is no", "sure\n", false, true, []mcphost.Verdict{mcphost.Decline}, "declined"},
		{"end of input", "", false, true, []mcphost.Verdict{mcphost.Decline}, "declined: no answer (EOF)"},
		{"last line without newline", "y", false, true, []mcphost.Verdict{mcphost.ApproveOnce}, "approved"},
		{"one line per question", "y\nn\ny\n", false, true, []mcphost.Verdict{mcphost.ApproveOnce, mcphost.Decline, mcphost.ApproveOnce}, "allow this call? [y] yes  [r] yes, and record the tool as reviewed  [N] no"},
		{"-yes does not read", "n\n", true, true, []mcphost.Verdict{mcphost.ApproveOnce, mcphost.ApproveOnce}, "approved this call (-yes; nothing recorded as reviewed)"},
		{"r records the review", "r\n", false, true, []mcphost.Verdict{mcphost.ApproveAndReview}, "recorded as reviewed"},
		{"no terminal", "y\n", false, false, []mcphost.Verdict{mcphost.Decline}, "nobody can be asked"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			a := newApprover(strings.NewReader(tt.input), &transcript{w: &out}, tt.yes, tt.interactive)
			for i, want := range tt.want {
				got, err := a.approve(context.Background(), req)
				if err != nil || got != want {
					t.Errorf("question %d: %v, %v; want %v", i, got, err, want)
				}
			}
			if !strings.Contains(out.String(), tt.says) || !strings.Contains(out.String(), `arguments:   {"text":"x"}`) {
				t.Errorf("approver said:\n%s\nwant it to show the arguments and say %q", out.String(), tt.says)
			}
		})
	}
}

// TestApproverContext checks that a question nobody answers ends with its
// context, and that the line typed later answers the next question.
func TestApproverContext(t *testing.T) {
	r, w := io.Pipe()
	defer r.Close()
	a := newApprover(r, &transcript{w: io.Discard}, false, true)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if v, err := a.approve(ctx, mcphost.ApprovalRequest{}); v != mcphost.Decline || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled question: %v, %v; want decline, context.Canceled", v, err)
	}
	go func() {
		io.WriteString(w, "y\n")
	}()
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if v, err := a.approve(ctx, mcphost.ApprovalRequest{}); v != mcphost.ApproveOnce || err != nil {
		t.Fatalf("next question: %v, %v; want approve once", v, err)
	}
}

func TestScriptedModelChecksAnswers(t *testing.T) {
	m := &scriptedModel{}
	tools := []openai.ChatTool{{Type: "function"}}
	first, err := m.Next(context.Background(), nil, tools)
	if err != nil || len(first.ToolCalls) != 1 {
		t.Fatalf("first turn: %+v, %v", first, err)
	}
	if _, err := m.Next(context.Background(), []openai.ChatMessage{first}, tools); err == nil {
		t.Error("the model took a turn with its tool call unanswered")
	}
	answer := openai.ChatToolMessage(first.ToolCalls[0].ID, nil)
	if _, err := m.Next(context.Background(), []openai.ChatMessage{first, answer}, tools); err != nil {
		t.Errorf("answered call: %v", err)
	}
	if _, err := m.Next(context.Background(), nil, nil); err == nil {
		t.Error("the model took a turn with no tools offered")
	}
}
