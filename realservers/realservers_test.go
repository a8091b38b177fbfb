package realservers_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost/mcphost/mcphost"
)

// Generous bounds: node starts slowly on a loaded CI machine with the race
// detector on, and no test waits for them to pass.
const (
	startupTimeout = 90 * time.Second
	closeGrace     = 500 * time.Millisecond
)

// realServer is one published server: its package, its entry point (the
// file its package.json's bin names), the dummy variables it needs to start,
// and what it shows of running confined.
type realServer struct {
	name  string
	pkg   string
	entry string
	env   map[string]string
	// writesHome: it creates files in ~ as it starts (and died at start
	// when HOME was read-only).
	writesHome bool
}

func realServers() []realServer {
	return []realServer{
		{name: "commander", pkg: "@wonderwhy-er/desktop-commander", entry: "dist/index.js", writesHome: true},
		{name: "context7", pkg: "@upstash/context7-mcp", entry: "dist/index.js"},
		{name: "playwright", pkg: "@playwright/mcp", entry: "cli.js"},
		{name: "thinking", pkg: "@modelcontextprotocol/server-sequential-thinking", entry: "dist/index.js"},
		{name: "chart", pkg: "@antv/mcp-server-chart", entry: "build/index.js"},
		{name: "tavily", pkg: "tavily-mcp", entry: "build/index.js", env: map[string]string{"TAVILY_API_KEY": "tvly-dummy-key"}},
		{name: "notion", pkg: "@notionhq/notion-mcp-server", entry: "bin/cli.mjs", env: map[string]string{"NOTION_TOKEN": "ntn_dummy_token"}},
	}
}

// skipOrFail skips a test whose servers are not installed, saying why; in
// CI (CI set) that is a failure: CI must not pass on servers it never ran.
func skipOrFail(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("%s (CI is set, so this is a failure, not a skip)", why)
	}
	t.Skip(why)
}

// installDir returns the real path of testdata/realservers/node_modules.
func installDir(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	nm := filepath.Join(filepath.Dir(wd), "testdata", "realservers", "node_modules")
	real, err := filepath.EvalSymlinks(nm)
	if err != nil {
		skipOrFail(t, fmt.Sprintf("SKIP: the real servers are not installed (%v): run `make deps`", err))
	}
	return real
}

// nodePath is node's real path, or the test is skipped.
func nodePath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("node")
	if err != nil {
		skipOrFail(t, fmt.Sprintf("SKIP: node is not installed (%v)", err))
	}
	if p, err = filepath.EvalSymlinks(p); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRealServers starts each server bare (the go-sdk's own client, in a
// throwaway HOME) and confined (mcphost's defaults, a read grant for the
// install directory, its dummy keys), and checks that both list the same
// tools.
func TestRealServers(t *testing.T) {
	nm := installDir(t)
	node := nodePath(t)
	for _, rs := range realServers() {
		t.Run(rs.name, func(t *testing.T) {
			entry := filepath.Join(nm, rs.pkg, rs.entry)
			if _, err := os.Stat(entry); err != nil {
				skipOrFail(t, fmt.Sprintf("SKIP: %s is not installed (%v): run `make deps`", rs.pkg, err))
			}
			bare := bareTools(t, node, entry, rs.env)
			if len(bare) == 0 {
				t.Fatalf("a bare client lists no tools of %s", rs.pkg)
			}

			read := []string{nm}
			if !underSystemPath(node) {
				read = append(read, filepath.Dir(filepath.Dir(node)))
			}
			state := t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 2*startupTimeout)
			defer cancel()
			s, err := mcphost.Connect(ctx, []mcphost.ServerConfig{{
				Name: rs.name, Command: []string{node, entry}, Read: read, Env: rs.env,
				StartupTimeout: startupTimeout,
			}}, mcphost.Options{Worktree: t.TempDir(), StateDir: state, CloseGrace: closeGrace})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var got []string
			for _, tool := range s.AllTools() {
				got = append(got, tool.Tool)
			}
			slices.Sort(got)
			t.Logf("%s %s: a bare client lists %d tools, mcphost confined %d", rs.pkg, rs.entry, len(bare), len(got))
			if !slices.Equal(got, bare) {
				t.Errorf("confined, %s lists %d tools, bare %d:\n confined: %v\n     bare: %v\nnotices:\n%s",
					rs.name, len(got), len(bare), got, bare, strings.Join(s.Notices(), "\n"))
			}
			if rs.writesHome {
				home := filepath.Join(state, "home", rs.name)
				if ents, err := os.ReadDir(home); err != nil || len(ents) == 0 {
					t.Errorf("%s wrote nothing in its private home %s (%v)", rs.name, home, err)
				}
			}
		})
	}
}

// bareTools lists the server's tools with the go-sdk's own client and
// transport, run in a throwaway HOME and working directory.
func bareTools(t *testing.T, node, entry string, env map[string]string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startupTimeout)
	defer cancel()
	cmd := exec.Command(node, entry)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bare", Version: "1"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: time.Second}, nil)
	if err != nil {
		t.Fatalf("bare client: %v\nstderr:\n%s", err, stderr.String())
	}
	var names []string
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			cs.Close()
			t.Fatalf("bare client: tools/list: %v\nstderr:\n%s", err, stderr.String())
		}
		names = append(names, tool.Name)
	}
	cs.Close()
	slices.Sort(names)
	return names
}

// underSystemPath reports whether p lies where the sandbox lets every
// server read and execute.
func underSystemPath(p string) bool {
	for _, dir := range []string{"/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc", "/opt"} {
		if p == dir || strings.HasPrefix(p, dir+"/") {
			return true
		}
	}
	return false
}
