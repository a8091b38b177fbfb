package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCgroupJoin: a root host's helper, and so the server, is in the
// server's cgroups before the server starts, both when it is started in
// them (cgroup v1: the starting thread joins them for the fork) and when
// it is moved there after its start (cgroup v2, or v1 when that fails);
// no thread of the host stays in them.
func TestCgroupJoin(t *testing.T) {
	requireConfinement(t)
	if !dropsRoot() {
		t.Skip("only a root host makes cgroups")
	}
	for _, move := range []bool{false, true} {
		t.Run(fmt.Sprintf("moveHelper=%v", move), func(t *testing.T) {
			s := startHostileOpts(t, Config{Worktree: t.TempDir()}, startOptions{moveHelper: move})
			if !strings.HasPrefix(s.p.Limits(), "cgroup") {
				t.Skipf("no cgroup here: %s", s.p.Limits())
			}
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", s.p.helper.Pid))
			if err != nil {
				t.Fatal(err)
			}
			leaves := 0
			for _, line := range strings.Split(string(b), "\n") {
				if strings.Contains(line, "/mcphost-hostile-") {
					leaves++
				}
			}
			if want := len(s.p.joinDirs); leaves != want || want == 0 {
				t.Errorf("the helper is in %d of the server's %d cgroups:\n%s", leaves, want, b)
			}
			// The server, a child of the helper, counts in the pids
			// controller's cgroup.
			for _, d := range s.p.joinDirs {
				if n, ok := readCount(filepath.Join(d, "pids.current")); ok && n < 2 {
					t.Errorf("%s counts %d processes, want the helper and the server", d, n)
				}
			}
			tasks, _ := filepath.Glob("/proc/self/task/*/cgroup")
			for _, f := range tasks {
				b, _ := os.ReadFile(f)
				if strings.Contains(string(b), "/mcphost-") {
					t.Errorf("a thread of the host is in a server's cgroup: %s:\n%s", f, b)
				}
			}
			if err := s.p.Close(time.Second); err != nil {
				t.Fatal(err)
			}
			// Removed by Close itself: a host that exits right after it
			// leaves none behind.
			for _, d := range s.p.joinDirs {
				if _, err := os.Stat(d); err == nil {
					t.Errorf("the server's cgroup %s is still there after Close", d)
				}
			}
		})
	}
}

// TestStartTrace: with MCPHOST_START_TRACE=1, Start and Close each write
// one line with every phase, the helper's included.
func TestStartTrace(t *testing.T) {
	requireConfinement(t)
	var out lockedBuffer
	savedOn, savedOut := traceOn, traceOut
	traceOn, traceOut = func() bool { return true }, &out
	t.Cleanup(func() { traceOn, traceOut = savedOn, savedOut })
	s := startHostile(t, Config{Worktree: t.TempDir()})
	if err := s.p.Close(time.Second); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want a start line and a close line, got:\n%s", out.String())
	}
	for _, phase := range append([]string{"prepare ", "clone-exec ", "report "}, helperPhases...) {
		if !strings.Contains(lines[0], " "+phase) {
			t.Errorf("the start line lacks %q: %s", phase, lines[0])
		}
	}
	if !strings.HasPrefix(lines[0], `mcphost-sandbox: start "hostile": total `) || strings.Contains(lines[0], "helper trace:") {
		t.Errorf("start line: %s", lines[0])
	}
	if !strings.HasPrefix(lines[1], `mcphost-sandbox: close "hostile": total `) || !strings.Contains(lines[1], "server-done ") {
		t.Errorf("close line: %s", lines[1])
	}
	t.Log(lines[0])
	t.Log(lines[1])
}
