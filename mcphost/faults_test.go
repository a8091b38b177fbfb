package mcphost

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost/mcphost/sandbox"
)

func TestStartFailuresCarryStderr(t *testing.T) {
	e := newEnv(t)
	notExec := filepath.Join(e.worktree, "not-exec")
	os.WriteFile(notExec, []byte("#!/bin/sh\necho hi\n"), 0o644)
	s := e.connect(e.opts(),
		fixture("exits", "-exit", "3"),
		ServerConfig{Name: "missing", Command: []string{"/nonexistent/server"}},
		ServerConfig{Name: "notexec", Command: []string{notExec}},
		fixture("good"),
	)
	if n := noticeWith(s, "exits", "exit status 3", "cannot open notes.db"); n == "" {
		t.Errorf("no notice with the exit status and stderr of 'exits': %q", s.Notices())
	}
	if n := noticeWith(s, "missing", "/nonexistent/server"); n == "" {
		t.Errorf("no notice for the missing command: %q", s.Notices())
	}
	if n := noticeWith(s, "notexec"); n == "" {
		t.Errorf("no notice for the non-executable command: %q", s.Notices())
	}
	for _, n := range s.Notices() {
		if strings.Contains(n, "exits") && strings.Contains(n, "startup_timeout") {
			t.Errorf("an exit reported as a timeout: %q", n)
		}
	}
	if _, ok := s.Tool("mcp__good__echo"); !ok {
		t.Error("the good server is missing")
	}
}

// TestStderrFlood: a server writing 200 MiB to stderr before it serves
// neither blocks nor grows the host's memory.
func TestStderrFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 200 MiB through a pipe")
	}
	e := newEnv(t)
	var logged atomic.Int64
	opts := e.opts()
	opts.Logger = slog.New(countHandler{&logged})
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	peak := watchHeap(t)
	s := e.connect(opts, fixture("flood", "-flood-stderr", "200"), fixture("quiet"))
	if got := call(t, s, "mcp__flood__echo", `{"text":"still here"}`); got != `{"text":"still here"}` {
		t.Errorf("echo after the flood = %q", got)
	}
	srv := s.servers["flood"]
	if w := srv.stderr.Written(); w < 200<<20 {
		t.Errorf("only %d bytes of stderr drained", w)
	}
	if got := logged.Load(); got < 200*1024 {
		t.Errorf("%d stderr lines logged at debug; want about %d", got, 200*1024)
	}
	p := peak()
	t.Logf("heap before %d MiB, peak during a 200 MiB stderr flood %d MiB", before.HeapAlloc>>20, p>>20)
	if p > before.HeapAlloc+64<<20 {
		t.Errorf("heap grew to %d MiB during the flood", p>>20)
	}
}

// countHandler counts debug stderr lines.
type countHandler struct{ n *atomic.Int64 }

func (h countHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h countHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "server stderr" {
		h.n.Add(1)
	}
	return nil
}
func (h countHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h countHandler) WithGroup(string) slog.Handler      { return h }

// watchHeap samples the heap until the returned function is called, which
// returns the peak.
func watchHeap(t *testing.T) func() uint64 {
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > peak.Load() {
				peak.Store(m.HeapAlloc)
			}
			select {
			case <-done:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	return func() uint64 {
		close(done)
		wg.Wait()
		return peak.Load()
	}
}

func TestGarbageStdout(t *testing.T) {
	e := newEnv(t)
	start := time.Now()
	s := e.connect(e.opts(), fixture("noisy", "-garbage"), fixture("good"))
	if time.Since(start) > 15*time.Second {
		t.Errorf("Connect took %v", time.Since(start))
	}
	if n := noticeWith(s, "noisy", "not JSON-RPC", "«Server starting... hello from a print statement»"); n == "" {
		t.Errorf("no notice showing the line the server printed: %q", s.Notices())
	}
	for _, name := range []string{"mcp__noisy__echo", "mcp__good__echo"} {
		if _, ok := s.Tool(name); !ok {
			t.Errorf("%s is missing: a stray line on stdout is skipped, not fatal", name)
		}
	}
}

// TestStdoutNoise: lines that are not JSON-RPC (text with control
// characters, JSON log records, blank lines) before and between messages
// are skipped; the first few are shown, made visible, and the rest counted
// in one notice; a server that floods stdout with them, or writes one
// longer than the bound, is stopped, and the notice says mcphost stopped it
// and why. The other servers go on.
func TestStdoutNoise(t *testing.T) {
	e := newEnv(t)
	s := e.connect(e.opts(),
		fixture("chatty", "-stdout-noise", "30"),
		fixture("flood", "-stdout-noise", "3000"),
		fixture("longline", "-noise-line", fmt.Sprint(2<<20)),
		fixture("good"))
	if _, ok := s.Tool("mcp__chatty__echo"); !ok {
		t.Fatalf("the chatty server did not start: %q", s.Notices())
	}
	res, err := s.Call(context.Background(), "mcp__chatty__noise", json.RawMessage(`{}`))
	if err != nil || resultText(t, res) != "noisy" {
		t.Fatalf("a call answered after a stray line: %v", err)
	}
	var shown, more int
	for _, n := range s.Notices() {
		if !strings.HasPrefix(n, "server chatty ") {
			continue
		}
		switch {
		case strings.Contains(n, "mcphost skipped it: «Warning: line 0 of noise ?[31mred?[0m»"):
			shown++
		case strings.Contains(n, "mcphost skipped it: "):
			shown++
			if strings.ContainsRune(n, 0x1b) {
				t.Errorf("a control character reached a notice: %q", n)
			}
		case strings.Contains(n, "writes more lines"):
			more++
		}
	}
	if shown != maxStrayNotices || more != 1 {
		t.Errorf("%d notices of single lines and %d of more, want %d and 1: %q", shown, more, maxStrayNotices, s.Notices())
	}
	for _, tt := range []struct{ server, want string }{
		{"flood", fmt.Sprintf("more than the %d lines", maxStrayLines)},
		{"longline", "(2097152 bytes)"},
	} {
		n := noticeWith(s, tt.server, "mcphost stopped the server", tt.want)
		if n == "" {
			t.Errorf("%s: no notice that mcphost stopped it and why (%q): %q", tt.server, tt.want, s.Notices())
		}
		if strings.Contains(n, "signal: killed") {
			t.Errorf("%s: the notice blames the server: %s", tt.server, n)
		}
	}
	if _, ok := s.Tool("mcp__good__echo"); !ok {
		t.Error("the good server is missing")
	}
}

func rawFixture(t *testing.T, e *env, name, defs string, flags ...string) ServerConfig {
	t.Helper()
	path := filepath.Join(e.worktree, name+".json")
	if err := os.WriteFile(path, []byte(defs), 0o644); err != nil {
		t.Fatal(err)
	}
	sc := fixture(name, append([]string{"-raw", path}, flags...)...)
	sc.StartupTimeout = 10 * time.Second
	return sc
}

// TestServerErrorBounded: a JSON-RPC error a server answers a call with
// reaches the caller, and through the tool's error text the model,
// printable and cut to maxServerErrorText characters, however long it is
// and whatever characters it holds; errors.As still finds the server's
// error with its code.
func TestServerErrorBounded(t *testing.T) {
	e := newEnv(t)
	sc := rawFixture(t, e, "liar", `[{"name":"rpc_error","description":"Fails.","inputSchema":{"type":"object"}}]`)
	sc.Allow = []string{"rpc_error"}
	s := e.connect(e.opts(), sc)
	_, err := s.Call(context.Background(), "mcp__liar__rpc_error", json.RawMessage(`{}`))
	if err == nil {
		t.Fatal("the call succeeded")
	}
	msg := err.Error()
	if n := len([]rune(msg)); n > maxServerErrorText+200 {
		t.Errorf("the error is %d characters, want at most about %d", n, maxServerErrorText)
	}
	if strings.ContainsAny(msg, "\x1b\u202e\U000E0041") || strings.Contains(msg, "END") {
		t.Errorf("the error keeps the server's control characters or its end: %q", printable(msg, 400))
	}
	if !strings.Contains(msg, "IGNORE PREVIOUS") || !strings.Contains(msg, "liar") {
		t.Errorf("the error lost its start or the server's name: %q", msg)
	}
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Code != -32000 {
		t.Errorf("errors.As finds no JSON-RPC error with code -32000 in %v", err)
	}
}

func TestBrokenPagination(t *testing.T) {
	e := newEnv(t)
	s := e.connect(e.opts(),
		rawFixture(t, e, "loop", `[]`, "-raw-mode", "repeat-cursor"),
		rawFixture(t, e, "endless", `[]`, "-raw-mode", "endless-pages"),
		rawFixture(t, e, "badresult", `[]`, "-raw-mode", "bad-result"),
		fixture("good"),
	)
	if noticeWith(s, "loop", "repeated cursor") == "" {
		t.Errorf("no notice for the looping cursor: %q", s.Notices())
	}
	if noticeWith(s, "endless", "pages") == "" {
		t.Errorf("no notice for endless pages: %q", s.Notices())
	}
	if noticeWith(s, "badresult", "tools/list") == "" {
		t.Errorf("no notice for a bad tools/list result: %q", s.Notices())
	}
	if _, ok := s.Tool("mcp__good__echo"); !ok {
		t.Error("the good server is missing")
	}
}

func TestManyToolsManyPages(t *testing.T) {
	e := newEnv(t)
	s := e.connect(e.opts(), fixture("many", "-tools", "3000", "-page", "7"))
	// 3000 generated tools and the fixture's 17, 7 a page.
	if got := len(s.AllTools()); got != 3017 {
		t.Errorf("%d tools; want 3017 over 431 pages", got)
	}
	if _, ok := s.Tool("mcp__many__gen_02999"); !ok {
		t.Error("the last page is missing")
	}
}

func TestSkippedToolNames(t *testing.T) {
	e := newEnv(t)
	defs := `[
	 {"name":"ok","inputSchema":{"type":"object"}},
	 {"name":"has space","inputSchema":{"type":"object"}},
	 {"name":"dup","inputSchema":{"type":"object"}},
	 {"name":"dup","description":"the other one","inputSchema":{"type":"object"}},
	 {"name":"` + strings.Repeat("x", 70) + `","inputSchema":{"type":"object"}},
	 {"description":"no name","inputSchema":{"type":"object"}},
	 {"name":"noschema"},
	 {"name":"twice","description":"a","description":"b","inputSchema":{"type":"object"}}
	]`
	s := e.connect(e.opts(), rawFixture(t, e, "raw", defs))
	var names []string
	for _, tool := range s.AllTools() {
		names = append(names, tool.Tool)
	}
	if strings.Join(names, ",") != "ok" {
		t.Errorf("tools %v; want only ok", names)
	}
	for _, want := range []string{"has space", `"dup" 2 times`, "more than 64", "no name", "noschema", "twice"} {
		if noticeWith(s, want) == "" {
			t.Errorf("no notice mentioning %q: %q", want, s.Notices())
		}
	}
}

func TestCrashDuringCall(t *testing.T) {
	e := newEnv(t)
	sc := fixture("crashy")
	sc.CallTimeout = time.Minute
	s := e.connect(e.opts(), sc, fixture("other"))
	start := time.Now()
	_, err := s.Call(context.Background(), "mcp__crashy__crash", nil)
	if !errors.Is(err, ErrServerGone) {
		t.Fatalf("crash: %v; want ErrServerGone", err)
	}
	if time.Since(start) > 20*time.Second {
		t.Errorf("the crash took %v to report (call_timeout is 1m)", time.Since(start))
	}
	if !strings.Contains(err.Error(), "crashy") || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("error %q does not name the server and its exit status", err)
	}
	start = time.Now()
	if _, err := s.Call(context.Background(), "mcp__crashy__echo", json.RawMessage(`{"text":"x"}`)); !errors.Is(err, ErrServerGone) {
		t.Errorf("call after the crash: %v; want ErrServerGone", err)
	}
	if time.Since(start) > time.Second {
		t.Errorf("a call to a dead server took %v", time.Since(start))
	}
	if call(t, s, "mcp__other__echo", `{"text":"x"}`) != `{"text":"x"}` {
		t.Error("the other server was hurt")
	}
	if srv := s.Servers()[0]; srv.Name != "crashy" || srv.State != ServerExited {
		t.Errorf("servers: %+v", s.Servers())
	}
	// The state is published a moment before the notice.
	waitNotice(t, s, 10*time.Second, "crashy", "exited", "crashing on purpose")
	var changed atomic.Int32
	s.opts.OnToolsChanged = func(string) { changed.Add(1) }
	if err := s.Restart(context.Background(), "crashy"); err != nil {
		t.Fatal(err)
	}
	if call(t, s, "mcp__crashy__echo", `{"text":"back"}`) != `{"text":"back"}` {
		t.Error("the restarted server does not answer")
	}
	if changed.Load() != 1 {
		t.Errorf("OnToolsChanged called %d times after Restart", changed.Load())
	}
}

func TestCallTimeoutAndCancel(t *testing.T) {
	e := newEnv(t)
	sc := fixture("slow", "-record", "calls.log")
	sc.CallTimeout = 500 * time.Millisecond
	s := e.connect(e.opts(), sc)
	_, err := s.Call(context.Background(), "mcp__slow__sleep", json.RawMessage(`{"ms":60000}`))
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("sleep past call_timeout: %v; want ErrTimeout", err)
	}
	// Cancel once the server has the second call (a cancel before the
	// request is written sends no notifications/cancelled).
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		deadline := time.Now().Add(10 * time.Second)
		for strings.Count(e.file("calls.log"), "sleep") < 2 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	_, err = s.Call(ctx, "mcp__slow__sleep", json.RawMessage(`{"ms":60000}`))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v; want context.Canceled", err)
	}
	// The server saw notifications/cancelled for both.
	deadline := time.Now().Add(5 * time.Second)
	for strings.Count(e.file("calls.log"), "cancelled") < 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := strings.Count(e.file("calls.log"), "cancelled"); got != 2 {
		t.Errorf("server saw %d cancellations; want 2:\n%s", got, e.file("calls.log"))
	}
	if call(t, s, "mcp__slow__sleep", `{"ms":1}`) != "slept" {
		t.Error("server unusable after cancellations")
	}
}

func TestHugeResultIsCut(t *testing.T) {
	e := newEnv(t)
	sc := fixture("big")
	sc.MaxOutput = 1000
	s := e.connect(e.opts(), sc)
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	peak := watchHeap(t)
	res, err := s.Call(context.Background(), "mcp__big__big", json.RawMessage(`{"n":5000000}`))
	if err != nil {
		t.Fatal(err)
	}
	p := peak()
	t.Logf("heap before %d MiB, peak while reading a 5 MB result %d MiB", before.HeapAlloc>>20, p>>20)
	// The message is read whole (bounded by the line limit, 16 MiB), then
	// cut; it must not be held more than a few times over.
	if p > before.HeapAlloc+64<<20 {
		t.Errorf("heap grew to %d MiB for a 5 MB result", p>>20)
	}
	// A result past the line limit drops the server (bounded), with a
	// notice, instead of growing the heap without bound.

	if len(res.Content) != 2 {
		t.Fatalf("content: %d items", len(res.Content))
	}
	if got := len(res.Content[0].(*mcp.TextContent).Text); got != 1000 {
		t.Errorf("cut text is %d bytes; want 1000", got)
	}
	if msg := res.Content[1].(*mcp.TextContent).Text; !strings.Contains(msg, "cut") || !strings.Contains(msg, "max_output") {
		t.Errorf("no notice of the cut: %q", msg)
	}
	small := call(t, s, "mcp__big__big", `{"n":10}`)
	if small != "yyyyyyyyyy" {
		t.Errorf("small result %q", small)
	}
}

func TestCutKeepsRunes(t *testing.T) {
	res := cut(&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "aé€😀"}}}, 4, "x")
	if got := res.Content[0].(*mcp.TextContent).Text; got != "aé" {
		t.Errorf("cut to 4 bytes = %q; want %q", got, "aé")
	}
	res = cut(&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}, StructuredContent: map[string]any{"k": strings.Repeat("v", 100)}}, 50, "x")
	if res.StructuredContent != nil || len(res.Content) != 2 {
		t.Errorf("oversized structured content kept: %+v", res)
	}
}

func TestServerRequests(t *testing.T) {
	e := newEnv(t)
	s := e.connect(e.opts(), fixture("asks", "-era", "legacy"))
	roots := call(t, s, "mcp__asks__roots", `{}`)
	var got []struct{ URI string }
	if err := json.Unmarshal([]byte(roots), &got); err != nil || len(got) != 1 || got[0].URI != "file://"+s.Worktree() {
		t.Errorf("roots = %s; want the worktree alone", roots)
	}
	for _, tool := range []string{"sample", "elicit"} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := s.Call(ctx, "mcp__asks__"+tool, nil)
		cancel()
		if err != nil {
			t.Errorf("%s: %v", tool, err)
			continue
		}
		if txt := resultText(t, res); !strings.HasPrefix(txt, "error:") {
			t.Errorf("%s was not refused: %q", tool, txt)
		}
	}
}

func TestCorruptStateFailsClosed(t *testing.T) {
	e := newEnv(t)
	path := filepath.Join(e.state, "mcp-reviewed.json")
	corrupt := []byte(`{"version":1,"tools":{"notes/echo":`)
	os.WriteFile(path, corrupt, 0o600)
	s := e.connect(e.opts(), fixture("notes"))
	tool, _ := s.Tool("mcp__notes__echo")
	if tool.Decision != Approval {
		t.Errorf("allowed tool with unreadable pins: %s; want approval", tool.Decision)
	}
	if s.StateError() == nil || noticeWith(s, "state", "unreadable") == "" {
		t.Errorf("no notice of the corrupt state: %q", s.Notices())
	}
	if _, err := s.Call(context.Background(), "mcp__notes__echo", json.RawMessage(`{"text":"x"}`)); !errors.Is(err, ErrNeedsApproval) {
		t.Errorf("call with unreadable pins: %v", err)
	}
	if err := approve(s, "mcp__notes__echo"); err == nil {
		t.Error("Approve over a corrupt state file succeeded")
	}
	s.Close()
	if b, _ := os.ReadFile(path); !bytes.Equal(b, corrupt) {
		t.Errorf("the corrupt state file was rewritten: %q", b)
	}

	// With new_tools = "hold", a tool whose review cannot be read is held
	// back from the model as well.
	held := fixture("notes")
	held.HoldNewTools = true
	s = e.connect(e.opts(), held)
	if tool, _ := s.Tool("mcp__notes__echo"); !tool.Withheld || tool.Offered() {
		t.Errorf("with hold and unreadable pins the tool is offered: withheld=%v", tool.Withheld)
	}
}

// TestManyConcurrentCalls: hundreds of goroutines through one session get
// their own answers, and nothing is left running after Close.
func TestManyConcurrentCalls(t *testing.T) {
	before := runtime.NumGoroutine()
	e := newEnv(t)
	s := e.connect(e.opts(), fixture("a"), fixture("b"))
	const n = 300
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			server := []string{"a", "b"}[i%2]
			want := fmt.Sprintf(`{"text":"call-%d"}`, i)
			res, err := s.Call(context.Background(), "mcp__"+server+"__echo", json.RawMessage(want))
			if err != nil {
				errs <- err
				return
			}
			if got := res.Content[0].(*mcp.TextContent).Text; got != want {
				errs <- fmt.Errorf("call %d got %s", i, got)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	s.Close()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before+2 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if after := runtime.NumGoroutine(); after > before+2 {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines before, %d after Close:\n%s", before, after, buf[:runtime.Stack(buf, true)])
	}
	waitNoProcesses(t, fixtureBin)
}

// TestCloseDoesNotWaitForCalls: Close ends a server within about the grace
// period even while a call to it is in flight, and the call fails.
func TestCloseDoesNotWaitForCalls(t *testing.T) {
	e := newEnv(t)
	sc := fixture("busy", "-record", "calls.log")
	sc.CallTimeout = time.Minute
	s := e.connect(e.opts(), sc)
	errc := make(chan error, 1)
	go func() {
		_, err := s.Call(context.Background(), "mcp__busy__sleep", json.RawMessage(`{"ms":60000}`))
		errc <- err
	}()
	// Close once the server has the call: it is then in flight.
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(e.file("calls.log"), "sleep") {
		if time.Now().After(deadline) {
			t.Fatal("the call never reached the server")
		}
		time.Sleep(10 * time.Millisecond)
	}
	start := time.Now()
	s.Close()
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("Close took %v with a call in flight (grace 500ms, call_timeout 1m)", took)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, ErrServerGone) {
			t.Errorf("call in flight at Close: %v; want ErrServerGone", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call in flight did not return after Close")
	}
	waitNoProcesses(t, fixtureBin)
}

func TestTaskOnlyToolSkipped(t *testing.T) {
	e := newEnv(t)
	defs := `[{"name":"ok","inputSchema":{"type":"object"}},
	 {"name":"research","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}},
	 {"name":"either","inputSchema":{"type":"object"},"execution":{"taskSupport":"optional"}}]`
	s := e.connect(e.opts(), rawFixture(t, e, "raw", defs))
	if _, ok := s.Tool("mcp__raw__research"); ok {
		t.Error("a task-only tool is offered")
	}
	if _, ok := s.Tool("mcp__raw__either"); !ok {
		t.Error("a tool with optional task support is missing")
	}
	if noticeWith(s, "research", "task") == "" {
		t.Errorf("no notice for the task-only tool: %q", s.Notices())
	}
}

// TestNullsNeverReachServer: the strict form makes optional fields nullable;
// a null the model sends for one is removed, so the server sees exactly
// what it would have seen had the field been left out.
func TestNullsNeverReachServer(t *testing.T) {
	e := newEnv(t)
	s := e.connect(e.opts(), fixture("notes", "-record", "calls.log"))
	tool, _ := s.Tool("mcp__notes__echo")
	if !tool.Strict {
		t.Fatalf("echo is not strict: %s", tool.StrictProblem)
	}
	var strict struct {
		Required   []string                   `json:"required"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	json.Unmarshal(tool.Schema, &strict)
	if len(strict.Required) != 3 || !strings.Contains(string(strict.Properties["note"]), "null") {
		t.Errorf("strict form does not require every field with optional ones nullable: %s", tool.Schema)
	}
	got := call(t, s, "mcp__notes__echo", `{"text":"hi","note":null,"count":null}`)
	if got != `{"text":"hi"}` {
		t.Errorf("the server received %s; want {\"text\":\"hi\"}", got)
	}
	if log := e.file("calls.log"); strings.Contains(log, "null") {
		t.Errorf("a null reached the server: %q", log)
	}
	// A null for a required field is the model's mistake: refused.
	_, err := s.Call(context.Background(), "mcp__notes__echo", json.RawMessage(`{"text":null,"note":null,"count":null}`))
	if !errors.Is(err, ErrBadArguments) {
		t.Errorf("null for a required field: %v; want ErrBadArguments", err)
	}
}

func TestBadArgumentsForTheModel(t *testing.T) {
	e := newEnv(t)
	s := e.connect(e.opts(), fixture("notes", "-record", "calls.log"))
	for _, tc := range []struct{ args, want string }{
		{`{"txt":"hi"}`, `did you mean "text"`},
		{`{"text":5}`, "/text"},
		{`{"text":"x","count":-1}`, "/count"},
		{`[1,2]`, "object"},
	} {
		_, err := s.Call(context.Background(), "mcp__notes__echo", json.RawMessage(tc.args))
		if !errors.Is(err, ErrBadArguments) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("echo %s: %v; want ErrBadArguments mentioning %q", tc.args, err, tc.want)
		}
	}
	if strings.Contains(e.file("calls.log"), "echo") {
		t.Error("bad arguments reached the server")
	}
	// Missing or empty arguments are {}.
	for _, args := range []string{``, `{}`, `null`} {
		if got := call(t, s, "mcp__notes__list_notes", args); got != `{}` {
			t.Errorf("list_notes with %q: server got %s", args, got)
		}
	}
}

func TestUncheckableSchemaRefused(t *testing.T) {
	e := newEnv(t)
	// An anchor reference, which mcphost cannot resolve (a remote one is
	// checked as anything since issue 29: TestRemoteRefCall).
	defs := `[{"name":"remote","inputSchema":{"type":"object","properties":{"x":{"$ref":"#x"}}}}]`
	sc := rawFixture(t, e, "raw", defs, "-record", "calls.log")
	sc.Allow = []string{"remote"}
	s := e.connect(e.opts(), sc)
	tool, ok := s.Tool("mcp__raw__remote")
	if !ok || tool.CheckProblem == "" || tool.Strict {
		t.Fatalf("tool %+v", tool)
	}
	if noticeWith(s, "mcp__raw__remote", "cannot be checked") == "" {
		t.Errorf("no notice: %q", s.Notices())
	}
	if _, err := s.Call(context.Background(), "mcp__raw__remote", json.RawMessage(`{"x":1}`)); !errors.Is(err, ErrUncheckable) {
		t.Errorf("call: %v; want ErrUncheckable", err)
	}
	if e.file("calls.log") != "" {
		t.Error("the call reached the server")
	}
}

// TestOversizedMessageStopsServer: a result larger than the message limit
// (16 MiB here) is not read into memory whole; the server is stopped and the
// error says why.
func TestOversizedMessageStopsServer(t *testing.T) {
	e := newEnv(t)
	sc := fixture("big")
	sc.MaxOutput = 1000
	s := e.connect(e.opts(), sc, fixture("other"))
	_, err := s.Call(context.Background(), "mcp__big__big", json.RawMessage(`{"n":20000000}`))
	if !errors.Is(err, ErrServerGone) || !strings.Contains(err.Error(), "cannot read") {
		t.Errorf("oversized result: %v; want ErrServerGone saying the message cannot be read", err)
	}
	if _, err := s.Call(context.Background(), "mcp__big__echo", json.RawMessage(`{"text":"x"}`)); !errors.Is(err, ErrServerGone) {
		t.Errorf("call after: %v", err)
	}
	if call(t, s, "mcp__other__echo", `{"text":"x"}`) != `{"text":"x"}` {
		t.Error("the other server was hurt")
	}
	deadline := time.Now().Add(5 * time.Second)
	for noticeWith(s, "big", "cannot read") == "" && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if noticeWith(s, "big", "cannot read") == "" {
		t.Errorf("no notice saying why: %q", s.Notices())
	}
}

// TestRestartRacingClose: a Restart that runs while the session closes
// leaves no process behind.
func TestRestartRacingClose(t *testing.T) {
	e := newEnv(t)
	s := e.connect(e.opts(), fixture("a", "-init-delay", "200ms"))
	done := make(chan error, 1)
	go func() { done <- s.Restart(context.Background(), "a") }()
	time.Sleep(50 * time.Millisecond)
	s.Close()
	if err := <-done; err != nil && !errors.Is(err, ErrClosed) {
		t.Logf("Restart: %v", err)
	}
	waitNoProcesses(t, fixtureBin)
}

// TestCallToFailedServer: a call to a tool of a server that did not start
// says the server is not running (and why), not that the tool is unknown.
func TestCallToFailedServer(t *testing.T) {
	e := newEnv(t)
	s := e.connect(e.opts(), fixture("exits", "-exit", "3"))
	_, err := s.Call(context.Background(), "mcp__exits__echo", json.RawMessage(`{}`))
	if !errors.Is(err, ErrServerGone) || errors.Is(err, ErrUnknownTool) {
		t.Fatalf("Call = %v, want ErrServerGone", err)
	}
	if !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("error %q does not say how the server failed", err)
	}
	// A server that does not exist stays an unknown tool.
	if _, err := s.Call(context.Background(), "mcp__nosuch__echo", json.RawMessage(`{}`)); !errors.Is(err, ErrUnknownTool) {
		t.Errorf("Call to no server = %v, want ErrUnknownTool", err)
	}
	// So does every method that takes a server's name: a wrong name is
	// no server that Restart could bring back. The failed server is gone.
	ctx := context.Background()
	for _, server := range []string{"nosuch", "exits"} {
		_, errResources := s.Resources(ctx, server)
		_, errRead := s.ReadResource(ctx, server, "file:///x")
		_, errInstructions := s.Instructions(server)
		_, _, errReview := reviewOf(s, "instructions:"+server)
		_, errPrompt := s.GetPrompt(ctx, server, "p", nil)
		_, _, errPromptReview := reviewOf(s, "prompt:"+server+"/p")
		for name, err := range map[string]error{
			"Resources": errResources, "ReadResource": errRead, "Instructions": errInstructions,
			"InstructionsReview": errReview, "GetPrompt": errPrompt, "PromptReview": errPromptReview,
			"ApproveInstructions": approve(s, "instructions:"+server), "ApprovePrompt": approve(s, "prompt:"+server+"/p"),
		} {
			// A wrong server name is ErrUnknownServer, never ErrUnknownTool
			// (nor ErrServerGone, which promises that Restart may help).
			want, other := ErrUnknownServer, ErrServerGone
			if server == "exits" {
				if strings.Contains(name, "Review") || strings.HasPrefix(name, "Approve") {
					continue // reviews read the state, not the server
				}
				want, other = ErrServerGone, ErrUnknownServer
			}
			if errors.Is(err, ErrUnknownTool) {
				t.Errorf("%s(%q) = %v: a server name is not a tool's", name, server, err)
			}
			if !errors.Is(err, want) || errors.Is(err, other) {
				t.Errorf("%s(%q) = %v, want %v", name, server, err, want)
			}
		}
	}
	if err := s.Restart(ctx, "nosuch"); !errors.Is(err, ErrUnknownServer) {
		t.Errorf("Restart(nosuch) = %v, want ErrUnknownServer", err)
	}
}

// TestUnsupportedNoticeSaysOptOutOnce: the opt-out is named exactly once,
// whether or not the sandbox's error names it already.
func TestUnsupportedNoticeSaysOptOutOnce(t *testing.T) {
	for _, err := range []error{
		fmt.Errorf(`%w: server "x": confinement is built only for Linux, and this is darwin; to run the server without confinement anyway (a risk), set sandbox = "off" in its [mcp.x] table`, sandbox.ErrUnsupported),
		fmt.Errorf("%w: Landlock ABI 0", sandbox.ErrUnsupported),
	} {
		srv := &server{cfg: ServerConfig{Name: "x"}, err: &startError{"start", err}, stderr: newStderrLog("x", slog.New(slog.DiscardHandler))}
		n := srv.failureNotice()
		if c := strings.Count(n, `sandbox = "off"`); c != 1 {
			t.Errorf("notice names the opt-out %d times: %q", c, n)
		}
	}
}

// TestCrashNotice: the notice of a server that crashed at start shows the
// error line of a Node.js crash report along with its end, within the
// bounds; one that could not reach a host with the network off is told
// that its network is off and how to grant that host (the one its stderr
// names, not a placeholder).
func TestCrashNotice(t *testing.T) {
	e := newEnv(t)
	s := e.connect(e.opts(),
		fixture("crash", "-node-crash"),
		fixture("offline", "-net-fail", "mcp.stripe.com:443"),
		fixture("longlog", "-flood-stderr", "1", "-exit", "2"))
	n := noticeWith(s, "server crash did not start")
	for _, want := range []string{"stderr: Error: ENOENT: no such file or directory, mkdir '/home/u/.fixture'", "stderr: Node.js v20.20.2", "syscall: 'mkdir'"} {
		if !strings.Contains(n, want) {
			t.Errorf("the crash notice lacks %q:\n%s", want, n)
		}
	}
	if lines := strings.Count(n, "stderr: "); lines > noticeLines+2 {
		t.Errorf("the crash notice shows %d stderr lines, more than %d and the error line:\n%s", lines, noticeLines, n)
	}
	if strings.Contains(n, "network is off") {
		t.Errorf("a crash without a network failure gets a network hint:\n%s", n)
	}
	n = noticeWith(s, "server offline did not start")
	if !strings.Contains(n, "tried to reach mcp.stripe.com, but its network is off; if it needs it, grant it in [mcp.offline]: network = [\"mcp.stripe.com\"]") || strings.Contains(n, "api.example.com") {
		t.Errorf("the offline server's notice does not say its network is off and how to grant the host it tried:\n%s", n)
	}
	n = noticeWith(s, "server longlog did not start")
	if len(n) > noticeBytes+1024 || !strings.Contains(n, "cannot open notes.db") {
		t.Errorf("the notice of a server with a long log is %d bytes (bound %d) or lacks its last line:\n%.2000s", len(n), noticeBytes, n)
	}
}

// TestMalformedToolSkipped: a tool whose definition has a member mcphost
// reads of the wrong JSON type is skipped, with a notice that names it and
// says which member (not that it had no name; nor, for the allow list
// that names it, that the server does not offer it), and the server's
// other tools are published. (The go-sdk, which no longer decodes listings, refused the
// whole listing for one such tool.)
func TestMalformedToolSkipped(t *testing.T) {
	e := newEnv(t)
	sc := rawFixture(t, e, "odd", `[{"name":"titled","title":5,"inputSchema":{"type":"object"}},`+
		`{"name":"tasky","execution":"now","inputSchema":{"type":"object"}},`+
		`{"name":"fine","inputSchema":{"type":"object"}}]`)
	sc.Allow = []string{"titled", "tasky", "fine"}
	s := e.connect(e.opts(), sc)
	if _, ok := s.Tool("mcp__odd__fine"); !ok {
		t.Fatalf("the well-formed tool is not published: %q", s.Notices())
	}
	for _, name := range []string{"mcp__odd__titled", "mcp__odd__tasky"} {
		if _, ok := s.Tool(name); ok {
			t.Errorf("%s is published", name)
		}
	}
	for _, want := range []string{`skipped tool "titled" (#1 of its list): its definition cannot be read: its title is not a string`,
		`skipped tool "tasky" (#2 of its list): its definition cannot be read: its execution is not an object`,
		`[mcp.odd] allow names "titled", whose definition the server sent cannot be read`} {
		if noticeWith(s, want) == "" {
			t.Errorf("no notice %q: %q", want, s.Notices())
		}
	}
}
