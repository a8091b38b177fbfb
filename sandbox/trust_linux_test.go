package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestGitReadOnly: a server cannot plant hooks or config in the
// repository's git directory, wherever git would find it, unless it is
// given WritableGit.
func TestGitReadOnly(t *testing.T) {
	requireConfinement(t)
	t.Run("directory", func(t *testing.T) {
		wt := t.TempDir()
		mkfile(t, filepath.Join(wt, ".git", "config"), "[core]\n")
		mkfile(t, filepath.Join(wt, ".git", "hooks", "README"), "hooks\n")
		mkfile(t, filepath.Join(wt, "forgery"), "forged")
		s := startHostile(t, Config{Worktree: wt})
		s.check(t, []op{
			{name: "plant a hook", op: "write", args: []string{filepath.Join(wt, ".git", "hooks", "pre-commit")}, errnos: []string{"EROFS"}},
			{name: "set core.fsmonitor", op: "append", args: []string{filepath.Join(wt, ".git", "config")}, errnos: []string{"EROFS"}},
			{name: "move .git away", op: "rename", args: []string{filepath.Join(wt, ".git"), filepath.Join(wt, "old")}, errnos: []string{"EBUSY"}},
			{name: "write the worktree", op: "write", args: []string{filepath.Join(wt, "file")}, ok: true},
		})
		if b, _ := os.ReadFile(filepath.Join(wt, ".git", "config")); string(b) != "[core]\n" {
			t.Errorf(".git/config on the host is %q", b)
		}

		w := startHostile(t, Config{Worktree: wt, WritableGit: true})
		w.check(t, []op{
			{name: "git = write: commit", op: "write", args: []string{filepath.Join(wt, ".git", "hooks", "pre-commit")}, ok: true},
		})
	})
	t.Run("gitdir file", func(t *testing.T) {
		// A linked worktree: <wt>/.git names <main>/.git/worktrees/wt,
		// whose commondir names <main>/.git; <main> is a write grant.
		base := t.TempDir()
		main := filepath.Join(base, "main")
		wt := filepath.Join(base, "wt")
		gitdir := filepath.Join(main, ".git", "worktrees", "wt")
		mkfile(t, filepath.Join(main, ".git", "config"), "[core]\n")
		mkfile(t, filepath.Join(gitdir, "HEAD"), "ref: refs/heads/x\n")
		mkfile(t, filepath.Join(gitdir, "commondir"), "../..\n")
		mkfile(t, filepath.Join(wt, ".git"), "gitdir: ../main/.git/worktrees/wt\n")
		mkfile(t, filepath.Join(wt, "forged-gitfile"), "gitdir: /tmp/planted\n")
		s := startHostile(t, Config{Worktree: wt, Write: []string{main}})
		s.check(t, []op{
			{name: "point .git elsewhere", op: "rename", args: []string{filepath.Join(wt, "forged-gitfile"), filepath.Join(wt, ".git")}, errnos: []string{"EBUSY"}},
			{name: "rewrite the .git file", op: "write", args: []string{filepath.Join(wt, ".git")}, errnos: []string{"EROFS"}},
			{name: "plant a hook in the common dir", op: "write", args: []string{filepath.Join(main, ".git", "hooks")}, errnos: []string{"EROFS"}},
			{name: "change the common config", op: "append", args: []string{filepath.Join(main, ".git", "config")}, errnos: []string{"EROFS"}},
			{name: "change the worktree's HEAD", op: "write", args: []string{filepath.Join(gitdir, "HEAD")}, errnos: []string{"EROFS"}},
			{name: "write the main checkout", op: "write", args: []string{filepath.Join(main, "file")}, ok: true},
		})
	})
	t.Run("enclosing repository", func(t *testing.T) {
		// The worktree is a subdirectory of a repository the server may
		// write: git run in it finds the parent's .git.
		repo := t.TempDir()
		wt := filepath.Join(repo, "sub")
		mkfile(t, filepath.Join(repo, ".git", "config"), "[core]\n")
		mkfile(t, filepath.Join(wt, "f"), "x")
		s := startHostile(t, Config{Worktree: wt, Write: []string{repo}})
		s.check(t, []op{
			{name: "change the parent's git config", op: "append", args: []string{filepath.Join(repo, ".git", "config")}, errnos: []string{"EROFS"}},
		})
	})
}

// TestGitStartErrors: a .git that cannot be protected is refused with an
// error that says what to do.
func TestGitStartErrors(t *testing.T) {
	requireConfinement(t)
	for _, tt := range []struct {
		name, dotgit, text string
	}{
		{"gitdir missing in the worktree", "gitdir: planted.git\n", "does not exist inside a writable path"},
		{"not a gitdir file", "hello\n", "not a git pointer file"},
		{"gitdir too long", "gitdir: " + strings.Repeat("a", maxGitFileLen) + "\n", "longer than"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			wt := t.TempDir()
			mkfile(t, filepath.Join(wt, ".git"), tt.dotgit)
			p, err := Start(context.Background(), Config{Name: "git", Argv: []string{hostilePath()}, Worktree: wt,
				HostEnv: []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}})
			if err == nil {
				p.Close(0)
				t.Fatal("Start succeeded")
			}
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tt.text) || !strings.Contains(err.Error(), `git = "write"`) {
				t.Errorf("error %q: want ErrInvalidConfig saying %q and naming git = \"write\"", err, tt.text)
			}
		})
	}
}

// TestProgramsProtected: a server cannot replace its own program, the
// script its interpreter runs, or another server's program named in
// Protect.
func TestProgramsProtected(t *testing.T) {
	requireConfinement(t)
	wt := t.TempDir()
	prog := filepath.Join(wt, "bin", "hostile")
	copyFile(t, hostilePath(), prog, 0o755)
	other := filepath.Join(wt, "tools", "other.sh")
	mkfile(t, other, "#!/bin/sh\nexit 0\n")
	os.Chmod(other, 0o755)
	mkfile(t, filepath.Join(wt, "forgery"), "#!/bin/sh\necho forged\n")
	otherProgs, err := Programs(Config{Argv: []string{"tools/other.sh"}, Worktree: wt})
	if err != nil {
		t.Fatal(err)
	}
	s := startHostile(t, Config{Argv: []string{"bin/hostile"}, Worktree: wt, Protect: otherProgs})
	s.check(t, []op{
		{name: "replace its own program", op: "rename", args: []string{filepath.Join(wt, "forgery"), prog}, errnos: []string{"EBUSY", "EXDEV"}},
		{name: "remove its own program", op: "remove", args: []string{prog}, errnos: []string{"EBUSY", "EXDEV"}},
		{name: "overwrite another server's program", op: "write", args: []string{other}, errnos: []string{"EROFS"}},
		{name: "replace another server's program", op: "rename", args: []string{filepath.Join(wt, "forgery"), other}, errnos: []string{"EBUSY", "EXDEV"}},
	})

	// An interpreter's script: the hostile fixture, named node, runs
	// "server.js" as far as the sandbox can tell.
	interpDir := t.TempDir()
	node := filepath.Join(interpDir, "node")
	copyFile(t, hostilePath(), node, 0o755)
	script := filepath.Join(wt, "server.js")
	mkfile(t, script, "// the server\n")
	n := startHostile(t, Config{Argv: []string{node, "--no-warnings", "server.js"}, Worktree: wt})
	n.check(t, []op{
		{name: "rewrite the script it runs", op: "write", args: []string{script}, errnos: []string{"EROFS"}},
	})
	if b, _ := os.ReadFile(script); string(b) != "// the server\n" {
		t.Errorf("the script on the host is %q", b)
	}
}

// TestLinkedGrants: a grant or a program that goes through a symbolic link
// a server could have planted is refused, whether the link was planted
// between sessions or swapped in while the server starts.
func TestLinkedGrants(t *testing.T) {
	requireConfinement(t)
	secretDir := t.TempDir()
	mkfile(t, filepath.Join(secretDir, "secret"), "SECRET")
	os.Chmod(filepath.Join(secretDir, "secret"), 0o600)
	home := t.TempDir()
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + home}

	t.Run("planted between sessions", func(t *testing.T) {
		wt := t.TempDir()
		data := filepath.Join(wt, "data")
		if err := os.Mkdir(data, 0o755); err != nil {
			t.Fatal(err)
		}
		// Session 1: a server replaces the granted directory by a link.
		s := startHostile(t, Config{Worktree: wt, Read: []string{data}})
		s.must("remove", data)
		s.must("symlink", secretDir, data)
		s.p.Close(0)

		for _, field := range []string{"read", "write"} {
			cfg := Config{Name: "next", Argv: []string{hostilePath()}, Worktree: wt, HostEnv: env}
			if field == "read" {
				cfg.Read = []string{data}
			} else {
				cfg.Write = []string{data}
			}
			p, err := Start(context.Background(), cfg)
			if err == nil {
				p.Close(0)
				t.Fatalf("%s grant through a planted link: Start succeeded", field)
			}
			var le *LinkError
			if !errors.As(err, &le) || !errors.Is(err, ErrLinkedPath) || !errors.Is(err, ErrInvalidConfig) ||
				le.Field != field || le.Link != data || !strings.Contains(err.Error(), data) {
				t.Errorf("%s: error %v (%#v); want a LinkError for %s", field, err, le, data)
			}
		}
	})
	t.Run("planted by a peer", func(t *testing.T) {
		peer := t.TempDir()
		link := filepath.Join(peer, "cache")
		if err := os.Symlink(secretDir, link); err != nil {
			t.Fatal(err)
		}
		p, err := Start(context.Background(), Config{Name: "peer", Argv: []string{hostilePath()}, Worktree: t.TempDir(),
			HostEnv: env, Read: []string{link}, PeerWrite: []string{peer}})
		if err == nil {
			p.Close(0)
			t.Fatal("Start succeeded")
		}
		if !errors.Is(err, ErrLinkedPath) {
			t.Errorf("error %v; want ErrLinkedPath", err)
		}
	})
	t.Run("program through a link", func(t *testing.T) {
		wt := t.TempDir()
		if err := os.Symlink(hostilePath(), filepath.Join(wt, "server")); err != nil {
			t.Fatal(err)
		}
		for _, off := range []bool{false, true} {
			p, err := Start(context.Background(), Config{Name: "prog", Argv: []string{"./server"}, Worktree: wt, HostEnv: env, Off: off})
			if err == nil {
				p.Close(0)
				t.Fatalf("off=%v: Start succeeded", off)
			}
			var le *LinkError
			if !errors.As(err, &le) || le.Field != "command" {
				t.Errorf("off=%v: error %v; want a LinkError for the command", off, err)
			}
		}
	})
	t.Run("a link swapped in while starting", func(t *testing.T) {
		// The host checks a real directory; another server swaps in a link
		// before it is opened by descriptor (by the host for a root host's
		// idmapped grants, by the helper otherwise), refusing symbolic
		// links: the start is refused, and not as something the kernel
		// cannot do.
		peer := t.TempDir()
		data := filepath.Join(peer, "data")
		if err := os.Mkdir(data, 0o755); err != nil {
			t.Fatal(err)
		}
		swap := swapForLink(t, data, secretDir)
		for _, self := range []bool{false, true} {
			if err := os.RemoveAll(data); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(data, 0o755); err != nil {
				t.Fatal(err)
			}
			cfg := Config{Name: "swap", Argv: []string{hostilePath()}, Worktree: t.TempDir(), HostEnv: env,
				Read: []string{data}, PeerWrite: []string{peer}}
			p, err := start(context.Background(), cfg, startOptions{beforeLaunch: swap, selfHelper: self})
			if err == nil {
				p.Close(0)
				t.Fatalf("self helper %v: Start succeeded with the swapped link", self)
			}
			if !strings.Contains(err.Error(), "too many levels of symbolic links") || errors.Is(err, ErrUnsupported) ||
				!errors.Is(err, ErrLinkedPath) || !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("self helper %v: error %v; want the refusal of the link, as ErrLinkedPath", self, err)
			}
		}
	})
}

// TestRuleSwappedAfterRoot: a granted path within another grant (here
// write within read) that becomes a symbolic link after the host built
// the root, and before the Landlock rules are opened
// (startOptions.beforePlan), as another server that may write there could
// make it, is refused as ErrLinkedPath. The swap detaches the bind the
// root had at the path, so the root shows the link there; the rule is
// opened through no link, so the grant cannot be moved to where the link
// points ("/" here: write on the whole root). It passed with the rules
// opened through links.
func TestRuleSwappedAfterRoot(t *testing.T) {
	requireConfinement(t)
	shared := t.TempDir()
	out := filepath.Join(shared, "out")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Name: "swapped", Argv: []string{hostilePath()}, Worktree: t.TempDir(), Read: []string{shared}, Write: []string{out},
		HostEnv: []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := start(ctx, cfg, startOptions{beforePlan: swapForLink(t, out, "/")})
	if err == nil {
		p.Close(0)
		t.Fatal("Start succeeded with a granted path swapped for a link after the root was built")
	}
	if !errors.Is(err, ErrLinkedPath) || !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("Start's error %v: want the refusal of the link, as ErrLinkedPath", err)
	}
}
