// Package openai turns mcphost's tools and tool results into the JSON of
// OpenAI's Chat Completions and Responses APIs.
//
// It has no HTTP client and no SDK dependency: its types are plain structs
// that marshal to the documented request JSON, for an agent to put into its
// own request bodies, whichever client it uses.
//
// # Tools
//
// ChatTools and ResponsesTools take the tools of a session (Session.Tools,
// which leaves denied tools out) and return the entries of a request's
// "tools" array. A tool whose Decision is mcphost.Deny is skipped even if
// the caller passes it: a denied tool is never offered to the model.
//
// Each tool's parameters and "strict" field come from
// Tool.SchemaFor(schema.OpenAI). "strict" is always present: true only when
// the tool's form for the "openai" profile is strict and ready for strict
// decoding (Tool.StrictProblems["openai"] is present and empty), and
// explicitly false otherwise, so that no provider
// default for a missing "strict" applies: a strict schema the API cannot
// decode strictly fails the whole request (HTTP 400, invalid_request_error),
// and the model sees none of its tools. OpenAI's documented limits on a
// strict schema (properties, nesting, enum sizes, characters; see package
// schema) are per schema, so the "openai" profile already holds every tool
// within them: a tool over one is sent non-strict. The "openai" strict form
// says in its descriptions the constraints OpenAI's subset lacks
// (minLength, maxLength, uniqueItems, formats outside its list), which
// mcphost enforces on every call.
//
// OpenAI documents no limit on the number of strict tools in a request, but
// refuses a request with more than 128 tools in all (HTTP 400,
// "array_above_max_length"; reported by many MCP hosts, e.g.
// zed-industries/zed#32946). ChatTools and ResponsesTools do not drop tools
// to fit, which would hide tools from the agent without its knowing: an
// agent with more than 128 tools must choose which to send.
//
// # Results
//
// ChatToolMessage and FunctionCallOutput turn the *mcp.CallToolResult of
// Session.Call into what the model reads next; ChatToolError and
// FunctionCallError do the same for a call that failed before or instead of
// reaching the tool (denied, declined, bad arguments, ...), so the model can
// correct itself. MCP content maps as follows:
//
//   - Text is passed on as text.
//   - Images: Chat Completions tool messages carry only text, so an image
//     becomes a text placeholder naming its MIME type and size. The Responses
//     API takes images in a function_call_output, so an image whose bytes are
//     PNG, JPEG, GIF or WebP is passed on as an input_image (a base64 data
//     URL, with the type its bytes show); any other image becomes a
//     placeholder, so that one malformed image cannot fail the whole request.
//   - Audio and binary resources become placeholders naming type and size;
//     text resources and resource links become text.
//   - Structured content is added as JSON text, unless a text item already
//     carries the same JSON (MCP servers usually mirror it there).
//   - An error result (isError) starts with the text "[the tool reported an
//     error]": neither API has an error flag for a function's output.
//
// Nothing is dropped silently: whatever cannot be passed on is replaced by a
// bracketed placeholder that says what it was and why it is not shown, and a
// result with no content at all says so.
//
// # Deferred loading
//
// With more tools than a model should read on every turn, DeferredResponsesTools
// marks all but the ones an agent keeps loaded "defer_loading", for the
// Responses API's tool search (HostedToolSearch, run by OpenAI, or
// ClientToolSearch, run by the agent with package toolsearch and answered
// with ToolSearchOutputItem); LoadedTools maps what a search loaded back to
// mcphost's tools. Per OpenAI's tool search guide, gpt-5.4 and later models
// support it, in the Responses API only; with Chat Completions, or another
// model, offer package toolsearch's search tool instead. See defer.go.
package openai
