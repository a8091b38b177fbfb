package anthropic

import (
	"slices"

	"github.com/mcphost/mcphost/mcphost"
)

// Tool search (Anthropic, "Tool search tool",
// https://platform.claude.com/docs/en/agents-and-tools/tool-use/tool-search-tool):
// a request marks tools "defer_loading": true and carries a tool search
// tool; Claude then sees only the tools not deferred and the search tool,
// searches the deferred ones' names, descriptions and argument names and
// descriptions, and the API loads the definitions the search references.
// The docs list it, as of this writing, for Claude Opus 4.5 and later
// (4.5, 4.6, 4.7, 4.8, 5, 5.5), Sonnet 4.5 and later (4.5, 4.6, 5, 5.5),
// Haiku 4.5 and 5.5, and the Fable and Mythos families, on the Claude API,
// Amazon Bedrock (InvokeModel, not Converse), Google Cloud and Microsoft
// Foundry. A model without it refuses the request: check the page for the
// model an agent uses.
//
// The search tool itself must not be deferred, and a request needs at
// least one tool that is not. Instead of Anthropic's search, an agent can
// answer a tool of its own (package toolsearch's) with ToolReferences: the
// API then loads the referenced deferred tools as it loads those its own
// search finds.

// ToolSearch is a tool search tool in a request's "tools" array: a server
// tool, run by Anthropic, with no input schema of the agent's.
type ToolSearch struct {
	Type string `json:"type"`
	Name string `json:"name"`
}

// ToolSearchBM25 returns the tool search tool whose queries are natural
// language, ranked by BM25 (tool_search_tool_bm25_20251119).
func ToolSearchBM25() ToolSearch {
	return ToolSearch{Type: "tool_search_tool_bm25_20251119", Name: "tool_search_tool_bm25"}
}

// ToolSearchRegex returns the tool search tool whose queries are regular
// expressions (Python's re.search syntax; tool_search_tool_regex_20251119).
func ToolSearchRegex() ToolSearch {
	return ToolSearch{Type: "tool_search_tool_regex_20251119", Name: "tool_search_tool_regex"}
}

// DeferredTool is a Tool with "defer_loading": the model sees it only once
// a tool search references it. It marshals as the Tool's fields plus
// "defer_loading" when set.
type DeferredTool struct {
	Tool
	DeferLoading bool `json:"defer_loading,omitempty"`
}

// DeferredTools returns the tool definitions of tools as Tools does (in
// order, denied and withheld tools skipped, strict within the request's
// limits, which count deferred tools too), each marked DeferLoading unless
// keep keeps it: keep chooses the tools that stay always loaded (a nil keep
// defers every tool). Send the result with ToolSearchBM25 or
// ToolSearchRegex, or with a search tool of the agent's own that keep
// keeps, since the API refuses a request whose every tool is deferred.
// It returns nil when no tool is offered. The result shares no memory
// with tools.
func DeferredTools(tools []mcphost.Tool, keep func(mcphost.Tool) bool) []DeferredTool {
	offered := slices.DeleteFunc(slices.Clone(tools), func(t mcphost.Tool) bool { return !t.Offered() })
	defs := Tools(offered)
	if defs == nil {
		return nil
	}
	out := make([]DeferredTool, len(defs))
	for i, d := range defs {
		out[i] = DeferredTool{Tool: d, DeferLoading: keep == nil || !keep(offered[i])}
	}
	return out
}

// ToolReference names a tool for the API to load: in a
// "tool_search_tool_result" of Anthropic's search, and in the content of a
// tool_result that answers the agent's own search tool.
type ToolReference struct {
	Type     string `json:"type"` // "tool_reference"
	ToolName string `json:"tool_name"`
}

// ToolSearchResult is the "tool_search_tool_result" content block in which
// Claude's response gives the result of a tool search (after its
// "server_tool_use" block). Content.ToolReferences names the tools the
// search loaded; a failed search has another Content.Type and none.
type ToolSearchResult struct {
	Type      string                  `json:"type"` // "tool_search_tool_result"
	ToolUseID string                  `json:"tool_use_id"`
	Content   ToolSearchResultContent `json:"content"`
}

// ToolSearchResultContent is the content of a ToolSearchResult.
type ToolSearchResultContent struct {
	Type           string          `json:"type"` // "tool_search_tool_search_result" when the search ran
	ToolReferences []ToolReference `json:"tool_references,omitempty"`
}

// ReferencedTools returns the tools of offered that refs name, in the
// order of refs, each once: the mcphost tools a search loaded, for an
// agent that records them (toolsearch.Loader.Load) or shows them. A
// reference to a name offered lacks (a tool the agent did not send, or no
// longer offers) is left out: it loads nothing mcphost would call.
func ReferencedTools(refs []ToolReference, offered []mcphost.Tool) []mcphost.Tool {
	var out []mcphost.Tool
	var seen []string
	for _, r := range refs {
		if slices.Contains(seen, r.ToolName) {
			continue
		}
		i := slices.IndexFunc(offered, func(t mcphost.Tool) bool { return t.Name == r.ToolName && t.Offered() })
		if i < 0 {
			continue
		}
		seen = append(seen, r.ToolName)
		out = append(out, offered[i])
	}
	return out
}

// ToolReferenceResult is a tool_result block whose content references
// tools for the API to load: the answer to a search tool of the agent's
// own when the tools it found are sent deferred.
type ToolReferenceResult struct {
	Type      string             `json:"type"` // always "tool_result"
	ToolUseID string             `json:"tool_use_id"`
	Content   []ReferenceContent `json:"content"`
}

// ReferenceContent is a block of a ToolReferenceResult's content: a
// tool_reference or, when the search found nothing, a text block saying
// so (the API refuses empty text blocks, and an empty result would leave
// the model guessing).
type ReferenceContent struct {
	Type     string `json:"type"`
	ToolName string `json:"tool_name,omitempty"`
	Text     string `json:"text,omitempty"`
}

// ToolReferences returns the tool_result block that answers the tool use
// toolUseID of a search tool of the agent's own (toolsearch.ToolName)
// with a tool_reference for each tool found, in order: the API loads each
// referenced tool's definition, which the request must carry deferred
// (DeferredTools). With no tool found, the block says so in text.
func ToolReferences(toolUseID string, found []mcphost.Tool) ToolReferenceResult {
	r := ToolReferenceResult{Type: "tool_result", ToolUseID: toolUseID}
	for _, t := range found {
		r.Content = append(r.Content, ReferenceContent{Type: "tool_reference", ToolName: t.Name})
	}
	if len(r.Content) == 0 {
		r.Content = []ReferenceContent{{Type: "text", Text: "No tool matches. Search again with other words: the action and the thing it acts on."}}
	}
	return r
}
