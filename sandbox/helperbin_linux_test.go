package sandbox

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

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
			buildHelper(t, arch, filepath.Join("helperbin", "linux-"+arch))
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
	}
	if arch := runtime.GOARCH; arch == "amd64" || arch == "arm64" {
		have, _ := os.ReadFile(filepath.Join("helperbin", "linux-"+arch))
		if helperProgram != string(have) {
			t.Errorf("the helper embedded in this test binary is not helperbin/linux-%s", arch)
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
		{"embedded", false, "/memfd:" + helperArg0},
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
	helperPath() // loaded before the state is saved
	f, err := loadHelper(helperProgram)
	if err != nil {
		t.Skipf("the embedded helper cannot be loaded here: %v", err)
	}
	defer unix.Close(f.fd)
	embedded.mu.Lock()
	savedFile, savedDisabled := embedded.file, embedded.disabled
	embedded.file, embedded.disabled = f, nil
	embedded.mu.Unlock()
	t.Cleanup(func() {
		embedded.mu.Lock()
		embedded.file, embedded.disabled = savedFile, savedDisabled
		embedded.mu.Unlock()
	})
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

// TestEmbeddedHelperSealed: the memory file holding the helper program
// cannot be changed, not even by this process.
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
		t.Fatal("wrote to the helper program's memory file")
	}
	// The seal's refusal, not a wrong path or a closed descriptor.
	if !errors.Is(err, unix.EPERM) {
		t.Errorf("writing the helper program's memory file: %v, want EPERM (sealed)", err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != helperProgram {
		t.Errorf("the memory file does not hold the helper program (%d bytes, %v)", len(b), err)
	}
}
