package sandbox

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// requireRootIdmap skips unless this host is root and may make user
// namespaces and idmapped mounts, as a root host does for its servers.
func requireRootIdmap(t testing.TB) {
	t.Helper()
	if !dropsRoot() {
		t.Skip("only a root host idmaps granted paths itself")
	}
}

// requireVforkUserNS skips unless requireRootIdmap holds and vforkUserNS
// is written for this architecture.
func requireVforkUserNS(t *testing.T) {
	t.Helper()
	requireRootIdmap(t)
	if runtime.GOARCH != "amd64" {
		t.Skipf("no vforkUserNS on %s", runtime.GOARCH)
	}
}

// seenOwner returns the owner of name in dir as an idmapped copy of dir,
// mapped by the user namespace ns, shows it.
func seenOwner(t *testing.T, dir, name string, ns int) (uid, gid uint32) {
	t.Helper()
	tree, err := unix.OpenTree(unix.AT_FDCWD, dir, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		t.Fatalf("open_tree %s: %v", dir, err)
	}
	defer unix.Close(tree)
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP, Userns_fd: uint64(ns)}
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		t.Fatalf("idmapping %s: %v", dir, err)
	}
	var st unix.Stat_t
	if err := unix.Fstatat(tree, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		t.Fatal(err)
	}
	return st.Uid, st.Gid
}

// statFields returns the fields of /proc/pid/stat after the command name
// (state first), or nil if there is no such process.
func statFields(pid string) []string {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return nil
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses.
	s := string(b)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
}

// cloneZombies returns the pids of this process's children that have
// exited with no exit signal (newUserNS's) and are not reaped.
func cloneZombies(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	self := strconv.Itoa(os.Getpid())
	var out []string
	for _, e := range ents {
		// Field 38 of stat, the 36th after the name, is the exit signal.
		if f := statFields(e.Name()); len(f) > 35 && f[0] == "Z" && f[1] == self && f[35] == "0" {
			out = append(out, e.Name())
		}
	}
	return out
}

// overflowID returns the kernel's overflow uid or gid (file is
// "overflowuid" or "overflowgid"): what an unmapped ID shows as.
func overflowID(t *testing.T, file string) uint32 {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/fs/" + file)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 32)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(n)
}

// TestOwnerUserNS: the user namespace an idmapped grant is made with maps
// the grant's owner (uid and gid, each to the server uid) and nothing
// else, whether it was made by newUserNS (no process) or by a holder
// process; and newUserNS leaves no child behind.
func TestOwnerUserNS(t *testing.T) {
	requireRootIdmap(t)
	dir := t.TempDir()
	for _, f := range []struct {
		name     string
		uid, gid int
	}{{"owned", 1234, 5678}, {"other", 4321, 8765}, {"root", 0, 0}} {
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(p, f.uid, f.gid); err != nil {
			t.Fatal(err)
		}
	}
	const as = ServerID - 77
	for _, tc := range []struct {
		name string
		make func(uid, gid, as uint32) (int, error)
	}{
		{"newUserNS", newUserNS},
		{"heldUserNS", heldUserNS},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns, err := tc.make(1234, 5678, as)
			if err != nil {
				if tc.name == "newUserNS" && runtime.GOARCH != "amd64" {
					t.Skipf("no vforkUserNS on %s: %v", runtime.GOARCH, err)
				}
				t.Fatal(err)
			}
			defer unix.Close(ns)
			if uid, gid := seenOwner(t, dir, "owned", ns); uid != as || gid != as {
				t.Errorf("the owner's file shows as %d:%d, want the server uid %d:%d", uid, gid, as, as)
			}
			ou, og := overflowID(t, "overflowuid"), overflowID(t, "overflowgid")
			for _, name := range []string{"other", "root"} {
				if uid, gid := seenOwner(t, dir, name, ns); uid != ou || gid != og {
					t.Errorf("%s's file shows as %d:%d, want the unmapped %d:%d: only the owner may be mapped", name, uid, gid, ou, og)
				}
			}
			if z := cloneZombies(t); len(z) > 0 {
				t.Errorf("children left unreaped: %v", z)
			}
		})
	}
}

// TestNewUserNSConcurrent: many goroutines make namespaces at once while
// signals the program handles keep arriving at the host (a cloning
// thread's are held until its mask is restored); each namespace has its
// own mapping and no child is left. That no signal reaches the child is
// TestVforkUserNSMask's.
func TestNewUserNSConcurrent(t *testing.T) {
	requireVforkUserNS(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	sigs := make(chan os.Signal, 64)
	signal.Notify(sigs, syscall.SIGUSR1)
	defer signal.Stop(sigs)
	stop := make(chan struct{})
	var signalled sync.WaitGroup
	signalled.Add(2)
	go func() { // the signals' sender
		defer signalled.Done()
		for {
			select {
			case <-stop:
				return
			default:
				syscall.Kill(os.Getpid(), syscall.SIGUSR1)
				runtime.Gosched()
			}
		}
	}()
	received := 0
	go func() {
		defer signalled.Done()
		for {
			select {
			case <-stop:
				return
			case <-sigs:
				received++
			}
		}
	}()
	const workers, each = 16, 20
	fds := make([][]int, workers)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				ns, err := newUserNS(0, 0, uint32(ServerID-w*each-i))
				if err != nil {
					errs <- fmt.Errorf("worker %d, namespace %d: %w", w, i, err)
					return
				}
				fds[w] = append(fds[w], ns)
			}
		}()
	}
	wg.Wait()
	close(stop)
	signalled.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for w, list := range fds {
		for i, ns := range list {
			want := uint32(ServerID - w*each - i)
			if uid, gid := seenOwner(t, dir, "f", ns); uid != want || gid != want {
				t.Errorf("namespace %d of worker %d maps root to %d:%d, want %d", i, w, uid, gid, want)
			}
			unix.Close(ns)
		}
	}
	if z := cloneZombies(t); len(z) > 0 {
		t.Errorf("children left unreaped: %v", z)
	}
	if received == 0 {
		t.Error("no signal arrived while the namespaces were made")
	}
	t.Logf("%d namespaces; %d signals handled meanwhile", workers*each, received)
}

// TestVforkUserNSMask: vforkUserNS's child runs with every signal blocked
// (it shares the host's memory: a Go handler run in it would run on the
// host's stacks; a signal to the process group reaches it), sends no exit
// signal, and comes with a pidfd of it.
func TestVforkUserNSMask(t *testing.T) {
	requireVforkUserNS(t)
	pid, pidfd, errno := vforkUserNS()
	if errno != 0 {
		t.Fatal(unix.Errno(errno))
	}
	defer func() {
		unix.Close(int(pidfd))
		unix.Wait4(int(pid), nil, unix.WALL, nil)
	}()
	p := strconv.Itoa(int(pid))
	// Every signal but SIGKILL and SIGSTOP, which cannot be blocked.
	const all = "fffffffffffbfeff"
	b, err := os.ReadFile("/proc/" + p + "/status")
	if err != nil {
		t.Fatal(err)
	}
	if got := statusField(string(b), "SigBlk"); got != all {
		t.Errorf("the child's blocked signals: %s, want %s", got, all)
	}
	// The vfork parent resumes when the child lets go of its memory, a
	// little before the child is a zombie: wait for that, not reaping it.
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PIDFD, int(pidfd), &info, unix.WEXITED|unix.WNOWAIT|unix.WALL, nil); err != nil {
		t.Fatalf("waitid: %v", err)
	}
	if f := statFields(p); len(f) < 36 || f[0] != "Z" || f[35] != "0" {
		t.Errorf("the child's stat after the name: %v, want a zombie with exit signal 0", f)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(pidfd), &st); err != nil {
		t.Errorf("the pidfd: %v", err)
	} else if err := unix.PidfdSendSignal(int(pidfd), 0, nil, 0); err != nil {
		t.Errorf("the pidfd does not reach the unreaped child: %v", err)
	}
}

// BenchmarkUserNS: what one idmapping namespace costs the host, made with
// no process (newUserNS) and with a holder process (heldUserNS).
func BenchmarkUserNS(b *testing.B) {
	if !dropsRoot() {
		b.Skip("only a root host idmaps granted paths itself")
	}
	for _, bc := range []struct {
		name string
		make func(uid, gid, as uint32) (int, error)
	}{
		{"clone", newUserNS},
		{"holder", heldUserNS},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				ns, err := bc.make(0, 0, ServerID-1)
				if err != nil {
					b.Fatal(err)
				}
				unix.Close(ns)
			}
		})
	}
}
