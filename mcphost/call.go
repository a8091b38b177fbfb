package mcphost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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
// reported failure, which the model should see. Errors wrap ErrUnknownTool,
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
		if e.Withheld {
			// Not offered, so not the Approver's to decide: a person
			// reviews it first.
			return nil, rec, fmt.Errorf("%w: [mcp.%s] listed %q after its last review and holds such tools until a person reviews them (new_tools = \"hold\"): run `mcphost approve %s`",
				ErrNeedsApproval, e.Server, e.Tool.Tool, e.Name)
		}
		serverArgs, err := e.closed.ForServer(args)
		switch {
		case errors.Is(err, ErrUncheckable):
			return nil, rec, err
		case err != nil:
			return nil, rec, fmt.Errorf("%w: %w", ErrBadArguments, err)
		}
		if e.Decision == Approval {
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
		return fmt.Errorf("%w: %s; no approver is set, so it cannot be called here (a person can run `mcphost call %s`)",
			ErrNeedsApproval, approvalReason(e), e.Name)
	}
	req := ApprovalRequest{Tool: e.Tool.clone(), Arguments: args, Reason: approvalReason(e)}
	changes, diff, err := s.reviewText(e)
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
		if err := s.review(e); err != nil {
			s.addNotice(fmt.Sprintf("approved %s, but could not record the review: %v", e.Name, err))
		}
	default:
		return fmt.Errorf("%w: the approver declined (%s)", ErrDeclined, req.Reason)
	}
	return nil
}

func approvalReason(e *toolEntry) string {
	switch {
	case e.Pin == PinChanged:
		return fmt.Sprintf("it changed since its review (%s)", describe(e.Changed))
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
		res, err = cs.CallTool(cctx, params)
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
	return cut(res, srv.cfg.MaxOutput, srv.cfg.Name), nil
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
// when it can be had quickly.
func (srv *server) goneError(cause error) error {
	srv.mu.Lock()
	proc, stopped := srv.proc, srv.stopErr
	srv.mu.Unlock()
	if stopped != nil {
		return fmt.Errorf("%w: mcphost stopped server %s: %v", ErrServerGone, srv.cfg.Name, stopped)
	}
	status := ""
	if proc != nil {
		select {
		case <-proc.Done():
			status = proc.ExitStatus()
		case <-time.After(time.Second):
		}
	}
	if status == "" {
		return fmt.Errorf("%w: server %s: connection lost: %v", ErrServerGone, srv.cfg.Name, cause)
	}
	return fmt.Errorf("%w: server %s exited (%s) during the call", ErrServerGone, srv.cfg.Name, status)
}

// cut bounds a result to limit bytes of content: text is cut at a rune
// boundary, other content that does not fit is dropped, and a text notice
// says so, so the model knows it did not see everything.
func cut(res *mcp.CallToolResult, limit int64, server string) *mcp.CallToolResult {
	if res == nil {
		return &mcp.CallToolResult{}
	}
	left := limit
	total := int64(0)
	cutAny := false
	// kept is made at the first item cut: until then it is
	// res.Content[:i], and a result that fits, the usual case, is
	// returned without copying.
	var kept []mcp.Content
	drop := func(i int) {
		if !cutAny {
			cutAny = true
			kept = append(make([]mcp.Content, 0, len(res.Content)+1), res.Content[:i]...)
		}
	}
	for i, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			n := int64(len(c.Text))
			total += n
			if n <= left {
				left -= n
				if cutAny {
					kept = append(kept, c)
				}
				continue
			}
			drop(i)
			if left > 0 {
				t := c.Text[:left]
				for i := 0; i < utf8.UTFMax && len(t) > 0; i++ {
					if r, size := utf8.DecodeLastRuneInString(t); r != utf8.RuneError || size > 1 {
						break
					}
					t = t[:len(t)-1]
				}
				cc := *c
				cc.Text = t
				kept = append(kept, &cc)
				left = 0
			}
		default:
			b, err := json.Marshal(c)
			n := int64(len(b))
			total += n
			if err != nil || n > left {
				drop(i)
				continue
			}
			left -= n
			if cutAny {
				kept = append(kept, c)
			}
		}
	}
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		total += int64(len(b))
		if err != nil || int64(len(b)) > left {
			drop(len(res.Content))
			res.StructuredContent = nil
		}
	}
	if !cutAny {
		return res
	}
	res.Content = append(kept, &mcp.TextContent{Text: fmt.Sprintf(
		"[mcphost: this result was cut: the tool returned about %d bytes, more than the %d-byte max_output of [mcp.%s]; what is missing was not shown]",
		total, limit, server)})
	return res
}
