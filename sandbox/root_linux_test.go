package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
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
	forEachBuilder(t, testRootPrivate)
}

// forEachBuilder runs f once with the server's root built by the host
// (where it builds it: a root host, Linux 6.15 or later) and once with
// the helper building it.
func forEachBuilder(t *testing.T, f func(t *testing.T)) {
	t.Run("host builds", func(t *testing.T) {
		if !dropsRoot() || !detachedTreesWork() {
			t.Skip("the host builds the server's root only as root, on Linux 6.15 or later")
		}
		f(t)
	})
	t.Run("helper builds", func(t *testing.T) {
		saved := detachedTreesWork
		detachedTreesWork = func() bool { return false }
		t.Cleanup(func() { detachedTreesWork = saved })
		f(t)
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
// while the others build their roots, and so does a loop of /bin/true: a
// descriptor open for writing in a root under construction, copied into
// such a child, would keep that root from being made read-only (EBUSY),
// as the stub resolv.conf's once did.
func TestStartConcurrent(t *testing.T) {
	requireConfinement(t)
	p, _, _ := newProxy(t, nil)
	// The host's other work forks meanwhile, as an agent's does (git,
	// other tools), widening the window.
	stop := make(chan struct{})
	forked := make(chan struct{})
	go func() {
		defer close(forked)
		for {
			select {
			case <-stop:
				return
			default:
				exec.Command("/bin/true").Run()
			}
		}
	}()
	defer func() { close(stop); <-forked }()
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

// TestNonRootTmpGranted: a host that is not root (its helper builds the
// root, in a user namespace) may grant the host's temporary directory,
// in which the helper mounts the new root while it builds it. The trees
// are copied before that mount covers the directory: a copy made after
// would hold the new root itself, read-only, and Start failed making the
// worktree's mount point in it (EROFS).
func TestNonRootTmpGranted(t *testing.T) {
	requireConfinement(t)
	if os.Getuid() != 0 {
		t.Skip("needs root to run the host fixture as nobody")
	}
	hostTmp, err := filepath.EvalSymlinks(os.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if hostTmp != rootScratch {
		t.Skipf("the host's temporary directory is %s, not %s, where the helper builds the root", hostTmp, rootScratch)
	}
	wt := nobodyDir(t, "mcphost-nonroot-tmp-wt-")
	home := nobodyDir(t, "mcphost-nonroot-tmp-home-")
	mkfile(t, filepath.Join(wt, "seen"), "in the worktree")
	os.Chown(filepath.Join(wt, "seen"), 65534, 65534)
	ops := fmt.Sprintf(`[{"op":"read","args":[%q]},{"op":"write","args":[%q]}]`, filepath.Join(wt, "seen"), filepath.Join(wt, "made"))
	lines, stderr := hostAsNobody(t, wt, home, "-worktree", wt, "-home", home, "-read", hostTmp, "-ops", ops)
	r := fixtureReplies(t, lines, stderr, 2)
	if !r[0].OK || r[0].Out != "in the worktree" {
		t.Errorf("reading the worktree: %+v", r[0])
	}
	if !r[1].OK {
		t.Errorf("writing the worktree: %+v", r[1])
	}
}

// TestRootSourcesCloseOnExec: the trees a root host copies for a server's
// root are close-on-exec. The host builds roots beside its other
// goroutines, which start processes (other servers' helpers, git): a
// child that inherited a copy would hold part of the server's mounts for
// as long as it lives.
func TestRootSourcesCloseOnExec(t *testing.T) {
	requireConfinement(t)
	if !dropsRoot() {
		t.Skip("idmapped trees are a root host's")
	}
	dir := t.TempDir()
	f, err := idmappedTree(dir, ServerID)
	if err != nil {
		t.Skipf("no idmapped tree here: %v", err)
	}
	defer f.Close()
	home := t.TempDir()
	sources, err := rootSources(mountPlan{NewRoot: true, Binds: []string{"/usr"}, Home: "/home/server", HomeSource: home}, map[string]int{dir: int(f.Fd())})
	if err != nil {
		t.Fatal(err)
	}
	defer closeSources(sources)
	if len(sources) < 3 {
		t.Fatalf("%d sources, want /usr, the idmapped tree, the home and the devices", len(sources))
	}
	for _, s := range sources {
		if s.fd < 0 {
			continue
		}
		if fl, err := unix.FcntlInt(uintptr(s.fd), unix.F_GETFD, 0); err != nil || fl&unix.FD_CLOEXEC == 0 {
			t.Errorf("%s: descriptor %d is not close-on-exec (flags %#x, %v)", s.path, s.fd, fl, err)
		}
	}
}

// TestStubResolvConfForkLock: the stub resolv.conf is written in the new
// root under syscall.ForkLock, so that no fork of the host (os/exec holds
// the lock across its fork) copies the descriptor open for writing, which
// would keep the root from being made read-only (EBUSY) until that child
// execs. TestStartConcurrent meets that race only now and then; this
// checks the lock itself.
func TestStubResolvConfForkLock(t *testing.T) {
	requireConfinement(t)
	if !dropsRoot() || !detachedTreesWork() {
		t.Skip("builds a detached root, as a root host does on Linux 6.15 or later")
	}
	root, err := newTmpfs(rootOptions, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(root)
	for _, d := range []string{"etc"} {
		if err := unix.Mkdirat(root, d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mknodat(root, "etc/resolv.conf", unix.S_IFREG|0o644, 0); err != nil {
		t.Fatal(err)
	}
	syscall.ForkLock.Lock()
	done := make(chan error, 1)
	go func() { done <- bindStubResolvConf(root) }()
	select {
	case err := <-done:
		syscall.ForkLock.Unlock()
		t.Fatalf("the stub resolv.conf was made while a fork held ForkLock (%v)", err)
	case <-time.After(100 * time.Millisecond):
	}
	syscall.ForkLock.Unlock()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	if err := unix.MountSetattr(root, "", unix.AT_EMPTY_PATH, &attr); err != nil {
		t.Errorf("making the root read-only after: %v", err)
	}
}

// TestHostRootRefused: where the kernel refuses a step of the host's
// build that its probe did not try (a container's user namespace, a
// security module), the server still starts, its root built by the
// helper, with idmapped trees made anew (the host's build spent the
// first ones), and later starts go to the helper at once.
func TestHostRootRefused(t *testing.T) {
	requireConfinement(t)
	if !dropsRoot() || !detachedTreesWork() {
		t.Skip("the host builds the server's root only as root, on Linux 6.15 or later")
	}
	t.Cleanup(func() { hostBuild.refused.Store(nil) })
	wt := t.TempDir()
	cfgFile := filepath.Join(wt, "agent.toml")
	mkfile(t, cfgFile, "original")
	refused := unsupportedStep("making the new root read-only", fmt.Errorf("mount_setattr: %w", unix.EPERM))
	s := startHostileOpts(t, Config{Worktree: wt, Protect: []string{cfgFile}}, startOptions{rootRefused: refused})
	s.check(t, []op{
		{name: "write the worktree", op: "write", args: []string{filepath.Join(wt, "made")}, ok: true},
		{name: "write the protected file", op: "write", args: []string{cfgFile}, errnos: []string{"EROFS"}},
		{name: "write /usr", op: "mkdir", args: []string{"/usr/made"}, errnos: []string{"EROFS"}},
	})
	if detachedTreesWork() {
		t.Error("the host would still build roots after a refusal")
	}
	st, err := os.Stat(filepath.Join(wt, "made"))
	if err != nil {
		t.Fatal(err)
	}
	if sys := st.Sys().(*syscall.Stat_t); sys.Uid != 0 {
		t.Errorf("the server's file is owned by %d, want 0, the worktree's owner (through the idmapped tree made anew)", sys.Uid)
	}
}

// TestNonRootRootGranted: a host that is not root may grant / itself:
// the host's tree is then the server's view (applyHostTree), read-only
// but for the writable roots, with a fresh /proc, masked.
func TestNonRootRootGranted(t *testing.T) {
	requireConfinement(t)
	if os.Getuid() != 0 {
		t.Skip("needs root to run the host fixture as nobody")
	}
	wt := nobodyDir(t, "mcphost-nonroot-slash-wt-")
	home := nobodyDir(t, "mcphost-nonroot-slash-home-")
	ops := fmt.Sprintf(`[{"op":"write","args":[%q]},{"op":"write","args":["/etc/mcphost-planted"]},{"op":"read","args":["/proc/keys"]},{"op":"readdir","args":["/usr"]}]`, filepath.Join(wt, "made"))
	lines, stderr := hostAsNobody(t, wt, home, "-worktree", wt, "-home", home, "-read", "/", "-ops", ops)
	replies := fixtureReplies(t, lines, stderr, 4)
	if !replies[0].OK {
		t.Errorf("writing the worktree: %+v", replies[0])
	}
	if replies[1].Errno != "EROFS" {
		t.Errorf("writing /etc: %+v, want EROFS", replies[1])
	}
	if !replies[2].OK || replies[2].Out != "" {
		t.Errorf("reading /proc/keys: %+v, want it empty", replies[2])
	}
	if !replies[3].OK {
		t.Errorf("listing /usr: %+v", replies[3])
	}
}

// fixtureReplies returns the host fixture's replies among its output's
// lines, failing the test unless there are n, followed by "ready".
func fixtureReplies(t *testing.T, lines []string, stderr string, n int) []reply {
	t.Helper()
	var replies []reply
	for _, l := range lines {
		var r reply
		if strings.HasPrefix(l, "{") && json.Unmarshal([]byte(l), &r) == nil {
			replies = append(replies, r)
		}
	}
	if len(replies) != n || lines[len(lines)-1] != "ready" {
		t.Fatalf("want %d replies, then ready; host fixture output:\n%s\nstderr: %s", n, strings.Join(lines, "\n"), stderr)
	}
	return replies
}

// TestRootScratchPrivate: on a host whose mounts are shared (systemd's
// default), the server's root, attached at rootScratch on its way to
// pivot_root, and everything the helper mounts after it, stay in the
// server's namespace: the host fixture, in a namespace of its own whose
// every mount it made shared, sees the same mount points before the start
// and while the server runs.
func TestRootScratchPrivate(t *testing.T) {
	requireConfinement(t)
	if os.Getuid() != 0 {
		t.Skip("needs root to give the host fixture a mount namespace of its own")
	}
	cmd := exec.Command(hostPath(), "-hostile", hostilePath(), "-worktree", t.TempDir(), "-shared-root")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS}
	cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=/usr/bin:/bin"}
	var errBuf lockedBuffer
	cmd.Stderr = &errBuf
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("host fixture: %v\n%s", err, errBuf.String())
	}
	var mounts []string
	for _, line := range strings.Split(string(out), "\n") {
		if m, ok := strings.CutPrefix(line, "mounts: "); ok {
			mounts = append(mounts, m)
		}
	}
	if len(mounts) != 2 {
		t.Fatalf("want the mount points before and after the start, got:\n%s", out)
	}
	if mounts[0] != mounts[1] {
		t.Errorf("the host's mount points changed with the server's start:\nbefore: %s\nafter:  %s", mounts[0], mounts[1])
	}
}
