package mcphost

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/mcphost/mcphost/schema"
)

// Decision is what happens when the model calls a tool.
type Decision string

const (
	// Allow: the tool is called without asking anyone. Only tools the config
	// lists in allow, unchanged since their review, are allowed.
	Allow Decision = "allow"
	// Approval: each call goes to Options.Approver first.
	Approval Decision = "approval"
	// Deny: the tool is never called and never offered to the model.
	Deny Decision = "deny"
)

// PinStatus says how a tool compares with its reviewed definition. Every
// tool that is not denied is pinned, whether it is allowed or needs
// approval: the model reads its definition either way.
type PinStatus string

const (
	// PinNew: a tool with no review on record. Seen for the first time, its
	// definition is recorded as its first sight (unless the session's state
	// is read-only); a tool the server did not offer at its last review
	// stays PinNew, and needs approval, until a person reviews it.
	PinNew PinStatus = "new"
	// PinSame: a tool unchanged since its review.
	PinSame PinStatus = "same"
	// PinChanged: a tool whose definition changed since its review. It is
	// held from the model (Withheld) until a person re-reviews it.
	PinChanged PinStatus = "changed"
	// PinUnpinned: a denied tool (never pinned), or a tool whose pin could
	// not be read or recorded (see Notices).
	PinUnpinned PinStatus = "unpinned"
)

// Tool is one tool of one server as the agent sees it. It is plain data that
// marshals to JSON (an agent may journal the tools it offered). Every field
// that reaches the model is derived from Definition, which Digest covers.
type Tool struct {
	// Name is the model name, mcp__<server>__<tool>: what the model calls.
	Name string `json:"name"`
	// Server is the [mcp.<name>] table the tool comes from.
	Server string `json:"server"`
	// Tool is the tool's name as the server sent it.
	Tool string `json:"tool"`
	// Title is the server's display title, if any.
	Title string `json:"title,omitempty"`
	// Description is the server's description of the tool.
	Description string `json:"description"`
	// Schema is the input schema to offer the model: the strict form when
	// Strict, otherwise the schema with objects closed where that is safe.
	Schema json.RawMessage `json:"schema"`
	// Strict reports whether Schema is ready for strict decoding by the
	// default profile (OpenAI); StrictProblem says why not.
	Strict        bool   `json:"strict"`
	StrictProblem string `json:"strict_problem"`
	// StrictProblems holds the strict-readiness problem per provider profile
	// ("openai", "anthropic"; "" when ready).
	StrictProblems map[string]string `json:"strict_problems"`
	// Schemas holds the schema to offer each provider profile: the strict
	// form where that profile is ready for it (send the tool with strict
	// set), else the closed form. Schema is Schemas["openai"].
	Schemas map[string]json.RawMessage `json:"schemas"`
	// Unchecked lists constraints of the tool's schema that argument
	// checking cannot enforce (e.g. a regular expression Go cannot
	// compile), as "<pointer>: <reason>"; the server must enforce them.
	Unchecked []string `json:"unchecked,omitempty"`
	// CheckProblem, when not "", says why every call of the tool is refused:
	// its schema cannot be read, so arguments cannot be checked.
	CheckProblem string `json:"check_problem,omitempty"`
	// Decision is allow, approval or deny, after pinning.
	Decision Decision `json:"decision"`
	// Fields are the argument fields the model authors, as JSON pointers.
	Fields []string `json:"fields"`
	// Digest is the versioned digest of Definition.
	Digest string `json:"digest"`
	// Pin compares the tool with its reviewed definition.
	Pin PinStatus `json:"pin"`
	// Changed names the fields that changed since the review, when Pin is
	// PinChanged.
	Changed []string `json:"changed,omitempty"`
	// Withheld: the tool is held from the model: it changed since its
	// review, or no review covers it and its config holds such tools
	// (ServerConfig.HoldNewTools, or a lock that does not hold it), or the
	// reviews cannot be read. It is not offered (Tools leaves it out) and
	// its calls are refused (unless Options.ApproveHeld lets a person
	// approve them) until Session.Approve records it.
	Withheld bool `json:"withheld,omitempty"`
	// Annotations and OutputSchema are the server's, as sent (nil if absent).
	Annotations  json.RawMessage `json:"annotations,omitempty"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	// Definition is the tool exactly as the server listed it.
	Definition json.RawMessage `json:"definition"`
}

// Offered reports whether the tool may be offered to the model: it is not
// denied and not withheld.
func (t *Tool) Offered() bool { return t.Decision != Deny && !t.Withheld }

// SchemaFor is the one way to get the input schema to offer a provider
// profile, and whether to send it for strict decoding: the profile's own
// form (Schemas), which is strict only where that profile is ready for it
// (StrictProblems). A tool without a form for the profile (built by hand,
// or by an older mcphost) falls back to Schema, strict only when Strict
// says the strict form is there and the profile reports no problem. A
// profile the tool says nothing of is not ready: asking for strict decoding
// of a schema nobody checked could fail the whole request. The schema is
// the tool's own: clone it before changing it.
func (t *Tool) SchemaFor(profile schema.Profile) (json.RawMessage, bool) {
	problem, known := t.StrictProblems[string(profile)]
	ready := known && problem == ""
	if s, ok := t.Schemas[string(profile)]; ok {
		return s, ready
	}
	return t.Schema, ready && t.Strict
}

// maxNameLen is the longest model name providers accept.
const maxNameLen = 64

// modelNameChars reports whether s is non-empty and all of
// [A-Za-z0-9_-]. A loop over bytes, not a regular expression: discovery
// names every tool of every server, and a byte outside ASCII (any part of
// a multi-byte or invalid UTF-8 sequence) is refused as it should be.
func modelNameChars(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// ModelName returns the name a model calls a server's tool by:
// "mcp__" + server (with '-' as '_') + "__" + tool. It fails, rather than
// rename, when the result would not be at most 64 of [A-Za-z0-9_-]: a rename
// could land on another tool's name.
func ModelName(server, tool string) (string, error) {
	if err := validServerName(server); err != nil {
		return "", err
	}
	if tool == "" {
		return "", fmt.Errorf("tool of server %s has an empty name", server)
	}
	name := "mcp__" + strings.ReplaceAll(server, "-", "_") + "__" + tool
	if !modelNameChars(tool) {
		return "", fmt.Errorf("tool %q of server %s cannot be named for a model: its name has characters outside [A-Za-z0-9_-]", tool, server)
	}
	if len(name) > maxNameLen {
		return "", fmt.Errorf("tool %q of server %s cannot be named for a model: %s is %d bytes, more than %d", tool, server, name, len(name), maxNameLen)
	}
	return name, nil
}

// SplitModelName is the inverse of ModelName: it returns the server name
// (with '_' back to '-') and the tool name. ok is false for a name that
// ModelName cannot have produced.
func SplitModelName(name string) (server, tool string, ok bool) {
	rest, found := strings.CutPrefix(name, "mcp__")
	if !found {
		return "", "", false
	}
	s, t, found := strings.Cut(rest, "__")
	if !found || s == "" || t == "" {
		return "", "", false
	}
	server = strings.ReplaceAll(s, "_", "-")
	if validServerName(server) != nil {
		return "", "", false
	}
	if n, err := ModelName(server, t); err != nil || n != name {
		return "", "", false
	}
	return server, t, true
}

// policy is the config's decision for a tool, before pinning.
func (sc *ServerConfig) policy(tool string) Decision {
	switch {
	case slices.Contains(sc.Deny, tool):
		return Deny
	case slices.Contains(sc.Allow, tool):
		return Allow
	case sc.Default == Deny:
		return Deny
	default:
		return Approval
	}
}

// toolEntry is one tool with what a call needs. Immutable once published.
type toolEntry struct {
	Tool
	closed *schema.Closed
	srv    *server
	// unreviewed: the server did not offer the tool at its last review and
	// no person has reviewed it since.
	unreviewed bool
	// reviewed is the definition last reviewed, when Pin is PinChanged.
	reviewed json.RawMessage
	// task: the tool can only be called as a task (taskSupport required).
	task bool
	// output checks a result's structuredContent against the tool's
	// outputSchema (nil: it has none); outputProblem, when not "", says
	// why that schema cannot be read (checkOutput then refuses).
	output        *schema.Closed
	outputProblem string
}

// Tools returns the tools to offer the model: every tool whose decision is
// Allow or Approval and that is not Withheld, sorted by name. Denied and
// withheld tools are left out (see AllTools). The result is a copy the
// caller owns.
func (s *Session) Tools() []Tool {
	return s.collect((*Tool).Offered)
}

// AllTools returns every tool of every running server, denied and withheld
// ones included,
// sorted by name: what `mcphost list` shows a person.
func (s *Session) AllTools() []Tool {
	return s.collect(func(*Tool) bool { return true })
}

func (s *Session) collect(keep func(*Tool) bool) []Tool {
	s.mu.RLock()
	out := make([]Tool, 0, len(s.tools))
	for _, e := range s.tools {
		if keep(&e.Tool) {
			out = append(out, e.Tool.clone())
		}
	}
	s.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (t Tool) clone() Tool {
	t.Schema = slices.Clone(t.Schema)
	t.Unchecked = slices.Clone(t.Unchecked)
	if t.Schemas != nil {
		m := make(map[string]json.RawMessage, len(t.Schemas))
		for k, v := range t.Schemas {
			m[k] = slices.Clone(v)
		}
		t.Schemas = m
	}
	t.Fields = slices.Clone(t.Fields)
	t.Changed = slices.Clone(t.Changed)
	t.Annotations = slices.Clone(t.Annotations)
	t.OutputSchema = slices.Clone(t.OutputSchema)
	t.Definition = slices.Clone(t.Definition)
	if t.StrictProblems != nil {
		m := make(map[string]string, len(t.StrictProblems))
		for k, v := range t.StrictProblems {
			m[k] = v
		}
		t.StrictProblems = m
	}
	return t
}

// Tool returns one tool by model name, denied and withheld tools
// included: what a person looks up. Before anything of it reaches the
// model, check Offered (Tools returns only offered tools).
func (s *Session) Tool(name string) (Tool, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, ok := s.tools[name]
	if !ok {
		return Tool{}, false
	}
	return e.Tool.clone(), true
}
