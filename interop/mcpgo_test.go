package interop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcphost/mcphost/mcphost"
)

// mcpgoServer returns the config of testdata/interop/mcpgo, a server on
// mark3labs/mcp-go in its own module. It skips the test, saying why, when the
// module proxy does not serve mcp-go.
func mcpgoServer(t testing.TB) mcphost.ServerConfig {
	t.Helper()
	bin := built(t, mcpgoBuild())
	return mcphost.ServerConfig{
		Name:           "mcpgo",
		Command:        []string{bin},
		Allow:          []string{"reverse-text", "add_numbers", "write-file", "get-env", "notify-then-echo", "block", "grow"},
		StartupTimeout: startupTimeout,
		CallTimeout:    callTimeout,
	}
}

// TestMCPGo runs the mcp-go server through mcphost and calls its tools end
// to end. (TestToolLists checks that every page of its list is read: it
// serves one tool a page, then an empty page.) It sends notifications in the
// middle of calls and changes its tool list at run time.
func TestMCPGo(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	cfg := mcpgoServer(t)
	mark(t, &cfg)
	changed := make(chan string, 10)
	opts := h.opts()
	opts.HostEnv = append(os.Environ(), secretName+"="+secretValue)
	opts.OnToolsChanged = func(server string) { changed <- server }
	opts.Approver = func(context.Context, mcphost.ApprovalRequest) (mcphost.Verdict, error) {
		return mcphost.ApproveOnce, nil
	}
	s := h.connect(opts, cfg)

	t.Run("answers", func(t *testing.T) {
		for _, tc := range []struct{ tool, args, want string }{
			{"mcp__mcpgo__reverse-text", `{"text":"abc"}`, "cba"},
			{"mcp__mcpgo__reverse-text", `{"text":"日本語 ✓"}`, "✓ 語本日"},
			{"mcp__mcpgo__reverse-text", `{"text":""}`, ""},
			{"mcp__mcpgo__add_numbers", `{"a":2,"b":3}`, "5"},
			{"mcp__mcpgo__add_numbers", `{"a":0.5,"b":-0.25}`, "0.25"},
			{"mcp__mcpgo__write-file", `{"name":"out.txt","text":"from mcp-go"}`, "wrote out.txt"},
		} {
			if got := call(t, s, tc.tool, tc.args); got != tc.want {
				t.Errorf("%s %s = %q, want %q", tc.tool, tc.args, got, tc.want)
			}
		}
		if got := h.file(t, "out.txt"); got != "from mcp-go" {
			t.Errorf("out.txt in the worktree = %q", got)
		}
		if out := callErr(t, s, "mcp__mcpgo__write-file", `{"name":"../escape.txt","text":"x"}`); !strings.Contains(out, "not a plain file name") {
			t.Errorf("write-file ../escape.txt refused with %q", out)
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(h.worktree), "escape.txt")); !os.IsNotExist(err) {
			t.Errorf("write-file escaped the worktree (stat: %v)", err)
		}
	})

	t.Run("env", func(t *testing.T) {
		names := strings.Split(call(t, s, "mcp__mcpgo__get-env", `{}`), "\n")
		for _, name := range names {
			if name == secretName {
				t.Errorf("host variable %s reached the server; its variables: %v", secretName, names)
			}
		}
	})

	t.Run("notifications", func(t *testing.T) {
		// Each call makes the server send a log message before its
		// answer: every call gets its own answer, and every message
		// arrives.
		logs := func() int { return h.log.count("server log", "server", "mcpgo") }
		before := logs()
		const calls = 40
		var wg sync.WaitGroup
		errs := make(chan error, calls)
		for i := range calls {
			wg.Go(func() {
				msg := fmt.Sprintf("message %d", i)
				args, _ := json.Marshal(map[string]string{"message": msg})
				res, err := s.Call(context.Background(), "mcp__mcpgo__notify-then-echo", args)
				switch {
				case err != nil:
					errs <- err
				case text(res) != msg:
					errs <- fmt.Errorf("notify-then-echo %q = %q", msg, text(res))
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		waitFor(t, fmt.Sprintf("%d log messages", calls), func() bool { return logs() >= before+calls })
	})

	t.Run("list_changed", func(t *testing.T) {
		if _, ok := s.Tool("mcp__mcpgo__extra-tool"); ok {
			t.Fatal("extra-tool is there before grow")
		}
		if got := call(t, s, "mcp__mcpgo__grow", `{}`); got != "grown" {
			t.Fatalf("grow = %q", got)
		}
		select {
		case server := <-changed:
			if server != "mcpgo" {
				t.Errorf("OnToolsChanged(%q), want mcpgo", server)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("no OnToolsChanged within 20s of grow")
		}
		tool, ok := s.Tool("mcp__mcpgo__extra-tool")
		if !ok {
			t.Fatalf("extra-tool is missing after list_changed; tools: %v", toolNames(s, "mcpgo"))
		}
		// Not in allow: a tool a server adds later needs approval.
		if tool.Decision != mcphost.Approval {
			t.Errorf("extra-tool decision = %q, want approval", tool.Decision)
		}
		if got := call(t, s, "mcp__mcpgo__extra-tool", `{}`); got != "extra" {
			t.Errorf("extra-tool = %q", got)
		}
	})
}
