package realservers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost/mcphost/anthropic"
	"github.com/mcphost/mcphost/mcphost"
	"github.com/mcphost/mcphost/toolsearch"
)

// The corpus of the toolsearch benchmarks: the tools the real servers
// offer, read live from them (nothing of theirs is stored in this
// repository), once per test binary.
var corpus struct {
	once  sync.Once
	tools []mcphost.Tool
	skip  string // why the corpus cannot be had
	err   error
}

// realCorpus returns the tools every installed real server offers, as
// Session.Tools returns them (first sight: offered, needing approval),
// or skips (fails in CI) when the servers or node are not installed.
func realCorpus(tb testing.TB) []mcphost.Tool {
	tb.Helper()
	corpus.once.Do(func() {
		wd, err := os.Getwd()
		if err != nil {
			corpus.err = err
			return
		}
		nm, err := filepath.EvalSymlinks(filepath.Join(filepath.Dir(wd), "testdata", "realservers", "node_modules"))
		if err != nil {
			corpus.skip = fmt.Sprintf("SKIP: the real servers are not installed (%v): run `make deps`", err)
			return
		}
		node, err := exec.LookPath("node")
		if err == nil {
			node, err = filepath.EvalSymlinks(node)
		}
		if err != nil {
			corpus.skip = fmt.Sprintf("SKIP: node is not installed (%v)", err)
			return
		}
		read := []string{nm}
		if !underSystemPath(node) {
			read = append(read, filepath.Dir(filepath.Dir(node)))
		}
		var cfgs []mcphost.ServerConfig
		for _, rs := range realServers() {
			entry := filepath.Join(nm, rs.pkg, rs.entry)
			if _, err := os.Stat(entry); err != nil {
				corpus.skip = fmt.Sprintf("SKIP: %s is not installed (%v): run `make deps`", rs.pkg, err)
				return
			}
			cfgs = append(cfgs, mcphost.ServerConfig{Name: rs.name, Command: []string{node, entry},
				Read: read, Env: rs.env, StartupTimeout: startupTimeout})
		}
		// The corpus outlives the test that first asks for it, so its
		// directories are made here and removed when it is read.
		dir, err := os.MkdirTemp("", "toolsearch-corpus-")
		if err != nil {
			corpus.err = err
			return
		}
		defer os.RemoveAll(dir)
		for _, d := range []string{"work", "state"} {
			if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
				corpus.err = err
				return
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*startupTimeout)
		defer cancel()
		s, err := mcphost.Connect(ctx, cfgs, mcphost.Options{Worktree: filepath.Join(dir, "work"),
			StateDir: filepath.Join(dir, "state"), CloseGrace: closeGrace})
		if err != nil {
			corpus.err = err
			return
		}
		defer s.Close()
		corpus.tools = s.Tools()
		for _, info := range s.Servers() {
			if info.Error != "" || info.Tools == 0 {
				corpus.err = fmt.Errorf("server %s is not running with tools (%s); notices:\n%v", info.Name, info.Error, s.Notices())
			}
		}
	})
	switch {
	case corpus.err != nil:
		tb.Fatal(corpus.err)
	case corpus.skip != "":
		if os.Getenv("CI") != "" {
			tb.Fatalf("%s (CI is set, so this is a failure, not a skip)", corpus.skip)
		}
		tb.Skip(corpus.skip)
	}
	return corpus.tools
}

// searchTasks are tasks an agent might be given, written for this test in
// a user's words (not the servers'), each with the tools that do it: a
// search for the task must rank one of them in its top 5.
var searchTasks = []struct {
	task  string
	right []string
}{
	{"draw a pie chart of how the budget is split between departments", []string{"mcp__chart__generate_pie_chart"}},
	{"plot monthly revenue as a line over the last two years", []string{"mcp__chart__generate_line_chart", "mcp__chart__generate_area_chart"}},
	{"show the reporting hierarchy of the engineering team as a diagram", []string{"mcp__chart__generate_organization_chart"}},
	{"visualize how many visitors drop off at each stage from signup to checkout", []string{"mcp__chart__generate_funnel_chart", "mcp__chart__generate_sankey_chart"}},
	{"make a word cloud of the terms customers use most in reviews", []string{"mcp__chart__generate_word_cloud_chart"}},
	{"mark every store location with a pin on a map", []string{"mcp__chart__generate_pin_map"}},
	{"compare quarterly results of four products side by side with bars", []string{"mcp__chart__generate_bar_chart", "mcp__chart__generate_column_chart"}},
	{"rename report.txt to report-final.txt", []string{"mcp__commander__move_file"}},
	{"make a new folder called build/output", []string{"mcp__commander__create_directory"}},
	{"replace one line of text in a config file", []string{"mcp__commander__edit_block"}},
	{"list what files are in the src directory", []string{"mcp__commander__list_directory"}},
	{"show me the contents of README.md", []string{"mcp__commander__read_file", "mcp__commander__read_multiple_files"}},
	{"find every occurrence of TODO in the source code", []string{"mcp__commander__start_search"}},
	{"run npm test in a terminal", []string{"mcp__commander__start_process"}},
	{"stop the process with pid 4242", []string{"mcp__commander__kill_process", "mcp__commander__force_terminate"}},
	{"which processes are running and how much memory do they use", []string{"mcp__commander__list_processes"}},
	{"save the meeting summary as a PDF document", []string{"mcp__commander__write_pdf"}},
	{"append a line to the end of the changelog file", []string{"mcp__commander__write_file"}},
	{"look up the documentation of a programming library for the useEffect hook", []string{"mcp__context7__query-docs", "mcp__context7__resolve-library-id"}},
	{"open https://example.com in the browser", []string{"mcp__playwright__browser_navigate", "mcp__playwright__browser_tabs"}},
	{"click the submit button on the web page", []string{"mcp__playwright__browser_click"}},
	{"capture a screenshot of the page", []string{"mcp__playwright__browser_take_screenshot"}},
	{"type my username into the login field", []string{"mcp__playwright__browser_type", "mcp__playwright__browser_fill_form"}},
	{"go back to the previous page in the browser", []string{"mcp__playwright__browser_navigate_back"}},
	{"switch to another browser tab", []string{"mcp__playwright__browser_tabs"}},
	{"press the Enter key", []string{"mcp__playwright__browser_press_key"}},
	{"run javascript in the page to read document.title", []string{"mcp__playwright__browser_evaluate", "mcp__playwright__browser_run_code_unsafe"}},
	{"search the web for news about the latest Go release", []string{"mcp__tavily__tavily_search"}},
	{"extract the text content of these web page URLs", []string{"mcp__tavily__tavily_extract"}},
	{"crawl the documentation site and collect its pages", []string{"mcp__tavily__tavily_crawl", "mcp__tavily__tavily_map"}},
	{"think through a hard problem step by step and revise my reasoning", []string{"mcp__thinking__sequentialthinking"}},
	{"add a comment to a Notion page", []string{"mcp__notion__API-create-a-comment"}},
	{"create a new page in Notion", []string{"mcp__notion__API-post-page"}},
	{"find a Notion page by its title", []string{"mcp__notion__API-post-search"}},
	{"delete a block from a Notion page", []string{"mcp__notion__API-delete-a-block"}},
}

// TestToolSearchQuality checks that a search for each task ranks a right
// tool in its top 5 for at least 90% of the tasks, over the real corpus
// and over the corpus replicated to 1,000 tools. A replica's copies tie
// with their original, so there the top 5 are the first 5 distinct tools
// once copies are folded into their original: the check is then that the
// copies' words, which raise every term's document frequency tenfold, do
// not change the ranking.
func TestToolSearchQuality(t *testing.T) {
	tools := realCorpus(t)
	for _, tc := range []struct {
		name  string
		tools []mcphost.Tool
	}{{"real", tools}, {"1000", replicate(tools, 1000)}} {
		t.Run(tc.name, func(t *testing.T) {
			idx := toolsearch.New(func() []mcphost.Tool { return tc.tools })
			copies := (len(tc.tools) + len(tools) - 1) / len(tools)
			var top1, top5 int
			for _, task := range searchTasks {
				var got []string
				for _, r := range idx.Search(task.task, 5*copies) {
					if name := unreplicated(r.Tool.Name); !slices.Contains(got, name) && len(got) < 5 {
						got = append(got, name)
					}
				}
				rank := slices.IndexFunc(got, func(n string) bool { return slices.Contains(task.right, n) })
				switch {
				case rank == 0:
					top1++
					top5++
				case rank > 0:
					top5++
				default:
					t.Logf("miss: %q: want one of %v, got %v", task.task, task.right, got)
				}
			}
			n := len(searchTasks)
			t.Logf("%d tools, %d tasks: right tool first for %d (%.0f%%), in the top 5 for %d (%.0f%%)",
				len(tc.tools), n, top1, 100*float64(top1)/float64(n), top5, 100*float64(top5)/float64(n))
			if top5*10 < n*9 {
				t.Errorf("right tool in the top 5 for %d of %d tasks, want at least 90%%", top5, n)
			}
		})
	}
}

// replicate returns tools followed by renamed copies of them (server
// "<server>-copyN"), n tools in all: a corpus of the size the benchmarks
// need with the real corpus's text. Copies score as their originals do.
func replicate(tools []mcphost.Tool, n int) []mcphost.Tool {
	out := slices.Clone(tools)
	for c := 1; len(out) < n; c++ {
		for _, t := range tools {
			if len(out) == n {
				break
			}
			t.Server = fmt.Sprintf("%s-copy%d", t.Server, c)
			t.Name = fmt.Sprintf("mcp__%s__%s", strings.ReplaceAll(t.Server, "-", "_"), t.Tool)
			t.Digest = fmt.Sprintf("%s-copy%d", t.Digest, c)
			out = append(out, t)
		}
	}
	return out
}

// unreplicated returns the name of the original of a replicate's copy.
func unreplicated(name string) string {
	server, tool, ok := mcphost.SplitModelName(name)
	if !ok {
		return name
	}
	if i := strings.Index(server, "-copy"); i >= 0 {
		server = server[:i]
	}
	n, err := mcphost.ModelName(server, tool)
	if err != nil {
		return name
	}
	return n
}

// TestToolSearchContext reports what the tool definitions of the real
// corpus cost per turn, in bytes and estimated tokens, for each profile:
// every tool sent, or deferred behind mcphost's own search tool or the
// provider's (with the tools a search for each task loads, 5 at most).
func TestToolSearchContext(t *testing.T) {
	tools := realCorpus(t)
	idx := toolsearch.New(func() []mcphost.Tool { return tools })
	for _, profile := range []string{"openai", "anthropic"} {
		var all cost
		for _, tool := range tools {
			all.add(t, tool, profile)
		}
		var search cost
		search.add(t, toolsearch.SearchTool(), profile)
		// The tools a conversation loads: those a search for a task
		// returns, averaged over the tasks.
		var loaded cost
		for _, task := range searchTasks {
			for _, r := range idx.Search(task.task, toolsearch.DefaultLimit) {
				loaded.add(t, r.Tool, profile)
			}
		}
		loaded.bytes /= len(searchTasks)
		loaded.tokens /= len(searchTasks)
		// Loader.Call's result, which stays in the conversation: it
		// carries the definitions once more.
		var result cost
		for _, task := range searchTasks {
			l, err := idx.NewLoader(profile)
			if err != nil {
				t.Fatal(err)
			}
			args, _ := json.Marshal(map[string]any{"query": task.task, "limit": toolsearch.DefaultLimit})
			res, err := l.Call(args)
			if err != nil {
				t.Fatal(err)
			}
			text := []byte(res.Content[0].(*mcp.TextContent).Text)
			result.bytes += len(text)
			result.tokens += toolsearch.EstimateTokens(text)
		}
		result.bytes /= len(searchTasks)
		result.tokens /= len(searchTasks)
		t.Logf("%s: %d tools: all sent: %d bytes, ~%d tokens per turn", profile, len(tools), all.bytes, all.tokens)
		t.Logf("%s: mcphost search tool alone: %d bytes, ~%d tokens; with one search's tools loaded (mean of %d tasks): %d bytes, ~%d tokens; "+
			"and its result in the history: %d bytes, ~%d tokens",
			profile, search.bytes, search.tokens, len(searchTasks), search.bytes+loaded.bytes, search.tokens+loaded.tokens,
			search.bytes+loaded.bytes+result.bytes, search.tokens+loaded.tokens+result.tokens)
		if profile == "openai" {
			// OpenAI's hosted tool search still shows the model each
			// deferred function's name and description.
			var names cost
			for _, tool := range tools {
				b, _ := json.Marshal(struct{ Name, Description string }{tool.Name, tool.Description})
				names.bytes += len(b)
				names.tokens += toolsearch.EstimateTokens(b)
			}
			t.Logf("%s: hosted tool_search, all deferred: names and descriptions %d bytes, ~%d tokens; with one search's tools loaded: ~%d tokens",
				profile, names.bytes, names.tokens, names.tokens+loaded.tokens)
		}
		if profile == "anthropic" {
			// Claude's tool search: deferred tools are not in its context
			// until a search references them; what Anthropic adds to the
			// prompt for the search tool itself is not published.
			b, _ := json.Marshal(anthropic.ToolSearchBM25())
			n := toolsearch.EstimateTokens(b)
			t.Logf("%s: tool_search_tool_bm25, all deferred: %d bytes, ~%d tokens (plus Anthropic's unpublished prompt for it); with one search's tools loaded: ~%d tokens",
				profile, len(b), n, n+loaded.tokens)
		}
		if own := search.tokens + loaded.tokens + result.tokens; own >= all.tokens {
			t.Errorf("%s: deferral costs %d tokens per turn, sending all %d", profile, own, all.tokens)
		}
	}
}

type cost struct{ bytes, tokens int }

func (c *cost) add(t *testing.T, tool mcphost.Tool, profile string) {
	b, n, err := toolsearch.Cost(tool, profile)
	if err != nil {
		t.Fatal(err)
	}
	c.bytes += b
	c.tokens += n
}

// BenchmarkToolSearchBuild builds the index over the real corpus and over
// 1,000 tools (the corpus replicated); retained-B/op is the heap the
// built index holds.
func BenchmarkToolSearchBuild(b *testing.B) {
	tools := realCorpus(b)
	for _, n := range []int{len(tools), 1000} {
		corpus := replicate(tools, n)
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			var idx *toolsearch.Index
			for b.Loop() {
				idx = toolsearch.New(func() []mcphost.Tool { return corpus })
			}
			b.ReportMetric(float64(retained(func() any { return toolsearch.New(func() []mcphost.Tool { return corpus }) })), "retained-B")
			_ = idx
		})
	}
}

// retained returns how much heap what f returns keeps alive.
func retained(f func() any) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	v := f()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(v)
	if after.HeapAlloc < before.HeapAlloc {
		return 0
	}
	return after.HeapAlloc - before.HeapAlloc
}

// BenchmarkToolSearchQuery runs the tasks' searches over 1,000 tools, one
// query per iteration, with the offered function returning a prepared
// slice (Session.Tools copies every tool on each call: its cost comes on
// top, see BenchmarkToolSearchQuery/offered=copy).
func BenchmarkToolSearchQuery(b *testing.B) {
	tools := replicate(realCorpus(b), 1000)
	for _, tc := range []struct {
		name    string
		offered func() []mcphost.Tool
	}{
		{"offered=slice", func() []mcphost.Tool { return tools }},
		{"offered=copy", func() []mcphost.Tool {
			out := make([]mcphost.Tool, len(tools))
			for i, t := range tools {
				t.Schema = slices.Clone(t.Schema)
				t.Definition = slices.Clone(t.Definition)
				out[i] = t
			}
			return out
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			idx := toolsearch.New(tc.offered)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				idx.Search(searchTasks[i%len(searchTasks)].task, 5)
				i++
			}
		})
	}
}
