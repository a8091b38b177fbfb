package sandbox

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The seccomp filter adds what the other layers cannot:
//
//   - with the network off, socket(2) only for AF_UNIX and for netlink's
//     NETLINK_ROUTE (see socketRules): other families and netlink protocols
//     fail with EAFNOSUPPORT even if a server finds a way into a namespace that
//     has a network (the network namespace alone already leaves it only a
//     down loopback); with the network through a proxy, also TCP sockets of
//     AF_INET and AF_INET6, but no UDP, MPTCP, raw, packet or netlink;
//   - io_uring is refused (ENOSYS), because its operations (IORING_OP_SOCKET,
//     file opens) do not pass through the system calls the filter sees;
//   - the kernel keyring calls are refused (ENOSYS): keyrings are not
//     isolated by the namespaces used here, and a user's session keyring
//     can hold credentials;
//   - system calls of a foreign ABI (32-bit int 0x80, x32) are refused, since
//     their numbers differ and would slip past the checks above;
//   - no set-user-ID or set-group-ID bit: chmod, fchmod, fchmodat(2),
//     open, openat, creat and mknod(at) with S_ISUID or S_ISGID in their
//     mode fail with EPERM, and openat2, whose mode sits in memory a filter
//     cannot read, with ENOSYS. The server cannot use such a file itself
//     (no_new_privs), but on the host a program it left in the worktree,
//     owned by the worktree's owner (root, for a root host's worktree),
//     would run with that owner's rights for whoever starts it;
//   - no loosening of permissions for other users: chmod, fchmod,
//     fchmodat(2) with S_IWOTH in the mode fail with EPERM (Landlock does
//     not mediate chmod, and a world-writable worktree, Makefile or
//     directory lets any local user replace what the person later runs);
//     a umask(2) that would clear S_IWOTH leaves the umask as it is, and
//     the helper starts the server with S_IWOTH added to the host's
//     umask, so no file or directory is created world-writable either
//     (see umaskRule);
//     and the calls that set or remove extended attributes fail with
//     EOPNOTSUPP, as on a file system without them, because
//     system.posix_acl_access and system.posix_acl_default are ACLs that
//     grant other users and groups anything chmod would (and a default
//     ACL overrides the umask). Group write is allowed: see chmodBits;
//   - no new user namespace: unshare(2) and clone(2) with CLONE_NEWUSER fail
//     with EPERM, and clone3(2), whose flags sit in memory a filter cannot
//     read, fails with ENOSYS (C libraries and runtimes then fall back to
//     clone). A user namespace is the one namespace an unprivileged process
//     may create, and inside it the process holds every capability again:
//     enough to reach kernel code (nf_tables, say) that is otherwise
//     root's alone, with or without the network.

// seccomp BPF building blocks.
const (
	bpfLdAbsW = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
	bpfJeqK   = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
	bpfJgeK   = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
	bpfAndK   = unix.BPF_ALU | unix.BPF_AND | unix.BPF_K
	bpfRetK   = unix.BPF_RET | unix.BPF_K

	// Offsets into struct seccomp_data.
	seccompNrOff   = 0
	seccompArchOff = 4
	seccompArg0Off = 16 // low 32 bits on little-endian machines
	seccompArgSize = 8
	seccompArg2Off = 32

	retAllow = unix.SECCOMP_RET_ALLOW
)

// modeCall is a system call that takes a file mode, where, and the mode
// bits it may not set.
type modeCall struct {
	nr   uint32
	arg  int    // index of the mode argument
	bits uint32 // refused with EPERM when any is set
}

// setIDBits are refused in every mode a server sets or creates a file with.
const setIDBits = unix.S_ISUID | unix.S_ISGID

// chmodBits are refused in the mode of the chmod family: the set-ID bits
// and world write. Group write is not: on the distributions that give
// each user a group of their own (Debian, Ubuntu, Fedora) the group is the
// person alone, files there are created 0664 (umask 002), and refusing it
// would fail every copy that keeps a file's mode (cp -p, Python's
// shutil.copy). Where the person's files belong to a group others share,
// a server can give that group write; README's threat table says so.
const chmodBits = setIDBits | unix.S_IWOTH

// modeCalls are the calls that set a file's mode bits, everywhere: the
// chmod family (chmodBits) and the calls that create a file with a mode
// (setIDBits; the umask, which the server cannot clear of S_IWOTH, takes
// world write away from those).
var modeCalls = append([]modeCall{
	{unix.SYS_FCHMOD, 1, chmodBits}, {unix.SYS_FCHMODAT, 2, chmodBits}, {unix.SYS_FCHMODAT2, 2, chmodBits},
	{unix.SYS_OPENAT, 3, setIDBits}, {unix.SYS_MKNODAT, 2, setIDBits},
}, legacyModeCalls...)

// xattrWriteCalls set or remove extended attributes, POSIX ACLs among
// them; they fail with EOPNOTSUPP everywhere.
var xattrWriteCalls = []uint32{
	unix.SYS_SETXATTR, unix.SYS_LSETXATTR, unix.SYS_FSETXATTR, unix.SYS_SETXATTRAT,
	unix.SYS_REMOVEXATTR, unix.SYS_LREMOVEXATTR, unix.SYS_FREMOVEXATTR, unix.SYS_REMOVEXATTRAT,
}

// umaskRule is the umask a server may set: one that keeps S_IWOTH. A
// umask(2) that would clear it is neither refused nor run: the filter
// hands it to the helper (SECCOMP_RET_USER_NOTIF), which answers with the
// caller's umask as it is (serveUmask), so the call reports the true old
// mask and changes nothing. Both other answers break real programs,
// because umask(2) cannot fail and nobody checks it: refused, C's umask
// returns -1, which "old = umask(0); umask(old)" (Node's process.umask(),
// pip's reading of the umask) then sets as a umask of 0777, so that every
// later file is unreadable; answered with 0 and not run, that sequence
// reports a umask of 0, and npm then chmods every package's programs to
// 0777, which the filter refuses. Answered with the true mask, the
// sequence works as it always did, and a server that meant to clear its
// umask creates files without world write, which it did not need.
const umaskRule = unix.S_IWOTH

// fsNotifyCalls are the calls that watch files for changes: inotify and
// fanotify (inotify_init, amd64's alone, is in legacyNotifyCalls).
var fsNotifyCalls = append([]uint32{
	unix.SYS_INOTIFY_INIT1, unix.SYS_INOTIFY_ADD_WATCH, unix.SYS_FANOTIFY_INIT, unix.SYS_FANOTIFY_MARK,
}, legacyNotifyCalls...)

// Which process, group or user the priority calls act on: only a process.
const (
	prioProcess      = 0 // PRIO_PROCESS of setpriority and getpriority
	ioprioWhoProcess = 1 // IOPRIO_WHO_PROCESS of ioprio_set and ioprio_get
)

// pidCall is a system call whose argument arg must be val, or the call
// fails with EPERM: a pid that must be 0 (the caller), or a "which" that
// must name a process rather than a process group or a user.
type pidCall struct {
	nr  uint32
	arg int
	val uint32
}

// filterOptions choose what the filter refuses beyond the fixed list.
type filterOptions struct {
	// net is the network the server gets: none (AF_UNIX only), the
	// proxy (AF_UNIX, and TCP over AF_INET and AF_INET6), or the host's.
	net netAccess
	// pathUnix false refuses socket(AF_UNIX) too (socketpair still
	// works): the reduced tier's servers, below Landlock ABI 9, would
	// otherwise reach any listening unix socket they can name, the user's
	// D-Bus session bus and through it their systemd manager among them.
	pathUnix bool
	// ownNetNS says the server has a network namespace of its own, where
	// a NETLINK_ROUTE socket lists only a loopback that is down: with the
	// network off it is allowed then, and refused otherwise (the reduced
	// tier shares the host's namespace, whose interfaces, addresses and
	// routes it would list).
	ownNetNS bool
	// ownProcessOnly refuses, with EPERM, the calls that change another
	// process's limits, priority or scheduling (prlimit64, setpriority,
	// ioprio_set, sched_set*) for any target but the caller (0): in the
	// reduced tier, which has no PID namespace, the user's other
	// processes, the agent and the helper among them, are otherwise
	// within reach (a CPU limit of 1 s kills the agent; a descriptor limit
	// of 0 kills the helper and frees the server's orphans).
	//
	// It also refuses the "which" forms of the priority calls that act on
	// a process group or a user (setpriority and getpriority with
	// PRIO_PGRP or PRIO_USER, ioprio_set and ioprio_get with
	// IOPRIO_WHO_PGRP or IOPRIO_WHO_USER), also with EPERM:
	// setpriority(PRIO_USER, 0, 19) would renice every process of the
	// person's. getpriority and ioprio_get of another process are allowed:
	// they read what the host's /proc, which this tier shows, shows anyway.
	// (With a PID namespace, the kernel itself limits PRIO_PGRP and
	// PRIO_USER to the processes the namespace shows.) The other calls
	// that name processes by group or user need no filter: kill(2) with a
	// pid of 0, -1 or -pgrp is bounded by Landlock's signal scope from ABI
	// 6 (below it, Lacks says the server can signal the person's
	// processes), wait4(2) and waitid(2) reach only children, setpgid(2)
	// only the caller and its children, and the calls that inspect another
	// process (process_vm_readv, kcmp, pidfd_getfd, perf_event_open) need
	// ptrace access, which Landlock bounds to the sandbox.
	ownProcessOnly bool
	// noFSNotify refuses inotify and fanotify with ENOSYS, as a kernel
	// built without them would. Neither is mediated by Landlock: without
	// a mount namespace, a watch on any directory the person may read
	// (a 0700 one outside the grants included) reports the names of the
	// files created, opened and removed in it as it happens. The watch is
	// set by path (inotify_add_watch, fanotify_mark), which a filter cannot
	// read, so the tier does without file watching; runtimes and
	// libraries that support kernels without inotify fall back to polling
	// on ENOSYS, others fail to watch. In the full tier a watch reaches
	// only what the server's own view shows, and the filter allows it.
	noFSNotify bool
	// udp, with the proxy, allows UDP sockets of AF_INET and AF_INET6 as
	// well (SOCK_DGRAM, protocol 0 or UDP; not ICMP): the namespace of a
	// server with a DirectProxy has its nameserver at 127.0.0.1:53, and
	// no route out, so a UDP datagram reaches that nameserver, a socket
	// of the server's own (it may bind ports from 1024 up; Landlock
	// mediates TCP only), or nothing.
	udp bool
}

func retErrno(e unix.Errno) uint32 { return unix.SECCOMP_RET_ERRNO | uint32(e)&unix.SECCOMP_RET_DATA }

// seccompProgram returns the filter for the native architecture.
func seccompProgram(o filterOptions) []unix.SockFilter {
	var prog []unix.SockFilter
	stmt := func(code uint16, k uint32) {
		prog = append(prog, unix.SockFilter{Code: code, K: k})
	}
	// jump emits a conditional jump whose targets are "next instruction"
	// (0) or "skip n": all jumps here are short and forward.
	jump := func(code uint16, k uint32, jt, jf uint8) {
		prog = append(prog, unix.SockFilter{Code: code, K: k, Jt: jt, Jf: jf})
	}

	stmt(bpfLdAbsW, seccompArchOff)
	jump(bpfJeqK, nativeAuditArch, 1, 0)
	stmt(bpfRetK, retErrno(unix.ENOSYS))
	stmt(bpfLdAbsW, seccompNrOff)
	if foreignSyscallBit != 0 {
		jump(bpfJgeK, foreignSyscallBit, 0, 1)
		stmt(bpfRetK, retErrno(unix.ENOSYS))
	}
	for _, nr := range []uint32{
		unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
		unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY,
		unix.SYS_CLONE3, unix.SYS_OPENAT2,
	} {
		jump(bpfJeqK, nr, 0, 1)
		stmt(bpfRetK, retErrno(unix.ENOSYS))
	}
	// unshare(flags) and clone(flags, ...) both take their flags first, on
	// amd64 and arm64 alike; CLONE_NEWUSER lies in the low 32 bits.
	for _, nr := range []uint32{unix.SYS_UNSHARE, unix.SYS_CLONE} {
		// if nr == X { if arg0 & CLONE_NEWUSER != 0 fail; reload nr }
		jump(bpfJeqK, nr, 0, 5)
		stmt(bpfLdAbsW, seccompArg0Off)
		stmt(bpfAndK, unix.CLONE_NEWUSER)
		jump(bpfJeqK, 0, 1, 0)
		stmt(bpfRetK, retErrno(unix.EPERM))
		stmt(bpfLdAbsW, seccompNrOff)
	}
	// A mode with any of the call's refused bits: EPERM.
	for _, c := range modeCalls {
		jump(bpfJeqK, c.nr, 0, 5)
		stmt(bpfLdAbsW, uint32(seccompArg0Off+c.arg*seccompArgSize))
		stmt(bpfAndK, c.bits)
		jump(bpfJeqK, 0, 1, 0)
		stmt(bpfRetK, retErrno(unix.EPERM))
		stmt(bpfLdAbsW, seccompNrOff)
	}
	// umask(mask) without S_IWOTH: to the helper (see umaskRule).
	jump(bpfJeqK, unix.SYS_UMASK, 0, 5)
	stmt(bpfLdAbsW, seccompArg0Off)
	stmt(bpfAndK, umaskRule)
	jump(bpfJeqK, 0, 0, 1)
	stmt(bpfRetK, unix.SECCOMP_RET_USER_NOTIF)
	stmt(bpfLdAbsW, seccompNrOff)
	for _, nr := range xattrWriteCalls {
		jump(bpfJeqK, nr, 0, 1)
		stmt(bpfRetK, retErrno(unix.EOPNOTSUPP))
	}
	if o.noFSNotify {
		for _, nr := range fsNotifyCalls {
			jump(bpfJeqK, nr, 0, 1)
			stmt(bpfRetK, retErrno(unix.ENOSYS))
		}
	}
	if o.ownProcessOnly {
		// which must name a process (the pid checks below follow).
		for _, c := range []pidCall{
			{unix.SYS_SETPRIORITY, 0, prioProcess}, {unix.SYS_GETPRIORITY, 0, prioProcess},
			{unix.SYS_IOPRIO_SET, 0, ioprioWhoProcess}, {unix.SYS_IOPRIO_GET, 0, ioprioWhoProcess},
		} {
			jump(bpfJeqK, c.nr, 0, 4)
			stmt(bpfLdAbsW, uint32(seccompArg0Off+c.arg*seccompArgSize))
			jump(bpfJeqK, c.val, 1, 0)
			stmt(bpfRetK, retErrno(unix.EPERM))
			stmt(bpfLdAbsW, seccompNrOff)
		}
		// The pid must be 0, the caller.
		for _, c := range []pidCall{
			{unix.SYS_PRLIMIT64, 0, 0}, {unix.SYS_SETPRIORITY, 1, 0}, {unix.SYS_IOPRIO_SET, 1, 0},
			{unix.SYS_SCHED_SETAFFINITY, 0, 0}, {unix.SYS_SCHED_SETSCHEDULER, 0, 0},
			{unix.SYS_SCHED_SETPARAM, 0, 0}, {unix.SYS_SCHED_SETATTR, 0, 0},
			{unix.SYS_MIGRATE_PAGES, 0, 0}, {unix.SYS_MOVE_PAGES, 0, 0},
		} {
			jump(bpfJeqK, c.nr, 0, 4)
			stmt(bpfLdAbsW, uint32(seccompArg0Off+c.arg*seccompArgSize))
			jump(bpfJeqK, c.val, 1, 0)
			stmt(bpfRetK, retErrno(unix.EPERM))
			stmt(bpfLdAbsW, seccompNrOff)
		}
	}
	if !o.pathUnix {
		jump(bpfJeqK, unix.SYS_SOCKET, 0, 4)
		stmt(bpfLdAbsW, seccompArg0Off)
		jump(bpfJeqK, unix.AF_UNIX, 0, 1)
		stmt(bpfRetK, retErrno(unix.EACCES))
		stmt(bpfLdAbsW, seccompNrOff)
	}
	if o.net == netProxy {
		// socket(domain, type, protocol): AF_UNIX, or AF_INET and
		// AF_INET6 with SOCK_STREAM and protocol 0 or TCP (no UDP, no
		// MPTCP, no raw); anything else fails.
		const (
			typeMask = 0xf // SOCK_NONBLOCK and SOCK_CLOEXEC lie above
			arg1Off  = seccompArg0Off + 8
			arg2Off  = seccompArg0Off + 16
		)
		// With udp, SOCK_DGRAM and protocol 0 or UDP too. The jumps are
		// counted from the block's end: allow and fail are its last two
		// instructions.
		dgram := uint8(0)
		if o.udp {
			dgram = 4
		}
		jump(bpfJeqK, unix.SYS_SOCKET, 0, 12+dgram)
		stmt(bpfLdAbsW, seccompArg0Off)
		jump(bpfJeqK, unix.AF_UNIX, 8+dgram, 0)
		jump(bpfJeqK, unix.AF_INET, 1, 0)
		jump(bpfJeqK, unix.AF_INET6, 0, 7+dgram)
		stmt(bpfLdAbsW, arg1Off)
		stmt(bpfAndK, typeMask)
		jump(bpfJeqK, unix.SOCK_STREAM, 0, 3)
		stmt(bpfLdAbsW, arg2Off)
		jump(bpfJeqK, 0, 1+dgram, 0)
		jump(bpfJeqK, unix.IPPROTO_TCP, dgram, 1+dgram)
		if o.udp {
			jump(bpfJeqK, unix.SOCK_DGRAM, 0, 4)
			stmt(bpfLdAbsW, arg2Off)
			jump(bpfJeqK, 0, 1, 0)
			jump(bpfJeqK, unix.IPPROTO_UDP, 0, 1)
		} else {
			// Not a stream: fail.
			prog[len(prog)-4].Jf = 4
		}
		stmt(bpfRetK, retAllow)
		stmt(bpfRetK, retErrno(unix.EAFNOSUPPORT))
		// socketpair(2) stays unix only, below.
	}
	if o.net == netNone {
		prog = append(prog, socketRules(o.ownNetNS)...)
	}
	if o.net == netProxy {
		for _, nr := range []uint32{unix.SYS_SOCKETPAIR} {
			// if nr == socket { load domain; if domain == AF_UNIX allow
			// else fail } else reload nr and go on.
			jump(bpfJeqK, nr, 0, 4)
			stmt(bpfLdAbsW, seccompArg0Off)
			jump(bpfJeqK, unix.AF_UNIX, 0, 1)
			stmt(bpfRetK, retAllow)
			stmt(bpfRetK, retErrno(unix.EAFNOSUPPORT))
		}
	}
	stmt(bpfRetK, retAllow)
	return prog
}

// socketRules are the filter's instructions for socket(2) and
// socketpair(2) with the network off, entered and left with the system
// call number loaded: AF_UNIX is allowed, and socket(AF_NETLINK, any type,
// NETLINK_ROUTE) when route is true. Every other family and netlink
// protocol fails with EAFNOSUPPORT.
//
// NETLINK_ROUTE is what listing network interfaces takes (Node's
// os.networkInterfaces(), .NET's, Go's net.Interfaces(), getifaddrs(3)),
// which servers do at start to log a host name or pick an address. In the
// server's own network namespace a route socket sees only a loopback that
// is down, and changing anything there (a link, an address, a route) needs
// CAP_NET_ADMIN, which the server does not have: it can only read what is
// already empty. The other netlink protocols (audit, netfilter, sock_diag,
// uevents, generic netlink and so on) reach kernel code or events that
// are not confined to the namespace, and stay refused.
func socketRules(route bool) []unix.SockFilter {
	j := func(k uint32, jt, jf uint8) unix.SockFilter {
		return unix.SockFilter{Code: bpfJeqK, K: k, Jt: jt, Jf: jf}
	}
	netlink := uint32(unix.AF_NETLINK)
	if !route {
		netlink = ^uint32(0) // no domain: the check never matches
	}
	s := func(code uint16, k uint32) unix.SockFilter { return unix.SockFilter{Code: code, K: k} }
	return []unix.SockFilter{
		// if nr == socket {
		j(unix.SYS_SOCKET, 0, 8),
		s(bpfLdAbsW, seccompArg0Off),
		//   if domain == AF_UNIX: allow
		j(unix.AF_UNIX, 0, 1),
		s(bpfRetK, retAllow),
		//   if domain == AF_NETLINK && protocol == NETLINK_ROUTE: allow
		j(netlink, 0, 3),
		s(bpfLdAbsW, seccompArg2Off),
		j(unix.NETLINK_ROUTE, 0, 1),
		s(bpfRetK, retAllow),
		//   fail }
		s(bpfRetK, retErrno(unix.EAFNOSUPPORT)),
		// if nr == socketpair { if domain == AF_UNIX allow else fail }
		j(unix.SYS_SOCKETPAIR, 0, 4),
		s(bpfLdAbsW, seccompArg0Off),
		j(unix.AF_UNIX, 0, 1),
		s(bpfRetK, retAllow),
		s(bpfRetK, retErrno(unix.EAFNOSUPPORT)),
	}
}

// installSeccomp loads the filter on the calling thread (no TSYNC: the
// helper confines one locked thread and starts the server from it) and
// returns the descriptor (close-on-exec) on which the filter hands over
// the calls it does not decide itself: serveUmask answers them. The
// thread must have no_new_privs set.
func installSeccomp(o filterOptions) (listener int, err error) {
	prog := seccompProgram(o)
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	fd, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, uintptr(unsafe.Pointer(&fprog)))
	if errno != 0 {
		return -1, fmt.Errorf("seccomp(SET_MODE_FILTER): %w", errno)
	}
	return int(fd), nil
}

// seccompNotif and seccompNotifResp are the kernel's struct seccomp_notif
// and struct seccomp_notif_resp, whose sizes the ioctl numbers encode (80
// and 24 bytes).
type seccompNotif struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Nr    int32
	Arch  uint32
	IP    uint64
	Args  [6]uint64
}

type seccompNotifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

// serveUmask answers, until the helper exits, the calls the filter hands
// over on listener: umask(2) calls that would clear S_IWOTH (see
// umaskRule). Each returns the calling thread's umask as it is, from
// /proc/TID/status, and changes nothing; anything else fails with ENOSYS.
//
// It waits in Go's poller, not in a blocking ioctl: a thread blocked in
// the kernel for the server's whole life made the helper about 3.5 ms
// slower to report the server's end (BENCHMARKS.md).
//
// Should it fail, it closes listener: the calls then fail with ENOSYS
// rather than wait for an answer forever.
func serveUmask(listener int) {
	if err := unix.SetNonblock(listener, true); err != nil {
		unix.Close(listener)
		return
	}
	f := os.NewFile(uintptr(listener), "seccomp listener")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	for {
		var req seccompNotif // the kernel wants it zeroed
		var e unix.Errno
		err := rc.Read(func(fd uintptr) bool {
			// RECV waits even on a non-blocking descriptor: receive only
			// what poll says is there.
			pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			if n, _ := unix.Poll(pfd, 0); n == 0 {
				return false
			}
			if pfd[0].Revents&unix.POLLIN == 0 {
				e = unix.EPIPE // POLLHUP: no process uses the filter any more
				return true
			}
			_, _, e = unix.Syscall(unix.SYS_IOCTL, fd, unix.SECCOMP_IOCTL_NOTIF_RECV, uintptr(unsafe.Pointer(&req)))
			return true
		})
		switch {
		case err != nil || e == unix.EPIPE:
			return
		case e != 0:
			continue // interrupted, or the caller died meanwhile
		}
		resp := seccompNotifResp{ID: req.ID, Error: -int32(unix.ENOSYS)}
		if req.Nr == unix.SYS_UMASK {
			if m, err := threadUmask(int(req.Pid)); err == nil {
				resp.Val, resp.Error = int64(m), 0
			}
		}
		// ENOENT: the caller is gone, or its call was interrupted.
		unix.Syscall(unix.SYS_IOCTL, uintptr(listener), unix.SECCOMP_IOCTL_NOTIF_SEND, uintptr(unsafe.Pointer(&resp)))
	}
}

// threadUmask returns the umask of thread tid, from its /proc status.
func threadUmask(tid int) (uint32, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		return 0, err
	}
	m, ok := parseUmask(b)
	if !ok {
		return 0, errors.New("no Umask in /proc status")
	}
	return m, nil
}

// parseUmask finds the Umask line of a /proc status (its lines begin with
// their key; a name's newline is escaped) and parses its octal value. The
// helper's entry uses it too, before the Go runtime starts: it allocates
// nothing and cannot panic.
func parseUmask(b []byte) (uint32, bool) {
	const key = "\nUmask:"
	for i := 0; i+len(key) <= len(b); i++ {
		match := true
		for j := 0; j < len(key); j++ {
			if b[i+j] != key[j] {
				match = false
				break
			}
		}
		if !match {
			continue
		}
		k := i + len(key)
		for k < len(b) && (b[k] == ' ' || b[k] == '\t') {
			k++
		}
		var m uint32
		digits := 0
		for k < len(b) && b[k] >= '0' && b[k] <= '7' && digits < 4 {
			m = m<<3 | uint32(b[k]-'0')
			k++
			digits++
		}
		if digits == 0 || (k < len(b) && b[k] != '\n') {
			return 0, false
		}
		return m, true
	}
	return 0, false
}
