package toolsearch_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcphost/mcphost/internal/testbin"
	"github.com/mcphost/mcphost/mcphost"
	"github.com/mcphost/mcphost/toolsearch"
)

// notesBin is the example notes server, built once for the tests.
var notesBin string

func TestMain(m *testing.M) {
	os.Exit(testbin.Run(m, "toolsearch-test-", func(dir string) error {
		notesBin = filepath.Join(dir, "notes")
		return testbin.Build(notesBin, "../examples/notes")
	}))
}

// TestSession searches the tools of a real session: a denied tool is
// never found, and a tool found and loaded is called through Session.Call
// with the same checks as any other (here: approval, then arguments).
func TestSession(t *testing.T) {
	var asked atomic.Int32
	var sess atomic.Pointer[mcphost.Session]
	idx := toolsearch.New(func() []mcphost.Tool {
		if s := sess.Load(); s != nil {
			return s.Tools()
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := mcphost.Connect(ctx, []mcphost.ServerConfig{{
		Name: "notes", Command: []string{notesBin},
		Allow: []string{"list_notes"}, Deny: []string{"delete_note"}, Default: mcphost.Approval,
		// Confined where mcphost confines; elsewhere a server runs only
		// unconfined.
		Unconfined: runtime.GOOS != "linux",
	}}, mcphost.Options{
		Worktree: t.TempDir(), StateDir: t.TempDir(),
		OnToolsChanged: func(string) { idx.Rebuild() },
		Approver: func(ctx context.Context, req mcphost.ApprovalRequest) (mcphost.Verdict, error) {
			asked.Add(1)
			return mcphost.Decline, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sess.Store(s)
	idx.Rebuild()
	if len(s.Tools()) != 2 {
		t.Fatalf("the session offers %d tools, want 2; notices: %v", len(s.Tools()), s.Notices())
	}

	for _, q := range []string{"delete a note by id", "delete_note", "remove note"} {
		for _, r := range idx.Search(q, 10) {
			if r.Tool.Name == "mcp__notes__delete_note" {
				t.Errorf("Search(%q) found the denied tool", q)
			}
		}
	}

	loader, err := idx.NewLoader("anthropic")
	if err != nil {
		t.Fatal(err)
	}
	found, err := loader.Find(json.RawMessage(`{"query":"add a note","limit":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || found[0].Name != "mcp__notes__add_note" {
		t.Fatalf("Find = %v, want add_note", found)
	}
	if loaded := loader.Loaded(); len(loaded) != 1 || loaded[0].Name != "mcp__notes__add_note" {
		t.Fatalf("Loaded = %v", loaded)
	}
	// The loaded tool needs approval, as it does unloaded: the Approver
	// is asked and declines.
	if _, err := s.Call(ctx, found[0].Name, json.RawMessage(`{"text":"buy milk"}`)); !errors.Is(err, mcphost.ErrDeclined) {
		t.Errorf("Call of the loaded tool: err = %v, want ErrDeclined", err)
	}
	if asked.Load() != 1 {
		t.Errorf("the Approver was asked %d times, want 1", asked.Load())
	}
	// Bad arguments are refused before anyone is asked.
	if _, err := s.Call(ctx, found[0].Name, json.RawMessage(`{"txt":5}`)); !errors.Is(err, mcphost.ErrBadArguments) {
		t.Errorf("Call with bad arguments: err = %v, want ErrBadArguments", err)
	}
	if asked.Load() != 1 {
		t.Errorf("the Approver was asked about bad arguments")
	}
	// The search tool is not a session tool: Session.Call does not know it.
	if _, err := s.Call(ctx, toolsearch.ToolName, json.RawMessage(`{"query":"x","limit":1}`)); !errors.Is(err, mcphost.ErrUnknownTool) {
		t.Errorf("Session.Call of the search tool: err = %v, want ErrUnknownTool", err)
	}
	names := func(ts []mcphost.Tool) (out []string) {
		for _, t := range ts {
			out = append(out, t.Name)
		}
		return out
	}
	if got := names(loader.Loaded()); !slices.Equal(got, []string{"mcp__notes__add_note"}) {
		t.Errorf("Loaded after the calls = %v", got)
	}
}
