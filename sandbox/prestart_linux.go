package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The prestart: a root host's helper starts and supervises the server
// without its own Go runtime.
//
// A Go program's runtime takes 1.3–1.8 ms to start, and the helper's came
// before anything else of a start. Where the host builds the server's
// root (hostRoot), what is left for the helper to do before the server's
// exec is a short list of system calls, and the host can prepare every
// argument of them: the root tree, a Landlock ruleset with its rules
// opened through that tree, the seccomp program, the limits, the argv and
// the environment. It sends them as a plan: a fixed header and flat data,
// with the descriptors, ahead of the spec. The embedded helper program's
// entry point (prestartEntry, linked with -E on amd64) runs the plan
// before the runtime starts: it attaches the root, mounts /proc, pivots,
// masks /proc, adds the /proc rules, and vforks the server, which joins
// its cgroups, sets its limits, drops its capabilities and uid, restricts
// itself with Landlock and seccomp and execs. The entry then supervises
// the server itself (prestartSupervise: supervise's duties in raw system
// calls on one ppoll) and exits with the server's status: the Go runtime
// starts only to report a failure the entry recorded (runPrestarted).
//
// Every step is one the Go helper takes too, with the same arguments; the
// tests run the whole start suite through both. One order differs: the
// child sets its limits before it drops its uid, so that a uid already at
// its process limit fails the exec as the Go helper's fork would, and so
// while it still holds its capabilities; planLimits refuses a hard limit
// above the host's, which the Go helper could not set either.
// Where a step fails, the entry records which and its errno, and the Go
// helper reports it as its own steps' failures read.

// planMagic begins a plan; a spec begins with specMagic, and the entry,
// which peeks, leaves a spec to the Go helper.
var planMagic = [4]byte{'M', 'C', 'P', 'X'}

// prestartWanted says a start may use the prestart where it can; the
// tests turn it off (go test ./sandbox -args -go-helper) to run the same
// starts through the Go helper's steps.
var prestartWanted = func() bool { return prestartSupported }

// helperPlanArg is the helper's second argument when the host may send a
// plan: only then does the entry look for one.
const helperPlanArg = "plan"

// Bounds of a plan, which the entry holds in static memory.
const (
	planMaxLen    = 1 << 20 // bytes, the header included
	planMaxPtrs   = 8192    // argv and environment entries, with their two nils
	planMaxRights = 16      // descriptors: root, ruleset, masks, cgroups
	planMaxMarks  = 7       // the entry's trace marks
	// planMaxStarted bounds the Started report's beginning, which the
	// entry writes from the plan.
	planMaxStarted = 4096
)

// Flags of planHeader.Flags.
const (
	planTrace    = 1 << 0 // the Started report carries the trace
	planJoinWait = 1 << 1 // wait for cgroupJoined before the server's start
)

// planHeader begins a plan. Offsets are from the start of the plan;
// strings are NUL-terminated, lists of them back to back. Host and entry
// are the same source built for the same architecture, so the layout is
// shared, not encoded.
type planHeader struct {
	Magic   [4]byte
	Len     uint32 // the whole plan
	Flags   uint32
	RunAs   uint32
	NTasks  uint32 // cgroup tasks files, the descriptors after the first three
	NLimits uint32
	NFilter uint32 // seccomp instructions
	NArgv   uint32
	NEnv    uint32
	NMasks  uint32
	NLate   uint32

	OffLimits  uint32 // NLimits planLimit
	OffFilter  uint32 // NFilter unix.SockFilter
	OffPath    uint32
	OffDir     uint32
	OffArgv    uint32
	OffEnv     uint32
	OffMasks   uint32 // /proc paths to cover
	OffLate    uint32 // NLate planLate
	OffStarted uint32 // the Started report, encoded, without its closing brace
	LenStarted uint32
}

// The plan's descriptors, in the order they come.
const (
	planRootFD    = iota // the new root, detached
	planRulesetFD        // the Landlock ruleset, rules added but /proc's
	planMaskFD           // maskSource
	planTasksFD          // the first of NTasks cgroup tasks files
)

// planLimit is one resource limit, as prlimit64 takes it.
type planLimit struct {
	Resource uint32
	_        uint32
	Cur, Max uint64
}

// planLate is a Landlock rule on a path that exists only once the entry
// mounted /proc: opened then, without following links, and added to the
// ruleset (Access is already within what it handles).
type planLate struct {
	Access    uint64
	Path      uint32 // offset of the path
	MustExist uint32
}

// Steps of the prestart, as the entry records the one that failed.
const (
	psNone = iota
	psSpec
	psPID
	psPrivate
	psAttach
	psProc
	psPivot
	psDetach
	psMask
	psLate
	psJoin
	psClone
	psCgroup
	psNoNewPrivs
	psCaps
	psLandlock
	psSeccomp
	psLimits
	psExec
	psPidfd
	psSignalFD
	psKilled // the child ended before its exec in step KilledIn, as Status says
)

// prestartSteps name the steps, as the Go helper's own failures do, and
// say whether a failure means the kernel refuses what confinement needs.
var prestartSteps = [...]struct {
	name        string
	unsupported bool
}{
	psSpec:       {"reading the plan", false},
	psPID:        {"pid namespace", true},
	psPrivate:    {"making mounts private", true},
	psAttach:     {"mounting the new root", true},
	psProc:       {"mounting a fresh /proc", true},
	psPivot:      {"pivot_root", true},
	psDetach:     {"detaching the host's tree", true},
	psMask:       {"masking /proc", true},
	psLate:       {"opening the paths of the Landlock rules", false},
	psJoin:       {"joining the server's cgroups", false},
	psClone:      {stepStartServer, false},
	psCgroup:     {"joining the server's cgroup", false},
	psNoNewPrivs: {"prctl(PR_SET_NO_NEW_PRIVS)", true},
	psCaps:       {"dropping capabilities", true},
	psLandlock:   {"landlock", true},
	psSeccomp:    {"seccomp", true},
	psLimits:     {"setting the server's limits", true},
	psExec:       {stepStartServer, false},
	psPidfd:      {"pidfd_open", false},
	psSignalFD:   {"taking signals on a signalfd", false},
	psKilled:     {stepStartServer, false},
}

// prestartResult is what the entry leaves for the Go helper, in static
// memory the runtime's start does not touch.
type prestartResult struct {
	// Tried says the entry found a plan and ran it; then either Step and
	// Errno say what failed, or the server runs as Pid and Listener is
	// its seccomp filter's listener.
	Tried    bool
	Trace    bool // the plan asked for the trace
	Step     int
	Errno    uintptr
	Pid      int
	Listener int
	// KilledIn and Status, with Step psKilled: the step the child was in
	// and how it ended.
	KilledIn int
	Status   uint32
	// Marks are the entry's timestamps, CLOCK_MONOTONIC (prestartPhases).
	Marks [planMaxMarks]int64
	// Looked says the entry looked for a plan (the helper's argv asked
	// it to), and what its look at the socket found: the Go helper's
	// error says so when what followed was no spec either.
	Looked           bool
	PeekErrno, PeekN uintptr
	Peeked           [4]byte
}

// prestartPhases name the intervals that end at the entry's marks, the
// first measured from the host's exec of the helper, and the last, from
// the server's exec until the entry relays signals and reports the server
// started (helperPhases for the Go helper's).
var prestartPhases = []string{"helper-exec", "helper-plan", "helper-root", "helper-pivot", "helper-join-wait", "helper-confine-exec", "helper-report"}

// err is the failure r records, as the Go helper's steps word theirs.
func (r *prestartResult) err(path string) error {
	if r.Step <= psNone || r.Step >= len(prestartSteps) {
		return failedStep("the prestart", fmt.Errorf("unknown step %d", r.Step))
	}
	st := prestartSteps[r.Step]
	var err error = unix.Errno(r.Errno)
	switch r.Step {
	case psExec:
		hint := ""
		if r.Errno == uintptr(unix.EACCES) {
			hint = " (inside the sandbox: is the program, or a library or interpreter it needs, outside the readable paths? add its directory to read)"
		}
		if path == "" {
			path = "the server"
		}
		err = fmt.Errorf("exec %s: %w%s", path, err, hint)
	case psPID:
		err = errors.New("the helper is not pid 1")
	case psKilled:
		// Named by the step it was in; whatever killed it, the kernel did
		// not refuse a layer.
		if r.KilledIn > psNone && r.KilledIn < len(prestartSteps) {
			st = prestartSteps[r.KilledIn]
		}
		st.unsupported = false
		err = fmt.Errorf("the server's process ended before its exec: %s", describeWait(unix.WaitStatus(r.Status)))
	case psSpec:
		if r.Errno == 0 {
			err = errors.New("a malformed plan")
		}
	}
	if st.unsupported {
		return unsupportedStep(st.name, err)
	}
	return failedStep(st.name, err)
}

// prestartPlan is a plan ready to send, and its descriptors, which the
// host closes once it is sent.
type prestartPlan struct {
	payload []byte
	fds     []int
}

// close closes the plan's descriptors; a nil plan has none.
func (pl *prestartPlan) close() {
	if pl != nil {
		closeFDs(pl.fds)
		pl.fds = nil
	}
}

// planLimits are the limits of sp's server, as the entry's child sets
// them. It still holds every capability then, and so could raise a hard
// limit above the host's, which the Go helper, having dropped them,
// cannot: such a limit is refused here, and the Go helper refuses the
// start in its own words.
func planLimits(sp *spec) ([]planLimit, error) {
	var limits []planLimit
	for _, l := range serverLimits(sp) {
		lim, err := l.get()
		if err != nil {
			return nil, err
		}
		var host unix.Rlimit
		if err := unix.Prlimit(0, l.resource, nil, &host); err != nil {
			return nil, unsupportedStep("reading "+l.name, err)
		}
		if lim.Max > host.Max {
			return nil, fmt.Errorf("%s of %d is above the host's hard limit, %d", l.name, lim.Max, host.Max)
		}
		limits = append(limits, planLimit{Resource: uint32(l.resource), Cur: lim.Cur, Max: lim.Max})
	}
	return limits, nil
}

// buildPlan prepares what the helper's entry needs to start sp's server,
// whose root the host built (sp.Root): the Landlock ruleset with every
// rule but those under /proc, the masks' source, the cgroups' tasks files
// for a self join, the filter, the limits and the Started report. join
// says the helper waits for cgroupJoined first.
func buildPlan(sp *spec, join bool) (pl *prestartPlan, err error) {
	// What the entry does not do, the Go helper does.
	switch {
	case !sp.Root || sp.rootFile == nil:
		return nil, errors.New("no host-built root")
	case sp.Off, sp.Reduced, sp.Probe:
		return nil, errors.New("not a confined server's start")
	case sp.Proxy != 0:
		return nil, errors.New("a network proxy's listeners")
	case len(sp.UserNSLimits) > 0:
		return nil, errors.New("limits of a user namespace")
	}
	pl = &prestartPlan{}
	defer func() {
		if err != nil {
			pl.close()
			pl = nil
		}
	}()
	abi, err := confinementABI(sp)
	if err != nil {
		return nil, err
	}
	// The root is first, and the caller's: dup it so that every
	// descriptor of the plan is the plan's to close.
	root, err := unix.FcntlInt(sp.rootFile.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	pl.fds = append(pl.fds, root)
	rs, err := newRuleset(abi, sp.access())
	if err != nil {
		return nil, unsupportedStep("landlock", err)
	}
	pl.fds = append(pl.fds, rs.fd)
	var late []lateRule
	for _, g := range ruleGrants(sp) {
		if isUnder(g.path, "/proc") {
			// The entry mounts /proc and opens these then.
			must := uint32(0)
			if g.mustExist {
				must = 1
			}
			late = append(late, lateRule{planLate{Access: g.access & rs.handled, MustExist: must}, g.path})
			continue
		}
		r, ok, err := openRule(root, unix.RESOLVE_IN_ROOT, g)
		if err != nil {
			return nil, failedStep("opening the paths of the Landlock rules", err)
		}
		if !ok {
			continue
		}
		err = rs.add(r)
		unix.Close(r.fd)
		if err != nil {
			return nil, unsupportedStep("landlock", err)
		}
	}
	mask, err := maskSource()
	if err != nil {
		return nil, unsupportedStep("masking /proc", err)
	}
	pl.fds = append(pl.fds, mask)
	if sp.CgroupsSelf {
		tasks, err := openTasks(sp.Cgroups)
		if err != nil {
			return nil, failedStep("opening the server's cgroups", err)
		}
		pl.fds = append(pl.fds, tasks...)
	}
	if len(pl.fds) > planMaxRights {
		return nil, fmt.Errorf("%d descriptors, at most %d", len(pl.fds), planMaxRights)
	}
	limits, err := planLimits(sp)
	if err != nil {
		return nil, err
	}
	filter := seccompProgram(serverFilter(sp, abi))
	if testPlanFilter != nil {
		filter = testPlanFilter(filter)
	}
	pl.payload, err = encodePlan(planContent{
		sp:     sp,
		nTasks: len(pl.fds) - planTasksFD,
		limits: limits,
		filter: filter,
		late:   late,
		conf:   confinement(abi, sp, false),
		join:   join,
	})
	if err != nil {
		return nil, err
	}
	return pl, nil
}

// lateRule is a planLate and its path.
type lateRule struct {
	planLate
	path string
}

// testPlanFilter, set by a test, changes the server's filter in the plan
// (TestPrestartChildKilled); nil otherwise.
var testPlanFilter func([]unix.SockFilter) []unix.SockFilter

// planContent is what encodePlan lays out: sp's program, directory, argv,
// environment, run-as uid and trace flag, and what buildPlan prepared.
type planContent struct {
	sp     *spec
	nTasks int // cgroup tasks descriptors that come with the plan
	limits []planLimit
	filter []unix.SockFilter
	late   []lateRule
	conf   string // the Started report's confinement
	join   bool   // wait for cgroupJoined
}

// encodePlan lays c out as the entry reads it (planHeader).
func encodePlan(c planContent) ([]byte, error) {
	sp := c.sp
	h := planHeader{
		Magic:   planMagic,
		RunAs:   sp.RunAs,
		NTasks:  uint32(c.nTasks),
		NLimits: uint32(len(c.limits)),
		NFilter: uint32(len(c.filter)),
		NArgv:   uint32(len(sp.Argv)),
		NEnv:    uint32(len(sp.Env)),
		NMasks:  uint32(len(procMasked)),
		NLate:   uint32(len(c.late)),
	}
	if sp.Trace {
		h.Flags |= planTrace
	}
	if c.join {
		h.Flags |= planJoinWait
	}
	if len(sp.Argv)+len(sp.Env)+2 > planMaxPtrs {
		return nil, fmt.Errorf("%d arguments and environment variables, at most %d", len(sp.Argv)+len(sp.Env), planMaxPtrs-2)
	}
	if len(c.filter) == 0 || len(c.filter) > 0xffff {
		return nil, fmt.Errorf("a seccomp program of %d instructions", len(c.filter))
	}
	var b bytes.Buffer
	b.Write(make([]byte, unsafe.Sizeof(h)))
	// at aligns the next section to 8 bytes and returns its offset.
	at := func() uint32 {
		for b.Len()%8 != 0 {
			b.WriteByte(0)
		}
		return uint32(b.Len())
	}
	strs := func(ss ...string) error {
		for _, s := range ss {
			if strings.IndexByte(s, 0) >= 0 {
				return fmt.Errorf("a NUL byte in %q", s)
			}
			b.WriteString(s)
			b.WriteByte(0)
		}
		return nil
	}
	h.OffLimits = at()
	for _, l := range c.limits {
		b.Write(unsafe.Slice((*byte)(unsafe.Pointer(&l)), unsafe.Sizeof(l)))
	}
	h.OffFilter = at()
	b.Write(unsafe.Slice((*byte)(unsafe.Pointer(&c.filter[0])), len(c.filter)*int(unsafe.Sizeof(c.filter[0]))))
	h.OffPath = at()
	err := strs(sp.Path)
	h.OffDir = at()
	err = errors.Join(err, strs(sp.Dir))
	h.OffArgv = at()
	err = errors.Join(err, strs(sp.Argv...))
	h.OffEnv = at()
	err = errors.Join(err, strs(sp.Env...))
	h.OffMasks = at()
	for _, name := range procMasked {
		err = errors.Join(err, strs("/proc/"+name))
	}
	paths := make([]uint32, len(c.late))
	for i, l := range c.late {
		paths[i] = at()
		err = errors.Join(err, strs(l.path))
	}
	if err != nil {
		return nil, err
	}
	h.OffLate = at()
	for i, l := range c.late {
		pl := l.planLate
		pl.Path = paths[i]
		b.Write(unsafe.Slice((*byte)(unsafe.Pointer(&pl)), unsafe.Sizeof(pl)))
	}
	// The entry appends the trace, if any, and the closing brace.
	started := encodeReport(report{Started: true, Confinement: c.conf})
	started = bytes.TrimSuffix(started, []byte("}\n"))
	if len(started) > planMaxStarted {
		return nil, fmt.Errorf("a Started report of %d bytes, at most %d", len(started), planMaxStarted)
	}
	h.OffStarted = at()
	h.LenStarted = uint32(len(started))
	b.Write(started)
	h.Len = uint32(b.Len())
	if b.Len() > planMaxLen {
		return nil, fmt.Errorf("a plan of %d bytes, at most %d", b.Len(), planMaxLen)
	}
	payload := b.Bytes()
	copy(payload, unsafe.Slice((*byte)(unsafe.Pointer(&h)), unsafe.Sizeof(h)))
	return payload, nil
}
