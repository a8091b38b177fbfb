package mcphost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcphost/mcphost/pin"
)

// echoDefs is one raw tool for the hostile raw fixtures.
const echoDefs = `[{"name":"echo","inputSchema":{"type":"object","properties":{"text":{"type":"string"}}}}]`

// waitNotice waits up to limit for a notice with all parts.
func waitNotice(t *testing.T, s *Session, limit time.Duration, parts ...string) string {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		if n := noticeWith(s, parts...); n != "" {
			return n
		}
		if time.Now().After(deadline) {
			t.Errorf("no notice with %q within %v: %q", parts, limit, s.Notices())
			return ""
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// callWithin runs a Call and fails the test if it has not returned within
// limit (the Call goes on in the background until the session closes). It
// may run on any goroutine.
func callWithin(t *testing.T, limit time.Duration, ctx context.Context, s *Session, name, args string) (time.Duration, error) {
	t.Helper()
	type result struct {
		d   time.Duration
		err error
	}
	ch := make(chan result, 1)
	start := time.Now()
	go func() {
		_, err := s.Call(ctx, name, json.RawMessage(args))
		ch <- result{time.Since(start), err}
	}()
	select {
	case r := <-ch:
		return r.d, r.err
	case <-time.After(limit):
		t.Errorf("Call(%s) has not returned after %v", name, limit)
		return limit, errHung
	}
}

var errHung = errors.New("the call hung")

// bigText is arguments far larger than a pipe's buffer (64 KiB), so that
// writing them blocks on a server that does not read.
func bigText(n int) string {
	return fmt.Sprintf(`{"text":%q}`, strings.Repeat("a", n))
}

// TestStuckWriteTimesOut: a server that stops reading its stdin does not
// hang a call whose request cannot be written: the call returns ErrTimeout
// at its call_timeout, the server is stopped with a notice that says why,
// and the other server goes on. The same with many calls at once, and with
// a caller that cancels.
func TestStuckWriteTimesOut(t *testing.T) {
	e := newEnv(t)
	stuck := rawFixture(t, e, "stuck", echoDefs, "-raw-mode", "stop-reading")
	stuck.CallTimeout = 2 * time.Second
	s := e.connect(e.opts(), stuck, fixture("good"))

	const n = 4
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := callWithin(t, 8*time.Second, context.Background(), s, "mcp__stuck__echo", bigText(256<<10+i))
			if !errors.Is(err, ErrTimeout) && !errors.Is(err, ErrServerGone) {
				t.Errorf("call of a server that does not read: %v; want ErrTimeout or ErrServerGone", err)
			}
			if d > 5*time.Second {
				t.Errorf("call returned after %v; call_timeout is 2s", d)
			}
		}()
	}
	wg.Wait()
	waitNotice(t, s, 5*time.Second, "stuck", "mcphost stopped it", "not reading its stdin")
	if got := call(t, s, "mcp__good__echo", `{"text":"x"}`); got != `{"text":"x"}` {
		t.Errorf("the other server: %q", got)
	}
	s.Close()
	waitNoProcesses(t, fixtureBin)
}

// TestStuckWriteCancelled: a caller that gives up (no deadline of its own,
// a long call_timeout) gets its Call back at once, even while the request
// is stuck in the pipe; the half-written server is stopped.
func TestStuckWriteCancelled(t *testing.T) {
	e := newEnv(t)
	stuck := rawFixture(t, e, "stuck", echoDefs, "-raw-mode", "stop-reading")
	stuck.CallTimeout = time.Minute
	s := e.connect(e.opts(), stuck)
	ctx, cancel := context.WithCancel(context.Background())
	// Late enough for the arguments to be checked and their write to be
	// stuck, on a loaded machine too.
	time.AfterFunc(time.Second, cancel)
	d, err := callWithin(t, 8*time.Second, ctx, s, "mcp__stuck__echo", bigText(256<<10))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call: %v; want context.Canceled", err)
	}
	if d > 3*time.Second {
		t.Errorf("cancelled call returned after %v, 1s after its start", d)
	}
	waitNotice(t, s, 5*time.Second, "stuck", "mcphost stopped it", "cut short")
}

// TestRequestFlood: a server that floods ping requests and never reads the
// answers is stopped once it has more unanswered requests than the bound
// (or sends one larger than the message bound), before the host's memory
// grows past tens of MiB; the other server goes on.
func TestRequestFlood(t *testing.T) {
	for _, tc := range []struct {
		name string
		kib  int
		want string
	}{
		{"many", 1, "requests that mcphost had not yet answered"},
		{"huge", 1024, "more than the"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			flood := rawFixture(t, e, "flood", echoDefs, "-raw-mode", "flood", "-flood-kib", fmt.Sprint(tc.kib))
			s := e.connect(e.opts(), flood, fixture("good"))
			peak := capHeap(t, s, 512<<20)
			waitNotice(t, s, 15*time.Second, "flood", "mcphost stopped it", tc.want)
			if got := call(t, s, "mcp__good__echo", `{"text":"x"}`); got != `{"text":"x"}` {
				t.Errorf("the other server: %q", got)
			}
			// Stopped while it runs, its tools fail with ErrServerGone;
			// stopped while its first listing completes (it floods right
			// after answering it), it did not start and has no tools.
			if _, err := s.Call(context.Background(), "mcp__flood__echo", json.RawMessage(`{"text":"x"}`)); !errors.Is(err, ErrServerGone) && !errors.Is(err, ErrUnknownTool) {
				t.Errorf("call of the stopped server: %v; want ErrServerGone or, stopped as it started, ErrUnknownTool", err)
			}
			t.Logf("peak heap in use: %d MiB", peak()>>20)
		})
	}
}

// capHeap samples the heap until the test ends and closes the session if
// it passes limit, so that a failing flood test cannot take the machine's
// memory; peak returns the highest sample.
func capHeap(t *testing.T, s *Session, limit uint64) (peak func() uint64) {
	var mu sync.Mutex
	var top uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			mu.Lock()
			top = max(top, ms.HeapInuse)
			mu.Unlock()
			if ms.HeapInuse > limit {
				t.Errorf("host heap reached %d MiB under the flood", ms.HeapInuse>>20)
				s.Close()
				return
			}
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
	return func() uint64 { mu.Lock(); defer mu.Unlock(); return top }
}

// TestListChangedStorm: a server that sends list_changed around every
// tools/list answer cannot hold calls past their call_timeout, many at
// once; it is stopped as unsettled after maxRelistRounds re-lists, with a
// notice, and the other server goes on.
func TestListChangedStorm(t *testing.T) {
	e := newEnv(t)
	storm := rawFixture(t, e, "storm", echoDefs, "-raw-mode", "storm")
	// Shorter than the time to stop it (maxRelistRounds re-lists,
	// relistInterval apart): the deadline, not the stop, ends the wait.
	storm.CallTimeout = 500 * time.Millisecond
	s := e.connect(e.opts(), storm, fixture("good"))
	const n = 16
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := callWithin(t, 10*time.Second, context.Background(), s, "mcp__storm__echo", `{"text":"x"}`)
			// A call may slip in between two re-lists and succeed; one
			// that waits ends by its deadline or with the stop.
			if err != nil && !errors.Is(err, ErrTimeout) && !errors.Is(err, ErrServerGone) {
				t.Errorf("call during the storm: %v; want success, ErrTimeout or ErrServerGone", err)
			}
			// 2s: room for a loaded machine, and still short of the
			// stop (ten re-lists 250ms apart, 2.5s).
			if d > 2*time.Second {
				t.Errorf("call during the storm returned after %v; call_timeout is 500ms", d)
			}
		}()
	}
	wg.Wait()
	waitNotice(t, s, 10*time.Second, "storm", "mcphost stopped it", "did not settle")
	if got := call(t, s, "mcp__good__echo", `{"text":"x"}`); got != `{"text":"x"}` {
		t.Errorf("the other server: %q", got)
	}
}

// TestStateDirReachRefused: a state directory a confined server could open
// (in the worktree, or in a read or write grant) is refused, naming what
// reaches it; one outside is not, and a server cannot open its lock file.
func TestStateDirReachRefused(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	inWorktree := e.opts()
	inWorktree.StateDir = filepath.Join(e.worktree, ".mcphost")
	if s, err := Connect(ctx, []ServerConfig{fixture("a")}, inWorktree); !errors.Is(err, ErrStateReachable) || !strings.Contains(err.Error(), "worktree") {
		if s != nil {
			s.Close()
		}
		t.Errorf("state in the worktree: %v; want ErrStateReachable naming the worktree", err)
	}
	for _, key := range []string{"read", "write"} {
		sc := fixture("a")
		if key == "read" {
			sc.Read = []string{filepath.Dir(e.state)}
		} else {
			sc.Write = []string{e.state}
		}
		s, err := Connect(ctx, []ServerConfig{sc}, e.opts())
		var ce *ConfigError
		if !errors.Is(err, ErrStateReachable) || !errors.As(err, &ce) || ce.Table != "mcp.a" || ce.Key != key {
			if s != nil {
				s.Close()
			}
			t.Errorf("state under a %s grant: %v; want ErrStateReachable and a ConfigError of [mcp.a] %s", key, err, key)
		}
	}
	// Outside every grant: the server cannot even open the lock file, so
	// it cannot hold it, and recording a review is not held up.
	s := e.connect(e.opts(), fixture("a", "-with-flock"))
	lockFile := filepath.Join(e.state, pin.FileName+".lock")
	// It exists on the host (connecting recorded the tools' first sight):
	// the server's failure below is the sandbox's, not a missing file's.
	if _, err := os.Stat(lockFile); err != nil {
		t.Fatalf("the state's lock file: %v", err)
	}
	got := call(t, s, "mcp__a__flock", fmt.Sprintf(`{"path":%q}`, lockFile))
	if got == "locked" {
		t.Fatalf("a server locked the state's lock file %s", lockFile)
	}
	t.Logf("flock of the lock file from the server: %s", got)
	done := make(chan error, 1)
	go func() { done <- approve(s, "mcp__a__echo") }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Approve: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Approve still waits for the state lock")
	}
}

// TestStateLockHostageBounded: a server that does hold the state's lock
// (one run with sandbox = "off", which reaches everything) cannot hang a
// review: Approve fails with pin.ErrLocked after Options.LockTimeout.
func TestStateLockHostageBounded(t *testing.T) {
	e := newEnv(t)
	opts := e.opts()
	opts.LockTimeout = 500 * time.Millisecond
	sc := fixture("off", "-with-flock")
	sc.Unconfined = true
	s := e.connect(opts, sc)
	lockFile := filepath.Join(e.state, pin.FileName+".lock")
	if got := call(t, s, "mcp__off__flock", fmt.Sprintf(`{"path":%q}`, lockFile)); got != "locked" {
		t.Fatalf("the unconfined server could not lock %s: %s", lockFile, got)
	}
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- approve(s, "mcp__off__echo") }()
	select {
	case err := <-done:
		if !errors.Is(err, pin.ErrLocked) {
			t.Errorf("Approve under a held lock: %v; want pin.ErrLocked", err)
		}
		t.Logf("Approve returned after %v: %v", time.Since(start), err)
	case <-time.After(10 * time.Second):
		t.Fatal("Approve still waits for the state lock after 10s (LockTimeout 500ms)")
	}
}
