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

// zombieChildren returns the pids of this process's children that have
// exited and not been reaped.
func zombieChildren(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	self := strconv.Itoa(os.Getpid())
	var out []string
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 1 && f[0] == "Z" && f[1] == self {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestOwnerUserNS: the user namespace an idmapped grant is made with maps
// the grant's owner to the server uid and nothing else, whether it was
// made by newUserNS (no process) or by a holder process; and newUserNS
// leaves no child behind.
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
			for _, name := range []string{"other", "root"} {
				if uid, gid := seenOwner(t, dir, name, ns); uid == as || gid == as || uid == 0 || gid == 0 {
					t.Errorf("%s's file shows as %d:%d: only the owner may be mapped", name, uid, gid)
				}
			}
			// (A holder is reaped in the background.)
			if z := zombieChildren(t); tc.name == "newUserNS" && len(z) > 0 {
				t.Errorf("children left unreaped: %v", z)
			}
		})
	}
}

// TestNewUserNSConcurrent: many goroutines make namespaces at once while
// signals the program handles keep arriving (the child of vforkUserNS
// shares the host's memory, so no handler may run in it); each namespace
// has its own mapping and no child is left.
func TestNewUserNSConcurrent(t *testing.T) {
	requireRootIdmap(t)
	if runtime.GOARCH != "amd64" {
		t.Skipf("no vforkUserNS on %s", runtime.GOARCH)
	}
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
	if z := zombieChildren(t); len(z) > 0 {
		t.Errorf("children left unreaped: %v", z)
	}
	t.Logf("%d namespaces; %d signals handled meanwhile", workers*each, received)
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
