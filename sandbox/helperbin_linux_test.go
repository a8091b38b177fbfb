package sandbox

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

var updateHelper = flag.Bool("update-helper", false, "rebuild the embedded helper programs in helperbin/ (make helper)")

// helperArchs are the architectures a helper program is embedded for: the
// ones with a seccomp filter.
var helperArchs = []string{"amd64", "arm64"}

// helperToolchain is the file naming the Go toolchain the embedded helper
// programs were built with: another toolchain builds other bytes.
const helperToolchain = "helperbin/toolchain"

// buildHelper builds internal/helper for linux/goarch into out, the one way
// the embedded copies are built: reproducibly (no paths, VCS stamp, build
// ID or cgo; the architecture's baseline instruction set) and without the
// embedded copy of itself (the mcphost_helper tag).
func buildHelper(t *testing.T, goarch, out string) {
	t.Helper()
	ldflags := "-s -w -buildid="
	if goarch == "amd64" {
		// The entry that starts the server before the runtime
		// (prestart_linux_amd64.s).
		ldflags += " -E=github.com/mcphost/mcphost/sandbox.prestartEntry"
	}
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-tags=mcphost_helper",
		"-ldflags="+ldflags, "-o", out, "./internal/helper")
	env := []string{"GOOS=linux", "GOARCH=" + goarch, "CGO_ENABLED=0", "GOFLAGS=", "GOEXPERIMENT=",
		"GOAMD64=v1", "GOARM64=v8.0", "GOTOOLCHAIN=local"}
	cmd.Env = append(os.Environ(), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the helper for %s: %v\n%s", goarch, err, b)
	}
}

// TestEmbeddedHelperCurrent checks that every embedded helper program is
// exactly what this source builds to: the binaries in helperbin/ are
// trusted for being reproducible from the repository, never for being
// there. With -update-helper it rebuilds them instead.
func TestEmbeddedHelperCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the helper for every architecture")
	}
	want, err := os.ReadFile(helperToolchain)
	if err != nil && !*updateHelper {
		t.Fatal(err)
	}
	if *updateHelper {
		for _, arch := range helperArchs {
			out := filepath.Join("helperbin", "linux-"+arch)
			buildHelper(t, arch, out)
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(out+".sha256", fmt.Appendf(nil, "%x\n", sha256.Sum256(b)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(helperToolchain, []byte(runtime.Version()+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if v := strings.TrimSpace(string(want)); v != runtime.Version() {
		msg := "the embedded helper programs were built with " + v + ", this is " + runtime.Version() + ": their bytes cannot be checked; rebuild them with make helper"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	dir := t.TempDir()
	for _, arch := range helperArchs {
		out := filepath.Join(dir, arch)
		buildHelper(t, arch, out)
		got, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		have, err := os.ReadFile(filepath.Join("helperbin", "linux-"+arch))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, have) {
			t.Errorf("helperbin/linux-%s is not what internal/helper builds to (%d bytes, built: %d): rebuild it with make helper", arch, len(have), len(got))
		}
		sum, err := os.ReadFile(filepath.Join("helperbin", "linux-"+arch+".sha256"))
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("%x\n", sha256.Sum256(have)); string(sum) != want {
			t.Errorf("helperbin/linux-%s.sha256 is %q, not the SHA-256 of helperbin/linux-%s (%q): rebuild with make helper", arch, sum, arch, want)
		}
	}
	if arch := runtime.GOARCH; arch == "amd64" || arch == "arm64" {
		have, _ := os.ReadFile(filepath.Join("helperbin", "linux-"+arch))
		if helperProgram != string(have) {
			t.Errorf("the helper embedded in this test binary is not helperbin/linux-%s", arch)
		}
		if want := fmt.Sprintf("%x\n", sha256.Sum256([]byte(helperProgram))); helperSum != want {
			t.Errorf("the helper's sum embedded in this test binary is %q, want %q", helperSum, want)
		}
	}
}

// helperExe returns what the helper of p runs: the target of its
// /proc/PID/exe.
func helperExe(t *testing.T, p *Process) string {
	t.Helper()
	exe, err := os.Readlink("/proc/" + strconv.Itoa(p.helper.Pid) + "/exe")
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// TestStartHelperProgram: Start runs the embedded helper program from a
// sealed memory file, and, told to (as it is when that cannot run), the
// host program itself; either confines the server the same way.
func TestStartHelperProgram(t *testing.T) {
	requireConfinement(t)
	if helperProgram == "" {
		t.Skipf("no helper program is embedded for %s", runtime.GOARCH)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		selfHelper bool
		want       string
	}{
		{"embedded", false, embeddedWant()},
		{"self", true, self},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wt := t.TempDir()
			outside := t.TempDir()
			tcp, tcpGot := listenTCP(t)
			s := startHostileOpts(t, Config{Worktree: wt}, startOptions{selfHelper: tc.selfHelper})
			if exe := helperExe(t, s.p); !strings.HasPrefix(exe, tc.want) {
				t.Errorf("the helper runs %q, want %q", exe, tc.want)
			}
			s.check(t, []op{
				{name: "write worktree", op: "write", args: []string{filepath.Join(wt, "x")}, ok: true},
				{name: "write outside", op: "write", args: []string{filepath.Join(outside, "x")}, errnos: []string{"ENOENT"}},
				// The helper's program, through its pid 1's exe link:
				// root's, which the server's uid may not open.
				{name: "write helper", op: "append", args: []string{"/proc/1/exe"}, errnos: []string{"EACCES"}},
				{name: "read helper", op: "read", args: []string{"/proc/1/exe"}, errnos: []string{"EACCES"}},
				// A port that listens: a refused connection would say
				// nothing of the seccomp filter's socket rule.
				{name: "tcp", op: "tcp", args: []string{tcp}, errnos: []string{"EAFNOSUPPORT"}},
			})
			if tcpGot() != 0 {
				t.Error("the TCP listener accepted a connection")
			}
			if st := s.must("status").Out; statusField(st, "NoNewPrivs") != "1" || statusField(st, "Seccomp") != "2" {
				t.Errorf("server status lacks no_new_privs or seccomp:\n%s", st)
			}
		})
	}
}

// embeddedWant is what the helper runs when it is the embedded program:
// on a root host its copy in helperCacheDir, else a memory file.
func embeddedWant() string {
	helperPath()
	if embedded.file.cached {
		return helperCacheDir + "/helper-"
	}
	return "/memfd:" + helperArg0
}

// TestHelperFallback: when the helper program cannot be executed (here a
// file without execute permission stands in for a memory file a security
// module refuses), Start runs the host program as the helper instead, and
// keeps doing so. Where the host built the root, the start had a plan
// ready for the helper program's entry, which the host program lacks: it
// gets the spec instead.
func TestHelperFallback(t *testing.T) {
	requireConfinement(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	helperPath() // loaded before the state is saved
	embedded.mu.Lock()
	saved := embedded.disabled
	embedded.mu.Unlock()
	t.Cleanup(func() {
		embedded.mu.Lock()
		embedded.disabled = saved
		embedded.mu.Unlock()
	})
	bad := filepath.Join(t.TempDir(), "helper")
	if err := os.WriteFile(bad, []byte(helperProgram), 0o644); err != nil {
		t.Fatal(err)
	}
	wt := t.TempDir()
	s := startHostileOpts(t, Config{Worktree: wt}, startOptions{helper: bad})
	if exe := helperExe(t, s.p); exe != self {
		t.Errorf("the helper runs %q, want the host program %q", exe, self)
	}
	// The host program's helper, cloned as the embedded program's was to
	// be, has the server's network namespace of its own.
	host, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	if ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", s.p.helper.Pid)); err != nil || ns == host {
		t.Errorf("the host program's helper is in the network namespace %q (%v), the host's is %q", ns, err, host)
	}
	if got := s.must("interfaces").Out; got != "lo up=false addrs=0" {
		t.Errorf("the server sees interfaces %q, want only lo, down", got)
	}
	s.must("write", filepath.Join(wt, "x"))
	if r := s.do("write", filepath.Join(t.TempDir(), "x")); r.OK {
		t.Error("the server wrote outside the worktree")
	}
	embedded.mu.Lock()
	disabled := embedded.disabled
	embedded.mu.Unlock()
	if disabled == nil && helperProgram != "" {
		t.Error("the embedded helper is still used after it failed to run")
	}
}

// TestHelperDescriptorReused: if the memory file's descriptor was closed
// by mistake and its number taken by another file, Start does not run that
// file as the helper: it falls back to the host program.
func TestHelperDescriptorReused(t *testing.T) {
	if helperProgram == "" {
		t.Skipf("no helper program is embedded for %s", runtime.GOARCH)
	}
	f, err := memoryHelper(helperProgram)
	if err != nil {
		t.Skipf("the embedded helper cannot be loaded here: %v", err)
	}
	t.Cleanup(func() { unix.Close(f.fd) }) // after useEmbedded's
	useEmbedded(t, f)
	if got := helperPath(); got != f.path() {
		t.Fatalf("helperPath() = %q, want the memory file %q", got, f.path())
	}
	// Another file takes the descriptor's number.
	other, err := os.CreateTemp(t.TempDir(), "other")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := unix.Dup3(int(other.Fd()), f.fd, unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	// A start that got the path before the number was taken: passHelper
	// checks again.
	if _, err := passHelper(&exec.Cmd{Path: f.path()}); err == nil {
		t.Error("passHelper passed on a descriptor another file took")
	}
	if got := helperPath(); got != selfExe {
		t.Errorf("helperPath() = %q after the descriptor was reused, want %q", got, selfExe)
	}
	embedded.mu.Lock()
	disabled := embedded.disabled
	embedded.mu.Unlock()
	if disabled == nil {
		t.Error("the embedded helper is not disabled after its descriptor was reused")
	}
}

// TestEmbeddedHelperSealed: the file holding the helper program cannot be
// changed, not even by this process: a memory file is sealed, a root
// host's copy immutable (FS_IMMUTABLE_FL), and either write fails with
// EPERM.
func TestEmbeddedHelperSealed(t *testing.T) {
	if helperProgram == "" {
		t.Skipf("no helper program is embedded for %s", runtime.GOARCH)
	}
	path := helperPath()
	if path == selfExe {
		t.Skipf("the embedded helper cannot run here: %v", embedded.err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteAt([]byte{0}, 0)
		f.Close()
	}
	if err == nil {
		t.Fatal("wrote to the helper program's file")
	}
	// The seal's refusal, not a wrong path or a closed descriptor.
	if !errors.Is(err, unix.EPERM) {
		t.Errorf("writing the helper program's file: %v, want EPERM (sealed or immutable)", err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != helperProgram {
		t.Errorf("the file does not hold the helper program (%d bytes, %v)", len(b), err)
	}
}

// TestHelperCache: a root host runs the helper program from its copy in
// the cache directory (helperCache), and never from a file there that
// someone other than root could have changed, or root by mistake: each
// file planted below is not the program (a shell script, as long as the
// program but for the size case). A planted copy is replaced (only root
// can write there); in a directory others could write, or one that runs
// nothing, the cache is not used at all. The test runs what was loaded
// and checks its bytes and its words (the script, run from a descriptor,
// cannot even read itself). Each case fails with its check in
// cachedFileOK, openCached or openCacheDir removed.
func TestHelperCache(t *testing.T) {
	requireHelperCopy(t)
	name := "helper-" + strings.TrimSpace(helperSum)
	mark := filepath.Join(t.TempDir(), "ran")
	script := "#!/bin/sh\ntouch " + mark + "\nexit 0\n#"
	hostile := script + strings.Repeat("x", len(helperProgram)-len(script))
	plantFile := func(t *testing.T, p string, mode os.FileMode, uid int, immutable bool) {
		t.Helper()
		if err := os.WriteFile(p, []byte(hostile), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, uid, 0); err != nil {
			t.Fatal(err)
		}
		if immutable {
			setImmutableAt(t, p, true)
		}
	}
	for _, tc := range []struct {
		name   string
		plant  func(t *testing.T, dir string)
		cached bool // the copy in dir is used
	}{
		{"empty", func(*testing.T, string) {}, true},
		{"empty, the writer's umask 0177", func(t *testing.T, _ string) {
			old := unix.Umask(0o177)
			t.Cleanup(func() { unix.Umask(old) })
		}, true},
		{"writable by its group", func(t *testing.T, dir string) { plantFile(t, filepath.Join(dir, name), 0o570, 0, true) }, true},
		{"another owner", func(t *testing.T, dir string) { plantFile(t, filepath.Join(dir, name), 0o500, 65534, true) }, true},
		{"mutable", func(t *testing.T, dir string) { plantFile(t, filepath.Join(dir, name), 0o500, 0, false) }, true},
		{"symbolic link", func(t *testing.T, dir string) {
			elsewhere := t.TempDir()
			t.Cleanup(func() { clearImmutable(elsewhere) })
			p := filepath.Join(elsewhere, "helper")
			plantFile(t, p, 0o500, 0, true)
			if err := os.Symlink(p, filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"two links", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "other")
			plantFile(t, p, 0o500, 0, false)
			if err := os.Link(p, filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
			setImmutableAt(t, p, true)
		}, true},
		{"directory writable by all", func(t *testing.T, dir string) {
			plantFile(t, filepath.Join(dir, name), 0o500, 0, true)
			if err := os.Chmod(dir, 0o777); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"directory of another owner", func(t *testing.T, dir string) {
			plantFile(t, filepath.Join(dir, name), 0o500, 0, true)
			if err := os.Chown(dir, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"not executable", func(t *testing.T, dir string) { plantFile(t, filepath.Join(dir, name), 0o400, 0, true) }, true},
		{"another size", func(t *testing.T, dir string) {
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, []byte(hostile[:len(hostile)-1]), 0o500); err != nil {
				t.Fatal(err)
			}
			setImmutableAt(t, p, true)
		}, true},
		{"ancestor writable by all", func(t *testing.T, dir string) {
			plantFile(t, filepath.Join(dir, name), 0o500, 0, true)
			if err := os.Chmod(filepath.Dir(dir), 0o777); err != nil { // not sticky
				t.Fatal(err)
			}
		}, false},
		{"noexec filesystem", func(t *testing.T, dir string) {
			if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOEXEC, "mode=0700"); err != nil {
				t.Skipf("mounting a tmpfs: %v", err)
			}
			t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
			plantFile(t, filepath.Join(dir, name), 0o500, 0, true)
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "parent", "cache")
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { clearImmutable(dir) })
			tc.plant(t, dir)
			f, err := loadHelper(helperProgram, helperSum, dir)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(f.fd)
			target, err := os.Readlink(f.path())
			if err != nil {
				t.Fatal(err)
			}
			if want := filepath.Join(dir, name); f.cached != tc.cached || tc.cached && target != want {
				t.Errorf("the helper program is %q (cached %v), want the copy %v", target, f.cached, tc.cached)
			}
			if b, err := os.ReadFile(f.path()); err != nil || string(b) != helperProgram {
				t.Errorf("%s does not hold the helper program (%d bytes, %v)", target, len(b), err)
			}
			// Run as Start runs it: the helper program refuses to run
			// unless started by Start; the script would leave its mark.
			out, err := exec.Command(f.path()).CombinedOutput()
			if _, statErr := os.Stat(mark); statErr == nil {
				t.Fatalf("the planted script ran as the helper (%v: %s)", err, out)
			}
			if !strings.Contains(string(out), "mcphost-sandbox-helper") {
				t.Errorf("running the helper program: %v: %s", err, out)
			}
			if tc.cached {
				var st unix.Stat_t
				if err := unix.Fstat(f.fd, &st); err != nil {
					t.Fatal(err)
				}
				if err := cachedFileOK(f.fd, &st, len(helperProgram)); err != nil {
					t.Errorf("the copy: %v", err)
				}
				if g, err := loadHelper(helperProgram, helperSum, dir); err != nil || !g.cached {
					t.Errorf("loading it again: cached %v, %v", g.cached, err)
				} else {
					var st2 unix.Stat_t
					unix.Fstat(g.fd, &st2)
					unix.Close(g.fd)
					if st2.Ino != st.Ino {
						t.Error("loading it again made another copy")
					}
				}
			}
		})
	}
}

// TestHelperCacheConcurrent: hosts that load the helper program at once
// into an empty cache directory all get one whole copy.
func TestHelperCacheConcurrent(t *testing.T) {
	requireHelperCopy(t)
	dir := filepath.Join(t.TempDir(), "cache")
	t.Cleanup(func() { clearImmutable(dir) })
	const n = 16
	files := make([]helperFile, n)
	var wg sync.WaitGroup
	for i := range files {
		wg.Go(func() {
			f, err := loadHelper(helperProgram, helperSum, dir)
			if err != nil {
				t.Error(err)
			}
			files[i] = f
		})
	}
	wg.Wait()
	ino := map[uint64]bool{}
	for _, f := range files {
		if !f.cached {
			t.Errorf("a host got a memory file, not the copy")
		}
		ino[f.ino] = true
		if b, err := os.ReadFile(f.path()); err != nil || string(b) != helperProgram {
			t.Errorf("a host's copy is not the helper program (%d bytes, %v)", len(b), err)
		}
		unix.Close(f.fd)
	}
	if len(ino) != 1 {
		t.Errorf("%d copies, want one", len(ino))
	}
	if names, _ := os.ReadDir(dir); len(names) != 1 {
		t.Errorf("the directory holds %d files, want one", len(names))
	}
}

// requireHelperCopy skips the test where no copy of the helper program
// can be kept: a host that is not root, or nothing embedded.
func requireHelperCopy(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("only a root host keeps a copy of the helper program")
	}
	if helperProgram == "" {
		t.Skipf("no helper program is embedded for %s", runtime.GOARCH)
	}
}

// useEmbedded makes f the embedded helper program's file, with nothing
// disabled or refused, until the test ends; then the process's own comes
// back.
func useEmbedded(t *testing.T, f helperFile) {
	t.Helper()
	helperPath() // loaded before the state is saved
	embedded.mu.Lock()
	saved, savedDisabled, savedRefused := embedded.file, embedded.disabled, embedded.refused
	embedded.file, embedded.disabled, embedded.refused = f, nil, helperFile{}
	embedded.mu.Unlock()
	t.Cleanup(func() {
		embedded.mu.Lock()
		defer embedded.mu.Unlock()
		if fd := embedded.file.fd; fd != f.fd && fd != saved.fd {
			unix.Close(fd) // a memory file that replaced f (helperRefused)
		}
		embedded.file, embedded.disabled, embedded.refused = saved, savedDisabled, savedRefused
	})
}

// setImmutableAt sets or clears FS_IMMUTABLE_FL on p; it skips the test
// where the filesystem keeps no flags.
func setImmutableAt(t *testing.T, p string, on bool) {
	t.Helper()
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := setImmutable(fd, on); err != nil {
		t.Skipf("FS_IMMUTABLE_FL on %s: %v", p, err)
	}
}

// clearImmutable clears FS_IMMUTABLE_FL on every file in dir, and gives
// dir back to root, mode 0700, so that it can be removed.
func clearImmutable(dir string) {
	os.Chmod(dir, 0o700)
	os.Chown(dir, 0, 0)
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		fd, err := unix.Open(filepath.Join(dir, e.Name()), unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if err != nil {
			continue
		}
		setImmutable(fd, false)
		unix.Close(fd)
	}
}

// TestHelperDescriptorAbovePipes: the embedded helper program runs even
// when its file's descriptor is the number just above the highest the
// child is given, where os/exec moves its own pipe before the exec (the
// exec then ran that pipe: EACCES, and every later start used the host
// program). It fails without passHelper.
func TestHelperDescriptorAbovePipes(t *testing.T) {
	if helperPath() == selfExe {
		t.Skipf("the embedded helper cannot run here: %v", embedded.err)
	}
	const base = 200
	var files []*os.File
	for i := range 2 {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		w.Close()
		if err := unix.Dup3(int(r.Fd()), base+i, unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		r.Close()
		f := os.NewFile(uintptr(base+i), "pipe")
		defer f.Close()
		files = append(files, f)
	}
	embedded.mu.Lock()
	own := embedded.file
	embedded.mu.Unlock()
	if err := unix.Dup3(own.fd, base+2, unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(base + 2) }) // after useEmbedded's
	moved := own
	moved.fd = base + 2
	useEmbedded(t, moved)
	path := helperPath()
	if path != moved.path() {
		t.Fatalf("helperPath() = %q, want %q", path, moved.path())
	}
	var out strings.Builder
	cmd := &exec.Cmd{Path: path, Args: []string{"mcphost-test"}, ExtraFiles: files, Stdout: &out, Stderr: &out}
	release, err := passHelper(cmd)
	if err != nil {
		t.Fatal(err)
	}
	err = cmd.Start()
	release()
	if err != nil {
		t.Fatalf("starting the helper program at descriptor %d: %v", base+2, err)
	}
	cmd.Wait()
	if !strings.Contains(out.String(), "mcphost-sandbox-helper") {
		t.Errorf("the program run is not the helper: %q", out.String())
	}
}

// TestHelperCacheStale: writing this version's copy removes the copies of
// other versions older than helperCopyAge, then the oldest beyond
// helperCopiesMax, immutable or not; younger ones are kept, so that hosts
// of two versions that run by turns do not rewrite theirs each time.
func TestHelperCacheStale(t *testing.T) {
	requireHelperCopy(t)
	for _, tc := range []struct {
		name   string
		others map[string]time.Duration // name: age
		kept   []string
	}{
		{"old", map[string]time.Duration{"helper-10m": 10 * time.Minute, "helper-48h": 48 * time.Hour}, []string{"helper-10m"}},
		{"many", map[string]time.Duration{"helper-10m": 10 * time.Minute, "helper-20m": 20 * time.Minute, "helper-30m": 30 * time.Minute, "helper-40m": 40 * time.Minute},
			[]string{"helper-10m", "helper-20m", "helper-30m"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "cache")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { clearImmutable(dir) })
			now := time.Now()
			for n, age := range tc.others {
				p := filepath.Join(dir, n)
				if err := os.WriteFile(p, []byte("another version"), 0o500); err != nil {
					t.Fatal(err)
				}
				if err := os.Chtimes(p, now.Add(-age), now.Add(-age)); err != nil {
					t.Fatal(err)
				}
				setImmutableAt(t, p, true)
			}
			f, err := loadHelper(helperProgram, helperSum, dir)
			if err != nil || !f.cached {
				t.Fatalf("loading the helper program: cached %v, %v", f.cached, err)
			}
			unix.Close(f.fd)
			var left []string
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				left = append(left, e.Name())
			}
			want := append([]string{"helper-" + strings.TrimSpace(helperSum)}, tc.kept...)
			slices.Sort(want)
			if !slices.Equal(left, want) {
				t.Errorf("the directory holds %q, want %q", left, want)
			}
		})
	}
}

// TestHelperCacheProcesses: hosts of one version that start at once, each
// its own process, into an empty cache directory, each run the copy: none
// removes a copy another is still making (the directory's lock), and none
// meets ETXTBSY (the copy is linked once no descriptor can write it).
func TestHelperCacheProcesses(t *testing.T) {
	requireHelperCopy(t)
	for round := range 3 {
		dir := filepath.Join(t.TempDir(), "cache")
		t.Cleanup(func() { clearImmutable(dir) })
		const n = 8
		outs := make([]string, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				cmd := exec.Command(os.Args[0])
				cmd.Env = append(os.Environ(), helperCacheEnv+"="+dir)
				b, err := cmd.CombinedOutput()
				outs[i] = fmt.Sprintf("%s(%v)", b, err)
			})
		}
		wg.Wait()
		for i, o := range outs {
			if !strings.Contains(o, "ran the copy") {
				t.Errorf("round %d, host %d: %s", round, i, o)
			}
		}
		if names, _ := os.ReadDir(dir); len(names) != 1 {
			t.Errorf("round %d: the directory holds %d files, want one", round, len(names))
		}
	}
}

// helperCacheEnv makes the test binary a host of TestHelperCacheProcesses
// (testMain): it loads the helper program with the cache directory the
// variable names, runs it, and says how that went.
const helperCacheEnv = "MCPHOST_TEST_HELPER_CACHE"

// helperCacheHost is the test binary run by TestHelperCacheProcesses.
func helperCacheHost(dir string) int {
	f, err := loadHelper(helperProgram, helperSum, dir)
	if err != nil || !f.cached {
		fmt.Printf("not the copy: cached %v, %v\n", f.cached, err)
		return 1
	}
	embedded.mu.Lock()
	embedded.file, embedded.disabled = f, nil
	embedded.mu.Unlock()
	var out strings.Builder
	cmd := &exec.Cmd{Path: helperPath(), Args: []string{"mcphost-test"}, Stdout: &out, Stderr: &out}
	release, err := passHelper(cmd)
	if err == nil {
		err = cmd.Run()
		release()
	}
	if !strings.Contains(out.String(), "mcphost-sandbox-helper") {
		fmt.Printf("running the copy: %v: %q\n", err, out.String())
		return 1
	}
	fmt.Println("ran the copy")
	return 0
}

// TestHelperCacheRefused: where the exec of a root host's copy is refused
// once it was loaded (here its mount turned noexec; on a real host, a
// security module's rule on its directory), the start runs the program
// from a memory file, and so does every later one: not the host program,
// a slower start. It fails without helperRefused.
func TestHelperCacheRefused(t *testing.T) {
	requireConfinement(t)
	requireHelperCopy(t)
	dir := filepath.Join(t.TempDir(), "cache")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { clearImmutable(dir) })
	if err := unix.Mount(dir, dir, "", unix.MS_BIND, ""); err != nil {
		t.Skipf("bind-mounting %s: %v", dir, err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	f, err := loadHelper(helperProgram, helperSum, dir)
	if err != nil || !f.cached {
		t.Fatalf("loading the copy: cached %v, %v", f.cached, err)
	}
	if err := unix.Mount("", dir, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_NOEXEC, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(f.fd) }) // after useEmbedded's
	useEmbedded(t, f)
	for i := range 2 {
		wt := t.TempDir()
		s := startHostile(t, Config{Worktree: wt})
		if exe := helperExe(t, s.p); !strings.HasPrefix(exe, "/memfd:"+helperArg0) {
			t.Errorf("start %d: the helper runs %q, want a memory file", i, exe)
		}
		s.must("write", filepath.Join(wt, "x"))
	}
	embedded.mu.Lock()
	disabled, refused := embedded.disabled, embedded.refused
	embedded.mu.Unlock()
	if disabled != nil || refused.fd != f.fd {
		t.Errorf("after the copy was refused: disabled %v, refused descriptor %d (the copy's: %d)", disabled, refused.fd, f.fd)
	}
}

// TestHelperRefusedReused: a start that took the path of a root host's
// copy before it gave way to a memory file (helperRefused) has that copy
// passed and checked as the memory file is: if the copy's descriptor was
// closed by mistake and its number taken by another file, passHelper
// refuses it rather than letting the child execute that file, and the
// memory file stays in use. It failed with passHelper passing through
// every path but the current file's.
func TestHelperRefusedReused(t *testing.T) {
	requireHelperCopy(t)
	dir := filepath.Join(t.TempDir(), "cache")
	t.Cleanup(func() { clearImmutable(dir) })
	cached, err := loadHelper(helperProgram, helperSum, dir)
	if err != nil || !cached.cached {
		t.Skipf("no copy of the helper program here (%v): the test tests nothing", err)
	}
	mem, err := memoryHelper(helperProgram)
	if err != nil {
		t.Skipf("the embedded helper cannot be loaded here: %v", err)
	}
	t.Cleanup(func() { unix.Close(mem.fd); unix.Close(cached.fd) }) // after useEmbedded's
	useEmbedded(t, mem)
	embedded.mu.Lock()
	embedded.refused = cached
	embedded.mu.Unlock()
	// Intact, the refused copy is passed as the child's own descriptor.
	cmd := &exec.Cmd{Path: cached.path()}
	release, err := passHelper(cmd)
	if err != nil || len(cmd.ExtraFiles) != 1 || cmd.Path == cached.path() {
		t.Fatalf("passHelper of the intact refused copy: %v, %d files, path %s", err, len(cmd.ExtraFiles), cmd.Path)
	}
	release()
	// Another file takes the copy's number.
	other, err := os.CreateTemp(t.TempDir(), "other")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	saved, err := unix.FcntlInt(uintptr(cached.fd), unix.F_DUPFD_CLOEXEC, helperFD)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(saved)
	if err := unix.Dup3(int(other.Fd()), cached.fd, unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	cmd = &exec.Cmd{Path: cached.path()}
	if _, err := passHelper(cmd); err == nil {
		t.Errorf("passHelper passed on the refused copy's number, which another file took (path %s, %d files)", cmd.Path, len(cmd.ExtraFiles))
	}
	if got := helperPath(); got != mem.path() {
		t.Errorf("helperPath() = %q after the refused copy's number was taken, want the memory file %q", got, mem.path())
	}
	if next := helperRefused(cached.path()); next != mem.path() {
		t.Errorf("helperRefused(the refused copy) = %q, want the memory file %q", next, mem.path())
	}
}
