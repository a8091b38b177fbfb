package schema

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// The npm reference servers (@modelcontextprotocol/server-everything,
// -filesystem and -memory, pinned by testdata/interop/package-lock.json at
// the module root and installed there by `make deps`) are what mcphost
// meets first. Their input schemas are read from the servers themselves
// at test time (testdata/dump_tools.js asks each for its tools/list) and
// are not copied into this repository; what is kept is what Close makes
// of them, problems only (testdata/reference_servers.golden.json).

// liveTimeout bounds the run of one reference server while its tools are
// listed.
const liveTimeout = 60 * time.Second

var live struct {
	once    sync.Once
	schemas []namedSchema
	skip    string // why the servers cannot run here
	err     error  // why a server that could run failed
}

// referenceServers returns the tools of the npm reference servers as they
// serve them now, named server/tool, or skips the test (saying why) when
// node or the packages are missing. A server that runs but fails fails
// the test.
func referenceServers(t testing.TB) []namedSchema {
	t.Helper()
	live.once.Do(loadReferenceServers)
	if live.skip != "" {
		t.Skip(live.skip)
	}
	if live.err != nil {
		t.Fatal(live.err)
	}
	return live.schemas
}

func loadReferenceServers() {
	modules, err := filepath.Abs(filepath.Join("..", "testdata", "interop", "node_modules", "@modelcontextprotocol"))
	if err != nil {
		live.err = err
		return
	}
	node, err := exec.LookPath("node")
	if err != nil {
		live.skip = "node is not installed: the reference servers' schemas cannot be read"
		return
	}
	dump, err := filepath.Abs(filepath.Join("testdata", "dump_tools.js"))
	if err != nil {
		live.err = err
		return
	}
	for _, s := range []struct {
		name string
		args []string // after the entry point; "DIR" is the server's own temporary directory
	}{
		{"server-everything", []string{"stdio"}},
		{"server-filesystem", []string{"DIR"}},
		{"server-memory", nil},
	} {
		entry := filepath.Join(modules, s.name, "dist", "index.js")
		if _, err := os.Stat(entry); err != nil {
			live.skip = fmt.Sprintf("the npm reference servers are not installed (%v): run make deps", err)
			return
		}
		tools, err := listTools(node, dump, entry, s.args)
		if err != nil {
			live.err = fmt.Errorf("@modelcontextprotocol/%s: %w", s.name, err)
			return
		}
		for _, tool := range tools {
			live.schemas = append(live.schemas, namedSchema{"@modelcontextprotocol/" + s.name + "/" + tool.Name, tool.InputSchema})
		}
	}
	if len(live.schemas) == 0 {
		live.err = errors.New("the reference servers list no tools")
	}
}

type listedTool struct {
	Name        string          `json:"name"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// listTools runs one server through dump_tools.js, in a temporary
// directory that is also its HOME (and the memory server's file), with
// no other environment than PATH, for at most liveTimeout, and returns
// its tools. Its whole process group is killed at the end.
func listTools(node, dump, entry string, args []string) ([]listedTool, error) {
	dir, err := os.MkdirTemp("", "mcphost-schema-live-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	argv := []string{dump, "live", "0", node, entry}
	for _, a := range args {
		if a == "DIR" {
			a = dir
		}
		argv = append(argv, a)
	}
	ctx, cancel := context.WithTimeout(context.Background(), liveTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, argv...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "MEMORY_FILE_PATH=" + filepath.Join(dir, "memory.jsonl")}
	ownGroup(cmd)
	cmd.Cancel = func() error { return killGroup(cmd) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if cmd.Process != nil {
		_ = killGroup(cmd) // what the server left behind
	}
	if err != nil {
		return nil, fmt.Errorf("%w (stderr: %.500s)", err, stderr.String())
	}
	var out struct {
		Tools []listedTool `json:"tools"`
	}
	line, _, _ := bufio.NewReader(&stdout).ReadLine()
	if err := json.Unmarshal(line, &out); err != nil {
		return nil, fmt.Errorf("tools/list: %w", err)
	}
	return out.Tools, nil
}

// TestReferenceServers closes every reference server tool and compares
// its problems per profile with testdata/reference_servers.golden.json
// (reviewed by hand; -update rewrites it).
func TestReferenceServers(t *testing.T) {
	type entry struct {
		ID       string            `json:"id"`
		Problems map[string]string `json:"problems"`
	}
	var got []entry
	for _, s := range referenceServers(t) {
		c, err := Close(s.Schema)
		if err != nil {
			t.Fatalf("%s: %v", s.ID, err)
		}
		e := entry{s.ID, map[string]string{}}
		for p, pr := range c.Problems {
			e.Problems[string(p)] = pr
		}
		got = append(got, e)
	}
	text, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	text = append(text, '\n')
	path := filepath.Join("testdata", "reference_servers.golden.json")
	if *update {
		if err := os.WriteFile(path, text, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run %s -update to write it)", err, t.Name())
	}
	if !bytes.Equal(want, text) {
		t.Errorf("%s differs from what Close makes of the servers' tools now:\n%s", path, text)
	}
}

// TestReferenceServersRoundTrip checks generated arguments for every
// reference server tool: the required-only and the full set pass Check,
// and for tools with a strict form survive the round trip through every
// profile's form (roundTrip).
func TestReferenceServersRoundTrip(t *testing.T) {
	for _, s := range referenceServers(t) {
		c, err := Close(s.Schema)
		if err != nil {
			t.Fatalf("%s: %v", s.ID, err)
		}
		for _, a := range generate(t, s.Schema) {
			roundTrip(t, s.ID, c, a)
		}
	}
}

// TestStrictShare reports, per profile, how many tools come out
// strict-ready, for the corpus and for the reference servers, and pins
// the numbers (they change only with a reviewed change of the goldens).
// Before constraints were moved into descriptions and Anthropic's form
// kept optional properties optional, they were 7 (OpenAI) and 8
// (Anthropic) of the corpus's 20 schemas, and 35 and 35 of the reference
// servers' 36 tools.
func TestStrictShare(t *testing.T) {
	for _, tc := range []struct {
		name   string
		set    func(testing.TB) []namedSchema
		openai int
		anthro int
	}{
		{"corpus", corpus, 8, 9},
		{"reference servers", referenceServers, 36, 36},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := tc.set(t)
			ready := map[Profile]int{}
			for _, s := range set {
				c, err := Close(s.Schema)
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range Profiles() {
					if c.Problems[p] == "" {
						ready[p]++
					}
				}
			}
			n := len(set)
			t.Logf("%s: %d schemas; strict-ready: OpenAI %d (%.0f%%), Anthropic %d (%.0f%%)",
				tc.name, n, ready[OpenAI], 100*float64(ready[OpenAI])/float64(n), ready[Anthropic], 100*float64(ready[Anthropic])/float64(n))
			if ready[OpenAI] != tc.openai || ready[Anthropic] != tc.anthro {
				t.Errorf("%s: strict-ready OpenAI %d, Anthropic %d; want %d, %d", tc.name, ready[OpenAI], ready[Anthropic], tc.openai, tc.anthro)
			}
		})
	}
}
