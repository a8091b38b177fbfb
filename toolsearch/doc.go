// Package toolsearch lets an agent offer hundreds of tools without sending
// every definition on every turn: it prices each definition (Cost), and
// it searches the tools a session offers so that the model loads only
// those it needs, with any provider.
//
// # Cost
//
// Cost returns, per tool and per provider profile ("openai",
// "anthropic"), the bytes of the tool definition that package openai or
// anthropic sends and an estimate of the tokens they are
// (EstimateTokens, a local heuristic; see its documentation for how it
// counts and how close it comes). A definition the agent sends costs that
// much on every turn, whether or not the model uses the tool.
//
// # Search
//
// New builds an Index (BM25 over each tool's name, split at _, - and
// camelCase, its server, title and description, and the names and
// descriptions of its parameters) from a function that returns the
// offered tools: pass Session.Tools, so that only text a person reviewed,
// or trusted on first sight, is indexed. Tools that are denied, withheld
// or changed since their review are never indexed, and Search checks
// every hit against what the function returns at the time of the search:
// a tool that stopped being offered, or changed, after the index was built
// is never returned, even before the next Rebuild. Call Rebuild from
// Options.OnToolsChanged so that new tools can be found:
//
//	var sess atomic.Pointer[mcphost.Session]
//	idx := toolsearch.New(func() []mcphost.Tool {
//		if s := sess.Load(); s != nil {
//			return s.Tools()
//		}
//		return nil
//	})
//	opts.OnToolsChanged = func(string) { idx.Rebuild() }
//	s, err := mcphost.Connect(ctx, servers, opts)
//	...
//	sess.Store(s)
//	idx.Rebuild()
//
// Search is local and fast (no network; microseconds over a thousand
// tools, see the benchmarks in package realservers), and safe for
// concurrent use, as is everything in this package.
//
// # The search tool
//
// SearchTool is a tool definition, named ToolName, valid for both
// providers and strict-ready for both profiles, that the agent offers
// beside the tools it keeps always loaded (Keep, Split). A Loader answers
// its calls for one conversation: Loader.Call returns the definitions of
// the tools found (in the profile's form, strict where ready) as a tool
// result, and records them, so that the agent offers Loader.Loaded with
// every later request. Loader.Find returns the tools instead, for an
// agent that sends the other tools deferred to the provider and answers
// with their names (anthropic.ToolReferences,
// openai.ToolSearchOutputItem).
//
// The search tool is the agent's, not a server's: its calls go to the
// Loader, never to Session.Call. A loaded tool is an ordinary tool of the
// session: the model calls it by name and the agent passes the call to
// Session.Call, which makes every check it makes for any tool (denied,
// approval, arguments, pins). Loading a tool grants nothing.
package toolsearch
