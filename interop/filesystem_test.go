package interop_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcphost/mcphost/mcphost"
)

// filesystemServer is the config of @modelcontextprotocol/server-filesystem,
// given the worktree as its one allowed directory. (It also asks the client
// for its roots after initialize and replaces its allowed directories with
// them; mcphost's one root is the worktree too.)
func filesystemServer(t testing.TB, h *harness) mcphost.ServerConfig {
	cfg := nodeServer(t, "filesystem", "server-filesystem", h.worktree)
	cfg.Allow = []string{"read_text_file", "list_directory", "list_allowed_directories", "write_file", "get_file_info"}
	return cfg
}

// pathArgs is the arguments of the filesystem server's one-path tools.
func pathArgs(path string) string {
	b, _ := json.Marshal(map[string]string{"path": path})
	return string(b)
}

// TestFilesystem runs the filesystem reference server through mcphost on a
// worktree the test fills, and checks both what it may do and what it may
// not, saying which layer refuses.
func TestFilesystem(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.write("a.txt", "alpha\n")
	h.write("sub/b.txt", "beta")
	outside, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const secret = "outside-the-worktree"
	secretFile := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secretFile, []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secretFile, filepath.Join(h.worktree, "link.txt")); err != nil {
		t.Fatal(err)
	}
	cfg := filesystemServer(t, h)
	mark(t, &cfg)
	s := h.connect(h.opts(), cfg)

	t.Run("read", func(t *testing.T) {
		for _, tc := range []struct{ path, want string }{
			{filepath.Join(h.worktree, "a.txt"), "alpha\n"},
			{filepath.Join(h.worktree, "sub", "b.txt"), "beta"},
			// Relative paths are resolved against the allowed directory.
			{"sub/b.txt", "beta"},
		} {
			if got := call(t, s, "mcp__filesystem__read_text_file", pathArgs(tc.path)); got != tc.want {
				t.Errorf("read_text_file %s = %q, want %q", tc.path, got, tc.want)
			}
		}
	})

	t.Run("list", func(t *testing.T) {
		out := call(t, s, "mcp__filesystem__list_directory", pathArgs(h.worktree))
		for _, want := range []string{"[FILE] a.txt", "[DIR] sub"} {
			if !strings.Contains(out, want) {
				t.Errorf("list_directory of the worktree = %q; want a line %q", out, want)
			}
		}
		out = call(t, s, "mcp__filesystem__list_directory", pathArgs(filepath.Join(h.worktree, "sub")))
		if strings.TrimSpace(out) != "[FILE] b.txt" {
			t.Errorf("list_directory sub = %q, want [FILE] b.txt", out)
		}
		out = call(t, s, "mcp__filesystem__list_allowed_directories", `{}`)
		if !strings.Contains(out, h.worktree) || strings.Contains(out, outside) {
			t.Errorf("list_allowed_directories = %q; want the worktree %s only", out, h.worktree)
		}
	})

	t.Run("write", func(t *testing.T) {
		args, _ := json.Marshal(map[string]string{"path": filepath.Join(h.worktree, "new.txt"), "content": "written by the server"})
		call(t, s, "mcp__filesystem__write_file", string(args))
		if got := h.file(t, "new.txt"); got != "written by the server" {
			t.Errorf("new.txt = %q after write_file", got)
		}
	})

	t.Run("outside refused", func(t *testing.T) {
		// The worktree and the outside directory are both t.TempDir()s,
		// so this is <worktree>/../<outside>/secret.txt, left unclean.
		rel, err := filepath.Rel(h.worktree, secretFile)
		if err != nil || !strings.HasPrefix(rel, "../") {
			t.Fatalf("no ../ path from the worktree to %s: %q %v", secretFile, rel, err)
		}
		dotDot := h.worktree + "/" + rel
		for _, tc := range []struct {
			name, path string
			// want is what the refusal says, which tells the layer.
			want []string
		}{
			// The server checks every path against its allowed
			// directories before it touches the file system: the
			// refusal is the server's "Access denied", whether or not
			// the sandbox would have let the read through (it would
			// for /etc/passwd: system paths are readable).
			{"absolute", secretFile, []string{"Access denied - path outside allowed directories"}},
			{"dot-dot", dotDot, []string{"Access denied - path outside allowed directories"}},
			{"system file", "/etc/passwd", []string{"Access denied - path outside allowed directories"}},
			// A symlink in the worktree passes the server's first
			// check; the server then resolves it to check the target,
			// but the sandbox's mount namespace does not show the
			// target's directory at all (temporary directories other
			// than the worktree are hidden), so the server finds
			// nothing there. The sandbox is the layer that stops it;
			// the server's own symlink check ("symlink target outside
			// allowed directories") never runs. The server's message
			// about it is misleading ("Parent directory does not
			// exist", naming the worktree) but carries no content.
			{"symlink", filepath.Join(h.worktree, "link.txt"), []string{"does not exist", "ENOENT"}},
		} {
			out := callErr(t, s, "mcp__filesystem__read_text_file", pathArgs(tc.path))
			t.Logf("%s: %s", tc.name, out)
			if !containsAny(out, tc.want...) {
				t.Errorf("%s: read_text_file %s refused with %q; want one of %q", tc.name, tc.path, out, tc.want)
			}
			if strings.Contains(out, secret) {
				t.Errorf("%s: read_text_file %s leaked the file: %q", tc.name, tc.path, out)
			}
		}
		args, _ := json.Marshal(map[string]string{"path": filepath.Join(outside, "planted.txt"), "content": "x"})
		if out := callErr(t, s, "mcp__filesystem__write_file", string(args)); !strings.Contains(out, "Access denied") {
			t.Errorf("write_file outside refused with %q; want the server's Access denied", out)
		}
		if _, err := os.Stat(filepath.Join(outside, "planted.txt")); !os.IsNotExist(err) {
			t.Errorf("write_file outside the worktree created the file (stat: %v)", err)
		}
	})

	t.Run("state and config refused", func(t *testing.T) {
		// A state directory inside the worktree is refused outright:
		// the server could hold its lock (flock needs only read access).
		h2 := newHarness(t)
		opts := h2.opts()
		opts.StateDir = filepath.Join(h2.worktree, ".mcphost-state")
		cfg := filesystemServer(t, h2)
		if s2, err := mcphost.Connect(context.Background(), []mcphost.ServerConfig{cfg}, opts); !errors.Is(err, mcphost.ErrStateReachable) {
			if s2 != nil {
				s2.Close()
			}
			t.Fatalf("Connect with the state in the worktree: %v; want ErrStateReachable", err)
		}
		// The config file inside the worktree is inside the server's
		// allowed directory, so the server itself lets the write go
		// ahead: only the sandbox, which makes it read-only, stops it.
		opts = h2.opts()
		opts.ConfigFile = filepath.Join(h2.worktree, "agent.toml")
		before := []byte("[mcp.filesystem]\n")
		if err := os.WriteFile(opts.ConfigFile, before, 0o644); err != nil {
			t.Fatal(err)
		}
		// A config in the worktree could have been written by a server:
		// its table starts only as a person reviewed it.
		s2, err := mcphost.Connect(context.Background(), []mcphost.ServerConfig{cfg}, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s2.Close() })
		if st := s2.Servers()[0].State; st != mcphost.ServerUnreviewed {
			t.Fatalf("a table of a config in the worktree, never reviewed: %s, want unreviewed", st)
		}
		rs, err := s2.Review(context.Background(), "filesystem")
		if err == nil {
			err = s2.Approve(context.Background(), rs...)
		}
		if err == nil {
			err = s2.Restart(context.Background(), "filesystem")
		}
		if err != nil {
			t.Fatalf("reviewing the table: %v", err)
		}
		args, _ := json.Marshal(map[string]string{"path": opts.ConfigFile, "content": "[mcp.evil]\n"})
		out := callErr(t, s2, "mcp__filesystem__write_file", string(args))
		t.Logf("write_file agent.toml: %s", out)
		if strings.Contains(out, "Access denied") || !containsAny(out, "EROFS", "EACCES", "EPERM", "EBUSY") {
			t.Errorf("write_file of the config refused with %q; want the operating system's refusal (EROFS, EACCES, EPERM or EBUSY), not the server's", out)
		}
		if after, err := os.ReadFile(opts.ConfigFile); err != nil || string(after) != string(before) {
			t.Errorf("the config file changed under the server: %v\n%s", err, after)
		}
	})
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
