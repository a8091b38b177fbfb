package mcphost

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The tools of the raw 2026 task server: taskTools, and ask, whose task
// needs input on the way.
const taskTools2026 = `[{"name":"research","inputSchema":{"type":"object","properties":{"q":{"type":"string"}}},"execution":{"taskSupport":"required"}},
{"name":"slow","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}},
{"name":"ask","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}},
{"name":"ask_many","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}}]`

// waitFor waits up to 5s for a file of the worktree to contain want.
func waitFor(e *env, name, want string) bool {
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(e.file(name), want) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// TestTaskBothEras (issue 29): a server that speaks only 2026-07-28 and
// offers the tasks extension, and one that speaks 2025-11-25's tasks, in
// one session: a task-only tool of each is offered and called, each in
// its own form (the extension declared on every request, tasks/get until
// the result comes inline, no tasks/result; tasks/result on the older),
// with the status of both reaching OnProgress.
func TestTaskBothEras(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	msgs := map[string][]string{}
	opts := e.opts()
	opts.OnProgress = func(p Progress) {
		mu.Lock()
		msgs[p.Server] = append(msgs[p.Server], p.Message)
		mu.Unlock()
	}
	modern := rawFixture(t, e, "modern", taskTools2026, "-raw-mode", "tasks-2026", "-record", "modern.log")
	modern.Allow = []string{"research", "slow", "ask"}
	legacy := rawFixture(t, e, "legacy", taskTools, "-raw-mode", "tasks", "-record", "legacy.log")
	legacy.Allow = []string{"research", "slow"}
	s := e.connect(opts, modern, legacy)
	want := map[string]string{"modern": "2026-07-28", "legacy": "2025-11-25"}
	for _, info := range s.Servers() {
		if info.State != ServerRunning || info.Protocol != want[info.Name] {
			t.Fatalf("server %s: %s, protocol %q, want running %s: %s; notices %q", info.Name, info.State, info.Protocol, want[info.Name], info.Error, s.Notices())
		}
	}
	for _, server := range []string{"modern", "legacy"} {
		if _, ok := s.Tool("mcp__" + server + "__research"); !ok {
			t.Fatalf("the task-only tool of %s is not offered; notices %q", server, s.Notices())
		}
		if got := call(t, s, "mcp__"+server+"__research", `{"q":"`+server+`"}`); got != `{"q":"`+server+`"}` {
			t.Errorf("%s: result %q", server, got)
		}
		if log := e.file(server + ".log"); !strings.Contains(log, `task-created {"q":"`+server+`"}`) {
			t.Errorf("%s did not create a task: %q", server, log)
		}
	}
	if log := e.file("modern.log"); strings.Contains(log, "undeclared") || strings.Contains(log, "tasks/result") {
		t.Errorf("the 2026 server got a request without the extension, or tasks/result: %q", log)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, server := range []string{"modern", "legacy"} {
		joined := strings.Join(msgs[server], "\n")
		if !strings.Contains(joined, "task working: started") || !strings.Contains(joined, "task working: poll 1") {
			t.Errorf("%s: status updates %q", server, joined)
		}
	}
	if joined := strings.Join(msgs["modern"], "\n"); !strings.Contains(joined, "task completed: poll 2") {
		t.Errorf("modern: no completed status: %q", joined)
	}
}

// TestTaskExtInput: a 2026 task that needs input asks it through the same
// gate as a call's elicitation (Elicit), and gets the answer with
// tasks/update, once.
func TestTaskExtInput(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	var asked []string
	opts := e.opts()
	opts.Elicit = func(_ context.Context, req ElicitRequest) (ElicitAnswer, error) {
		mu.Lock()
		asked = append(asked, req.Message)
		mu.Unlock()
		return ElicitAnswer{Action: ElicitAccept, Content: map[string]any{"name": "ada"}}, nil
	}
	sc := rawFixture(t, e, "modern", taskTools2026, "-raw-mode", "tasks-2026", "-record", "calls.log")
	sc.Allow = []string{"ask"}
	s := e.connect(opts, sc)
	if got := call(t, s, "mcp__modern__ask", `{}`); !strings.Contains(got, `"accept"`) || !strings.Contains(got, `"ada"`) {
		t.Errorf("result %q", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 1 || asked[0] != "Who asks?" {
		t.Errorf("asked %q", asked)
	}
	if n := strings.Count(e.file("calls.log"), "tasks/update"); n != 1 {
		t.Errorf("%d tasks/update: %q", n, e.file("calls.log"))
	}
}

// TestTaskExtCancelled: a 2026 task whose call is cancelled by its caller
// is cancelled on the server (tasks/cancel, declaring the extension).
func TestTaskExtCancelled(t *testing.T) {
	e := newEnv(t)
	sc := rawFixture(t, e, "modern", taskTools2026, "-raw-mode", "tasks-2026", "-record", "calls.log")
	sc.Allow = []string{"research", "slow"}
	s := e.connect(e.opts(), sc)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		waitFor(e, "calls.log", "task-created")
		time.Sleep(300 * time.Millisecond)
		cancel()
	}()
	start := time.Now()
	_, err := s.Call(ctx, "mcp__modern__slow", nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v; want context.Canceled", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
	if !waitFor(e, "calls.log", `tasks/cancel {"taskId":"t-1"}`) {
		t.Errorf("no tasks/cancel reached the server: %q", e.file("calls.log"))
	}
	if strings.Contains(e.file("calls.log"), "undeclared") {
		t.Errorf("a request without the extension: %q", e.file("calls.log"))
	}
	if got := call(t, s, "mcp__modern__research", `{"q":"after"}`); got != `{"q":"after"}` {
		t.Errorf("after the cancel: %q", got)
	}
}

// TestTaskExtTimeout: a 2026 task past call_timeout ends the call with
// ErrTimeout, in time, and is cancelled on the server.
func TestTaskExtTimeout(t *testing.T) {
	e := newEnv(t)
	sc := rawFixture(t, e, "modern", taskTools2026, "-raw-mode", "tasks-2026", "-record", "calls.log")
	sc.Allow = []string{"research", "slow"}
	sc.CallTimeout = 2 * time.Second
	s := e.connect(e.opts(), sc)
	start := time.Now()
	_, err := s.Call(context.Background(), "mcp__modern__slow", nil)
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("err %v; want ErrTimeout", err)
	}
	if d := time.Since(start); d > 6*time.Second {
		t.Errorf("took %v", d)
	}
	if !waitFor(e, "calls.log", `tasks/cancel {"taskId":"t-1"}`) {
		t.Errorf("no tasks/cancel reached the server: %q", e.file("calls.log"))
	}
	if got := call(t, s, "mcp__modern__research", `{"q":"after"}`); got != `{"q":"after"}` {
		t.Errorf("after the timeout: %q", got)
	}
}

// TestTaskExtNotOffered: a 2026 server that does not offer the tasks
// extension keeps working; its task-only tools are skipped with a notice
// naming the extension.
func TestTaskExtNotOffered(t *testing.T) {
	e := newEnv(t)
	sc := rawFixture(t, e, "modern", `[{"name":"ok","inputSchema":{"type":"object"}},`+taskTools2026[1:], "-raw-mode", "modern")
	sc.Allow = []string{"ok", "research"}
	s := e.connect(e.opts(), sc)
	if p := s.Servers()[0].Protocol; p != "2026-07-28" {
		t.Fatalf("protocol %q; notices %q", p, s.Notices())
	}
	if _, ok := s.Tool("mcp__modern__research"); ok {
		t.Error("a task-only tool is offered without the extension")
	}
	if noticeWith(s, "research", "2026-07-28", "io.modelcontextprotocol/tasks") == "" {
		t.Errorf("notices %q", s.Notices())
	}
	if got := call(t, s, "mcp__modern__ok", `{}`); got != `{}` {
		t.Errorf("ok: %q", got)
	}
}

// TestTaskExtInputRefused: a 2026 task whose input cannot be given (the
// person's hook fails) fails its call, and the task is cancelled on the
// server rather than left waiting.
func TestTaskExtInputRefused(t *testing.T) {
	e := newEnv(t)
	opts := e.opts()
	opts.Elicit = func(context.Context, ElicitRequest) (ElicitAnswer, error) {
		return ElicitAnswer{}, errors.New("no person at the keyboard")
	}
	sc := rawFixture(t, e, "modern", taskTools2026, "-raw-mode", "tasks-2026", "-record", "calls.log")
	sc.Allow = []string{"ask"}
	s := e.connect(opts, sc)
	if _, err := s.Call(context.Background(), "mcp__modern__ask", nil); err == nil || !strings.Contains(err.Error(), "not answered") {
		t.Fatalf("err %v; want the elicitation not answered", err)
	}
	if !waitFor(e, "calls.log", `tasks/cancel {"taskId":"t-1"}`) {
		t.Errorf("no tasks/cancel reached the server: %q", e.file("calls.log"))
	}
	if strings.Contains(e.file("calls.log"), "tasks/update") {
		t.Errorf("an answer was sent: %q", e.file("calls.log"))
	}
}

// TestTaskExtInputFlood (found in review): a task that asks for a hundred
// inputs in one round fails the call; the person is asked nothing.
func TestTaskExtInputFlood(t *testing.T) {
	e := newEnv(t)
	var asked atomic.Int32
	opts := e.opts()
	opts.Elicit = func(context.Context, ElicitRequest) (ElicitAnswer, error) {
		asked.Add(1)
		return ElicitAnswer{Action: ElicitAccept, Content: map[string]any{"a": "x"}}, nil
	}
	sc := rawFixture(t, e, "modern", taskTools2026, "-raw-mode", "tasks-2026")
	sc.Allow = []string{"ask_many"}
	s := e.connect(opts, sc)
	_, err := s.Call(context.Background(), "mcp__modern__ask_many", json.RawMessage(`{}`))
	if err == nil || !strings.Contains(err.Error(), "100 inputs at once") {
		t.Errorf("call: %v", err)
	}
	if n := asked.Load(); n != 0 {
		t.Errorf("the person was asked %d times", n)
	}
}
