package interop_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/mcphost/mcphost/mcphost"
)

// notesServer returns the config of examples/notes, a server on the Go SDK.
func notesServer(t testing.TB) mcphost.ServerConfig {
	t.Helper()
	return notesConfig(t, built(t, notesBuild()))
}

// notesConfig is the config examples/mcphost.toml gives the notes server,
// parsed from TOML as an agent would, with the binary built for the test.
func notesConfig(t testing.TB, bin string) mcphost.ServerConfig {
	t.Helper()
	servers, err := mcphost.Parse(fmt.Appendf(nil, `
model = "an-agent-setting-mcphost-ignores"

[mcp.notes]
command = [%q]
allow = ["list_notes"]
deny = ["delete_note"]
default = "approval"
startup_timeout = "60s"
call_timeout = "60s"
max_output = "64KiB"
`, bin))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if len(servers) != 1 {
		t.Fatalf("Parse returned %d servers, want 1", len(servers))
	}
	return servers[0]
}

// approver approves every call whose arguments do not contain "decline",
// and remembers what it was asked.
type approver struct {
	mu    sync.Mutex
	asked []mcphost.ApprovalRequest
}

func (a *approver) approve(_ context.Context, req mcphost.ApprovalRequest) (mcphost.Verdict, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, req)
	if strings.Contains(string(req.Arguments), "decline") {
		return mcphost.Decline, nil
	}
	return mcphost.ApproveOnce, nil
}

func (a *approver) requests() []mcphost.ApprovalRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]mcphost.ApprovalRequest(nil), a.asked...)
}

// TestNotes runs the Go SDK example server through mcphost with the
// example's config and checks each decision end to end: list_notes is
// allowed, add_note needs approval, delete_note is denied.
func TestNotes(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	bin := built(t, notesBuild())
	var ap approver
	opts := h.opts()
	opts.Approver = ap.approve
	s := h.connect(opts, notesConfig(t, bin))

	decisions := map[string]mcphost.Decision{}
	pins := map[string]mcphost.PinStatus{}
	for _, tool := range s.AllTools() {
		decisions[tool.Tool], pins[tool.Tool] = tool.Decision, tool.Pin
	}
	for _, tc := range []struct {
		tool     string
		decision mcphost.Decision
		pin      mcphost.PinStatus
	}{
		{"list_notes", mcphost.Allow, mcphost.PinNew},
		{"add_note", mcphost.Approval, mcphost.PinNew}, // pinned too: the model reads it,
		{"delete_note", mcphost.Deny, mcphost.PinUnpinned},
	} {
		if decisions[tc.tool] != tc.decision || pins[tc.tool] != tc.pin {
			t.Errorf("%s: decision %q pin %q, want %q %q", tc.tool, decisions[tc.tool], pins[tc.tool], tc.decision, tc.pin)
		}
	}
	for _, tool := range s.Tools() {
		if tool.Tool == "delete_note" {
			t.Errorf("the denied delete_note is offered to the model")
		}
	}

	if got := call(t, s, "mcp__notes__list_notes", `{}`); got != `{"notes":[]}` {
		t.Errorf("list_notes on an empty worktree = %s", got)
	}
	if n := len(ap.requests()); n != 0 {
		t.Errorf("the allowed list_notes asked the approver %d times", n)
	}

	got := call(t, s, "mcp__notes__add_note", `{"text":"first note"}`)
	if got != `{"id":"1","text":"first note"}` {
		t.Errorf("add_note = %s", got)
	}
	asked := ap.requests()
	if len(asked) != 1 || asked[0].Tool.Name != "mcp__notes__add_note" || !strings.Contains(string(asked[0].Arguments), "first note") {
		t.Fatalf("approver requests after add_note: %+v", asked)
	}
	if !strings.Contains(h.file(t, "notes.json"), "first note") {
		t.Errorf("notes.json in the worktree after add_note:\n%s", h.file(t, "notes.json"))
	}

	before := h.file(t, "notes.json")
	ctx := context.Background()
	for _, tc := range []struct {
		tool, args string
		want       error
	}{
		{"mcp__notes__add_note", `{"text":"decline this one"}`, mcphost.ErrDeclined},
		{"mcp__notes__delete_note", `{"id":"1"}`, mcphost.ErrDenied},
		{"mcp__notes__add_note", `{"text":42}`, mcphost.ErrBadArguments},
		{"mcp__notes__no_such_tool", `{}`, mcphost.ErrUnknownTool},
	} {
		_, err := s.Call(ctx, tc.tool, json.RawMessage(tc.args))
		if !errors.Is(err, tc.want) {
			t.Errorf("Call(%s, %s): err = %v, want %v", tc.tool, tc.args, err, tc.want)
		}
	}
	if after := h.file(t, "notes.json"); after != before {
		t.Errorf("refused calls changed notes.json:\n%s", after)
	}
	// Only the declined add_note reached the approver: a denied tool, bad
	// arguments and an unknown tool are refused before anyone is asked.
	if n := len(ap.requests()); n != 2 {
		t.Errorf("the approver was asked %d times, want 2", n)
	}

	// Without an approver, a tool that needs approval is not called.
	noApprover := h.connect(h.opts(), notesConfig(t, bin))
	if _, err := noApprover.Call(ctx, "mcp__notes__add_note", json.RawMessage(`{"text":"unasked"}`)); !errors.Is(err, mcphost.ErrNeedsApproval) {
		t.Errorf("add_note without an approver: err = %v, want ErrNeedsApproval", err)
	}
	// The second session found list_notes as the first recorded it.
	if tool, ok := noApprover.Tool("mcp__notes__list_notes"); !ok || tool.Pin != mcphost.PinSame || tool.Decision != mcphost.Allow {
		t.Errorf("list_notes in a second session: %+v, want allowed and pinned the same", tool)
	}
	if got := call(t, noApprover, "mcp__notes__list_notes", `{"query":"first"}`); got != `{"notes":[{"id":"1","text":"first note"}]}` {
		t.Errorf("list_notes in a second session = %s", got)
	}
}
