package openai

import (
	"encoding/json"
	"slices"

	"github.com/mcphost/mcphost/mcphost"
)

// Tool search (OpenAI, "Tool search",
// https://developers.openai.com/api/docs/guides/tools-tool-search): a
// Responses API request marks functions "defer_loading": true and carries
// a "tool_search" tool; the model searches the deferred functions and the
// definitions it loads are added at the end of its context. Per the guide,
// only gpt-5.4 and later models support tool_search, and only in the
// Responses API: Chat Completions has no tool search, so a Chat agent
// uses package toolsearch's search tool instead. A deferred function's
// name and description stay visible to the model; what is deferred is
// mainly its parameter schema (the guide recommends namespaces, which this
// package does not build, to defer more).
//
// The search runs on OpenAI's side (HostedToolSearch), or on the agent's
// (ClientToolSearch): the model then emits a "tool_search_call" item with
// execution "client" and the arguments of the agent's parameter schema, and
// the agent answers with a "tool_search_output" item holding the
// definitions to load (ToolSearchOutputItem).

// ResponsesToolSearch is the "tool_search" entry of a Responses API
// request's "tools" array.
type ResponsesToolSearch struct {
	Type string `json:"type"` // always "tool_search"
	// Execution is "client" for a search the agent runs; empty (the API's
	// default, "server") for OpenAI's.
	Execution string `json:"execution,omitempty"`
	// Description and Parameters are shown to the model for a client
	// search: what the search does and the schema of its arguments.
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// HostedToolSearch returns the tool_search tool that OpenAI runs over the
// request's deferred functions.
func HostedToolSearch() ResponsesToolSearch { return ResponsesToolSearch{Type: "tool_search"} }

// ClientToolSearch returns a tool_search tool that the agent runs: the
// model calls it with arguments that fit parameters (a JSON schema, such as
// package toolsearch's: toolsearch.SearchTool().Schema) and the agent
// answers with ToolSearchOutputItem. parameters is copied.
func ClientToolSearch(description string, parameters json.RawMessage) ResponsesToolSearch {
	return ResponsesToolSearch{Type: "tool_search", Execution: "client",
		Description: description, Parameters: slices.Clone(parameters)}
}

// DeferredResponsesTool is a ResponsesTool with "defer_loading": the model
// sees its name and description, and its parameters once a tool search
// loads it. It marshals as the ResponsesTool's fields plus "defer_loading"
// when set.
type DeferredResponsesTool struct {
	ResponsesTool
	DeferLoading bool `json:"defer_loading,omitempty"`
}

// DeferredResponsesTools returns the Responses API definitions of tools as
// ResponsesTools does (in order, denied and withheld tools skipped), each
// marked DeferLoading unless keep keeps it: keep chooses the tools that
// stay always loaded (a nil keep defers every tool). Send the result with
// HostedToolSearch or ClientToolSearch. It returns nil when no tool is
// offered. The result shares no memory with tools.
func DeferredResponsesTools(tools []mcphost.Tool, keep func(mcphost.Tool) bool) []DeferredResponsesTool {
	offered := slices.DeleteFunc(slices.Clone(tools), func(t mcphost.Tool) bool { return !t.Offered() })
	defs := ResponsesTools(offered)
	if defs == nil {
		return nil
	}
	out := make([]DeferredResponsesTool, len(defs))
	for i, d := range defs {
		out[i] = DeferredResponsesTool{ResponsesTool: d, DeferLoading: keep == nil || !keep(offered[i])}
	}
	return out
}

// ToolSearchCall is a "tool_search_call" output item: the model searching
// for tools. With Execution "server" OpenAI ran the search (its result
// follows as a ToolSearchOutput); with "client" the agent runs it on
// Arguments and answers with ToolSearchOutputItem(CallID, ...).
type ToolSearchCall struct {
	Type      string          `json:"type"` // "tool_search_call"
	ID        string          `json:"id,omitempty"`
	CallID    string          `json:"call_id,omitempty"`
	Execution string          `json:"execution,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Status    string          `json:"status,omitempty"`
}

// ToolSearchOutput is a "tool_search_output" item: in a response, the
// tools OpenAI's search loaded; in the next request's input, the agent's
// answer to a client search. Tools holds the loaded definitions (a
// response's may include kinds other than "function", such as namespaces,
// of which only Type and Name are read).
type ToolSearchOutput struct {
	Type      string          `json:"type"` // "tool_search_output"
	ID        string          `json:"id,omitempty"`
	CallID    string          `json:"call_id,omitempty"`
	Execution string          `json:"execution,omitempty"`
	Tools     []ResponsesTool `json:"tools"`
	Status    string          `json:"status,omitempty"`
}

// ToolSearchOutputItem returns the tool_search_output item that answers
// the client search callID with the definitions of found (as
// ResponsesTools makes them: strict where ready; denied and withheld tools
// skipped), for the model to call on its next turn. Tools is never nil,
// so that a search that found nothing says so with [].
func ToolSearchOutputItem(callID string, found []mcphost.Tool) ToolSearchOutput {
	defs := ResponsesTools(found)
	if defs == nil {
		defs = []ResponsesTool{}
	}
	return ToolSearchOutput{Type: "tool_search_output", CallID: callID, Execution: "client", Tools: defs}
}

// LoadedTools returns the tools of offered that out loaded, in the order
// of out.Tools, each once: the mcphost tools behind the functions a search
// loaded, for an agent that records them (toolsearch.Loader.Load) or shows
// them. A definition that is not a function, or names a function offered
// lacks (not sent, or no longer offered), is left out: it loads nothing
// mcphost would call.
func LoadedTools(out ToolSearchOutput, offered []mcphost.Tool) []mcphost.Tool {
	var loaded []mcphost.Tool
	var seen []string
	for _, d := range out.Tools {
		if d.Type != "function" || slices.Contains(seen, d.Name) {
			continue
		}
		i := slices.IndexFunc(offered, func(t mcphost.Tool) bool { return t.Name == d.Name && t.Offered() })
		if i < 0 {
			continue
		}
		seen = append(seen, d.Name)
		loaded = append(loaded, offered[i])
	}
	return loaded
}
