//lint:file-ignore U1000 the linker reaches this file from the helper's entry point (-E prestartEntry), which no Go code calls

package sandbox

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The entry's supervisor: once the plan's server runs, the entry does
// supervise's work itself, in raw system calls, and exits; the Go runtime
// never starts. A Go runtime's start, its page faults and its exit came
// to about an eighth of a start's CPU (BENCHMARKS.md, stops 43 and 44),
// and the host waited for it before Start returned.
//
// What it does is supervise's, step for step: it relays SIGTERM and
// SIGINT to the server (through a pidfd), answers the umask calls the
// server's filter hands over (serveUmask), reaps every orphan, kills the
// namespace when the lifeline ends, and when the server exits kills and
// reaps the rest, reports how the server ended (and whether it is alone)
// and exits with the server's status. It runs single-threaded on one
// ppoll: the signals arrive on a signalfd, blocked from the moment the
// server was started. They need no handler meanwhile: the kernel drops a
// signal init has left at its default, but never a blocked one, and the
// host learns the helper's pid only from Start, which returns after the
// Started report, when the relay is in place.
//
// The same rules hold as for the rest of the entry: nothing allocated,
// static memory, no panic on anything read.

// Sizes of the supervisor's static buffers.
const (
	psReportMax = planMaxStarted + 512 // a report: the Started prefix, a trace or an exit
	psStatusMax = 4096                 // the head of /proc/TID/status, where Umask is
)

// Static memory of the supervisor.
var (
	psReport     [psReportMax]byte
	psReportLen  int
	psStatus     [psStatusMax]byte
	psStatusPath [32]byte // "/proc/TID/status"
	psSigInfo    [8 * 128]byte
	psDrain      [512]byte
	psNotif      seccompNotif
	psResp       seccompNotifResp
	psPoll       [3]unix.PollFd
	psExitMarks  [3]int64
)

// Signals the supervisor takes on its signalfd.
const psSignals = 1<<(unix.SIGTERM-1) | 1<<(unix.SIGINT-1) | 1<<(unix.SIGCHLD-1)

var cDevNull = [10]byte{'/', 'd', 'e', 'v', '/', 'n', 'u', 'l', 'l', 0}

// psWrite appends s to the report being built.
func psWrite(s string) { psWriteBytes(unsafe.Slice(unsafe.StringData(s), len(s))) }

// psWriteBytes appends b to the report being built; what does not fit is
// dropped (encodePlan keeps the Started prefix within planMaxStarted).
func psWriteBytes(b []byte) {
	for i := 0; i < len(b) && psReportLen < len(psReport); i++ {
		psReport[psReportLen] = b[i]
		psReportLen++
	}
}

// psWriteUint appends v in base (10 or 16).
func psWriteUint(v uint64, base uint64) {
	var d [20]byte
	psWriteBytes(entryDigits(&d, v, base))
}

// psWriteMarks appends marks as a report's Trace.
func psWriteMarks(marks []int64) {
	psWrite(`,"trace":"`)
	for i := range marks {
		if i > 0 {
			psWrite(" ")
		}
		psWriteUint(uint64(marks[i]), 10)
	}
	psWrite(`"`)
}

// psSend writes the report built, and a newline, to the report pipe. A
// failed write means the host is gone: nobody is left to tell.
func psSend() {
	psWrite("}\n")
	for off := 0; off < psReportLen; {
		n, e := raw(unix.SYS_WRITE, helperReportFD, uintptr(unsafe.Pointer(&psReport[off])), uintptr(psReportLen-off), 0, 0, 0)
		if e == uintptr(unix.EINTR) {
			continue
		}
		if e != 0 || n == 0 {
			break
		}
		off += int(n)
	}
	psReportLen = 0
}

// psNullFD points descriptor fd at /dev/null (nullFD).
func psNullFD(fd uintptr) {
	null, e := raw(unix.SYS_OPENAT, atFDCWD, ptr(&cDevNull[0]), unix.O_RDWR|unix.O_CLOEXEC, 0, 0, 0)
	if e != 0 {
		return
	}
	raw(unix.SYS_DUP3, null, fd, 0, 0, 0, 0)
	raw(unix.SYS_CLOSE, null, 0, 0, 0, 0, 0)
}

// prestartSupervise supervises the server the entry started and exits
// with its status. If it cannot take over (no pidfd, no signalfd), it
// kills the server, records the failure and returns, and the Go helper
// reports it.
func prestartSupervise() {
	server := uintptr(prestarted.Pid)
	// Only the server, its children and the host hold stdin and stdout
	// now: the host sees EOF on stdout once the server's side is done.
	psNullFD(0)
	psNullFD(1)
	// A pidfd names the server even after its pid is reaped and reused.
	pidfd, e := raw(unix.SYS_PIDFD_OPEN, server, 0, 0, 0, 0, 0)
	if e != 0 {
		raw(unix.SYS_KILL, server, uintptr(unix.SIGKILL), 0, 0, 0, 0)
		prestartFail(psPidfd, e)
		return
	}
	set := uint64(psSignals)
	if _, e := raw(unix.SYS_RT_SIGPROCMASK, unix.SIG_BLOCK, uintptr(unsafe.Pointer(&set)), 0, 8, 0, 0); e != 0 {
		raw(unix.SYS_KILL, server, uintptr(unix.SIGKILL), 0, 0, 0, 0)
		prestartFail(psSignalFD, e)
		return
	}
	sfd, e := raw(unix.SYS_SIGNALFD4, ^uintptr(0), uintptr(unsafe.Pointer(&set)), 8, unix.SFD_CLOEXEC|unix.SFD_NONBLOCK, 0, 0)
	if e != 0 {
		raw(unix.SYS_KILL, server, uintptr(unix.SIGKILL), 0, 0, 0, 0)
		prestartFail(psSignalFD, e)
		return
	}
	// The relay is in place: report the server started.
	h := planHead()
	psWriteBytes(unsafe.Slice(planAt(h.OffStarted, uint64(h.LenStarted)), h.LenStarted))
	if prestarted.Trace {
		prestartMark()
		psWriteMarks(prestarted.Marks[:prestartMarks])
	}
	psSend()

	psPoll[0] = unix.PollFd{Fd: int32(sfd), Events: unix.POLLIN}
	psPoll[1] = unix.PollFd{Fd: helperSpecFD, Events: unix.POLLIN}
	psPoll[2] = unix.PollFd{Fd: int32(prestarted.Listener), Events: unix.POLLIN}
	var ws unix.WaitStatus
	exited := psReap(server, &ws)
	for !exited {
		_, e := raw(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&psPoll[0])), uintptr(len(psPoll)), 0, 0, 0, 0)
		if e == uintptr(unix.EINTR) {
			continue
		}
		if e != 0 {
			// Nothing can make a ppoll on these fail; if it does, the
			// helper can no longer supervise: end the namespace.
			psKillNamespace()
			raw(unix.SYS_EXIT_GROUP, exitNoExec, 0, 0, 0, 0, 0)
		}
		if psPoll[0].Revents != 0 {
			exited = psSignalsRead(pidfd, server, &ws)
		}
		if psPoll[1].Revents != 0 {
			psLifeline()
		}
		if psPoll[2].Revents != 0 {
			psUmask()
		}
	}
	// End what the server left behind and reap it all before reporting,
	// as supervise does (reapNamespace).
	marks := prestarted.Trace
	if marks {
		psExitMarks[0] = entryNow()
	}
	alone := psReapNamespace(sfd)
	if marks {
		// No confining thread to wait for: the server was vforked.
		psExitMarks[1] = entryNow()
		psExitMarks[2] = psExitMarks[1]
	}
	if alone {
		// Nothing of the server is left to write to stderr, and the host
		// waits for its EOF: let go of the helper's copy too.
		psNullFD(2)
	}
	psWrite(`{"exit":"`)
	psDescribeWait(ws)
	psWrite(`"`)
	if alone {
		psWrite(`,"alone":true`)
	}
	if marks {
		psWriteMarks(psExitMarks[:])
	}
	psSend()
	raw(unix.SYS_EXIT_GROUP, uintptr(exitCode(ws)), 0, 0, 0, 0, 0)
}

// psReap reaps every child that has exited and reports whether the server
// was among them, its status in ws. It is called only while the server is
// unreaped.
func psReap(server uintptr, ws *unix.WaitStatus) bool {
	for {
		var st unix.WaitStatus
		pid, e := raw(unix.SYS_WAIT4, ^uintptr(0), uintptr(unsafe.Pointer(&st)), unix.WNOHANG, 0, 0, 0)
		if e == uintptr(unix.EINTR) {
			continue
		}
		if e != 0 {
			// ECHILD while the server is unreaped cannot happen: it is
			// this process's child. If it does, there is nothing left to
			// wait for: say so and end, as supervise does.
			psKillNamespace()
			psWrite(`{"exit":"unknown: errno `)
			psWriteUint(uint64(e), 10)
			psWrite(`"`)
			psSend()
			raw(unix.SYS_EXIT_GROUP, exitNoExec, 0, 0, 0, 0, 0)
		}
		if pid == 0 {
			return false
		}
		if pid == server {
			*ws = st
			return true
		}
	}
}

// psKillNamespace is killNamespace: kill(-1) ends every other process of
// the namespace only for its init; for anyone else it would mean every
// process it may signal, so it is done only as pid 1 (which runPlan
// checked; checked again here, as it costs nothing).
func psKillNamespace() {
	if pid, _ := raw(unix.SYS_GETPID, 0, 0, 0, 0, 0, 0); pid == 1 {
		raw(unix.SYS_KILL, ^uintptr(0), uintptr(unix.SIGKILL), 0, 0, 0, 0)
	}
}

// psSignalsRead reads what the signalfd holds: it relays SIGTERM and
// SIGINT to the server and, on SIGCHLD, reaps. It reports whether the
// server exited.
func psSignalsRead(pidfd, server uintptr, ws *unix.WaitStatus) bool {
	exited := false
	for {
		n, e := raw(unix.SYS_READ, uintptr(psPoll[0].Fd), uintptr(unsafe.Pointer(&psSigInfo[0])), uintptr(len(psSigInfo)), 0, 0, 0)
		if e == uintptr(unix.EINTR) {
			continue
		}
		if e != 0 || n < 128 {
			break
		}
		for off := uintptr(0); off+128 <= n; off += 128 {
			// ssi_signo is the first field of struct signalfd_siginfo.
			sig := *(*uint32)(unsafe.Pointer(&psSigInfo[off]))
			switch syscall.Signal(sig) {
			case unix.SIGTERM, unix.SIGINT:
				raw(unix.SYS_PIDFD_SEND_SIGNAL, pidfd, uintptr(sig), 0, 0, 0, 0)
			case unix.SIGCHLD:
				// Once the server is reaped the rest is
				// psReapNamespace's: another SIGCHLD here may come
				// after the last child, when wait4 says ECHILD.
				if !exited && psReap(server, ws) {
					exited = true
				}
			}
		}
	}
	return exited
}

// psLifeline reads the lifeline: the host never writes after the plan and
// keeps its end open for as long as it wants the server, so EOF (or an
// error) means it closed it (Close) or died. Then the namespace is killed
// and the lifeline no longer watched.
func psLifeline() {
	n, e := raw(unix.SYS_READ, helperSpecFD, uintptr(unsafe.Pointer(&psDrain[0])), uintptr(len(psDrain)), 0, 0, 0)
	if e == uintptr(unix.EINTR) || e == uintptr(unix.EAGAIN) || (e == 0 && n > 0) {
		return
	}
	psKillNamespace()
	psPoll[1].Fd = -1
}

// psUmask answers one umask call the filter handed over, as serveUmask
// does: with the calling thread's umask, from /proc/TID/status; anything
// else fails with ENOSYS. Once no process uses the filter, the listener is
// closed and no longer watched.
func psUmask() {
	if psPoll[2].Revents&unix.POLLIN == 0 {
		raw(unix.SYS_CLOSE, uintptr(psPoll[2].Fd), 0, 0, 0, 0, 0)
		psPoll[2].Fd = -1
		return
	}
	// RECV waits for a notification if there is none; poll said there
	// is, and the one thread here takes them, so it returns at once
	// (ENOENT if the caller died meanwhile). The kernel wants it zeroed.
	psNotif = seccompNotif{}
	if _, e := raw(unix.SYS_IOCTL, uintptr(psPoll[2].Fd), unix.SECCOMP_IOCTL_NOTIF_RECV, uintptr(unsafe.Pointer(&psNotif)), 0, 0, 0); e != 0 {
		return
	}
	psResp = seccompNotifResp{ID: psNotif.ID, Error: -int32(unix.ENOSYS)}
	if psNotif.Nr == unix.SYS_UMASK {
		if m, ok := psThreadUmask(psNotif.Pid); ok {
			psResp.Val, psResp.Error = int64(m), 0
		}
	}
	// ENOENT: the caller is gone, or its call was interrupted.
	raw(unix.SYS_IOCTL, uintptr(psPoll[2].Fd), unix.SECCOMP_IOCTL_NOTIF_SEND, uintptr(unsafe.Pointer(&psResp)), 0, 0, 0)
}

// psThreadUmask is threadUmask: the umask of thread tid, from its /proc
// status (the fresh /proc of the helper's namespace, where the listener's
// pids are).
func psThreadUmask(tid uint32) (uint32, bool) {
	n := copy(psStatusPath[:], "/proc/")
	var d [20]byte
	n += copy(psStatusPath[n:], entryDigits(&d, uint64(tid), 10))
	n += copy(psStatusPath[n:], "/status")
	psStatusPath[n] = 0
	fd, e := raw(unix.SYS_OPENAT, atFDCWD, ptr(&psStatusPath[0]), unix.O_RDONLY|unix.O_CLOEXEC, 0, 0, 0)
	if e != 0 {
		return 0, false
	}
	got := 0
	for got < len(psStatus) {
		r, e := raw(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&psStatus[got])), uintptr(len(psStatus)-got), 0, 0, 0)
		if e == uintptr(unix.EINTR) {
			continue
		}
		if e != 0 || r == 0 {
			break
		}
		got += int(r)
	}
	raw(unix.SYS_CLOSE, fd, 0, 0, 0, 0, 0)
	return parseUmask(psStatus[:got])
}

// psReapNamespace is reapNamespace: it kills every other process of the
// namespace and reaps them, reporting whether it saw the last one go
// within helperReapLimit. As init, the helper inherits every orphan, so
// no child left means no process left.
func psReapNamespace(sfd uintptr) bool {
	psKillNamespace()
	deadline := entryNow() + int64(helperReapLimit)
	for {
		pid, e := raw(unix.SYS_WAIT4, ^uintptr(0), 0, unix.WNOHANG, 0, 0, 0)
		switch {
		case e == uintptr(unix.ECHILD):
			return true
		case e == uintptr(unix.EINTR) || (e == 0 && pid > 0):
			continue
		case e != 0:
			return false
		}
		// Children left, none exited yet: wait for a SIGCHLD.
		left := deadline - entryNow()
		if left <= 0 {
			return false
		}
		ts := unix.NsecToTimespec(left)
		fd := unix.PollFd{Fd: int32(sfd), Events: unix.POLLIN}
		raw(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&fd)), 1, uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
		for {
			n, e := raw(unix.SYS_READ, sfd, uintptr(unsafe.Pointer(&psSigInfo[0])), uintptr(len(psSigInfo)), 0, 0, 0)
			if e != 0 || n == 0 {
				break
			}
		}
	}
}

// psDescribeWait writes how a process ended, in the words of
// describeWait.
func psDescribeWait(ws unix.WaitStatus) {
	switch {
	case ws.Exited():
		psWrite("exit status ")
		psWriteUint(uint64(ws.ExitStatus()), 10)
	case ws.Signaled():
		psWrite("signal: ")
		if s := ws.Signal(); s >= 1 && s <= 31 {
			// The standard signals' names are static strings.
			psWrite(s.String())
		} else {
			psWrite("signal ")
			psWriteUint(uint64(s), 10)
		}
		if ws.CoreDump() {
			psWrite(" (core dumped)")
		}
	default:
		psWrite("wait status 0x")
		psWriteUint(uint64(uint32(ws)), 16)
	}
}
