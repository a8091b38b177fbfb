package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcphost/mcphost/internal/testbin"
)

// stuckTable is a server that answers initialize and tools/list and then
// never reads its stdin again.
const stuckTable = `
[mcp.stuck]
command = ["FIXTURE", "-raw", "stuck.json", "-raw-mode", "stop-reading"]
allow = ["echo"]
call_timeout = "CALLTIMEOUT"
`

func newStuckEnv(t *testing.T, callTimeout string) *cliEnv {
	e := newCLIEnv(t, strings.ReplaceAll(stuckTable, "CALLTIMEOUT", callTimeout))
	defs := `[{"name":"echo","inputSchema":{"type":"object","properties":{"text":{"type":"string"}}}}]`
	if err := os.WriteFile(filepath.Join(e.worktree, "stuck.json"), []byte(defs), 0o644); err != nil {
		t.Fatal(err)
	}
	return e
}

// stuckArgs are arguments larger than a pipe's buffer (64 KiB) and smaller
// than one argument may be (128 KiB): writing them to a server that does
// not read blocks.
var stuckArgs = fmt.Sprintf(`{"text":%q}`, strings.Repeat("a", 100<<10))

// TestCallTimeoutStuckServer: `mcphost call` of a server that stopped
// reading returns at its call_timeout, saying so and that it was stopped.
func TestCallTimeoutStuckServer(t *testing.T) {
	e := newStuckEnv(t, "3s")
	start := time.Now()
	type result struct {
		code   int
		stderr string
	}
	done := make(chan result, 1)
	go func() {
		code, _, stderr := e.run("", "call", "-timeout", "5s", "mcp__stuck__echo", stuckArgs)
		done <- result{code, stderr}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("mcphost call still runs after 20s (call_timeout 3s, -timeout 5s)")
	}
	code, stderr, d := r.code, r.stderr, time.Since(start)
	if code != exitFail || !strings.Contains(stderr, "call timed out") || !strings.Contains(stderr, "stopped the server") {
		t.Errorf("exit %d, stderr %q; want 1 and a timeout that says the server was stopped", code, stderr)
	}
	if d > 5*time.Second+2*time.Second {
		t.Errorf("mcphost call took %v with call_timeout 3s", d)
	}
	t.Logf("returned after %v", d)
}

// TestSignalEndsCall: SIGINT or SIGTERM ends `mcphost call` at once, its
// call stuck writing to a server that does not read, and the server with it.
func TestSignalEndsCall(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "mcphost")
	if err := testbin.Build(bin, "."); err != nil {
		t.Fatal(err)
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			e := newStuckEnv(t, "60s")
			cmd := exec.Command(bin, "call", "-v", "-config", e.config, "-worktree", e.worktree, "-state", e.state, "mcp__stuck__echo", stuckArgs)
			var stderr syncBuffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			// The call is under way once the server has started.
			deadline := time.Now().Add(20 * time.Second)
			for !strings.Contains(stderr.String(), "server started") {
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					t.Fatalf("the server did not start: %s", stderr.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
			time.Sleep(300 * time.Millisecond)
			sent := time.Now()
			cmd.Process.Signal(sig)
			select {
			case err := <-exited:
				t.Logf("exited %v after %v; stderr:\n%s", err, time.Since(sent), stderr.String())
				// At once: far short of the call's 60s timeout, with room
				// for a loaded machine.
				if d := time.Since(sent); d > 3*time.Second {
					t.Errorf("mcphost took %v to end after %v", d, sig)
				}
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				<-exited
				t.Fatalf("mcphost still runs 10s after %v", sig)
			}
			waitGone(t, fixtureBin)
		})
	}
}

// waitGone fails the test if processes running exe outlive a short grace.
func waitGone(t *testing.T, exe string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var left []string
		ents, _ := os.ReadDir("/proc")
		for _, ent := range ents {
			if target, err := os.Readlink(filepath.Join("/proc", ent.Name(), "exe")); err == nil && target == exe {
				stat, _ := os.ReadFile(filepath.Join("/proc", ent.Name(), "stat"))
				if f := strings.Fields(string(stat)); len(f) > 2 && f[2] != "Z" {
					left = append(left, ent.Name())
				}
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes of %s left: pids %v", exe, left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
