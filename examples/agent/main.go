// Command agent is a complete agent loop on mcphost, with a scripted
// stand-in for the model so that it runs without a network or an API key.
//
// It reads its config (agent.toml: the agent's own [agent] settings and the
// [mcp.notes] server), connects, offers the tools to the "model" as OpenAI
// Chat Completions tool definitions, and runs the model's turns: a call of
// an allowed tool, a call that needs a person's approval (asked on the
// terminal), a call of a denied tool and a call with bad arguments (the
// model reads why each failed), a tool change mid-session, and Close.
//
// From the repository root:
//
//	go build -trimpath -o bin/ ./examples/notes
//	go run ./examples/agent -yes
//
// Without -yes the agent asks before each call that needs approval (y/N);
// when stdin is not a terminal nobody can answer, so such calls are
// declined.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/mcphost/mcphost/internal/hostfile"
	"github.com/mcphost/mcphost/mcphost"
	"github.com/mcphost/mcphost/openai"
	"github.com/mcphost/mcphost/pin"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout)
	stop()
	var usage usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.As(err, &usage):
		fmt.Fprintln(os.Stderr, "agent:", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "agent:", err)
		os.Exit(1)
	}
}

// usageError is a bad flag or config: exit status 2.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// agentConfig is the agent's own part of agent.toml.
type agentConfig struct {
	Model    string `toml:"model"`
	MaxTurns int    `toml:"max_turns"`
	Task     string `toml:"task"`
}

// run is the whole program: flags in args, answers to approval prompts on
// stdin, the transcript on stdout.
func run(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) (err error) {
	out := &transcript{w: stdout}
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	fs.SetOutput(stdout)
	configPath := fs.String("config", "examples/agent/agent.toml", "the agent's config `file`")
	worktree := fs.String("worktree", "", "the `dir`ectory servers work in (default: a scratch directory, removed at the end)")
	stateDir := fs.String("state", "", "the `dir`ectory of the reviewed-tools state (default: a scratch directory, removed at the end)")
	yes := fs.Bool("yes", false, "approve every call that needs approval, without asking")
	verbose := fs.Bool("v", false, "also print mcphost's log (server lifecycle, calls, servers' stderr)")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}

	data, err := hostfile.Read(*configPath, hostfile.MaxConfig)
	if err != nil {
		return usageError{fmt.Errorf("%w (run from the repository root, or pass -config)", err)}
	}
	cfg, err := parseAgentConfig(data)
	if err != nil {
		return usageError{fmt.Errorf("%s: %w", *configPath, err)}
	}
	// Load, not Parse: mcphost remembers where the tables came from, so a
	// config in the worktree (where a server could have written it) starts
	// only tables a person reviewed.
	servers, err := mcphost.Load(*configPath)
	if err != nil {
		return usageError{err}
	}
	out.printf("agent: model %q, at most %d turns, config %s\n", cfg.Model, cfg.MaxTurns, *configPath)

	if *worktree == "" {
		dir, err := os.MkdirTemp("", "agent-worktree-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		*worktree = dir
		out.printf("worktree: %s (scratch; -worktree to choose one)\n", dir)
		for i := range servers {
			if err := resolveCommand(&servers[i], out); err != nil {
				return err
			}
		}
	} else {
		out.printf("worktree: %s\n", *worktree)
	}
	if *stateDir == "" {
		dir, err := os.MkdirTemp("", "agent-state-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		*stateDir = dir
	}

	var interactive bool
	if f, ok := stdin.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			interactive = true
		}
	}
	ask := newApprover(stdin, out, *yes, interactive)
	out.printf("approvals: %s\n", ask.mode())

	var changed atomic.Bool
	opts := mcphost.Options{
		Worktree:   *worktree,
		StateDir:   *stateDir,
		ConfigFile: *configPath,
		Approver:   ask.approve,
		OnToolsChanged: func(server string) {
			// Called from a session goroutine: only note it here; the loop
			// re-offers the tools before the model's next turn.
			out.printf("event: the tools of server %s changed; they are offered again before the next turn\n", server)
			changed.Store(true)
		},
		OnCall: func(r mcphost.CallRecord) {
			outcome := "ok"
			switch {
			case r.Err != nil:
				outcome = "failed"
			case r.IsError:
				outcome = "tool error"
			}
			out.printf("  journal: %s decision=%s %v %s\n", r.Tool, orNone(string(r.Decision)), r.Duration.Round(time.Millisecond), outcome)
		},
	}
	if *verbose {
		opts.Logger = slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}

	s, err := mcphost.Connect(ctx, servers, opts)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := s.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close: %w", cerr)
		} else if err == nil {
			out.printf("closed: every server and every process it started has stopped\n")
		}
	}()
	for _, info := range s.Servers() {
		out.printf("server %s: %s, %d tools, confinement %s\n", info.Name, info.State, info.Tools, orNone(info.Confinement))
	}
	for _, n := range s.Notices() {
		out.printf("notice: %s\n", n)
	}
	for _, info := range s.Servers() {
		if info.State != mcphost.ServerRunning {
			return fmt.Errorf("server %s is %s: %s (build the example server first, from the repository root: go build -trimpath -o bin/ ./examples/notes)",
				info.Name, info.State, info.Error)
		}
	}

	// Midway, restart the notes server, as a person might after upgrading
	// it: mcphost lists and pins its tools again (a tool that changed would
	// need approval) and calls OnToolsChanged. A server that sends
	// notifications/tools/list_changed takes the same path.
	restart := func(turn int) error {
		if turn != 3 {
			return nil
		}
		out.printf("\n(restarting server notes, as after an upgrade)\n")
		return s.Restart(ctx, "notes")
	}
	return loop(ctx, s, &scriptedModel{}, cfg, out, &changed, restart)
}

// parseAgentConfig reads the agent's own keys and refuses unknown ones
// outside the [mcp.*] tables (those are mcphost's: Parse checks them).
func parseAgentConfig(data []byte) (agentConfig, error) {
	var doc struct {
		Agent agentConfig `toml:"agent"`
	}
	md, err := toml.Decode(string(data), &doc)
	if err != nil {
		return agentConfig{}, err
	}
	for _, key := range md.Undecoded() {
		if key[0] != "mcp" {
			return agentConfig{}, fmt.Errorf("unknown key %s; the agent's keys are [agent] model, max_turns and task", key)
		}
	}
	cfg := doc.Agent
	switch {
	case cfg.Model != "scripted":
		return cfg, fmt.Errorf("[agent] model = %q: this example has only the model \"scripted\"", cfg.Model)
	case cfg.MaxTurns == 0:
		cfg.MaxTurns = 10
	case cfg.MaxTurns < 0:
		return cfg, fmt.Errorf("[agent] max_turns = %d: want a positive number", cfg.MaxTurns)
	}
	return cfg, nil
}

// resolveCommand makes a server's relative command (one with a '/')
// absolute from the current directory. mcphost would run it from the
// worktree, but a scratch worktree holds no programs.
func resolveCommand(sc *mcphost.ServerConfig, out *transcript) error {
	if len(sc.Command) == 0 || !strings.Contains(sc.Command[0], "/") || filepath.IsAbs(sc.Command[0]) {
		return nil
	}
	abs, err := filepath.Abs(sc.Command[0])
	if err != nil {
		return err
	}
	out.printf("server %s: command %s resolved to %s\n", sc.Name, sc.Command[0], abs)
	sc.Command = append([]string{abs}, sc.Command[1:]...)
	return nil
}

// model is the agent's view of a model: given the conversation and the
// tools on offer, it returns the assistant's next message. A real agent
// sends both to a Chat Completions endpoint here.
type model interface {
	Next(ctx context.Context, messages []openai.ChatMessage, tools []openai.ChatTool) (openai.ChatMessage, error)
}

// loop runs the conversation: ask the model, run the tools it calls, send
// back their results, until the model answers without calling a tool.
// afterTurn, if not nil, runs after each turn's tool calls.
func loop(ctx context.Context, s *mcphost.Session, m model, cfg agentConfig, out *transcript, changed *atomic.Bool, afterTurn func(turn int) error) error {
	tools, err := offer(s, out)
	if err != nil {
		return err
	}
	messages := []openai.ChatMessage{textMessage("user", cfg.Task)}
	out.printf("\nuser: %s\n", cfg.Task)
	for turn := 1; turn <= cfg.MaxTurns; turn++ {
		if changed.Swap(false) {
			if tools, err = offer(s, out); err != nil {
				return err
			}
		}
		msg, err := m.Next(ctx, messages, tools)
		if err != nil {
			return fmt.Errorf("model: %w", err)
		}
		messages = append(messages, msg)
		if len(msg.ToolCalls) == 0 {
			out.printf("\nmodel: %s\n", contentText(msg))
			return nil
		}
		for _, tc := range msg.ToolCalls {
			out.printf("\nmodel calls %s %s\n", tc.Function.Name, tc.Function.Arguments)
			// The model's arguments go to Call as they are: Call maps them
			// back from the strict form and checks them before the server
			// sees them.
			res, err := s.Call(ctx, tc.Function.Name, json.RawMessage(tc.Function.Arguments))
			var reply openai.ChatMessage
			switch {
			case ctx.Err() != nil:
				return ctx.Err()
			case err != nil:
				// Denied, declined, bad arguments, ...: the model reads why,
				// and may correct itself.
				reply = openai.ChatToolError(tc.ID, err)
			default:
				reply = openai.ChatToolMessage(tc.ID, res)
			}
			out.printf("  to the model: %s\n", contentText(reply))
			messages = append(messages, reply)
		}
		if afterTurn != nil {
			if err := afterTurn(turn); err != nil {
				return err
			}
		}
	}
	return fmt.Errorf("the model did not finish within max_turns = %d", cfg.MaxTurns)
}

// offer prints, briefly, and returns the tool definitions the model is
// offered: the request's "tools", with each schema shortened.
func offer(s *mcphost.Session, out *transcript) ([]openai.ChatTool, error) {
	tools := openai.ChatTools(s.Tools())
	out.printf("\noffered to the model (openai.ChatTools; denied tools are never offered):\n")
	for _, t := range tools {
		decision := ""
		if tool, ok := s.Tool(t.Function.Name); ok {
			decision = string(tool.Decision)
		}
		b, err := json.Marshal(t)
		if err != nil {
			return nil, fmt.Errorf("tool %s: %w", t.Function.Name, err)
		}
		brief := strings.Replace(string(b), string(t.Function.Parameters), "{...}", 1)
		out.printf("  [%s] %s\n", decision, brief)
	}
	return tools, nil
}

func textMessage(role, text string) openai.ChatMessage {
	return openai.ChatMessage{Role: role, Content: []openai.ChatContentPart{{Type: "text", Text: text}}}
}

// contentText is a message's text on one line, for the transcript.
func contentText(m openai.ChatMessage) string {
	var parts []string
	for _, p := range m.Content {
		parts = append(parts, p.Text)
	}
	return clip(strings.ReplaceAll(strings.Join(parts, " | "), "\n", `\n`), 300)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// transcript serializes writes: the session calls OnToolsChanged and OnCall
// from its own goroutines.
type transcript struct {
	mu sync.Mutex
	w  io.Writer
}

func (t *transcript) printf(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(t.w, format, args...)
}

// Write lets the transcript take slog's output.
func (t *transcript) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.w.Write(p)
}

// approver asks a person about calls that need approval.
type approver struct {
	mu  sync.Mutex // one question at a time
	out *transcript
	yes bool
	// lines reads answers; nil when nobody can be asked (stdin is not a
	// terminal).
	lines *lineReader
}

func newApprover(stdin io.Reader, out *transcript, yes, interactive bool) *approver {
	a := &approver{out: out, yes: yes}
	if interactive && !yes {
		a.lines = &lineReader{r: bufio.NewReader(stdin), ch: make(chan lineResult, 1)}
	}
	return a
}

func (a *approver) mode() string {
	switch {
	case a.yes:
		return "-yes: every call that needs approval is approved without asking"
	case a.lines != nil:
		return "asked on the terminal (y/N)"
	default:
		return "stdin is not a terminal, so calls that need approval are declined (-yes approves them)"
	}
}

// approve is the session's Approver. It shows the call, why it needs
// approval and, for a tool that changed or was never reviewed, the diff;
// then approves this call with -yes, declines when nobody can be asked, or
// asks: "y" or "yes" approves this call, "r" or "review" also records the
// tool as reviewed as it is now, anything else declines.
func (a *approver) approve(ctx context.Context, req mcphost.ApprovalRequest) (mcphost.Verdict, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.out.printf("  approval needed: %s: %s\n", req.Tool.Name, pin.Visible(req.Reason))
	a.out.printf("    description: %s\n", clip(pin.Visible(req.Tool.Description), 200))
	a.out.printf("    arguments:   %s\n", clip(pin.Visible(string(req.Arguments)), 200))
	if req.Diff != "" {
		// Escaped already: safe on a terminal as it is.
		a.out.printf("    %s\n", strings.ReplaceAll(strings.TrimSuffix(req.Diff, "\n"), "\n", "\n    "))
	}
	switch {
	case a.yes:
		a.out.printf("    approved this call (-yes; nothing recorded as reviewed)\n")
		return mcphost.ApproveOnce, nil
	case a.lines == nil:
		a.out.printf("    declined: stdin is not a terminal, so nobody can be asked (-yes approves)\n")
		return mcphost.Decline, nil
	}
	a.out.printf("    allow this call? [y] yes  [r] yes, and record the tool as reviewed  [N] no ")
	line, err := a.lines.read(ctx)
	switch {
	case ctx.Err() != nil:
		a.out.printf("\n")
		return mcphost.Decline, ctx.Err()
	case err != nil && line == "":
		a.out.printf("\n    declined: no answer (%v)\n", err)
		return mcphost.Decline, nil
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		a.out.printf("    approved\n")
		return mcphost.ApproveOnce, nil
	case "r", "review":
		a.out.printf("    approved, and the tool recorded as reviewed\n")
		return mcphost.ApproveAndReview, nil
	}
	a.out.printf("    declined\n")
	return mcphost.Decline, nil
}

// lineReader reads lines without blocking past a context: a read abandoned
// when its context ends leaves its line for the next read.
type lineReader struct {
	r       *bufio.Reader
	ch      chan lineResult // capacity 1, so the reading goroutine never blocks
	pending bool
}

type lineResult struct {
	line string
	err  error
}

// read returns the next line. The caller serializes reads.
func (l *lineReader) read(ctx context.Context) (string, error) {
	if !l.pending {
		l.pending = true
		go func() {
			line, err := l.r.ReadString('\n')
			l.ch <- lineResult{line, err}
		}()
	}
	select {
	case res := <-l.ch:
		l.pending = false
		return res.line, res.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}
