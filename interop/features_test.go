package interop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcphost/mcphost/internal/testbin"
	"github.com/mcphost/mcphost/mcphost"
)

// TestEverythingElicitation: with an Elicitor, mcphost advertises
// elicitation, so server-everything lists trigger-elicitation-request, and
// its question is answered through the hook: accepted, declined, and a bad
// answer refused before it is sent.
func TestEverythingElicitation(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	cfg := everythingServer(t)
	cfg.Allow = append(cfg.Allow, "trigger-elicitation-request")
	var mu sync.Mutex
	var answer mcphost.ElicitAnswer
	var asked []mcphost.ElicitRequest
	opts := h.opts()
	opts.Elicit = func(_ context.Context, req mcphost.ElicitRequest) (mcphost.ElicitAnswer, error) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, req)
		return answer, nil
	}
	s := h.connect(opts, cfg)
	const tool = "mcp__everything__trigger-elicitation-request"
	waitFor(t, "trigger-elicitation-request to be listed", func() bool { _, ok := s.Tool(tool); return ok })
	// Form mode only, and no task requests to the client: not advertised.
	for _, name := range []string{"trigger-url-elicitation", "trigger-elicitation-request-async"} {
		if _, ok := s.Tool("mcp__everything__" + name); ok {
			t.Errorf("%s is listed, though mcphost advertises neither URL elicitation nor client tasks", name)
		}
	}
	set := func(a mcphost.ElicitAnswer) {
		mu.Lock()
		answer = a
		mu.Unlock()
	}

	set(mcphost.ElicitAnswer{Action: mcphost.ElicitAccept, Content: map[string]any{"name": "Ada Lovelace", "check": true, "integer": 7,
		"untitledMultipleSelectEnum": []any{"Piano"}}})
	if out := call(t, s, tool, `{}`); !strings.Contains(out, "- Name: Ada Lovelace") || !strings.Contains(out, "Favorite Integer: 7") {
		t.Errorf("accepted: %q", out)
	}
	mu.Lock()
	if len(asked) != 1 || asked[0].Server != "everything" || asked[0].Message == "" || len(asked[0].Fields) < 5 {
		t.Fatalf("the Elicitor was asked %+v", asked)
	}
	mu.Unlock()

	set(mcphost.ElicitAnswer{Action: mcphost.ElicitDecline})
	if out := call(t, s, tool, `{}`); !strings.Contains(out, "declined") {
		t.Errorf("declined: %q", out)
	}

	// Out of range, and a field the schema does not have: refused by
	// mcphost, so the server never sees the content.
	for _, bad := range []map[string]any{
		{"name": "Ada", "integer": 1000},
		{"name": "Ada", "untitledMultipleSelectEnum": []any{"Banjo-secret"}},
		{"name": "Ada", "password": "hunter2"},
	} {
		set(mcphost.ElicitAnswer{Action: mcphost.ElicitAccept, Content: bad})
		ctx, cancel := context.WithTimeout(context.Background(), 2*callTimeout)
		res, err := s.Call(ctx, tool, nil)
		cancel()
		if err == nil && !res.IsError {
			t.Errorf("bad answer %v: the server took it: %q", bad, text(res))
		}
		if err == nil && (strings.Contains(text(res), "hunter2") || strings.Contains(text(res), "1000") || strings.Contains(text(res), "Banjo")) {
			t.Errorf("bad answer %v reached the server: %q", bad, text(res))
		}
	}
	mu.Lock()
	if len(asked) != 5 {
		t.Errorf("the Elicitor was asked %d times; want 5", len(asked))
	}
	mu.Unlock()
}

// TestEverythingProgress: trigger-long-running-operation reports its
// progress to the hook.
func TestEverythingProgress(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var mu sync.Mutex
	var got []mcphost.Progress
	opts := h.opts()
	opts.OnProgress = func(p mcphost.Progress) {
		mu.Lock()
		got = append(got, p)
		mu.Unlock()
	}
	s := h.connect(opts, everythingServer(t))
	out := call(t, s, "mcp__everything__trigger-long-running-operation", `{"duration":1,"steps":4}`)
	if !strings.HasPrefix(out, "Long running operation completed") {
		t.Errorf("result %q", out)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 4 {
		t.Fatalf("%d progress notifications: %+v", len(got), got)
	}
	for i, p := range got {
		if p.Tool != "mcp__everything__trigger-long-running-operation" || p.Progress != float64(i+1) || p.Total != 4 {
			t.Errorf("notification %d: %+v", i, p)
		}
	}
	b, _ := json.Marshal(got)
	t.Logf("progress: %s", b)
}

var (
	cliOnce sync.Once
	cliBin  string
	cliErr  error
)

// mcphostCLI builds cmd/mcphost once per run.
func mcphostCLI(t *testing.T) string {
	t.Helper()
	cliOnce.Do(func() {
		cliBin = filepath.Join(buildDir, "mcphost")
		cliErr = testbin.Build(cliBin, "../cmd/mcphost")
	})
	if cliErr != nil {
		t.Fatal(cliErr)
	}
	return cliBin
}

// runCLI runs `mcphost VERB -config ... ARGS` on server-everything with
// stdin not a terminal (/dev/null), bounded in time.
func runCLI(t *testing.T, h *harness, cfg mcphost.ServerConfig, verb string, args ...string) (string, string, error) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "[mcp.%s]\ncommand = [", cfg.Name)
	for i, a := range cfg.Command {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", a)
	}
	b.WriteString("]\nread = [")
	for i, r := range cfg.Read {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", r)
	}
	b.WriteString("]\n")
	config := filepath.Join(t.TempDir(), "mcphost.toml")
	if err := os.WriteFile(config, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*startupTimeout+2*callTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, mcphostCLI(t), append([]string{verb, "-config", config, "-worktree", h.worktree, "-state", h.state}, args...)...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run() // stdin is /dev/null
	return out.String(), errb.String(), err
}

// TestEverythingCLI: `mcphost call` prints the progress of
// trigger-long-running-operation on stderr, and declines an elicitation
// at once when stdin is not a terminal.
func TestEverythingCLI(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	cfg := everythingServer(t)
	out, stderr, err := runCLI(t, h, cfg, "call", "mcp__everything__trigger-long-running-operation", `{"duration":1,"steps":3}`)
	if err != nil || !strings.Contains(out, "Long running operation completed") {
		t.Fatalf("call: %v\n%s%s", err, out, stderr)
	}
	for _, want := range []string{"progress mcp__everything__trigger-long-running-operation: 1/3", "3/3"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	start := time.Now()
	out, stderr, err = runCLI(t, h, cfg, "call", "mcp__everything__trigger-elicitation-request", `{}`)
	if err != nil || !strings.Contains(out, "declined") || !strings.Contains(stderr, "stdin is not a terminal") {
		t.Errorf("elicitation: %v\n%s%s", err, out, stderr)
	}
	if d := time.Since(start); d > startupTimeout+callTimeout {
		t.Errorf("the declined elicitation took %v", d)
	}
}

// TestEverythingResourcesPromptsInstructions: server-everything's
// resources are listed and read, its prompts listed (pinned at first
// sight) and got, and its instructions reach the agent as pinned text.
func TestEverythingResourcesPromptsInstructions(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	cfg := everythingServer(t)
	s := h.connect(h.opts(), cfg)
	ctx := context.Background()

	resources, err := s.Resources(ctx, "everything")
	if err != nil || len(resources) == 0 {
		t.Fatalf("Resources: %v (%d)", err, len(resources))
	}
	read := 0
	for _, r := range resources {
		res, err := s.ReadResource(ctx, "everything", r.URI)
		if err != nil {
			t.Errorf("ReadResource(%s): %v", r.URI, err)
			continue
		}
		if len(res.Contents) == 0 || res.Contents[0].Text == "" && len(res.Contents[0].Blob) == 0 {
			t.Errorf("ReadResource(%s): no contents", r.URI)
		}
		read++
	}
	t.Logf("read %d resources", read)

	prompts := s.Prompts()
	names := map[string]mcphost.Prompt{}
	for _, p := range prompts {
		names[p.Name] = p
	}
	simple, ok := names["simple-prompt"]
	if !ok || simple.Pin != mcphost.PinNew || simple.Digest == "" {
		t.Fatalf("prompts: %+v", prompts)
	}
	if _, ok := names["args-prompt"]; !ok {
		t.Errorf("args-prompt not listed: %+v", prompts)
	}
	res, err := s.GetPrompt(ctx, "everything", "simple-prompt", nil)
	if err != nil || len(res.Messages) == 0 {
		t.Fatalf("GetPrompt(simple-prompt): %v %+v", err, res)
	}
	res, err = s.GetPrompt(ctx, "everything", "args-prompt", map[string]string{"city": "Lyon"})
	if err != nil || len(res.Messages) == 0 {
		t.Fatalf("GetPrompt(args-prompt): %v %+v", err, res)
	}
	if b, _ := json.Marshal(res.Messages); !strings.Contains(string(b), "Lyon") {
		t.Errorf("args-prompt: %s", b)
	}

	ins, err := s.Instructions("everything")
	if err != nil || ins == "" {
		t.Errorf("Instructions: %q, %v", ins, err)
	}
	info := s.Servers()[0]
	if info.Protocol == "" || info.InstructionsPin != mcphost.PinNew {
		t.Errorf("server info: protocol %q instructions pin %q", info.Protocol, info.InstructionsPin)
	}
	s.Close()
	// The next session finds all of it as reviewed.
	s = h.connect(h.opts(), cfg)
	if info := s.Servers()[0]; info.InstructionsPin != mcphost.PinSame {
		t.Errorf("second session: instructions pin %q", info.InstructionsPin)
	}
	for _, p := range s.Prompts() {
		if p.Pin != mcphost.PinSame {
			t.Errorf("second session: prompt %s pin %s", p.Name, p.Pin)
		}
	}
}

// TestEverythingTask: the task-only simulate-research-query is called as a
// task: its status is followed (through OnProgress), the elicitation it
// sends while input_required is answered through the hook, and its result
// is returned. A call whose context ends first cancels the task.
func TestEverythingTask(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var mu sync.Mutex
	var statuses []string
	asked := 0
	opts := h.opts()
	opts.OnProgress = func(p mcphost.Progress) {
		mu.Lock()
		statuses = append(statuses, p.Message)
		mu.Unlock()
	}
	opts.Elicit = func(_ context.Context, req mcphost.ElicitRequest) (mcphost.ElicitAnswer, error) {
		mu.Lock()
		asked++
		mu.Unlock()
		if len(req.Fields) != 1 || len(req.Fields[0].Enum) == 0 {
			return mcphost.ElicitAnswer{}, fmt.Errorf("unexpected form %+v", req.Fields)
		}
		return mcphost.ElicitAnswer{Action: mcphost.ElicitAccept, Content: map[string]any{"interpretation": req.Fields[0].Enum[0]}}, nil
	}
	s := h.connect(opts, everythingServer(t))
	const tool = "mcp__everything__simulate-research-query"
	waitFor(t, "simulate-research-query to be listed", func() bool { _, ok := s.Tool(tool); return ok })
	out := call(t, s, tool, `{"topic":"python","ambiguous":true}`)
	if !strings.Contains(out, "# Research Report: python (") || !strings.Contains(out, "Clarification") {
		t.Errorf("result %q", out)
	}
	mu.Lock()
	if asked != 1 {
		t.Errorf("the Elicitor was asked %d times; want 1", asked)
	}
	joined := strings.Join(statuses, "\n")
	if !strings.Contains(joined, "task working") {
		t.Errorf("no task status reached OnProgress: %q", statuses)
	}
	mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := s.Call(ctx, tool, json.RawMessage(`{"topic":"slow"}`)); err == nil {
		t.Error("a 4-second task returned within 1.5s")
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("the cancelled call took %v", d)
	}
}
