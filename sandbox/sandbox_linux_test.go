package sandbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestEnvScrubbed: the server sees the allowlist, env and env_pass, and
// the private TMPDIR, and nothing else of the host's environment, confined
// or not.
func TestEnvScrubbed(t *testing.T) {
	requireConfinement(t)
	for _, off := range []bool{false, true} {
		t.Run(fmt.Sprintf("off=%v", off), func(t *testing.T) {
			home := t.TempDir()
			s := startHostile(t, Config{
				Worktree: t.TempDir(),
				Off:      off,
				HostEnv: []string{
					"PATH=/usr/bin:/bin", "HOME=" + home, "LANG=C.UTF-8",
					"AWS_SECRET_ACCESS_KEY=hunter2", "GITHUB_TOKEN=ghp_x", "SSH_AUTH_SOCK=/tmp/agent",
					"NOTES_TOKEN=pass-me", "TMPDIR=/host/tmp", "LD_PRELOAD=/evil.so",
				},
				EnvPass: []string{"NOTES_TOKEN", "NOT_SET"},
				Env:     map[string]string{"NOTES_MODE": "ro", "TMPDIR": "/not/private"},
			})
			got := strings.Split(s.must("env").Out, "\n")
			sort.Strings(got)
			tmp := s.p.TempDir()
			want := []string{
				"HOME=" + home, "LANG=C.UTF-8", "NOTES_MODE=ro", "NOTES_TOKEN=pass-me", "PATH=/usr/bin:/bin",
				"TEMP=" + tmp, "TMP=" + tmp, "TMPDIR=" + tmp,
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("server env:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if !strings.HasPrefix(filepath.Base(tmp), "mcphost-hostile-") {
				t.Errorf("TempDir %s: want a private mcphost-hostile-* directory", tmp)
			}
			s.must("write", filepath.Join(tmp, "scratch"))
		})
	}
}

// TestFilesystem: what the server may and may not read, write, run and
// change, with Landlock and the mount namespace together.
func TestFilesystem(t *testing.T) {
	requireConfinement(t)
	wt := t.TempDir()
	home := t.TempDir()
	mkfile(t, filepath.Join(home, ".ssh", "id_ed25519"), "SECRET KEY")
	mkfile(t, filepath.Join(home, ".cache", "notes", "n.txt"), "granted")
	writable := t.TempDir()
	outside := t.TempDir()
	mkfile(t, filepath.Join(outside, "secret"), "SECRET")
	mkfile(t, filepath.Join(wt, "a", "f"), "movable")
	if err := os.Mkdir(filepath.Join(wt, "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Single files granted, next to files that are not.
	singles := t.TempDir()
	oneRead := filepath.Join(singles, "read.json")
	oneWrite := filepath.Join(singles, "write.log")
	besides := filepath.Join(singles, "besides")
	mkfile(t, oneRead, "readable")
	mkfile(t, oneWrite, "")
	mkfile(t, besides, "SECRET")

	s := startHostile(t, Config{
		Worktree: wt,
		HostEnv:  []string{"PATH=/usr/bin:/bin", "HOME=" + home},
		Read:     []string{filepath.Join(home, ".cache", "notes"), oneRead},
		Write:    []string{writable, oneWrite},
	})
	tmp := s.p.TempDir()
	notes := filepath.Join(home, ".cache", "notes", "n.txt")
	// Each refusal is pinned to the layer that makes it: a path outside
	// the server's view is absent (ENOENT), a read-only one is a
	// read-only mount (EROFS). An EACCES there would be the directory's
	// own permissions (the test's directories are root's, mode 0700, and
	// the server is ServerID): a view that let them through would pass
	// unseen. The reduced tier has no mounts: Landlock refuses with EACCES.
	hidden, readOnly := []string{"ENOENT"}, []string{"EROFS"}
	if s.p.reduced {
		hidden, readOnly = []string{"EACCES"}, []string{"EACCES"}
	}
	s.check(t, []op{
		{name: "write worktree", op: "write", args: []string{filepath.Join(wt, "new")}, ok: true},
		{name: "write TMPDIR", op: "write", args: []string{filepath.Join(tmp, "x")}, ok: true},
		{name: "write a write path", op: "write", args: []string{filepath.Join(writable, "x")}, ok: true},
		{name: "write and truncate /dev/null", op: "write", args: []string{"/dev/null"}, ok: true},
		{name: "write private /dev/shm", op: "write", args: []string{"/dev/shm/x"}, ok: true},
		{name: "move a file between worktree directories", op: "rename", args: []string{filepath.Join(wt, "a", "f"), filepath.Join(wt, "b", "f")}, ok: true},
		{name: "read /etc", op: "read", args: []string{"/etc/passwd"}, ok: true},
		{name: "run a system program", op: "exec", args: []string{"/bin/true"}, ok: true},
		{name: "read a read path in HOME", op: "read", args: []string{notes}, ok: true},
		{name: "list its own program's directory", op: "readdir", args: []string{fixtureDir}, ok: true},
		{name: "read a single granted file", op: "read", args: []string{oneRead}, ok: true},
		{name: "append to a single writable file", op: "append", args: []string{oneWrite}, ok: true},
		{name: "read beside single granted files", op: "read", args: []string{besides}, errnos: hidden},
		{name: "write a single read-only file", op: "write", args: []string{oneRead}, errnos: readOnly},

		{name: "read a secret in HOME", op: "read", args: []string{filepath.Join(home, ".ssh", "id_ed25519")}, errnos: hidden},
		{name: "list HOME", op: "readdir", args: []string{home}},
		{name: "write HOME", op: "write", args: []string{filepath.Join(home, "planted")}, errnos: readOnly},
		{name: "read outside in /tmp", op: "read", args: []string{filepath.Join(outside, "secret")}, errnos: hidden},
		{name: "write outside in /tmp", op: "write", args: []string{filepath.Join(outside, "planted")}, errnos: hidden},
		{name: "list /tmp", op: "readdir", args: []string{"/tmp"}},
		{name: "write /etc", op: "write", args: []string{"/etc/mcphost-planted"}, errnos: readOnly},
		{name: "write /usr", op: "write", args: []string{"/usr/mcphost-planted"}, errnos: readOnly},
		{name: "write a read path", op: "write", args: []string{notes}, errnos: readOnly},
		{name: "truncate a read path", op: "truncate", args: []string{notes}, errnos: readOnly},
		{name: "chmod its own program", op: "chmod", args: []string{hostilePath()}, errnos: []string{"EROFS"}},
		{name: "write its program's directory", op: "write", args: []string{filepath.Join(fixtureDir, "planted")}, errnos: readOnly},
		// Not granted: not in its view at all.
		{name: "list /var (not in its view)", op: "readdir", args: []string{"/var"}, errnos: []string{"ENOENT"}},
		{name: "write /proc/self/comm (Landlock)", op: "write", args: []string{"/proc/self/comm"}, errnos: []string{"EACCES"}},
	})
	// A link the server plants in its worktree does not lead outside.
	s.must("symlink", filepath.Join(home, ".ssh", "id_ed25519"), filepath.Join(wt, "link"))
	if r := s.do("read", filepath.Join(wt, "link")); r.OK {
		t.Errorf("read through a planted symlink returned %q", r.Out)
	}
	for _, p := range []string{filepath.Join(home, "planted"), filepath.Join(outside, "planted"), "/etc/mcphost-planted", "/usr/mcphost-planted"} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s exists on the host", p)
			os.Remove(p)
		}
	}
	if got, _ := os.ReadFile(notes); string(got) != "granted" {
		t.Errorf("read path content is now %q", got)
	}
}

// TestLandlockABIs: with the Landlock ABI capped at every version up to
// the kernel's, the rights are dropped as needed, the ruleset is accepted,
// and writes stay confined; what older ABIs lack (truncate) is covered by
// the read-only mounts.
func TestLandlockABIs(t *testing.T) {
	requireConfinement(t)
	max := kernelABI(t)
	for abi := 1; abi <= max; abi++ {
		t.Run(fmt.Sprintf("v%d", abi), func(t *testing.T) {
			wt := t.TempDir()
			ro := t.TempDir()
			mkfile(t, filepath.Join(ro, "f"), "keep")
			mkfile(t, filepath.Join(wt, "a", "f"), "x")
			if err := os.Mkdir(filepath.Join(wt, "b"), 0o755); err != nil {
				t.Fatal(err)
			}
			s := startHostileOpts(t, Config{Worktree: wt, Read: []string{ro}}, startOptions{maxABI: abi})
			if want := fmt.Sprintf("landlock-v%d+", abi); !strings.HasPrefix(s.p.Confinement(), want) {
				t.Errorf("Confinement %q, want prefix %q", s.p.Confinement(), want)
			}
			// Without REFER (ABI 1) Landlock refuses every rename across
			// directories.
			var moveErrnos []string
			if abi == 1 {
				moveErrnos = []string{"EXDEV"}
			}
			s.check(t, []op{
				{name: "write worktree", op: "write", args: []string{filepath.Join(wt, "new")}, ok: true},
				{name: "write /dev/null", op: "write", args: []string{"/dev/null"}, ok: true},
				{name: "move between directories", op: "rename", args: []string{filepath.Join(wt, "a", "f"), filepath.Join(wt, "b", "f")}, ok: abi >= 2, errnos: moveErrnos},
				{name: "write a read path", op: "write", args: []string{filepath.Join(ro, "f")}, errnos: []string{"EROFS", "EACCES"}},
				{name: "truncate a read path", op: "truncate", args: []string{filepath.Join(ro, "f")}, errnos: []string{"EROFS", "EACCES"}},
				{name: "write /proc/self/comm", op: "write", args: []string{"/proc/self/comm"}, errnos: []string{"EACCES"}},
				{name: "list / (Landlock)", op: "readdir", args: []string{"/"}, errnos: []string{"EACCES"}},
			})
			if got, _ := os.ReadFile(filepath.Join(ro, "f")); string(got) != "keep" {
				t.Errorf("read-only file is now %q", got)
			}
		})
	}
}

// TestNetworkOff: no TCP, UDP, MPTCP, raw, packet or netlink socket but
// NETLINK_ROUTE leaves a server without network; unix sockets in its
// worktree still work, and listing interfaces shows only a down loopback.
func TestNetworkOff(t *testing.T) {
	requireConfinement(t)
	tcp, tcpGot := listenTCP(t)
	udp, udpGot := listenUDP(t)
	wt := t.TempDir()
	s := startHostile(t, Config{Worktree: wt})
	const (
		afUnix, afInet, afInet6, afNetlink, afPacket = "1", "2", "10", "16", "17"
		sockStream, sockDgram, sockRaw               = "1", "2", "3"
	)
	s.check(t, []op{
		{name: "tcp to a host listener", op: "tcp", args: []string{tcp}},
		{name: "udp to a host listener", op: "udp", args: []string{udp}},
		{name: "tcp socket", op: "socket", args: []string{afInet, sockStream, "0"}, errnos: []string{"EAFNOSUPPORT"}},
		{name: "tcp6 socket", op: "socket", args: []string{afInet6, sockStream, "0"}, errnos: []string{"EAFNOSUPPORT"}},
		{name: "udp socket", op: "socket", args: []string{afInet, sockDgram, "0"}, errnos: []string{"EAFNOSUPPORT"}},
		{name: "mptcp socket", op: "socket", args: []string{afInet, sockStream, "262"}, errnos: []string{"EAFNOSUPPORT"}},
		{name: "raw socket", op: "socket", args: []string{afInet, sockRaw, "1"}, errnos: []string{"EAFNOSUPPORT"}},
		{name: "packet socket", op: "socket", args: []string{afPacket, sockRaw, "0"}, errnos: []string{"EAFNOSUPPORT"}},
		// NETLINK_ROUTE (0) is allowed, for listing interfaces; every
		// other netlink protocol is not.
		{name: "netlink route socket", op: "socket", args: []string{afNetlink, sockRaw, "0"}, ok: true},
		{name: "netlink route dgram socket", op: "socket", args: []string{afNetlink, sockDgram, "0"}, ok: true},
		{name: "netlink sock_diag socket", op: "socket", args: []string{afNetlink, sockRaw, "4"}, errnos: []string{"EAFNOSUPPORT"}},
		{name: "netlink audit socket", op: "socket", args: []string{afNetlink, sockRaw, "9"}, errnos: []string{"EAFNOSUPPORT"}},
		{name: "netlink netfilter socket", op: "socket", args: []string{afNetlink, sockRaw, "12"}, errnos: []string{"EAFNOSUPPORT"}},
		{name: "netlink uevent socket", op: "socket", args: []string{afNetlink, sockDgram, "15"}, errnos: []string{"EAFNOSUPPORT"}},
		{name: "netlink generic socket", op: "socket", args: []string{afNetlink, sockRaw, "16"}, errnos: []string{"EAFNOSUPPORT"}},
		{name: "netlink socketpair", op: "socketpair", args: []string{afNetlink, sockRaw, "0"}, errnos: []string{"EAFNOSUPPORT"}},
		// A route socket can change nothing: no CAP_NET_ADMIN.
		{name: "netlink set link up", op: "setlink-up", errnos: []string{"EPERM"}},
		{name: "unix socket", op: "socket", args: []string{afUnix, sockStream, "0"}, ok: true},
		{name: "listen in the worktree", op: "listen-unix", args: []string{filepath.Join(wt, "s.sock")}, ok: true},
		{name: "connect in the worktree", op: "unix", args: []string{filepath.Join(wt, "s.sock")}, ok: true},
	})
	// Listing interfaces works and shows only the namespace's loopback,
	// down, without addresses.
	if got := s.must("interfaces").Out; got != "lo up=false addrs=0" {
		t.Errorf("interfaces: %q, want only a loopback that is down", got)
	}
	if n := tcpGot(); n != 0 {
		t.Errorf("the TCP listener accepted %d connections", n)
	}
	if n := udpGot(); n != 0 {
		t.Errorf("the UDP listener received %d packets", n)
	}
}

// TestNetworkOn: with Network, the host's network really works.
func TestNetworkOn(t *testing.T) {
	requireConfinement(t)
	tcp, tcpGot := listenTCP(t)
	s := startHostile(t, Config{Worktree: t.TempDir(), Network: true})
	if strings.Contains(s.p.Confinement(), "netns") {
		t.Errorf("Confinement %q has netns with the network on", s.p.Confinement())
	}
	s.must("tcp", tcp)
	deadline := time.Now().Add(10 * time.Second)
	for tcpGot() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if tcpGot() == 0 {
		t.Error("the TCP listener saw no connection")
	}
}

// listenTCP listens on 127.0.0.1 in the host's network namespace and
// counts accepted connections.
func listenTCP(t *testing.T) (string, func() int) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var mu sync.Mutex
	n := 0
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			n++
			mu.Unlock()
			c.Close()
		}
	}()
	return l.Addr().String(), func() int { mu.Lock(); defer mu.Unlock(); return n }
}

// listenUDP listens on 127.0.0.1 and counts received packets.
func listenUDP(t *testing.T) (string, func() int) {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var mu sync.Mutex
	n := 0
	go func() {
		buf := make([]byte, 100)
		for {
			if _, _, err := c.ReadFrom(buf); err != nil {
				return
			}
			mu.Lock()
			n++
			mu.Unlock()
		}
	}()
	return c.LocalAddr().String(), func() int { mu.Lock(); defer mu.Unlock(); return n }
}

// listenUnix listens on a unix socket at path (or an abstract one for a
// name starting with "@") and accepts forever.
func listenUnix(t *testing.T, path string) {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
}

// TestUnixSocketsHidden: listening unix sockets outside the worktree (an
// SSH agent in /tmp, a daemon in /run, one in HOME, an abstract one) are
// out of reach, with the network off or on.
func TestUnixSocketsHidden(t *testing.T) {
	conf := requireConfinement(t)
	home := t.TempDir()
	agent := filepath.Join(t.TempDir(), "agent.sock")
	listenUnix(t, agent)
	inHome := filepath.Join(home, "gpg.sock")
	listenUnix(t, inHome)
	abstract := fmt.Sprintf("@mcphost-test-%d", os.Getpid())
	listenUnix(t, abstract)
	sockets := []string{agent, inHome, abstract}
	daemon := ""
	if run, err := os.MkdirTemp("/run", "mcphost-test-"); err != nil {
		t.Logf("no socket in /run (%v): that case is not tested", err)
	} else {
		t.Cleanup(func() { os.RemoveAll(run) })
		daemon = filepath.Join(run, "docker.sock")
		listenUnix(t, daemon)
		sockets = append(sockets, daemon)
	}

	// The test can reach each of them: the sockets work.
	for _, p := range sockets {
		c, err := net.Dial("unix", p)
		if err != nil {
			t.Fatalf("the test itself cannot connect to %s: %v", p, err)
		}
		c.Close()
	}
	for _, network := range []bool{false, true} {
		t.Run(fmt.Sprintf("network=%v", network), func(t *testing.T) {
			s := startHostile(t, Config{
				Worktree: t.TempDir(),
				Network:  network,
				HostEnv:  []string{"PATH=/usr/bin:/bin", "HOME=" + home},
			})
			// A socket path is out of the server's view (ENOENT): a
			// socket it could see would fail otherwise, or connect.
			hidden := []string{"ENOENT"}
			if s.p.reduced {
				hidden = []string{"EACCES"}
			}
			ops := []op{
				{name: "ssh agent in /tmp", op: "unix", args: []string{agent}, errnos: hidden},
				{name: "socket in HOME", op: "unix", args: []string{inHome}, errnos: hidden},
			}
			if daemon != "" {
				ops = append(ops, op{name: "daemon in /run", op: "unix", args: []string{daemon}, errnos: hidden})
			}
			// With the network off the abstract socket is in another
			// network namespace (no such name there); with it on,
			// Landlock's scope (ABI 6+) keeps the server from reaching it.
			if !network || !strings.HasPrefix(conf, "landlock-v") || abiOf(conf) >= 6 {
				why := []string{"EPERM"}
				if !network {
					why = []string{"ECONNREFUSED"}
				}
				ops = append(ops, op{name: "abstract socket", op: "unix", args: []string{abstract}, errnos: why})
			} else {
				t.Logf("Landlock ABI %d has no abstract socket scope: a server with network can reach abstract sockets", abiOf(conf))
			}
			s.check(t, ops)
		})
	}
}

// abiOf extracts N from a "landlock-vN+..." confinement string.
func abiOf(conf string) int {
	s := strings.TrimPrefix(conf, "landlock-v")
	if i := strings.IndexByte(s, '+'); i >= 0 {
		s = s[:i]
	}
	n, _ := strconv.Atoi(s)
	return n
}

// TestPrivileges: no capabilities (for root too), no_new_privs, a seccomp
// filter, no keyring, no io_uring, no terminal, no signals out of the
// sandbox.
func TestPrivileges(t *testing.T) {
	conf := requireConfinement(t)
	wt := t.TempDir()
	s := startHostile(t, Config{Worktree: wt})
	status := s.must("status").Out
	for field, want := range map[string]string{
		"CapInh": "0000000000000000", "CapPrm": "0000000000000000", "CapEff": "0000000000000000",
		"CapBnd": "0000000000000000", "CapAmb": "0000000000000000",
		"NoNewPrivs": "1", "Seccomp": "2",
	} {
		if got := statusField(status, field); got != want {
			t.Errorf("%s: %q, want %q", field, got, want)
		}
	}
	ops := []op{
		{name: "a set-user-ID program", op: "suid", args: []string{"/bin/true", filepath.Join(wt, "suid")}, errnos: []string{"EPERM"}, errHas: "set-user-ID chmod: "},
		{name: "a set-group-ID file at creation", op: "create-sgid", args: []string{filepath.Join(wt, "sgid")}, errnos: []string{"EPERM"}},
		{name: "keyring", op: "keyctl", errnos: []string{"ENOSYS"}},
		{name: "io_uring", op: "io_uring", errnos: []string{"ENOSYS"}},
	}
	if abiOf(conf) >= 6 {
		// The helper (pid 1) forwards SIGTERM to the server: reaching it
		// would let the server be killed by a process it spawned. Landlock's
		// signal scope stops the signal. (On a root host the helper is root
		// and the server ServerID, so plain permissions refuse it as well;
		// TestReducedTier checks the scope where the two share a user.)
		ops = append(ops, op{name: "signal its init", op: "kill", args: []string{"1", strconv.Itoa(int(syscall.SIGTERM))}, errnos: []string{"EPERM"}})
	}
	s.check(t, ops)
}

// TestView: the server's filesystem holds only what it may use. A host
// path outside its grants does not exist for it (stat finds nothing), a
// listening unix socket there cannot be reached by path, and its
// mountinfo lists only its own few mounts.
func TestView(t *testing.T) {
	requireConfinement(t)
	wt := t.TempDir()
	home := t.TempDir()
	mkfile(t, filepath.Join(home, ".ssh", "id_ed25519"), "SECRET KEY")
	outside := t.TempDir()
	mkfile(t, filepath.Join(outside, "secret"), "SECRET")
	// A service's socket outside every hidden directory of old: /var/lib.
	var lib string
	if d, err := os.MkdirTemp("/var/lib", "mcphost-test-"); err != nil {
		t.Logf("no directory in /var/lib (%v): the socket there is not tested", err)
	} else {
		t.Cleanup(func() { os.RemoveAll(d) })
		lib = filepath.Join(d, "daemon.sock")
		listenUnix(t, lib)
	}
	for _, network := range []bool{false, true} {
		t.Run(fmt.Sprintf("network=%v", network), func(t *testing.T) {
			s := startHostile(t, Config{
				Worktree: wt,
				Network:  network,
				HostEnv:  []string{"PATH=/usr/bin:/bin", "HOME=" + home},
			})
			ops := []op{
				{name: "stat its worktree", op: "stat", args: []string{wt}, ok: true},
				{name: "stat /usr/bin/env", op: "stat", args: []string{"/usr/bin/env"}, ok: true},
				{name: "stat /bin (a link on merged-/usr hosts)", op: "stat", args: []string{"/bin"}, ok: true},
				{name: "run /bin/sh", op: "exec", args: []string{"/bin/sh", "-c", "true"}, ok: true},
				{name: "stat a file outside", op: "stat", args: []string{filepath.Join(outside, "secret")}, errnos: []string{"ENOENT"}},
				{name: "stat a directory outside", op: "stat", args: []string{outside}, errnos: []string{"ENOENT"}},
				{name: "stat a secret in HOME", op: "stat", args: []string{filepath.Join(home, ".ssh")}, errnos: []string{"ENOENT"}},
				{name: "stat /var", op: "stat", args: []string{"/var"}, errnos: []string{"ENOENT"}},
				{name: "stat /var/lib", op: "stat", args: []string{"/var/lib"}, errnos: []string{"ENOENT"}},
				{name: "stat /run", op: "stat", args: []string{"/run"}, errnos: []string{"ENOENT"}},
			}
			if lib != "" {
				ops = append(ops,
					op{name: "stat a socket in /var/lib", op: "stat", args: []string{lib}, errnos: []string{"ENOENT"}},
					op{name: "connect a socket in /var/lib", op: "unix", args: []string{lib}})
			}
			s.check(t, ops)

			// Its mounts: the new root and what is bound into it, nothing
			// of the host's other mounts.
			allowed := append(canonicalExisting(systemReadPaths()), "/", "/dev", "/proc", wt, s.p.TempDir(), fixtureDir)
			for _, mp := range mountPoints(t, s.must("read", "/proc/self/mountinfo").Out) {
				if !underAny(mp, allowed) {
					t.Errorf("its mountinfo shows %s", mp)
				}
			}
		})
	}
}

// mountPoints parses the mount points out of a mountinfo text.
func mountPoints(t *testing.T, mountinfo string) []string {
	t.Helper()
	mps, err := parseMountPoints(strings.NewReader(mountinfo))
	if err != nil {
		t.Fatal(err)
	}
	return mps
}

// TestRootHostUnprivileged: a root host's server does not act as root. It
// runs as ServerID, so root-only files under the paths it may read are
// closed to it, while it still uses its worktree, TMPDIR and grants as
// their owner, and what it creates there belongs on disk to that owner.
func TestRootHostUnprivileged(t *testing.T) {
	conf := requireConfinement(t)
	if !dropsRoot() {
		t.Skip("the host is not root: its servers run as the user already (TestNonRoot)")
	}
	if !strings.Contains(conf, "+unprivileged") {
		t.Errorf("confinement %q does not say the server is unprivileged", conf)
	}
	wt := t.TempDir() // root's, mode 0700
	mkfile(t, filepath.Join(wt, "own"), "the person's")
	if err := os.Chmod(filepath.Join(wt, "own"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A root-only file in a system directory the server may read.
	sysDir, err := os.MkdirTemp("/opt", "mcphost-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sysDir) })
	os.Chmod(sysDir, 0o755)
	rootOnly := filepath.Join(sysDir, "key")
	mkfile(t, rootOnly, "ROOT SECRET")
	os.Chmod(rootOnly, 0o600)
	// A granted directory of another owner, and one of root's.
	other := t.TempDir()
	os.Chown(other, 1234, 1234)
	granted := t.TempDir()
	mkfile(t, filepath.Join(granted, "cfg"), "granted")
	os.Chmod(filepath.Join(granted, "cfg"), 0o600)

	s := startHostile(t, Config{Worktree: wt, Read: []string{granted}, Write: []string{other}})
	ops := []op{
		{name: "read a root-only file in /opt", op: "read", args: []string{rootOnly}, errnos: []string{"EACCES"}},
		{name: "read a 0600 file of the worktree", op: "read", args: []string{filepath.Join(wt, "own")}, ok: true},
		{name: "write the worktree", op: "write", args: []string{filepath.Join(wt, "made")}, ok: true},
		{name: "mkdir in the worktree", op: "mkdir", args: []string{filepath.Join(wt, "dir")}, ok: true},
		{name: "write TMPDIR", op: "write", args: []string{filepath.Join(s.p.TempDir(), "x")}, ok: true},
		{name: "write another owner's write grant", op: "write", args: []string{filepath.Join(other, "x")}, ok: true},
		{name: "read a 0600 file of a read grant", op: "read", args: []string{filepath.Join(granted, "cfg")}, ok: true},
	}
	if _, err := os.Stat("/etc/shadow"); err == nil {
		ops = append(ops, op{name: "read /etc/shadow", op: "read", args: []string{"/etc/shadow"}, errnos: []string{"EACCES"}})
	}
	s.check(t, ops)
	status := s.must("status").Out
	want := serverUID(t, status)
	for _, field := range []string{"Uid", "Gid"} {
		if got := strings.Fields(statusField(status, field)); len(got) != 4 || got[0] != want || got[1] != want || got[2] != want || got[3] != want {
			t.Errorf("%s: %v, want %s four times", field, got, want)
		}
	}
	if got := statusField(status, "Groups"); got != "" {
		t.Errorf("supplementary groups %q, want none", got)
	}
	for _, f := range []struct {
		path     string
		uid, gid uint32
	}{{filepath.Join(wt, "made"), 0, 0}, {filepath.Join(wt, "dir"), 0, 0}, {filepath.Join(other, "x"), 1234, 1234}} {
		st, err := os.Stat(f.path)
		if err != nil {
			t.Errorf("%s: %v", f.path, err)
			continue
		}
		if sys := st.Sys().(*syscall.Stat_t); sys.Uid != f.uid || sys.Gid != f.gid {
			t.Errorf("%s is owned by %d:%d, want %d:%d (its directory's owner)", f.path, sys.Uid, sys.Gid, f.uid, f.gid)
		}
	}
}

// TestLimits: a server cannot take the machine's processes, memory or
// temporary space: past each limit it gets an error, or the kernel ends
// what went past it, and the host says which limit.
func TestLimits(t *testing.T) {
	requireConfinement(t)
	const mib = 1 << 20
	s := startHostile(t, Config{
		Worktree: t.TempDir(),
		Limits:   Limits{Processes: 32, Memory: 96 * mib, Tmp: 8 * mib},
	})
	t.Logf("limits: %s", s.p.Limits())
	if s.p.Limits() == "" {
		t.Error("Limits() says nothing")
	}
	tmp := s.p.TempDir()
	// A child past the memory limit: with a cgroup the kernel kills it;
	// with RLIMIT_DATA its allocations fail and Go's runtime gives up.
	childEnd := goAllocFailed
	if dropsRoot() {
		childEnd = func(err string) bool { return strings.Contains(err, "signal: killed") }
	}
	s.check(t, []op{
		// The fixture ends the children it started, so the steps below
		// have the slots again (a full table would fail them for that).
		{name: "fork past the process limit", op: "spawn", args: []string{"100"}, errnos: []string{"EAGAIN"}},
		{name: "the slots are free again", op: "spawn", args: []string{"8"}, ok: true},
		{name: "fill TMPDIR past its size", op: "fill", args: []string{filepath.Join(tmp, "big"), "64"}, errnos: []string{"ENOSPC"}},
		{name: "fill /dev/shm past its size", op: "fill", args: []string{"/dev/shm/big", "64"}, errnos: []string{"ENOSPC"}},
		// Their pages count against the memory limit: free them.
		{name: "empty TMPDIR", op: "remove", args: []string{filepath.Join(tmp, "big")}, ok: true},
		{name: "empty /dev/shm", op: "remove", args: []string{"/dev/shm/big"}, ok: true},
		{name: "a child allocating past the memory limit", op: "exec", args: []string{hostilePath(), "alloc", "400"}, errIs: childEnd},
		{name: "a child allocating within it", op: "exec", args: []string{hostilePath(), "alloc", "16"}, ok: true},
		{name: "the server still answers", op: "echo", args: []string{"hi"}, ok: true},
	})
	if !dropsRoot() {
		return // memory is bounded per process by RLIMIT_DATA: the child's failure above
	}
	// With a cgroup, the kernel ends the server itself when it goes past
	// its memory, and the exit status names the limit.
	if err := s.in.Encode(map[string]any{"op": "alloc", "args": []string{"400"}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.p.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the server holds 400 MiB under a 96 MiB limit")
	}
	st := s.p.ExitStatus()
	t.Logf("exit status: %s", st)
	// The OOM count is the cgroup's whole life: the child killed above
	// already adds the note, so the server's own end must be the kill.
	if !strings.HasPrefix(st, "signal: killed (") {
		t.Errorf("exit status %q: want the server itself killed", st)
	}
	if !strings.Contains(st, "memory limit, 96MiB: max_memory") {
		t.Errorf("exit status %q does not name the memory limit", st)
	}
	// The fork past 32 above was refused, and the status says so too.
	if !strings.Contains(st, "at the server's process limit, 32: max_processes") {
		t.Errorf("exit status %q does not name the process limit", st)
	}
}

// TestNoUserNamespace: a server can create no user namespace, with the
// network off or on: inside one it would hold every capability again, and
// with them reach kernel code (nf_tables) that is otherwise root's.
func TestNoUserNamespace(t *testing.T) {
	requireConfinement(t)
	// The test itself can: the attack is real on this kernel.
	if err := exec.Command("unshare", "-U", "true").Run(); err != nil {
		t.Skipf("this host cannot create user namespaces itself (%v): nothing to take away", err)
	}
	for _, network := range []bool{false, true} {
		t.Run(fmt.Sprintf("network=%v", network), func(t *testing.T) {
			s := startHostile(t, Config{Worktree: t.TempDir(), Network: network})
			s.check(t, []op{
				{name: "clone(CLONE_NEWUSER)", op: "userns", errnos: []string{"EPERM"}},
				{name: "unshare -U", op: "exec", args: []string{"/usr/bin/unshare", "-U", "/bin/true"}, errHas: "unshare failed: Operation not permitted"},
			})
		})
	}
}

// TestProcIsolation: the fresh /proc shows only the sandbox's processes,
// and the helper's environment is unreadable.
func TestProcIsolation(t *testing.T) {
	requireConfinement(t)
	s := startHostile(t, Config{Worktree: t.TempDir()})
	pids := strings.Fields(s.must("pids").Out)
	if len(pids) != 2 || pids[0] != "1" {
		t.Errorf("/proc lists processes %v, want the helper (1) and the server", pids)
	}
	if r := s.do("read", "/proc/1/environ"); r.OK {
		t.Errorf("read the helper's environment: %q", r.Out)
	}
	if r := s.do("read", fmt.Sprintf("/proc/%d/environ", os.Getpid())); r.OK && r.Out != "" {
		t.Errorf("read a host process's environment through /proc")
	}
}

// TestProtect: a protected file or directory inside the writable worktree
// cannot be written, truncated, renamed, removed or replaced, nor moved
// away with its parent; the rest of the worktree stays writable.
func TestProtect(t *testing.T) {
	requireConfinement(t)
	wt := t.TempDir()
	cfgFile := filepath.Join(wt, "agent.toml")
	state := filepath.Join(wt, ".mcphost")
	pins := filepath.Join(state, "mcp-reviewed.json")
	deep := filepath.Join(wt, "sub", "deeper", "cfg")
	mkfile(t, cfgFile, "original")
	mkfile(t, pins, "{}")
	mkfile(t, deep, "original")
	mkfile(t, filepath.Join(wt, "forgery"), "forged")

	s := startHostile(t, Config{Worktree: wt, Protect: []string{cfgFile, state, deep}})
	s.check(t, []op{
		{name: "write the file", op: "write", args: []string{cfgFile}, errnos: []string{"EROFS"}},
		{name: "append to the file", op: "append", args: []string{cfgFile}, errnos: []string{"EROFS"}},
		{name: "truncate the file", op: "truncate", args: []string{cfgFile}, errnos: []string{"EROFS"}},
		{name: "chmod the file", op: "chmod", args: []string{cfgFile}, errnos: []string{"EROFS"}},
		{name: "remove the file", op: "remove", args: []string{cfgFile}, errnos: []string{"EBUSY"}},
		{name: "rename the file away", op: "rename", args: []string{cfgFile, filepath.Join(wt, "moved")}, errnos: []string{"EBUSY"}},
		{name: "rename a forgery over the file", op: "rename", args: []string{filepath.Join(wt, "forgery"), cfgFile}, errnos: []string{"EBUSY"}},
		{name: "write the state file", op: "write", args: []string{pins}, errnos: []string{"EROFS"}},
		{name: "create in the state directory", op: "write", args: []string{filepath.Join(state, "new")}, errnos: []string{"EROFS"}},
		{name: "rename the state directory", op: "rename", args: []string{state, filepath.Join(wt, "moved")}, errnos: []string{"EBUSY"}},
		{name: "write the deep file", op: "write", args: []string{deep}, errnos: []string{"EROFS"}},
		{name: "rename the deep file's grandparent", op: "rename", args: []string{filepath.Join(wt, "sub"), filepath.Join(wt, "moved")}, errnos: []string{"EBUSY"}},
		// A pinned directory is a mount point of its own: moving out of it
		// is a move across mounts.
		{name: "rename the deep file's parent", op: "rename", args: []string{filepath.Join(wt, "sub", "deeper"), filepath.Join(wt, "moved")}, errnos: []string{"EBUSY", "EXDEV"}},
		{name: "write the rest of the worktree", op: "write", args: []string{filepath.Join(wt, "other")}, ok: true},
		{name: "create beside the deep file", op: "write", args: []string{filepath.Join(wt, "sub", "deeper", "other")}, ok: true},
	})
	for p, want := range map[string]string{cfgFile: "original", pins: "{}", deep: "original"} {
		if got, err := os.ReadFile(p); err != nil || string(got) != want {
			t.Errorf("%s on the host: %q, %v; want %q", p, got, err, want)
		}
	}
	// The host itself is not in the server's mount namespace.
	if err := os.WriteFile(pins, []byte(`{"a":1}`), 0o644); err != nil {
		t.Errorf("the host cannot write its own state file: %v", err)
	}
}

// TestStartErrors: a bad config or a server that cannot run gives a clear
// error and leaves no temporary directory behind.
func TestStartErrors(t *testing.T) {
	requireConfinement(t)
	wt := t.TempDir()
	home := t.TempDir()
	elsewhere := t.TempDir()
	mkfile(t, filepath.Join(wt, "notexec"), "data")
	mkfile(t, filepath.Join(wt, "badinterp"), "#!/nonexistent/interpreter\n")
	if err := os.Chmod(filepath.Join(wt, "badinterp"), 0o755); err != nil {
		t.Fatal(err)
	}
	mkfile(t, filepath.Join(elsewhere, "cfg"), "x")
	if err := os.Symlink(filepath.Join(elsewhere, "cfg"), filepath.Join(wt, "link")); err != nil {
		t.Fatal(err)
	}
	projectInHome := filepath.Join(home, "project")
	if err := os.Mkdir(projectInHome, 0o755); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name    string
		cfg     Config
		invalid bool   // wraps ErrInvalidConfig
		text    string // the error says this
	}{
		{"empty command", Config{Argv: []string{}}, true, "empty command"},
		{"relative worktree", Config{Worktree: "rel"}, true, "not an absolute path"},
		{"missing worktree", Config{Worktree: filepath.Join(wt, "missing")}, true, "does not exist"},
		{"relative read path", Config{Read: []string{"~/x"}}, true, "not an absolute path"},
		{"missing read path", Config{Read: []string{filepath.Join(wt, "missing")}}, true, "does not exist"},
		{"missing write path", Config{Write: []string{filepath.Join(wt, "missing")}}, true, "does not exist"},
		{"writable /", Config{Write: []string{"/"}}, true, "writable path is /"},
		{"writable /proc", Config{Write: []string{"/proc/self"}}, true, "/proc"},
		{"worktree is HOME", Config{Worktree: home}, true, "home directory"},
		{"write path contains HOME", Config{Write: []string{filepath.Dir(home)}}, true, "home directory"},
		{"missing protect path in the worktree", Config{Protect: []string{filepath.Join(wt, ".mcphost", "state")}}, true, "create it before"},
		{"protect path through a link in the worktree", Config{Protect: []string{filepath.Join(wt, "link")}}, true, "symbolic link"},
		{"protect path containing the worktree", Config{Worktree: projectInHome, Protect: []string{home}, HostEnv: []string{"PATH=/usr/bin:/bin"}}, true, "contains the writable path"},
		{"bad env name", Config{Env: map[string]string{"A=B": "x"}}, true, "not a valid variable name"},
		{"bad env_pass name", Config{EnvPass: []string{""}}, true, "not a valid variable name"},
		{"program not found", Config{Argv: []string{"no-such-program-anywhere"}}, false, "not found"},
		{"program not executable", Config{Argv: []string{"./notexec"}}, false, "permission denied"},
		// Found and checked on the host, refused by execve in the helper:
		// the helper's report reaches Start.
		{"interpreter missing", Config{Argv: []string{"./badinterp"}}, false, "exec " + filepath.Join(wt, "badinterp") + ": no such file or directory"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.Name = fmt.Sprintf("bad%d", i)
			if cfg.Argv == nil {
				cfg.Argv = []string{hostilePath()}
			}
			if cfg.Worktree == "" {
				cfg.Worktree = wt
			}
			if cfg.HostEnv == nil {
				cfg.HostEnv = []string{"PATH=/usr/bin:/bin", "HOME=" + home}
			}
			p, err := Start(context.Background(), cfg)
			if err == nil {
				p.Close(0)
				t.Fatal("Start succeeded")
			}
			if errors.Is(err, ErrInvalidConfig) != tt.invalid {
				t.Errorf("errors.Is(err, ErrInvalidConfig) = %v, want %v: %v", !tt.invalid, tt.invalid, err)
			}
			if errors.Is(err, ErrUnsupported) {
				t.Errorf("error wraps ErrUnsupported: %v", err)
			}
			if !strings.Contains(err.Error(), tt.text) || !strings.Contains(err.Error(), cfg.Name) {
				t.Errorf("error %q does not mention %q and the server name", err, tt.text)
			}
			left, _ := filepath.Glob(filepath.Join(os.TempDir(), "mcphost-"+cfg.Name+"-*"))
			if len(left) > 0 {
				t.Errorf("temporary directories left behind: %v", left)
			}
		})
	}
}

// TestProtectOutsideWritable: a protect path outside every writable path
// needs nothing, even when it does not exist.
func TestProtectOutsideWritable(t *testing.T) {
	requireConfinement(t)
	state := t.TempDir()
	s := startHostile(t, Config{Worktree: t.TempDir(), Protect: []string{state, filepath.Join(state, "not-yet")}})
	s.check(t, []op{{name: "write the state directory", op: "write", args: []string{filepath.Join(state, "x")}}})
}

// TestInterpreters: a script's "#!" interpreter, directly or through
// env(1), is granted even outside the system directories, and nothing
// beside it.
func TestInterpreters(t *testing.T) {
	requireConfinement(t)
	base := t.TempDir()
	interpDir := filepath.Join(base, "interp")
	interp := filepath.Join(interpDir, "hostile-interp")
	copyFile(t, hostilePath(), interp, 0o755)
	mkfile(t, filepath.Join(base, "sibling", "secret"), "SECRET")
	scripts := t.TempDir()
	direct := filepath.Join(scripts, "direct")
	viaEnv := filepath.Join(scripts, "via-env")
	mkfile(t, direct, "#!"+interp+"\n")
	mkfile(t, viaEnv, "#!/usr/bin/env hostile-interp\n")
	for _, p := range []string{direct, viaEnv} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, script := range []string{direct, viaEnv} {
		t.Run(filepath.Base(script), func(t *testing.T) {
			s := startHostile(t, Config{
				Argv:     []string{script},
				Worktree: t.TempDir(),
				HostEnv:  []string{"PATH=" + interpDir + ":/usr/bin:/bin", "HOME=" + t.TempDir()},
			})
			s.check(t, []op{
				{name: "runs", op: "echo", args: []string{"hi"}, ok: true},
				{name: "reads its interpreter's directory", op: "readdir", args: []string{interpDir}, ok: true},
				{name: "reads its script's directory", op: "readdir", args: []string{scripts}, ok: true},
				{name: "reads beside the interpreter", op: "read", args: []string{filepath.Join(base, "sibling", "secret")}},
			})
		})
	}
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, mode); err != nil {
		t.Fatal(err)
	}
}

// TestLifetime: a daemon the server leaves behind (setsid, double fork)
// dies with it at Close, confined (PID namespace) or not (subreaper).
func TestLifetime(t *testing.T) {
	requireConfinement(t)
	for _, off := range []bool{false, true} {
		t.Run(fmt.Sprintf("off=%v", off), func(t *testing.T) {
			wt := t.TempDir()
			beat := filepath.Join(wt, "beat")
			s := startHostile(t, Config{Worktree: wt, Off: off})
			s.must("daemon", beat)
			waitGrowing(t, beat)
			if err := s.p.Close(100 * time.Millisecond); err != nil {
				t.Fatalf("Close: %v", err)
			}
			stillNow(t, beat)
		})
	}
}

// TestLifelineEnds: a helper whose host closes its end of the lifeline,
// with no signal and no death, ends every process of the server, even one
// that ignores its signals and a daemon it left, and exits. (A dead host's
// helper also has Pdeathsig; this is the way that does not depend on it.)
func TestLifelineEnds(t *testing.T) {
	requireConfinement(t)
	for _, off := range []bool{false, true} {
		t.Run(fmt.Sprintf("off=%v", off), func(t *testing.T) {
			wt := t.TempDir()
			beat := filepath.Join(wt, "beat")
			s := startHostile(t, Config{Worktree: wt, Off: off})
			s.must("daemon", beat)
			s.must("linger")
			s.must("ignore-signals")
			waitGrowing(t, beat)
			s.p.lifeline.Close()
			select {
			case <-s.p.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("the helper did not end the server within 10 s of the lifeline's end")
			}
			if got := s.p.ExitStatus(); got != "signal: killed" {
				t.Errorf("ExitStatus %q, want signal: killed (the server's, killed by its helper)", got)
			}
			stillNow(t, beat)
		})
	}
}

// TestHostDeath: when the host is SIGKILLed, its servers and their daemons
// die too.
func TestHostDeath(t *testing.T) {
	requireConfinement(t)
	for _, off := range []bool{false, true} {
		t.Run(fmt.Sprintf("off=%v", off), func(t *testing.T) {
			wt := t.TempDir()
			beat := filepath.Join(wt, "beat")
			args := []string{"-hostile", hostilePath(), "-worktree", wt, "-wait",
				// The server lingers after stdin's EOF: only the host's death
				// may end it.
				"-ops", fmt.Sprintf(`[{"op":"daemon","args":[%q]},{"op":"linger"},{"op":"ignore-signals"}]`, beat)}
			if off {
				args = append(args, "-off")
			}
			host := exec.Command(hostPath(), args...)
			var stderr lockedBuffer
			host.Stderr = &stderr
			// The host hands its stderr to the server: a server that
			// survives would keep Wait waiting for the pipe's EOF.
			host.WaitDelay = time.Second
			out, err := host.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := host.Start(); err != nil {
				t.Fatal(err)
			}
			defer host.Process.Kill()
			sc := bufio.NewScanner(out)
			ready := false
			for sc.Scan() {
				if tmp, ok := strings.CutPrefix(sc.Text(), "tempdir: "); ok && tmp != "" {
					// A host that dies cannot remove its servers'
					// temporary directories; the test does.
					t.Cleanup(func() { os.RemoveAll(tmp) })
				}
				if sc.Text() == "ready" {
					ready = true
					break
				}
			}
			if !ready {
				host.Wait()
				t.Fatalf("the host fixture never got ready: %s", stderr.String())
			}
			waitGrowing(t, beat)
			// Listed while the host lives: once it is gone, a start in
			// any other process beside it may sweep them first.
			var left []string
			if !off && dropsRoot() {
				if left = hostCgroups(t, host.Process.Pid); len(left) == 0 {
					t.Fatal("the host made no cgroup: this test no longer sees the leak it covers")
				}
			}
			if err := host.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			host.Wait()
			waitStill(t, beat)
			if len(left) > 0 {
				// The dead host could not remove its server's cgroups:
				// the next start does.
				startHostile(t, Config{Worktree: t.TempDir()})
				for _, d := range left {
					if _, err := os.Stat(d); err == nil {
						t.Errorf("the killed host's cgroup %s is still there after the next start", d)
					}
				}
			}
		})
	}
}

// hostCgroups lists the cgroups this package made for the host process
// pid, beside this process's own.
func hostCgroups(t *testing.T, pid int) []string {
	t.Helper()
	own := readOwnCgroups()
	v1, v2, err := own.v1, own.v2, own.err
	if err != nil {
		t.Fatal(err)
	}
	parents := []string{filepath.Join(cgroupRoot, v2)}
	if v1["pids"] != "" {
		parents = []string{filepath.Join(cgroupRoot, "pids", v1["pids"]), filepath.Join(cgroupRoot, "memory", v1["memory"])}
	}
	var dirs []string
	for _, parent := range parents {
		ents, _ := os.ReadDir(parent)
		for _, e := range ents {
			if o, ok := parseOwner(e.Name()); ok && o.pid == pid {
				dirs = append(dirs, filepath.Join(parent, e.Name()))
			}
		}
	}
	return dirs
}

// TestExitStatus: how the server ended, after Done.
func TestExitStatus(t *testing.T) {
	requireConfinement(t)
	tests := []struct {
		name  string
		off   bool
		argv  []string
		ops   []string // requests before Close
		grace time.Duration
		want  string
	}{
		{"exits on stdin EOF", false, nil, nil, 10 * time.Second, "exit status 0"},
		{"exits with 3", false, []string{hostilePath(), "exit", "3"}, nil, 10 * time.Second, "exit status 3"},
		{"killed after grace", false, nil, []string{"linger", "ignore-signals"}, 50 * time.Millisecond, "signal: killed"},
		{"off, exits with 3", true, []string{hostilePath(), "exit", "3"}, nil, 10 * time.Second, "exit status 3"},
		{"off, killed after grace", true, nil, []string{"linger", "ignore-signals"}, 50 * time.Millisecond, "signal: killed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startHostile(t, Config{Worktree: t.TempDir(), Argv: tt.argv, Off: tt.off})
			for _, o := range tt.ops {
				s.must(o)
			}
			if s.p.ExitStatus() != "" && tt.argv == nil {
				t.Errorf("ExitStatus before Done: %q", s.p.ExitStatus())
			}
			if err := s.p.Close(tt.grace); err != nil {
				t.Fatalf("Close: %v", err)
			}
			<-s.p.Done()
			if got := s.p.ExitStatus(); got != tt.want {
				t.Errorf("ExitStatus %q, want %q", got, tt.want)
			}
		})
	}
}

// TestSignalForwarding: SIGTERM to the helper reaches the server.
func TestSignalForwarding(t *testing.T) {
	requireConfinement(t)
	wt := t.TempDir()
	s := startHostile(t, Config{Worktree: wt})
	s.must("trap", filepath.Join(wt, "got-term"))
	termReachesServer(t, s, filepath.Join(wt, "got-term"))
}

// termReachesServer sends SIGTERM to s's helper and checks that the
// server's handler, which the "trap" request set to make trapFile and
// exit 0, ran.
func termReachesServer(t *testing.T, s *session, trapFile string) {
	t.Helper()
	if err := s.p.helper.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.p.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the server still runs 10 s after a SIGTERM to its helper")
	}
	if got := s.p.ExitStatus(); got != "exit status 0" {
		t.Errorf("ExitStatus %q, want exit status 0 (the server's own exit)", got)
	}
	if _, err := os.Stat(trapFile); err != nil {
		t.Errorf("the server's SIGTERM handler did not run: %v", err)
	}
}

// TestUmaskFlood: a server that floods its helper with umask calls (each a
// seccomp notification the helper answers, and they are answered) keeps
// neither a SIGTERM from being relayed nor Close from ending it.
func TestUmaskFlood(t *testing.T) {
	requireConfinement(t)
	wt := t.TempDir()
	s := startHostile(t, Config{Worktree: wt})
	s.must("trap", filepath.Join(wt, "got-term"))
	if r := s.must("umask-flood", "8"); r.Out == "0" {
		t.Fatalf("no umask call returned in 100ms of the flood")
	}
	termReachesServer(t, s, filepath.Join(wt, "got-term"))

	s = startHostile(t, Config{Worktree: t.TempDir()})
	s.must("linger")
	s.must("ignore-signals")
	s.must("umask-flood", "8")
	if err := s.p.Close(50 * time.Millisecond); err != nil {
		t.Errorf("Close: %v", err)
	}
	if got := s.p.ExitStatus(); got != "signal: killed" {
		t.Errorf("ExitStatus %q, want signal: killed", got)
	}
}

// TestClose: Close is idempotent, safe concurrently and after the server
// died, bounded even when a grandchild holds stdout open, and removes the
// temporary directory.
func TestClose(t *testing.T) {
	requireConfinement(t)
	t.Run("concurrent", func(t *testing.T) {
		s := startHostile(t, Config{Worktree: t.TempDir()})
		tmp := s.p.TempDir()
		s.must("write", filepath.Join(tmp, "f"))
		s.must("mkdir", filepath.Join(tmp, "d"))
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = s.p.Close(time.Second)
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("Close %d: %v", i, err)
			}
		}
		select {
		case <-s.p.Done():
		default:
			t.Error("Done is open after Close")
		}
		if _, err := os.Stat(tmp); !os.IsNotExist(err) {
			t.Errorf("TempDir %s after Close: %v", tmp, err)
		}
		if err := s.p.Close(0); err != nil {
			t.Errorf("Close again: %v", err)
		}
		if _, err := s.p.Stdout().Read(make([]byte, 1)); err == nil {
			t.Error("Stdout readable after Close")
		}
	})
	t.Run("after the server died", func(t *testing.T) {
		s := startHostile(t, Config{Worktree: t.TempDir(), Argv: []string{hostilePath(), "exit", "0"}})
		<-s.p.Done()
		if err := s.p.Close(time.Second); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	for _, off := range []bool{false, true} {
		t.Run(fmt.Sprintf("stdout held by a grandchild, off=%v", off), func(t *testing.T) {
			s := startHostile(t, Config{Worktree: t.TempDir(), Off: off})
			s.must("hold-stdout")
			s.must("linger")
			done := make(chan error, 1)
			go func() { done <- s.p.Close(100 * time.Millisecond) }()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Close: %v", err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("Close did not return within 20s")
			}
		})
	}
}

// TestStderr: the server's stderr reaches Config.Stderr.
func TestStderr(t *testing.T) {
	requireConfinement(t)
	var buf lockedBuffer
	s := startHostile(t, Config{Worktree: t.TempDir(), Stderr: &buf})
	s.must("stderr", "a line for the log")
	if err := s.p.Close(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "a line for the log") {
		t.Errorf("stderr: %q", buf.String())
	}
}

// TestOff: Config.Off runs the server unconfined and says so.
func TestOff(t *testing.T) {
	s := startHostile(t, Config{Worktree: t.TempDir(), Off: true})
	if got := s.p.Confinement(); got != "none" {
		t.Errorf("Confinement %q, want none", got)
	}
	status := s.must("status").Out
	if statusField(status, "Seccomp") != "0" || statusField(status, "NoNewPrivs") != "0" {
		t.Errorf("an Off server is confined after all:\n%s", status)
	}
}

// TestConcurrentStart: eight servers start, work and close at once.
func TestConcurrentStart(t *testing.T) {
	requireConfinement(t)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			p, err := Start(ctx, Config{
				Name:     fmt.Sprintf("parallel-%d", i),
				Argv:     []string{hostilePath()},
				Worktree: t.TempDir(),
				HostEnv:  []string{"PATH=/usr/bin:/bin"},
				Off:      i%4 == 3,
			})
			if err != nil {
				t.Errorf("Start %d: %v", i, err)
				return
			}
			defer p.Close(time.Second)
			want := fmt.Sprintf(`{"ok":true,"out":"hello %d"}`, i)
			fmt.Fprintf(p.Stdin(), `{"op":"echo","args":["hello %d"]}`+"\n", i)
			line, err := bufio.NewReader(p.Stdout()).ReadString('\n')
			if err != nil || strings.TrimSpace(line) != want {
				t.Errorf("server %d replied %q, %v; want %s", i, line, err, want)
			}
			if err := p.Close(5 * time.Second); err != nil {
				t.Errorf("Close %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
}

// TestProbe: Probe reports what Start gives a server with the defaults.
func TestProbe(t *testing.T) {
	conf := requireConfinement(t)
	s := startHostile(t, Config{Worktree: t.TempDir()})
	if got := s.p.Confinement(); got != conf {
		t.Errorf("Probe %q, Confinement %q", conf, got)
	}
	for _, layer := range []string{"seccomp", "pidns", "mntns", "netns"} {
		if !strings.Contains(conf, layer) {
			t.Errorf("Probe %q lacks %s", conf, layer)
		}
	}
}

// TestHelperMarker: the helper runs only for its exact argv, and refuses
// to run without the descriptors Start passes or with a bad spec.
func TestHelperMarker(t *testing.T) {
	t.Run("no descriptors", func(t *testing.T) {
		cmd := exec.Command(os.Args[0])
		cmd.Args = []string{helperArg0}
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitBadStart {
			t.Fatalf("exit: %v, want status %d", err, exitBadStart)
		}
		if !strings.Contains(string(out), "only when started by sandbox.Start") {
			t.Errorf("output %q", out)
		}
	})
	// runHelper starts the helper with a spec socket, sends msg on it with
	// the descriptors rights, and returns its report and exit.
	runHelper := func(t *testing.T, msg []byte, rights []int) (report, error, error) {
		t.Helper()
		var err error
		specHelper, specHost := socketPairUnlessFailed(&err)
		if err != nil {
			t.Fatal(err)
		}
		repR, repW, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(os.Args[0])
		cmd.Args = []string{helperArg0}
		cmd.ExtraFiles = []*os.File{specHelper, repW}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		specHelper.Close()
		repW.Close()
		if err := sendSpec(specHost, msg, rights); err != nil {
			t.Error(err)
		}
		specHost.Close()
		rep, rerr := readReport(bufio.NewReader(repR))
		return rep, rerr, cmd.Wait()
	}
	wantBadStart := func(t *testing.T, rep report, rerr, werr error, want string) {
		t.Helper()
		if rerr != nil || !strings.Contains(rep.Error, want) {
			t.Errorf("report %+v, %v: want an error saying %q", rep, rerr, want)
		}
		var ee *exec.ExitError
		if !errors.As(werr, &ee) || ee.ExitCode() != exitBadStart {
			t.Errorf("exit: %v, want status %d", werr, exitBadStart)
		}
	}
	t.Run("bad spec", func(t *testing.T) {
		rep, rerr, werr := runHelper(t, []byte("GET / HTTP/1.1\r\n\r\n.........."), nil)
		wantBadStart(t, rep, rerr, werr, "missing magic")
	})
	// The idmapped trees come with the spec, one per Idmap path: a spec
	// with fewer or more is refused, whatever the descriptors are.
	t.Run("trees", func(t *testing.T) {
		s := &spec{Path: "/bin/true", Argv: []string{"true"}, Dir: "/", Idmap: []string{"/w"}, Write: []string{"/w"}}
		msg, err := encodeSpec(s)
		if err != nil {
			t.Fatal(err)
		}
		null, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		defer null.Close()
		for _, n := range []int{0, 2} {
			rights := make([]int, n)
			for i := range rights {
				rights[i] = int(null.Fd())
			}
			rep, rerr, werr := runHelper(t, msg, rights)
			wantBadStart(t, rep, rerr, werr, fmt.Sprintf("%d idmapped trees for 1 paths", n))
		}
	})
	// A program importing the package runs its own main for any other
	// argument vector, even one that contains the marker.
	for _, args := range [][]string{
		{"host", helperArg0, "-hostile", "/nonexistent"},
		{helperArg0, "-hostile", "/nonexistent"},
	} {
		t.Run(fmt.Sprintf("argv %q", args), func(t *testing.T) {
			cmd := exec.Command(hostPath())
			cmd.Args = args
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.HasPrefix(string(out), "host: ") {
				t.Errorf("exit %v, output %q: want the fixture's own main to fail with status 1", err, out)
			}
		})
	}
}

// nobodyDir makes a temporary directory owned by nobody (65534), mode 0755,
// removed at the end of the test: a worktree or home for a host run as
// nobody.
func nobodyDir(t *testing.T, pattern string) string {
	t.Helper()
	d, err := os.MkdirTemp("", pattern)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	if err := os.Chown(d, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

// hostAsNobody runs the host fixture as nobody in dir, with HOME=home in
// its environment, starting the hostile fixture with the further flags
// args, and returns its output's lines and its stderr. It skips the test
// where this kernel cannot confine for an ordinary user, and fails it if
// the fixture fails otherwise.
func hostAsNobody(t *testing.T, dir, home string, args ...string) (lines []string, stderr string) {
	t.Helper()
	return hostAsNobodyEnv(t, dir, []string{"HOME=" + home, "PATH=/usr/bin:/bin"}, args...)
}

// hostAsNobodyEnv is hostAsNobody with the host fixture's whole
// environment env.
func hostAsNobodyEnv(t *testing.T, dir string, env []string, args ...string) (lines []string, stderr string) {
	t.Helper()
	cmd := exec.Command(hostPath(), append([]string{"-hostile", hostilePath()}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	cmd.Env = env
	cmd.Dir = dir
	var errBuf lockedBuffer
	cmd.Stderr = &errBuf
	out, err := cmd.Output()
	if err != nil {
		if strings.Contains(errBuf.String(), ErrUnsupported.Error()) {
			t.Skipf("this kernel cannot confine for an ordinary user: %s", errBuf.String())
		}
		t.Fatalf("host fixture as nobody: %v\n%s", err, errBuf.String())
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n"), errBuf.String()
}

// TestNonRoot: as an ordinary user (nobody), the server is confined
// through a user namespace, and writes its private home.
func TestNonRoot(t *testing.T) {
	requireConfinement(t)
	if os.Getuid() != 0 {
		t.Skip("needs root to run the host fixture as nobody; as non-root every other test already covers this path")
	}
	const nobody = 65534
	mk := func(pattern string) string { return nobodyDir(t, pattern) }
	wt := mk("mcphost-nonroot-wt-")
	home := mk("mcphost-nonroot-home-")
	privateHome := mk("mcphost-nonroot-private-home-")
	secret := filepath.Join(home, "secret")
	mkfile(t, secret, "SECRET")
	os.Chown(secret, nobody, nobody)
	tcp, tcpGot := listenTCP(t)

	ops := fmt.Sprintf(`[
		{"op":"write","args":[%q]},
		{"op":"read","args":[%q]},
		{"op":"write","args":["/etc/mcphost-planted"]},
		{"op":"readdir","args":["/var"]},
		{"op":"tcp","args":[%q]},
		{"op":"write","args":[%q]},
		{"op":"exec","args":[%q,"alloc","400"]},
		{"op":"exec","args":[%q,"alloc","16"]},
		{"op":"status"},
		{"op":"read","args":["/proc/keys"]},
		{"op":"chmod-mode","args":[%q,"777"]},
		{"op":"fill","args":[%q,"3"]},
		{"op":"inotify","args":[%q]}]`, filepath.Join(wt, "x"), secret, tcp, filepath.Join(home, "h"), hostilePath(), hostilePath(),
		wt, filepath.Join(wt, "big"), wt)
	// Memory is bounded by RLIMIT_DATA here (no cgroup for an ordinary
	// user): a child past it fails to allocate, one within it runs.
	// A key of the user's: unmasked, /proc/keys would name it.
	keyDesc := fmt.Sprintf("mcphost-test-key-%d-%d", os.Getpid(), time.Now().UnixNano())
	keyVisible := addKeyAs(t, nobody, keyDesc)
	lines, stderr := hostAsNobody(t, wt, home, "-worktree", wt, "-home", home, "-private-home", privateHome, "-memory", "96", "-file-size", "2", "-ops", ops)
	if len(lines) != 16 || lines[15] != "ready" {
		t.Fatalf("host fixture output:\n%s\nstderr: %s", strings.Join(lines, "\n"), stderr)
	}
	if !strings.Contains(lines[0], "+userns+") {
		t.Errorf("%s: want a user namespace", lines[0])
	}
	// Then: /proc/keys masked (it reads empty), no world write
	// (EPERM), no file past the file size limit (EFBIG), and file
	// watching, which only the reduced tier refuses.
	want := []bool{true, false, false, false, false, true, false, true, true, true, false, false, true}
	for i, w := range want {
		if ok := strings.HasPrefix(lines[i+2], `{"ok":true`); ok != w {
			t.Errorf("request %d: %s, want ok=%v", i, lines[i+2], w)
		}
	}
	if lines[11] != `{"ok":true}` {
		t.Errorf("/proc/keys: %s, want it empty", lines[11])
	}
	if keyVisible && strings.Contains(lines[11], keyDesc) {
		t.Errorf("/proc/keys names the user's key %s", keyDesc)
	}
	for i, errno := range map[int]string{12: "EPERM", 13: "EFBIG"} {
		if !strings.HasSuffix(lines[i], `"errno":"`+errno+`"}`) {
			t.Errorf("request %d: %s, want %s", i-2, lines[i], errno)
		}
	}
	if _, err := os.Stat(filepath.Join(privateHome, "h")); err != nil {
		t.Errorf("the server's file in its home: %v", err)
	}
	if _, err := os.Stat(filepath.Join(home, "h")); err == nil {
		t.Error("the server wrote the real home")
	}
	if !goAllocFailed(lines[8]) {
		t.Errorf("the child past the memory limit: %s, want Go's allocation failure", lines[8])
	}
	status := lines[10]
	for _, want := range []string{`CapEff:\t0000000000000000`, `CapBnd:\t0000000000000000`, `NoNewPrivs:\t1`, `Uid:\t65534`} {
		if !strings.Contains(status, want) {
			t.Errorf("status lacks %s: %s", want, status)
		}
	}
	if tcpGot() != 0 {
		t.Error("the TCP listener accepted a connection")
	}
	if st, err := os.Stat(filepath.Join(wt, "x")); err != nil {
		t.Errorf("the server's file: %v", err)
	} else if st.Sys().(*syscall.Stat_t).Uid != nobody {
		t.Errorf("the server's file is owned by %d, want %d", st.Sys().(*syscall.Stat_t).Uid, nobody)
	}
}

// TestReducedTier: as an ordinary user on a host that forbids user
// namespaces, a server is still confined (the reduced tier), and each
// promise that tier makes holds against the hostile server: no writes
// outside its grants, no secret of HOME, no network, a protected path
// stays unwritable, no other process's environment, no orphans. The
// confinement says "reduced" and lists what it lacks; with RequireFull the
// start fails instead.
func TestReducedTier(t *testing.T) {
	requireConfinement(t)
	if os.Getuid() != 0 {
		t.Skip("needs root to run the host fixture as nobody in a user namespace that forbids nested ones")
	}
	if abi := kernelABI(t); abi < minReducedABI {
		t.Skipf("Landlock ABI %d: the reduced tier needs %d", abi, minReducedABI)
	}
	const nobody = 65534
	mk := func(pattern string) string { return nobodyDir(t, pattern) }
	wt := mk("mcphost-reduced-wt-")
	home := mk("mcphost-reduced-home-")
	privateHome := mk("mcphost-reduced-private-home-")
	secret := filepath.Join(home, "secret")
	mkfile(t, secret, "SECRET")
	os.Chown(secret, nobody, nobody)
	gitDir := filepath.Join(wt, ".git")
	mkfile(t, filepath.Join(gitDir, "config"), "[core]\n")
	mkfile(t, filepath.Join(wt, "src", "main.go"), "package main\n")
	filepath.Walk(wt, func(p string, _ os.FileInfo, _ error) error { return os.Chown(p, nobody, nobody) })
	tcp, tcpGot := listenTCP(t)
	beat := filepath.Join(wt, "src", "beat")
	// A session bus of the user's, say: a listening socket outside every
	// grant, which nothing but the filter keeps it from in this tier.
	bus := filepath.Join(mk("mcphost-reduced-run-"), "bus")
	listenUnix(t, bus)
	if err := os.Chown(bus, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	// A directory of the user's outside every grant, 0700: watching it
	// would show the names of the files made in it.
	private := mk("mcphost-reduced-private-")
	if err := os.Chmod(private, 0o700); err != nil {
		t.Fatal(err)
	}

	run := func(t *testing.T, full bool, ops string, extra ...string) ([]string, string, error) {
		args := []string{"-hostile", hostilePath(), "-worktree", wt, "-home", home, "-no-userns", strconv.Itoa(nobody), "-protect", gitDir, "-private-home", privateHome, "-file-size", "2", "-ops", ops}
		args = append(args, extra...)
		if full {
			args = append(args, "-full")
		}
		cmd := exec.Command(hostPath(), args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{
			Cloneflags:                 syscall.CLONE_NEWUSER,
			UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: nobody - 1, Size: 1}, {ContainerID: nobody, HostID: nobody, Size: 1}},
			GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: nobody - 1, Size: 1}, {ContainerID: nobody, HostID: nobody, Size: 1}},
			GidMappingsEnableSetgroups: true,
			Credential:                 &syscall.Credential{Uid: 0, Gid: 0},
		}
		cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin"}
		cmd.Dir = wt
		var stderr lockedBuffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		return strings.Split(strings.TrimSpace(string(out)), "\n"), stderr.String(), err
	}

	t.Run("full required", func(t *testing.T) {
		_, stderr, err := run(t, true, "[]")
		if err == nil {
			t.Fatal("the server started although full confinement was required and user namespaces are refused")
		}
		for _, want := range []string{ErrUnsupported.Error(), `sandbox = "full"`, "reduced tier", "user namespace"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("the error lacks %q: %s", want, stderr)
			}
		}
	})

	t.Run("network by name refused", func(t *testing.T) {
		_, stderr, err := run(t, false, "[]", "-proxy", "localhost:1")
		if err == nil {
			t.Fatal("a server with network by name started in the reduced tier, which has no network namespace")
		}
		for _, want := range []string{"network by name", "network namespace", "network = true"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("the error lacks %q: %s", want, stderr)
			}
		}
	})

	ops := fmt.Sprintf(`[
		{"op":"write","args":[%q]},
		{"op":"read","args":[%q]},
		{"op":"write","args":["/etc/mcphost-planted"]},
		{"op":"write","args":[%q]},
		{"op":"tcp","args":[%q]},
		{"op":"unix","args":[%q]},
		{"op":"write","args":[%q]},
		{"op":"rename","args":[%q, %q]},
		{"op":"parent-environ"},
		{"op":"prlimit-parent"},
		{"op":"renice-parent"},
		{"op":"suid","args":["/bin/true", %q]},
		{"op":"userns"},
		{"op":"daemon","args":[%q]},
		{"op":"wait-file","args":[%q]},
		{"op":"socket","args":["16","3","0"]},
		{"op":"write","args":[%q]},
		{"op":"status"},
		{"op":"setpriority","args":["2","0","19"]},
		{"op":"setpriority","args":["1","0","19"]},
		{"op":"getpriority","args":["2","0"]},
		{"op":"ioprio-set","args":["3","0","16391"]},
		{"op":"ioprio-get","args":["2","0"]},
		{"op":"setpriority","args":["0","0","1"]},
		{"op":"inotify","args":[%q]},
		{"op":"chmod-mode","args":[%q,"777"]},
		{"op":"chmod-mode","args":[%q,"606"]},
		{"op":"umask-create","args":[%q,%q]},
		{"op":"fill","args":[%q,"3"]},
		{"op":"acl-other-write","args":[%q]},
		{"op":"signal-parent"}]`,
		filepath.Join(wt, "src", "new"), secret, filepath.Join(home, "planted"), tcp, bus,
		filepath.Join(gitDir, "config"), gitDir, filepath.Join(wt, "gone"), filepath.Join(wt, "src", "suid"), beat, beat, filepath.Join(privateHome, "h"),
		private, wt, secret, filepath.Join(wt, "src", "umask-file"), filepath.Join(wt, "src", "umask-dir"), filepath.Join(privateHome, "big"), filepath.Join(wt, "src", "main.go"))
	lines, stderr, err := run(t, false, ops)
	if err != nil {
		t.Fatalf("host fixture: %v\n%s", err, stderr)
	}
	var replies, lacks []string
	conf, probed := "", false
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "confinement: "):
			conf = strings.TrimPrefix(l, "confinement: ")
		case strings.HasPrefix(l, "probe: "):
			probed = true
			if !strings.HasSuffix(l, "+reduced") {
				t.Errorf("Probe says %q, want the reduced tier", l)
			}
		case strings.HasPrefix(l, "lacks: "):
			lacks = append(lacks, l)
		case strings.HasPrefix(l, "{"):
			replies = append(replies, l)
		}
	}
	t.Logf("confinement %s; %d lacks", conf, len(lacks))
	if !probed {
		t.Error("the fixture printed no probe line")
	}
	if !strings.Contains(conf, "+reduced") || strings.Contains(conf, "ns") {
		t.Errorf("confinement %q: want the reduced tier, without namespaces", conf)
	}
	if len(lacks) < 3 {
		t.Errorf("it says it lacks only %q", lacks)
	}
	names := []string{"write its worktree", "read a secret in HOME", "write /etc", "write HOME", "reach a TCP listener",
		"reach a unix socket outside its grants", "write the protected .git", "rename the protected .git", "read the helper's environment",
		"take the helper's descriptors", "renice the helper", "leave a set-user-ID program", "create a user namespace", "leave a daemon", "see it run",
		"open a NETLINK_ROUTE socket (the host's network namespace)", "write its private home", "status",
		"renice every process of the user (PRIO_USER)", "renice its process group (PRIO_PGRP)", "read the user's priority (PRIO_USER)",
		"set the I/O priority of the user's processes (IOPRIO_WHO_USER)", "read its process group's I/O priority (IOPRIO_WHO_PGRP)",
		"renice itself", "watch a 0700 directory outside its grants (inotify)", "chmod 0777 the worktree",
		"chmod o+w a file of the user's outside its grants", "create with the umask cleared", "write a file past the file size limit",
		"give other users write through an ACL"}
	want := []bool{true, false, false, false, false, false, false, false, false, false, false, false, false, true, true, false, true, true,
		false, false, false, false, false, true, false, false, false, true, false, false}
	// Each refusal from the layer that makes it: Landlock (EACCES), the
	// seccomp filter (EPERM for the helper and the user namespace, where
	// the host's max_user_namespaces=0 would say ENOSPC; EAFNOSUPPORT for
	// sockets).
	// Then the filter again: EPERM for a priority call that names a
	// group or user, ENOSYS for inotify (as a kernel without it), EPERM
	// for world write, EOPNOTSUPP for extended attributes; and EFBIG from
	// RLIMIT_FSIZE (Go ignores SIGXFSZ).
	errnos := []string{"", "EACCES", "EACCES", "EACCES", "EAFNOSUPPORT", "EACCES", "EACCES", "EACCES", "EACCES", "EPERM", "EPERM", "EPERM", "EPERM", "", "", "EAFNOSUPPORT", "", "",
		"EPERM", "EPERM", "EPERM", "EPERM", "EPERM", "", "ENOSYS", "EPERM", "EPERM", "", "EFBIG", "EOPNOTSUPP"}
	if len(replies) != len(want)+1 {
		t.Fatalf("replies %q\nstderr: %s", replies, stderr)
	}
	// The helper runs as the server's user here: only Landlock's signal
	// scope (ABI 6) keeps the server from signalling it, and Lacks says
	// so below that.
	signal := replies[len(want)]
	if abiOf(conf) >= 6 {
		if !strings.HasSuffix(signal, `"errno":"EPERM"}`) {
			t.Errorf("signal the helper: %s, want EPERM (Landlock's signal scope)", signal)
		}
	} else if !slices.ContainsFunc(lacks, func(l string) bool { return strings.Contains(l, "signal") }) {
		t.Errorf("Landlock ABI %d cannot scope signals, and Lacks does not say so: %q", abiOf(conf), lacks)
	}
	for i, w := range want {
		if ok := strings.HasPrefix(replies[i], `{"ok":true`); ok != w {
			t.Errorf("%s: %s, want ok=%v", names[i], replies[i], w)
		} else if !w && !strings.HasSuffix(replies[i], `"errno":"`+errnos[i]+`"}`) {
			t.Errorf("%s: %s, want %s", names[i], replies[i], errnos[i])
		}
	}
	for _, w := range []string{`NoNewPrivs:\t1`, `Seccomp:\t2`, `CapEff:\t0000000000000000`} {
		if !strings.Contains(replies[17], w) {
			t.Errorf("status lacks %s", w)
		}
	}
	if tcpGot() != 0 {
		t.Error("the TCP listener accepted a connection")
	}
	for _, p := range []string{wt, secret} {
		if st, err := os.Stat(p); err != nil {
			t.Error(err)
		} else if st.Mode().Perm()&0o002 != 0 {
			t.Errorf("%s is world-writable: %v", p, st.Mode())
		}
	}
	if got, _ := os.ReadFile(filepath.Join(gitDir, "config")); string(got) != "[core]\n" {
		t.Errorf(".git/config is now %q", got)
	}
	// The fixture closed its server and exited: the daemon's grandchild
	// must be gone with it.
	st1, err := os.Stat(beat)
	if err != nil {
		t.Fatalf("the daemon never ran: %v", err)
	}
	time.Sleep(300 * time.Millisecond)
	if st2, _ := os.Stat(beat); st2.Size() != st1.Size() {
		t.Errorf("a daemon of the server outlived Close: %s still grows", beat)
	}
}

// TestStartContext: a cancelled context stops the start, not the server.
func TestStartContext(t *testing.T) {
	requireConfinement(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Start(ctx, Config{Name: "cancelled", Argv: []string{hostilePath()}, Worktree: t.TempDir()})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Start with a cancelled context: %v", err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	p, err := Start(ctx, Config{Name: "cancelled-later", Argv: []string{hostilePath()}, Worktree: t.TempDir()})
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(time.Second)
	time.Sleep(50 * time.Millisecond)
	fmt.Fprintln(p.Stdin(), `{"op":"echo","args":["still here"]}`)
	line, err := bufio.NewReader(p.Stdout()).ReadString('\n')
	if err != nil || !strings.Contains(line, "still here") {
		t.Errorf("after cancelling the start context the server replied %q, %v", line, err)
	}
	// A cancel that ended the server a moment later would pass the echo:
	// the server must stay up.
	select {
	case <-p.Done():
		t.Errorf("the server ended after its start context was cancelled: %s", p.ExitStatus())
	case <-time.After(500 * time.Millisecond):
	}
}

// TestNoControllingTerminal: a host running in a terminal does not lend
// it to its servers (a server with the terminal could inject keystrokes
// into the user's shell with TIOCSTI), confined or not.
func TestNoControllingTerminal(t *testing.T) {
	requireConfinement(t)
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	defer ptmx.Close()
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	pts, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer pts.Close()
	// Drain the terminal so that nothing blocks on a full buffer.
	go io.Copy(io.Discard, ptmx)
	inTerminal := func(cmd *exec.Cmd) *exec.Cmd {
		cmd.Stdin = pts
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
		return cmd
	}
	// The control: a process started this way does have the terminal.
	if out, err := inTerminal(exec.Command("/bin/sh", "-c", "exec 3<>/dev/tty && echo has-tty")).CombinedOutput(); err != nil || !strings.Contains(string(out), "has-tty") {
		t.Fatalf("the control process has no terminal: %v, %s", err, out)
	}
	for _, off := range []bool{false, true} {
		t.Run(fmt.Sprintf("off=%v", off), func(t *testing.T) {
			args := []string{"-hostile", hostilePath(), "-worktree", t.TempDir(), "-ops", `[{"op":"tty"},{"op":"ctty"}]`}
			if off {
				args = append(args, "-off")
			}
			var stderr lockedBuffer
			cmd := inTerminal(exec.Command(hostPath(), args...))
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("host fixture: %v: %s", err, stderr.String())
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			if len(lines) != 5 || !strings.HasPrefix(lines[2], `{"ok":false`) {
				t.Errorf("the server opened the host's terminal: %s", out)
			}
			// Without a terminal in its view (confined), the open above
			// fails for want of /dev/tty whatever the session: the
			// kernel's word is the terminal of its session, none.
			if len(lines) == 5 && lines[3] != `{"ok":true,"out":"0"}` {
				t.Errorf("the server's controlling terminal: %s, want none (0)", lines[3])
			}
		})
	}
}

// TestLeakedDescriptors: a descriptor the host leaks without close-on-exec
// (as C code may) reaches neither the server nor anything it runs, confined
// or not; the server holds its stdio and nothing else.
func TestLeakedDescriptors(t *testing.T) {
	requireConfinement(t)
	secret := filepath.Join(t.TempDir(), "secret")
	mkfile(t, secret, "SECRET")
	fd, err := syscall.Open(secret, syscall.O_RDONLY, 0) // no O_CLOEXEC, on purpose
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	for _, off := range []bool{false, true} {
		t.Run(fmt.Sprintf("off=%v", off), func(t *testing.T) {
			s := startHostile(t, Config{Worktree: t.TempDir(), Off: off})
			fds := strings.Fields(s.must("fds").Out)
			for _, f := range fds {
				n, _, _ := strings.Cut(f, "=")
				if n != "0" && n != "1" && n != "2" {
					t.Errorf("the server holds descriptor %s", f)
				}
			}
			if len(fds) != 3 {
				t.Errorf("the server's descriptors: %v, want stdio only", fds)
			}
		})
	}
}

// TestPrivateHome: a server with Home writes ~ at the path of HOME, and what
// it writes lands in its own directory on the host; the real home stays out
// of sight and unwritten; a dotfile granted with Read shows through
// read-only; a worktree beneath HOME is still writable; a second server with
// another home sees nothing of the first's. TempHome is a bounded tmpfs,
// and its directory is removed by Close.
func TestPrivateHome(t *testing.T) {
	requireConfinement(t)
	realHome := t.TempDir()
	mkfile(t, filepath.Join(realHome, ".ssh", "id_ed25519"), "SECRET")
	gitconfig := filepath.Join(realHome, ".gitconfig")
	mkfile(t, gitconfig, "[user]\n\tname = me\n")
	wt := filepath.Join(realHome, "src", "proj")
	if err := os.MkdirAll(wt, 0o755); err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	homeA := filepath.Join(state, "home", "a")
	homeB := filepath.Join(state, "home", "b")
	for _, d := range []string{homeA, homeB} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + realHome}
	a := startHostile(t, Config{Name: "a", Worktree: wt, HostEnv: env, Home: homeA, Read: []string{gitconfig}})
	cache := filepath.Join(realHome, ".cache", "a", "settings.json")
	if got := a.must("env").Out; !slices.Contains(strings.Split(got, "\n"), "HOME="+realHome) {
		t.Errorf("HOME is not the host's HOME path in the server's env:\n%s", got)
	}
	a.check(t, []op{
		{name: "mkdir under HOME", op: "mkdir", args: []string{filepath.Join(realHome, ".cache")}, ok: true},
		{name: "mkdir deeper", op: "mkdir", args: []string{filepath.Join(realHome, ".cache", "a")}, ok: true},
		{name: "write under HOME", op: "write", args: []string{cache}, ok: true},
		{name: "read the granted dotfile", op: "read", args: []string{gitconfig}, ok: true},
		{name: "write the granted dotfile", op: "write", args: []string{gitconfig}, errnos: []string{"EROFS"}},
		{name: "truncate the granted dotfile", op: "truncate", args: []string{gitconfig}, errnos: []string{"EROFS"}},
		{name: "chmod the granted dotfile", op: "chmod", args: []string{gitconfig}, errnos: []string{"EROFS"}},
		{name: "replace the granted dotfile", op: "rename", args: []string{filepath.Join(realHome, ".cache", "a", "settings.json"), gitconfig}, errnos: []string{"EBUSY", "EXDEV"}},
		{name: "remove the granted dotfile", op: "remove", args: []string{gitconfig}, errnos: []string{"EBUSY"}},
		{name: "read a secret of the real home", op: "read", args: []string{filepath.Join(realHome, ".ssh", "id_ed25519")}, errnos: []string{"ENOENT"}},
		{name: "write the worktree beneath HOME", op: "write", args: []string{filepath.Join(wt, "out")}, ok: true},
		{name: "read the private home's own path", op: "readdir", args: []string{homeA}, errnos: []string{"ENOENT"}},
	})
	if got, err := os.ReadFile(filepath.Join(homeA, ".cache", "a", "settings.json")); err != nil || string(got) != "hostile\n" {
		t.Errorf("the private home on the host holds %q, %v; want the server's file", got, err)
	}
	if _, err := os.Stat(filepath.Join(realHome, ".cache")); err == nil {
		t.Error("the server wrote the real home")
	}
	if got, _ := os.ReadFile(gitconfig); string(got) != "[user]\n\tname = me\n" {
		t.Errorf("the real .gitconfig is now %q", got)
	}
	if got, _ := os.ReadFile(filepath.Join(wt, "out")); string(got) != "hostile\n" {
		t.Errorf("the worktree file is %q", got)
	}

	b := startHostile(t, Config{Name: "b", Worktree: t.TempDir(), HostEnv: env, Home: homeB})
	b.check(t, []op{
		{name: "read the other server's home file", op: "read", args: []string{cache}, errnos: []string{"ENOENT"}},
		{name: "read the other server's home by its path", op: "readdir", args: []string{homeA}, errnos: []string{"ENOENT"}},
		{name: "write its own home", op: "write", args: []string{filepath.Join(realHome, "b")}, ok: true},
	})

	// A temporary home is a tmpfs of the Tmp size: what the server writes
	// there is bounded and never reaches the host's disk.
	c := startHostile(t, Config{Name: "c", Worktree: t.TempDir(), HostEnv: env, TempHome: true, Limits: Limits{Tmp: 8 << 20}})
	c.check(t, []op{
		{name: "write its temporary home", op: "write", args: []string{filepath.Join(realHome, "c")}, ok: true},
		{name: "read it back", op: "read", args: []string{filepath.Join(realHome, "c")}, ok: true},
		{name: "fill its temporary home past its size", op: "fill", args: []string{filepath.Join(realHome, "big"), "16"}, errnos: []string{"ENOSPC"}},
	})
	// This server's own, not another test process's of the same name.
	temp := c.p.tempHome
	if temp == "" {
		t.Fatal("no temporary home directory")
	}
	if _, err := os.Stat(filepath.Join(temp, "c")); err == nil {
		t.Errorf("the server's file in its temporary home reached the host's disk: %s", filepath.Join(temp, "c"))
	}
	if err := c.p.Close(time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(temp); err == nil {
		t.Errorf("Close left the temporary home %s", temp)
	}
}

// TestPrivateHomeRefused: a home that would expose the real home, or that
// another server could reach, is refused with an error naming it.
func TestPrivateHomeRefused(t *testing.T) {
	requireConfinement(t)
	realHome := t.TempDir()
	wt := t.TempDir()
	for _, tt := range []struct {
		name, home, want string
	}{
		{"the real home", realHome, "the home directory"},
		{"an ancestor of the real home", filepath.Dir(realHome), "the home directory"},
		{"inside the worktree", filepath.Join(wt, "h"), "lies in the worktree"},
		{"missing", filepath.Join(t.TempDir(), "nope"), "does not exist"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			os.MkdirAll(filepath.Join(wt, "h"), 0o700)
			_, err := Start(context.Background(), Config{Name: "x", Argv: []string{hostilePath()}, Worktree: wt,
				HostEnv: []string{"PATH=/usr/bin:/bin", "HOME=" + realHome}, Home: tt.home})
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Start: %v, want ErrInvalidConfig mentioning %q", err, tt.want)
			}
		})
	}
}

// TestSweepCgroups: a start removes the cgroups a host that is gone left,
// and only those: not a live host's, not one of another PID namespace,
// not one that still holds a process, not a name this package did not
// make.
func TestSweepCgroups(t *testing.T) {
	requireConfinement(t)
	if !dropsRoot() {
		t.Skip("only a root host makes cgroups")
	}
	own := readOwnCgroups()
	v1, v2, err := own.v1, own.v2, own.err
	if err != nil {
		t.Fatal(err)
	}
	top := filepath.Join(cgroupRoot, v2)
	if v1["pids"] != "" {
		top = filepath.Join(cgroupRoot, "pids", v1["pids"])
	}
	// A parent of the test's own, which no other host sweeps (its name
	// has no owner): starts elsewhere on the machine cannot race it.
	parent := filepath.Join(top, fmt.Sprintf("mcphost-test-sweep-%d", os.Getpid()))
	if err := os.Mkdir(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(parent) })
	self, err := selfOwner()
	if err != nil {
		t.Fatal(err)
	}
	// A process that has exited: its PID is free (or someone else's, with
	// another start time).
	dead := exec.Command("/bin/true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	deadOwner := cgroupOwner{ns: self.ns, pid: dead.Process.Pid, start: self.start}
	busy := exec.Command("/bin/sleep", "60")
	if err := busy.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { busy.Process.Kill(); busy.Wait() }()
	// A live process in another time namespace: its start time, read
	// here, is shifted by that namespace's boot time offset, so a
	// mismatch says nothing of whether it is the host.
	otherTime := deadOwner
	timeNS := exec.Command("unshare", "--time", "--boottime", "100000", "--fork", "/bin/sleep", "60")
	if err := timeNS.Start(); err != nil {
		t.Logf("no time namespace (%v): that case is not tested", err)
	} else {
		defer func() { timeNS.Process.Kill(); timeNS.Wait() }()
		var child int
		for deadline := time.Now().Add(5 * time.Second); child == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", timeNS.Process.Pid, timeNS.Process.Pid))
			child, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		start, err := startTime(child)
		if child == 0 || err != nil {
			t.Fatalf("the sleeper in a time namespace: pid %d, %v", child, err)
		}
		otherTime = cgroupOwner{ns: self.ns, pid: child, start: start + 1}
	}
	tests := []struct {
		name  string
		leaf  string
		fill  bool // put the sleeping process in it
		stays bool
	}{
		{"a gone host's", "mcphost-test-dead" + deadOwner.suffix(), false, false},
		{"a reused PID's (another start time)", "mcphost-test-reused" + cgroupOwner{self.ns, self.pid, self.start + 1}.suffix(), false, false},
		{"a live host's", "mcphost-test-live" + self.suffix(), false, true},
		{"another PID namespace's", "mcphost-test-otherns" + cgroupOwner{self.ns + 1, dead.Process.Pid, 1}.suffix(), false, true},
		{"one with a process in it", "mcphost-test-busy" + deadOwner.suffix(), true, true},
		{"an older name, with no owner", "mcphost-test-old", false, true},
		{"not this package's", "other-test" + deadOwner.suffix(), false, true},
		{"a live host's in another time namespace", "mcphost-test-timens" + otherTime.suffix(), false, otherTime != deadOwner},
	}
	for _, tt := range tests {
		d := filepath.Join(parent, tt.leaf)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			os.WriteFile(filepath.Join(top, "cgroup.procs"), []byte(strconv.Itoa(busy.Process.Pid)), 0)
			os.Remove(d)
		})
		if tt.fill {
			if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(busy.Process.Pid)), 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	sweepCgroups(parent, self.ns)
	for _, tt := range tests {
		_, err := os.Stat(filepath.Join(parent, tt.leaf))
		if stays := err == nil; stays != tt.stays {
			t.Errorf("%s cgroup: stays=%v, want %v", tt.name, stays, tt.stays)
		}
	}
}

// TestLimitAboveServer: when a limit above the server's (the host's own
// cgroup: a container's, systemd's TasksMax) is what refused its forks or
// killed it for memory, the exit status says so and does not name the
// server's own limit, which raising would not help.
func TestLimitAboveServer(t *testing.T) {
	requireConfinement(t)
	if !dropsRoot() {
		t.Skip("only a root host makes cgroups")
	}
	own := readOwnCgroups()
	v1, err := own.v1, own.err
	if err != nil || v1["pids"] == "" || v1["memory"] == "" {
		t.Skipf("needs cgroup v1's pids and memory hierarchies to put the host in a cgroup of its own (%v)", err)
	}
	// Not a name the sweep reads as one of a host's (no owner).
	leaf := fmt.Sprintf("mcphost-test-above-%d", os.Getpid())
	pids := filepath.Join(cgroupRoot, "pids", v1["pids"], leaf)
	mem := filepath.Join(cgroupRoot, "memory", v1["memory"], leaf)
	for _, d := range []string{pids, mem} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			// The host fixture removed its server's cgroup, beneath
			// this one, before it exited: none is left.
			entries, _ := os.ReadDir(d)
			for _, e := range entries {
				if e.IsDir() {
					t.Errorf("a cgroup is left beneath the host's: %s", filepath.Join(d, e.Name()))
				}
			}
			// The helper, which Close no longer waits for on cgroup v1,
			// may still be exiting (killed with the host): this cgroup is
			// empty a moment later.
			deadline := time.Now().Add(2 * time.Second)
			for {
				err := os.Remove(d)
				if err == nil {
					break
				}
				if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
					t.Errorf("removing %s: %v", d, err)
					break
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
	for f, v := range map[string]string{
		filepath.Join(pids, "pids.max"):                   "48",
		filepath.Join(mem, "memory.limit_in_bytes"):       strconv.Itoa(160 << 20),
		filepath.Join(mem, "memory.memsw.limit_in_bytes"): strconv.Itoa(160 << 20),
	} {
		if err := os.WriteFile(f, []byte(v), 0); err != nil && !strings.Contains(f, "memsw") {
			t.Fatal(err)
		}
	}
	// The host joins that cgroup before it starts: its servers' cgroups
	// are made beneath it, with the default limits (512, 2GiB).
	ops := `[{"op":"spawn","args":["100"]},{"op":"alloc","args":["400"]}]`
	cmd := exec.Command("/bin/sh", "-c", `echo $$ > "$1" && echo $$ > "$2" && shift 2 && exec "$@"`, "sh",
		filepath.Join(pids, "cgroup.procs"), filepath.Join(mem, "cgroup.procs"),
		hostPath(), "-hostile", hostilePath(), "-worktree", t.TempDir(), "-status", "-ops", ops)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("host fixture: %v\n%s\n%s", err, out, stderr.String())
	}
	t.Logf("%s", out)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 3 || !strings.Contains(lines[2], `"errno":"EAGAIN"`) {
		t.Fatalf("the fork past the host's limit: %q", lines)
	}
	st, ok := strings.CutPrefix(lines[len(lines)-1], "exit status: ")
	if !ok {
		t.Fatalf("no exit status: %q", lines)
	}
	for _, want := range []string{"signal: killed", "for want of memory, below the server's limit (2GiB)", "below the server's process limit (512;"} {
		if !strings.Contains(st, want) {
			t.Errorf("exit status %q lacks %q", st, want)
		}
	}
	for _, wrong := range []string{"max_memory", "max_processes"} {
		if strings.Contains(st, wrong) {
			t.Errorf("exit status %q names %s, which is not what refused it", st, wrong)
		}
	}
}

// TestTempDirOnHost: the server's TMPDIR exists on the host only where the
// server sees the host's tree there (a grant of the host's temporary
// directory, sandbox off); in a root of its own it is a tmpfs there alone.
// Either way the server can use it, and Close leaves nothing on the host.
func TestTempDirOnHost(t *testing.T) {
	requireConfinement(t)
	hostTmp, err := filepath.EvalSymlinks(os.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// The host's temporary directory beneath HOME, and a private home
	// shown there: the mount point is made in the private home.
	realHome, homeTmp, privateHome := tmpBeneathHome(t)
	// The host's temporary directory through a symbolic link.
	linkedTmp := filepath.Join(t.TempDir(), "tmp-link")
	if err := os.Symlink(homeTmp, linkedTmp); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		cfg    Config
		tmpdir string // the host's TMPDIR, if not the default
		onHost bool
	}{
		{"through a link", Config{}, linkedTmp, false},
		{"own root", Config{}, "", false},
		{"the host's temporary directory granted", Config{Read: []string{hostTmp}}, "", true},
		{"off", Config{Off: true}, "", true},
		{"beneath a private home", Config{Home: privateHome, HostEnv: []string{"PATH=/usr/bin:/bin", "HOME=" + realHome}}, homeTmp, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			forEachBuilder(t, func(t *testing.T) {
				if c.tmpdir != "" {
					t.Setenv("TMPDIR", c.tmpdir)
				}
				cfg := c.cfg
				cfg.Worktree = t.TempDir()
				s := startHostile(t, cfg)
				tmp := s.p.TempDir()
				if env := s.must("env").Out; !slices.Contains(strings.Split(env, "\n"), "TMPDIR="+tmp) {
					t.Errorf("the server's TMPDIR is not %s:\n%s", tmp, env)
				}
				if _, err := os.Stat(tmp); (err == nil) != c.onHost {
					t.Errorf("TempDir %s on the host: %v, want it there: %v", tmp, err, c.onHost)
				}
				s.must("write", filepath.Join(tmp, "scratch"))
				// Where the mount point of TMPDIR is made in the private
				// home, if anywhere (realHome is resolved, as tmp is).
				point := ""
				if c.cfg.Home != "" {
					point = filepath.Join(c.cfg.Home, strings.TrimPrefix(tmp, realHome))
					if _, err := os.Lstat(point); err != nil {
						t.Fatalf("no mount point of TempDir in the private home before Close (%v): the check below would test nothing", err)
					}
				}
				if err := s.p.Close(time.Second); err != nil {
					t.Fatal(err)
				}
				if _, err := os.Stat(tmp); err == nil {
					t.Errorf("TempDir %s is still on the host after Close", tmp)
				}
				if point != "" {
					// Its mount point, made in the private home for this
					// start, goes with it: a persistent home must not keep
					// one empty directory per start.
					if _, err := os.Lstat(point); err == nil {
						t.Errorf("the mount point %s of TempDir is still in the private home after Close", point)
					}
				}
			})
		})
	}
}

// swapForLink returns what another server might do while a start goes on
// (startOptions.beforeLaunch): replace path, checked as a directory, with
// a symbolic link to target.
func swapForLink(t *testing.T, path, target string) func() {
	return func() {
		if err := os.Remove(path); err != nil {
			t.Error(err)
		}
		if err := os.Symlink(target, path); err != nil {
			t.Error(err)
		}
	}
}

// tmpBeneathHome makes a HOME (realHome) with a directory in it for the
// host's TMPDIR (homeTmp), and a private home for the server, which is
// shown at realHome: the mount point of the server's TMPDIR is then made
// in privateHome.
func tmpBeneathHome(t *testing.T) (realHome, homeTmp, privateHome string) {
	t.Helper()
	// Resolved, as the server's TMPDIR is: the test's temporary
	// directory may lie behind a link.
	realHome, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	homeTmp = filepath.Join(realHome, "tmp")
	privateHome = filepath.Join(t.TempDir(), "home")
	for _, d := range []string{homeTmp, privateHome} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return realHome, homeTmp, privateHome
}

// TestTempDirPointFailedStart: a start that fails after it made the mount
// point of TMPDIR in a private home (a grant swapped for a link while it
// starts) leaves nothing of it there.
func TestTempDirPointFailedStart(t *testing.T) {
	requireConfinement(t)
	realHome, homeTmp, privateHome := tmpBeneathHome(t)
	t.Setenv("TMPDIR", homeTmp)
	peer := t.TempDir()
	data := filepath.Join(peer, "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		t.Fatal(err)
	}
	swap := swapForLink(t, data, t.TempDir())
	cfg := Config{Name: "failed", Argv: []string{hostilePath()}, Worktree: t.TempDir(), Home: privateHome,
		HostEnv: []string{"PATH=/usr/bin:/bin", "HOME=" + realHome}, Read: []string{data}, PeerWrite: []string{peer}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := start(ctx, cfg, startOptions{beforeLaunch: swap})
	if err == nil {
		p.Close(0)
		t.Fatal("Start succeeded with a grant swapped for a link")
	}
	ents, err := os.ReadDir(filepath.Join(privateHome, "tmp"))
	if err != nil {
		t.Fatalf("the start made no mount point in the private home (%v): the test tests nothing", err)
	}
	for _, e := range ents {
		t.Errorf("the failed start left %s in the private home", filepath.Join(privateHome, "tmp", e.Name()))
	}
}

// TestTempDirPointNoLink: the server writes its private home, so by Close
// a parent of its TMPDIR's mount point there may be a link it made to
// elsewhere on the host; Close then removes nothing through it.
func TestTempDirPointNoLink(t *testing.T) {
	requireConfinement(t)
	realHome, homeTmp, privateHome := tmpBeneathHome(t)
	t.Setenv("TMPDIR", homeTmp)
	s := startHostile(t, Config{Worktree: t.TempDir(), Home: privateHome, HostEnv: []string{"PATH=/usr/bin:/bin", "HOME=" + realHome}})
	tmp := s.p.TempDir()
	// An empty directory of the mount point's name, elsewhere on the host.
	elsewhere := t.TempDir()
	victim := filepath.Join(elsewhere, filepath.Base(tmp))
	if err := os.Mkdir(victim, 0o700); err != nil {
		t.Fatal(err)
	}
	s.must("rename", homeTmp, homeTmp+"-moved")
	s.must("symlink", elsewhere, homeTmp)
	if err := s.p.Close(time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(victim); err != nil {
		t.Errorf("Close removed %s through the link the server made in its home: %v", victim, err)
	}
}

// TestTempDirPointLocked: as an ordinary user (nobody), whose host has no
// power over permissions, a server that takes the permissions off the
// parent of its TMPDIR's mount point in its private home leaves that
// empty directory there, and does not make Close fail.
func TestTempDirPointLocked(t *testing.T) {
	requireConfinement(t)
	if os.Getuid() != 0 {
		t.Skip("needs root to run the host fixture as nobody")
	}
	wt := nobodyDir(t, "mcphost-locked-wt-")
	home := nobodyDir(t, "mcphost-locked-home-")
	privateHome := nobodyDir(t, "mcphost-locked-private-home-")
	homeTmp := filepath.Join(home, "tmp")
	if err := os.Mkdir(homeTmp, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(homeTmp, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	// The server sees its private home at HOME: this is the parent of the
	// mount point there.
	ops := fmt.Sprintf(`[{"op":"chmod-mode","args":[%q,"0"]}]`, homeTmp)
	t.Cleanup(func() { os.Chmod(filepath.Join(privateHome, "tmp"), 0o700) })
	// The fixture fails if Close does.
	lines, stderr := hostAsNobodyEnv(t, wt, []string{"HOME=" + home, "PATH=/usr/bin:/bin", "TMPDIR=" + homeTmp},
		"-worktree", wt, "-home", home, "-private-home", privateHome, "-ops", ops)
	if len(lines) < 3 || lines[2] != `{"ok":true}` {
		t.Fatalf("host fixture output (want the chmod done):\n%s\nstderr: %s", strings.Join(lines, "\n"), stderr)
	}
	// The point is left where the host may not enter, the server's doing
	// (this test, root, may).
	if ents, err := os.ReadDir(filepath.Join(privateHome, "tmp")); err != nil || len(ents) != 1 {
		t.Errorf("the private home's tmp: %d entries, %v; want the one mount point the locked directory kept", len(ents), err)
	}
}

// TestSignalEarly: a SIGTERM to the helper as soon as Start returns
// reaches the server, every time: the helper reports the server started
// only once it relays signals (before that, the Go runtime's default for
// SIGTERM ends the helper and with it the namespace, and init drops a
// signal it has no handler for).
func TestSignalEarly(t *testing.T) {
	requireConfinement(t)
	for i := range 15 {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		p, err := Start(ctx, Config{Name: "early", Argv: []string{hostilePath()}, Worktree: t.TempDir(),
			HostEnv: []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}})
		cancel()
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
		if err := p.helper.Signal(syscall.SIGTERM); err != nil {
			p.Close(0)
			t.Fatal(err)
		}
		select {
		case <-p.Done():
		case <-time.After(10 * time.Second):
			p.Close(0)
			t.Fatalf("start %d: the server still runs 10 s after a SIGTERM to the helper: it was lost", i)
		}
		if got := p.ExitStatus(); got != "signal: terminated" {
			t.Errorf("start %d: ExitStatus %q, want signal: terminated (the server's, the signal relayed)", i, got)
		}
		p.Close(time.Second)
	}
}

// TestServerSignalMask: the server starts with no signal blocked and none
// ignored that the host ignored, whichever way it was started: a helper
// that blocks signals around the server's start (a vfork child from a Go
// thread must, until it has reset the Go handlers it shares) must let
// them through again before the exec, and an ignored signal, which
// survives every exec, must not pass through the helper's entry. A Go
// server sets what it needs itself, so the server here is grep, which
// leaves its signals alone.
func TestServerSignalMask(t *testing.T) {
	requireConfinement(t)
	// A signal the host ignores: the server must not inherit that. (Not
	// SIGHUP or SIGINT, which a Go program that inherited them ignored
	// leaves ignored, and a shell running the tests in the background
	// does ignore SIGINT.)
	signal.Ignore(syscall.SIGUSR1)
	defer signal.Reset(syscall.SIGUSR1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := Start(ctx, Config{Name: "mask", Argv: []string{"/usr/bin/grep", "^Sig\\(Blk\\|Ign\\):", "/proc/self/status"},
		Worktree: t.TempDir(), HostEnv: []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer p.Close(time.Second)
	out, err := io.ReadAll(p.Stdout())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			t.Fatalf("the server's %q", out)
		}
		v, err := strconv.ParseUint(f[1], 16, 64)
		if err != nil {
			t.Fatalf("the server's %q: %v", out, err)
		}
		got[f[0]] = v
	}
	if len(got) != 2 {
		t.Fatalf("the server's %q", out)
	}
	if got["SigBlk:"] != 0 {
		t.Errorf("the server starts with signals %#x blocked; want none", got["SigBlk:"])
	}
	if bit := uint64(1) << (syscall.SIGUSR1 - 1); got["SigIgn:"]&bit != 0 {
		t.Errorf("the server starts with SIGUSR1 ignored, as the host had it (SigIgn %#x)", got["SigIgn:"])
	}
}
