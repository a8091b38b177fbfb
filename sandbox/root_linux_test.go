package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestRootPrivate: the trees copied from the host's mounts into the
// server's root are private copies, whether the host builds the root or
// the helper does. Where the host's worktree is a shared mount (as every
// mount is under systemd), a copy made without that is its peer: the
// protected paths and pins bound in the server's root showed up in the
// host's worktree, stacked over the files, and outlived the server. (A
// root host's idmapped trees, made in the host's namespace, were such
// copies before this test.)
func TestRootPrivate(t *testing.T) {
	requireConfinement(t)
	t.Run("host builds", func(t *testing.T) {
		if !dropsRoot() || !detachedTreesWork() {
			t.Skip("the host builds the server's root only as root, on Linux 6.15 or later")
		}
		testRootPrivate(t)
	})
	t.Run("helper builds", func(t *testing.T) {
		saved := detachedTreesWork
		detachedTreesWork = func() bool { return false }
		t.Cleanup(func() { detachedTreesWork = saved })
		testRootPrivate(t)
	})
}

func testRootPrivate(t *testing.T) {
	wt := t.TempDir()
	if err := unix.Mount(wt, wt, "", unix.MS_BIND, ""); err != nil {
		t.Skipf("binding the worktree onto itself: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(wt, unix.MNT_DETACH) })
	if err := unix.Mount("", wt, "", unix.MS_SHARED, ""); err != nil {
		t.Fatalf("making the worktree shared: %v", err)
	}
	cfgFile := filepath.Join(wt, "agent.toml")
	deep := filepath.Join(wt, "sub", "deeper", "cfg")
	mkfile(t, cfgFile, "original")
	mkfile(t, deep, "original")

	s := startHostile(t, Config{Worktree: wt, Protect: []string{cfgFile, deep}})
	// The protections hold inside.
	s.check(t, []op{
		{name: "write the protected file", op: "write", args: []string{cfgFile}, errnos: []string{"EROFS"}},
		{name: "write the worktree", op: "write", args: []string{filepath.Join(wt, "other")}, ok: true},
	})
	// And nothing of them is in the host's namespace.
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	mps, err := parseMountPoints(strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	for _, mp := range mps {
		if mp != wt && isUnder(mp, wt) {
			t.Errorf("the server's mount at %s is in the host's namespace too", mp)
		}
	}
}

// TestStartConcurrent: servers started at once each get their whole root,
// read-only where it should be. Each start forks the host (its helper)
// while the others build their roots: a descriptor open for writing in a
// root under construction, copied into such a child, would keep that
// root from being made read-only (EBUSY), as the stub resolv.conf's once
// did.
func TestStartConcurrent(t *testing.T) {
	requireConfinement(t)
	p, _, _ := newProxy(t, nil)
	const n = 8
	for round := range 3 {
		var wg sync.WaitGroup
		errs := make(chan error, 4*n)
		for i := range n {
			wg.Go(func() {
				wt := t.TempDir()
				cfgFile := filepath.Join(wt, "agent.toml")
				if err := os.WriteFile(cfgFile, []byte("original"), 0o644); err != nil {
					errs <- err
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				proc, err := start(ctx, Config{
					Name: fmt.Sprintf("s%d", i), Argv: []string{hostilePath()}, Worktree: wt, Proxy: p,
					Protect: []string{cfgFile}, HostEnv: []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()},
				}, startOptions{})
				if err != nil {
					errs <- fmt.Errorf("round %d, server %d: %w", round, i, err)
					return
				}
				defer proc.Close(time.Second)
				// Not session.do: its t.Fatalf is for the test's goroutine.
				in, sc := json.NewEncoder(proc.Stdin()), bufio.NewScanner(proc.Stdout())
				ask := func(op, path string) reply {
					var r reply
					if err := in.Encode(map[string]any{"op": op, "args": []string{path}}); err != nil {
						r.Err = err.Error()
					} else if !sc.Scan() {
						r.Err = fmt.Sprintf("no reply: %v", sc.Err())
					} else if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
						r.Err = err.Error()
					}
					return r
				}
				for _, c := range []struct{ op, path, want string }{
					{"write", cfgFile, "EROFS"}, {"write", "/made-in-root", "EROFS"}, {"mkdir", "/usr/made", "EROFS"},
				} {
					if r := ask(c.op, c.path); r.Errno != c.want {
						errs <- fmt.Errorf("round %d, server %d: %s %s: %+v, want %s", round, i, c.op, c.path, r, c.want)
					}
				}
				if _, err := os.Stat("/etc/resolv.conf"); err == nil {
					if r := ask("read", "/etc/resolv.conf"); !strings.Contains(r.Out, "nameserver 127.0.0.1") {
						errs <- fmt.Errorf("round %d, server %d: resolv.conf %+v, want the stub", round, i, r)
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	}
}
