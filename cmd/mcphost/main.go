// Command mcphost shows a person what a coding agent's MCP servers offer
// and records their review of it.
//
//	mcphost list    [-config F] [-worktree D] [-state D] [-lock F] [-json]
//	mcphost approve [-config F] [-worktree D] [-state D] [-lock F] [-yes] SERVER|TOOL|table:SERVER|program:SERVER|instructions:SERVER|prompt:SERVER/NAME...
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
	"strings"
	"syscall"
	"time"

	"github.com/mcphost/mcphost/internal/shellquote"
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
	//
	// Catching them starts a thread, which costs about a millisecond on a
	// slow machine: it is done beside parsing the flags and loading the
	// config, and a verb waits for it (awaitSignals) before it starts
	// servers or other programs.
	ctx, cancel := context.WithCancel(context.Background())
	caught := make(chan struct{})
	go func() {
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
		close(caught)
		<-sigs
		signal.Stop(sigs)
		cancel()
	}()
	c := &cli{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, signalsCaught: caught}
	os.Exit(c.run(ctx, os.Args[1:]))
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
	// signalsCaught, when not nil, is closed once SIGINT and SIGTERM are
	// caught (awaitSignals).
	signalsCaught <-chan struct{}
}

const usage = `mcphost shows what a coding agent's MCP servers offer, and records a person's review.

Usage:
  mcphost list    [-config F] [-worktree D] [-state D] [-lock F] [-json]
  mcphost approve [-config F] [-worktree D] [-state D] [-lock F] [-yes] SERVER|TOOL|table:SERVER|program:SERVER|instructions:SERVER|prompt:SERVER/NAME...
  mcphost approve -lock F [-yes]        (accept the lock as it is)
  mcphost call    [-config F] [-worktree D] [-state D] [-lock F] TOOL [JSON-ARGS]
  mcphost check   [-config F] [-worktree D] [-state D] [-lock F]
  mcphost import  FILE|-                (print another client's server config as [mcp.<name>] tables)
  mcphost version

Run 'mcphost VERB -h' for a verb's flags and examples.
Exit codes: 0 ok; 1 failed (check: an offered tool is not as reviewed); 2 usage or config error.
`

// run runs one invocation of mcphost with args (the verb first) and the
// given streams, and returns its exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c := &cli{stdin: stdin, stdout: stdout, stderr: stderr}
	return c.run(ctx, args)
}

// awaitSignals returns once SIGINT and SIGTERM are caught (main catches
// them beside the verb's first steps). A verb calls it before it starts
// servers or other programs, which a signal must not leave behind.
func (c *cli) awaitSignals() {
	if c.signalsCaught != nil {
		<-c.signalsCaught
	}
}

// run runs one invocation with c's streams.
func (c *cli) run(ctx context.Context, args []string) int {
	stdout, stderr := c.stdout, c.stderr
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
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
	case "import":
		return c.importConfig(ctx, rest)
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

// connect loads the config and starts its servers. Which tables may start
// (a config that servers could write starts only reviewed ones), what is
// trusted and what is held is the library's to decide: the CLI prints it.
func (c *cli) connect(ctx context.Context, opts mcphost.Options) (*mcphost.Session, int) {
	servers, err := mcphost.Load(c.config)
	if err != nil {
		fmt.Fprintf(c.stderr, "mcphost: %s\n", visibleLines(strings.TrimPrefix(err.Error(), "mcphost: "), "  "))
		return nil, exitUsage
	}
	if len(servers) == 0 {
		fmt.Fprintf(c.stderr, "mcphost: %s has no [mcp.<name>] table\n", c.config)
		return nil, exitUsage
	}
	opts.Worktree, opts.StateDir, opts.ConfigFile, opts.LockFile = c.worktree, c.state, c.config, c.lock
	c.awaitSignals()
	if c.verbose {
		opts.Logger = slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	s, err := mcphost.Connect(ctx, servers, opts)
	if err != nil {
		fmt.Fprintf(c.stderr, "mcphost: %s\n", visibleLines(strings.TrimPrefix(err.Error(), "mcphost: "), "  "))
		var ce *mcphost.ConfigError
		if errors.As(err, &ce) || errors.Is(err, mcphost.ErrStateReachable) {
			return nil, exitUsage
		}
		return nil, exitFail
	}
	return s, exitOK
}

// heldTables are the reviews of the tables that did not start for want of
// a person's review.
func heldTables(s *mcphost.Session) []mcphost.Review {
	out := []mcphost.Review{}
	held := map[string]bool{}
	for _, srv := range s.Servers() {
		if srv.State == mcphost.ServerUnreviewed {
			held[srv.Name] = true
		}
	}
	if len(held) == 0 {
		// Every table is reviewed: no review to compute (they cost a
		// fourth of a millisecond per server, on every list).
		return out
	}
	for _, r := range s.Pending(context.Background()) {
		if r.Kind == "table" && held[r.Server] {
			out = append(out, r)
		}
	}
	return out
}

func (c *cli) list(ctx context.Context, args []string) int {
	fs := c.flags("list", "list [-config F] [-worktree D] [-state D] [-lock F] [-json]",
		"  mcphost list -config examples/mcphost.toml\n  mcphost list -json | jq '.tools[] | select(.decision == \"allow\")'\n")
	asJSON := fs.Bool("json", false, "print one JSON object: tools, prompts, servers, reviews (tables held for review), notices")
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
	held := heldTables(s)
	if *asJSON {
		tools := s.AllTools()
		cc := contextCosts(tools)
		out := struct {
			Tools   []mcphost.Tool       `json:"tools"`
			Prompts []mcphost.Prompt     `json:"prompts"`
			Servers []mcphost.ServerInfo `json:"servers"`
			Reviews []mcphost.Review     `json:"reviews"`
			Notices []string             `json:"notices"`
			// Context is what tool definitions cost in the model's
			// context per provider profile (estimates): per tool (denied
			// and held ones priced as if offered), per server and in all
			// for the offered ones.
			Context struct {
				Tools   map[string]profileCost `json:"tools"`
				Servers map[string]profileCost `json:"servers"`
				Total   profileCost            `json:"total"`
			} `json:"context"`
		}{Tools: tools, Prompts: s.AllPrompts(), Servers: s.Servers(), Reviews: held, Notices: s.Notices()}
		out.Context.Tools, out.Context.Servers, out.Context.Total = cc.tools, cc.servers, cc.total
		if out.Notices == nil {
			out.Notices = []string{}
		}
		if out.Prompts == nil {
			out.Prompts = []mcphost.Prompt{}
		}
		if err := writeJSON(c.stdout, out); err != nil {
			fmt.Fprintf(c.stderr, "mcphost: %v\n", err)
			return exitFail
		}
		return exitOK
	}
	p := colorFor(c.stdout)
	writeList(c.stdout, s.AllTools(), s.AllPrompts(), s.Servers(), s.Notices(), p)
	writeReviews(c.stdout, held, p)
	return exitOK
}

func (c *cli) check(ctx context.Context, args []string) int {
	fs := c.flags("check", "check [-config F] [-worktree D] [-state D] [-lock F]",
		"  mcphost check && echo 'everything the model reads is as reviewed'\n")
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
	for _, n := range s.Notices() {
		fmt.Fprintf(c.stdout, "notice: %s\n", visibleLines(n, "  "))
	}
	what := "the reviewed-tools state"
	if c.lock != "" {
		what = "the lock"
	}
	err = s.Check(ctx)
	var ce *mcphost.CheckError
	if err != nil && !errors.As(err, &ce) {
		fmt.Fprintf(c.stdout, "check: %s\n", pin.Visible(err.Error()))
		return exitFail
	}
	if ce == nil {
		if c.lock != "" {
			fmt.Fprintf(c.stdout, "ok: every server and everything it offers is as the lock %s recorded\n", c.lock)
		} else {
			fmt.Fprintln(c.stdout, "ok: everything the model reads is as reviewed")
		}
		return exitOK
	}
	for _, srv := range ce.Failed {
		fmt.Fprintf(c.stdout, "server %s is %s: its tools could not be checked\n", srv.Name, srv.State)
	}
	if ce.State != nil {
		fmt.Fprintf(c.stdout, "%s cannot be read or trusted, so no review could be checked: %s\n", what, pin.Visible(ce.State.Error()))
	}
	for _, r := range ce.Pending {
		fmt.Fprintf(c.stdout, "%s; review it with: %s\n", pendingLine(s, r, c.lock != ""), pin.Visible(r.Approve))
	}
	if len(ce.Pending) > 0 {
		fmt.Fprintf(c.stdout, "%d thing(s) not as reviewed in %s\n", len(ce.Pending), what)
	}
	return exitFail
}

// pendingLine says, for check, what is not as reviewed.
func pendingLine(s *mcphost.Session, r mcphost.Review, lock bool) string {
	fields := ""
	if len(r.Changed) > 0 {
		fields = " (" + pin.Visible(strings.Join(r.Changed, ", ")) + ")"
	}
	noReview, since := "has no review on record", "its review"
	if lock {
		noReview, since = "is not in the lock", "the lock's review"
	}
	switch r.Kind {
	case "table":
		if r.Pin == mcphost.PinChanged {
			return fmt.Sprintf("table changed: [mcp.%s]%s differs from %s", r.Server, fields, since)
		}
		return fmt.Sprintf("%s: server table [mcp.%s] %s", r.Pin, r.Server, noReview)
	case "program":
		if r.Pin == mcphost.PinChanged {
			return fmt.Sprintf("program changed: server %s: %s", r.Server, pin.Visible(strings.Join(strings.Fields(r.Text), " ")))
		}
		return fmt.Sprintf("%s: the program of server %s %s", r.Pin, r.Server, noReview)
	case "instructions":
		return fmt.Sprintf("%s: the instructions of %s are not as reviewed", r.Pin, r.Server)
	case "prompt":
		return fmt.Sprintf("%s: %s is not as reviewed", r.Pin, pin.Visible(r.Ref))
	}
	t, _ := s.Tool(r.Ref)
	switch {
	case r.Pin == mcphost.PinGone && lock:
		return fmt.Sprintf("gone: %s is in the lock but server %s no longer offers it", pin.Visible(r.Ref), r.Server)
	case r.Pin == mcphost.PinGone:
		return fmt.Sprintf("gone: %s was reviewed, but server %s no longer offers it", pin.Visible(r.Ref), r.Server)
	case r.Pin == mcphost.PinChanged:
		return fmt.Sprintf("changed: %s%s changed since %s and is held from the model", r.Ref, fields, since)
	case t.Withheld:
		return fmt.Sprintf("held: %s %s and is not offered to the model until reviewed", r.Ref, noReview)
	case t.Decision == mcphost.Allow:
		return fmt.Sprintf("unreviewed: %s is allowed but %s", r.Ref, noReview)
	}
	return fmt.Sprintf("unreviewed: %s is offered (each call asks) but %s", r.Ref, noReview)
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
	opts := mcphost.Options{ReadOnlyState: true, ApproveHeld: true, Approver: func(_ context.Context, req mcphost.ApprovalRequest) (mcphost.Verdict, error) {
		fmt.Fprintf(c.stderr, "mcphost: calling %s, which needs approval (%s), because you asked\n", req.Tool.Name, pin.Visible(req.Reason))
		if req.Tool.Pin == mcphost.PinChanged || req.Tool.Withheld {
			// Said, not asked: the person asked for this call, but should
			// know what they are calling. Diff is escaped already.
			fmt.Fprintf(c.stderr, "%s\nnot recorded as reviewed: see '%s'\n", strings.TrimSuffix(req.Diff, "\n"), c.cmdline("approve", req.Tool.Name))
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
			fmt.Fprintf(c.stderr, "mcphost call: %s%s (see every tool with '%s')\n", pin.Visible(name), didYouMean(name, s.AllTools()), c.cmdline("list", ""))
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

// cmdline is the mcphost command line of verb with arg that finds the same
// config, worktree, state and lock as this invocation.
func (c *cli) cmdline(verb, arg string) string {
	args := []string{"mcphost", verb}
	for _, f := range []struct{ name, value, def string }{{"config", c.config, "mcphost.toml"}, {"worktree", c.worktree, "."}, {"state", c.state, ""}, {"lock", c.lock, ""}} {
		if f.value != f.def {
			args = append(args, "-"+f.name, shellquote.Quote(f.value))
		}
	}
	if arg != "" {
		args = append(args, shellquote.Quote(arg))
	}
	return strings.Join(args, " ")
}
