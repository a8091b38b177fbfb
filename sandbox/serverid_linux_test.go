package sandbox

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"
)

// serverUID returns the uid in a server's /proc/self/status, and fails
// the test unless it is one of the server uids.
func serverUID(t *testing.T, status string) string {
	t.Helper()
	f := strings.Fields(statusField(status, "Uid"))
	if len(f) == 0 {
		t.Fatalf("no Uid in %s", status)
	}
	uid, err := strconv.Atoi(f[0])
	if err != nil || uid > ServerID || uid <= ServerID-ServerIDSlots {
		t.Errorf("the server runs as %s, not one of the server uids %d to %d", f[0], ServerID-ServerIDSlots+1, ServerID)
	}
	return f[0]
}

// TestRootHostOwnUID: two servers of a root host do not share a kernel
// identity. Each runs as a uid of its own, so the first, which takes every
// inotify instance the kernel gives a user and keeps them, leaves the
// second its own; and each still owns what it creates in the worktree as
// the worktree's owner.
func TestRootHostOwnUID(t *testing.T) {
	requireConfinement(t)
	if !dropsRoot() {
		t.Skip("the host is not root: its servers run in user namespaces of their own (TestKernelBudgetsNonRoot)")
	}
	instances := hostInt(t, "/proc/sys/user/max_inotify_instances")
	if instances >= 1<<20 {
		t.Skipf("max_inotify_instances is %d here", instances)
	}
	wt := t.TempDir()
	a := startHostile(t, Config{Worktree: wt})
	b := startHostile(t, Config{Worktree: wt})
	ua, ub := serverUID(t, a.must("status").Out), serverUID(t, b.must("status").Out)
	if ua == ub {
		t.Errorf("both servers run as %s", ua)
	}
	// Bounded: the first takes what its uid may have (all of it, unless
	// a process outside runs as that uid too), and no more.
	r := a.do("inotify-hold", strconv.FormatInt(instances+8, 10))
	if r.OK || !strings.Contains(r.Err, "too many open files") {
		t.Fatalf("the first server's inotify instances: %+v, want EMFILE within %d", r, instances)
	}
	t.Logf("the first server took: %s", r.Err)
	b.check(t, []op{
		{name: "the second server's inotify instances", op: "inotify-hold", args: []string{"8"}, ok: true},
		{name: "the second server writes the worktree", op: "write", args: []string{filepath.Join(wt, "b")}, ok: true},
	})
	if st, err := os.Stat(filepath.Join(wt, "b")); err != nil {
		t.Error(err)
	} else if sys := st.Sys().(*syscall.Stat_t); sys.Uid != 0 || sys.Gid != 0 {
		t.Errorf("the second server's file is owned by %d:%d, want the worktree's owner 0:0", sys.Uid, sys.Gid)
	}
}

// TestServerIDLease: no two leases hold one uid; a uid freed cleanly is
// free again; one whose host died (its lock dropped, its file not
// emptied) is not taken while a process still runs as it.
func TestServerIDLease(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only a root host takes server uids")
	}
	l1, err := takeServerID()
	if err != nil {
		t.Fatal(err)
	}
	l2, err := takeServerID()
	if err != nil {
		l1.release()
		t.Fatal(err)
	}
	if l1.uid == l2.uid {
		t.Errorf("two leases of uid %d", l1.uid)
	}
	l2.release()
	// A host that dies: the kernel drops its lock, its file stays.
	dead := l1.uid
	l1.f.Close()
	sleeper := exec.Command("/bin/sleep", "60")
	sleeper.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: dead, Gid: dead}}
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	l3, err := takeServerID()
	if err != nil {
		t.Fatal(err)
	}
	if l3.uid == dead {
		t.Errorf("took uid %d while a process of the dead host's server runs as it", dead)
	}
	l3.release()
	sleeper.Process.Kill()
	sleeper.Wait()
	// Gone: the uid may be taken again (the lowest free one, unless
	// another host took it meanwhile).
	deadline := time.Now().Add(5 * time.Second)
	for {
		l4, err := takeServerID()
		if err != nil {
			t.Fatal(err)
		}
		l4.release()
		if l4.uid == dead {
			break
		}
		if time.Now().After(deadline) {
			t.Logf("uid %d was not taken again (another host may hold a lower one)", dead)
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestLeaseFreedAtClose: a root host that exits right after Close, as the
// CLI does, leaves its server's uid free: the slot's file is empty, so the
// next start takes the slot at once, not after a scan of /proc for a
// process of a server that might have outlived a dead host (4 to 5 ms
// here, on every CLI run).
func TestLeaseFreedAtClose(t *testing.T) {
	requireConfinement(t)
	if !dropsRoot() {
		t.Skip("only a root host takes server uids")
	}
	// A few hosts: the old code lost the race to reap the helper before
	// the host exited nearly always, but not every time.
	for i := 0; i < 4; i++ {
		cmd := exec.Command(hostPath(), "-hostile", hostilePath(), "-worktree", t.TempDir(), "-ops", `[{"op":"echo","args":["hi"]}]`)
		var stderr lockedBuffer
		cmd.Stderr = &stderr
		if out, err := cmd.Output(); err != nil {
			t.Fatalf("host fixture: %v\n%s\n%s", err, out, stderr.String())
		}
		host := strconv.Itoa(cmd.Process.Pid)
		ents, err := os.ReadDir(serverIDDir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			b, err := os.ReadFile(filepath.Join(serverIDDir, e.Name()))
			if err == nil && strings.TrimSpace(string(b)) == host {
				t.Fatalf("slot %s still says host %s holds it, though that host closed its server and exited", e.Name(), host)
			}
		}
	}
}

// BenchmarkServerIDLease: what a root host's start spends on its server's
// uid (taking and freeing the lowest free slot).
func BenchmarkServerIDLease(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("only a root host takes server uids")
	}
	for b.Loop() {
		l, err := takeServerID()
		if err != nil {
			b.Fatal(err)
		}
		l.release()
	}
}

// TestProbeHoldsUID: a root host's probe runs its confining thread as a
// server uid it holds, never one a live server holds, and frees it: while
// a lease is held here, the probe takes another slot (its file names this
// process), which is empty again once Probe returns.
func TestProbeHoldsUID(t *testing.T) {
	requireConfinement(t)
	if !dropsRoot() {
		t.Skip("only a root host takes server uids")
	}
	held, err := takeServerID()
	if err != nil {
		t.Fatal(err)
	}
	defer held.release()
	heldSlot := strconv.Itoa(int(ServerID - held.uid))
	self := strconv.Itoa(os.Getpid())
	// The slot files, other than the held one and those that named this
	// process before the probe (an earlier test's, freed in the
	// background), that name this process.
	var before []string
	ours := func() []string {
		ents, err := os.ReadDir(serverIDDir)
		if err != nil {
			t.Error(err)
			return nil
		}
		var out []string
		for _, e := range ents {
			if e.Name() == heldSlot || slices.Contains(before, e.Name()) {
				continue
			}
			if b, err := os.ReadFile(filepath.Join(serverIDDir, e.Name())); err == nil && strings.TrimSpace(string(b)) == self {
				out = append(out, e.Name())
			}
		}
		return out
	}
	before = ours()
	probed := make(chan error, 1)
	go func() {
		_, err := Probe()
		probed <- err
	}()
	var seen []string
	for done := false; !done; {
		select {
		case err := <-probed:
			if err != nil {
				t.Fatalf("Probe: %v", err)
			}
			done = true
		default:
			if s := ours(); len(s) > 0 {
				seen = s
			}
			time.Sleep(50 * time.Microsecond)
		}
	}
	if len(seen) == 0 {
		t.Error("the probe ran without holding a server uid of its own")
	}
	if left := ours(); slices.ContainsFunc(seen, func(s string) bool { return slices.Contains(left, s) }) {
		t.Errorf("the probe's slot (of %v) still names this process after Probe returned", seen)
	}
}

// TestUIDInUseThread: a uid that only one thread of a process runs as (as
// a helper's confining thread does), not its main thread, is in use.
func TestUIDInUseThread(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root may switch a thread to another uid")
	}
	const uid = ServerID - ServerIDSlots + 7
	if uidInUse(uid) {
		t.Skipf("uid %d is in use here", uid)
	}
	release := make(chan struct{})
	defer close(release)
	// A goroutine locked to a thread, which it keeps (the runtime ends
	// the thread when the goroutine returns), switches that thread alone
	// to uid, unless it is the main thread: then it holds that one, so
	// that the next goroutine gets another.
	lockAndSwitch := func() (tid int, err error) {
		tids, done := make(chan int, 1), make(chan error, 1)
		go func() {
			runtime.LockOSThread()
			tid := syscall.Gettid()
			tids <- tid
			if tid != os.Getpid() {
				// syscall.Setresuid would switch every thread.
				_, _, e := syscall.RawSyscall(syscall.SYS_SETRESUID, uid, uid, uid)
				if e != 0 {
					done <- e
					return
				}
			}
			done <- nil
			<-release
		}()
		return <-tids, <-done
	}
	tid, err := lockAndSwitch()
	if err == nil && tid == os.Getpid() {
		tid, err = lockAndSwitch()
	}
	if err != nil {
		t.Fatal(err)
	}
	if tid == os.Getpid() {
		t.Fatal("no thread but the main one to switch")
	}
	if !uidInUse(uid) {
		t.Errorf("uid %d, which thread %d of this process runs as, is not in use", uid, tid)
	}
}

// failingFS is a file system whose reads of the paths in errs fail with
// their error.
type failingFS struct {
	files fstest.MapFS
	errs  map[string]error
}

func (f failingFS) fail(op, name string) error {
	if err := f.errs[name]; err != nil {
		return &fs.PathError{Op: op, Path: name, Err: err}
	}
	return nil
}

func (f failingFS) Open(name string) (fs.File, error) {
	if err := f.fail("open", name); err != nil {
		return nil, err
	}
	return f.files.Open(name)
}

func (f failingFS) ReadFile(name string) ([]byte, error) {
	if err := f.fail("read", name); err != nil {
		return nil, err
	}
	return f.files.ReadFile(name)
}

func (f failingFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if err := f.fail("readdirent", name); err != nil {
		return nil, err
	}
	return f.files.ReadDir(name)
}

// TestUIDInUseReadErrors: a /proc that cannot be read says the uid is in
// use (the safe side), except a process or thread that is gone, which is
// skipped.
func TestUIDInUseReadErrors(t *testing.T) {
	const uid = 4242
	status := func(uids string, threads int) *fstest.MapFile {
		return &fstest.MapFile{Data: []byte(fmt.Sprintf("Name:\tx\nUid:\t%s\nThreads:\t%d\n", uids, threads))}
	}
	for _, c := range []struct {
		name  string
		files fstest.MapFS
		errs  map[string]error
		want  bool
	}{
		{"none runs as it", fstest.MapFS{"1/status": status("0 0 0 0", 1), "self": &fstest.MapFile{}}, nil, false},
		{"a process runs as it", fstest.MapFS{"1/status": status("0 0 0 0", 1), "7/status": status("0 4242 0 0", 1)}, nil, true},
		{"a thread runs as it", fstest.MapFS{"7/status": status("0 0 0 0", 2), "7/task/7/status": status("0 0 0 0", 2), "7/task/8/status": status("0 0 0 4242", 2)}, nil, true},
		{"/proc unreadable", fstest.MapFS{"1/status": status("0 0 0 0", 1)}, map[string]error{".": syscall.EACCES}, true},
		{"a status unreadable", fstest.MapFS{"1/status": status("0 0 0 0", 1), "7/status": status("0 0 0 0", 1)}, map[string]error{"7/status": syscall.EACCES}, true},
		{"a process gone", fstest.MapFS{"1/status": status("0 0 0 0", 1), "7/status": status("0 0 0 0", 1)}, map[string]error{"7/status": syscall.ESRCH}, false},
		{"a process removed", fstest.MapFS{"1/status": status("0 0 0 0", 1), "7/status": status("0 0 0 0", 1)}, map[string]error{"7/status": fs.ErrNotExist}, false},
		{"the threads unreadable", fstest.MapFS{"7/status": status("0 0 0 0", 2), "7/task/8/status": status("0 0 0 0", 2)}, map[string]error{"7/task": syscall.EACCES}, true},
		{"a thread's status unreadable", fstest.MapFS{"7/status": status("0 0 0 0", 2), "7/task/8/status": status("0 0 0 0", 2)}, map[string]error{"7/task/8/status": syscall.EIO}, true},
		{"a thread gone", fstest.MapFS{"7/status": status("0 0 0 0", 2), "7/task/8/status": status("0 0 0 0", 2)}, map[string]error{"7/task/8/status": syscall.ESRCH}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := uidInUseIn(failingFS{c.files, c.errs}, uid); got != c.want {
				t.Errorf("uidInUseIn = %v, want %v", got, c.want)
			}
		})
	}
}
