package interop_test

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcphost/mcphost/mcphost"
)

// memoryFile is where the memory server keeps its graph, in the worktree.
const memoryFile = "memory.jsonl"

// memoryServer is the config of @modelcontextprotocol/server-memory. By
// default it writes memory.jsonl next to its own code (node_modules, which
// the sandbox makes read-only); MEMORY_FILE_PATH, absolute (a relative one is
// taken relative to its code too), puts the file in the worktree.
func memoryServer(t testing.TB, h *harness) mcphost.ServerConfig {
	cfg := nodeServer(t, "memory", "server-memory")
	cfg.Env = map[string]string{"MEMORY_FILE_PATH": filepath.Join(h.worktree, memoryFile)}
	cfg.Allow = []string{"create_entities", "create_relations", "read_graph", "open_nodes", "search_nodes"}
	return cfg
}

// graph is the memory server's knowledge graph as it returns it.
type graph struct {
	Entities []struct {
		Name         string   `json:"name"`
		EntityType   string   `json:"entityType"`
		Observations []string `json:"observations"`
	} `json:"entities"`
	Relations []struct {
		From         string `json:"from"`
		To           string `json:"to"`
		RelationType string `json:"relationType"`
	} `json:"relations"`
}

func parseGraph(t *testing.T, out string) graph {
	t.Helper()
	var g graph
	if err := json.Unmarshal([]byte(out), &g); err != nil {
		t.Fatalf("not a graph: %v\n%s", err, out)
	}
	return g
}

// TestMemory writes a knowledge graph through one session of the memory
// server, closes it, and reads the graph back through a second session: the
// file lives in the worktree and survives the server.
func TestMemory(t *testing.T) {
	t.Parallel()
	h := newHarness(t)

	first := h.connect(h.opts(), memoryServer(t, h))
	call(t, first, "mcp__memory__create_entities", `{"entities":[
		{"name":"mcphost","entityType":"project","observations":["confines MCP servers"]},
		{"name":"landlock","entityType":"kernel feature","observations":["restricts file access"]}]}`)
	call(t, first, "mcp__memory__create_relations", `{"relations":[{"from":"mcphost","to":"landlock","relationType":"uses"}]}`)
	if err := first.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if f := h.file(t, memoryFile); !strings.Contains(f, `"mcphost"`) || !strings.Contains(f, `"uses"`) {
		t.Fatalf("%s in the worktree after the first session:\n%s", memoryFile, f)
	}

	second := h.connect(h.opts(), memoryServer(t, h))
	g := parseGraph(t, call(t, second, "mcp__memory__read_graph", `{}`))
	var names []string
	for _, e := range g.Entities {
		names = append(names, e.Name)
		if e.Name == "mcphost" && !slices.Equal(e.Observations, []string{"confines MCP servers"}) {
			t.Errorf("mcphost's observations = %q", e.Observations)
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"landlock", "mcphost"}) {
		t.Errorf("entities read back = %v, want landlock and mcphost", names)
	}
	if len(g.Relations) != 1 || g.Relations[0].From != "mcphost" || g.Relations[0].To != "landlock" || g.Relations[0].RelationType != "uses" {
		t.Errorf("relations read back = %+v, want mcphost uses landlock", g.Relations)
	}

	for _, tc := range []struct{ tool, args, want string }{
		{"mcp__memory__open_nodes", `{"names":["landlock"]}`, "landlock"},
		{"mcp__memory__search_nodes", `{"query":"confines"}`, "mcphost"},
	} {
		g := parseGraph(t, call(t, second, tc.tool, tc.args))
		if len(g.Entities) != 1 || g.Entities[0].Name != tc.want {
			t.Errorf("%s %s = %+v, want only %s", tc.tool, tc.args, g.Entities, tc.want)
		}
	}
}
