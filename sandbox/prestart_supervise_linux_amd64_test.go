package sandbox

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestSupervisorWords: the entry's supervisor says how the server ended in
// the words of the Go helper's supervise (describeWait), for every kind of
// wait status: exits, deaths by each signal with and without a core, and
// a status that is neither. (Its exit code is supervise's own exitCode.)
func TestSupervisorWords(t *testing.T) {
	var statuses []unix.WaitStatus
	for code := 0; code < 256; code++ {
		statuses = append(statuses, unix.WaitStatus(code<<8))
	}
	for sig := 1; sig < 65; sig++ {
		statuses = append(statuses, unix.WaitStatus(sig), unix.WaitStatus(sig|0x80))
	}
	statuses = append(statuses, 0x137f, 0xffff, 0x7f)
	for _, ws := range statuses {
		psReportLen = 0
		psDescribeWait(ws)
		got := string(psReport[:psReportLen])
		if want := describeWait(ws); got != want {
			t.Errorf("status %#x: the entry says %q, supervise %q", uint32(ws), got, want)
		}
	}
	psReportLen = 0
}

// TestSupervisorReport: what the supervisor writes parses as the report
// supervise sends.
func TestSupervisorReport(t *testing.T) {
	for _, tt := range []struct {
		ws    unix.WaitStatus
		alone bool
		marks []int64
	}{
		{0, true, nil},
		{unix.WaitStatus(3 << 8), false, []int64{1, 2, 3}},
		{unix.WaitStatus(unix.SIGKILL), true, []int64{9223372036854775807, 0, 12}},
	} {
		psReportLen = 0
		psWrite(`{"exit":"`)
		psDescribeWait(tt.ws)
		psWrite(`"`)
		if tt.alone {
			psWrite(`,"alone":true`)
		}
		if tt.marks != nil {
			psWriteMarks(tt.marks)
		}
		psWrite("}\n")
		line := psReport[:psReportLen]
		r, err := parseReport(line[:len(line)-1])
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		want := report{Exit: describeWait(tt.ws), Alone: tt.alone}
		if tt.marks != nil {
			want.Trace = joinMarks(tt.marks)
		}
		if r != want {
			t.Errorf("%q parsed as %+v, want %+v", line, r, want)
		}
	}
	psReportLen = 0
}

// testPlan is a plan as buildPlan lays it out, with every section used.
func testPlan(t testing.TB) ([]byte, planContent) {
	c := planContent{
		sp: &spec{
			Path: "/usr/bin/server", Dir: "/work/tree",
			Argv:  []string{"server", "--flag", ""},
			Env:   []string{"PATH=/usr/bin", "HOME=/home/u"},
			RunAs: 65534, Trace: true,
		},
		nTasks: 2,
		limits: []planLimit{{Resource: unix.RLIMIT_NOFILE, Cur: 1024, Max: 4096}, {Resource: unix.RLIMIT_NPROC, Cur: 64, Max: 64}},
		filter: []unix.SockFilter{{Code: 6, K: 0x7fff0000}, {Code: 0x20, K: 4}},
		late: []lateRule{
			{planLate{Access: llFileRights, MustExist: 1}, "/proc/self/fd"},
			{planLate{Access: 1}, "/proc/cpuinfo"},
		},
		conf: `landlock "v7" + seccomp`,
		join: true,
	}
	b, err := encodePlan(c)
	if err != nil {
		t.Fatal(err)
	}
	return b, c
}

// loadPlan puts b where the entry receives a plan, with nfds descriptors.
func loadPlan(b []byte, nfds int) {
	clear(prestartBuf[:])
	copy(planBytes(), b)
	prestartNFDs = nfds
}

// TestPlanRoundTrip: what encodePlan lays out, the entry's checkPlan
// accepts and reads back as it was given: argv and the environment as
// execve takes them, the path, the directory, the limits, the filter, the
// masks, the late rules and the Started report's beginning.
func TestPlanRoundTrip(t *testing.T) {
	b, c := testPlan(t)
	defer loadPlan(nil, 0)
	loadPlan(b, planTasksFD+c.nTasks)
	if !checkPlan() {
		t.Fatal("checkPlan refused encodePlan's plan")
	}
	h := planHead()
	if h.Flags != planTrace|planJoinWait || h.RunAs != 65534 {
		t.Errorf("flags %#x, run as %d", h.Flags, h.RunAs)
	}
	str := func(p *byte) string {
		if p == nil {
			return "<nil>"
		}
		return unsafe.String(p, bytes.IndexByte(unsafe.Slice(p, planMaxLen), 0))
	}
	list := func(k int) []string {
		var ss []string
		for ; prestartPtrs[k] != nil; k++ {
			ss = append(ss, str(prestartPtrs[k]))
		}
		return ss
	}
	if got := list(prestartArgv); !slices.Equal(got, c.sp.Argv) {
		t.Errorf("argv %q, want %q", got, c.sp.Argv)
	}
	if got := list(prestartEnv); !slices.Equal(got, c.sp.Env) {
		t.Errorf("environment %q, want %q", got, c.sp.Env)
	}
	if got := prestartPath(); got != c.sp.Path {
		t.Errorf("path %q, want %q", got, c.sp.Path)
	}
	if got := str(cstr(h.OffDir)); got != c.sp.Dir {
		t.Errorf("directory %q, want %q", got, c.sp.Dir)
	}
	limits := unsafe.Slice((*planLimit)(unsafe.Pointer(planAt(h.OffLimits, 0))), h.NLimits)
	if !slices.Equal(limits, c.limits) {
		t.Errorf("limits %+v, want %+v", limits, c.limits)
	}
	filter := unsafe.Slice((*unix.SockFilter)(unsafe.Pointer(planAt(h.OffFilter, 0))), h.NFilter)
	if !slices.Equal(filter, c.filter) {
		t.Errorf("filter %+v, want %+v", filter, c.filter)
	}
	var masks []string
	for i, off := uint32(0), h.OffMasks; i < h.NMasks; i, off = i+1, nextStr(off) {
		masks = append(masks, str(cstr(off)))
	}
	var want []string
	for _, name := range procMasked {
		want = append(want, "/proc/"+name)
	}
	if !slices.Equal(masks, want) {
		t.Errorf("masks %q, want %q", masks, want)
	}
	if h.NLate != uint32(len(c.late)) {
		t.Fatalf("%d late rules, want %d", h.NLate, len(c.late))
	}
	for i, l := range c.late {
		got := planLateAt(uint32(i))
		if got.Access != l.Access || got.MustExist != l.MustExist || str(cstr(got.Path)) != l.path {
			t.Errorf("late rule %d: %+v %q, want %+v %q", i, *got, str(cstr(got.Path)), l.planLate, l.path)
		}
	}
	started := string(unsafe.Slice(planAt(h.OffStarted, uint64(h.LenStarted)), h.LenStarted)) + "}"
	r, err := parseReport([]byte(started))
	if err != nil || !r.Started || r.Confinement != c.conf {
		t.Errorf("the Started report %q: %+v, %v", started, r, err)
	}
	// Counts whose size in bytes wraps 32 bits to a few bytes are
	// refused: the child would read limits, or runPlan rules, past the
	// plan's end.
	for _, tt := range []struct {
		name string
		set  func(h *planHeader)
	}{
		{"limits", func(h *planHeader) { h.NLimits = uint32(1<<32/unsafe.Sizeof(planLimit{})) + 1 }},
		{"late rules", func(h *planHeader) { h.NLate = uint32(1<<32/unsafe.Sizeof(planLate{})) + 1 }},
	} {
		loadPlan(b, planTasksFD+c.nTasks)
		tt.set(planHead())
		if checkPlan() {
			t.Errorf("checkPlan accepted a count of %s whose size wraps", tt.name)
		}
	}
	// A header that receivePlan refused (longer than the buffer) leaves
	// the Go helper's question for the program's path answerable.
	loadPlan(b, planTasksFD+c.nTasks)
	planHead().Len = uint32(len(prestartBuf)*8) + 8
	if got := prestartPath(); got != "" {
		t.Errorf("prestartPath of a plan longer than the buffer: %q", got)
	}
	// One descriptor short, or a plan cut short, is refused.
	loadPlan(b, planTasksFD+c.nTasks-1)
	if checkPlan() {
		t.Error("checkPlan accepted a plan without all its descriptors")
	}
	loadPlan(b, planTasksFD+c.nTasks)
	planHead().Len--
	if checkPlan() {
		t.Error("checkPlan accepted a plan one byte short")
	}
}

// FuzzCheckPlan: the entry's reading of a plan, which runs with no
// runtime to catch a panic, never panics, and a plan it accepts has
// everything runPlan and prestartChild read of it within it.
func FuzzCheckPlan(f *testing.F) {
	b, c := testPlan(f)
	f.Add(b, uint8(c.nTasks))
	f.Add(b[:len(b)/2], uint8(c.nTasks))
	f.Add([]byte{}, uint8(0))
	defer loadPlan(nil, 0)
	f.Fuzz(func(t *testing.T, b []byte, tasks uint8) {
		if len(b) > planMaxLen {
			return
		}
		loadPlan(b, planTasksFD+int(tasks%planMaxRights))
		if len(b) >= int(unsafe.Sizeof(planHeader{})) {
			// Cut the plan where its header says it ends, as receivePlan
			// reads it; a header longer than what arrived is refused there.
			if h := planHead(); int(h.Len) > len(b) {
				h.Len = uint32(len(b))
			}
		}
		if !checkPlan() {
			return
		}
		h := planHead()
		end := uintptr(unsafe.Pointer(&planBytes()[0])) + uintptr(h.Len)
		within := func(p *byte, n uintptr) {
			if p == nil || uintptr(unsafe.Pointer(p))+n > end {
				t.Fatalf("a read of %d bytes at %p is outside the plan (ends at %#x)", n, p, end)
			}
		}
		for _, k := range []int{prestartArgv, prestartEnv} {
			for ; prestartPtrs[k] != nil; k++ {
				within(prestartPtrs[k], 1)
			}
		}
		within(cstr(h.OffPath), 1)
		within(cstr(h.OffDir), 1)
		for i := uint32(0); i < h.NLimits; i++ {
			within(planAt(h.OffLimits+i*uint32(unsafe.Sizeof(planLimit{})), uint64(unsafe.Sizeof(planLimit{}))), unsafe.Sizeof(planLimit{}))
		}
		within(planAt(h.OffFilter, 0), uintptr(h.NFilter)*unsafe.Sizeof(unix.SockFilter{}))
		for i := uint32(0); i < h.NLate; i++ {
			l := planLateAt(i)
			within((*byte)(unsafe.Pointer(l)), unsafe.Sizeof(planLate{}))
			within(cstr(l.Path), 1)
		}
		if h.LenStarted > 0 {
			within(planAt(h.OffStarted, uint64(h.LenStarted)), uintptr(h.LenStarted))
		}
		_ = prestartPath()
	})
}

// TestPrestartChildKilled: a server's process killed after its
// confinement and before its exec fails the start, naming the step and
// how it ended; it is not reported started. (The plan's filter here kills
// the process at its chdir, the step before execve.)
func TestPrestartChildKilled(t *testing.T) {
	requireConfinement(t)
	if !dropsRoot() || !detachedTreesWork() || !prestartWanted() {
		t.Skip("the prestart runs only on a root host whose kernel mounts detached trees")
	}
	testPlanFilter = func(f []unix.SockFilter) []unix.SockFilter {
		return append([]unix.SockFilter{
			{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0}, // the call's number
			{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 0, Jf: 1, K: unix.SYS_CHDIR},
			{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_KILL_PROCESS},
		}, f...)
	}
	defer func() { testPlanFilter = nil }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := Start(ctx, Config{Name: "killed", Argv: []string{hostilePath()}, Worktree: t.TempDir(),
		HostEnv: []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}})
	if err == nil {
		p.Close(time.Second)
		t.Fatal("Start reported started a server whose process died before its exec")
	}
	t.Log(err)
	for _, want := range []string{"starting the server", "before its exec", "signal: bad system call"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Start: %v; want it to say %q", err, want)
		}
	}
}
