package mcphost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tasks: the go-sdk v1.8.0 speaks neither form, so mcphost sends the
// messages itself on the server's connection (tapConn.request). Protocol
// revision 2025-11-25 (where they are experimental): tools/call with a
// "task" member, then tasks/result, which the server answers once the task
// ends, tasks/get to follow its status, tasks/cancel when the caller gives
// up. Revision 2026-07-28 moved them into an extension; see tasksExt and
// callTaskExt.
const (
	// taskTTL is the time to live mcphost asks for a task's result: the
	// longest call_timeout it lets a server hold a result for.
	taskTTL = 10 * time.Minute
	// minTaskPoll and maxTaskPoll bound how often a task's status is
	// asked for, whatever pollInterval the server suggests.
	minTaskPoll = 500 * time.Millisecond
	maxTaskPoll = 10 * time.Second
	// taskPollMargin: no poll is made this close to a call's deadline.
	taskPollMargin = 250 * time.Millisecond
	// taskCancelTimeout bounds the tasks/cancel sent for a call given up.
	taskCancelTimeout = 5 * time.Second
)

// The forms of tasks mcphost speaks, by what the server negotiated.
const (
	// tasksCore: a server of exactly revision 2025-11-25, where tasks are
	// part of the protocol: tools/call with a "task" member, tasks/result.
	tasksCore = "2025-11-25"
	// tasksExt: a server of revision 2026-07-28 that offers the tasks
	// extension in the capabilities of its server/discover result. The
	// extension is declared again on each request (the client's
	// capabilities in _meta), and the server decides whether a tools/call
	// becomes a task (a result of resultType "task"), which is then
	// polled with tasks/get until its result comes inline; input it needs
	// on the way is given with tasks/update. There is no tasks/result.
	tasksExt = "io.modelcontextprotocol/tasks"
)

// taskForm returns the form of tasks the server negotiated (tasksCore or
// tasksExt), or "" if none: a tool that can only run as a task is then
// skipped, with a notice.
func (srv *server) taskForm() string {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	switch srv.protocol {
	case "2025-11-25":
		return tasksCore
	case "2026-07-28":
		if srv.cs == nil {
			return ""
		}
		// No settings are defined: an object says the server speaks it.
		if init := srv.cs.InitializeResult(); init != nil && init.Capabilities != nil {
			if _, ok := init.Capabilities.Extensions[tasksExt].(map[string]any); ok {
				return tasksExt
			}
		}
	}
	return ""
}

// noTasks says, for a notice, why a server has no tasks.
func noTasks(revision string) string {
	if revision == "2026-07-28" {
		return fmt.Sprintf("the server negotiated protocol revision %s and does not offer its tasks extension (%s)", revision, tasksExt)
	}
	return fmt.Sprintf("the protocol revision the server negotiated (%s) has no tasks", revision)
}

// negotiated returns the protocol revision the server negotiated.
func (srv *server) negotiated() string {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return srv.protocol
}

// task is the part of a task's state mcphost reads.
type task struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage"`
	PollInterval  *int64 `json:"pollInterval"`
}

func (t task) terminal() bool {
	return t.Status == "completed" || t.Status == "failed" || t.Status == "cancelled"
}

// callTask calls a task-only tool as a task, bounded by ctx (the call's
// deadline): it creates the task, follows its status (reported through
// OnProgress as messages, beside the server's own progress
// notifications), and returns its result. When ctx ends first, the task is
// cancelled.
func (s *Session) callTask(ctx context.Context, e *toolEntry, params *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	srv := e.srv
	form := srv.taskForm()
	if form == "" {
		return nil, fmt.Errorf("server %s: tool %s can only be called as a task, and %s", srv.cfg.Name, e.Name, noTasks(srv.negotiated()))
	}
	srv.mu.Lock()
	tap := srv.tap
	srv.mu.Unlock()
	if tap == nil {
		return nil, fmt.Errorf("%w: server %s has no connection", ErrServerGone, srv.cfg.Name)
	}
	tap.mu.Lock()
	conn := tap.conn
	tap.mu.Unlock()
	if conn == nil {
		return nil, fmt.Errorf("%w: server %s has no connection", ErrServerGone, srv.cfg.Name)
	}
	if form == tasksExt {
		return s.callTaskExt(ctx, e, conn, params)
	}
	req := map[string]any{"name": params.Name, "task": map[string]any{"ttl": taskTTL.Milliseconds()}}
	if params.Arguments != nil {
		req["arguments"] = params.Arguments
	}
	if len(params.Meta) > 0 {
		req["_meta"] = params.Meta
	}
	raw, err := conn.request(ctx, "tools/call", req)
	if err != nil {
		return nil, err
	}
	var created struct {
		Task task `json:"task"`
	}
	if err := json.Unmarshal(raw, &created); err != nil || created.Task.TaskID == "" {
		return nil, fmt.Errorf("server %s: tools/call as a task did not create a task (a result of %d bytes with no task id)", srv.cfg.Name, len(raw))
	}
	id := created.Task.TaskID
	done := false
	defer func() {
		if done || ctx.Err() == nil {
			return
		}
		// The caller gave up or call_timeout passed: the server should
		// stop the work.
		cctx, cancel := context.WithTimeout(context.Background(), taskCancelTimeout)
		defer cancel()
		if _, err := conn.request(cctx, "tasks/cancel", map[string]string{"taskId": id}); err != nil {
			s.logger.Warn("tasks/cancel failed", "server", srv.cfg.Name, "task", id, "error", err)
		}
	}()
	followCtx, stopFollow := context.WithCancel(ctx)
	defer stopFollow()
	go s.followTask(followCtx, conn, e, created.Task)
	raw, err = conn.request(ctx, "tasks/result", map[string]string{"taskId": id})
	if err != nil {
		return nil, err
	}
	done = true
	var res mcp.CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("server %s: the result of task %q is not a tool result: %w", srv.cfg.Name, printable(id, 40), err)
	}
	return &res, nil
}

// followTask asks for a task's status at its poll interval (bounded by
// minTaskPoll and maxTaskPoll) until it ends or ctx does, and reports each
// change of status through OnProgress.
func (s *Session) followTask(ctx context.Context, conn *tapConn, e *toolEntry, t task) {
	last := ""
	for {
		s.taskStatus(e, t, &last)
		if t.terminal() {
			return
		}
		if !pollWait(ctx, t.PollInterval) {
			return
		}
		raw, err := conn.request(ctx, "tasks/get", map[string]string{"taskId": t.TaskID})
		if err != nil {
			if !errors.Is(err, context.Canceled) {
				s.logger.Debug("tasks/get failed", "server", e.Server, "task", t.TaskID, "error", err)
			}
			return
		}
		var next task
		if json.Unmarshal(raw, &next) != nil {
			return
		}
		if next.TaskID == "" {
			next.TaskID = t.TaskID
		}
		t = next
	}
}

// taskStatus reports a task's status through OnProgress when it differs
// from the last one reported.
func (s *Session) taskStatus(e *toolEntry, t task, last *string) {
	if s.opts.OnProgress == nil || t.Status+"\x00"+t.StatusMessage == *last {
		return
	}
	*last = t.Status + "\x00" + t.StatusMessage
	msg := "task " + t.Status
	if t.StatusMessage != "" {
		msg += ": " + t.StatusMessage
	}
	s.opts.OnProgress(Progress{Tool: e.Name, Server: e.Server, Message: cutText(msg, maxProgressMessage)})
}

// pollWait waits the poll interval a server suggested (in milliseconds,
// bounded by minTaskPoll and maxTaskPoll), or until ctx ends: false then.
// A poll that would fall within taskPollMargin of ctx's deadline is not
// made (it waits for the deadline instead): a request still being written
// when the deadline passes reads as a server not taking its input
// (tapConn.Write), which stops it.
func pollWait(ctx context.Context, ms *int64) bool {
	wait := minTaskPoll
	if ms != nil {
		wait = min(max(time.Duration(*ms)*time.Millisecond, minTaskPoll), maxTaskPoll)
	}
	if d, ok := ctx.Deadline(); ok && time.Until(d) < wait+taskPollMargin {
		<-ctx.Done()
		return false
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// maxTaskInputRounds bounds the rounds of input a task call may ask for:
// input_required results of its tools/call before the task is created,
// and tasks/update answers while it runs.
const maxTaskInputRounds = 16

// maxTaskInputsPerRound bounds the requests of one round that are not
// answered yet: each may ask the person something.
const maxTaskInputsPerRound = 8

// extTask is a task as the tasks extension (2026-07-28) shows it: the
// result of a tools/call that created one (resultType "task"), or of
// tasks/get, with what its status carries inline.
type extTask struct {
	ResultType     string           `json:"resultType"`
	TaskID         string           `json:"taskId"`
	Status         string           `json:"status"`
	StatusMessage  string           `json:"statusMessage"`
	PollIntervalMs *int64           `json:"pollIntervalMs"`
	InputRequests  json.RawMessage  `json:"inputRequests"`
	RequestState   string           `json:"requestState"`
	Result         json.RawMessage  `json:"result"`
	Error          *json.RawMessage `json:"error"`
}

// extMeta is the _meta of each request of the tasks extension: a server of
// revision 2026-07-28 learns the client's revision, name and capabilities
// from every request, and may create a task (or answer tasks/*) only for
// a request whose capabilities declare the extension. They are the
// capabilities the go-sdk client declares (server.go), plus the extension.
func (s *Session) extMeta(params *mcp.CallToolParams) map[string]any {
	caps := &mcp.ClientCapabilities{}
	if s.opts.Elicit != nil || s.opts.ElicitURL != nil {
		caps.Elicitation = &mcp.ElicitationCapabilities{}
	}
	if s.opts.Elicit != nil {
		caps.Elicitation.Form = &mcp.FormElicitationCapabilities{}
	}
	if s.opts.ElicitURL != nil {
		caps.Elicitation.URL = &mcp.URLElicitationCapabilities{}
	}
	caps.AddExtension(tasksExt, nil)
	meta := map[string]any{}
	if params != nil {
		for k, v := range params.Meta {
			meta[k] = v // the progress token
		}
	}
	meta[mcp.MetaKeyProtocolVersion] = "2026-07-28"
	meta[mcp.MetaKeyClientInfo] = &mcp.Implementation{Name: "mcphost", Version: Version}
	meta[mcp.MetaKeyClientCapabilities] = caps
	return meta
}

// callTaskExt calls a task-only tool of a server that negotiated the tasks
// extension (2026-07-28), bounded by ctx: a tools/call declaring the
// extension (answering the input it asks for first, as any call's), then,
// if the server made it a task, tasks/get at the poll interval it
// suggests until the task ends, its result inline. Input the task asks for
// on the way is answered through the same gates as a call's and given
// with tasks/update. When ctx ends first, the task is cancelled.
func (s *Session) callTaskExt(ctx context.Context, e *toolEntry, conn *tapConn, params *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	srv := e.srv
	name := srv.cfg.Name
	req := map[string]any{"name": params.Name, "arguments": params.Arguments, "_meta": s.extMeta(params)}
	if params.Arguments == nil {
		req["arguments"] = map[string]any{}
	}
	var t extTask
	var raw json.RawMessage
	for round := 0; ; round++ {
		var err error
		raw, err = conn.request(ctx, "tools/call", req)
		if err != nil {
			return nil, err
		}
		t = extTask{}
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, fmt.Errorf("server %s: the result of tools/call is not an object: %w", name, err)
		}
		if t.ResultType != "input_required" {
			break
		}
		if round >= maxTaskInputRounds {
			return nil, fmt.Errorf("server %s: tools/call asked for input more than %d times", name, maxTaskInputRounds)
		}
		answers, err := s.taskInputs(ctx, e, t.InputRequests, nil)
		if err != nil {
			return nil, err
		}
		req["inputResponses"] = answers
		if t.RequestState != "" {
			req["requestState"] = t.RequestState
		} else {
			delete(req, "requestState")
		}
	}
	if t.ResultType != "task" {
		// The server is the one to decide: it answered at once.
		var res mcp.CallToolResult
		if err := json.Unmarshal(raw, &res); err != nil {
			return nil, fmt.Errorf("server %s: the result of tools/call is not a tool result: %w", name, err)
		}
		return &res, nil
	}
	if t.TaskID == "" {
		return nil, fmt.Errorf("server %s: tools/call made a task with no task id", name)
	}
	id := t.TaskID
	done := false
	defer func() {
		if done {
			return
		}
		// The caller gave up, call_timeout passed, or the call failed on
		// the way (an answer refused, a poll gone wrong): the server
		// should stop the work (it acknowledges; stopping is up to it).
		cctx, cancel := context.WithTimeout(context.Background(), taskCancelTimeout)
		defer cancel()
		if _, err := conn.request(cctx, "tasks/cancel", map[string]any{"taskId": id, "_meta": s.extMeta(nil)}); err != nil && !errors.Is(err, mcp.ErrConnectionClosed) {
			s.logger.Warn("tasks/cancel failed", "server", name, "task", id, "error", err)
		}
	}()
	last := ""
	answered := map[string]bool{} // the keys of inputRequests answered: each is asked once
	for round := 0; ; {
		s.taskStatus(e, task{Status: t.Status, StatusMessage: t.StatusMessage}, &last)
		switch t.Status {
		case "completed":
			done = true
			var res mcp.CallToolResult
			if len(t.Result) == 0 {
				return nil, fmt.Errorf("server %s: task %q completed with no result", name, printable(id, 40))
			}
			if err := json.Unmarshal(t.Result, &res); err != nil {
				return nil, fmt.Errorf("server %s: the result of task %q is not a tool result: %w", name, printable(id, 40), err)
			}
			return &res, nil
		case "failed":
			done = true
			var je struct {
				Code    int64  `json:"code"`
				Message string `json:"message"`
			}
			if t.Error != nil {
				json.Unmarshal(*t.Error, &je)
			}
			why := je.Message
			if why == "" {
				why = t.StatusMessage
			}
			return nil, fmt.Errorf("server %s: task %q failed: %s (code %d)", name, printable(id, 40), printable(why, 300), je.Code)
		case "cancelled":
			done = true
			return nil, fmt.Errorf("server %s: task %q was cancelled: %s", name, printable(id, 40), printable(t.StatusMessage, 300))
		case "input_required":
			answers, err := s.taskInputs(ctx, e, t.InputRequests, answered)
			if err != nil {
				return nil, err
			}
			if len(answers) > 0 {
				if round++; round > maxTaskInputRounds {
					return nil, fmt.Errorf("server %s: task %q asked for input more than %d times", name, printable(id, 40), maxTaskInputRounds)
				}
				if _, err := conn.request(ctx, "tasks/update", map[string]any{"taskId": id, "inputResponses": answers, "_meta": s.extMeta(nil)}); err != nil {
					return nil, err
				}
			}
		}
		if !pollWait(ctx, t.PollIntervalMs) {
			return nil, ctx.Err()
		}
		raw, err := conn.request(ctx, "tasks/get", map[string]any{"taskId": id, "_meta": s.extMeta(nil)})
		if err != nil {
			return nil, err
		}
		t = extTask{}
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, fmt.Errorf("server %s: the result of tasks/get for task %q is not a task: %w", name, printable(id, 40), err)
		}
	}
}

// taskInputs answers the input requests a task call asks for (those not
// in answered, which it then records), as the go-sdk answers a call's:
// elicitation through the same gates (srv.elicit), roots with the
// worktree alone. Anything else ends the call with an error.
func (s *Session) taskInputs(ctx context.Context, e *toolEntry, raw json.RawMessage, answered map[string]bool) (mcp.InputResponseMap, error) {
	var reqs mcp.InputRequestMap
	if err := json.Unmarshal(raw, &reqs); err != nil {
		return nil, fmt.Errorf("server %s: its input requests cannot be read: %v", e.Server, printable(err.Error(), 200))
	}
	var keys []string
	for key := range reqs {
		if !answered[key] {
			keys = append(keys, key)
		}
	}
	if len(keys) > maxTaskInputsPerRound {
		return nil, fmt.Errorf("server %s: a task asked for %d inputs at once, more than the %d mcphost answers in one round", e.Server, len(keys), maxTaskInputsPerRound)
	}
	slices.Sort(keys) // asked in a stable order
	answers := mcp.InputResponseMap{}
	for _, key := range keys {
		switch p := reqs[key].(type) {
		case *mcp.ElicitParams:
			if s.opts.Elicit == nil && s.opts.ElicitURL == nil {
				answers[key] = &mcp.ElicitResult{Action: string(ElicitDecline)}
				break
			}
			r, err := e.srv.elicit(ctx, &mcp.ElicitRequest{Params: p})
			if err != nil {
				return nil, err
			}
			answers[key] = r
		//lint:ignore SA1019 roots are answered as for a call (server.go)
		case *mcp.ListRootsParams:
			//lint:ignore SA1019 the worktree is the one root, as for a call
			answers[key] = &mcp.ListRootsResult{Roots: []*mcp.Root{{URI: (&url.URL{Scheme: "file", Path: s.worktree}).String(), Name: "worktree"}}}
		default:
			return nil, fmt.Errorf("server %s: a task asked for %T, which mcphost does not give", e.Server, reqs[key])
		}
		if answered != nil {
			answered[key] = true
		}
	}
	return answers, nil
}
