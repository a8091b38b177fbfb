package interop_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost/mcphost/mcphost"
	"github.com/mcphost/mcphost/pin"
)

var update = flag.Bool("update", false, "rewrite testdata/interop/schemas.digests from what the servers serve")

// server is one server under test: how to configure it in a harness.
type server struct {
	name string
	// config builds the server's config for a harness (its worktree).
	config func(t *testing.T, h *harness) mcphost.ServerConfig
	// exe is what its processes' command lines contain.
	exe func(cfg mcphost.ServerConfig) string
	// hyphenated are tool names with '-' the server must keep.
	hyphenated []string
	// schemas: check the digest of its input schemas against
	// testdata/interop/schemas.digests.
	schemas bool
}

// servers are every server under test.
func servers() []server {
	distOf := func(cfg mcphost.ServerConfig) string { return cfg.Command[1] }
	binOf := func(cfg mcphost.ServerConfig) string { return cfg.Command[0] }
	return []server{
		{
			name:       "everything",
			config:     func(t *testing.T, _ *harness) mcphost.ServerConfig { return everythingServer(t) },
			exe:        distOf,
			hyphenated: []string{"get-env", "get-sum", "trigger-long-running-operation"},
			schemas:    true,
		},
		{
			name:    "filesystem",
			config:  func(t *testing.T, h *harness) mcphost.ServerConfig { return filesystemServer(t, h) },
			exe:     distOf,
			schemas: true,
		},
		{
			name:    "memory",
			config:  func(t *testing.T, h *harness) mcphost.ServerConfig { return memoryServer(t, h) },
			exe:     distOf,
			schemas: true,
		},
		{
			name:       "mcpgo",
			config:     func(t *testing.T, _ *harness) mcphost.ServerConfig { return mcpgoServer(t) },
			exe:        binOf,
			hyphenated: []string{"reverse-text", "write-file", "notify-then-echo"},
		},
		{
			name:   "notes",
			config: func(t *testing.T, _ *harness) mcphost.ServerConfig { return notesServer(t) },
			exe:    binOf,
		},
	}
}

// TestToolLists checks, for each server, that mcphost lists exactly the
// tools a bare go-sdk client lists (every page of them), under names that
// keep the server's hyphens.
func TestToolLists(t *testing.T) {
	t.Parallel()
	for _, srv := range servers() {
		t.Run(srv.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			cfg := srv.config(t, h)
			bare := bareTools(t, cfg, h.worktree)
			s := h.connect(h.opts(), cfg)
			var want []string
			taskOnly := 0 // none: every server here negotiates 2025-11-25, which has tasks
			for _, tool := range bare {
				want = append(want, tool.Name)
			}
			slices.Sort(want)
			if len(want) == 0 {
				t.Fatalf("the bare client saw no tools of %s", srv.name)
			}

			got := toolNames(s, srv.name)
			if !slices.Equal(got, want) {
				t.Errorf("mcphost lists %d tools of %s, a bare client %d:\n mcphost: %v\n    bare: %v\nnotices:\n%s",
					len(got), srv.name, len(want), got, want, strings.Join(s.Notices(), "\n"))
			}
			// A fresh worktree and state directory: nothing to tell a
			// person about (a skipped tool, a state file problem).
			if n := s.Notices(); len(n) != taskOnly {
				t.Errorf("notices for %s:\n%s", srv.name, strings.Join(n, "\n"))
			}
			for _, tool := range s.AllTools() {
				if server, name, ok := mcphost.SplitModelName(tool.Name); !ok || server != srv.name || name != tool.Tool {
					t.Errorf("model name %s does not split back into %s/%s", tool.Name, srv.name, tool.Tool)
				}
			}
			for _, name := range srv.hyphenated {
				if _, ok := s.Tool("mcp__" + srv.name + "__" + name); !ok {
					t.Errorf("no tool mcp__%s__%s: the hyphenated name was not kept", srv.name, name)
				}
			}
			if srv.schemas {
				checkSchemas(t, srv.name, bare)
			}
		})
	}
}

// checkSchemas compares the input schemas a bare client saw with the
// digest recorded for the server in testdata/interop/schemas.digests (or
// records it, with -update). The servers are pinned, so a difference
// means the pin moved or a client changed what it decodes. Only digests
// are kept: the schemas are the servers' text, read live from what the
// test installed, and printed when they differ.
func checkSchemas(t *testing.T, name string, tools []*mcp.Tool) {
	t.Helper()
	type entry struct {
		Name        string `json:"name"`
		InputSchema any    `json:"inputSchema"`
	}
	var entries []entry
	for _, tool := range tools {
		entries = append(entries, entry{tool.Name, tool.InputSchema})
	}
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.Name, b.Name) })
	got, err := json.MarshalIndent(entries, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	digest := pin.DigestBytes(got)
	file := repoPath(t, "testdata", "interop", "schemas.digests")
	schemaDigestsMu.Lock()
	defer schemaDigestsMu.Unlock()
	data, err := os.ReadFile(file)
	if err != nil && !(*update && errors.Is(err, os.ErrNotExist)) {
		t.Fatalf("%v (run `go test ./interop -run TestToolLists -update` to record it)", err)
	}
	recorded := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if server, d, ok := strings.Cut(line, " "); ok {
			recorded[server] = d
		}
	}
	if *update {
		recorded[name] = digest
		var b strings.Builder
		for _, server := range slices.Sorted(maps.Keys(recorded)) {
			fmt.Fprintf(&b, "%s %s\n", server, recorded[server])
		}
		if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if recorded[name] != digest {
		t.Errorf("the input schemas of %s (digest %s) differ from what %s records (%q); if the pinned version changed on purpose, run `go test ./interop -run TestToolLists -update`\ngot:\n%s",
			name, digest, file, recorded[name], got)
	}
}

// schemaDigestsMu serializes the servers' reads and writes of the digests
// file (their tests run in parallel).
var schemaDigestsMu sync.Mutex

// TestCloseLeavesNoProcess closes sessions whose servers are in states that
// keep them alive past the end of their input, and checks that no process
// of theirs is left.
func TestCloseLeavesNoProcess(t *testing.T) {
	t.Parallel()
	byName := map[string]server{}
	for _, srv := range servers() {
		byName[srv.name] = srv
	}
	tests := []struct {
		name   string
		server string
		// before puts the server in the state under test; it runs after
		// the processes were found. What it returns, if not nil, runs
		// after Close.
		before func(t *testing.T, h *harness, s *mcphost.Session) (after func())
		// ignoresEOF: the server does not exit when its stdin closes, so
		// Close has to kill it after the grace period.
		ignoresEOF bool
	}{
		{name: "everything idle", server: "everything"},
		{
			// The 5s timer of the simulated logging keeps node's event
			// loop alive after stdin closes. (Once mcphost has closed
			// its end of the server's stdout too, the next write kills
			// the server with EPIPE: so the test first lets every write
			// due soon happen, the log message about the roots and the
			// first simulated one, leaving the server silent for about
			// 5s, longer than the grace period.)
			name: "everything logging", server: "everything", ignoresEOF: true,
			before: func(t *testing.T, h *harness, s *mcphost.Session) func() {
				logs := func() int { return h.log.count("server log", "server", "everything") }
				waitFor(t, "the log message about the roots", func() bool { return logs() >= 1 })
				call(t, s, "mcp__everything__toggle-simulated-logging", `{}`)
				waitFor(t, "the first simulated log message", func() bool { return logs() >= 2 })
				return nil
			},
		},
		{
			// A call in flight when Close comes, in a tool that does not
			// heed cancellation: mcp-go waits for its running handlers
			// after its input ends, so the server stays for the 15s of
			// the call unless Close kills it.
			name: "mcpgo busy", server: "mcpgo", ignoresEOF: true,
			before: func(t *testing.T, h *harness, s *mcphost.Session) func() {
				logs := func() int { return h.log.count("server log", "server", "mcpgo") }
				before := logs()
				done := make(chan error, 1)
				go func() {
					_, err := s.Call(context.Background(), "mcp__mcpgo__block", json.RawMessage(`{"seconds":15}`))
					done <- err
				}()
				// The tool logs as it starts: then the call is in flight.
				waitFor(t, "the block tool to start", func() bool { return logs() > before })
				return func() {
					if err := <-done; !errors.Is(err, mcphost.ErrServerGone) {
						t.Errorf("a call in flight during Close: err = %v, want ErrServerGone", err)
					}
				}
			},
		},
		{name: "filesystem", server: "filesystem"},
		{name: "memory", server: "memory"},
		{name: "mcpgo", server: "mcpgo"},
		{name: "notes", server: "notes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			srv := byName[tc.server]
			cfg := srv.config(t, h)
			marker := mark(t, &cfg)
			s := h.connect(h.opts(), cfg)
			exe := srv.exe(cfg)
			// The scan must see the server first, or its empty answer
			// after Close would prove nothing.
			running := serverProcesses(t, exe, marker)
			if len(running) == 0 {
				t.Fatalf("found no process of %s (command line with %s) while it runs", tc.server, exe)
			}
			// The sandbox's helpers between this process and the server
			// must go too.
			family := withAncestors(running)
			if len(family) == len(running) {
				t.Logf("note: the server runs as a direct child, with no helper process: %v", running)
			}
			var after func()
			if tc.before != nil {
				after = tc.before(t, h, s)
			}
			begin := time.Now()
			if err := s.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			took := time.Since(begin)
			t.Logf("Close took %v", took)
			if left := serverProcesses(t, exe, marker); len(left) > 0 {
				t.Errorf("after Close, processes of %s are left: %v", tc.server, left)
			}
			// The server's processes are gone when Close returns. A
			// sandbox helper that reported them all reaped may still be
			// exiting (sandbox.Process.Close does not wait for that, the
			// kernel's teardown of its namespaces): it must be gone a
			// moment later.
			for _, p := range family {
				isServer := slices.ContainsFunc(running, func(r proc) bool { return r.pid == p.pid })
				for deadline := time.Now().Add(helperExitWait); !isServer && p.alive() && time.Now().Before(deadline); {
					time.Sleep(5 * time.Millisecond)
				}
				if p.alive() {
					t.Errorf("after Close, process %v (the server or a helper of its sandbox) is left", p)
				}
			}
			// Generous bound: Close waits closeGrace, then kills.
			if took > closeGrace+10*time.Second {
				t.Errorf("Close took %v; want about the grace period %v at most", took, closeGrace)
			}
			// A server that ignores EOF makes Close wait the whole grace
			// period before it kills: shorter means the case did not test
			// what it is named for.
			if tc.ignoresEOF && took < closeGrace {
				t.Errorf("Close took %v, less than the grace period %v: %s exited on EOF, so the kill was not tested", took, closeGrace, tc.server)
			}
			if after != nil {
				after()
			}
		})
	}
}
