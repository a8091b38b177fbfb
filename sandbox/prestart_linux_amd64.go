//lint:file-ignore U1000 the linker reaches this file from the helper's entry point (-E prestartEntry), which no Go code calls

package sandbox

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Everything in this file but prestartSupported runs before the Go
// runtime has started, in the helper program only (its entry point is
// prestartEntry, in prestart_linux_amd64.s): there is no heap, no
// scheduler and no signal handling yet. So it allocates nothing, calls
// nothing that could (only system calls, through syscall.RawSyscall6),
// keeps its state in static memory, and never panics on what it reads:
// a plan that does not hold together fails psSpec. The entry points g
// at a zeroed one whose stack guard lets every stack check pass, on the
// process's main stack (8 MiB), so ordinary Go functions run.

// prestartSupported says this architecture's helper has the entry.
const prestartSupported = true

// prestartEntry is the helper program's entry point; it runs prestart,
// then the runtime's own entry.
func prestartEntry()

// cloneServer clones a child with flags on the stack that ends at stack,
// which runs prestartChild and never returns; it returns the child's pid,
// or the errno.
func cloneServer(flags, stack uintptr) (pid, errno uintptr)

// Static memory of the entry.
var (
	prestarted   prestartResult
	prestartBuf  [planMaxLen / 8]uint64 // 8-aligned, as the plan's sections
	prestartOOB  [unsafe.Sizeof(unix.Cmsghdr{}) + planMaxRights*4 + 8]byte
	prestartFDs  [planMaxRights]int32
	prestartNFDs int
	prestartPtrs [planMaxPtrs]*byte
	// The child's stack: it shares the entry's memory until its exec.
	prestartStack [16 << 10]uint64
	// What the child reads (set before the clone) and leaves.
	prestartArgv, prestartEnv int // indexes into prestartPtrs
	prestartStat              unix.Stat_t
	prestartProcFD            [32]byte // "/proc/self/fd/N"
	prestartMarks             int
	// The child's progress: the step it is in, and whether it called
	// execve (after which the entry cannot tell a crash from the server's
	// own early end).
	prestartChildAt    int
	prestartExecCalled bool
)

// raw is a system call and its errno, as the entry makes them: no
// scheduler to tell, nothing allocated.
func raw(trap, a1, a2, a3, a4, a5, a6 uintptr) (uintptr, uintptr) {
	r, _, e := syscall.RawSyscall6(trap, a1, a2, a3, a4, a5, a6)
	return r, uintptr(e)
}

// prestartMark records a trace mark, CLOCK_MONOTONIC.
func prestartMark() {
	if prestartMarks < len(prestarted.Marks) {
		prestarted.Marks[prestartMarks] = entryNow()
		prestartMarks++
	}
}

// entryNow is monoNow, in a raw system call.
func entryNow() int64 {
	var ts unix.Timespec
	raw(unix.SYS_CLOCK_GETTIME, unix.CLOCK_MONOTONIC, uintptr(unsafe.Pointer(&ts)), 0, 0, 0, 0)
	return ts.Nano()
}

// entryDigits returns v's digits in base (10 or 16), written into d.
func entryDigits(d *[20]byte, v, base uint64) []byte {
	i := len(d)
	for {
		i--
		d[i] = "0123456789abcdef"[v%base]
		v /= base
		if v == 0 || i == 0 {
			return d[i:]
		}
	}
}

// planBytes is the plan as received.
func planBytes() []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(&prestartBuf[0])), len(prestartBuf)*8)
}

// planHead is the plan's header.
func planHead() *planHeader { return (*planHeader)(unsafe.Pointer(&prestartBuf[0])) }

// planAt returns a pointer to the byte at off of the plan, or nil if off
// is past n bytes before its end.
func planAt(off uint32, n uint64) *byte {
	h := planHead()
	if uint64(off)+n > uint64(h.Len) || uint64(off) >= uint64(len(prestartBuf)*8) {
		return nil
	}
	return &planBytes()[off]
}

// planLateAt is the plan's i-th planLate, or nil if it is not within it.
func planLateAt(i uint32) *planLate {
	h := planHead()
	n := uint64(unsafe.Sizeof(planLate{}))
	if uint64(i)*n+uint64(h.OffLate) > uint64(h.Len) {
		return nil
	}
	return (*planLate)(unsafe.Pointer(planAt(h.OffLate+i*uint32(n), n)))
}

// cstr is the NUL-terminated string at off, or nil if it is not one
// within the plan.
func cstr(off uint32) *byte {
	h := planHead()
	b := planBytes()
	for i := off; i < h.Len; i++ {
		if b[i] == 0 {
			return &b[off]
		}
	}
	return nil
}

// nextStr returns the offset after the string at off, or 0.
func nextStr(off uint32) uint32 {
	h := planHead()
	b := planBytes()
	for i := off; i < h.Len; i++ {
		if b[i] == 0 {
			return i + 1
		}
	}
	return 0
}

// cstrEqual reports whether the NUL-terminated string at p is s.
func cstrEqual(p *byte, s string) bool {
	for i := 0; i < len(s); i++ {
		c := *(*byte)(unsafe.Add(unsafe.Pointer(p), i))
		if c != s[i] {
			return false
		}
	}
	return *(*byte)(unsafe.Add(unsafe.Pointer(p), len(s))) == 0
}

// prestartFail records that step failed with errno.
func prestartFail(step int, errno uintptr) {
	prestarted.Step = step
	prestarted.Errno = errno
}

// prestart runs a plan, if the host sends one. argv is the process's.
func prestart(argc int, argv **byte) {
	args := unsafe.Slice(argv, argc)
	if argc != 2 || !cstrEqual(args[1], helperPlanArg) {
		return
	}
	prestartMark()
	// A spec rather than a plan: the Go helper's, untouched.
	var magic [4]byte
	n, e := raw(unix.SYS_RECVFROM, helperSpecFD, uintptr(unsafe.Pointer(&magic[0])), 4, unix.MSG_PEEK|unix.MSG_WAITALL, 0, 0)
	prestarted.Looked = true
	prestarted.PeekErrno, prestarted.PeekN, prestarted.Peeked = e, n, magic
	if e != 0 || n != 4 || magic != planMagic {
		return
	}
	// Whatever the host leaked must not reach the server, as in
	// markCloseOnExec; nor may the spec socket and the report pipe.
	prestarted.Tried = true
	prestarted.Listener = -1
	if _, e := raw(unix.SYS_CLOSE_RANGE, 3, ^uintptr(0)>>32, unix.CLOSE_RANGE_CLOEXEC, 0, 0, 0); e != 0 {
		prestartFail(psSpec, e)
		return
	}
	if !receivePlan() {
		return
	}
	prestarted.Trace = planHead().Flags&planTrace != 0
	prestartMark()
	runPlan()
	// What the entry holds of the plan is spent; the listener is the
	// supervisor's.
	for i := 0; i < prestartNFDs; i++ {
		raw(unix.SYS_CLOSE, uintptr(prestartFDs[i]), 0, 0, 0, 0, 0)
	}
	if prestarted.Step == psNone {
		// It returns only after a failure it recorded, for the Go
		// helper to report.
		prestartSupervise()
	}
}

// receivePlan reads the plan and its descriptors.
func receivePlan() bool {
	buf := planBytes()
	hlen := unsafe.Sizeof(planHeader{})
	iov := unix.Iovec{Base: &buf[0], Len: uint64(hlen)}
	msg := unix.Msghdr{Iov: &iov, Iovlen: 1, Control: &prestartOOB[0], Controllen: uint64(len(prestartOOB))}
	n, e := raw(unix.SYS_RECVMSG, helperSpecFD, uintptr(unsafe.Pointer(&msg)), unix.MSG_CMSG_CLOEXEC|unix.MSG_WAITALL, 0, 0, 0)
	if e != 0 || n != hlen {
		prestartFail(psSpec, e)
		return false
	}
	// The descriptors, in one SCM_RIGHTS message.
	if msg.Controllen >= uint64(unsafe.Sizeof(unix.Cmsghdr{})) && msg.Flags&unix.MSG_CTRUNC == 0 {
		c := (*unix.Cmsghdr)(unsafe.Pointer(&prestartOOB[0]))
		if c.Level == unix.SOL_SOCKET && c.Type == unix.SCM_RIGHTS && c.Len <= msg.Controllen {
			cnt := (int(c.Len) - int(unsafe.Sizeof(unix.Cmsghdr{}))) / 4
			for i := 0; i < cnt && i < planMaxRights; i++ {
				prestartFDs[i] = *(*int32)(unsafe.Pointer(&prestartOOB[int(unsafe.Sizeof(unix.Cmsghdr{}))+4*i]))
				prestartNFDs++
			}
		}
	}
	h := planHead()
	if h.Len < uint32(hlen) || h.Len > uint32(len(buf)) {
		prestartFail(psSpec, 0)
		return false
	}
	for got := uint32(hlen); got < h.Len; {
		n, e := raw(unix.SYS_READ, helperSpecFD, uintptr(unsafe.Pointer(&buf[got])), uintptr(h.Len-got), 0, 0, 0)
		if e == uintptr(unix.EINTR) {
			continue
		}
		if e != 0 || n == 0 {
			prestartFail(psSpec, e)
			return false
		}
		got += uint32(n)
	}
	if !checkPlan() {
		prestartFail(psSpec, 0)
		return false
	}
	return true
}

// checkPlan reports whether the plan received holds together, so that
// what runPlan and prestartChild read of it is there: the descriptors
// it counts arrived, every section lies within it, every string it points
// at ends within it, and the counts are within the entry's bounds. It
// reads nothing but the plan (FuzzCheckPlan), and points argv and the
// environment (prestartArgv, prestartEnv) into it.
func checkPlan() bool {
	h := planHead()
	hlen := uint32(unsafe.Sizeof(planHeader{}))
	if h.Magic != planMagic || h.Len < hlen || h.Len > uint32(len(prestartBuf)*8) {
		return false
	}
	if prestartNFDs != planTasksFD+int(h.NTasks) {
		return false
	}
	// argv and the environment, as execve takes them: each list of
	// strings, then a nil.
	prestartArgv = 0
	prestartEnv = cstrList(h.OffArgv, h.NArgv, prestartArgv)
	if prestartEnv < 0 || cstrList(h.OffEnv, h.NEnv, prestartEnv) < 0 {
		return false
	}
	// Sizes in 64 bits: a count times a size may not wrap.
	if cstr(h.OffPath) == nil || cstr(h.OffDir) == nil ||
		planAt(h.OffLimits, uint64(h.NLimits)*uint64(unsafe.Sizeof(planLimit{}))) == nil ||
		h.NFilter == 0 || h.NFilter > 0xffff ||
		planAt(h.OffFilter, uint64(h.NFilter)*uint64(unsafe.Sizeof(unix.SockFilter{}))) == nil ||
		planAt(h.OffLate, uint64(h.NLate)*uint64(unsafe.Sizeof(planLate{}))) == nil ||
		planAt(h.OffStarted, uint64(h.LenStarted)) == nil || h.LenStarted > planMaxStarted {
		return false
	}
	off := h.OffMasks
	for i := uint32(0); i < h.NMasks; i++ {
		if cstr(off) == nil {
			return false
		}
		off = nextStr(off)
	}
	for i := uint32(0); i < h.NLate; i++ {
		if l := planLateAt(i); l == nil || cstr(l.Path) == nil {
			return false
		}
	}
	return true
}

// cstrList puts pointers to the n NUL-terminated strings at off, and a
// nil after them, into prestartPtrs from k on. It returns the index after
// the nil, or -1 if the strings do not hold together or do not fit.
func cstrList(off, n uint32, k int) int {
	for i := uint32(0); i < n; i++ {
		p := cstr(off)
		if p == nil || k >= planMaxPtrs-1 {
			return -1
		}
		prestartPtrs[k] = p
		k++
		off = nextStr(off)
	}
	if k >= planMaxPtrs {
		return -1
	}
	prestartPtrs[k] = nil
	return k + 1
}

// procFDPath is "/proc/self/fd/" and fd, NUL-terminated.
func procFDPath(fd int32) *byte {
	const prefix = "/proc/self/fd/"
	n := copy(prestartProcFD[:], prefix)
	var d [20]byte
	n += copy(prestartProcFD[n:], entryDigits(&d, uint64(uint32(fd)), 10))
	prestartProcFD[n] = 0
	return &prestartProcFD[0]
}

// NUL-terminated strings the entry's system calls take, in static memory.
var (
	cEmpty   = [1]byte{0}
	cSlash   = [2]byte{'/', 0}
	cDot     = [2]byte{'.', 0}
	cScratch = [5]byte{'/', 't', 'm', 'p', 0}
	cProc    = [5]byte{'p', 'r', 'o', 'c', 0}
	cDir     = [4]byte{'d', 'i', 'r', 0}
	cFile    = [5]byte{'f', 'i', 'l', 'e', 0}
	cZero    = [1]byte{'0'}
)

// ptr is b as a system call's argument.
func ptr(b *byte) uintptr { return uintptr(unsafe.Pointer(b)) }

// runPlan is applyMounts, enterRoot, maskProc, the /proc rules, the
// cgroup wait and the server's start, from the plan.
func runPlan() {
	h := planHead()
	if pid, _ := raw(unix.SYS_GETPID, 0, 0, 0, 0, 0, 0); pid != 1 {
		prestartFail(psPID, 0)
		return
	}
	prestartResetSignals()
	root := uintptr(prestartFDs[planRootFD])
	// Nothing done here may propagate back to the host's namespace.
	if _, e := raw(unix.SYS_MOUNT, ptr(&cEmpty[0]), ptr(&cSlash[0]), ptr(&cEmpty[0]), unix.MS_REC|unix.MS_PRIVATE, 0, 0); e != 0 {
		prestartFail(psPrivate, e)
		return
	}
	scratch, e := raw(unix.SYS_OPENAT2, atFDCWD, ptr(&cScratch[0]), uintptr(unsafe.Pointer(&unix.OpenHow{
		Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})), unsafe.Sizeof(unix.OpenHow{}), 0, 0)
	if e != 0 {
		prestartFail(psAttach, e)
		return
	}
	_, e = raw(unix.SYS_MOVE_MOUNT, root, ptr(&cEmpty[0]), scratch, ptr(&cEmpty[0]), unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH, 0)
	raw(unix.SYS_CLOSE, scratch, 0, 0, 0, 0, 0)
	if e != 0 {
		prestartFail(psAttach, e)
		return
	}
	prestartMark()
	// enterRoot: a fresh /proc beneath the root, then pivot_root.
	proc, e := raw(unix.SYS_OPENAT2, root, ptr(&cProc[0]), uintptr(unsafe.Pointer(&unix.OpenHow{
		Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV,
	})), unsafe.Sizeof(unix.OpenHow{}), 0, 0)
	if e != 0 {
		prestartFail(psProc, e)
		return
	}
	_, e = raw(unix.SYS_MOUNT, ptr(&cProc[0]), ptr(procFDPath(int32(proc))), ptr(&cProc[0]), unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, 0, 0)
	raw(unix.SYS_CLOSE, proc, 0, 0, 0, 0, 0)
	if e != 0 {
		prestartFail(psProc, e)
		return
	}
	if _, e := raw(unix.SYS_FCHDIR, root, 0, 0, 0, 0, 0); e != 0 {
		prestartFail(psPivot, e)
		return
	}
	if _, e := raw(unix.SYS_PIVOT_ROOT, ptr(&cDot[0]), ptr(&cDot[0]), 0, 0, 0, 0); e != 0 {
		prestartFail(psPivot, e)
		return
	}
	if _, e := raw(unix.SYS_UMOUNT2, ptr(&cDot[0]), unix.MNT_DETACH, 0, 0, 0, 0); e != 0 {
		prestartFail(psDetach, e)
		return
	}
	if _, e := raw(unix.SYS_CHDIR, ptr(&cSlash[0]), 0, 0, 0, 0, 0); e != 0 {
		prestartFail(psDetach, e)
		return
	}
	// maskProc, from the host's maskSource.
	mask := uintptr(prestartFDs[planMaskFD])
	off := h.OffMasks
	for i := uint32(0); i < h.NMasks; i++ {
		p := cstr(off)
		if p == nil {
			prestartFail(psSpec, 0)
			return
		}
		off = nextStr(off)
		_, e := raw(unix.SYS_NEWFSTATAT, atFDCWD, ptr(p), uintptr(unsafe.Pointer(&prestartStat)), unix.AT_SYMLINK_NOFOLLOW, 0, 0)
		if e == uintptr(unix.ENOENT) {
			continue
		}
		if e != 0 {
			prestartFail(psMask, e)
			return
		}
		src := &cFile[0]
		if prestartStat.Mode&unix.S_IFMT == unix.S_IFDIR {
			src = &cDir[0]
		}
		t, e := raw(unix.SYS_OPEN_TREE, mask, ptr(src), unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC, 0, 0, 0)
		if e != 0 {
			prestartFail(psMask, e)
			return
		}
		_, e = raw(unix.SYS_MOVE_MOUNT, t, ptr(&cEmpty[0]), atFDCWD, ptr(p), unix.MOVE_MOUNT_F_EMPTY_PATH, 0)
		raw(unix.SYS_CLOSE, t, 0, 0, 0, 0, 0)
		if e != 0 {
			prestartFail(psMask, e)
			return
		}
	}
	// The rules on /proc, which exists now.
	ruleset := uintptr(prestartFDs[planRulesetFD])
	for i := uint32(0); i < h.NLate; i++ {
		l := planLateAt(i)
		if l == nil {
			prestartFail(psSpec, 0)
			return
		}
		p := cstr(l.Path)
		if p == nil {
			prestartFail(psSpec, 0)
			return
		}
		fd, e := raw(unix.SYS_OPENAT2, atFDCWD, ptr(p), uintptr(unsafe.Pointer(&unix.OpenHow{
			Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		})), unsafe.Sizeof(unix.OpenHow{}), 0, 0)
		if e == uintptr(unix.ENOENT) && l.MustExist == 0 {
			continue
		}
		if e != 0 {
			prestartFail(psLate, e)
			return
		}
		access := l.Access
		_, e = raw(unix.SYS_NEWFSTATAT, fd, ptr(&cEmpty[0]), uintptr(unsafe.Pointer(&prestartStat)), unix.AT_EMPTY_PATH, 0, 0)
		if e == 0 && prestartStat.Mode&unix.S_IFMT != unix.S_IFDIR {
			access &= llFileRights
		}
		if e == 0 && access != 0 {
			attr := unix.LandlockPathBeneathAttr{Allowed_access: access, Parent_fd: int32(fd)}
			_, e = raw(unix.SYS_LANDLOCK_ADD_RULE, ruleset, unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&attr)), 0, 0, 0)
		}
		raw(unix.SYS_CLOSE, fd, 0, 0, 0, 0, 0)
		if e != 0 {
			prestartFail(psLandlock, e)
			return
		}
	}
	prestartMark()
	if h.Flags&planJoinWait != 0 {
		var b [1]byte
		for {
			n, e := raw(unix.SYS_READ, helperSpecFD, uintptr(unsafe.Pointer(&b[0])), 1, 0, 0, 0)
			if e == uintptr(unix.EINTR) {
				continue
			}
			if e != 0 || n != 1 || b[0] != cgroupJoined {
				prestartFail(psJoin, e)
				return
			}
			break
		}
	}
	prestartMark()
	// The server, from a child that shares this memory and descriptor
	// table until its exec: it leaves its failure, or its filter's
	// listener, where the entry reads it.
	top := uintptr(unsafe.Pointer(&prestartStack[len(prestartStack)-2])) &^ 15
	pid, e := cloneServer(unix.CLONE_VM|unix.CLONE_VFORK|unix.CLONE_FILES|uintptr(unix.SIGCHLD), top)
	if e != 0 {
		prestartFail(psClone, e)
		return
	}
	if prestarted.Step == psNone && !prestartExecCalled {
		// It ended before its exec without saying why: something killed
		// it. Say in which step, and how it ended.
		prestarted.Step = psKilled
		prestarted.KilledIn = prestartChildAt
	}
	if prestarted.Step != psNone {
		// It failed and exited: reap it.
		var ws unix.WaitStatus
		raw(unix.SYS_WAIT4, pid, uintptr(unsafe.Pointer(&ws)), 0, 0, 0, 0)
		prestarted.Status = uint32(ws)
		if prestarted.Listener >= 0 {
			raw(unix.SYS_CLOSE, uintptr(prestarted.Listener), 0, 0, 0, 0, 0)
			prestarted.Listener = -1
		}
		return
	}
	prestarted.Pid = int(pid)
	prestartMark()
}

// prestartKeep are the signals whose inherited disposition the Go
// helper's runtime leaves as it found it, and so passes to the server: an
// ignored SIGHUP or SIGINT (as nohup leaves them) and the job-control
// signals, which it never handles itself.
const prestartKeep = 1<<(unix.SIGHUP-1) | 1<<(unix.SIGINT-1) | 1<<(unix.SIGCONT-1) |
	1<<(unix.SIGTSTP-1) | 1<<(unix.SIGTTIN-1) | 1<<(unix.SIGTTOU-1) |
	1<<(unix.SIGKILL-1) | 1<<(unix.SIGSTOP-1)

// prestartResetSignals sets every other signal to its default. A signal
// the host ignored stays ignored across each exec, and the entry installs
// no handler that an exec would reset, so without this the server would
// start ignoring what the host ignored; the Go helper's runtime installs
// its handlers over them, which the server's exec resets.
func prestartResetSignals() {
	var act [4]uint64 // struct sigaction as the kernel takes it: SIG_DFL, no flags
	for sig := uintptr(1); sig <= 64; sig++ {
		if uint64(prestartKeep)&(uint64(1)<<(sig-1)) == 0 {
			raw(unix.SYS_RT_SIGACTION, sig, uintptr(unsafe.Pointer(&act[0])), 0, 8, 0, 0)
		}
	}
}

// prestartChild is the server's side of cloneServer: startConfined's and
// confineAndStart's steps, in their order, then the exec. On a failure
// it records it and returns; the caller exits.
func prestartChild() {
	h := planHead()
	prestartChildAt = psCgroup
	for i := 0; i < int(h.NTasks); i++ {
		if _, e := raw(unix.SYS_WRITE, uintptr(prestartFDs[planTasksFD+i]), ptr(&cZero[0]), 1, 0, 0, 0); e != 0 {
			prestartFail(psCgroup, e)
			return
		}
	}
	// The limits first: the Go helper's server is forked by a thread that
	// runs as the server's uid under them, so that a uid at its process
	// limit fails the fork; here the uid changes below, under them, which
	// marks the same excess for execve to fail.
	prestartChildAt = psLimits
	for i := uint32(0); i < h.NLimits; i++ {
		lim := (*planLimit)(unsafe.Pointer(planAt(h.OffLimits+i*uint32(unsafe.Sizeof(planLimit{})), uint64(unsafe.Sizeof(planLimit{})))))
		if lim == nil {
			prestartFail(psSpec, 0)
			return
		}
		r := unix.Rlimit{Cur: lim.Cur, Max: lim.Max}
		if _, e := raw(unix.SYS_PRLIMIT64, 0, uintptr(lim.Resource), uintptr(unsafe.Pointer(&r)), 0, 0, 0); e != 0 {
			prestartFail(psLimits, e)
			return
		}
	}
	prestartChildAt = psNoNewPrivs
	if _, e := raw(unix.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0, 0); e != 0 {
		prestartFail(psNoNewPrivs, e)
		return
	}
	prestartChildAt = psCaps
	if e := prestartDropCaps(uintptr(h.RunAs)); e != 0 {
		prestartFail(psCaps, e)
		return
	}
	prestartChildAt = psLandlock
	if _, e := raw(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(prestartFDs[planRulesetFD]), 0, 0, 0, 0, 0); e != 0 {
		prestartFail(psLandlock, e)
		return
	}
	prestartChildAt = psSeccomp
	old, _ := raw(unix.SYS_UMASK, 0, 0, 0, 0, 0, 0)
	raw(unix.SYS_UMASK, old|umaskRule, 0, 0, 0, 0, 0)
	prog := unix.SockFprog{Len: uint16(h.NFilter), Filter: (*unix.SockFilter)(unsafe.Pointer(planAt(h.OffFilter, 0)))}
	l, e := raw(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, uintptr(unsafe.Pointer(&prog)), 0, 0, 0)
	if e != 0 {
		prestartFail(psSeccomp, e)
		return
	}
	prestarted.Listener = int(l)
	prestartChildAt = psExec
	if _, e := raw(unix.SYS_CHDIR, ptr(cstr(h.OffDir)), 0, 0, 0, 0, 0); e != 0 {
		prestartFail(psExec, e)
		return
	}
	prestartExecCalled = true
	_, e = raw(unix.SYS_EXECVE, ptr(cstr(h.OffPath)), uintptr(unsafe.Pointer(&prestartPtrs[prestartArgv])), uintptr(unsafe.Pointer(&prestartPtrs[prestartEnv])), 0, 0, 0)
	prestartFail(psExec, e)
}

// prestartDropCaps is dropCapabilities, for a process that holds every
// capability (a root host's), in raw system calls.
func prestartDropCaps(runAs uintptr) uintptr {
	bits := uintptr(secbitNoroot | secbitNorootLocked | secbitKeepCapsLocked |
		secbitNoCapAmbientRaise | secbitNoCapAmbientRaiseLocked)
	if _, e := raw(unix.SYS_PRCTL, unix.PR_SET_SECUREBITS, bits, 0, 0, 0, 0); e != 0 {
		return e
	}
	for c := uintptr(0); c < 64; c++ {
		_, e := raw(unix.SYS_PRCTL, unix.PR_CAPBSET_DROP, c, 0, 0, 0, 0)
		if e == uintptr(unix.EINVAL) {
			if c <= unix.CAP_LAST_CAP {
				return e
			}
			break
		}
		if e != 0 {
			return e
		}
	}
	if runAs != 0 {
		if _, e := raw(unix.SYS_SETGROUPS, 0, 0, 0, 0, 0, 0); e != 0 {
			return e
		}
		if _, e := raw(unix.SYS_SETRESGID, runAs, runAs, runAs, 0, 0, 0); e != 0 {
			return e
		}
		if _, e := raw(unix.SYS_SETRESUID, runAs, runAs, runAs, 0, 0, 0); e != 0 {
			return e
		}
	}
	if _, e := raw(unix.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0, 0); e != 0 {
		return e
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	_, e := raw(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0, 0, 0, 0)
	return e
}

// atFDCWD is AT_FDCWD as a system call's argument.
const atFDCWD = ^uintptr(99) // -100

// prestartPath is the server's program in the plan, for the Go helper's
// report of a failed exec ("" if there is none).
func prestartPath() string {
	h := planHead()
	// The Go helper asks after any failure, checkPlan's own included.
	if h.Len == 0 || h.Len > uint32(len(prestartBuf)*8) {
		return ""
	}
	p := cstr(h.OffPath)
	if p == nil {
		return ""
	}
	return unsafe.String(p, nextStr(h.OffPath)-h.OffPath-1)
}
