package interop_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcphost/mcphost/mcphost"
	"github.com/mcphost/mcphost/pin"
)

// TestLockNpmServer: a real npm server is identified in a lock by its
// script's digest and the version package-lock.json gives its package, not
// by node's build; a review recorded into the lock by one person is the
// review of a second with an empty state.
func TestLockNpmServer(t *testing.T) {
	sc := nodeServer(t, "everything", "server-everything")
	sc.Allow, sc.Default = []string{"echo"}, mcphost.Deny
	data, err := os.ReadFile(repoPath(t, "testdata", "interop", "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pl struct {
		Packages map[string]struct{ Version string } `json:"packages"`
	}
	if err := json.Unmarshal(data, &pl); err != nil {
		t.Fatal(err)
	}
	want := "@modelcontextprotocol/server-everything@" + pl.Packages["node_modules/@modelcontextprotocol/server-everything"].Version

	wt := t.TempDir()
	lock := filepath.Join(t.TempDir(), pin.LockFileName)
	opts := mcphost.Options{Worktree: wt, StateDir: t.TempDir(), LockFile: lock, CloseGrace: closeGrace}
	ctx, cancel := context.WithTimeout(context.Background(), 2*startupTimeout)
	defer cancel()
	s, err := mcphost.Connect(ctx, []mcphost.ServerConfig{sc}, opts)
	if err != nil {
		t.Fatal(err)
	}
	echo, ok := s.Tool("mcp__everything__echo")
	if !ok || echo.Decision != mcphost.Approval || echo.Pin != mcphost.PinNew || !echo.Withheld {
		s.Close()
		t.Fatalf("echo on first sight with a lock: %+v %v held %v; notices %q", echo.Decision, echo.Pin, echo.Withheld, s.Notices())
	}
	rs, err := s.Review(context.Background(), "program:everything", "mcp__everything__echo")
	if err == nil {
		err = s.Approve(ctx, rs...)
	}
	s.Close()
	if err != nil {
		t.Fatal(err)
	}

	opts.StateDir = t.TempDir()
	s2, err := mcphost.Connect(ctx, []mcphost.ServerConfig{sc}, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if echo, _ := s2.Tool("mcp__everything__echo"); echo.Decision != mcphost.Allow || echo.Pin != mcphost.PinSame {
		t.Errorf("second person: echo %s %s, want allow same", echo.Decision, echo.Pin)
	}
	// The program is node (a system interpreter, not digested) and the
	// script of the package, by its digest and version.
	data, err = os.ReadFile(lock)
	if err != nil {
		t.Fatal(err)
	}
	l, err := pin.ParseLock(data)
	if err != nil {
		t.Fatal(err)
	}
	prog := l.Servers["everything"].Program
	if len(prog) != 2 || prog[0].Role != pin.RoleProgram || prog[0].Digest != "" ||
		prog[1].Role != pin.RoleScript || prog[1].Package != want || prog[1].Digest == "" {
		t.Errorf("the lock's program: %+v, want node undigested and the script of %s", prog, want)
	}
}
