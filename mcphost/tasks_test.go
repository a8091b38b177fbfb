package mcphost

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

const taskTools = `[{"name":"research","inputSchema":{"type":"object","properties":{"q":{"type":"string"}}},"execution":{"taskSupport":"required"}},
{"name":"slow","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}}]`

// TestTaskCall: a task-only tool is called as a task: created, followed
// (its status reaches OnProgress), and its result returned.
func TestTaskCall(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	var msgs []string
	opts := e.opts()
	opts.OnProgress = func(p Progress) {
		mu.Lock()
		msgs = append(msgs, p.Message)
		mu.Unlock()
	}
	sc := rawFixture(t, e, "raw", taskTools, "-raw-mode", "tasks", "-record", "calls.log")
	sc.Allow = []string{"research", "slow"}
	s := e.connect(opts, sc)
	if got := call(t, s, "mcp__raw__research", `{"q":"tides"}`); got != `{"q":"tides"}` {
		t.Errorf("result %q", got)
	}
	mu.Lock()
	joined := strings.Join(msgs, "\n")
	mu.Unlock()
	if !strings.Contains(joined, "task working: started") || !strings.Contains(joined, "task working: poll 1") {
		t.Errorf("status updates %q", joined)
	}
	if !strings.Contains(e.file("calls.log"), `task-created {"q":"tides"}`) {
		t.Errorf("the server did not create a task: %q", e.file("calls.log"))
	}
}

// TestTaskCancelled: a task whose call_timeout passes is cancelled on the
// server (tasks/cancel), and the call says it timed out.
func TestTaskCancelled(t *testing.T) {
	e := newEnv(t)
	sc := rawFixture(t, e, "raw", taskTools, "-raw-mode", "tasks", "-record", "calls.log")
	sc.Allow = []string{"research", "slow"}
	sc.CallTimeout = 3 * time.Second
	s := e.connect(e.opts(), sc)
	start := time.Now()
	_, err := s.Call(context.Background(), "mcp__raw__slow", nil)
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("err %v; want ErrTimeout", err)
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("took %v", d)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(e.file("calls.log"), `tasks/cancel {"taskId":"t-1"}`) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(e.file("calls.log"), "tasks/cancel") {
		t.Errorf("no tasks/cancel reached the server: %q", e.file("calls.log"))
	}
	// The connection is still good for other calls.
	if got := call(t, s, "mcp__raw__research", `{"q":"after"}`); got != `{"q":"after"}` {
		t.Errorf("after the cancel: %q", got)
	}
}

// TestTaskOlderProtocol: a server that negotiated a revision without tasks
// keeps working; its task-only tools are skipped with a notice naming the
// revision.
func TestTaskOlderProtocol(t *testing.T) {
	e := newEnv(t)
	sc := rawFixture(t, e, "raw", `[{"name":"ok","inputSchema":{"type":"object"}},`+taskTools[1:])
	sc.Allow = []string{"ok"}
	s := e.connect(e.opts(), sc)
	if _, ok := s.Tool("mcp__raw__research"); ok {
		t.Error("a task-only tool is offered on 2025-06-18")
	}
	if noticeWith(s, "research", "2025-06-18", "has no tasks") == "" {
		t.Errorf("notices %q", s.Notices())
	}
	if got := call(t, s, "mcp__raw__ok", `{}`); got != `{}` {
		t.Errorf("ok: %q", got)
	}
	if p := s.Servers()[0].Protocol; p != "2025-06-18" {
		t.Errorf("protocol %q", p)
	}
}
