package mcphost

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// callText calls a tool that must answer and returns its text.
func callText(t *testing.T, s *Session, tool string, args any) string {
	t.Helper()
	b, _ := json.Marshal(args)
	res, err := s.Call(context.Background(), tool, b)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return resultText(t, res)
}

// TestWorktreeIsNoRoadOntoTheHost: a confined server cannot replace
// another server's program, plant a config or lock file, write git's
// directory or a protected path; a grant through a planted link keeps its
// server from starting, with a notice naming the table and key.
func TestWorktreeIsNoRoadOntoTheHost(t *testing.T) {
	e := newEnv(t)
	wt := e.worktree
	victim := filepath.Join(wt, "bin", "victim")
	if err := os.MkdirAll(filepath.Dir(victim), 0o755); err != nil {
		t.Fatal(err)
	}
	prog, err := os.ReadFile(fixtureBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(victim, prog, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{
		"forgery":           "#!/bin/sh\necho forged\n",
		"mcphost.toml":      "[mcp.notes]\ncommand = [\"bin/notes\"]\n",
		".git/config":       "[core]\n",
		".git/hooks/README": "hooks\n",
	} {
		mkfileT(t, filepath.Join(wt, name), content)
	}
	secret := t.TempDir()
	mkfileT(t, filepath.Join(secret, "key"), "SECRET")
	if err := os.Symlink(secret, filepath.Join(wt, "data")); err != nil {
		t.Fatal(err)
	}

	attacker := fixture("attacker")
	attacker.Protect = []string{".agent/", "AGENTS.md"}
	v := fixture("victim")
	v.Command = []string{"bin/victim"}
	linked := fixture("linked")
	linked.Read = []string{"data"}
	opts := e.opts()
	opts.Protect = []string{"instructions/"}
	s := e.connect(opts, attacker, v, linked)

	for _, tt := range []struct {
		name, tool string
		args       map[string]string
	}{
		{"replace another server's program", "rename", map[string]string{"from": filepath.Join(wt, "forgery"), "to": victim}},
		{"plant mcphost.toml", "write", map[string]string{"path": filepath.Join(wt, "mcphost.toml"), "content": "[mcp.x]\nsandbox = \"off\"\n"}},
		{"plant a git hook", "write", map[string]string{"path": filepath.Join(wt, ".git", "hooks", "pre-commit"), "content": "#!/bin/sh\n"}},
		{"write git config", "write", map[string]string{"path": filepath.Join(wt, ".git", "config"), "content": "[core]\nfsmonitor = evil\n"}},
		{"write a protected directory of a table", "write", map[string]string{"path": filepath.Join(wt, ".agent", "rules.md"), "content": "obey"}},
		{"write a protected directory of Options", "write", map[string]string{"path": filepath.Join(wt, "instructions", "x.md"), "content": "obey"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := callText(t, s, "mcp__attacker__"+tt.tool, tt.args)
			if !strings.HasPrefix(out, "error: ") || !(strings.Contains(out, "read-only") || strings.Contains(out, "busy") || strings.Contains(out, "cross-device")) {
				t.Errorf("%s: %q; want a refusal by the sandbox", tt.tool, out)
			}
		})
	}
	if got, _ := os.ReadFile(victim); !slices.Equal(got, prog) {
		t.Error("the victim's program changed on the host")
	}
	if out := callText(t, s, "mcp__attacker__write", map[string]string{"path": filepath.Join(wt, "other"), "content": "x"}); !strings.HasPrefix(out, "wrote") {
		t.Errorf("writing the rest of the worktree: %q", out)
	}

	var linkedInfo ServerInfo
	for _, info := range s.Servers() {
		if info.Name == "linked" {
			linkedInfo = info
		}
	}
	if linkedInfo.State != ServerFailed {
		t.Errorf("linked: state %s; want failed", linkedInfo.State)
	}
	notices := strings.Join(s.Notices(), "\n")
	for _, want := range []string{
		"[mcp.linked] read: read path " + filepath.Join(wt, "data") + " goes through the symbolic link",
		"[mcp.attacker] protect: " + filepath.Join(wt, "AGENTS.md") + " does not exist",
	} {
		if !strings.Contains(notices, want) {
			t.Errorf("notices lack %q:\n%s", want, notices)
		}
	}
}

// TestWidens: ServerInfo says what a table grants beyond the default.
func TestWidens(t *testing.T) {
	e := newEnv(t)
	outside := t.TempDir()
	wide := fixture("wide")
	wide.Network = true
	wide.WritableGit = true
	wide.Write = []string{outside, "inside"}
	if err := os.Mkdir(filepath.Join(e.worktree, "inside"), 0o755); err != nil {
		t.Fatal(err)
	}
	off := fixture("off")
	off.Unconfined = true
	plain := fixture("plain")
	granted := fixture("granted")
	granted.NetworkGrant = []string{"api.example.com", "localhost:8080"}
	s := e.connect(e.opts(), wide, off, plain, granted)
	want := map[string][]string{
		"wide":    {"network", "git = write (writable git directory)", "write " + outside + " (outside the worktree)"},
		"off":     {"sandbox = off (unconfined)"},
		"plain":   {},
		"granted": {"network api.example.com, localhost:8080 (those destinations only, through the host's checks)"},
	}
	for _, info := range s.Servers() {
		if !slices.Equal(info.Widens, want[info.Name]) || info.Widens == nil {
			t.Errorf("%s widens %q; want %q", info.Name, info.Widens, want[info.Name])
		}
	}
}

func mkfileT(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestProtectRecorded: what an agent's Options.Protect names stays
// protected in a later session with the same state directory that does not
// name it, as the commands notices suggest (mcphost approve, list, check)
// are: the first session records it there.
func TestProtectRecorded(t *testing.T) {
	e := newEnv(t)
	opts := e.opts()
	opts.Protect = []string{"instructions/"}
	e.connect(opts, fixture("attacker")).Close()

	plain := e.opts() // the CLI's: no Options.Protect
	s := e.connect(plain, fixture("attacker"))
	out := callText(t, s, "mcp__attacker__write", map[string]string{"path": filepath.Join(e.worktree, "instructions", "x.md"), "content": "obey"})
	if !strings.HasPrefix(out, "error: ") || !strings.Contains(out, "read-only") {
		t.Errorf("writing a path an earlier session's Options.Protect named: %q; want a refusal by the sandbox", out)
	}
	if out := callText(t, s, "mcp__attacker__write", map[string]string{"path": filepath.Join(e.worktree, "other"), "content": "x"}); !strings.HasPrefix(out, "wrote") {
		t.Errorf("writing the rest of the worktree: %q", out)
	}
	s.Close()
	e.connect(opts, fixture("attacker")).Close() // names it again: no second line
	rec, err := readProtectRecord(plain.StateDir)
	if err != nil || len(rec) != 1 || rec[0] != filepath.Join(e.worktree, "instructions")+"/" {
		t.Errorf("the record: %q, %v; want the one directory, once", rec, err)
	}
}

// TestProtectRecordUnreadable: a record of protected paths that cannot be
// read whole (here a directory where the file should be; a torn or huge
// one alike) refuses the session, saying what to do, rather than start
// servers that could write what it held.
func TestProtectRecordUnreadable(t *testing.T) {
	e := newEnv(t)
	opts := e.opts()
	if err := os.MkdirAll(filepath.Join(opts.StateDir, protectRecord), 0o700); err != nil {
		t.Fatal(err)
	}
	s, err := Connect(context.Background(), []ServerConfig{fixture("attacker")}, opts)
	if err == nil {
		s.Close()
		t.Fatal("Connect started servers with the record unreadable")
	}
	if !strings.Contains(err.Error(), "no server starts") || !strings.Contains(err.Error(), "remove the record") {
		t.Errorf("error %q does not say what to do", err)
	}
}

// FuzzProtectRecord: whatever the record holds, reading it returns only
// absolute paths, each once; a path appended to it, whatever its bytes, is
// read back as it was.
func FuzzProtectRecord(f *testing.F) {
	f.Add([]byte("\"/a/b\"\n\"/a/b\"\n\"rel\"\n{\n"), "/x/\ny\"")
	f.Add([]byte("\"/torn"), "/p")
	f.Fuzz(func(t *testing.T, record []byte, p string) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, protectRecord), record, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := readProtectRecord(dir)
		if err != nil {
			return // too long a line: refused whole
		}
		seen := map[string]bool{}
		for _, q := range got {
			if !filepath.IsAbs(q) || seen[q] {
				t.Fatalf("read %q from %q", got, record)
			}
			seen[q] = true
		}
		p = "/" + strings.ToValidUTF8(p, "")
		if err := appendProtectRecord(dir, []string{p}); err != nil {
			t.Fatal(err)
		}
		if got, err := readProtectRecord(dir); err == nil && !slices.Contains(got, p) {
			t.Fatalf("appended %q to %q, read back %q", p, record, got)
		}
	})
}
