package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// helperArg0 is the argv[0] under which Start runs the sandbox helper: the
// embedded helper program or, failing that, the current program re-executed
// through /proc/self/exe.
const helperArg0 = "mcphost-sandbox-helper"

// Descriptors the host passes to the helper besides stdio. The idmapped
// mount trees (spec.Idmap) come with the spec, in one SCM_RIGHTS message
// on helperSpecFD: the host starts the helper before it has made them, so
// that the helper's runtime starts while the host prepares.
const (
	helperSpecFD   = 3 // a stream socket: the spec, then a lifeline (EOF means "stop")
	helperReportFD = 4 // a pipe: reports from the helper, one JSON object a line
	helperProxyFD  = 5 // the network proxy's socketpair (spec.Proxy), if any
)

// maxIdmap bounds spec.Idmap: the trees travel in one SCM_RIGHTS message,
// which the kernel caps at 253 descriptors (SCM_MAX_FD).
const maxIdmap = 253

// init turns this process into the sandbox helper when, and only when, it
// was started as one by Start or Probe: its argument vector is exactly
// ["mcphost-sandbox-helper"], or that and "plan" (the embedded program,
// whose entry took the plan first and, if it started the server, never
// gets here: prestart_linux.go). Then the helper runs here, before main
// (or a test binary's TestMain), and the process exits when it is done;
// nothing else of the program runs. Any other process returns from init at once,
// after starting one goroutine (below).
//
// This is the package's one init with an effect. It is what lets every
// program that imports the package, go test binaries included, serve as
// its own helper without a line in main.
//
// In every other process it starts, in the background, what the first
// Start would otherwise wait for: loading the embedded helper program
// (helperPath: a root host's copy, or a memory file written in about
// 2 ms) and, on a root host, the probe of detached trees.
func init() {
	if len(os.Args) == 1 || len(os.Args) == 2 && os.Args[1] == helperPlanArg {
		switch os.Args[0] {
		case helperArg0:
			helperMark()
			os.Exit(helperMain())
		case userNSArg0:
			holdUserNS()
		}
	}
	// The probe of whether a root host may build roots
	// (detachedTreesWork) lay on the first start's path: 0.2 to 1.1 ms
	// of a CLI run (BENCHMARKS.md, "Stop 45").
	go func() {
		if helperProgram != "" {
			helperPath()
		}
		if os.Geteuid() == 0 {
			detachedTreesProbe()
		}
	}()
}

// Exit codes of the helper when it fails before the server runs; the
// reason is on the report pipe.
const (
	exitBadStart = 125 // not started by Start, or a bad spec
	exitNoConfin = 126 // confinement could not be set up
	exitNoExec   = 127 // the server could not be executed
)

// helper is the state of the helper process.
type helper struct {
	rep *os.File
	// idmapFDs are the idmapped mount trees the host sent with the spec,
	// in the order of spec.Idmap.
	idmapFDs []int
	// rootFD is the new root the host built and sent (spec.Root), or -1.
	rootFD int
	// cgroupTasks are the tasks files of spec.Cgroups, open for writing,
	// with spec.CgroupsSelf: the thread that starts the server joins them.
	cgroupTasks []int
	// confinedTID is the thread that confined itself and started the
	// server, which ends after the fork. Until it has, it may be in the
	// server's cgroups and run as the server's uid (spec.RunAs): an
	// "alone" report waits for it, so that the host may take the cgroups
	// for empty and the uid for free.
	confinedTID int
}

// send writes r to the report pipe. A failed write means the host is gone;
// there is nobody left to tell, so the error is dropped.
func (h *helper) send(r report) { h.rep.Write(encodeReport(r)) }

// fail reports err as the reason the server did not start.
func (h *helper) fail(err error) {
	var se *stepError
	isStep := errors.As(err, &se)
	// Not the server's exec, whose program the host resolved through no
	// link (LinkError): a loop there is the program's own business.
	linked := errors.Is(err, unix.ELOOP) && isStep && se.step != stepStartServer
	h.send(report{Error: err.Error(), Unsupported: isStep && se.unsupported, Linked: linked})
}

func helperMain() int {
	if prestarted.Tried {
		// The entry received a plan on the spec socket: it was started
		// by Start, with the socket and pipe it checked for.
		return (&helper{rep: os.NewFile(helperReportFD, "report")}).runPrestarted()
	}
	// Start passes a socket and a pipe, inherited. Descriptors the runtime
	// opened for itself (an epoll instance, say) are not inherited.
	for _, d := range []struct {
		fd   int
		kind uint32
		what string
	}{{helperSpecFD, unix.S_IFSOCK, "socket"}, {helperReportFD, unix.S_IFIFO, "pipe"}} {
		var st unix.Stat_t
		flags, err := unix.FcntlInt(uintptr(d.fd), unix.F_GETFD, 0)
		if err != nil || flags&unix.FD_CLOEXEC != 0 || unix.Fstat(d.fd, &st) != nil || st.Mode&unix.S_IFMT != d.kind {
			fmt.Fprintf(os.Stderr, "%s: descriptor %d is not an inherited %s: this program runs as the sandbox helper only when started by sandbox.Start\n", helperArg0, d.fd, d.what)
			return exitBadStart
		}
	}
	h := &helper{rep: os.NewFile(helperReportFD, "report")}
	lifeline := os.NewFile(helperSpecFD, "spec")

	// Whatever the host leaked to us (a descriptor a C library opened
	// without O_CLOEXEC) must not reach the server: it gets stdio only.
	if err := markCloseOnExec(3); err != nil {
		h.fail(failedStep("marking descriptors close-on-exec", err))
		return exitBadStart
	}
	s, fds, err := receiveSpec(lifeline)
	if err != nil {
		if r := &prestarted; r.Looked {
			n := min(r.PeekN, uintptr(len(r.Peeked)))
			err = fmt.Errorf("%w (the helper's entry looked for a plan first and found %q, errno %d)", err, r.Peeked[:n], r.PeekErrno)
		}
		h.fail(failedStep("reading the spec", err))
		return exitBadStart
	}
	h.rootFD = -1
	if s.Root {
		h.rootFD, fds = fds[0], fds[1:]
	}
	h.idmapFDs = fds
	helperTraceWanted = s.Trace
	helperMark()
	switch {
	case s.Off:
		return h.runOff(s, lifeline)
	case s.Reduced:
		return h.runReduced(s, lifeline)
	}
	return h.runConfined(s, lifeline)
}

// receiveSpec reads the spec from the socket f and the idmapped mount
// trees that come with its first bytes (close-on-exec, one per
// spec.Idmap entry, in order), leaving f positioned after the spec: it is
// the lifeline from then on.
func receiveSpec(f *os.File) (*spec, []int, error) {
	sc, err := f.SyscallConn()
	if err != nil {
		return nil, nil, err
	}
	head := make([]byte, len(specMagic)+4)
	oob := make([]byte, unix.CmsgSpace(maxIdmap*4))
	var n, oobn, flags int
	var rerr error
	err = sc.Read(func(fd uintptr) bool {
		n, oobn, flags, _, rerr = unix.Recvmsg(int(fd), head, oob, unix.MSG_CMSG_CLOEXEC)
		return rerr != unix.EAGAIN
	})
	if err == nil {
		err = rerr
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%w: receiving: %v", errBadSpec, err)
	}
	var fds []int
	if oobn > 0 {
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil {
			return nil, nil, fmt.Errorf("%w: its descriptors: %v", errBadSpec, err)
		}
		for _, m := range msgs {
			rights, err := unix.ParseUnixRights(&m)
			if err != nil {
				closeFDs(fds)
				return nil, nil, fmt.Errorf("%w: its descriptors: %v", errBadSpec, err)
			}
			fds = append(fds, rights...)
		}
	}
	if flags&unix.MSG_CTRUNC != 0 {
		closeFDs(fds)
		return nil, nil, fmt.Errorf("%w: more than %d descriptors", errBadSpec, maxIdmap)
	}
	s, err := decodeSpec(io.MultiReader(bytes.NewReader(head[:n]), f))
	if err != nil {
		closeFDs(fds)
		return nil, nil, err
	}
	want := len(s.Idmap)
	if s.Root {
		want++
	}
	if len(fds) != want {
		closeFDs(fds)
		if s.Root {
			return nil, nil, fmt.Errorf("%w: %d descriptors for the root and %d idmapped trees", errBadSpec, len(fds), len(s.Idmap))
		}
		return nil, nil, fmt.Errorf("%w: %d idmapped trees for %d paths", errBadSpec, len(fds), len(s.Idmap))
	}
	return s, fds, nil
}

// openTasks opens the tasks file of each cgroup v1 directory in dirs for
// writing.
func openTasks(dirs []string) ([]int, error) {
	var fds []int
	for _, d := range dirs {
		fd, err := unix.Open(d+"/tasks", unix.O_WRONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		if err != nil {
			closeFDs(fds)
			return nil, fmt.Errorf("%s: %w", d, err)
		}
		fds = append(fds, fd)
	}
	return fds, nil
}

// closeFDs closes each of fds.
func closeFDs(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// markCloseOnExec sets close-on-exec on every descriptor from lowfd up.
func markCloseOnExec(lowfd int) error {
	err := unix.CloseRange(uint(lowfd), ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	if err == nil {
		return nil
	}
	if err != unix.ENOSYS && err != unix.EINVAL {
		return fmt.Errorf("close_range: %w", err)
	}
	// Kernels before 5.11: walk the descriptor table.
	ents, rerr := os.ReadDir("/proc/self/fd")
	if rerr != nil {
		return rerr
	}
	for _, e := range ents {
		fd, _ := strconv.Atoi(e.Name())
		if fd >= lowfd {
			unix.CloseOnExec(fd)
		}
	}
	return nil
}

// confinement describes the layers the helper applies, for the host to
// show (Process.Confinement, Probe).
func confinement(abi int, s *spec, userNS bool) string {
	parts := []string{"landlock-v" + strconv.Itoa(abi), "seccomp"}
	if userNS {
		parts = append(parts, "userns")
	}
	if s.RunAs != 0 {
		parts = append(parts, "unprivileged")
	}
	if s.Reduced {
		return strings.Join(append(parts, "reduced"), "+")
	}
	parts = append(parts, "pidns", "mntns", "ipcns")
	switch s.access() {
	case netNone:
		parts = append(parts, "netns")
	case netProxy:
		parts = append(parts, "netns", "proxy")
		if s.Direct != nil {
			parts = append(parts, "names")
		}
	}
	return strings.Join(parts, "+")
}

// inUserNS reports whether the helper runs in a user namespace other than
// the initial one, whose uid_map maps the whole 32-bit range onto itself.
func inUserNS() bool {
	b, err := os.ReadFile("/proc/self/uid_map")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b))
	return !(len(f) == 3 && f[0] == "0" && f[1] == "0" && f[2] == "4294967295")
}

func (h *helper) runConfined(s *spec, lifeline *os.File) int {
	// Everything below assumes a fresh PID namespace, down to kill(-1),
	// which outside one would signal every process the user can reach.
	if os.Getpid() != 1 {
		h.fail(unsupportedStep("pid namespace", fmt.Errorf("the helper is pid %d, not 1", os.Getpid())))
		return exitNoConfin
	}
	abi, err := confinementABI(s)
	if err != nil {
		h.fail(err)
		return exitNoConfin
	}
	if s.CgroupsSelf {
		// Opened while the host's tree is in view, before the new root.
		if h.cgroupTasks, err = openTasks(s.Cgroups); err != nil {
			h.fail(failedStep("opening the server's cgroups", err))
			return exitNoConfin
		}
	}
	userNS, code := h.enterMounts(s)
	if code != 0 {
		return code
	}
	helperMark()
	// Without CgroupsSelf the helper is in the server's cgroups from a move
	// the host makes right after starting it (v2; that move waits for an
	// RCU grace period, which so overlaps this process's start and
	// mounts), and the host says so with one byte after the spec. Either
	// way the server, forked below, is counted from its first process on.
	if len(s.Cgroups) > 0 && !s.CgroupsSelf {
		if err := waitCgroupJoin(lifeline); err != nil {
			h.fail(err)
			return exitNoConfin
		}
	}
	helperMark()
	return h.confineAndSupervise(s, abi, userNS, lifeline, true)
}

// runPrestarted reports what the helper's entry, which ran the host's
// plan (prestart_linux.go), recorded as its failure. An entry that started
// the server supervises it itself and never returns to the runtime.
func (h *helper) runPrestarted() int {
	r := &prestarted
	if r.Step == psNone {
		err := failedStep("the prestart", errors.New("the entry returned without a failure"))
		h.fail(err)
		return exitNoExec
	}
	err := r.err(prestartPath())
	h.fail(err)
	if r.Step == psPidfd || r.Step == psSignalFD {
		// The server ran and was killed: supervise's code for that.
		return exitNoConfin
	}
	return exitCodeOf(err)
}

// cgroupJoined is the byte the host writes on the spec socket, after the
// spec, once it has moved the helper into every cgroup of spec.Cgroups.
const cgroupJoined = 'j'

// waitCgroupJoin reads the host's word that the helper is in the server's
// cgroups. EOF (the host gave up, or died) or anything else fails.
func waitCgroupJoin(lifeline *os.File) error {
	var b [1]byte
	for {
		n, err := lifeline.Read(b[:])
		if n == 1 && b[0] == cgroupJoined {
			return nil
		}
		if n == 1 {
			return failedStep("joining the server's cgroups", fmt.Errorf("unexpected byte %q from the host", b[0]))
		}
		if err == io.EOF {
			return failedStep("joining the server's cgroups", errors.New("the host did not move the helper into them"))
		}
		if err != nil {
			return failedStep("joining the server's cgroups", err)
		}
	}
}

// enterMounts builds the server's mount namespace (and its proxy
// listener). It returns whether the helper runs in a user namespace, and
// 0 or the exit code after a failure it reported.
func (h *helper) enterMounts(s *spec) (userNS bool, code int) {
	// Read before the fresh /proc hides nothing relevant, but while the
	// helper still has the original one for certain.
	userNS = inUserNS()
	plan, err := planMounts(s)
	if err != nil {
		h.fail(failedStep("planning mounts", err))
		return userNS, exitNoConfin
	}
	idmapped := make(map[string]int, len(s.Idmap))
	for i, p := range s.Idmap {
		idmapped[p] = h.idmapFDs[i]
	}
	if s.Root && !plan.NewRoot {
		h.fail(failedStep("planning mounts", errors.New("the host sent a new root for a server that has none")))
		return userNS, exitNoConfin
	}
	err = applyMounts(plan, idmapped, h.rootFD)
	if h.rootFD >= 0 {
		unix.Close(h.rootFD) // attached, or never to be
	}
	if err != nil {
		h.fail(err)
		return userNS, exitNoConfin
	}
	if len(s.UserNSLimits) > 0 {
		if err := setUserNSLimits(s.UserNSLimits, userNS); err != nil {
			h.fail(err)
			return userNS, exitNoConfin
		}
	}
	if s.Proxy != 0 {
		if err := openProxyListeners(helperProxyFD, s.Proxy, s.Direct); err != nil {
			h.fail(failedStep("the network proxy's listener", err))
			return userNS, exitNoConfin
		}
	}
	return userNS, 0
}

// setUserNSLimits writes limits to /proc/sys/user in the helper's user
// namespace, which must be one of its own (userNS): the files show the
// limits of the opener's user namespace, and in the initial one they are
// the machine's. The fresh /proc is in view by now; the helper holds
// CAP_SYS_RESOURCE in its namespace, which writing them needs.
func setUserNSLimits(limits map[string]int64, userNS bool) error {
	if !userNS {
		return failedStep("capping the kernel budgets", errors.New("the helper is not in a user namespace of its own, where /proc/sys/user would be the machine's"))
	}
	for _, name := range userNSLimitNames {
		v, ok := limits[name]
		if !ok {
			continue
		}
		f, err := os.OpenFile("/proc/sys/user/"+name, os.O_WRONLY, 0)
		if err == nil {
			_, err = f.WriteString(strconv.FormatInt(v, 10))
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			return unsupportedStep("setting /proc/sys/user/"+name+" in the server's user namespace", err)
		}
	}
	return nil
}

// runReduced is the reduced tier, for a host that may not create a user
// namespace: no namespace and no mount at all, so only what needs no
// privilege confines the server (Landlock, seccomp, no_new_privs, the
// scrubbed environment), and the helper, a child subreaper as for an
// unconfined server, ends the server's whole process tree.
func (h *helper) runReduced(s *spec, lifeline *os.File) int {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		h.fail(failedStep("prctl(PR_SET_CHILD_SUBREAPER)", err))
		return exitNoConfin
	}
	abi, err := confinementABI(s)
	if err != nil {
		h.fail(err)
		return exitNoConfin
	}
	helperMark()
	helperMark()
	helperMark()
	return h.confineAndSupervise(s, abi, false, lifeline, false)
}

// confineAndSupervise opens the Landlock rules, starts the server from a
// confined thread and supervises it (for a probe, it reports and returns):
// the last steps of both tiers. inPIDNS says the helper is init of the
// server's PID namespace (the full tier) rather than a subreaper.
func (h *helper) confineAndSupervise(s *spec, abi int, userNS bool, lifeline *os.File, inPIDNS bool) int {
	rules, err := openRules(s)
	if err != nil {
		h.fail(failedStep("opening the paths of the Landlock rules", err))
		return exitNoConfin
	}
	pid, listener, tid, err := startConfined(s, rules, abi, h.cgroupTasks)
	h.confinedTID = tid
	closeFDs(h.cgroupTasks)
	h.cgroupTasks = nil
	if err != nil {
		h.fail(err)
		return exitCodeOf(err)
	}
	if s.Probe {
		unix.Close(listener)
	} else {
		go serveUmask(listener)
	}
	conf := confinement(abi, s, userNS)
	if s.Probe {
		h.send(report{Started: true, Confinement: conf, Trace: startedTrace()})
		return 0
	}
	return h.supervise(pid, conf, lifeline, inPIDNS)
}

// confinementABI returns the Landlock ABI to use for s (the kernel's, or
// s.MaxABI if lower), or why this helper cannot confine at all.
func confinementABI(s *spec) (int, error) {
	abi, err := landlockABI()
	if err != nil {
		return 0, unsupportedStep("landlock", err)
	}
	if s.MaxABI > 0 && abi > s.MaxABI {
		abi = s.MaxABI
	}
	if !seccompSupported {
		return 0, unsupportedStep("seccomp", fmt.Errorf("no filter for GOARCH=%s", runtime.GOARCH))
	}
	return abi, nil
}

// startConfined confines one locked thread and starts the server from it.
// Landlock, seccomp, no_new_privs and the capability sets belong to a
// thread, and this kernel refuses to apply Landlock to all threads at once.
// So one locked thread confines itself and starts the server, which
// inherits all of it; the rest of the helper stays as it was and
// supervises. It closes rules.
//
// The thread joins the cgroups of tasks, if any, first; tid names it.
func startConfined(s *spec, rules []llRule, abi int, tasks []int) (pid, listener, tid int, err error) {
	type result struct {
		pid, listener, tid int
		err                error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		tid := unix.Gettid()
		// Never unlocked: when this goroutine returns, the runtime ends
		// the confined thread instead of running other goroutines on it.
		// That also takes it out of the server's cgroups, which it joins
		// first (cgroup v1 counts threads, and a thread's move of itself
		// waits for no RCU grace period, where a process's does): the
		// server, its child, is born in them, and the rest of the helper
		// never is, so the cgroups are empty as soon as the server's
		// processes and this thread are gone (supervise checks the
		// thread, confinedTID, before it reports the server alone).
		for _, fd := range tasks {
			if _, err := unix.Write(fd, []byte("0")); err != nil {
				done <- result{0, -1, tid, failedStep("joining the server's cgroup", err)}
				return
			}
		}
		pid, listener, err := confineAndStart(s, rules, abi)
		done <- result{pid, listener, tid, err}
	}()
	res := <-done
	closeRules(rules)
	return res.pid, res.listener, res.tid, res.err
}

// threadGone waits up to d for the thread tid of this process to end,
// and reports whether it did.
func threadGone(tid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if err := unix.Tgkill(unix.Getpid(), tid, 0); err == unix.ESRCH {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// exitCodeOf is the helper's exit code for a failure to confine or start.
func exitCodeOf(err error) int {
	var se *stepError
	if errors.As(err, &se) && se.unsupported {
		return exitNoConfin
	}
	return exitNoExec
}

// confineAndStart confines the calling thread, which must be locked, and
// starts the server from it (for a probe, it stops before that). It
// returns the server's pid and the seccomp filter's listener, which the
// helper must serve (serveUmask) for as long as the server runs.
func confineAndStart(s *spec, rules []llRule, abi int) (pid, listener int, err error) {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return 0, -1, unsupportedStep("prctl(PR_SET_NO_NEW_PRIVS)", err)
	}
	if err := dropCapabilities(s.RunAs); err != nil {
		return 0, -1, unsupportedStep("dropping capabilities", err)
	}
	rs, err := newRuleset(abi, s.access())
	if err != nil {
		return 0, -1, unsupportedStep("landlock", err)
	}
	defer rs.close()
	if s.access() == netProxy {
		ports := []int{s.Proxy}
		if s.Direct != nil {
			ports = append(append(ports, dnsPort), s.Direct.Ports...)
		}
		for _, port := range ports {
			if err := rs.allowConnect(port); err != nil {
				return 0, -1, unsupportedStep("landlock", err)
			}
		}
	}
	for _, r := range rules {
		if err := rs.add(r); err != nil {
			return 0, -1, unsupportedStep("landlock", err)
		}
	}
	if err := rs.restrictSelf(); err != nil {
		return 0, -1, unsupportedStep("landlock", err)
	}
	// No file the server creates is world-writable: this sets a umask
	// without S_IWOTH, and the filter keeps a umask(2) from clearing it
	// (see umaskRule). The rest of the host's umask stays. The umask is
	// the process's, the helper's too, which creates no file from here on.
	unix.Umask(unix.Umask(0) | umaskRule)
	// The reduced tier has no mount namespace to keep unix sockets out of
	// reach; below ABI 9 Landlock does not either.
	listener, err = installSeccomp(serverFilter(s, abi))
	if err != nil {
		return 0, -1, unsupportedStep("seccomp", err)
	}
	if s.Probe {
		return 0, listener, nil
	}
	// Limits are a process's, not a thread's: set here, just before the
	// server is forked, they bind the helper too, which forks nothing else.
	for _, l := range serverLimits(s) {
		if err := l.set(); err != nil {
			unix.Close(listener)
			return 0, -1, err
		}
	}
	pid, err = startServer(s)
	if err != nil {
		unix.Close(listener)
		return 0, -1, err
	}
	return pid, listener, nil
}

// serverFilter is the seccomp filter of s's server.
func serverFilter(s *spec, abi int) filterOptions {
	// The reduced tier has no mount namespace to keep unix sockets out of
	// reach; below ABI 9 Landlock does not either.
	return filterOptions{
		net:            s.access(),
		udp:            s.Direct != nil,
		pathUnix:       !s.Reduced || abi >= 9,
		ownProcessOnly: s.Reduced,
		noFSNotify:     s.Reduced,
		ownNetNS:       !s.Reduced,
	}
}

// serverLimit is one resource limit of the server.
type serverLimit struct {
	resource int
	name     string
	value    int64
	// lower says the limit only lowers what the process has: a host
	// whose hard limit is below it keeps its own, which could not be
	// raised.
	lower bool
}

// serverLimits are the rlimits of s's server, those s sets (value > 0).
// The kernel budgets and the file size only lower what the process has.
func serverLimits(s *spec) []serverLimit {
	var out []serverLimit
	for _, l := range []serverLimit{
		{unix.RLIMIT_NPROC, "RLIMIT_NPROC", int64(s.NProc), false}, {unix.RLIMIT_DATA, "RLIMIT_DATA", s.Data, false},
		{unix.RLIMIT_FSIZE, "RLIMIT_FSIZE", s.FileSize, true},
		{unix.RLIMIT_SIGPENDING, "RLIMIT_SIGPENDING", s.SigPending, true}, {unix.RLIMIT_MSGQUEUE, "RLIMIT_MSGQUEUE", s.MsgQueue, true},
		{unix.RLIMIT_MEMLOCK, "RLIMIT_MEMLOCK", s.MemLock, true}, {unix.RLIMIT_NOFILE, "RLIMIT_NOFILE", s.NoFile, true},
	} {
		if l.value > 0 {
			out = append(out, l)
		}
	}
	return out
}

// get returns the limit l sets on the calling process: its value, or
// for a lower limit, the lesser of it and what the process has.
func (l serverLimit) get() (unix.Rlimit, error) {
	lim := unix.Rlimit{Cur: uint64(l.value), Max: uint64(l.value)}
	if l.lower {
		var cur unix.Rlimit
		if err := unix.Prlimit(0, l.resource, nil, &cur); err != nil {
			return lim, unsupportedStep("reading "+l.name, err)
		}
		lim.Cur, lim.Max = min(cur.Cur, lim.Cur), min(cur.Max, lim.Max)
	}
	return lim, nil
}

// set sets l on the calling process.
func (l serverLimit) set() error {
	lim, err := l.get()
	if err != nil {
		return err
	}
	if err := unix.Prlimit(0, l.resource, &lim, nil); err != nil {
		return unsupportedStep("setting "+l.name, err)
	}
	return nil
}

// stepStartServer is the step of the server's fork and exec, by either
// helper: an ELOOP there is the program's own business, not a grant
// swapped for a link (fail).
const stepStartServer = "starting the server"

// startServer forks and execs the server from the calling thread, with the
// helper's stdio and nothing else.
func startServer(s *spec) (int, error) {
	pid, err := syscall.ForkExec(s.Path, s.Argv, &syscall.ProcAttr{
		Dir:   s.Dir,
		Env:   s.Env,
		Files: []uintptr{0, 1, 2},
	})
	if err != nil {
		hint := ""
		if errors.Is(err, syscall.EACCES) && !s.Off {
			hint = " (inside the sandbox: is the program, or a library or interpreter it needs, outside the readable paths? add its directory to read)"
		}
		return 0, failedStep(stepStartServer, fmt.Errorf("exec %s: %w%s", s.Path, err, hint))
	}
	return pid, nil
}

func (h *helper) runOff(s *spec, lifeline *os.File) int {
	// Orphans of the server's process tree (a daemon that double-forked
	// and called setsid) become the helper's children, so that it can
	// find and end them.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		h.fail(failedStep("prctl(PR_SET_CHILD_SUBREAPER)", err))
		return exitNoConfin
	}
	helperMark()
	helperMark()
	helperMark()
	pid, err := startServer(s)
	if err != nil {
		h.fail(err)
		return exitNoExec
	}
	return h.supervise(pid, "none", lifeline, false)
}

// supervise is the helper's life after the server started: it is init of
// the PID namespace (or, unconfined, a subreaper). It forwards SIGTERM and
// SIGINT to the server, reaps every orphan, ends everything when the host
// closes or loses the lifeline, and when the server exits it ends the rest
// of the server's processes, reports how the server ended and exits with
// the server's status.
func (h *helper) supervise(server int, conf string, lifeline *os.File, confined bool) int {
	// Only the server, its children and the host hold stdin and stdout
	// now: the host sees EOF on stdout once the server's side is done.
	nullStdio()
	// A pidfd names the server even after its pid is reaped and reused.
	pidfd, err := unix.PidfdOpen(server, 0)
	if err != nil {
		unix.Kill(server, unix.SIGKILL)
		h.fail(failedStep("pidfd_open", err))
		return exitNoConfin
	}
	// The relay first, then the report: once Start returns, a SIGTERM
	// to the helper reaches the server (before Notify, the runtime's
	// default for it would end the helper, and with it the namespace).
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	h.send(report{Started: true, Confinement: conf, Trace: startedTrace()})
	go func() {
		for sig := range sigs {
			unix.PidfdSendSignal(pidfd, sig.(syscall.Signal), nil, 0)
		}
	}()
	go func() {
		// The host never writes after the spec and keeps its end open
		// for as long as it wants the server: EOF means it closed it
		// (Close) or died.
		io.Copy(io.Discard, lifeline)
		if confined {
			killNamespace()
		} else {
			unix.PidfdSendSignal(pidfd, unix.SIGKILL, nil, 0)
		}
	}()

	var ws unix.WaitStatus
	for {
		pid, err := unix.Wait4(-1, &ws, 0, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			// ECHILD while the server is unreaped cannot happen; if it
			// does, there is nothing left to wait for.
			h.send(report{Exit: "unknown: " + err.Error()})
			return exitNoExec
		}
		if pid == server {
			break
		}
	}
	exitMarks := traceMarks(nil)
	// No signal.Stop: its handshake with the runtime's signal loop took
	// 0.25–0.3 ms of every Close (measured). A SIGTERM or SIGINT from
	// now on is still relayed, to the pidfd of a reaped process, which
	// does nothing, and the helper goes on to report and exit.
	// End what the server left behind and reap it all before reporting:
	// an exit report that says "alone" tells the host that every process
	// of the server is gone, so it need not wait for the kernel to tear
	// the namespaces down (a millisecond or two).
	var alone bool
	if confined {
		alone = reapNamespace(helperReapLimit)
	} else {
		alone = killDescendants(helperReapLimit)
	}
	exitMarks = traceMarks(exitMarks)
	if alone && h.confinedTID != 0 {
		// The thread that confined itself to fork the server ended right
		// after, nearly always long ago. "Alone" also tells the host that
		// the server's cgroups are empty (spec.CgroupsSelf: the thread
		// joined them) and its uid free (the thread ran as it): make
		// sure, or let the host wait for this process's exit.
		alone = threadGone(h.confinedTID, 2*time.Second)
	}
	if alone {
		// Nothing of the server is left to write to stderr, and the host
		// waits for its EOF: let go of the helper's copy too.
		nullFD(2)
	}
	exitMarks = traceMarks(exitMarks)
	h.send(report{Exit: describeWait(ws), Alone: alone, Trace: joinMarks(exitMarks)})
	return exitCode(ws)
}

// helperReapLimit bounds how long the helper, once the server exited,
// waits for the rest of the server's processes to be reaped before it
// reports the exit without "alone".
const helperReapLimit = 5 * time.Second

// reapNamespace kills every other process of the PID namespace and reaps
// them, reporting whether it saw the last one go within limit. As init,
// the helper inherits every orphan, so no child left means no process
// left.
func reapNamespace(limit time.Duration) bool {
	killNamespace()
	// Most servers leave nothing: say so without a goroutine and a timer
	// (about 0.04 ms of Close, measured).
	if _, err := unix.Wait4(-1, nil, unix.WNOHANG, nil); err == unix.ECHILD {
		return true
	}
	done := make(chan bool, 1)
	go func() {
		for {
			_, err := unix.Wait4(-1, nil, 0, nil)
			switch err {
			case nil, unix.EINTR:
				continue
			case unix.ECHILD:
				done <- true
			default:
				done <- false
			}
			return
		}
	}()
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case ok := <-done:
		return ok
	case <-t.C:
		return false
	}
}

// killNamespace kills every other process of the helper's PID namespace.
// kill(-1) means that only for init of the namespace; for anyone else it
// means every process it may signal, so it is refused unless this is pid 1.
func killNamespace() {
	if os.Getpid() == 1 {
		unix.Kill(-1, unix.SIGKILL)
	}
}

// nullStdio points the helper's stdin and stdout at /dev/null. Its stderr
// stays, for the Go runtime to report a crash.
func nullStdio() {
	nullFD(0)
	nullFD(1)
}

// nullFD points descriptor fd at /dev/null.
func nullFD(fd int) {
	null, err := unix.Open("/dev/null", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	unix.Dup3(null, fd, 0)
	unix.Close(null)
}

// describeWait says how a process ended, in the words of
// os.ProcessState.String.
func describeWait(ws unix.WaitStatus) string {
	switch {
	case ws.Exited():
		return "exit status " + strconv.Itoa(ws.ExitStatus())
	case ws.Signaled():
		s := "signal: " + ws.Signal().String()
		if ws.CoreDump() {
			s += " (core dumped)"
		}
		return s
	}
	return fmt.Sprintf("wait status %#x", uint32(ws))
}

// exitCode is the helper's exit code for a server that ended as ws.
func exitCode(ws unix.WaitStatus) int {
	switch {
	case ws.Exited():
		return ws.ExitStatus()
	case ws.Signaled():
		return 128 + int(ws.Signal())
	}
	return exitNoExec
}

// killDescendants kills every descendant of the helper and reaps them,
// reporting whether it saw the last one go within limit. Used without a
// PID namespace, where nothing else ends a daemon the server left behind:
// as a subreaper the helper inherits every orphan, so repeating "kill all
// descendants, reap" until it has no child left ends them all, even ones
// forking meanwhile.
func killDescendants(limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	self := os.Getpid()
	for {
		reapAvailable()
		// No child left means no descendant left: an orphan would have
		// become the helper's child.
		var ws unix.WaitStatus
		if _, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil); err == unix.ECHILD {
			return true
		}
		for _, pid := range descendants(self) {
			unix.Kill(pid, unix.SIGKILL)
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
}

// reapAvailable reaps every child that has already exited.
func reapAvailable() {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil || pid <= 0 {
			return
		}
	}
}

// descendants returns the pids of every process below root, found by
// reading the parent pid of every process in /proc.
func descendants(root int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := make(map[int][]int)
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // exited meanwhile
		}
		ppid, err := parseStatPPid(bytes.TrimSpace(b))
		if err != nil {
			continue
		}
		children[ppid] = append(children[ppid], pid)
	}
	var out []int
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// helperTraceWanted says the spec asked for the helper's timestamps.
var helperTraceWanted bool

// startedTrace marks the server started and returns the helper's
// timestamps for the Started report, or "" when they were not asked for.
func startedTrace() string {
	if !helperTraceWanted {
		return ""
	}
	helperMark()
	return joinMarks(helperTrace)
}

// traceMarks appends now to marks when the spec asked for timestamps: the
// Exit report's are the server's exit seen, the rest of its processes
// reaped, and its confining thread seen gone.
func traceMarks(marks []int64) []int64 {
	if !helperTraceWanted {
		return nil
	}
	return append(marks, monoNow())
}

// joinMarks is a report's Trace: the timestamps in decimal, separated by
// spaces.
func joinMarks(marks []int64) string {
	var b strings.Builder
	for i, t := range marks {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.FormatInt(t, 10))
	}
	return b.String()
}
