package mcphost

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// secretServer is pythonServer with one tool, "peek", that says whether
// the server can read the file $SECRET.
var secretServer = strings.NewReplacer(
	"import json, sys\nimport helper\n", "import json, os, sys\n",
	`"name": "hello", "description": helper.DESC`, `"name": "peek", "description": "Peek."`,
	`r = {"content": [{"type": "text", "text": "hello"}]}`, `try:
            open(os.environ["SECRET"]).read()
            t = "secret read"
        except OSError as e:
            t = "secret hidden: " + e.__class__.__name__
        r = {"content": [{"type": "text", "text": t}]}`,
).Replace(pythonServer)

func writeFileT(t *testing.T, p, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

// TestRuntimeUnderHome (issue 31): python3 on PATH is a pyenv-style shim in
// a HOME the server cannot see; the shim runs pyenv, which runs the version
// installed under it. The server starts confined without any read entry:
// mcphost grants the pyenv tree read-only (and tells pyenv where it is,
// since the server's HOME is its own), says so in Widens, and a secret
// elsewhere in that HOME stays unreadable.
func TestRuntimeUnderHome(t *testing.T) {
	needPython(t)
	e := newEnv(t)
	home := t.TempDir()
	root := filepath.Join(home, ".pyenv")
	writeFileT(t, filepath.Join(root, "shims", "python3"), "#!/bin/sh\nexec \""+root+"/libexec/pyenv\" exec python3 \"$@\"\n", 0o755)
	writeFileT(t, filepath.Join(root, "libexec", "pyenv"), "#!/bin/sh\n# stands for pyenv: runs the version named in $PYENV_ROOT/version\nshift; prog=$1; shift\nexec \"$PYENV_ROOT/versions/$(cat \"$PYENV_ROOT/version\")/bin/$prog\" \"$@\"\n", 0o755)
	writeFileT(t, filepath.Join(root, "version"), "3.x\n", 0o644)
	if err := os.MkdirAll(filepath.Join(root, "versions", "3.x", "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(python, filepath.Join(root, "versions", "3.x", "bin", "python3")); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(home, ".ssh", "id_ed25519")
	writeFileT(t, secret, "PRIVATE KEY", 0o600)
	writeFileT(t, filepath.Join(e.worktree, "server.py"), secretServer, 0o644)

	opts := e.opts()
	opts.HostEnv = []string{"PATH=" + filepath.Join(root, "shims") + ":/usr/bin:/bin", "HOME=" + home}
	sc := ServerConfig{Name: "py", Command: []string{"python3", "server.py"}, Env: map[string]string{"SECRET": secret}, Allow: []string{"peek"}}
	s := e.connect(opts, sc)
	info := serverInfo(s, "py")
	if info.State != ServerRunning {
		t.Fatalf("the server did not start: %s %s; notices %q", info.State, info.Error, s.Notices())
	}
	if !strings.Contains(strings.Join(info.Widens, "\n"), "read "+root+" (the pyenv install its program runs from; added by mcphost)") {
		t.Errorf("widens %q; want the pyenv grant named", info.Widens)
	}
	if out := call(t, s, "mcp__py__peek", `{}`); !strings.HasPrefix(out, "secret hidden") {
		t.Errorf("the secret in the person's HOME: %s", out)
	}
}

// jsServer is a stdio MCP server in JavaScript with no dependencies.
const jsServer = `const rl = require("readline").createInterface({input: process.stdin});
rl.on("line", (line) => {
  const msg = JSON.parse(line);
  if (msg.id === undefined) return;
  let r = null;
  if (msg.method === "initialize") r = {protocolVersion: msg.params.protocolVersion, capabilities: {tools: {}}, serverInfo: {name: "js", version: "1"}};
  else if (msg.method === "tools/list") r = {tools: [{name: "hi", description: require("./desc.js"), inputSchema: {type: "object"}}]};
  else if (msg.method === "tools/call") r = {content: [{type: "text", text: "hi"}]};
  const out = r === null ? {jsonrpc: "2.0", id: msg.id, error: {code: -32601, message: "no such method"}} : {jsonrpc: "2.0", id: msg.id, result: r};
  process.stdout.write(JSON.stringify(out) + "\n");
});
`

// TestPackageOutsideWorktree (issue 31): a Node script in a package outside
// the worktree (node_modules/pkg/dist/index.js, named in command) starts
// confined without a read entry: its package is readable, since the person
// named it.
func TestPackageOutsideWorktree(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node:", err)
	}
	e := newEnv(t)
	tools := t.TempDir()
	pkg := filepath.Join(tools, "node_modules", "pkg")
	writeFileT(t, filepath.Join(pkg, "package.json"), `{"name":"pkg","version":"1.0.0"}`, 0o644)
	writeFileT(t, filepath.Join(pkg, "dist", "index.js"), jsServer, 0o644)
	writeFileT(t, filepath.Join(pkg, "dist", "desc.js"), `module.exports = "Say hi.";`, 0o644)
	s := e.connect(e.opts(), ServerConfig{Name: "js", Command: []string{node, filepath.Join(pkg, "dist", "index.js")}, Allow: []string{"hi"}})
	if info := serverInfo(s, "js"); info.State != ServerRunning {
		t.Fatalf("the server did not start: %s %s; notices %q", info.State, info.Error, s.Notices())
	}
	if out := call(t, s, "mcp__js__hi", `{}`); out != "hi" {
		t.Errorf("call: %s", out)
	}
}

// TestMissingPathNotice (issue 31): a server that fails because a file it
// needs lies outside its view gets a notice naming the path and the read
// entry to add (the file's package).
func TestMissingPathNotice(t *testing.T) {
	needPython(t)
	e := newEnv(t)
	data := filepath.Join(t.TempDir(), "data")
	writeFileT(t, filepath.Join(data, "pyproject.toml"), "[project]\nname = \"data\"\n", 0o644)
	file := filepath.Join(data, "conf", "settings.json")
	writeFileT(t, file, "{}", 0o644)
	writeFileT(t, filepath.Join(e.worktree, "crash.py"), "import sys\nopen(sys.argv[1]).read()\n", 0o644)
	s := e.connect(e.opts(), ServerConfig{Name: "crash", Command: []string{python, "crash.py", file}})
	if info := serverInfo(s, "crash"); info.State == ServerRunning {
		t.Fatalf("the server started")
	}
	if noticeWith(s, file+" exists but is outside the server's view", `add read = ["`+data+`"] to [mcp.crash]`) == "" {
		t.Errorf("no notice naming the read entry: %q", s.Notices())
	}
}

// TestNvmNodeUnderHome (issue 31): node on PATH lies in an nvm install in a
// HOME the server cannot see, and the server is a package installed there
// (bin/srv links to lib/node_modules/srv/index.js, "#!/usr/bin/env node"),
// as npm -g installs it. It starts confined without any read entry, and a
// secret elsewhere in that HOME stays out of its view.
func TestNvmNodeUnderHome(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node:", err)
	}
	e := newEnv(t)
	home := t.TempDir()
	version := filepath.Join(home, ".nvm", "versions", "node", "v20.0.0")
	// The node of the install: a stand-in that runs the system's, so the
	// test needs no copy of a large binary; what matters is where it lies.
	writeFileT(t, filepath.Join(version, "bin", "node"), "#!/bin/sh\nexec "+node+" \"$@\"\n", 0o755)
	pkg := filepath.Join(version, "lib", "node_modules", "srv")
	writeFileT(t, filepath.Join(pkg, "package.json"), `{"name":"srv","version":"1.0.0","bin":{"srv":"index.js"}}`, 0o644)
	writeFileT(t, filepath.Join(pkg, "index.js"), "#!/usr/bin/env node\n"+strings.Replace(jsServer, `require("./desc.js")`, `require("fs").existsSync(process.env.SECRET) ? "secret seen" : "secret hidden"`, 1), 0o755)
	if err := os.Symlink(filepath.Join("..", "lib", "node_modules", "srv", "index.js"), filepath.Join(version, "bin", "srv")); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(home, ".ssh", "id_ed25519")
	writeFileT(t, secret, "PRIVATE KEY", 0o600)
	opts := e.opts()
	opts.HostEnv = []string{"PATH=" + filepath.Join(version, "bin") + ":/usr/bin:/bin", "HOME=" + home}
	s := e.connect(opts, ServerConfig{Name: "srv", Command: []string{"srv"}, Env: map[string]string{"SECRET": secret}, Allow: []string{"hi"}})
	info := serverInfo(s, "srv")
	if info.State != ServerRunning {
		t.Fatalf("the server did not start: %s %s; notices %q", info.State, info.Error, s.Notices())
	}
	tool, _ := s.Tool("mcp__srv__hi")
	if tool.Description != "secret hidden" {
		t.Errorf("the server's view of a secret in the person's HOME: %q", tool.Description)
	}
	if w := strings.Join(info.Widens, "\n"); !strings.Contains(w, "read "+version+" (the nvm install") {
		t.Errorf("widens %q; want the nvm version granted", info.Widens)
	}
}
