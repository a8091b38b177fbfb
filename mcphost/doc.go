// Package mcphost lets a coding agent use the tools of local stdio MCP
// servers without trusting them.
//
// # The model
//
// An agent's config names servers in [mcp.<name>] tables (see Load, Parse
// and ServerConfig). Connect starts every server in parallel, each confined by
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
// server could have planted keeps its server from starting. Every file a
// server could have planted is read as hostile (a regular file, bounded).
// A table of a config that a server could write (one Load read, or
// Options.ConfigFile, in the worktree or a write grant) starts only as a
// person reviewed it: a new or changed one does not start
// (ServerUnreviewed) until Session.Review and Session.Approve record it.
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
// # The trust pipeline
//
// Everything a person reviews is a subject of one of five kinds: a server's
// table, its program, a tool, its instructions, a prompt. Each is judged
// by one rule against its review, kept in one of two stores with the same
// record (a digest and the definition): the personal state file
// (mcp-reviewed.json, outside the worktree) or, with Options.LockFile, a
// team's lock file (pin.Lock, committed with the project). From that
// verdict and the config follows one decision per use:
//
//   - as reviewed: a tool is offered (Allow if the config allows it), a
//     table starts, instructions and prompts reach the model;
//   - first seen, on a server never reviewed, without a lock: trusted and
//     recorded (trust on first use), except a table, which is never;
//   - changed since its review: a tool is held (Tool.Withheld: Tools leaves
//     it out, since the model reads its description on every turn, and
//     calls are refused), a table does not start, instructions and prompts
//     are withheld, each with a notice, until a person re-reviews it;
//   - new on a reviewed server: a tool is offered for approval with a
//     notice, or held with ServerConfig.HoldNewTools; with a lock, what the
//     lock does not hold is held; it never inherits another's review;
//   - the reviews cannot be read or trusted: nothing is trusted; an
//     unreadable state file is never reset.
//
// A person reviews through references (a SERVER whole, a tool's model
// name, table:S, program:S, instructions:S, prompt:S/N): Session.Review
// shows each, whole or as a diff with every invisible character visible,
// and Session.Approve records exactly what was shown. Session.Pending lists
// everything not as reviewed, and Session.Check is the whole gate (nothing
// pending, every server running, the reviews readable). When a server sends
// notifications/tools/list_changed mid-session, its tools are re-listed and
// judged again before any further call to them goes through, and
// Options.OnToolsChanged tells the agent; Options.OnNotice gets every
// notice as it happens.
//
// With a lock, first sight trusts nothing, and a server whose program
// changed since the lock recorded it has every allowed tool need approval.
// A lock that a server could have written is trusted only as committed in
// the worktree's own repository or as this person last wrote or accepted
// it (ReviewLock).
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
// as reviewed; the messages it gets are server content, bounded like a
// result). Resources are data (Session.Resources,
// Session.ReadResource), bounded like results. Options.OnProgress gets a
// call's progress; Options.Elicit answers a server's questions to the
// person, shown with every invisible character visible and checked
// against the requested schema before anything is sent. A tool that can
// only run as a task is called as one (on a server of revision 2025-11-25,
// or of 2026-07-28 with the io.modelcontextprotocol/tasks extension),
// followed and cancelled with its call. Servers of either protocol era
// start (the 2026-07-28 revision's server/discover, else initialize); a
// 2026 server's questions come as input requests of the call and pass the
// elicitation gates; Options.ElicitURL, if set, is asked about a URL a
// server wants the person to open (never opened by mcphost). A result's
// structuredContent is checked against the tool's outputSchema. Prompts
// that change mid-session (list_changed) are listed and judged again.
// ServerInfo.Protocol is the revision each
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
