package mcphost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mcphost/mcphost/pin"
)

// TestProgramIdentity: a node server is identified by its script and the
// package version package-lock.json gives it, not by node's own build; a
// program in the worktree by its digest; and any change to either shows.
func TestProgramIdentity(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node:", err)
	}
	wt := t.TempDir()
	script := filepath.Join(wt, "node_modules", "@acme", "notes", "dist", "index.js")
	mkfileT(t, script, "console.log(1)\n")
	mkfileT(t, filepath.Join(wt, "package-lock.json"), `{"lockfileVersion":3,"packages":{"":{},"node_modules/@acme/notes":{"version":"1.2.3"}}}`)
	sc := ServerConfig{Name: "notes", Command: []string{"node", "node_modules/@acme/notes/dist/index.js"}}
	opts := Options{Worktree: wt, HostEnv: []string{"PATH=" + filepath.Dir(node)}}
	got, err := programIdentityOf(sc, opts)
	if err != nil {
		t.Fatal(err)
	}
	want := []pin.ProgramFile{
		{Role: pin.RoleProgram, Path: "node"},
		{Role: pin.RoleScript, Path: "node_modules/@acme/notes/dist/index.js", Digest: pin.DigestBytes([]byte("console.log(1)\n")), Package: "@acme/notes@1.2.3"},
	}
	// Then the package it belongs to: the node_modules it lies in, whole,
	// and, a small tree, its file.
	want = append(want, pin.ProgramFile{Role: pin.RolePackage, Path: "node_modules/", Files: 1},
		pin.ProgramFile{Role: pin.RolePackageFile, Path: "node_modules/@acme/notes/dist/index.js", Digest: want[1].Digest})
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[3] != want[3] ||
		got[2].Role != want[2].Role || got[2].Path != want[2].Path || got[2].Files != 1 || got[2].Digest == "" {
		t.Fatalf("ProgramIdentity:\n%+v\nwant\n%+v", got, want)
	}
	mkfileT(t, script, "console.log(2)\n")
	mkfileT(t, filepath.Join(wt, "package-lock.json"), `{"packages":{"node_modules/@acme/notes":{"version":"1.2.4"}}}`)
	now, _ := programIdentityOf(sc, opts)
	changes := programChanges(got, now)
	if len(changes) != 2 || !strings.Contains(changes[0], "@acme/notes@1.2.4 b3v1:") || !strings.Contains(changes[0], "was @acme/notes@1.2.3") ||
		!strings.HasPrefix(changes[1], "package-file node_modules/@acme/notes/dist/index.js: b3v1:") {
		t.Errorf("changes: %q", changes)
	}
	if c := programChanges(got, got); c != nil {
		t.Errorf("no change: %q", c)
	}

	bin := filepath.Join(wt, "bin", "notes")
	mkfileT(t, bin, "#!/bin/sh\nexit 0\n")
	os.Chmod(bin, 0o755)
	prog, err := programIdentityOf(ServerConfig{Name: "b", Command: []string{"bin/notes"}}, opts)
	if err != nil || len(prog) != 1 || prog[0].Path != "bin/notes" || prog[0].Digest != pin.DigestBytes([]byte("#!/bin/sh\nexit 0\n")) {
		t.Errorf("a program in the worktree: %+v %v", prog, err)
	}
}

// TestLockSessionConcurrentReviews: with Options.LockFile, first sight
// records nothing and trusts nothing (every tool is held from the model);
// many goroutines approving at once all land in the lock, none in the
// state; a second session with an empty state sees them reviewed.
func TestLockSessionConcurrentReviews(t *testing.T) {
	e := newEnv(t)
	lock := filepath.Join(t.TempDir(), "team.lock") // outside every writable path: trusted as it is
	opts := e.opts()
	opts.LockFile = lock
	s := e.connect(opts, fixture("notes"))
	if n := len(s.Tools()); n != 0 {
		t.Errorf("%d tools offered on first sight with a lock, want none", n)
	}
	var names []string
	for _, tool := range s.AllTools() {
		if tool.Decision == Deny {
			continue
		}
		if !tool.Withheld || tool.Pin != PinNew {
			t.Errorf("%s on first sight with a lock: held %v %s, want held new", tool.Name, tool.Withheld, tool.Pin)
		}
		names = append(names, tool.Name)
	}
	if len(names) < 3 {
		t.Fatalf("only %d tools: %v", len(names), names)
	}
	var wg sync.WaitGroup
	for _, name := range names {
		wg.Add(2)
		go func() {
			defer wg.Done()
			if err := approve(s, name); err != nil {
				t.Error(err)
			}
		}()
		go func() {
			defer wg.Done()
			// A call races the review: held (refused) or reviewed.
			if _, err := s.Call(context.Background(), name, json.RawMessage(`{}`)); err != nil && !errors.Is(err, ErrNeedsApproval) && !errors.Is(err, ErrBadArguments) && !errors.Is(err, ErrDeclined) {
				var ce *CallError
				if !errors.As(err, &ce) {
					t.Errorf("call %s: %v", name, err)
				}
			}
		}()
	}
	wg.Wait()
	l, err := loadLock(context.Background(), lock, []ServerConfig{fixture("notes")}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(l.Servers["notes"].Tools); got != len(names) {
		t.Errorf("the lock holds %d tools, want %d", got, len(names))
	}
	if st, _ := os.ReadFile(filepath.Join(e.state, pin.FileName)); strings.Contains(string(st), "notes/") {
		t.Errorf("reviews went to the state:\n%s", st)
	}
	other := &env{t: t, worktree: e.worktree, state: t.TempDir()}
	o := other.opts()
	o.LockFile = lock
	sc := fixture("notes")
	s2 := other.connect(o, sc)
	if got := len(s2.Tools()); got != len(names) {
		t.Errorf("second session offers %d tools, want %d", got, len(names))
	}
	for _, tool := range s2.Tools() {
		want := Approval
		if slices.Contains(sc.Allow, tool.Tool) {
			want = Allow
		}
		if tool.Pin != PinSame || tool.Decision != want {
			t.Errorf("second session: %s %s %s, want %s same", tool.Name, tool.Decision, tool.Pin, want)
		}
	}
}

// BenchmarkLoadLock measures reading a lock of 200 tools and deciding
// whether to trust it: outside every writable path (no check), recorded in
// the state, and committed in git (one git cat-file).
func BenchmarkLoadLock(b *testing.B) {
	def := func(i int) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"name":"t%d","description":"Tool %d does one thing well.","inputSchema":{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}}`, i, i))
	}
	l := &pin.Lock{Servers: map[string]pin.LockServer{}}
	tools := map[string]pin.LockEntry{}
	for i := 0; i < 200; i++ {
		e, err := pin.NewLockEntry(def(i))
		if err != nil {
			b.Fatal(err)
		}
		tools[fmt.Sprintf("t%d", i)] = e
	}
	l.Servers["notes"] = pin.LockServer{Program: []pin.ProgramFile{{Role: pin.RoleProgram, Path: "bin/notes", Digest: pin.DigestBytes(nil)}}, Tools: tools}
	data, err := l.Marshal()
	if err != nil {
		b.Fatal(err)
	}
	servers := []ServerConfig{{Name: "notes", Command: []string{"bin/notes"}}}
	for _, where := range []string{"outside", "recorded", "committed"} {
		b.Run(where, func(b *testing.B) {
			wt, state := b.TempDir(), b.TempDir()
			path := filepath.Join(wt, pin.LockFileName)
			if where == "outside" {
				path = filepath.Join(b.TempDir(), pin.LockFileName)
			}
			if err := os.WriteFile(path, data, 0o644); err != nil {
				b.Fatal(err)
			}
			opts := Options{Worktree: wt, StateDir: state}
			switch where {
			case "recorded":
				if err := acceptLock(path, data, servers, opts); err != nil {
					b.Fatal(err)
				}
			case "committed":
				if _, err := exec.LookPath("git"); err != nil {
					b.Skip("no git")
				}
				gitIn(b, wt, "init", "-q")
				gitIn(b, wt, "add", pin.LockFileName)
				gitIn(b, wt, "commit", "-q", "-m", "l")
			}
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := loadLock(context.Background(), path, servers, opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestLockTrustGrants: a lock a server could have written is not trusted:
// one outside the worktree when a server runs unconfined (it can write
// anywhere), one committed in the worktree's repository when a server may
// write the git directory (it could have committed it).
func TestLockTrustGrants(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	data := []byte("{\n  \"version\": 1,\n  \"servers\": {}\n}\n")
	e := newEnv(t)
	outside := filepath.Join(t.TempDir(), pin.LockFileName)
	if err := os.WriteFile(outside, data, 0o644); err != nil {
		t.Fatal(err)
	}
	off := fixture("off")
	off.Unconfined = true
	if _, err := loadLock(context.Background(), outside, []ServerConfig{off}, e.opts()); !errors.Is(err, ErrLockUntrusted) {
		t.Errorf("a lock outside the worktree with an unconfined server: %v, want ErrLockUntrusted", err)
	}
	committed := filepath.Join(e.worktree, pin.LockFileName)
	if err := os.WriteFile(committed, data, 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, e.worktree, "init", "-q")
	gitIn(t, e.worktree, "add", pin.LockFileName)
	gitIn(t, e.worktree, "commit", "-q", "-m", "l")
	// The control: committed, with no such grant, it is trusted.
	if _, err := loadLock(context.Background(), committed, []ServerConfig{fixture("a")}, e.opts()); err != nil {
		t.Fatalf("a committed lock: %v", err)
	}
	g := fixture("a")
	g.WritableGit = true
	if _, err := loadLock(context.Background(), committed, []ServerConfig{g}, e.opts()); !errors.Is(err, ErrLockUntrusted) || !strings.Contains(err.Error(), `git = "write"`) {
		t.Errorf("a committed lock with git = \"write\": %v, want ErrLockUntrusted naming the grant", err)
	}
}

// TestRestartProgramChanged: with a lock, a server whose program file
// changed on disk after Connect (an update, or a peer's write) is not
// restarted under the session's comparison of the old one: Restart fails,
// saying so, and the reviewed tools are not called on the new program.
func TestRestartProgramChanged(t *testing.T) {
	prog := filepath.Join(t.TempDir(), "prog")
	data, err := os.ReadFile(fixtureBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(prog, data, 0o755); err != nil {
		t.Fatal(err)
	}
	sc := fixture("x")
	sc.Command = []string{prog}
	e := newEnv(t)
	opts := e.opts()
	opts.LockFile = filepath.Join(t.TempDir(), pin.LockFileName)
	ctx := context.Background()
	s := e.connect(opts, sc)
	rs, err := s.Review(ctx, "program:x", "mcp__x__echo")
	if err == nil {
		err = s.Approve(ctx, rs...)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Restart(ctx, "x"); err != nil {
		t.Fatalf("Restart with the program unchanged: %v", err)
	}
	if tool, _ := s.Tool("mcp__x__echo"); tool.Decision != Allow {
		t.Fatalf("echo after review: %s", tool.Decision)
	}
	// The program is replaced, as an update does: the same code and one
	// byte more, renamed over it.
	if err := os.WriteFile(prog+".new", append(data, 0), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(prog+".new", prog); err != nil {
		t.Fatal(err)
	}
	err = s.Restart(ctx, "x")
	if err == nil || !strings.Contains(err.Error(), "its program changed since the session started") {
		t.Fatalf("Restart with the program changed: %v", err)
	}
	if _, err := s.Call(ctx, "mcp__x__echo", json.RawMessage(`{"text":"hi"}`)); err == nil {
		t.Error("echo was called on the changed program")
	}
}
