// Package anthropic turns mcphost's tools and tool results into the JSON of
// Anthropic's Messages API.
//
// It has no HTTP client and no SDK dependency: its types are plain structs
// that marshal to the documented request JSON, for an agent to put into its
// own request bodies, whichever client it uses.
//
// # Tools
//
// Tools takes the tools of a session (Session.Tools, which leaves denied
// tools out) and returns the entries of a request's "tools" array:
// {"name", "description", "input_schema", "strict"}. A tool whose Decision is
// mcphost.Deny is skipped even if the caller passes it: a denied tool is
// never offered to the model.
//
// "strict" is a top-level field of a tool definition, beside name,
// description and input_schema (Anthropic, "Strict tool use",
// https://platform.claude.com/docs/en/agents-and-tools/tool-use/strict-tool-use).
// The input schema and "strict" come from Tool.SchemaFor(schema.Anthropic).
// "strict" is always present: true only when the tool's form for the
// "anthropic" profile is strict and ready for it
// (Tool.StrictProblems["anthropic"] is present and empty), and explicitly
// false otherwise. The "anthropic" form keeps optional properties optional
// (Anthropic's strict tool use accepts them) and says in descriptions the
// constraints Anthropic's subset lacks (lengths, numeric bounds, item
// counts), which mcphost enforces on every call. Anthropic also limits
// strict tools per request (MaxStrictTools, MaxStrictOptional,
// MaxStrictUnions); a request over one is refused whole (HTTP 400), so
// Tools keeps a request within them, in the order of the tools, and sends
// the rest non-strict.
//
// # Results
//
// ToolResult turns the *mcp.CallToolResult of Session.Call into a
// tool_result content block; ToolError does the same for a call that failed
// before or instead of reaching the tool (denied, declined, bad arguments,
// ...), so the model can correct itself. MCP content maps as follows:
//
//   - Text is passed on as text blocks.
//   - An image whose bytes are PNG, JPEG, GIF or WebP (the formats the
//     Messages API takes) is passed on as an image block with a base64
//     source and the media type its bytes show; any other image becomes a
//     text placeholder naming its MIME type and size, so that one malformed
//     image cannot fail the whole request.
//   - Audio and binary resources become placeholders naming type and size;
//     text resources and resource links become text.
//   - Structured content is added as JSON text, unless a text item already
//     carries the same JSON (MCP servers usually mirror it there).
//   - An error result (isError) sets "is_error": true.
//
// Nothing is dropped silently: whatever cannot be passed on is replaced by a
// bracketed placeholder that says what it was and why it is not shown, and a
// result with no content at all says so.
//
// # Deferred loading
//
// With more tools than Claude should read on every turn, DeferredTools
// marks all but the ones an agent keeps loaded "defer_loading", for
// Claude's tool search (ToolSearchBM25, ToolSearchRegex); ReferencedTools
// maps the tool_reference blocks of its result back to mcphost's tools.
// An agent can run mcphost's own search instead (package toolsearch) and
// answer it with ToolReferences, which the API expands into the deferred
// definitions. Anthropic's tool search page lists the models that support
// it (Claude Opus and Sonnet 4.5 and later, Haiku 4.5 and later, as of
// this writing). See defer.go.
package anthropic
