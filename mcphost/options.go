package mcphost

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/mcphost/mcphost/pin"
)

// DefaultCloseGrace is how long Close lets a server exit on its own after
// closing its stdin, before it kills every process the server started.
const DefaultCloseGrace = 2 * time.Second

// Options configures a Session. The zero value is usable: the worktree is
// the current directory and the state directory is DefaultStateDir of it.
type Options struct {
	// Worktree is the directory servers run in and may write. Default ".".
	Worktree string
	// StateDir holds the reviewed-tools state file. Default:
	// DefaultStateDir(Worktree), outside the worktree. Connect refuses, with
	// ErrStateReachable, a StateDir inside the worktree or inside a read or
	// write grant of a confined server: a server that can open the state's
	// lock file can hold the lock.
	StateDir string
	// HomeDir holds the private home directories of the servers whose
	// home is HomePersist, one subdirectory per server name, each made
	// (mode 0700) when its server starts. Default: "home" in the state
	// directory. No server may be granted it or any directory above it
	// (Connect refuses, as for the state directory); each server sees only
	// its own, as its HOME.
	HomeDir string
	// ConfigFile is the path of the agent's config file, if it has one.
	// Servers cannot write it even when it lies inside the worktree.
	ConfigFile string
	// Protect names further paths that no server may write, rename or
	// replace, as a server table's protect key does: absolute or relative
	// to the worktree; an entry ending in "/" is a directory, created empty
	// if missing. The worktree's mcphost.toml and mcphost.lock, every
	// server's program and the git directory are protected without being
	// named here.
	Protect []string
	// Approver is asked before each call of a tool whose decision is
	// Approval. Nil: such calls fail with ErrNeedsApproval.
	Approver Approver
	// ApproveHeld lets the Approver approve a call of a held tool (one
	// changed or new since its review, never offered to the model), its
	// ApprovalRequest showing what no person reviewed: for a person who
	// calls a tool by hand, as `mcphost call` does. Without it such a call
	// is refused with ErrNeedsApproval. Either way a held tool is never
	// offered to the model.
	ApproveHeld bool
	// Logger receives server lifecycle events, notices, calls (tool,
	// decision, duration, outcome; never argument values) and, at debug
	// level, the servers' stderr lines. Nil: nothing is logged.
	Logger *slog.Logger
	// ReadOnlyState keeps the session from writing the state file on its
	// own: first-seen tools show as PinNew (an allowed one is allowed) but
	// are not recorded, and an Approver's ApproveAndReview approves the one
	// call without recording a review. Session.Approve still records.
	// mcphost list, check and call use it.
	ReadOnlyState bool
	// OnToolsChanged is called after a server's tools changed mid-session,
	// with that server's name: from a goroutine of the session's after
	// notifications/tools/list_changed, from Restart's caller after a
	// Restart. Read the new tools with Tools. It must not call Close.
	OnToolsChanged func(server string)
	// OnCall is called after every Session.Call with a record of it.
	OnCall func(CallRecord)
	// OnNotice is called with each notice as the session adds it (the
	// same text Notices returns, dropped ones aside), so an agent need not
	// poll: a server that did not start, a tool held because it changed,
	// a table that needs review. It is called from the goroutine that
	// found it, possibly from several at once, and during Connect; it
	// must return quickly and must not call Close. Notices are server
	// text in part: print them through pin.Visible.
	OnNotice func(notice string)
	// OnProgress receives the progress notifications of calls in flight
	// (every call carries a progress token). It is called from the
	// goroutine that reads the server's messages, one notification at a
	// time per server: it must return quickly and must not call the
	// session. Progress never extends a call: call_timeout still bounds
	// it. Nil: progress notifications are dropped.
	OnProgress func(Progress)
	// Elicit, if set, is asked when a server asks the person something
	// (elicitation/create, form mode; mcphost advertises form elicitation
	// only then). Nil: servers are told mcphost does not support it, and
	// a server that asks anyway gets an error.
	Elicit Elicitor
	// ElicitURL, if set, is asked when a server asks the person to open a
	// URL (elicitation/create, URL mode; mcphost advertises URL
	// elicitation only then). mcphost never opens the URL itself. Nil: a
	// URL-mode request is declined.
	ElicitURL URLElicitor
	// ElicitOutsideCalls lets a server elicit (in either mode) while no
	// call of its tools is in flight. Without it such a request is
	// declined at once: a server should not ask the person things
	// unbidden.
	ElicitOutsideCalls bool
	// CloseGrace is how long Close waits for a server to exit on its own.
	// Default DefaultCloseGrace.
	CloseGrace time.Duration
	// HostEnv is the environment the servers' environments are scrubbed
	// from. Nil: os.Environ().
	HostEnv []string
	// LockFile is a lock file (pin.Lock; conventionally mcphost.lock
	// beside the config) holding a team's reviews. With one, reviews are
	// read from and recorded into it instead of the state file, and first
	// sight trusts nothing: a tool the lock does not hold is held from the
	// model, and a server whose program (its program identity) differs
	// from the one the lock recorded has every allowed tool need approval,
	// with a notice. A lock that lies where a server could have written it
	// is trusted only as committed in the worktree's own repository or as
	// this person's mcphost last wrote or accepted it (see ReviewLock);
	// otherwise nothing is trusted, StateError says why, and nothing is
	// recorded into it. Connect creates a missing lock (empty, and
	// recorded as this person's) before any server starts, so that no
	// server of the session can write, replace or create it. "": no lock.
	LockFile string
	// LockTimeout bounds each wait for the state file's lock or the lock
	// file's (recording a first sight or a review); past it the recording
	// fails with an error wrapping pin.ErrLocked. Default
	// pin.DefaultLockTimeout.
	LockTimeout time.Duration
}

// Approver decides whether a call of a tool that needs approval may go
// ahead, and whether the person reviewed the tool as it is now. It is
// called from the goroutine of Session.Call, possibly from many at once,
// and should show the person ApprovalRequest.Diff. Its Verdict says what
// was decided; Decline (the zero value) or an error fails the call, an
// error with that error wrapped.
type Approver func(ctx context.Context, req ApprovalRequest) (Verdict, error)

// Verdict is an Approver's answer.
type Verdict int

// String returns "decline", "approve once" or "approve and review".
func (v Verdict) String() string {
	switch v {
	case Decline:
		return "decline"
	case ApproveOnce:
		return "approve once"
	case ApproveAndReview:
		return "approve and review"
	}
	return fmt.Sprintf("Verdict(%d)", int(v))
}

// ApprovalRequest is what an Approver is asked about.
type ApprovalRequest struct {
	Tool Tool
	// Arguments are the arguments as the server will receive them.
	Arguments json.RawMessage
	// Reason says why approval is needed, for a person to read. It may name
	// fields of the server's definition: print it through pin.Visible.
	Reason string
	// Changes lists what changed since the tool's review, when Tool.Pin is
	// PinChanged.
	Changes []pin.Change
	// Diff is what `mcphost approve` shows, ready to print: for a tool that
	// changed since its review (Tool.Pin PinChanged), a line diff of each
	// changed field; for a tool with no review on record (PinNew,
	// PinUnpinned), its whole definition; "" for a tool unchanged since its
	// review. It is pin.Format's output: every invisible or control
	// character is a visible escape (a zero-width space is <U+200B>), so it
	// is safe to write to a terminal as it is.
	Diff string
}

// CallRecord describes one finished Session.Call, for a journal.
type CallRecord struct {
	Tool     string        // model name
	Server   string        // "" when the tool is unknown
	Decision Decision      // the decision the call went through
	Duration time.Duration // the whole call, approval included
	Err      error         // nil on success (a result with isError is a success here)
	IsError  bool          // the server's result had isError set
}

const (
	// Decline: the call does not go ahead (ErrDeclined). The zero value,
	// so that an Approver that says nothing says no.
	Decline Verdict = iota
	// ApproveOnce: this one call goes ahead. Nothing is recorded: a tool
	// never reviewed asks, showing its definition, next time (a held one is
	// asked about only with Options.ApproveHeld).
	ApproveOnce
	// ApproveAndReview: this call goes ahead, and the tool is recorded as
	// reviewed as it is now (ApprovalRequest.Tool.Definition), as
	// `mcphost approve` does: a new tool stops being flagged (an allowed
	// one is allowed), a held one is offered. In a session with
	// ReadOnlyState it is ApproveOnce.
	ApproveAndReview
)
