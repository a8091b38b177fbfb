// Package interop holds mcphost's end-to-end tests against MCP servers that
// mcphost's authors did not write. It has no code of its own: everything is
// in its tests.
//
// Each server runs as an agent would run it, through mcphost.Connect,
// confined (the default), in a fresh worktree with a fresh state directory:
//
//   - the npm reference servers @modelcontextprotocol/server-everything,
//     server-filesystem and server-memory, pinned by
//     testdata/interop/package-lock.json, installed by `make deps` (npm ci)
//     and run with `node <their dist/index.js>` (no npx, no network);
//   - a server built on github.com/mark3labs/mcp-go, in its own module under
//     testdata/interop/mcpgo so that mcphost itself does not depend on it;
//   - the example server of examples/notes, built on the Go SDK.
//
// The Go servers are built with `go build` into the test's temporary
// directory. A server that cannot run here (npm or its packages missing, the
// module proxy refusing mcp-go) is skipped with a printed reason, never
// silently.
//
// What is checked for each server: it lists the same tools through mcphost
// as through a bare go-sdk client, under their own (hyphenated) names; its
// tools answer correctly end to end; its notifications do not lose a call;
// no host secret reaches it; and Close leaves none of its processes behind,
// even when the server ignores the end of its input.
//
// The input schemas the npm servers serve, as a bare go-sdk client decodes
// them (object keys sorted), are checked on every run against a digest in
// testdata/interop/schemas.digests (the servers' text itself is not copied
// into this repository; it is read live from what the test installed, and
// printed when it differs); after the pinned versions change,
// `go test ./interop -run TestToolLists -update` rewrites the digests.
package interop
