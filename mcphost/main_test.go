package mcphost

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost/mcphost/internal/testbin"
)

// fixtureBin is testdata/fixture, built once for the package's tests.
var fixtureBin string

func TestMain(m *testing.M) {
	os.Exit(testbin.Run(m, "mcphost-fixture-", func(dir string) error {
		fixtureBin = filepath.Join(dir, "fixture")
		return testbin.Build(fixtureBin, "../testdata/fixture")
	}))
}

// fixture is a config for the fixture server with the given flags.
func fixture(name string, flags ...string) ServerConfig {
	return ServerConfig{
		Name:           name,
		Command:        append([]string{fixtureBin}, flags...),
		Allow:          []string{"echo", "add", "list_notes", "sleep", "crash", "big", "mutate", "env", "roots", "sample", "elicit", "write", "rename", "poke", "flock", "home", "progress", "noise"},
		Deny:           []string{"delete_note"},
		StartupTimeout: 20 * time.Second,
		CallTimeout:    20 * time.Second,
	}
}

// env is one test's worktree and state directory.
type env struct {
	t        *testing.T
	worktree string
	state    string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return &env{t: t, worktree: t.TempDir(), state: t.TempDir()}
}

func (e *env) opts() Options {
	return Options{Worktree: e.worktree, StateDir: e.state, CloseGrace: 500 * time.Millisecond}
}

// connect starts servers and closes them when the test ends.
func (e *env) connect(opts Options, servers ...ServerConfig) *Session {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := Connect(ctx, servers, opts)
	if err != nil {
		e.t.Fatalf("Connect: %v", err)
	}
	e.t.Cleanup(func() { s.Close() })
	return s
}

// file reads a file of the worktree ("" if it does not exist).
func (e *env) file(name string) string {
	b, _ := os.ReadFile(filepath.Join(e.worktree, name))
	return string(b)
}

func resultText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func call(t *testing.T, s *Session, name, args string) string {
	t.Helper()
	res, err := s.Call(context.Background(), name, json.RawMessage(args))
	if err != nil {
		t.Fatalf("Call(%s, %s): %v", name, args, err)
	}
	return resultText(t, res)
}

func noticeWith(s *Session, parts ...string) string {
	for _, n := range s.Notices() {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(n, p)
		}
		if all {
			return n
		}
	}
	return ""
}

// processesOf lists the host pids of live processes running exe.
func processesOf(exe string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, ent := range ents {
		if ent.Name()[0] < '0' || ent.Name()[0] > '9' {
			continue
		}
		target, err := os.Readlink(filepath.Join("/proc", ent.Name(), "exe"))
		if err != nil {
			continue
		}
		if target == exe {
			stat, _ := os.ReadFile(filepath.Join("/proc", ent.Name(), "stat"))
			// A zombie is reaped soon; it is not a leftover process.
			if f := strings.Fields(string(stat)); len(f) > 2 && f[2] == "Z" {
				continue
			}
			out = append(out, ent.Name())
		}
	}
	return out
}

// waitNoProcesses fails the test if processes running exe outlive a short
// grace period.
func waitNoProcesses(t *testing.T, exe string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := processesOf(exe)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes of %s left after Close: pids %v", exe, left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// gitIn runs git in dir, with an identity, no signing and file-protocol
// submodules allowed, and fails tb if git fails.
func gitIn(tb testing.TB, dir string, args ...string) {
	tb.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false", "-c", "protocol.file.allow=always"}, args...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("git %v: %v %s", args, err, out)
	}
}
