package interop_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost/mcphost/mcphost"
)

// Timeouts for the servers under test. They are generous: a loaded CI
// machine with the race detector on starts node slowly, and no test waits
// for one of these to pass.
const (
	startupTimeout = 60 * time.Second
	callTimeout    = 60 * time.Second
	// closeGrace is shorter than mcphost's default: the tests close many
	// sessions, and some servers under test ignore the end of their input,
	// so each such Close waits this long before it kills.
	closeGrace = 500 * time.Millisecond
	// helperExitWait bounds how long a sandbox helper may take to exit
	// after Close returned (its namespaces' teardown, on a busy machine).
	helperExitWait = 5 * time.Second
)

// runMarker is the name of a variable set in every server's environment
// (with a value unique to the test), so that a scan of /proc finds the
// processes of one test only, while other tests run the same server.
const runMarker = "MCPHOST_INTEROP_RUN"

// repoPath returns an absolute path in the repository, from the package
// directory the test runs in.
func repoPath(t testing.TB, elem ...string) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatalf("getwd: %v", err)
	}
	return filepath.Join(append([]string{filepath.Dir(wd)}, elem...)...)
}

// nodeModules is the install directory of the npm reference servers.
func nodeModules(t testing.TB) string {
	return repoPath(t, "testdata", "interop", "node_modules")
}

// skipOrFail skips a test whose real server cannot run here, saying why;
// in CI (CI set, as `make test` there has it) a missing server is a failure,
// since go test shows skip reasons only with -v and CI must not pass on
// servers it never ran.
func skipOrFail(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("%s (CI is set, so this is a failure, not a skip)", why)
	}
	t.Skip(why)
}

// nodePath returns node's real path: the sandbox grants read and execute on
// the file that runs, so a symlink (/usr/bin/node -> /opt/...) would name
// the wrong file. It skips the test, saying why, when there is no node.
func nodePath(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("node")
	if err != nil {
		skipOrFail(t, fmt.Sprintf("SKIP: node is not installed (%v): the npm reference-server tests need Node.js 20 or newer and `make deps`", err))
	}
	if p, err = filepath.Abs(p); err == nil {
		p, err = filepath.EvalSymlinks(p)
	}
	if err != nil {
		t.Fatalf("resolving node's path: %v", err)
	}
	return p
}

// distPath returns the absolute, symlink-free path of an npm reference
// server's entry point, or skips the test, saying why, when `make deps` has
// not installed it.
func distPath(t testing.TB, pkg string) string {
	t.Helper()
	p := filepath.Join(nodeModules(t), "@modelcontextprotocol", pkg, "dist", "index.js")
	if _, err := os.Stat(p); err != nil {
		skipOrFail(t, fmt.Sprintf("SKIP: %s is not installed (%v): run `make deps` (npm ci in testdata/interop) first", pkg, err))
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatalf("resolving %s: %v", p, err)
	}
	return real
}

// nodeServer is the config of an npm reference server run by node, confined
// (the default) with what it needs to read beyond the worktree and the
// system paths.
func nodeServer(t testing.TB, name, pkg string, args ...string) mcphost.ServerConfig {
	t.Helper()
	node, dist := nodePath(t), distPath(t, pkg)
	nm, err := filepath.EvalSymlinks(nodeModules(t))
	if err != nil {
		t.Fatalf("resolving node_modules: %v", err)
	}
	read := []string{
		// The server's own code and every package it imports: node
		// resolves the imports by walking up to this node_modules.
		nm,
	}
	if !underSystemPath(node) {
		// node installed outside the system paths (nvm, a tarball
		// in the home directory): its installation prefix, the binary
		// and the lib/ beside it, which the sandbox does not grant by
		// default.
		read = append(read, filepath.Dir(filepath.Dir(node)))
	}
	return mcphost.ServerConfig{
		Name:           name,
		Command:        append([]string{node, dist}, args...),
		Read:           read,
		StartupTimeout: startupTimeout,
		CallTimeout:    callTimeout,
	}
}

// underSystemPath reports whether p lies in a directory tree the sandbox
// lets every server read and execute (DESIGN.md: "read access to system
// paths"; the list is the sandbox's).
func underSystemPath(p string) bool {
	for _, dir := range []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt"} {
		if p == dir || strings.HasPrefix(p, dir+"/") {
			return true
		}
	}
	return false
}

// TestMain gives the Go servers a directory to be built in, once per run,
// and removes it afterwards.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mcphost-interop-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	buildDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// buildDir holds the Go servers built for this run; TestMain sets it.
var buildDir string

// build is the outcome of building one Go server.
type build struct {
	bin  string // the binary, when it was built
	skip string // why it cannot be built here, through no fault of the tests
	err  error  // why the build failed
}

// The Go servers, each built at most once per run, when a test first needs
// it (parallel tests share the one build).
var (
	notesBuild = sync.OnceValue(func() build { return goBuild("", "./examples/notes", "notes", false) })
	mcpgoBuild = sync.OnceValue(func() build {
		return goBuild(filepath.Join("testdata", "interop", "mcpgo"), ".", "mcpgo", true)
	})
)

// goBuild builds the Go main package pkg of the module in dir (relative to
// the repository) into buildDir/name. With needsDownload (a module other
// than mcphost's) it first fetches the module's dependencies: when that
// fails, the module proxy refused or cannot be reached, which skips the tests
// that need the server rather than fail them; a failed build fails them.
func goBuild(dir, pkg, name string, needsDownload bool) build {
	wd, err := os.Getwd()
	if err != nil {
		return build{err: err}
	}
	dir = filepath.Join(filepath.Dir(wd), dir)
	goBin, err := exec.LookPath("go")
	if err != nil {
		return build{err: fmt.Errorf("no go command to build %s with: %w", name, err)}
	}
	if needsDownload {
		if out, err := runIn(dir, goBin, "mod", "download"); err != nil {
			return build{skip: fmt.Sprintf("SKIP: cannot fetch the modules of %s (the module proxy refused or is unreachable): %v\n%s", dir, err, out)}
		}
	}
	bin := filepath.Join(buildDir, name)
	if out, err := runIn(dir, goBin, "build", "-o", bin, pkg); err != nil {
		return build{err: fmt.Errorf("go build %s in %s: %w\n%s", pkg, dir, err, out)}
	}
	return build{bin: bin}
}

// built returns the binary of a build, or skips or fails the test.
func built(t testing.TB, b build) string {
	t.Helper()
	switch {
	case b.skip != "":
		skipOrFail(t, b.skip)
	case b.err != nil:
		t.Fatal(b.err)
	}
	return b.bin
}

func runIn(dir, name string, args ...string) ([]byte, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	return cmd.CombinedOutput()
}

// mark adds the test's process marker to a config's environment and
// returns its value.
func mark(t testing.TB, cfg *mcphost.ServerConfig) string {
	id := fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano())
	if cfg.Env == nil {
		cfg.Env = map[string]string{}
	}
	cfg.Env[runMarker] = id
	return id
}

// logRecorder is a slog.Handler that keeps what mcphost logs, so a test can
// see the notifications mcphost received (it logs servers' log messages at
// debug level) and, on failure, what a server wrote to stderr. Groups are
// flattened: the tests look at top-level keys only.
type logRecorder struct {
	store *logStore
	attrs []slog.Attr // from WithAttrs
}

type logStore struct {
	mu      sync.Mutex
	records []logRecord
}

type logRecord struct {
	msg   string
	attrs map[string]string
}

func newLogRecorder() *logRecorder { return &logRecorder{store: &logStore{}} }

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *logRecorder) WithGroup(string) slog.Handler            { return r }

func (r *logRecorder) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &logRecorder{store: r.store, attrs: append(slices.Clip(r.attrs), attrs...)}
}

func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	lr := logRecord{msg: rec.Message, attrs: map[string]string{}}
	for _, a := range r.attrs {
		lr.attrs[a.Key] = a.Value.String()
	}
	rec.Attrs(func(a slog.Attr) bool {
		lr.attrs[a.Key] = a.Value.String()
		return true
	})
	r.store.mu.Lock()
	r.store.records = append(r.store.records, lr)
	r.store.mu.Unlock()
	return nil
}

// count returns how many records have message msg and the given attributes.
func (r *logRecorder) count(msg string, attrs ...string) int {
	r.store.mu.Lock()
	defer r.store.mu.Unlock()
	n := 0
	for _, rec := range r.store.records {
		if rec.msg != msg {
			continue
		}
		ok := true
		for i := 0; i+1 < len(attrs); i += 2 {
			ok = ok && rec.attrs[attrs[i]] == attrs[i+1]
		}
		if ok {
			n++
		}
	}
	return n
}

// stderr returns what a server wrote to stderr, as mcphost logged it.
func (r *logRecorder) stderr(server string) string {
	r.store.mu.Lock()
	defer r.store.mu.Unlock()
	var b strings.Builder
	for _, rec := range r.store.records {
		if rec.msg == "server stderr" && rec.attrs["server"] == server {
			b.WriteString(rec.attrs["line"] + "\n")
		}
	}
	return b.String()
}

// waitFor polls cond until it holds or a generous deadline passes.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 20s for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// harness is one test's worktree, state directory and log.
type harness struct {
	t        testing.TB
	worktree string
	state    string
	log      *logRecorder
}

func newHarness(t testing.TB) *harness {
	t.Helper()
	wt, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, worktree: wt, state: t.TempDir(), log: newLogRecorder()}
}

// opts returns the session options of the harness.
func (h *harness) opts() mcphost.Options {
	return mcphost.Options{
		Worktree:   h.worktree,
		StateDir:   h.state,
		CloseGrace: closeGrace,
		Logger:     slog.New(h.log),
	}
}

// connect starts servers through mcphost and fails the test, with their
// notices, unless every one of them runs. The session is closed when the
// test ends.
func (h *harness) connect(opts mcphost.Options, servers ...mcphost.ServerConfig) *mcphost.Session {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*startupTimeout)
	defer cancel()
	s, err := mcphost.Connect(ctx, servers, opts)
	if err != nil {
		h.t.Fatalf("Connect: %v", err)
	}
	h.t.Cleanup(func() { s.Close() })
	for _, info := range s.Servers() {
		if info.State != mcphost.ServerRunning {
			h.t.Fatalf("server %s is %s (%s), not running; notices:\n%s\nstderr:\n%s",
				info.Name, info.State, info.Error, strings.Join(s.Notices(), "\n"), h.log.stderr(info.Name))
		}
	}
	return s
}

// file reads a file of the worktree; it fails t if it cannot.
func (h *harness) file(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(h.worktree, name))
	if err != nil {
		t.Fatalf("reading %s of the worktree: %v", name, err)
	}
	return string(b)
}

// write creates a file of the worktree, with its directories.
func (h *harness) write(name, text string) {
	h.t.Helper()
	p := filepath.Join(h.worktree, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		h.t.Fatal(err)
	}
}

// text joins the text content of a result.
func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// call calls a tool through the session and returns its text; a failed call
// or a result with isError fails the test.
func call(t testing.TB, s *mcphost.Session, tool, args string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*callTimeout)
	defer cancel()
	res, err := s.Call(ctx, tool, json.RawMessage(args))
	if err != nil {
		t.Fatalf("Call(%s, %s): %v", tool, args, err)
	}
	if res.IsError {
		t.Fatalf("Call(%s, %s): the tool reported an error: %s", tool, args, text(res))
	}
	return text(res)
}

// callErr calls a tool that should report an error (isError) and returns
// the error's text.
func callErr(t testing.TB, s *mcphost.Session, tool, args string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*callTimeout)
	defer cancel()
	res, err := s.Call(ctx, tool, json.RawMessage(args))
	if err != nil {
		t.Fatalf("Call(%s, %s): %v (want a result with isError)", tool, args, err)
	}
	if !res.IsError {
		t.Fatalf("Call(%s, %s) = %q without isError; want the tool to refuse", tool, args, text(res))
	}
	return text(res)
}

// bareTools lists a server's tools with a plain go-sdk client (default
// options), running the config's command unconfined in dir with the host's
// environment plus the config's env: what any MCP client would see.
func bareTools(t testing.TB, cfg mcphost.ServerConfig, dir string) []*mcp.Tool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startupTimeout)
	defer cancel()
	cmd := exec.Command(cfg.Command[0], cfg.Command[1:]...)
	cmd.Dir = dir
	cmd.Env = os.Environ()
	for k, v := range cfg.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "interop-bare-client", Version: "1"}, nil)
	// A short TerminateDuration: the everything server keeps running after
	// stdin closes while its roots/list request to the client is pending.
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: time.Second}, nil)
	if err != nil {
		t.Fatalf("bare client: connect to %s: %v", cfg.Name, err)
	}
	var tools []*mcp.Tool
	var listErr error
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			listErr = err
			break
		}
		tools = append(tools, tool)
	}
	// Close waits for the process (stopping it after TerminateDuration),
	// so stderr is complete and no longer written after it. How the
	// process ended does not matter here.
	_ = cs.Close()
	if listErr != nil {
		t.Fatalf("bare client: tools/list of %s: %v\nstderr:\n%s", cfg.Name, listErr, stderr.String())
	}
	return tools
}

// toolNames returns the tool names (as the server sent them) of one server
// of a session, denied tools included, sorted.
func toolNames(s *mcphost.Session, server string) []string {
	var names []string
	for _, tool := range s.AllTools() {
		if tool.Server == server {
			names = append(names, tool.Tool)
		}
	}
	slices.Sort(names)
	return names
}

// proc is one live process, identified by its pid and its start time (so a
// pid reused by another process is not taken for it).
type proc struct {
	pid     int
	ppid    int
	start   string
	cmdline string
}

func (p proc) String() string { return fmt.Sprintf("%d (%s)", p.pid, p.cmdline) }

// readProc reads a process's status from /proc. ok is false when it is gone
// or has exited and waits to be reaped (a zombie is not a leftover: its
// parent reaps it soon).
func readProc(pid int) (p proc, ok bool) {
	dir := filepath.Join("/proc", strconv.Itoa(pid))
	stat, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return proc{}, false
	}
	// The fields after the command name, which is in parentheses and may
	// itself hold spaces and parentheses: state, ppid, ... and, 20th,
	// the start time.
	i := bytes.LastIndexByte(stat, ')')
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return proc{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	cmdline, _ := os.ReadFile(filepath.Join(dir, "cmdline"))
	return proc{pid: pid, ppid: ppid, start: f[19],
		cmdline: strings.ReplaceAll(string(bytes.TrimRight(cmdline, "\x00")), "\x00", " ")}, true
}

// alive reports whether p is still running (not reaped, not a zombie, not
// replaced by another process with its pid).
func (p proc) alive() bool {
	now, ok := readProc(p.pid)
	return ok && now.start == p.start
}

// serverProcesses returns the live processes whose command line contains
// exe and whose environment carries the marker value: the processes of one
// server of one test. A process whose environment cannot be read is
// included, so that an unreadable one can fail a test but never pass it.
func serverProcesses(t testing.TB, exe, marker string) []proc {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatalf("scanning /proc: %v", err)
	}
	var out []proc
	for _, ent := range ents {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		p, ok := readProc(pid)
		if !ok || !strings.Contains(p.cmdline, exe) {
			continue
		}
		environ, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "environ"))
		switch {
		case errors.Is(err, os.ErrNotExist):
			continue // gone meanwhile
		case err == nil && !slices.ContainsFunc(bytes.Split(environ, []byte{0}),
			func(kv []byte) bool { return string(kv) == runMarker+"="+marker }):
			continue // the same server, of another test
		}
		out = append(out, p)
	}
	return out
}

// withAncestors adds to ps their ancestors up to (not including) this test
// process: the sandbox's helper processes between it and the server.
func withAncestors(ps []proc) []proc {
	self := os.Getpid()
	seen := map[int]bool{}
	var out []proc
	for _, p := range ps {
		for p.pid > 1 && p.pid != self && !seen[p.pid] {
			seen[p.pid] = true
			out = append(out, p)
			parent, ok := readProc(p.ppid)
			if !ok {
				break
			}
			p = parent
		}
	}
	return out
}
