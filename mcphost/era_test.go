package mcphost

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestBothEras (issue 29): a server that speaks only the 2026-07-28
// revision (no initialize: server/discover) and one that speaks only
// 2025-11-25 (no server/discover: initialize) start in one session, and
// each is used the way its era allows: tools, instructions pinned as
// reviewed, roots, elicitation through the same gates (a request of the
// server's own on the older one, an input request of the call's on the
// newer one), and list_changed, after which a changed tool is held.
func TestBothEras(t *testing.T) {
	e := newEnv(t)
	ins := filepath.Join(e.worktree, "ins.txt")
	os.WriteFile(ins, []byte("Be brief."), 0o644)
	modern := fixture("modern", "-era", "modern", "-instructions-file", ins, "-desc-file", filepath.Join(e.worktree, "modern.txt"))
	legacy := fixture("legacy", "-era", "legacy", "-instructions-file", ins, "-desc-file", filepath.Join(e.worktree, "legacy.txt"))
	var mu sync.Mutex
	var asked []ElicitRequest
	changed := make(chan string, 8)
	opts := e.opts()
	opts.Elicit = func(_ context.Context, req ElicitRequest) (ElicitAnswer, error) {
		mu.Lock()
		asked = append(asked, req)
		mu.Unlock()
		return ElicitAnswer{Action: ElicitAccept, Content: map[string]any{"name": "ada"}}, nil
	}
	opts.OnToolsChanged = func(server string) { changed <- server }
	s := e.connect(opts, modern, legacy)

	want := map[string]string{"modern": "2026-07-28", "legacy": "2025-11-25"}
	for _, info := range s.Servers() {
		if info.State != ServerRunning || info.Protocol != want[info.Name] {
			t.Fatalf("server %s: %s, protocol %q, want running %s: %s; notices %q", info.Name, info.State, info.Protocol, want[info.Name], info.Error, s.Notices())
		}
	}
	for _, server := range []string{"modern", "legacy"} {
		t.Run(server, func(t *testing.T) {
			if text, err := s.Instructions(server); err != nil || text != "Be brief." {
				t.Errorf("instructions: %q %v", text, err)
			}
			if out := call(t, s, "mcp__"+server+"__echo", `{"text":"hi"}`); !strings.Contains(out, `"hi"`) {
				t.Errorf("echo: %s", out)
			}
			var roots []struct{ URI string }
			if out := call(t, s, "mcp__"+server+"__roots", `{}`); json.Unmarshal([]byte(out), &roots) != nil || len(roots) != 1 || roots[0].URI != "file://"+s.Worktree() {
				t.Errorf("roots: %s", out)
			}
			out := call(t, s, "mcp__"+server+"__elicit", `{"message":"Who\u200b?"}`)
			if out != `accept {"name":"ada"}` {
				t.Errorf("elicit: %s", out)
			}
			// An answer that does not fit the schema never reaches the
			// server, in either era.
			bad := json.RawMessage(`{"schema":"{\"type\":\"object\",\"properties\":{\"age\":{\"type\":\"integer\"}},\"required\":[\"age\"]}"}`)
			if res, err := s.Call(context.Background(), "mcp__"+server+"__elicit", bad); err == nil && strings.Contains(resultText(t, res), "accept") {
				t.Errorf("an answer that does not fit the schema reached the server: %s", resultText(t, res))
			}

			call(t, s, "mcp__"+server+"__mutate", `{}`)
			select {
			case got := <-changed:
				if got != server {
					t.Errorf("OnToolsChanged(%s), want %s", got, server)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("no list_changed from the %s server within 10s", server)
			}
			if tool, _ := s.Tool("mcp__" + server + "__list_notes"); tool.Pin != PinChanged || !tool.Withheld {
				t.Errorf("list_notes after the change: %s held %v", tool.Pin, tool.Withheld)
			}
		})
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) < 2 || !strings.Contains(asked[0].Message, "<U+200B>") {
		t.Errorf("elicitations asked: %+v", asked)
	}
}
