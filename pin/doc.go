// Package pin records which MCP tool definitions a person has reviewed, so
// that a server which later changes a tool (a "rug pull") cannot slip the
// change past them.
//
// # The model
//
// A tool definition, the JSON object a server sends for one tool in
// tools/list, is everything about the tool that reaches the model or the
// agent: name, title, description, inputSchema, outputSchema, annotations,
// icons, _meta and any field a later protocol version adds. Digest hashes
// all of it, in a canonical form (see Canonical) in which reordering keys,
// re-indenting, re-escaping a string or omitting an annotation hint that
// holds its default changes nothing, and every other change, down to one
// byte of a number's spelling or one invisible character, changes the
// digest. A definition that could be read two ways (a repeated key, invalid
// UTF-8, a lone surrogate escape) has no digest at all: it is refused. Every
// JSON text this package reads, definitions and its own files alike, goes
// through the module's one parser, which package schema uses too, so the
// two never disagree on what a server sent.
//
// When a person approves a tool, the host records its digest and the
// definition itself in the state file (Store, Entry). On each discovery the
// host compares the current digest with the pinned one; if they differ, the
// tool needs review again, and Diff and Format show the reviewer, field by
// field and line by line, exactly what changed, with every invisible or
// terminal-control character made visible (Visible). ServerEntry pins what
// belongs to a server rather than a tool: the tool names it offered at
// review, so a new tool is shown as new. A server's instructions are pinned
// like a tool, in State.Instructions (InstructionsDefinition).
//
// # The state file
//
// The state file is FileName in a state directory, which must lie outside
// any directory a server can write. It is written atomically under a lock,
// mode 0600, and checked in full when read: each digest must have a known
// format and be the digest of the definition stored beside it. A file that
// fails any check is reported (ErrCorrupt, ErrFutureVersion) and left alone,
// as is a lock file (Lock, LockStore) that fails its checks:
// this package never resets it, because an empty state would re-trust every
// tool on first sight.
package pin
