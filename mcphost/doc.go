// Package mcphost lets a coding agent use the tools of local stdio MCP
// servers without trusting them.
//
// # The model
//
// An agent's config names servers in [mcp.<name>] tables (see Parse and
// ServerConfig). Connect starts every server in parallel, each confined by
// package sandbox: it runs in the worktree, with a scrubbed environment, a
// private TMPDIR, write access only to the worktree (Landlock), no network
// unless its config says so, and in its own PID namespace so that Close ends
// every process it started. Where the kernel cannot confine, the server does
// not start unless its table says sandbox = "off".
//
// The worktree is hostile ground, so what decides the next start or runs on
// the host is read-only to every server: the state directory, the config
// file, the worktree's mcphost.toml and mcphost.lock, every server's
// program (sandbox.Programs), the repository's git directory (unless a
// table says git = "write") and what Options.Protect and the tables'
// protect keys name. A read or write path through a symbolic link that a
// server could have planted keeps its server from starting. A config that
// servers could write should start only reviewed tables: the CLI does so
// with ServerConfig.Definition, WritablePaths and pin.State.Tables.
//
// Connect then lists every page of each server's tools and, for each tool:
//
//   - names it for the model, mcp__<server>__<tool> (ModelName), skipping
//     with a notice a tool whose name cannot be mapped;
//   - prepares its input schema for strict decoding (package schema): the
//     schema offered to the model is closed, and, where the meaning can be
//     kept exactly, strict (every property required, optional ones nullable;
//     the nulls are removed again before the server sees the call);
//   - decides: Deny if the config denies it, Allow if the config allows it,
//     otherwise the table's default (Approval, or Deny);
//   - digests its whole definition as the server sent it (package pin).
//
// # Pins
//
// Every tool that is not denied is pinned, allowed or not (the model reads
// both): its digest and definition are recorded in the state file
// (mcp-reviewed.json, outside the worktree) the first time it is seen, and a
// later session that sees a different definition (description, schema,
// annotations, anything the model would see) says so in Notices, turns an
// allowed tool to Approval, and flags every ApprovalRequest with the diff,
// until a person re-reviews it (Session.Approve, `mcphost approve`, which
// shows the diff, or an Approver's ApproveAndReview). A tool the server
// offers after its review, or under a new name, needs approval until a
// person reviews it, and with ServerConfig.HoldNewTools is not offered at
// all; it never inherits another's review. When a server sends
// notifications/tools/list_changed mid-session, its tools are re-listed and
// re-pinned before any further call to them goes through, and
// Options.OnToolsChanged tells the agent. An unreadable state file is never
// reset: every allowed tool needs approval until a person fixes it.
//
// With Options.LockFile the reviews are a team's instead: a lock file
// (pin.Lock, committed with the project) holds, per server, the reviewed
// table, the program identity (ProgramIdentity) and the reviewed tools.
// First sight trusts nothing: a tool the lock does not hold needs approval,
// and a server whose program changed has every allowed tool need approval.
// A lock that a server could have written is trusted only as committed in
// git or as this person last wrote or accepted it (LoadLock).
//
// # Calls
//
// Session.Call takes the model's name for a tool and the model's arguments.
// A denied tool is refused without contacting the server; a tool needing
// approval goes to Options.Approver; the arguments are mapped back from the
// strict form and checked against the tool's schema; the call is bounded by
// the server's call_timeout and its result by max_output. Errors wrap the
// sentinel errors of this package (ErrDenied, ErrNeedsApproval, ErrDeclined,
// ErrBadArguments, ErrServerGone, ErrTimeout, ErrUnknownTool, ErrClosed).
//
// # Beyond tools
//
// What else reaches the model is pinned like a tool: a server's
// instructions (Session.Instructions returns them only as reviewed) and
// its prompts (Session.Prompts, Session.GetPrompt, which refuses one not
// as reviewed); `mcphost approve instructions:SERVER` and
// `prompt:SERVER/NAME` review them. Resources are data (Session.Resources,
// Session.ReadResource), bounded like results. Options.OnProgress gets a
// call's progress; Options.Elicit answers a server's questions to the
// person, shown with every invisible character visible and checked
// against the requested schema before anything is sent. A tool that can
// only run as a task is called as one (revision 2025-11-25), followed and
// cancelled with its call. ServerInfo.Protocol is the revision each
// server negotiated.
//
// # Faults
//
// One server's trouble never fails the session: a server that does not
// start, hangs, exits, floods stderr, writes garbage or paginates forever is
// bounded, reported in Notices and Servers, and cleaned up, and the other
// servers go on. Session.Restart starts a server again.
//
// # The sandbox helper
//
// Each server is started through a small helper process that sets up its
// confinement (see package sandbox): a helper program embedded in package
// sandbox or, where that cannot run, the current program re-executed and
// entered from package sandbox's init function. Either way a program that
// imports mcphost needs no extra line in main.
package mcphost
