package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestPermissionsNotLoosened: a server cannot make what it may write
// writable by other users (who could then replace the person's Makefile):
// chmod, fchmod and a POSIX ACL with world write are refused, a cleared
// umask leaves new files and directories without world write, and plain
// mode changes (group write included) still work.
func TestPermissionsNotLoosened(t *testing.T) {
	requireConfinement(t)
	wt := t.TempDir()
	mk := filepath.Join(wt, "Makefile")
	mkfile(t, mk, "all:\n")
	s := startHostile(t, Config{Worktree: wt})
	eperm := []string{"EPERM"}
	s.check(t, []op{
		{name: "chmod 0777 the worktree", op: "chmod-mode", args: []string{wt, "777"}, errnos: eperm},
		{name: "chmod 1777 the worktree", op: "chmod-mode", args: []string{wt, "1777"}, errnos: eperm},
		{name: "chmod o+w the Makefile", op: "chmod-mode", args: []string{mk, "646"}, errnos: eperm},
		{name: "fchmod 0666 the Makefile", op: "fchmod", args: []string{mk, "666"}, errnos: eperm},
		{name: "other write through an ACL", op: "acl-other-write", args: []string{mk}, errnos: []string{"EOPNOTSUPP"}},
		{name: "a user extended attribute", op: "setxattr", args: []string{mk}, errnos: []string{"EOPNOTSUPP"}},
		{name: "create with the umask cleared", op: "umask-create", args: []string{filepath.Join(wt, "new"), filepath.Join(wt, "newdir")}, ok: true},
		{name: "chmod 0664 (group write)", op: "chmod-mode", args: []string{mk, "664"}, ok: true},
		{name: "chmod 0755 the worktree", op: "chmod-mode", args: []string{wt, "755"}, ok: true},
		{name: "fchmod 0600", op: "fchmod", args: []string{mk, "600"}, ok: true},
	})
	// Reading the umask as Node's process.umask() and pip do, by setting
	// 0 and setting back what that returned, gives the true umask (the
	// host's, with world write masked) and leaves it so: npm chmods its
	// programs to 0777 &^ that. A umask that keeps world write masked is
	// set as asked.
	for _, mask := range []string{"000", "077", "000"} {
		r := s.must("umask", mask)
		if m, err := strconv.ParseUint(r.Out, 8, 32); err != nil || m&0o002 == 0 || m == 0o077 {
			t.Errorf("umask(%s) returned %s, want the true umask, with world write masked", mask, r.Out)
		}
	}
	// A shell, a process of its own, the same: "umask 000" leaves the mask
	// as it was, and what it then creates has no world write.
	shfile := filepath.Join(wt, "shfile")
	out := s.must("exec", "/bin/sh", "-c", "umask 000; umask; : > "+shfile).Out
	if m, err := strconv.ParseUint(strings.TrimSpace(out), 8, 32); err != nil || m&0o002 == 0 {
		t.Errorf("after umask 000 a shell says its umask is %q, want world write masked", out)
	}
	for _, p := range []string{wt, mk, filepath.Join(wt, "new"), filepath.Join(wt, "newdir"), shfile} {
		if st, err := os.Stat(p); err != nil {
			t.Error(err)
		} else if st.Mode().Perm()&0o002 != 0 {
			t.Errorf("%s is world-writable: %v", p, st.Mode())
		}
	}
}

// TestProcMasked: the server's /proc shows no kernel key of the user's
// and none of the entries container runtimes mask: each that the kernel
// has reads empty (a file) or lists nothing (a directory).
func TestProcMasked(t *testing.T) {
	requireConfinement(t)
	// A key the server's user owns: unmasked, /proc/keys would name it.
	desc := fmt.Sprintf("mcphost-test-key-%d-%d", os.Getpid(), time.Now().UnixNano())
	s := startHostile(t, Config{Worktree: t.TempDir()})
	// The server's own uid: a root host runs each server as a uid of its
	// own (its lease's), which alone could see the key unmasked.
	uid := os.Getuid()
	if dropsRoot() {
		if s.p.lease == nil {
			t.Fatal("a root host's server holds no uid lease")
		}
		uid = int(s.p.lease.uid)
	}
	keyVisible := addKeyAs(t, uid, desc)
	checked := 0
	for _, name := range procMasked {
		p := "/proc/" + name
		st, err := os.Stat(p)
		if err != nil {
			continue // not in this kernel
		}
		checked++
		r := s.do("read", p)
		if st.IsDir() {
			r = s.do("readdir", p)
		}
		if !r.OK || r.Out != "" {
			t.Errorf("%s: ok=%v, %d bytes (%.80q) %s: want it empty", p, r.OK, len(r.Out), r.Out, r.Err)
		}
	}
	if checked == 0 {
		t.Fatal("this kernel has none of the masked entries")
	}
	if keyVisible {
		if r := s.do("read", "/proc/keys"); strings.Contains(r.Out, desc) {
			t.Errorf("/proc/keys names the user's key %s", desc)
		}
	}
	if r := s.do("write", "/proc/keys"); r.OK {
		t.Error("wrote the mask of /proc/keys")
	}
	// The rest of /proc works.
	s.must("status")
	s.must("read", "/proc/meminfo")
}

// addKeyAs adds a key named desc, for two minutes, to the user keyring
// of uid (the user a server runs as), and reports whether that user sees
// it in its /proc/keys outside the sandbox (the hole's control).
func addKeyAs(t *testing.T, uid int, desc string) bool {
	t.Helper()
	as := func(args ...string) *exec.Cmd {
		cmd := exec.Command(hostilePath(), args...)
		if uid != os.Getuid() {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
		}
		return cmd
	}
	if out, err := as("addkey", desc).CombinedOutput(); err != nil {
		t.Logf("no key added (%v: %s): the key is not looked for", err, bytes.TrimSpace(out))
		return false
	}
	out, err := as("cat", "/proc/keys").Output()
	if err != nil || !bytes.Contains(out, []byte(desc)) {
		t.Logf("its user does not see the key in /proc/keys (%v): the key is not looked for", err)
		return false
	}
	return true
}

// TestFileWatchFull: in the full tier a server may watch its worktree
// (the reduced tier refuses inotify: TestReducedTier).
func TestFileWatchFull(t *testing.T) {
	requireConfinement(t)
	wt := t.TempDir()
	s := startHostile(t, Config{Worktree: wt})
	s.check(t, []op{{name: "inotify on the worktree", op: "inotify", args: []string{wt}, ok: true}})
}

// TestFileSizeLimit: no file the server writes grows past its file size
// limit, in the worktree, its private home and TMPDIR alike; a server that
// does not ignore SIGXFSZ is ended by it, and its exit status names the
// limit and its config key.
func TestFileSizeLimit(t *testing.T) {
	requireConfinement(t)
	wt := t.TempDir()
	const limit = 2 << 20
	s := startHostile(t, Config{Worktree: wt, TempHome: true, Limits: Limits{FileSize: limit}})
	if !strings.Contains(s.p.Limits(), "2MiB/file") {
		t.Errorf("Limits() = %q, want the file size limit in it", s.p.Limits())
	}
	home := ""
	for _, kv := range strings.Split(s.must("env").Out, "\n") {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = v
		}
	}
	if home == "" {
		t.Fatal("the server has no HOME")
	}
	efbig := []string{"EFBIG"}
	s.check(t, []op{
		{name: "a file within the limit in the worktree", op: "fill", args: []string{filepath.Join(wt, "small"), "1"}, ok: true},
		{name: "past the limit in the worktree", op: "fill", args: []string{filepath.Join(wt, "big"), "3"}, errnos: efbig},
		{name: "past the limit in its private home", op: "fill", args: []string{filepath.Join(home, "big"), "3"}, errnos: efbig},
		{name: "past the limit in TMPDIR", op: "fill", args: []string{filepath.Join(s.p.TempDir(), "big"), "3"}, errnos: efbig},
	})
	if st, err := os.Stat(filepath.Join(wt, "big")); err != nil || st.Size() != limit {
		t.Errorf("the worktree's big file: %v, want %d bytes", err, limit)
	}
	// SIGXFSZ's default action, as a C or Node server has it.
	if err := s.in.Encode(map[string]any{"op": "xfsz", "args": []string{filepath.Join(wt, "xfsz"), strconv.Itoa(limit >> 20)}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.p.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the server outlived a write past its file size limit")
	}
	st := s.p.ExitStatus()
	t.Logf("exit status: %s", st)
	if !strings.HasPrefix(st, xfszStatus) || !strings.Contains(st, "file size limit, 2MiB: max_file_size") {
		t.Errorf("exit status %q: want SIGXFSZ and the limit named", st)
	}
}
