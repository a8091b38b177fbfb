package mcphost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tasks (protocol revision 2025-11-25, where they are experimental): the
// go-sdk v1.8.0 does not speak them, so mcphost sends the messages itself
// on the server's connection (tapConn.request): tools/call with a "task"
// member, then tasks/result, which the server answers once the task ends,
// tasks/get to follow its status, tasks/cancel when the caller gives up.
const (
	// taskTTL is the time to live mcphost asks for a task's result: the
	// longest call_timeout it lets a server hold a result for.
	taskTTL = 10 * time.Minute
	// minTaskPoll and maxTaskPoll bound how often a task's status is
	// asked for, whatever pollInterval the server suggests.
	minTaskPoll = 500 * time.Millisecond
	maxTaskPoll = 10 * time.Second
	// taskCancelTimeout bounds the tasks/cancel sent for a call given up.
	taskCancelTimeout = 5 * time.Second
)

// tasksIn reports whether a protocol revision has the tasks mcphost speaks:
// exactly 2025-11-25's (tasks/result). The 2026-07-28 revision moved tasks
// into an extension (io.modelcontextprotocol/tasks: tasks/get polling,
// tasks/update, no tasks/result) that mcphost does not speak yet, so a tool
// that can only run as a task is skipped, with a notice, on such a server.
func tasksIn(revision string) bool { return revision == "2025-11-25" }

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
		if s.opts.OnProgress != nil && t.Status+t.StatusMessage != last {
			last = t.Status + t.StatusMessage
			msg := "task " + t.Status
			if t.StatusMessage != "" {
				msg += ": " + t.StatusMessage
			}
			s.opts.OnProgress(Progress{Tool: e.Name, Server: e.Server, Message: cutText(msg, maxProgressMessage)})
		}
		if t.terminal() {
			return
		}
		wait := minTaskPoll
		if t.PollInterval != nil {
			wait = min(max(time.Duration(*t.PollInterval)*time.Millisecond, minTaskPoll), maxTaskPoll)
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
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
