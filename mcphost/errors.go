package mcphost

import (
	"errors"
	"fmt"

	"github.com/mcphost/mcphost/schema"
)

// Errors a caller acts on. Session.Call's errors wrap one of these (match
// with errors.Is); the rest of the error text says which tool or server and
// what to do.
var (
	// ErrUnknownTool: no tool of the session has that model name (or, from
	// GetPrompt and Review, the server offers no prompt of that name, or
	// the reference names nothing). Nothing can bring it back: unlike
	// ErrServerGone, it is a wrong name.
	ErrUnknownTool = errors.New("unknown tool")
	// ErrUnknownServer: no server of the session has that name (from the
	// methods that take one: Restart, Instructions, GetPrompt, Resources,
	// ReadResource, Review). A wrong name, as ErrUnknownTool.
	ErrUnknownServer = errors.New("unknown server")
	// ErrDenied: the config denies the tool. The server was not contacted.
	ErrDenied = errors.New("tool denied by config")
	// ErrNeedsApproval: the tool needs a person's approval and the session
	// has no Approver, or it (or the instructions or prompt asked for) is
	// held until a person reviews it; the error says what to run. The
	// server was not contacted.
	ErrNeedsApproval = errors.New("tool needs approval")
	// ErrDeclined: the Approver declined the call. The server was not
	// contacted.
	ErrDeclined = errors.New("call declined")
	// ErrBadArguments: the arguments do not fit the tool's schema. The server
	// was not contacted; the error text is written for the model to correct
	// its call.
	ErrBadArguments = errors.New("bad arguments")
	// ErrUncheckable: the tool's input schema cannot be read (an unknown
	// dialect, a remote $ref...), so its arguments cannot be checked and
	// mcphost refuses to call it. The server was not contacted. It is
	// schema.ErrUncheckable, the one sentinel of this kind.
	ErrUncheckable = schema.ErrUncheckable
	// ErrServerGone: the server is not running (it failed to start, crashed
	// or was closed). Session.Restart may bring it back.
	ErrServerGone = errors.New("server not running")
	// ErrTimeout: the call ran past the server's call_timeout.
	ErrTimeout = errors.New("call timed out")
	// ErrClosed: the session is closed.
	ErrClosed = errors.New("session closed")
	// ErrLauncherOffline: a package launcher (npx, uvx...) with the
	// network off did not answer initialize within launcherWait (5s): it
	// is waiting to fetch its package. The server's start failed with it.
	ErrLauncherOffline = errors.New("package launcher needs the network")
	// ErrStateReachable: Connect refused a state directory, or a directory
	// of private homes (Options.HomeDir), that a confined server could open
	// (inside the worktree or a read or write grant).
	ErrStateReachable = errors.New("state directory within a server's reach")
	// ErrNotAsReviewed: Session.Check found what the model could read not
	// as a person reviewed it, or could not check it (a server that did not
	// start, reviews that cannot be read). Its error is a *CheckError.
	ErrNotAsReviewed = errors.New("not as reviewed")
)

// CallError is the error of a failed Session.Call. It wraps one of the
// sentinel errors above (or the protocol error) and names the tool.
type CallError struct {
	Tool string // the model name
	Err  error
}

func (e *CallError) Error() string { return fmt.Sprintf("%s: %v", e.Tool, e.Err) }

// Unwrap returns the cause.
func (e *CallError) Unwrap() error { return e.Err }
