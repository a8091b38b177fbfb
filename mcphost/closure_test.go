package mcphost

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// pythonServer is a stdio MCP server in Python
// (testdata/python/server.py): one tool, "hello", whose description comes
// from the module helper beside it.
var pythonServer = func() string {
	b, err := os.ReadFile(filepath.Join("..", "testdata", "python", "server.py"))
	if err != nil {
		panic(err)
	}
	return string(b)
}()

// python is a system Python, which a confined server can run (a shim in
// a home directory, such as pyenv's, lies out of its reach).
const python = "/usr/bin/python3"

func needPython(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(python); err != nil {
		t.Skip("no system python3:", err)
	}
}

func serverInfo(s *Session, name string) ServerInfo {
	for _, info := range s.Servers() {
		if info.Name == name {
			return info
		}
	}
	return ServerInfo{}
}

// TestClosureModuleBesideScript: an unconfined server runs a Python script
// in the worktree that imports a module beside it; a confined server can
// neither rewrite that module nor plant another beside it (the script's
// directory is read-only to every server, as the script itself), so the
// unconfined server runs what was reviewed. list says what is covered.
func TestClosureModuleBesideScript(t *testing.T) {
	needPython(t)
	e := newEnv(t)
	tools := filepath.Join(e.worktree, "tools")
	mkfileT(t, filepath.Join(tools, "srv.py"), pythonServer)
	mkfileT(t, filepath.Join(tools, "helper.py"), "DESC = 'says hello'\n")
	py := ServerConfig{Name: "py", Command: []string{python, "tools/srv.py"}, Unconfined: true, StartupTimeout: 20 * time.Second}
	s := e.connect(e.opts(), fixture("attacker"), py)
	if info := serverInfo(s, "py"); info.State != ServerRunning {
		t.Fatalf("py: %+v\n%s", info, strings.Join(s.Notices(), "\n"))
	}
	for _, p := range []string{"tools/helper.py", "tools/json.py"} {
		out := callText(t, s, "mcp__attacker__write", map[string]string{"path": filepath.Join(e.worktree, p), "content": "import os; os.system('touch /tmp/pwned')\n"})
		if !strings.HasPrefix(out, "error: ") || !(strings.Contains(out, "read-only") || strings.Contains(out, "permission denied")) {
			t.Errorf("writing %s beside the unconfined server's script: %q; want a refusal by the sandbox", p, out)
		}
	}
	if got := e.file("tools/helper.py"); got != "DESC = 'says hello'\n" {
		t.Errorf("helper.py changed on the host: %q", got)
	}
	covers := strings.Join(serverInfo(s, "py").ProgramCovers, "\n")
	for _, want := range []string{"tools/srv.py", "package tools/ (the script's directory; read-only to every server)", "not covered: what it imports from the Python installation"} {
		if !strings.Contains(covers, want) {
			t.Errorf("program covers lacks %q:\n%s", want, covers)
		}
	}
}

// TestClosurePythonDashM: an unconfined server runs python3 -m shsrv, a
// module not in the worktree. A confined server plants shsrv.py in the
// worktree, which Python would import first; at the next start the
// unconfined server runs with PYTHONSAFEPATH=1 and does not import it. A
// module that is in the worktree keeps such a server from starting, as
// does NODE_PATH into the worktree, each with a notice naming table and
// key; a confined server's list says what is not covered.
func TestClosurePythonDashM(t *testing.T) {
	needPython(t)
	e := newEnv(t)
	marker := filepath.Join(t.TempDir(), "pwned")
	sh := ServerConfig{Name: "sh", Command: []string{python, "-m", "shsrv"}, Unconfined: true, StartupTimeout: 5 * time.Second}
	s := e.connect(e.opts(), fixture("attacker"), sh)
	out := callText(t, s, "mcp__attacker__write", map[string]string{"path": filepath.Join(e.worktree, "shsrv.py"), "content": "open(" + pyQuote(marker) + ", 'w').write('ran unconfined')\n"})
	if !strings.HasPrefix(out, "wrote") {
		t.Fatalf("planting shsrv.py: %q", out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s.Restart(ctx, "sh")
	if b, err := os.ReadFile(marker); err == nil {
		t.Fatalf("the module a confined server planted ran as the unconfined server: %q", b)
	}
	if covers := strings.Join(serverInfo(s, "sh").ProgramCovers, "\n"); !strings.Contains(covers, "python runs with PYTHONSAFEPATH=1") {
		t.Errorf("program covers of the unconfined python -m:\n%s", covers)
	}

	// Found in the worktree at Connect: it does not start, saying why.
	in := ServerConfig{Name: "in", Command: []string{python, "-m", "shsrv"}, Unconfined: true, StartupTimeout: 5 * time.Second}
	nodePath := ServerConfig{Name: "np", Command: []string{python, "-m", "json.tool"}, Network: true, Env: map[string]string{"NODE_PATH": "lib"}, StartupTimeout: 5 * time.Second}
	confined := ServerConfig{Name: "conf", Command: []string{python, "-m", "shsrv"}, StartupTimeout: 5 * time.Second}
	s2 := e.connect(e.opts(), in, nodePath, confined)
	if b, err := os.ReadFile(marker); err == nil {
		t.Fatalf("a module in the worktree ran as an unconfined server: %q", b)
	}
	for _, want := range [][]string{
		{"[mcp.in] command: python -m shsrv would import " + filepath.Join(e.worktree, "shsrv.py") + " from the worktree", "sandbox = off"},
		{"[mcp.np] env: NODE_PATH names lib, which lies in " + e.worktree, "network"},
	} {
		if noticeWith(s2, want...) == "" {
			t.Errorf("no notice with %q:\n%s", want, strings.Join(s2.Notices(), "\n"))
		}
	}
	covers := strings.Join(serverInfo(s2, "conf").ProgramCovers, "\n")
	for _, want := range []string{"package shsrv.py (module shsrv in the working directory; read-only to every server)", "NOT COVERED: what python -m shsrv imports from the working directory (the worktree)"} {
		if !strings.Contains(covers, want) {
			t.Errorf("program covers of a confined python -m lacks %q:\n%s", want, covers)
		}
	}
}

func pyQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" }

// TestClosureIdentityNodeModules: a lock's identity of a node server
// covers its node_modules, so a change to a dependency's file (not the
// script) shows, naming the file; a package-lock.json's version is for
// display: a change of it alone says the digests are the same.
func TestClosureIdentityNodeModules(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node:", err)
	}
	wt := t.TempDir()
	mkfileT(t, filepath.Join(wt, "node_modules", "@acme", "notes", "dist", "index.js"), "require('dep')\n")
	dep := filepath.Join(wt, "node_modules", "dep", "index.js")
	mkfileT(t, dep, "module.exports = 1\n")
	mkfileT(t, filepath.Join(wt, "package-lock.json"), `{"packages":{"node_modules/@acme/notes":{"version":"1.2.3"}}}`)
	sc := ServerConfig{Name: "notes", Command: []string{"node", "node_modules/@acme/notes/dist/index.js"}}
	opts := Options{Worktree: wt, HostEnv: []string{"PATH=" + filepath.Dir(node)}}
	locked, err := programIdentityOf(sc, opts)
	if err != nil {
		t.Fatal(err)
	}
	mkfileT(t, filepath.Join(wt, "package-lock.json"), `{"packages":{"node_modules/@acme/notes":{"version":"9.9.9"}}}`)
	now, _ := programIdentityOf(sc, opts)
	if c := programChanges(locked, now); len(c) != 1 || !strings.Contains(c[0], "only the version a package-lock.json shows differs") {
		t.Errorf("a package-lock.json version alone: %q", c)
	}
	mkfileT(t, filepath.Join(wt, "package-lock.json"), `{"packages":{"node_modules/@acme/notes":{"version":"1.2.3"}}}`)
	mkfileT(t, dep, "require('child_process').execSync('touch /tmp/pwned')\n")
	now, _ = programIdentityOf(sc, opts)
	c := programChanges(locked, now)
	if len(c) != 1 || !strings.HasPrefix(c[0], "package-file node_modules/dep/index.js: b3v1:") {
		t.Errorf("a dependency's file changed: %q", c)
	}
	// A tree too big to list its files still shows, naming the package.
	for i := range maxTreeContents {
		mkfileT(t, filepath.Join(wt, "node_modules", "dep", "f", strings.Repeat("x", i+1)), "x")
	}
	big, _ := programIdentityOf(sc, opts)
	mkfileT(t, dep, "module.exports = 2\n")
	now, _ = programIdentityOf(sc, opts)
	c = programChanges(big, now)
	if len(c) != 1 || !strings.HasPrefix(c[0], "package node_modules/: b3v1:") || !strings.Contains(c[0], "a file in it changed") {
		t.Errorf("a file of a big tree changed: %q", c)
	}
}

// TestDigestTree: the digest covers paths, contents, executable bits and
// link targets, skips Python's bytecode cache, and stops at its bounds.
func TestDigestTree(t *testing.T) {
	dir := t.TempDir()
	mkfileT(t, filepath.Join(dir, "a.py"), "a")
	base, err := digestTree(dir, "")
	if err != nil || base.files != 1 || base.truncated {
		t.Fatalf("%+v %v", base, err)
	}
	same := func(what string, want bool) {
		t.Helper()
		got, err := digestTree(dir, "")
		if err != nil {
			t.Fatal(err)
		}
		if (got.digest == base.digest) != want {
			t.Errorf("%s: same digest %v, want %v", what, got.digest == base.digest, want)
		}
		base = got
	}
	mkfileT(t, filepath.Join(dir, "__pycache__", "a.cpython-311.pyc"), "bytecode")
	same("a bytecode cache", true)
	os.Chmod(filepath.Join(dir, "a.py"), 0o755)
	same("an executable bit", false)
	os.Symlink("a.py", filepath.Join(dir, "link"))
	same("a link", false)
	os.Remove(filepath.Join(dir, "link"))
	os.Symlink("b.py", filepath.Join(dir, "link"))
	same("a link's target", false)
	os.Mkdir(filepath.Join(dir, "ns"), 0o755)
	same("an empty directory (a namespace package)", false)
	mkfileT(t, filepath.Join(dir, "a.py"), "b")
	same("a file's content", false)

}

// TestDigestTreeCache: with a cache, a file rewritten in place with its
// size and modification time put back still changes the digest (its
// change time moved); an unchanged tree gives the same digest from the
// cache.
func TestDigestTreeCache(t *testing.T) {
	defer func(w time.Duration) { racyWindow = w }(racyWindow)
	racyWindow = -time.Hour // cache even what just changed
	dir, cache := t.TempDir(), t.TempDir()
	f := filepath.Join(dir, "helper.py")
	mkfileT(t, f, "DESC = 'a'\n")
	st, _ := os.Stat(f)
	first, err := digestTree(dir, cache)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(treeCachePath(cache, dir)); err != nil {
		t.Fatalf("no cache written: %v", err)
	}
	if again, _ := digestTree(dir, cache); again.digest != first.digest {
		t.Errorf("an unchanged tree from the cache: %s, was %s", again.digest, first.digest)
	}
	time.Sleep(10 * time.Millisecond)
	if err := os.WriteFile(f, []byte("DESC = 'b'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(f, st.ModTime(), st.ModTime())
	if now, _ := digestTree(dir, cache); now.digest == first.digest {
		t.Error("a rewrite with its modification time put back was taken from the cache")
	}
}

// BenchmarkDigestRealServers measures the program identity of the npm
// reference servers (make deps): each one's package is the node_modules
// they share, digested whole.
func BenchmarkDigestRealServers(b *testing.B) {
	dir, _ := filepath.Abs("../testdata/realservers/node_modules")
	if _, err := os.Stat(dir); err != nil {
		b.Skip("no reference servers (make deps):", err)
	}
	for _, cached := range []bool{false, true} {
		b.Run(map[bool]string{false: "read", true: "cached"}[cached], func(b *testing.B) {
			cache := ""
			if cached {
				cache = b.TempDir()
				digestTree(dir, cache)
			}
			for b.Loop() {
				t, err := digestTree(dir, cache)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(t.files), "files")
				b.ReportMetric(float64(t.bytes), "bytes")
			}
		})
	}
}
