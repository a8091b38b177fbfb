package toolsearch

import (
	"slices"

	"github.com/mcphost/mcphost/mcphost"
)

// Keep says which tools stay always loaded: sent in full on every turn,
// never deferred and never left to a search. The provider packages take
// one (openai.DeferredResponsesTools, anthropic.DeferredTools), and so does
// Split.
type Keep func(t mcphost.Tool) bool

// Servers keeps every tool of the named servers ([mcp.<name>] tables).
func Servers(names ...string) Keep {
	names = slices.Clone(names)
	return func(t mcphost.Tool) bool { return slices.Contains(names, t.Server) }
}

// Names keeps the tools with these model names (mcp__<server>__<tool>).
func Names(names ...string) Keep {
	names = slices.Clone(names)
	return func(t mcphost.Tool) bool { return slices.Contains(names, t.Name) }
}

// Any keeps a tool that any of keeps keeps.
func Any(keeps ...Keep) Keep {
	keeps = slices.Clone(keeps)
	return func(t mcphost.Tool) bool {
		for _, k := range keeps {
			if k != nil && k(t) {
				return true
			}
		}
		return false
	}
}

// Split returns the tools of tools that keep keeps, in order, and the
// rest: what an agent sends in full, and what it leaves to a search. A nil
// keep keeps nothing.
func Split(tools []mcphost.Tool, keep Keep) (kept, deferred []mcphost.Tool) {
	for _, t := range tools {
		if keep != nil && keep(t) {
			kept = append(kept, t)
		} else {
			deferred = append(deferred, t)
		}
	}
	return kept, deferred
}
