// Command mcphost shows a person what a coding agent's MCP servers offer
// and records their review of it.
//
//	mcphost list    [-config F] [-worktree D] [-state D] [-lock F] [-json]
//	mcphost approve [-config F] [-worktree D] [-state D] [-lock F] [-yes] TOOL|SERVER|instructions:SERVER|prompt:SERVER/NAME...
//	mcphost call    [-config F] [-worktree D] [-state D] [-lock F] TOOL [JSON-ARGS]
//	mcphost check   [-config F] [-worktree D] [-state D] [-lock F]
//	mcphost version
//
// Exit codes: 0 ok; 1 the thing asked for failed, or (check) an offered tool
// changed since its review or has none on record; 2 usage or config error.
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
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/mcphost/mcphost/mcphost"
	"github.com/mcphost/mcphost/pin"
)

const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

func main() {
	// SIGINT or SIGTERM cancels what runs: every wait of the library ends
	// with its context, and the servers are closed on the way out. A
	// second signal is not caught, so it ends mcphost at once (each
	// server's helper then ends the server's processes).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// cli holds one invocation's streams and common flags.
type cli struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	config         string
	worktree       string
	state          string
	lock           string
	verbose        bool
	// reviews are the server tables connect left out: the config lies
	// where a server could write it and a person has not reviewed them.
	reviews []tableReview
	// configs are the config's server tables, all of them.
	configs []mcphost.ServerConfig
}

const usage = `mcphost shows what a coding agent's MCP servers offer, and records a person's review.

Usage:
  mcphost list    [-config F] [-worktree D] [-state D] [-lock F] [-json]
  mcphost approve [-config F] [-worktree D] [-state D] [-lock F] [-yes] TOOL|SERVER|instructions:SERVER|prompt:SERVER/NAME...
  mcphost approve -lock F [-yes]        (accept the lock as it is)
  mcphost call    [-config F] [-worktree D] [-state D] [-lock F] TOOL [JSON-ARGS]
  mcphost check   [-config F] [-worktree D] [-state D] [-lock F]
  mcphost version

Run 'mcphost VERB -h' for a verb's flags and examples.
Exit codes: 0 ok; 1 failed (check: an offered tool is not as reviewed); 2 usage or config error.
`

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	c := &cli{stdin: stdin, stdout: stdout, stderr: stderr}
	verb, rest := args[0], args[1:]
	switch verb {
	case "list":
		return c.list(ctx, rest)
	case "approve":
		return c.approve(ctx, rest)
	case "call":
		return c.call(ctx, rest)
	case "check":
		return c.check(ctx, rest)
	case "version", "-version", "--version":
		fmt.Fprintln(stdout, "mcphost", mcphost.Version)
		return exitOK
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "mcphost: unknown verb %q\n\n%s", verb, usage)
		return exitUsage
	}
}

func (c *cli) flags(verb, synopsis, examples string) *flag.FlagSet {
	fs := flag.NewFlagSet(verb, flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	fs.StringVar(&c.config, "config", "mcphost.toml", "the TOML config whose [mcp.<name>] tables name the servers")
	fs.StringVar(&c.worktree, "worktree", ".", "the directory servers run in and may write")
	fs.StringVar(&c.state, "state", "", "the directory of the reviewed-tools state (default: under the user's state directory, keyed by the worktree)")
	fs.StringVar(&c.lock, "lock", "", "a lock file (such as mcphost.lock) holding a team's reviews: read and recorded instead of the personal state; first sight trusts nothing")
	fs.BoolVar(&c.verbose, "v", false, "log server lifecycle and stderr to standard error")
	fs.Usage = func() {
		fmt.Fprintf(c.stderr, "Usage: mcphost %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
		fmt.Fprintf(c.stderr, "\nExamples:\n%s", examples)
	}
	return fs
}

// connect parses the config and starts its servers.
func (c *cli) connect(ctx context.Context, opts mcphost.Options) (*mcphost.Session, int) {
	data, err := os.ReadFile(c.config)
	if err != nil {
		fmt.Fprintf(c.stderr, "mcphost: %v\n", err)
		return nil, exitUsage
	}
	servers, err := mcphost.Parse(data)
	if err != nil {
		fmt.Fprintf(c.stderr, "mcphost: %s: %v\n", c.config, err)
		return nil, exitUsage
	}
	if len(servers) == 0 {
		fmt.Fprintf(c.stderr, "mcphost: %s has no [mcp.<name>] table\n", c.config)
		return nil, exitUsage
	}
	c.configs = servers
	if servers, c.reviews, err = c.reviewTables(ctx, servers); err != nil {
		fmt.Fprintf(c.stderr, "mcphost: %v\n", err)
		return nil, exitFail
	}
	opts.Worktree, opts.StateDir, opts.ConfigFile, opts.LockFile = c.worktree, c.state, c.config, c.lock
	if c.verbose {
		opts.Logger = slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	s, err := mcphost.Connect(ctx, servers, opts)
	if err != nil {
		fmt.Fprintf(c.stderr, "mcphost: %v\n", err)
		var ce *mcphost.ConfigError
		if errors.As(err, &ce) || errors.Is(err, mcphost.ErrStateReachable) {
			return nil, exitUsage
		}
		return nil, exitFail
	}
	return s, exitOK
}

func (c *cli) list(ctx context.Context, args []string) int {
	fs := c.flags("list", "list [-config F] [-worktree D] [-state D] [-lock F] [-json]",
		"  mcphost list -config examples/mcphost.toml\n  mcphost list -json | jq '.tools[] | select(.decision == \"allow\")'\n")
	asJSON := fs.Bool("json", false, "print one JSON object: tools, servers, notices")
	pos, err := parse(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) > 0 {
		fmt.Fprintf(c.stderr, "mcphost list: unexpected argument %q\n", pos[0])
		return exitUsage
	}
	s, code := c.connect(ctx, mcphost.Options{ReadOnlyState: true})
	if s == nil {
		return code
	}
	defer s.Close()
	if *asJSON {
		out := struct {
			Tools   []mcphost.Tool       `json:"tools"`
			Prompts []mcphost.Prompt     `json:"prompts"`
			Servers []mcphost.ServerInfo `json:"servers"`
			Reviews []tableReview        `json:"reviews"`
			Notices []string             `json:"notices"`
		}{s.AllTools(), s.Prompts(), c.servers(s), c.reviews, s.Notices()}
		if out.Notices == nil {
			out.Notices = []string{}
		}
		if out.Prompts == nil {
			out.Prompts = []mcphost.Prompt{}
		}
		if out.Reviews == nil {
			out.Reviews = []tableReview{}
		}
		if err := writeJSON(c.stdout, out); err != nil {
			fmt.Fprintf(c.stderr, "mcphost: %v\n", err)
			return exitFail
		}
		return exitOK
	}
	p := colorFor(c.stdout)
	writeList(c.stdout, s.AllTools(), s.Prompts(), c.servers(s), s.Notices(), p)
	if err := writeReviews(c.stdout, c.reviews, p); err != nil {
		fmt.Fprintf(c.stderr, "mcphost: %v\n", err)
		return exitFail
	}
	return exitOK
}

// servers is the session's servers and, in name order among them, the
// ones left out for review, as "unreviewed".
func (c *cli) servers(s *mcphost.Session) []mcphost.ServerInfo {
	out := s.Servers()
	for _, r := range c.reviews {
		out = append(out, mcphost.ServerInfo{Name: r.Server, State: stateUnreviewed, Confinement: "not started", Widens: []string{}})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// stateUnreviewed is the state list shows for a server whose table needs
// review.
const stateUnreviewed mcphost.ServerState = "unreviewed"

func (c *cli) check(ctx context.Context, args []string) int {
	fs := c.flags("check", "check [-config F] [-worktree D] [-state D] [-lock F]",
		"  mcphost check && echo 'every offered tool is as reviewed'\n")
	pos, err := parse(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) > 0 {
		fmt.Fprintf(c.stderr, "mcphost check: unexpected argument %q\n", pos[0])
		return exitUsage
	}
	s, code := c.connect(ctx, mcphost.Options{ReadOnlyState: true})
	if s == nil {
		return code
	}
	defer s.Close()
	code = exitOK
	for _, n := range s.Notices() {
		fmt.Fprintf(c.stdout, "notice: %s\n", visibleLines(n, "  "))
	}
	for _, r := range c.reviews {
		fmt.Fprintf(c.stdout, "server table [mcp.%s] is %s since its review and did not start: %s lies in %s, where servers can write; review it with: %s\n",
			r.Server, r.Status, c.config, r.Writable, r.Approve)
		code = exitFail
	}
	for _, srv := range s.Servers() {
		if srv.State != mcphost.ServerRunning {
			fmt.Fprintf(c.stdout, "server %s is %s: its tools could not be checked\n", srv.Name, srv.State)
			code = exitFail
		}
	}
	if err := s.StateError(); err != nil && c.lock != "" {
		fmt.Fprintf(c.stdout, "the lock cannot be used, so no review could be checked: %s\n", pin.Visible(err.Error()))
		code = exitFail
	} else if err != nil {
		fmt.Fprintf(c.stdout, "the reviewed-tools state cannot be read, so no review could be checked: %v\n", err)
		code = exitFail
	}
	if c.lock != "" {
		return c.checkLock(ctx, s, code)
	}
	// Everything offered reaches the model, allowed or not: each must be
	// as a person (or the agent's first sight of its server) recorded it.
	unreviewed := 0
	for _, t := range s.AllTools() {
		switch {
		case t.Withheld:
			fmt.Fprintf(c.stdout, "held: %s is new since its server's review and not offered until reviewed\n", t.Name)
		case !t.Offered():
		case t.Pin == mcphost.PinChanged:
			unreviewed++
			fmt.Fprintf(c.stdout, "changed: %s (%s) changed since its review\n", t.Name, pin.Visible(strings.Join(t.Changed, ", ")))
		case t.Pin == mcphost.PinNew && t.Decision == mcphost.Allow:
			unreviewed++
			fmt.Fprintf(c.stdout, "unreviewed: %s is allowed but has no review on record\n", t.Name)
		case t.Pin == mcphost.PinNew:
			unreviewed++
			fmt.Fprintf(c.stdout, "unreviewed: %s is offered (each call asks) but has no review on record\n", t.Name)
		}
	}
	for _, srv := range s.Servers() {
		if srv.Instructions != "" && srv.InstructionsPin != mcphost.PinSame {
			unreviewed++
			fmt.Fprintf(c.stdout, "%s: the instructions of %s are not as reviewed: see them with 'mcphost approve instructions:%s'\n", srv.InstructionsPin, srv.Name, srv.Name)
		}
	}
	for _, p := range s.Prompts() {
		if p.Pin != mcphost.PinSame {
			unreviewed++
			fmt.Fprintf(c.stdout, "%s: prompt %s of %s is not as reviewed: see it with 'mcphost approve prompt:%s/%s'\n", p.Pin, pin.Visible(p.Name), p.Server, p.Server, pin.Visible(p.Name))
		}
	}
	if unreviewed > 0 {
		fmt.Fprintf(c.stdout, "%d offered tool(s), instructions or prompts not as reviewed: see them with 'mcphost approve%s TOOL'\n", unreviewed, flagsUsed(fs))
		return exitFail
	}
	if code == exitOK {
		fmt.Fprintln(c.stdout, "ok: every offered tool is as reviewed")
	}
	return code
}

func (c *cli) approve(ctx context.Context, args []string) int {
	fs := c.flags("approve", "approve [-config F] [-worktree D] [-state D] [-lock F] [-yes] TOOL|SERVER|instructions:SERVER|prompt:SERVER/NAME...",
		"  mcphost approve mcp__notes__list_notes\n  mcphost approve -yes mcp__notes__list_notes mcp__notes__add_note\n"+
			"  mcphost approve -config mcphost.toml notes   # review the [mcp.notes] table of a config servers could write\n"+
			"  mcphost approve instructions:notes prompt:notes/summarize\n")
	yes := fs.Bool("yes", false, "record without asking")
	pos, err := parse(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) == 0 && c.lock != "" {
		return c.acceptLock(*yes, bufio.NewReader(c.stdin))
	}
	if len(pos) == 0 {
		fmt.Fprintln(c.stderr, "mcphost approve: name at least one TOOL (a model name such as mcp__notes__list_notes) or SERVER (a table such as notes)")
		return exitUsage
	}
	in := bufio.NewReader(c.stdin)
	var tables, tools []string
	for _, a := range pos {
		if isServerName(a) {
			tables = append(tables, a)
		} else {
			tools = append(tools, a)
		}
	}
	failed := false
	if len(tables) > 0 {
		failed = !c.approveTables(ctx, tables, *yes, func(q string) bool { return ask(in, c.stdout, q) })
	}
	if len(tools) == 0 {
		if failed {
			return exitFail
		}
		return exitOK
	}
	s, code := c.connect(ctx, mcphost.Options{ReadOnlyState: true})
	if s == nil {
		return code
	}
	defer s.Close()
	var approved []string
	for _, name := range tools {
		if server, ok := strings.CutPrefix(name, "instructions:"); ok {
			if !c.reviewInstructions(s, server, in, *yes) {
				failed = true
			}
			continue
		}
		if rest, ok := strings.CutPrefix(name, "prompt:"); ok {
			server, prompt, _ := strings.Cut(rest, "/")
			if !c.reviewPrompt(s, server, prompt, in, *yes) {
				failed = true
			}
			continue
		}
		t, ok := s.Tool(name)
		if !ok && c.lock != "" {
			if handled, ok := c.approveGone(ctx, s, name, *yes, in); handled {
				failed = failed || !ok
				continue
			}
		}
		if !ok {
			if r, gated := c.reviewOf(name); gated {
				fmt.Fprintf(c.stderr, "mcphost approve: %s: server table [mcp.%s] needs review first (it did not start): %s\n", pin.Visible(name), r.Server, r.Approve)
				failed = true
				continue
			}
			fmt.Fprintf(c.stderr, "mcphost approve: no tool named %q%s (see every tool with 'mcphost list%s')\n", pin.Visible(name), didYouMean(name, s.AllTools()), flagsUsed(fs))
			failed = true
			continue
		}
		if err := s.CanApprove(name); err != nil {
			fmt.Fprintf(c.stderr, "%s\n", pin.Visible(err.Error()))
			failed = true
			continue
		}
		fmt.Fprintf(c.stdout, "%s (server %s, tool %s, decision %s): %s\n", t.Name, t.Server, pin.Visible(t.Tool), t.Decision, t.Pin)
		if t.Withheld {
			fmt.Fprintf(c.stdout, "new since its server's review, and held from the model until recorded (new_tools = \"hold\")\n")
		}
		changes, err := s.Diff(name)
		if err != nil {
			fmt.Fprintf(c.stderr, "mcphost approve: %s: %s\n", name, pin.Visible(err.Error()))
			failed = true
			continue
		}
		switch {
		case len(changes) > 0:
			fmt.Fprintln(c.stdout, "changed since its review:")
			if err := pin.Format(c.stdout, changes); err != nil {
				fmt.Fprintf(c.stderr, "mcphost approve: %v\n", err)
				failed = true
				continue
			}
		case t.Pin == mcphost.PinSame:
			fmt.Fprintln(c.stdout, "unchanged since its review.")
		default:
			fmt.Fprintln(c.stdout, "not reviewed before; its whole definition:")
			all, err := pin.Diff(json.RawMessage(`{}`), t.Definition)
			if err == nil {
				err = pin.Format(c.stdout, all)
			}
			if err != nil {
				fmt.Fprintf(c.stderr, "mcphost approve: %v\n", err)
				failed = true
				continue
			}
		}
		if !*yes && !ask(in, c.stdout, fmt.Sprintf("Record %s as reviewed?", t.Name)) {
			fmt.Fprintf(c.stdout, "not recorded: %s\n", t.Name)
			failed = true
			continue
		}
		approved = append(approved, name)
	}
	for _, name := range approved {
		if err := s.Approve(name); err != nil {
			fmt.Fprintf(c.stderr, "mcphost approve: %s\n", pin.Visible(err.Error()))
			failed = true
			continue
		}
		if t, _ := s.Tool(name); t.Decision != mcphost.Allow && c.programChanged(s, t.Server) {
			fmt.Fprintf(c.stdout, "recorded: %s (each call still asks: the program of server %s changed since the lock's review; review it with: %s)\n", name, t.Server, c.approveCommand(t.Server))
		} else if t.Decision == mcphost.Allow {
			fmt.Fprintf(c.stdout, "recorded: %s (allowed: called without asking)\n", name)
		} else {
			fmt.Fprintf(c.stdout, "recorded: %s (each call still asks: it is not in allow)\n", name)
		}
	}
	if failed {
		return exitFail
	}
	return exitOK
}

// reviewInstructions shows a server's instructions as `approve` shows a
// tool, and records them if the person says so. It reports success.
func (c *cli) reviewInstructions(s *mcphost.Session, server string, in *bufio.Reader, yes bool) bool {
	diff, st, err := s.InstructionsReview(server)
	if err != nil {
		fmt.Fprintf(c.stderr, "mcphost approve: instructions:%s: %s\n", pin.Visible(server), pin.Visible(err.Error()))
		return false
	}
	fmt.Fprintf(c.stdout, "instructions of server %s: %s\n", server, st)
	switch st {
	case mcphost.PinSame:
		fmt.Fprintln(c.stdout, "unchanged since their review.")
	case mcphost.PinChanged:
		fmt.Fprint(c.stdout, "changed since their review:\n"+diff)
	default:
		fmt.Fprint(c.stdout, "not reviewed before; the whole text:\n"+diff)
	}
	if !yes && !ask(in, c.stdout, fmt.Sprintf("Record the instructions of %s as reviewed?", server)) {
		fmt.Fprintf(c.stdout, "not recorded: instructions:%s\n", server)
		return false
	}
	if err := s.ApproveInstructions(server); err != nil {
		fmt.Fprintf(c.stderr, "mcphost approve: %s\n", pin.Visible(err.Error()))
		return false
	}
	fmt.Fprintf(c.stdout, "recorded: instructions:%s (given to the agent for the model)\n", server)
	return true
}

// reviewPrompt shows a prompt as `approve` shows a tool, and records it if
// the person says so. It reports success.
func (c *cli) reviewPrompt(s *mcphost.Session, server, name string, in *bufio.Reader, yes bool) bool {
	target := "prompt:" + server + "/" + name
	diff, st, err := s.PromptReview(server, name)
	if err != nil {
		fmt.Fprintf(c.stderr, "mcphost approve: %s: %s\n", pin.Visible(target), pin.Visible(err.Error()))
		return false
	}
	fmt.Fprintf(c.stdout, "%s: %s\n", pin.Visible(target), st)
	switch st {
	case mcphost.PinSame:
		fmt.Fprintln(c.stdout, "unchanged since its review.")
	case mcphost.PinChanged:
		fmt.Fprint(c.stdout, "changed since its review:\n"+diff)
	default:
		fmt.Fprint(c.stdout, "not reviewed before; its whole definition:\n"+diff)
	}
	if !yes && !ask(in, c.stdout, fmt.Sprintf("Record %s as reviewed?", pin.Visible(target))) {
		fmt.Fprintf(c.stdout, "not recorded: %s\n", pin.Visible(target))
		return false
	}
	if err := s.ApprovePrompt(server, name); err != nil {
		fmt.Fprintf(c.stderr, "mcphost approve: %s\n", pin.Visible(err.Error()))
		return false
	}
	fmt.Fprintf(c.stdout, "recorded: %s\n", pin.Visible(target))
	return true
}

// ask reads a yes/no answer; anything but y or yes is no.
func ask(in *bufio.Reader, out io.Writer, question string) bool {
	fmt.Fprintf(out, "%s [y/N] ", question)
	line, err := in.ReadString('\n')
	if err != nil {
		fmt.Fprintln(out) // no answer (end of input) is no
	}
	a := strings.ToLower(strings.TrimSpace(line))
	return a == "y" || a == "yes"
}

func (c *cli) call(ctx context.Context, args []string) int {
	fs := c.flags("call", "call [-config F] [-worktree D] [-state D] [-lock F] TOOL [JSON-ARGS]",
		"  mcphost call mcp__notes__list_notes '{\"query\":\"groceries\"}'\n")
	timeout := fs.Duration("timeout", 0, "bound the whole call, approval included (default: the server's call_timeout)")
	pos, err := parse(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) < 1 || len(pos) > 2 {
		fmt.Fprintln(c.stderr, "mcphost call: name one TOOL and, optionally, its JSON arguments (put -- before arguments that start with -)")
		return exitUsage
	}
	name, argText := pos[0], "{}"
	if len(pos) == 2 {
		argText = pos[1]
	}
	if !json.Valid([]byte(argText)) {
		fmt.Fprintf(c.stderr, "mcphost call: JSON-ARGS is not valid JSON: %s\n", argText)
		return exitUsage
	}
	// The person running `call` is the approver: calling is their explicit
	// act. The session is read-only, so a changed tool is called this once
	// and still needs `mcphost approve` to be trusted for the agent.
	opts := mcphost.Options{ReadOnlyState: true, Approver: func(_ context.Context, req mcphost.ApprovalRequest) (mcphost.Verdict, error) {
		fmt.Fprintf(c.stderr, "mcphost: calling %s, which needs approval (%s), because you asked\n", req.Tool.Name, pin.Visible(req.Reason))
		if req.Tool.Pin == mcphost.PinChanged {
			// Said, not asked: the person asked for this call, but should
			// know what they are calling. Diff is escaped already.
			fmt.Fprintf(c.stderr, "%s\nnot recorded as reviewed: see 'mcphost approve %s'\n", strings.TrimSuffix(req.Diff, "\n"), req.Tool.Name)
		}
		return mcphost.ApproveOnce, nil
	}}
	progress := &progressPrinter{w: c.stderr, terminal: isTerminal(c.stderr)}
	opts.OnProgress = progress.print
	opts.Elicit = newElicitor(c.stdin, c.stderr, isTerminal(c.stdin), progress.done).elicit
	s, code := c.connect(ctx, opts)
	if s == nil {
		return code
	}
	defer s.Close()
	if _, ok := s.Tool(name); !ok {
		if r, gated := c.reviewOf(name); gated {
			fmt.Fprintf(c.stderr, "mcphost call: server table [mcp.%s] is %s since its review and did not start: %s lies in %s, where servers can write; review it with: %s\n",
				r.Server, r.Status, c.config, r.Writable, r.Approve)
			return exitFail
		}
		for _, n := range s.Notices() {
			fmt.Fprintf(c.stderr, "notice: %s\n", visibleLines(n, "  "))
		}
	}
	if *timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *timeout)
		defer cancel()
	}
	start := time.Now()
	res, err := s.Call(ctx, name, json.RawMessage(argText))
	progress.done()
	if err != nil {
		fmt.Fprintf(c.stderr, "mcphost call: %s\n", visibleLines(err.Error(), "  "))
		if errors.Is(err, mcphost.ErrUnknownTool) {
			fmt.Fprintf(c.stderr, "mcphost call: %s%s (see every tool with 'mcphost list%s')\n", pin.Visible(name), didYouMean(name, s.AllTools()), flagsUsed(fs))
		}
		return exitFail
	}
	if err := writeJSON(c.stdout, res); err != nil {
		fmt.Fprintf(c.stderr, "mcphost call: %v\n", err)
		return exitFail
	}
	if c.verbose {
		fmt.Fprintf(c.stderr, "mcphost: %s took %v\n", name, time.Since(start).Round(time.Millisecond))
	}
	if res.IsError {
		return exitFail
	}
	return exitOK
}

// reviewOf returns the review that kept the server of the tool model name
// from starting, if any.
func (c *cli) reviewOf(model string) (tableReview, bool) {
	for _, r := range c.reviews {
		if strings.HasPrefix(model, "mcp__"+strings.ReplaceAll(r.Server, "-", "_")+"__") {
			return r, true
		}
	}
	return tableReview{}, false
}

// parse parses args with fs, taking flags wherever they stand (mcphost
// approve TOOL -yes), not only before the first argument; after "--"
// everything is an argument. It returns the arguments.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// flagsUsed returns, quoted for a shell, the common flags the person set,
// so that a command suggested to them finds the same config and state.
func flagsUsed(fs *flag.FlagSet) string {
	var b strings.Builder
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "config", "worktree", "state":
			fmt.Fprintf(&b, " -%s %s", f.Name, shellQuote(f.Value.String()))
		}
	})
	return b.String()
}

// visibleLines is pin.Visible for text of several lines: each line is made
// visible on its own and the lines after the first are indented, so that
// a line break shows as one and a server's text cannot start a line of its
// own at the margin.
func visibleLines(s, indent string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = pin.Visible(l)
	}
	return strings.Join(lines, "\n"+indent)
}

// didYouMean returns ", did you mean X?" for the tools closest to name, or
// "" when none is close.
func didYouMean(name string, tools []mcphost.Tool) string {
	sug := suggest(name, tools)
	if len(sug) == 0 {
		return ": no tool has a name close to it"
	}
	return ": did you mean " + strings.Join(sug, " or ") + "?"
}

// suggest returns the tool names closest to name, best first: those within
// a few edits, or whose tool part is what was typed.
func suggest(name string, tools []mcphost.Tool) []string {
	type cand struct {
		name string
		d    int
	}
	var cs []cand
	limit := max(2, len(name)/4)
	for _, t := range tools {
		d := editDistance(name, t.Name)
		if t.Tool == name || strings.HasSuffix(name, "__"+t.Tool) || strings.HasSuffix(name, "."+t.Tool) {
			d = 0
		}
		if d <= limit {
			cs = append(cs, cand{t.Name, d})
		}
	}
	slices.SortStableFunc(cs, func(a, b cand) int { return a.d - b.d })
	var out []string
	for i := 0; i < len(cs) && i < 3; i++ {
		out = append(out, cs[i].name)
	}
	return out
}

// editDistance is the Levenshtein distance of a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func flagExit(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	return exitUsage
}
