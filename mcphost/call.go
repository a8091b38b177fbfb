package mcphost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost/mcphost/schema"
)

// maxDecisionRounds bounds how often a call re-decides because the tool
// changed under it (a server flapping its tools must not spin a call).
const maxDecisionRounds = 3

// Call calls a tool by its model name with the arguments the model sent (a
// JSON object; empty means {}). A denied tool is refused without contacting
// the server; a tool that needs approval goes to Options.Approver first.
// Arguments are mapped back from the strict form (nulls for optional fields
// removed) and checked against the tool's schema before the server sees
// them. The call is bounded by ctx and the server's call_timeout, and its
// result is cut to the server's max_output, with a notice in the result.
//
// A result with IsError set is returned with a nil error: the tool ran and
// reported failure, which the model should see. So is the error result
// that replaces one whose structuredContent does not fit the tool's
// outputSchema (or is missing), with a notice. Errors wrap ErrUnknownTool,
// ErrDenied, ErrNeedsApproval, ErrDeclined, ErrBadArguments, ErrServerGone,
// ErrTimeout, ErrClosed, or the context's error. Call is safe for concurrent
// use.
func (s *Session) Call(ctx context.Context, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	start := time.Now()
	res, rec, err := s.call(ctx, name, args)
	rec.Tool, rec.Duration, rec.Err = name, time.Since(start), err
	if res != nil {
		rec.IsError = res.IsError
	}
	// Boxing the attributes costs a handful of allocations per call even
	// when the handler drops the record, as the default one does. Info
	// asks its handler with context.Background too.
	if s.logger.Enabled(context.Background(), slog.LevelInfo) {
		s.logger.Info("tool call", "tool", name, "decision", rec.Decision, "duration", rec.Duration,
			"is_error", rec.IsError, "error", err)
	}
	if s.opts.OnCall != nil {
		s.opts.OnCall(rec)
	}
	if err != nil {
		return nil, &CallError{Tool: name, Err: err}
	}
	return res, nil
}

func (s *Session) call(ctx context.Context, name string, args json.RawMessage) (*mcp.CallToolResult, CallRecord, error) {
	var rec CallRecord
	// The call's clock: call_timeout bounds everything mcphost and the
	// server do for it (waiting for a re-list, writing the request, the
	// answer), but not the time a person takes to approve it.
	clk := callClock{start: time.Now()}
	for round := 0; ; round++ {
		if s.isClosed() {
			return nil, rec, ErrClosed
		}
		e, err := s.entry(ctx, name, &clk)
		if err != nil {
			return nil, rec, err
		}
		rec.Server, rec.Decision = e.Server, e.Decision
		if e.Decision == Deny {
			return nil, rec, fmt.Errorf("%w: [mcp.%s] denies %q", ErrDenied, e.Server, e.Tool.Tool)
		}
		if e.Withheld && !s.opts.ApproveHeld {
			// Not offered, so not the Approver's to decide: a person
			// reviews it first.
			return nil, rec, fmt.Errorf("%w: %s is held from the model until a person reviews it (%s): %s",
				ErrNeedsApproval, e.Name, heldReason(e), s.approveHint(e.Name))
		}
		serverArgs, err := e.closed.ForServer(args)
		switch {
		case errors.Is(err, ErrUncheckable):
			return nil, rec, err
		case err != nil:
			return nil, rec, fmt.Errorf("%w: %w", ErrBadArguments, err)
		}
		if e.Decision == Approval || e.Withheld {
			asked := time.Now()
			err := s.approve(ctx, e, serverArgs)
			clk.paused += time.Since(asked)
			if err != nil {
				return nil, rec, err
			}
		}
		// The tool may have changed while the person was asked: call only
		// the definition that was decided on.
		if cur, err := s.entry(ctx, name, &clk); err != nil {
			return nil, rec, err
		} else if cur.Digest != e.Digest || cur.srv != e.srv {
			if round+1 == maxDecisionRounds {
				return nil, rec, fmt.Errorf("%w: the tool kept changing while the call was decided; try again", ErrServerGone)
			}
			continue
		}
		res, err := s.send(ctx, e, serverArgs, &clk)
		return res, rec, err
	}
}

// callClock is one call's deadline: call_timeout from the call's start,
// moved on by the time spent asking the approver.
type callClock struct {
	start  time.Time
	paused time.Duration
}

// within returns ctx bounded by the call's deadline on srv.
func (c *callClock) within(ctx context.Context, srv *server) (context.Context, context.CancelFunc) {
	return context.WithDeadline(ctx, c.start.Add(c.paused+srv.cfg.CallTimeout))
}

// entry looks a tool up, after any pending re-list of its server, waiting
// for it no longer than the call's deadline.
func (s *Session) entry(ctx context.Context, name string, clk *callClock) (*toolEntry, error) {
	s.mu.RLock()
	e, ok := s.tools[name]
	s.mu.RUnlock()
	if !ok {
		// A server that is not running has no tools listed, but the name
		// says whose tool it was: that is the error to give.
		if server, _, ok := SplitModelName(name); ok {
			if srv := s.servers[server]; srv != nil && !srv.running() {
				_, err := srv.session()
				return nil, err
			}
		}
		return nil, fmt.Errorf("%w: no tool named %q (the model may only call the tools offered)", ErrUnknownTool, printable(name, 100))
	}
	var err error
	if e.srv.relistPending() {
		wctx, cancel := clk.within(ctx, e.srv)
		err = e.srv.listed(wctx)
		cancel()
	}
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return nil, ctx.Err()
	default:
		cfg := e.srv.cfg
		return nil, fmt.Errorf("%w: the tools of [mcp.%s] were being re-listed after notifications/tools/list_changed and did not settle within its call_timeout %v", ErrTimeout, cfg.Name, cfg.CallTimeout)
	}
	s.mu.RLock()
	e, ok = s.tools[name]
	s.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w: tool %q was withdrawn by its server", ErrUnknownTool, printable(name, 100))
	}
	return e, nil
}

// approve asks the Approver about one call.
func (s *Session) approve(ctx context.Context, e *toolEntry, args json.RawMessage) error {
	if s.opts.Approver == nil {
		return fmt.Errorf("%w: %s; no approver is set, so it cannot be called here (a person can run `%s`)",
			ErrNeedsApproval, errorReason(e), s.command("call", e.Name))
	}
	req := ApprovalRequest{Tool: e.Tool.clone(), Arguments: args, Reason: approvalReason(e)}
	changes, diff, err := reviewText(e.Pin, e.reviewed, e.Definition)
	if err != nil {
		// Fail closed: a person must not approve a change they cannot see.
		return fmt.Errorf("%w: %s, but what changed cannot be shown: %w", ErrNeedsApproval, req.Reason, err)
	}
	req.Changes, req.Diff = changes, diff
	v, err := s.opts.Approver(ctx, req)
	if err != nil {
		return fmt.Errorf("approver: %w", err)
	}
	switch v {
	case ApproveOnce:
	case ApproveAndReview:
		if e.Pin == PinSame || s.opts.ReadOnlyState {
			break // nothing to record, or not allowed to
		}
		// The person saw the tool as it is now and chose to review it:
		// the change or the new tool stops asking to be looked at.
		if err := s.recordReviews(ctx, []subject{toolReview(e).sub}); err != nil {
			s.addNotice(fmt.Sprintf("approved %s, but could not record the review: %v", e.Name, err))
		}
	default:
		return fmt.Errorf("%w: the approver declined (%s)", ErrDeclined, req.Reason)
	}
	return nil
}

// heldReason says why a tool is held.
func heldReason(e *toolEntry) string {
	switch {
	case e.Pin == PinChanged:
		// No field names: this error goes back to the model, and the names
		// are the server's (unreviewed) text. Notices and reviews name them.
		return fmt.Sprintf("it changed since its review (%d field(s))", len(e.Changed))
	case e.Pin == PinUnpinned:
		return "its review cannot be read or recorded"
	case e.srv.sess.lock != nil:
		return "the lock does not hold it"
	default:
		return fmt.Sprintf("[mcp.%s] listed it after its last review, and holds such tools (new_tools = \"hold\")", e.Server)
	}
}

// errorReason is approvalReason for an error, which goes back to the model:
// it names no field of the server's definition.
func errorReason(e *toolEntry) string {
	if e.Pin == PinChanged {
		return heldReason(e)
	}
	return approvalReason(e)
}

// approvalReason says, for a person (ApprovalRequest.Reason), why a call
// needs approval.
func approvalReason(e *toolEntry) string {
	switch {
	case e.Pin == PinChanged:
		return fmt.Sprintf("it changed since its review (%s)", describe(e.Changed))
	case e.unreviewed && e.srv.sess.lock != nil:
		return "the lock does not hold it"
	case e.unreviewed:
		return fmt.Sprintf("[mcp.%s] listed it after its last review, and no person has reviewed it since", e.Server)
	case e.srv.cfg.policy(e.Tool.Tool) == Allow:
		return "its review could not be read or recorded (see the notices)"
	default:
		return fmt.Sprintf("[mcp.%s] does not list it in allow", e.Server)
	}
}

// send makes the tools/call, by the call's deadline.
func (s *Session) send(ctx context.Context, e *toolEntry, args json.RawMessage, clk *callClock) (*mcp.CallToolResult, error) {
	srv := e.srv
	cs, err := srv.session()
	if err != nil {
		return nil, err
	}
	cctx, cancel := clk.within(ctx, srv)
	defer cancel()
	params := &mcp.CallToolParams{Name: e.Tool.Tool, Arguments: args}
	if s.opts.OnProgress != nil {
		token, done := s.progressToken(e)
		defer done()
		params.SetProgressToken(token)
	}
	srv.inflight.Add(1)
	defer srv.inflight.Add(-1)
	var res *mcp.CallToolResult
	if e.task {
		res, err = s.callTask(cctx, e, params)
	} else {
		// callTask's own errors bound what they quote of the server.
		res, err = cs.CallTool(cctx, params)
		err = fromServer(err)
	}
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case cctx.Err() != nil:
			if why := srv.stopped(); why != nil {
				return nil, fmt.Errorf("%w: no result within call_timeout %v of [mcp.%s], and mcphost stopped the server: %v", ErrTimeout, srv.cfg.CallTimeout, srv.cfg.Name, why)
			}
			return nil, fmt.Errorf("%w: no result within call_timeout %v of [mcp.%s]; the call was cancelled", ErrTimeout, srv.cfg.CallTimeout, srv.cfg.Name)
		case errors.Is(err, mcp.ErrConnectionClosed), errors.Is(err, io.EOF), srv.stopped() != nil, srv.dying():
			// The server died under the call, or mcphost stopped it
			// (its stdout broke a bound): report that, not its symptom
			// on the pipe.
			return nil, srv.goneError(err)
		}
		return nil, fmt.Errorf("server %s: %w", srv.cfg.Name, err)
	}
	if refused := s.checkOutput(e, res); refused != nil {
		return refused, nil
	}
	return cut(res, srv.cfg.MaxOutput, srv.cfg.Name), nil
}

// checkOutput checks a result against the tool's output schema, which was
// reviewed with the rest of its definition: a result that is not an error
// must carry structuredContent that fits it (MCP: a server that declares
// an output schema must provide structured results that conform), and an
// error result that carries any must too, or a server could pass anything
// as structuredContent by calling its result an error. A
// result that does not is not passed on: checkOutput returns the error
// result the model gets instead, and adds a notice; nil when the result
// keeps its contract (or the tool declares none). Neither says more of
// the server's output than where it does not fit and why, bounded.
func (s *Session) checkOutput(e *toolEntry, res *mcp.CallToolResult) *mcp.CallToolResult {
	if res == nil || res.IsError && res.StructuredContent == nil || e.output == nil && e.outputProblem == "" {
		return nil
	}
	var why string
	switch {
	case e.outputProblem != "":
		why = "its output schema cannot be checked"
	case res.StructuredContent == nil:
		why = "it has no structuredContent"
	default:
		b, err := json.Marshal(res.StructuredContent)
		if err == nil {
			err = e.output.Check(b)
		}
		var ae *schema.ArgumentError
		switch {
		case errors.As(err, &ae) && ae.Pointer != "":
			why = "structuredContent" + ae.Pointer + ": " + ae.Reason
		case errors.As(err, &ae):
			why = "structuredContent: " + ae.Reason
		case err != nil:
			why = "structuredContent: " + err.Error()
		}
	}
	if why == "" {
		return nil
	}
	why = printable(why, 300)
	s.addNotice(fmt.Sprintf("tool %s returned a result that does not match its output schema (%s); the model got an error instead", e.Name, why))
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(
		"[mcphost: the result of %s did not match its output schema (%s), so it was not passed on]", e.Name, why)}}}
}

// stopped returns why mcphost stopped the server, or nil.
func (srv *server) stopped() error {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return srv.stopErr
}

// dying reports whether the server's process has exited or exits within a
// moment: a call that failed on a broken pipe is about to see it.
func (srv *server) dying() bool {
	srv.mu.Lock()
	proc := srv.proc
	srv.mu.Unlock()
	if proc == nil {
		return true
	}
	select {
	case <-proc.Done():
		return true
	case <-time.After(200 * time.Millisecond):
		return false
	}
}

// goneError describes a server that died under a call, with its exit status
// when it can be had quickly. A server seen gone is published as exited
// before the call returns (exited, which its watcher runs too, a moment
// later): an agent told that the server exited finds it so in Servers.
func (srv *server) goneError(cause error) error {
	srv.mu.Lock()
	proc, stopped, gen := srv.proc, srv.stopErr, srv.gen
	srv.mu.Unlock()
	if stopped != nil {
		return fmt.Errorf("%w: mcphost stopped server %s: %v", ErrServerGone, srv.cfg.Name, stopped)
	}
	status := ""
	if proc != nil {
		select {
		case <-proc.Done():
			status = proc.ExitStatus()
			srv.exited(gen)
		case <-time.After(time.Second):
		}
	}
	if status == "" {
		return fmt.Errorf("%w: server %s: connection lost: %v", ErrServerGone, srv.cfg.Name, fromServer(cause))
	}
	return fmt.Errorf("%w: server %s exited (%s) during the call", ErrServerGone, srv.cfg.Name, status)
}

// cutAllowance is the most a result cut to max_output can exceed it by, its
// texts' JSON escapes aside: the result's envelope ({"content":[…]},
// isError, resultType), the framing of its first item, and mcphost's note, which is
// written to fit (cutNoteNames bounds what it lists).
const cutAllowance = 1024

// cutNoteNames is how many removed parts the note names; the rest it
// counts.
const cutNoteNames = 6

// textFrame is what a text item adds to the content array's JSON besides
// its text: a comma and {"type":"text","text":""}.
const textFrame = int64(len(`,{"type":"text","text":""}`))

// unfit is the size of a part that cannot be encoded, so never fits; sums
// are clamped to it so that they cannot overflow.
const unfit = int64(1) << 60

// cut bounds a result to limit bytes, whichever parts of it the agent
// passes on: a model's rendering reads the content, but a client may show
// or store the rest. A text counts its bytes (what the model reads, not
// their JSON escapes); every other part counts its JSON encoding: other
// content items, each item's _meta and annotations (and an embedded
// resource's _meta), structuredContent, and the result's _meta,
// requestState and inputRequests. Every item but the first also counts
// its framing in the JSON array, so that many empty items do not pass for
// nothing. The result's JSON is thus at most limit plus cutAllowance
// bytes, besides the escapes of its texts.
//
// A result that fits is returned as it is, not copied. Of a result that
// does not fit, the content is kept first, in order, as far as it fits;
// then, where they still fit, each kept item's annotations and _meta, in
// order, and the result's _meta, requestState and inputRequests. Text is
// cut at a rune boundary; any other part that does not fit is dropped
// whole, never cut mid-JSON. A last text item says that the result was cut
// and names what is missing, so the model knows it did not see everything.
func cut(res *mcp.CallToolResult, limit int64, server string) *mcp.CallToolResult {
	if res == nil {
		return &mcp.CallToolResult{}
	}
	// The sizes are not kept: a result that fits, the usual case, costs
	// no more than measuring it, and one with many items no memory per
	// item. A result that does not fit is measured again.
	total := int64(0)
	add := func(n int64) { total = min(total+n, unfit) }
	for i, c := range res.Content {
		_, size, meta, ann := measure(c, i == 0)
		add(size)
		add(meta)
		add(ann)
	}
	var structured, resMeta, state, inputs int64
	if res.StructuredContent != nil {
		structured = fieldSize("structuredContent", res.StructuredContent)
	}
	if len(res.Meta) > 0 {
		resMeta = fieldSize("_meta", res.Meta)
	}
	if res.RequestState != "" {
		state = fieldSize("requestState", res.RequestState)
	}
	if res.InputRequests != nil {
		inputs = fieldSize("inputRequests", res.InputRequests)
	}
	add(structured)
	add(resMeta)
	add(state)
	add(inputs)
	if total <= limit {
		return res
	}

	// The content comes first, as it is what the model reads; _meta and
	// annotations are for the client (the renderings for model APIs drop
	// them), so they get what the content leaves.
	var (
		gone    removed
		content []mcp.Content
		later   []pendingMeta
	)
	left := limit
	for i, c := range res.Content {
		bare, size, meta, ann := measure(c, i == 0)
		if size <= left {
			left -= size
			if meta > 0 || ann > 0 {
				later = append(later, pendingMeta{at: len(content), i: i, whole: true, meta: meta, ann: ann})
			}
			content = append(content, bare)
			continue
		}
		if t, ok := bare.(*mcp.TextContent); ok {
			n := left
			if i > 0 {
				n -= textFrame
			}
			if n > 0 {
				left = 0
				tc := *t
				tc.Text = textPrefix(t.Text, n)
				if meta > 0 || ann > 0 {
					later = append(later, pendingMeta{at: len(content), i: i, meta: meta, ann: ann})
				}
				content = append(content, &tc)
				gone.add("the end of item %d", i+1)
				continue
			}
		}
		gone.item(i + 1)
	}
	if res.StructuredContent != nil {
		if structured <= left {
			left -= structured
		} else {
			res.StructuredContent = nil
			gone.add("structuredContent")
		}
	}
	fits := func(n int64, what string, args ...any) bool {
		if n == 0 {
			return true
		}
		if n <= left {
			left -= n
			return true
		}
		gone.add(what, args...)
		return false
	}
	for _, p := range later {
		keepAnn := fits(p.ann, "annotations of item %d", p.i+1)
		keepMeta := fits(p.meta, "_meta of item %d", p.i+1)
		if p.whole && keepAnn && keepMeta {
			content[p.at] = res.Content[p.i]
			continue
		}
		withMeta(content[p.at], res.Content[p.i], keepMeta, keepAnn)
	}
	cutResultMeta(left, &res.Meta, &res.RequestState, &res.InputRequests, &gone)
	res.Content = append(content, &mcp.TextContent{Text: fmt.Sprintf(
		"[mcphost: this result was cut: the tool returned about %d bytes, more than the %d-byte max_output of [mcp.%s]; not shown: %s]",
		total, limit, server, gone.String())})
	return res
}

// cutResultMeta keeps a result's own _meta, requestState and
// inputRequests, in that order, where they fit in left bytes, and drops
// and names in gone those that do not. These are for the client, so a
// result's content or messages come first.
func cutResultMeta(left int64, meta *mcp.Meta, state *string, inputs *mcp.InputRequestMap, gone *removed) {
	if n := metaSize(*meta); n > left {
		*meta = nil
		gone.add("_meta of the result")
	} else {
		left -= n
	}
	if *state != "" {
		if n := fieldSize("requestState", *state); n > left {
			*state = ""
			gone.add("requestState")
		} else {
			left -= n
		}
	}
	if *inputs != nil {
		if n := fieldSize("inputRequests", *inputs); n > left {
			*inputs = nil
			gone.add("inputRequests")
		}
	}
}

// cutPromptExtras keeps a prompt's description, then its _meta,
// requestState and inputRequests, where they fit in the left bytes its
// messages leave, and names in gone those it drops.
func cutPromptExtras(res *mcp.GetPromptResult, left int64, gone *removed) {
	if res.Description != "" {
		if n := fieldSize("description", res.Description); n > left {
			res.Description = ""
			gone.add("the description")
		} else {
			left -= n
		}
	}
	cutResultMeta(left, &res.Meta, &res.RequestState, &res.InputRequests, gone)
}

// pendingMeta is a kept item whose metadata waits for what the content
// leaves: content[at] is res.Content[i] without it, whole or cut.
type pendingMeta struct {
	at, i     int
	whole     bool
	meta, ann int64
}

// removed names what cut removed, for its note: the first cutNoteNames
// parts, then how many more. A run of whole items dropped one after
// another is one part ("items 3–9"), as is usual past the cut.
type removed struct {
	names  []string
	more   int
	lo, hi int // the run of items dropped last, numbered from 1; none if hi is 0
}

// item adds item n, dropped whole.
func (r *removed) item(n int) {
	if r.hi > 0 && n == r.hi+1 {
		r.hi = n
		return
	}
	r.flush()
	r.lo, r.hi = n, n
}

func (r *removed) add(format string, args ...any) {
	r.flush()
	if len(r.names) == cutNoteNames {
		r.more++
		return
	}
	r.names = append(r.names, fmt.Sprintf(format, args...))
}

func (r *removed) flush() {
	lo, hi := r.lo, r.hi
	if hi == 0 {
		return
	}
	r.hi = 0 // before add, which flushes
	if lo == hi {
		r.add("item %d", lo)
	} else {
		r.add("items %d–%d", lo, hi)
	}
}

func (r *removed) String() string {
	r.flush()
	s := strings.Join(r.names, ", ")
	if r.more > 0 {
		s += fmt.Sprintf(" and %d more", r.more)
	}
	return s
}

// measure returns content item c without its _meta and annotations (c
// itself if it has neither, else a shallow copy), what that costs
// (including its framing unless it is the first item), and what its _meta
// and its annotations cost, 0 for none.
func measure(c mcp.Content, first bool) (bare mcp.Content, size, meta, ann int64) {
	bare, meta, ann = stripMeta(c)
	if t, ok := bare.(*mcp.TextContent); ok {
		size = int64(len(t.Text))
		if !first {
			size += textFrame
		}
		return bare, size, meta, ann
	}
	b, err := json.Marshal(bare)
	if err != nil {
		return bare, unfit, meta, ann
	}
	size = int64(len(b))
	if !first {
		size++ // the comma
	}
	return bare, size, meta, ann
}

// stripMeta returns c without its _meta and annotations, and what they
// cost; see measure. An embedded resource's own _meta goes with the
// item's: both are for the client.
func stripMeta(c mcp.Content) (bare mcp.Content, meta, ann int64) {
	switch c := c.(type) {
	case *mcp.TextContent:
		if len(c.Meta) == 0 && c.Annotations == nil {
			return c, 0, 0
		}
		cc := *c
		cc.Meta, cc.Annotations = nil, nil
		return &cc, metaSize(c.Meta), annSize(c.Annotations)
	case *mcp.ImageContent:
		if len(c.Meta) == 0 && c.Annotations == nil {
			return c, 0, 0
		}
		cc := *c
		cc.Meta, cc.Annotations = nil, nil
		return &cc, metaSize(c.Meta), annSize(c.Annotations)
	case *mcp.AudioContent:
		if len(c.Meta) == 0 && c.Annotations == nil {
			return c, 0, 0
		}
		cc := *c
		cc.Meta, cc.Annotations = nil, nil
		return &cc, metaSize(c.Meta), annSize(c.Annotations)
	case *mcp.ResourceLink:
		if len(c.Meta) == 0 && c.Annotations == nil {
			return c, 0, 0
		}
		cc := *c
		cc.Meta, cc.Annotations = nil, nil
		return &cc, metaSize(c.Meta), annSize(c.Annotations)
	case *mcp.EmbeddedResource:
		var rm mcp.Meta
		if c.Resource != nil {
			rm = c.Resource.Meta
		}
		if len(c.Meta) == 0 && len(rm) == 0 && c.Annotations == nil {
			return c, 0, 0
		}
		cc := *c
		cc.Meta, cc.Annotations = nil, nil
		if len(rm) > 0 {
			r := *c.Resource
			r.Meta = nil
			cc.Resource = &r
		}
		return &cc, metaSize(c.Meta) + metaSize(rm), annSize(c.Annotations)
	}
	// Another kind of item (tool_use and tool_result belong in sampling
	// messages, not here) counts whole, as content.
	return c, 0, 0
}

// withMeta gives kept, a copy stripMeta or cut made of orig, back orig's
// _meta (meta) and annotations (ann).
func withMeta(kept, orig mcp.Content, meta, ann bool) {
	switch o := orig.(type) {
	case *mcp.TextContent:
		k := kept.(*mcp.TextContent)
		if meta {
			k.Meta = o.Meta
		}
		if ann {
			k.Annotations = o.Annotations
		}
	case *mcp.ImageContent:
		k := kept.(*mcp.ImageContent)
		if meta {
			k.Meta = o.Meta
		}
		if ann {
			k.Annotations = o.Annotations
		}
	case *mcp.AudioContent:
		k := kept.(*mcp.AudioContent)
		if meta {
			k.Meta = o.Meta
		}
		if ann {
			k.Annotations = o.Annotations
		}
	case *mcp.ResourceLink:
		k := kept.(*mcp.ResourceLink)
		if meta {
			k.Meta = o.Meta
		}
		if ann {
			k.Annotations = o.Annotations
		}
	case *mcp.EmbeddedResource:
		k := kept.(*mcp.EmbeddedResource)
		if meta {
			k.Meta, k.Resource = o.Meta, o.Resource
		}
		if ann {
			k.Annotations = o.Annotations
		}
	}
}

func metaSize(m mcp.Meta) int64 {
	if len(m) == 0 {
		return 0
	}
	return fieldSize("_meta", m)
}

func annSize(a *mcp.Annotations) int64 {
	if a == nil {
		return 0
	}
	return fieldSize("annotations", a)
}

// fieldSize is what a field adds to its object's JSON: a comma, the quoted
// key, a colon and v's encoding.
func fieldSize(key string, v any) int64 {
	b, err := json.Marshal(v)
	if err != nil {
		return unfit
	}
	return int64(len(`,"":`) + len(key) + len(b))
}

// textPrefix returns the longest prefix of s of at most n bytes that does
// not end in a partial rune.
func textPrefix(s string, n int64) string {
	if int64(len(s)) <= n {
		return s
	}
	t := s[:n]
	for i := 0; i < utf8.UTFMax && len(t) > 0; i++ {
		if r, size := utf8.DecodeLastRuneInString(t); r != utf8.RuneError || size > 1 {
			break
		}
		t = t[:len(t)-1]
	}
	return t
}
