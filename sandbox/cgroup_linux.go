package sandbox

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/mcphost/mcphost/internal/bytesize"
	"golang.org/x/sys/unix"
)

// cgroupRoot is where cgroup file systems are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// cgroup is the cgroup (v2) or pair of cgroups (v1: pids and memory) the
// host made for one server. The server is born in them (v1: the helper's
// thread that forks it joins them first, spec.CgroupsSelf; v2: the host
// moves the helper into them before it forks the server), so every
// process of the server is counted from its first.
type cgroup struct {
	dirs    []string // the server's cgroup directories
	memDir  string   // where the memory controller's files are
	pidsDir string   // where the pids controller's files are
	version int      // 1 or 2
	own     string   // the host's own cgroup (v1: pids), for warmCgroupMigration
	limits  Limits   // what it was made with, for hits
}

// newCgroup makes a cgroup for server name under the host process's own,
// with limits l, or reports why it cannot (then rlimits stand in). Only a
// root host tries: an ordinary user rarely has a delegated cgroup tree in
// which it may enable controllers.
//
// A host that is killed cannot remove its cgroups, so first it removes
// those a host that is gone left beside where it makes its own (see
// sweepCgroups).
func newCgroup(name string, l Limits, own ownCgroups) (*cgroup, error) {
	v1, v2, err := own.v1, own.v2, own.err
	if err != nil {
		return nil, err
	}
	owner, err := selfOwner()
	if err != nil {
		return nil, err
	}
	// Random, so that two starts of one host never share a name (the
	// owner tells hosts apart).
	leaf := "mcphost-" + tempPrefix(name) + "-" + strconv.FormatUint(rand.Uint64(), 36) + owner.suffix()
	if pidsPath, ok := v1["pids"]; ok {
		memPath, ok := v1["memory"]
		if !ok {
			return nil, errors.New("cgroup v1 without the memory controller")
		}
		sweepCgroups(filepath.Join(cgroupRoot, "pids", pidsPath), owner.ns)
		sweepCgroups(filepath.Join(cgroupRoot, "memory", memPath), owner.ns)
		pids := filepath.Join(cgroupRoot, "pids", pidsPath, leaf)
		mem := filepath.Join(cgroupRoot, "memory", memPath, leaf)
		cg := &cgroup{dirs: []string{pids, mem}, memDir: mem, pidsDir: pids, version: 1, limits: l, own: filepath.Join(cgroupRoot, "pids", pidsPath)}
		// memsw (memory and swap) may not be set below memory, so it goes
		// second.
		if err := cg.make([][2]string{
			{filepath.Join(pids, "pids.max"), strconv.Itoa(l.Processes)},
			{filepath.Join(mem, "memory.limit_in_bytes"), strconv.FormatInt(l.Memory, 10)},
			{filepath.Join(mem, "memory.memsw.limit_in_bytes"), strconv.FormatInt(l.Memory, 10)},
		}, filepath.Join(mem, "memory.memsw.limit_in_bytes")); err != nil {
			return nil, err
		}
		return cg, nil
	}
	if v2 == "" {
		return nil, errors.New("no cgroup of this process found")
	}
	parent := filepath.Join(cgroupRoot, v2)
	ctl, err := os.ReadFile(filepath.Join(parent, "cgroup.subtree_control"))
	if err != nil {
		return nil, err
	}
	if f := strings.Fields(string(ctl)); !slices.Contains(f, "pids") || !slices.Contains(f, "memory") {
		return nil, fmt.Errorf("cgroup %s does not delegate the pids and memory controllers", parent)
	}
	sweepCgroups(parent, owner.ns)
	dir := filepath.Join(parent, leaf)
	cg := &cgroup{dirs: []string{dir}, memDir: dir, pidsDir: dir, version: 2, limits: l, own: parent}
	if err := cg.make([][2]string{
		{filepath.Join(dir, "pids.max"), strconv.Itoa(l.Processes)},
		{filepath.Join(dir, "memory.max"), strconv.FormatInt(l.Memory, 10)},
		{filepath.Join(dir, "memory.swap.max"), "0"},
	}, filepath.Join(dir, "memory.swap.max")); err != nil {
		return nil, err
	}
	return cg, nil
}

// warmCgroupMigration moves the host process into the cgroup own, which
// Start read from /proc/self/cgroup a moment before: that changes
// nothing, and makes the move of the helper into the server's cgroup, a
// few milliseconds later, fast. It is used where the helper is moved
// (cgroup v2; on v1 the helper's thread that starts the server joins the
// server's cgroups itself, spec.CgroupsSelf, and no process is moved).
//
// Every move of a process between cgroups (a write of a pid to
// cgroup.procs; v1 and v2 share the lock) first switches the kernel's
// cgroup_threadgroup_rwsem to its writer mode, which waits for an RCU
// grace period (8 to 24 ms on this project's test machine) unless another
// move did so less than a grace period before. The kernel takes that lock
// before it compares the source and destination, so a move of the host
// into its own cgroup pays the wait, started early in Start, beside the
// host's preparation and the helper's start, and the helper's move,
// started right after the helper exists, waits at most for its end rather
// than for a whole grace period of its own. The kernel holds its
// cgroup_mutex through that wait, so every other cgroup operation
// (newCgroup's mkdir, reading /proc/PID/cgroup) waits too: this starts
// once the server's cgroups are made. (Where cgroups are mounted with
// favordynmods there is no wait to hide.) Errors are ignored: the move
// is only an optimization, and the host was there a moment before.
func warmCgroupMigration(own string) {
	os.WriteFile(filepath.Join(own, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0)
}

// earlyCgroup is newCgroup run in the background, from the beginning of a
// Start: its result, once done is closed.
type earlyCgroup struct {
	done chan struct{}
	cg   *cgroup
	err  error
}

// startCgroup makes the server's cgroups (newCgroup) in the background,
// and then, on cgroup v2, warms the kernel's cgroup migration
// (warmCgroupMigration).
func startCgroup(name string, l Limits, own ownCgroups) *earlyCgroup {
	e := &earlyCgroup{done: make(chan struct{})}
	go func() {
		e.cg, e.err = newCgroup(name, l, own)
		close(e.done)
		if e.err == nil && e.cg.version == 2 {
			// On v1 a thread of the helper joins them instead
			// (spec.CgroupsSelf): no process moves.
			warmCgroupMigration(e.cg.own)
		}
	}()
	return e
}

// get waits for the cgroups; for a nil e it says there are none.
func (e *earlyCgroup) get() (*cgroup, error) {
	if e == nil {
		return nil, errors.New("no cgroup was made")
	}
	<-e.done
	return e.cg, e.err
}

// discard removes the cgroups of a start that failed before it took them
// (a second removal of ones it took finds nothing).
func (e *earlyCgroup) discard() {
	if cg, err := e.get(); err == nil {
		cg.remove()
	}
}

// ownCgroups are the host process's own cgroups, as /proc/self/cgroup
// said when read: v1 maps each v1 controller to its path, v2 is the path
// in the unified hierarchy ("" if none); err says why they could not be
// read. Start reads them once, for both what it decides before the
// helper's start and the cgroups it makes beside it.
type ownCgroups struct {
	v1  map[string]string
	v2  string
	err error
}

// isV1 reports whether the host is in a v1 pids hierarchy: newCgroup
// then makes cgroup v1 directories for its servers.
func (o ownCgroups) isV1() bool {
	_, ok := o.v1["pids"] // none where err is set
	return ok
}

// readOwnCgroups reads the host process's own cgroups.
func readOwnCgroups() ownCgroups {
	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return ownCgroups{err: err}
	}
	o := ownCgroups{v1: map[string]string{}}
	sc := bufio.NewScanner(bytes.NewReader(own))
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			o.v2 = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			o.v1[c] = parts[2]
		}
	}
	return o
}

// cgroupOwner names the host process that made a cgroup: its PID
// namespace (the inode of /proc/self/ns/pid), its PID there, and its start
// time (clock ticks since boot, which tells a reused PID apart). It is
// written at the end of the cgroup's name, after the first '.', which no
// other part of the name holds.
type cgroupOwner struct {
	ns    uint64
	pid   int
	start uint64
}

func (o cgroupOwner) suffix() string {
	return fmt.Sprintf(".%d.%d.%d", o.ns, o.pid, o.start)
}

// selfOwner is the host process as a cgroupOwner.
func selfOwner() (cgroupOwner, error) {
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/ns/pid", &st); err != nil {
		return cgroupOwner{}, fmt.Errorf("reading the PID namespace: %w", err)
	}
	pid := os.Getpid()
	start, err := startTime(pid)
	if err != nil {
		return cgroupOwner{}, err
	}
	return cgroupOwner{ns: st.Ino, pid: pid, start: start}, nil
}

// startTime reads when process pid started.
func startTime(pid int) (uint64, error) {
	st, err := readStat(pid)
	return st.start, err
}

// parseOwner reads the owner at the end of a cgroup name this package
// made; ok is false for any other name.
func parseOwner(name string) (o cgroupOwner, ok bool) {
	if !strings.HasPrefix(name, "mcphost-") {
		return o, false
	}
	_, rest, found := strings.Cut(name, ".")
	if !found {
		return o, false
	}
	f := strings.Split(rest, ".")
	if len(f) != 3 {
		return o, false
	}
	var err1, err2, err3 error
	o.ns, err1 = strconv.ParseUint(f[0], 10, 64)
	o.pid, err2 = strconv.Atoi(f[1])
	o.start, err3 = strconv.ParseUint(f[2], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || o.pid <= 0 {
		return o, false
	}
	return o, true
}

// gone reports whether the host process o is no longer running. It can
// tell only for a host in PID namespace ns: of another, a PID means
// nothing here, and it says false. A start time is read through the
// reader's time namespace (its boot time offset): when the process at
// that PID is in another time namespace than this one, the times cannot
// be compared, and it says false too.
func (o cgroupOwner) gone(ns uint64) bool {
	if o.ns != ns {
		return false
	}
	start, err := startTime(o.pid)
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	if start == o.start {
		return false
	}
	return sameTimeNamespace(o.pid)
}

// sameTimeNamespace reports whether process pid is in this process's time
// namespace; true where the kernel has none (before Linux 5.6), false when
// it cannot tell.
func sameTimeNamespace(pid int) bool {
	var self, other unix.Stat_t
	if err := unix.Stat("/proc/self/ns/time", &self); err != nil {
		return errors.Is(err, unix.ENOENT)
	}
	if err := unix.Stat("/proc/"+strconv.Itoa(pid)+"/ns/time", &other); err != nil {
		return false
	}
	return self.Ino == other.Ino && self.Dev == other.Dev
}

// sweepCgroups removes, from parent, the cgroups this package made for a
// host process of PID namespace ns that is gone (killed before it could
// remove them). A cgroup that still holds a process is not removed (the
// kernel refuses), nor is one whose host runs in another PID namespace.
// It reports nothing: what it cannot remove stays as it was.
func sweepCgroups(parent string, ns uint64) {
	ents, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		if o, ok := parseOwner(e.Name()); ok && o.gone(ns) {
			os.Remove(filepath.Join(parent, e.Name()))
		}
	}
}

// make creates the directories and writes the limit files, file and value,
// in order; optional names a file that may be missing (swap accounting is
// a kernel option).
func (cg *cgroup) make(files [][2]string, optional string) error {
	for _, d := range cg.dirs {
		if err := os.Mkdir(d, 0o755); err != nil {
			cg.remove()
			return err
		}
	}
	for _, fv := range files {
		f, v := fv[0], fv[1]
		err := os.WriteFile(f, []byte(v), 0)
		if err != nil && !(f == optional && errors.Is(err, os.ErrNotExist)) {
			cg.remove()
			return fmt.Errorf("writing %s: %w", f, err)
		}
	}
	return nil
}

// hits says which limits the kernel enforced on the server, for its exit
// status: that it killed a process for want of memory, that it refused
// new processes or threads (a Go or Node server that cannot start a
// thread dies of it). It is "" when neither happened.
//
// The counts are of the server's processes, whichever limit they met: a
// cgroup above the host's (a container's, systemd's TasksMax) may be the
// one that was full. The server's own limit is named, with its config key,
// only when the server's own use reached it; else the words say that a
// limit above the server's did it, so that nobody raises max_memory or
// max_processes in vain.
func (cg *cgroup) hits() string {
	var hits []string
	oom := "memory.events"
	if cg.version == 1 {
		oom = "memory.oom_control"
	}
	if n := eventCount(filepath.Join(cg.memDir, oom), "oom_kill"); n > 0 {
		if cg.memoryLimitReached() {
			hits = append(hits, fmt.Sprintf("the kernel killed a process at the server's memory limit, %s: max_memory", bytesize.Format(cg.limits.Memory)))
		} else {
			hits = append(hits, fmt.Sprintf("the kernel killed a process for want of memory, below the server's limit (%s): a limit of the host's cgroup or the machine's memory", bytesize.Format(cg.limits.Memory)))
		}
	}
	if n := eventCount(filepath.Join(cg.pidsDir, "pids.events"), "max"); n > 0 {
		what := fmt.Sprintf("%d new processes or threads", n)
		if n == 1 {
			what = "a new process or thread"
		}
		if peak, ok := readCount(filepath.Join(cg.pidsDir, "pids.peak")); !ok || peak >= int64(cg.limits.Processes) {
			// Without pids.peak (before Linux 6.1) the server's own limit
			// is the likely one.
			hits = append(hits, fmt.Sprintf("the kernel refused %s at the server's process limit, %d: max_processes", what, cg.limits.Processes))
		} else {
			hits = append(hits, fmt.Sprintf("the kernel refused %s below the server's process limit (%d; at most %d were running): a limit of the host's cgroup", what, cg.limits.Processes, peak))
		}
	}
	return strings.Join(hits, "; ")
}

// memoryLimitReached reports whether the server's memory use reached its
// own cgroup's limit, as opposed to a limit above. On v1 its peak use
// (memory, or memory and swap) came within 1 MiB of the limit (the kernel
// charges in batches of pages, and current kernels no longer count
// failcnt); on v2 the cgroup's own events say so.
func (cg *cgroup) memoryLimitReached() bool {
	if cg.version == 1 {
		for _, pair := range [][2]string{{"memory.max_usage_in_bytes", "memory.limit_in_bytes"}, {"memory.memsw.max_usage_in_bytes", "memory.memsw.limit_in_bytes"}} {
			peak, ok1 := readCount(filepath.Join(cg.memDir, pair[0]))
			limit, ok2 := readCount(filepath.Join(cg.memDir, pair[1]))
			if ok1 && ok2 && peak >= limit-1<<20 {
				return true
			}
		}
		return false
	}
	events := filepath.Join(cg.memDir, "memory.events.local")
	if _, err := os.Stat(events); err != nil {
		events = filepath.Join(cg.memDir, "memory.events")
	}
	return eventCount(events, "max") > 0 || eventCount(events, "oom") > 0
}

// readCount reads a cgroup file that holds one number.
func readCount(file string) (int64, bool) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n, err == nil
}

// eventCount reads the count of key from a cgroup events file (lines of
// "key count"); 0 if the file or key is missing.
func eventCount(file, key string) int64 {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == key {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// remove removes the cgroups, which must be empty: the helper and every
// process of the server have exited.
func (cg *cgroup) remove() error {
	var errs []error
	for _, d := range cg.dirs {
		if err := os.Remove(d); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
