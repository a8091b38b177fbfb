package sandbox

import (
	"fmt"
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

// modeCall is a system call that takes a file mode, and where.
type modeCall struct {
	nr  uint32
	arg int // index of the mode argument
}

// modeCalls are the calls that set a file's mode bits, everywhere.
var modeCalls = append([]modeCall{
	{unix.SYS_FCHMOD, 1}, {unix.SYS_FCHMODAT, 2}, {unix.SYS_FCHMODAT2, 2},
	{unix.SYS_OPENAT, 3}, {unix.SYS_MKNODAT, 2},
}, legacyModeCalls...)

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
	ownProcessOnly bool
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
	// A mode with S_ISUID or S_ISGID: EPERM.
	for _, c := range modeCalls {
		jump(bpfJeqK, c.nr, 0, 5)
		stmt(bpfLdAbsW, uint32(seccompArg0Off+c.arg*seccompArgSize))
		stmt(bpfAndK, unix.S_ISUID|unix.S_ISGID)
		jump(bpfJeqK, 0, 1, 0)
		stmt(bpfRetK, retErrno(unix.EPERM))
		stmt(bpfLdAbsW, seccompNrOff)
	}
	if o.ownProcessOnly {
		for _, c := range []modeCall{ // here arg is the index of the pid
			{unix.SYS_PRLIMIT64, 0}, {unix.SYS_SETPRIORITY, 1}, {unix.SYS_IOPRIO_SET, 1},
			{unix.SYS_SCHED_SETAFFINITY, 0}, {unix.SYS_SCHED_SETSCHEDULER, 0},
			{unix.SYS_SCHED_SETPARAM, 0}, {unix.SYS_SCHED_SETATTR, 0},
			{unix.SYS_MIGRATE_PAGES, 0}, {unix.SYS_MOVE_PAGES, 0},
		} {
			jump(bpfJeqK, c.nr, 0, 4)
			stmt(bpfLdAbsW, uint32(seccompArg0Off+c.arg*seccompArgSize))
			jump(bpfJeqK, 0, 1, 0)
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
		jump(bpfJeqK, unix.SYS_SOCKET, 0, 12)
		stmt(bpfLdAbsW, seccompArg0Off)
		jump(bpfJeqK, unix.AF_UNIX, 8, 0)
		jump(bpfJeqK, unix.AF_INET, 1, 0)
		jump(bpfJeqK, unix.AF_INET6, 0, 7)
		stmt(bpfLdAbsW, arg1Off)
		stmt(bpfAndK, typeMask)
		jump(bpfJeqK, unix.SOCK_STREAM, 0, 4)
		stmt(bpfLdAbsW, arg2Off)
		jump(bpfJeqK, 0, 1, 0)
		jump(bpfJeqK, unix.IPPROTO_TCP, 0, 1)
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
// helper confines one locked thread and starts the server from it). The
// thread must have no_new_privs set.
func installSeccomp(o filterOptions) error {
	prog := seccompProgram(o)
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog)))
	if errno != 0 {
		return fmt.Errorf("seccomp(SET_MODE_FILTER): %w", errno)
	}
	return nil
}
