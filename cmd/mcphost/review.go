package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/mcphost/mcphost/mcphost"
	"github.com/mcphost/mcphost/pin"
)

// approve shows a person what the references name and records it if they
// say so. What a reference covers, whether it needs review and what
// recording it does is the library's (Session.Review, Session.Approve);
// approve only shows and asks.
func (c *cli) approve(ctx context.Context, args []string) int {
	fs := c.flags("approve", "approve [-config F] [-worktree D] [-state D] [-lock F] [-yes] SERVER|TOOL|table:SERVER|program:SERVER|instructions:SERVER|prompt:SERVER/NAME...",
		"  mcphost approve notes                       # the server whole: its table, tools, instructions, prompts\n"+
			"  mcphost approve mcp__notes__list_notes\n  mcphost approve -yes mcp__notes__list_notes mcp__notes__add_note\n"+
			"  mcphost approve instructions:notes prompt:notes/summarize\n"+
			"  mcphost approve -lock mcphost.lock           # trust the lock as it is, after reading it\n")
	yes := fs.Bool("yes", false, "record without asking")
	pos, err := parse(fs, args)
	if err != nil {
		return flagExit(err)
	}
	in := bufio.NewReader(c.stdin)
	if len(pos) == 0 && c.lock != "" {
		return c.acceptLock(ctx, *yes, in)
	}
	if len(pos) == 0 {
		fmt.Fprintln(c.stderr, "mcphost approve: name at least one SERVER (a table such as notes: the server whole) or TOOL (a model name such as mcp__notes__list_notes)")
		return exitUsage
	}
	s, code := c.connect(ctx, mcphost.Options{ReadOnlyState: true})
	if s == nil {
		return code
	}
	defer s.Close()
	failed := false
	done := map[string]bool{}
	for _, ref := range pos {
		if done[ref] {
			continue // recorded with a server named before it
		}
		if !c.approveRef(ctx, s, ref, *yes, in, done) {
			failed = true
		}
	}
	if failed {
		return exitFail
	}
	return exitOK
}

// approveRef reviews one reference. A server whose table was held from
// starting is reviewed in two steps of one pass: its table, then (started
// with the reviewed table) everything it offers.
func (c *cli) approveRef(ctx context.Context, s *mcphost.Session, ref string, yes bool, in *bufio.Reader, done map[string]bool) bool {
	rs, err := s.Review(context.Background(), ref)
	if err != nil {
		fmt.Fprintf(c.stderr, "mcphost approve: %s\n", visibleLines(err.Error(), "  "))
		if _, _, isTool := mcphost.SplitModelName(ref); isTool {
			fmt.Fprintf(c.stderr, "mcphost approve: %s%s (see every tool with '%s')\n", pin.Visible(ref), didYouMean(ref, s.AllTools()), strings.TrimSuffix(c.cmdline("list", ""), " "))
		}
		return false
	}
	held := false
	for _, srv := range s.Servers() {
		held = held || srv.Name == ref && srv.State == mcphost.ServerUnreviewed
	}
	if !c.confirm(ctx, s, ref, rs, yes, in, done) {
		return false
	}
	if !held {
		return true
	}
	// The table of a server held from starting was recorded: start it and
	// review the rest of it.
	if err := s.Restart(ctx, ref); err != nil {
		fmt.Fprintf(c.stderr, "mcphost approve: server %s did not start with its reviewed table, so nothing else of it could be reviewed: %s\n", ref, visibleLines(err.Error(), "  "))
		return false
	}
	rest, err := s.Review(context.Background(), ref)
	if err != nil {
		fmt.Fprintf(c.stderr, "mcphost approve: %s\n", visibleLines(err.Error(), "  "))
		return false
	}
	var left []mcphost.Review
	for _, r := range rest {
		if !done[r.Ref] {
			left = append(left, r)
		}
	}
	return c.confirm(ctx, s, ref, left, yes, in, done)
}

// confirm shows reviews and records them when the person says yes (or
// yes is set): one question for the lot.
func (c *cli) confirm(ctx context.Context, s *mcphost.Session, ref string, rs []mcphost.Review, yes bool, in *bufio.Reader, done map[string]bool) bool {
	if len(rs) == 0 {
		return true
	}
	for _, r := range rs {
		writeOneReview(c.stdout, s, r, c.lock != "")
	}
	question := fmt.Sprintf("Record %s as reviewed?", pin.Visible(ref))
	if len(rs) > 1 {
		question = fmt.Sprintf("Record all %d of %s as reviewed, as shown?", len(rs), pin.Visible(ref))
	}
	if !yes && !ask(in, c.stdout, question) {
		fmt.Fprintf(c.stdout, "not recorded: %s\n", pin.Visible(ref))
		return false
	}
	if err := s.Approve(ctx, rs...); err != nil {
		fmt.Fprintf(c.stderr, "mcphost approve: %s\n", visibleLines(err.Error(), "  "))
		return false
	}
	for _, r := range rs {
		done[r.Ref] = true
		fmt.Fprintf(c.stdout, "recorded: %s%s\n", pin.Visible(r.Ref), c.outcome(s, r))
	}
	return true
}

// outcome says what recording r changed for the agent.
func (c *cli) outcome(s *mcphost.Session, r mcphost.Review) string {
	switch {
	case r.Kind == "table":
		return fmt.Sprintf(" ([mcp.%s] starts as shown)", r.Server)
	case r.Pin == mcphost.PinGone:
		return " (its review is forgotten)"
	case r.Kind == "instructions":
		return " (given to the agent for the model)"
	case r.Kind != "tool":
		return ""
	}
	t, ok := s.Tool(r.Ref)
	switch {
	case !ok:
		return ""
	case t.Decision == mcphost.Allow:
		return " (allowed: called without asking)"
	case t.Pin == mcphost.PinSame:
		for _, srv := range s.Servers() {
			if srv.Name == t.Server && len(srv.ProgramChanged) > 0 {
				return fmt.Sprintf(" (each call still asks: the program of server %s changed since the lock's review; review it with: %s)", t.Server, c.cmdline("approve", "program:"+t.Server))
			}
		}
		return " (each call still asks: it is not in allow)"
	}
	return ""
}

// writeOneReview shows one review: what it is, how it compares with its
// review, and the text (already escaped by the library).
func writeOneReview(w io.Writer, s *mcphost.Session, r mcphost.Review, lock bool) {
	since := "its review"
	if lock {
		since = "the lock's review"
	}
	whole := map[string]string{"instructions": "the whole text", "program": "its files"}[r.Kind]
	if whole == "" {
		whole = "its whole definition"
	}
	head := map[mcphost.PinStatus]string{
		mcphost.PinSame:     "unchanged since " + since + ".",
		mcphost.PinChanged:  "changed since " + since + ":",
		mcphost.PinNew:      "not reviewed before; " + whole + ":",
		mcphost.PinUnpinned: "its review cannot be read; " + whole + ":",
		mcphost.PinGone:     "gone:",
	}[r.Pin]
	if r.Kind == "instructions" && r.Pin == mcphost.PinChanged {
		head = "changed since their review:"
		if lock {
			head = "changed since the lock's review:"
		}
	}
	fmt.Fprintf(w, "%s (%s of server %s): %s\n", pin.Visible(r.Ref), r.Kind, r.Server, head)
	if t, ok := s.Tool(r.Ref); ok && r.Kind == "tool" && t.Withheld {
		fmt.Fprintln(w, "  (held from the model until recorded)")
	}
	if r.Text != "" {
		for _, line := range strings.SplitAfter(r.Text, "\n") {
			if line != "" {
				fmt.Fprint(w, "  "+line)
			}
		}
	}
}

// acceptLock shows the lock as a review (every table, program, tool,
// instructions and prompt, whole or as a diff from its committed version)
// and records its content as trusted by this person if they say so.
func (c *cli) acceptLock(ctx context.Context, yes bool, in *bufio.Reader) int {
	var servers []mcphost.ServerConfig
	if loaded, err := mcphost.Load(c.config); err == nil {
		servers = loaded
	}
	c.awaitSignals() // reading the lock runs git
	r, err := mcphost.ReviewLock(ctx, c.lock, servers, mcphost.Options{Worktree: c.worktree, StateDir: c.state})
	if err != nil {
		fmt.Fprintf(c.stderr, "mcphost approve: %s\n", visibleLines(err.Error(), "  "))
		return exitFail
	}
	fmt.Fprintf(c.stdout, "the lock %s (%s), compared with %s:\n%s", c.lock, r.Digest, r.Against, r.Text)
	if !yes && !ask(in, c.stdout, fmt.Sprintf("Trust %s as shown?", c.lock)) {
		fmt.Fprintf(c.stdout, "not recorded: %s\n", c.lock)
		return exitFail
	}
	if err := r.Accept(); err != nil {
		fmt.Fprintf(c.stderr, "mcphost approve: %s\n", visibleLines(err.Error(), "  "))
		return exitFail
	}
	fmt.Fprintf(c.stdout, "recorded: %s is trusted as shown\n", c.lock)
	return exitOK
}
