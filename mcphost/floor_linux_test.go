package mcphost

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost/mcphost/internal/testbin"
)

// BenchmarkStartFloor asks how close to the bare client a confined start
// can come when the helper costs next to nothing. It starts, initializes,
// lists and closes the fixture as BenchmarkStartList does, with the go-sdk
// client alone, through testdata/floor: a small static C program (built
// here with gcc) that does the kernel work of mcphost's layers (the four
// namespaces at the clone, a tmpfs root with read-only recursive binds of
// /usr, /etc, /opt, /sys and the fixture's directory, the devices, the
// writable worktree, /proc, /dev/shm and TMPDIR as tmpfs, pivot_root, a
// cgroup v1 pids and memory join, rlimits, Landlock, a seccomp filter of
// mcphost's length, uid 65534) and none of mcphost's own (no Go runtime
// in the helper, no spec, no idmapped trees, no uid lease, no read-only
// pass over mountinfo, no report, no naming, schemas or pins). Sub-
// benchmarks, in one run: bare-sdk; floor-plain (the C program only forks
// and execs: a helper process's own cost); floor-layers;
// floor-layers-goreaper (PID 1 execs a Go program, testdata/floor/reaper,
// once it has forked the server: a helper whose Go part starts beside the
// server); and mcphost-confined. floor-layers ÷ bare-sdk is the floor
// under any helper on this machine; BENCHMARKS.md reads it. It needs Linux, root, cgroup v1
// pids and memory controllers and gcc with a static libc, and skips
// without them: it measures, it tests nothing of mcphost.
func BenchmarkStartFloor(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root (mounts and cgroups)")
	}
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		b.Skip("needs gcc to build testdata/floor")
	}
	for _, c := range []string{"pids", "memory"} {
		if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", c, "tasks")); err != nil {
			b.Skip("needs cgroup v1 pids and memory controllers")
		}
	}
	floor := filepath.Join(b.TempDir(), "floor")
	if out, err := exec.Command(gcc, "-O2", "-static", "-o", floor, "testdata/floor/floor.c").CombinedOutput(); err != nil {
		b.Skipf("building testdata/floor: %v\n%s", err, out)
	}
	// cgroups makes a pids and a memory cgroup for start n, limited as
	// mcphost limits a server's, removed when the benchmark ends if not
	// before.
	cgroups := func(b *testing.B, n int) ([]string, error) {
		var cgs []string
		limit := map[string][2]string{
			"pids":   {"pids.max", "256"},
			"memory": {"memory.limit_in_bytes", strconv.Itoa(1 << 31)},
		}
		for _, c := range []string{"pids", "memory"} {
			d := filepath.Join("/sys/fs/cgroup", c, fmt.Sprintf("mcphost-floor-%d-%d", os.Getpid(), n))
			if err := os.Mkdir(d, 0o755); err != nil {
				return cgs, err
			}
			b.Cleanup(func() { os.Remove(d) }) // after a failure
			cgs = append(cgs, d)
			if err := os.WriteFile(filepath.Join(d, limit[c][0]), []byte(limit[c][1]), 0); err != nil {
				return cgs, err
			}
		}
		return cgs, nil
	}
	removeCgroups := func(b *testing.B, cgs []string) {
		for _, d := range cgs {
			if err := os.Remove(d); err != nil {
				b.Fatal(err)
			}
		}
	}
	run := func(b *testing.B, args func(worktree, tmp string, cgs []string) []string, clone uintptr) {
		worktree := b.TempDir()
		n := 0
		for b.Loop() {
			n++
			cgs, err := cgroups(b, n)
			if err != nil {
				b.Fatal(err)
			}
			tmp := filepath.Join(os.TempDir(), fmt.Sprintf("mcphost-floor-tmp-%d", n))
			argv := args(worktree, tmp, cgs)
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: clone}
			cmd.Stderr = os.Stderr // floor's failures
			client := mcp.NewClient(&mcp.Implementation{Name: "bare", Version: "1"}, nil)
			cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd, TerminateDuration: time.Second}, nil)
			if err != nil {
				b.Fatal(err)
			}
			// Before the cgroups' removal (cleanups run last first), if a
			// failure below skips the Close.
			b.Cleanup(func() { cs.Close() })
			if bareListAll(b, cs) == 0 {
				b.Fatal("no tools")
			}
			cs.Close()
			removeCgroups(b, cgs)
		}
	}
	b.Run("bare-sdk", func(b *testing.B) {
		for b.Loop() {
			cs := bareConnect(b)
			bareListAll(b, cs)
			cs.Close()
		}
	})
	b.Run("floor-plain", func(b *testing.B) {
		run(b, func(string, string, []string) []string {
			return []string{floor, "-plain", "--", fixtureBin}
		}, 0)
	})
	// The server runs as uid 65534, with no idmapped mount to make the
	// fixture's (root's, 0700) directory its own: a copy it may read, in a
	// directory bound into its root with the Go reaper.
	dir := b.TempDir()
	prog := filepath.Join(dir, "fixture")
	data, err := os.ReadFile(fixtureBin)
	if err == nil {
		err = os.WriteFile(prog, data, 0o755)
	}
	if err == nil {
		err = os.Chmod(dir, 0o755)
	}
	if err != nil {
		b.Fatal(err)
	}
	reaper := filepath.Join(dir, "reaper")
	if err := testbin.Build(reaper, "./testdata/floor/reaper"); err != nil {
		b.Fatal(err)
	}
	// layerArgs is floor's command line for program with every layer.
	layerArgs := func(worktree, tmp string, cgs []string, goReaper bool, program string) []string {
		a := []string{floor, "-root", "/tmp", "-write", worktree, "-tmp", tmp}
		if goReaper {
			a = append(a, "-reaper", reaper)
		}
		for _, d := range cgs {
			a = append(a, "-cg", d)
		}
		for _, p := range []string{"/usr", "/etc", "/opt", "/sys", dir} {
			if _, err := os.Stat(p); err == nil {
				a = append(a, "-ro", p)
			}
		}
		return append(a, "--", program)
	}
	layers := func(goReaper bool) func(worktree, tmp string, cgs []string) []string {
		return func(worktree, tmp string, cgs []string) []string {
			return layerArgs(worktree, tmp, cgs, goReaper, prog)
		}
	}
	namespaces := uintptr(syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWNET | syscall.CLONE_NEWIPC)
	// A root without the privileges (a container's read-only cgroups, a
	// user namespace) or a kernel without a layer cannot measure: skip,
	// saying which step failed.
	cgs, err := cgroups(b, 0)
	if err != nil {
		b.Skipf("cannot make cgroups here: %v", err)
	}
	probe := exec.Command(floor, layerArgs(b.TempDir(), "/tmp/mcphost-floor-probe", cgs, false, "/bin/true")[1:]...)
	probe.SysProcAttr = &syscall.SysProcAttr{Cloneflags: namespaces}
	if out, err := probe.CombinedOutput(); err != nil {
		b.Skipf("testdata/floor cannot confine here: %v\n%s", err, out)
	}
	removeCgroups(b, cgs)
	b.Run("floor-layers", func(b *testing.B) { run(b, layers(false), namespaces) })
	b.Run("floor-layers-goreaper", func(b *testing.B) { run(b, layers(true), namespaces) })
	b.Run("mcphost-confined", func(b *testing.B) {
		opts := benchOpts(b)
		sc := fixture("one")
		for b.Loop() {
			benchConnect(b, opts, sc).Close()
		}
	})
}
