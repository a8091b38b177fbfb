package toolsearch

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost/mcphost/anthropic"
	"github.com/mcphost/mcphost/internal/jsontree"
	"github.com/mcphost/mcphost/mcphost"
	"github.com/mcphost/mcphost/openai"
	"github.com/mcphost/mcphost/schema"
)

// ToolName is the name of the search tool: at most 64 of [A-Za-z0-9_-], as
// both providers require, and never a name mcphost gives a server's tool
// (those start with "mcp__").
const ToolName = "mcphost_search_tools"

// The number of tools one call of the search tool returns: DefaultLimit
// when the model sends no limit, never more than MaxLimit.
const (
	DefaultLimit = 5
	MaxLimit     = 20
)

// searchSchema is the search tool's input schema: strict-ready for both
// profiles (every property required, no keyword either strict mode
// lacks), so the bounds of limit are said in its description and enforced
// by ParseArgs.
const searchSchema = `{"type":"object","properties":{` +
	`"query":{"type":"string","description":"What you want to do, in a few words: the action and the thing it acts on (for example: take a screenshot of the page)."},` +
	`"limit":{"type":"integer","description":"How many tools to return, 1 to 20. 5 is usually enough."}},` +
	`"required":["query","limit"],"additionalProperties":false}`

// SearchTool returns the search tool as an mcphost.Tool, for an agent to
// offer beside its always-loaded tools through package openai or
// anthropic (openai.ChatTools(append(tools, toolsearch.SearchTool()))).
// It is allowed and strict for both profiles. Its calls go to
// Loader.Call, not to Session.Call, which does not know it.
func SearchTool() mcphost.Tool {
	return mcphost.Tool{
		Name: ToolName,
		Description: "Find tools to use. Only some of the tools you can use are listed; " +
			"this searches all of them by name, description and parameters and loads the best matches, " +
			"which you can then call by name. Search again with other words if none fits.",
		Schema:         json.RawMessage(searchSchema),
		Strict:         true,
		StrictProblems: map[string]string{string(schema.OpenAI): "", string(schema.Anthropic): ""},
		Schemas: map[string]json.RawMessage{
			string(schema.OpenAI):    json.RawMessage(searchSchema),
			string(schema.Anthropic): json.RawMessage(searchSchema),
		},
		Decision: mcphost.Allow,
		Pin:      mcphost.PinSame,
	}
}

// Args are the arguments of a call of the search tool.
type Args struct {
	Query string
	Limit int
}

// ParseArgs reads the model's arguments to the search tool: a JSON object
// with a non-empty string "query" and an integer "limit" (null or missing
// means DefaultLimit; a limit outside 1 to MaxLimit is brought within it,
// since a model's wish for 50 tools is not worth failing the call over).
// Any other member (names are exact: "Query" is another member), a name
// given twice, a wrong type, or text that is not one JSON object is an
// error wrapping mcphost.ErrBadArguments, which says what is wrong, so
// that the model can correct its call. It reads JSON as the rest of
// mcphost does (package internal/jsontree), so it refuses what arguments
// to a server's tool would be refused for.
func ParseArgs(args json.RawMessage) (Args, error) {
	bad := func(format string, a ...any) (Args, error) {
		return Args{}, fmt.Errorf("%w: %s: %s", mcphost.ErrBadArguments, ToolName, fmt.Sprintf(format, a...))
	}
	const want = `want one JSON object with "query" (a string) and "limit" (an integer)`
	// Depth 2 is one level more than the object needs, so that an array
	// or object given as a member's value is refused for its type (one
	// with more inside it, as nested too deeply).
	v, err := jsontree.Parse(args, 2)
	if err != nil {
		return bad("%s: %v", want, err)
	}
	if v.Kind != jsontree.Object {
		return bad("%s, not %s", want, v.Kind)
	}
	a := Args{Limit: DefaultLimit}
	query := false
	for _, m := range v.Obj {
		switch m.Name {
		case "query":
			if m.Val.Kind != jsontree.String || strings.TrimSpace(m.Val.Str) == "" {
				return bad(`"query" must be a non-empty string`)
			}
			a.Query, query = m.Val.Str, true
		case "limit":
			switch m.Val.Kind {
			case jsontree.Null:
			case jsontree.Number:
				// Only an integer literal: 3.0 and 3e0 are refused, as
				// strict decoding would never produce them, and so is
				// one past int64.
				i, err := strconv.ParseInt(m.Val.Raw, 10, 64)
				if err != nil {
					return bad(`"limit" must be an integer, not %s`, m.Val.Raw)
				}
				a.Limit = int(max(1, min(i, MaxLimit)))
			default:
				return bad(`"limit" must be an integer, not %s`, m.Val.Kind)
			}
		default:
			return bad("%s: unknown member %s", want, jsontree.QuoteName(m.Name))
		}
	}
	if !query {
		return bad(`"query" must be a non-empty string`)
	}
	return a, nil
}

// Loader answers one conversation's calls of the search tool against an
// Index, for one provider profile, and remembers which tools the calls
// loaded, so that the agent offers them for the rest of the conversation.
// Its methods are safe for concurrent use.
type Loader struct {
	idx     *Index
	profile string

	mu     sync.Mutex
	loaded []string // model names, in the order first loaded
}

// NewLoader returns a Loader that searches x and writes tool definitions
// for profile ("openai" or "anthropic"); it fails for any other profile.
func (x *Index) NewLoader(profile string) (*Loader, error) {
	if profile != string(schema.OpenAI) && profile != string(schema.Anthropic) {
		return nil, fmt.Errorf("toolsearch: unknown profile %q (want %q or %q)", profile, schema.OpenAI, schema.Anthropic)
	}
	return &Loader{idx: x, profile: profile}, nil
}

// Find answers a call of the search tool with args, the model's
// arguments, with the tools it finds (see Index.Search), and records them
// as loaded. An agent that sends the tools it defers to the provider
// answers with their names instead of their definitions
// (anthropic.ToolReferences, openai.ToolSearchOutputItem); Call answers
// with the definitions. Bad arguments are an error wrapping
// mcphost.ErrBadArguments (see ParseArgs).
func (l *Loader) Find(args json.RawMessage) ([]mcphost.Tool, error) {
	a, err := ParseArgs(args)
	if err != nil {
		return nil, err
	}
	found := l.idx.Search(a.Query, a.Limit)
	tools := make([]mcphost.Tool, len(found))
	for i, r := range found {
		tools[i] = r.Tool
	}
	l.Load(tools...)
	return tools, nil
}

// Call answers a call of the search tool with args, the model's
// arguments: it finds tools as Find does and returns a result whose text
// is a JSON object {"tools": [...], "note": ...} holding each tool's
// definition as the profile's package sends it (openai.ResponsesTools or
// anthropic.Tools: the strict form from Tool.Schemas where ready), or,
// when nothing matches, a note saying so. Pass the result to the
// profile's package (openai.ChatToolMessage, anthropic.ToolResult, ...)
// as any tool result, and offer Loaded on the next turn. Bad arguments
// are an error wrapping mcphost.ErrBadArguments, for openai.ChatToolError
// or anthropic.ToolError.
func (l *Loader) Call(args json.RawMessage) (*mcp.CallToolResult, error) {
	tools, err := l.Find(args)
	if err != nil {
		return nil, err
	}
	text, err := l.definitions(tools)
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
}

// definitions returns the text a search's result carries.
func (l *Loader) definitions(tools []mcphost.Tool) (string, error) {
	var body struct {
		Tools any    `json:"tools"`
		Note  string `json:"note,omitempty"`
	}
	switch {
	case len(tools) == 0:
		body.Tools = []struct{}{}
		body.Note = "No tool matches. Search again with other words: the action and the thing it acts on."
	case l.profile == string(schema.OpenAI):
		body.Tools = openai.ResponsesTools(tools)
		body.Note = "These tools are loaded: call them by name."
	default:
		body.Tools = anthropic.Tools(tools)
		body.Note = "These tools are loaded: call them by name."
	}
	b, err := json.Marshal(body)
	if err != nil {
		return "", fmt.Errorf("toolsearch: %w", err)
	}
	return string(b), nil
}

// Load records tools as loaded, as Call does for the tools it finds: for
// an agent that maps a provider's own search results back to mcphost's
// tools (openai.LoadedTools, anthropic.ReferencedTools) and keeps one
// record of what the conversation loaded. Tools already loaded keep
// their place.
func (l *Loader) Load(tools ...mcphost.Tool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, t := range tools {
		if !slices.Contains(l.loaded, t.Name) {
			l.loaded = append(l.loaded, t.Name)
		}
	}
}

// Loaded returns the tools the conversation loaded that are still offered
// and unchanged (as Search decides), in the order they were first loaded,
// as the Index's offered function returns them now: the tools the agent
// adds to its always-loaded ones and the search tool on every later turn.
// A tool that was held, denied or changed since it was loaded is left out
// (and comes back if it is offered again as it was loaded, or as a person
// reviewed it: call Index.Rebuild first). The result is the caller's.
func (l *Loader) Loaded() []mcphost.Tool {
	l.mu.Lock()
	names := slices.Clone(l.loaded)
	l.mu.Unlock()
	if len(names) == 0 {
		return nil
	}
	s := l.idx.snap.Load()
	indexed := make(map[string]*doc, len(s.docs))
	for i := range s.docs {
		indexed[s.docs[i].name] = &s.docs[i]
	}
	current := l.idx.current()
	var out []mcphost.Tool
	for _, name := range names {
		t, ok := current[name]
		d := indexed[name]
		if !ok || d == nil || t.Digest != d.digest || fingerprint(t) != d.fp {
			continue
		}
		out = append(out, clone(*t))
	}
	return out
}

// Reset forgets every loaded tool, as at the start of a new conversation.
func (l *Loader) Reset() {
	l.mu.Lock()
	l.loaded = nil
	l.mu.Unlock()
}
