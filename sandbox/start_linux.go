package sandbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcphost/mcphost/internal/bytesize"
	"golang.org/x/sys/unix"
)

// startOptions are knobs for tests; Start uses the zero value.
type startOptions struct {
	// maxABI, when positive, caps the Landlock ABI the helper uses, to
	// exercise on a new kernel what happens on an older one.
	maxABI int
	// selfHelper runs the host program as the helper, as Start does where
	// the embedded helper program cannot run.
	selfHelper bool
	// helper, when set, is tried as the helper program in place of the
	// embedded one (a copy of it: it may get a plan).
	helper string
	// beforeLaunch, when set, runs after the host has checked and
	// resolved the config and before the helper gets its spec (a root
	// host's helper is running by then, waiting for it): tests change the
	// filesystem there, as another server could.
	beforeLaunch func()
	// beforePlan, when set, runs on a root host after the host built the
	// server's root and before the plan (or the spec) goes to the helper:
	// tests change the filesystem there, under the root's binds, as
	// another server could.
	beforePlan func()
	// moveHelper moves the helper into the server's cgroups after it is
	// started, as on cgroup v2, also on v1 (where it is otherwise started
	// in them).
	moveHelper bool
	// trace, when set, collects the phases of this start
	// (MCPHOST_START_TRACE).
	trace *startTrace
	// rootRefused, when set, is the error the host's building of the
	// root meets once it is done (hostRoot), as if the kernel had refused
	// its last step.
	rootRefused error
}

// Start starts the server cfg describes, confined unless cfg.Off, and
// returns once its program has been executed.
//
// ctx bounds only the start: cancelling it later does not affect the
// server. When this system cannot confine the server and cfg.Off is false,
// Start returns an error wrapping ErrUnsupported that says why and how to
// opt out; it never falls back to running the server unconfined. An
// invalid cfg gives an error wrapping ErrInvalidConfig.
//
// Start may be called from many goroutines at once.
func Start(ctx context.Context, cfg Config) (*Process, error) {
	return start(ctx, cfg, startOptions{})
}

func start(ctx context.Context, cfg Config, opts startOptions) (*Process, error) {
	tr := newTrace("start", cfg.Name)
	opts.trace = tr
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sandbox: server %q: starting: %w", cfg.Name, err)
	}
	if !cfg.Off {
		if err := kernelCanConfine(cfg.Name); err != nil {
			return nil, err
		}
	}
	hostEnv := cfg.HostEnv
	if hostEnv == nil {
		hostEnv = os.Environ()
	}
	if err := checkConfig(&cfg); err != nil {
		return nil, invalidConfig(cfg.Name, err)
	}
	var early *earlyCgroup
	var lease *serverIDLease
	var sp *spec
	var st *started // a root host's helper, started before its spec is ready
	var leaseGiven, selfJoin bool
	var err error
	if !cfg.Off && dropsRoot() {
		// The server's cgroups need nothing of what follows: they are
		// made meanwhile.
		own := readOwnCgroups()
		early = startCgroup(cfg.Name, cfg.Limits.withDefaults(), own)
		if lease, err = takeServerID(); err != nil {
			early.discard()
			return nil, unsupported(cfg.Name, "no uid of its own for the server: "+err.Error()+"; or run the host as an ordinary user")
		}
		// spawn takes the lease (the helper's Process frees it once no
		// task runs as the uid: the helper reports the server alone, or
		// is gone); until then it is this start's to free.
		defer func() {
			if !leaseGiven {
				lease.release()
			}
		}()
		// And the user namespaces the idmapped mounts are likely to need
		// (a process start each, the first time per host process).
		go warmOwnerUserNS(cfg.Worktree, lease.uid)
		// Then the helper itself, which needs none of the spec to start:
		// its clone and exec go on while the host prepares the spec (and
		// the plan) below, which deliver then hands it (and checks that
		// it agrees). On
		// cgroup v1 the helper's thread that starts the server joins the
		// server's cgroups itself (spec.CgroupsSelf), so the helper's
		// start waits for nothing of them; on v2 the host moves the
		// helper into them right after starting it.
		selfJoin = !opts.moveHelper && own.isV1()
		cl := clone{
			network:  cfg.Network,
			proxy:    cfg.Proxy != nil && !cfg.Network,
			fileSize: cfg.Limits.withDefaults().FileSize,
			lease:    lease,
		}
		if _, ok := cfg.Proxy.(DirectProxy); ok && cl.proxy {
			cl.direct = true
		}
		if !selfJoin {
			if cg, err := early.get(); err == nil {
				cl.cgroups = cg.dirs
			}
		}
		tr.mark("lease")
		leaseGiven = true
		st, err = spawn(cfg.Name, cl, false, cfg.Stderr, opts)
		if err != nil {
			early.discard()
			return nil, err
		}
		tr.besides()
	}
	// The server's TMPDIR: a name only, made on the host by makeTmp where
	// the server's view of it is the host's tree (see hostTmpNeeded).
	tmp, err := tempName(cfg.Name)
	if err != nil {
		if st != nil {
			st.abort()
		}
		early.discard()
		return nil, fmt.Errorf("sandbox: server %q: its temporary directory: %w", cfg.Name, err)
	}
	tmpMade := false
	makeTmp := func() error {
		if tmpMade {
			return nil
		}
		if err := os.Mkdir(tmp, 0o700); err != nil {
			return fmt.Errorf("sandbox: server %q: creating its temporary directory: %w", cfg.Name, err)
		}
		tmpMade = true
		return nil
	}
	home := cfg.Home
	tempHome := ""
	var removeTmpPoint func() error // prepareHome's mount point for TMPDIR
	cleanup := func() {
		if st != nil {
			// Before the cgroups' removal: the helper is in them.
			st.abort()
		}
		early.discard()
		if tmpMade {
			removeAll(tmp)
		}
		if tempHome != "" {
			removeAll(tempHome)
		}
		if removeTmpPoint != nil {
			removeTmpPoint()
		}
	}
	if cfg.TempHome && !cfg.Off {
		if tempHome, err = os.MkdirTemp("", "mcphost-"+tempPrefix(cfg.Name)+"-home-"); err != nil {
			cleanup()
			return nil, fmt.Errorf("sandbox: server %q: creating its temporary home directory: %w", cfg.Name, err)
		}
		home = tempHome
	}
	sp, err = buildSpec(&cfg, hostEnv, tmp, home)
	if err != nil {
		cleanup()
		return nil, err
	}
	sp.MaxABI = opts.maxABI
	tmpPoint, err := prepareHome(sp)
	if tmpPoint != "" {
		// Removed with everything else if the start fails, else by Close.
		homeSource := sp.HomeSource
		removeTmpPoint = func() error { return removeMountPoint(homeSource, tmpPoint) }
	}
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("sandbox: server %q: preparing its home directory %s: %w (removing that directory resets the server's home)", cfg.Name, sp.HomeSource, err)
	}
	if opts.beforeLaunch != nil {
		opts.beforeLaunch()
	}
	tr.mark("prepare")
	var cg *cgroup
	limits := ""
	if !cfg.Off {
		if tempHome != "" && sp.Home != "" {
			// A temporary home holds nothing to keep: a tmpfs of the Tmp
			// size bounds what the server adds to it (the reduced tier,
			// with no mount namespace, uses the directory itself).
			sp.HomeSize = cfg.Limits.withDefaults().Tmp
		}
		if lease != nil {
			sp.lease = lease
			if err := runUnprivileged(sp, lease.uid); err != nil {
				cleanup()
				return nil, rootHostError(cfg.Name, err)
			}
			tr.mark("idmap")
		}
		l := cfg.Limits.withDefaults()
		sp.TmpSize, sp.FileSize = l.Tmp, l.FileSize
		if st != nil {
			// The root needs none of the cgroups: it is built while
			// they are made.
			err = buildHostRoot(cfg.Name, sp, opts, tr, makeTmp)
		}
		cg, limits = applyLimits(sp, cfg.Name, l, early)
		sp.CgroupsSelf = selfJoin && cg != nil && cg.version == 1
		tr.mark("cgroup")
	}
	var p *Process
	userNS := false
	if st != nil {
		if err == nil {
			if opts.beforePlan != nil {
				opts.beforePlan()
			}
			p, err = st.deliver(ctx, cfg.Name, sp)
			st = nil // running, or gone
		}
	} else {
		userNS = useUserNS()
		if !cfg.Off && userNS && refusedUserNS() != "" {
			if err := reduceOrRefuse(&cfg, sp, refusedUserNS()); err != nil {
				cleanup()
				return nil, err
			}
			userNS = false
		}
		if hostTmpNeeded(sp) {
			err = makeTmp()
		}
		if err == nil {
			p, err = launch(ctx, cfg.Name, sp, userNS, cfg.Stderr, opts)
		}
	}
	if err != nil && errors.Is(err, errUserNSRefused) {
		// The first start that meets the refusal: remember it, and start
		// this server and every later one in the reduced tier.
		why := err.Error()
		var ue *userNSError
		if errors.As(err, &ue) {
			why = ue.why
		}
		refuseUserNS(why)
		if rerr := reduceOrRefuse(&cfg, sp, why); rerr != nil {
			err = rerr
		} else if err = makeTmp(); err == nil { // the reduced tier's view is the host's
			p, err = launch(ctx, cfg.Name, sp, false, cfg.Stderr, opts)
		}
	}
	for _, f := range sp.idmapFiles {
		f.Close()
	}
	if sp.rootFile != nil {
		sp.rootFile.Close()
	}
	if err != nil {
		if cg != nil {
			cg.remove()
		}
		cleanup()
		return nil, err
	}
	p.limits = limits
	if !cfg.Off && !sp.Reduced && userNS {
		p.lacks = sharedBudgetLacks()
	}
	if sp.Reduced {
		abi, _ := landlockABI()
		if opts.maxABI > 0 && abi > opts.maxABI {
			abi = opts.maxABI
		}
		p.reduced = true
		p.lacks = reducedLacks(abi, sp.Network)
		p.limits = fmt.Sprintf("rlimits: %s data/process, %s/file; no process or tmp bound", bytesize.Format(sp.Data), bytesize.Format(sp.FileSize))
	}
	if cg != nil {
		// finish reads limitHits under p.mu, from a goroutine launch
		// started: a server that exits at once gets there before Start
		// returns.
		p.mu.Lock()
		p.removeCgroup, p.limitHits = cg.remove, cg.hits
		p.cgroupDirs = cg.dirs
		p.mu.Unlock()
	}
	p.tempDir, p.tempOnHost = tmp, tmpMade
	p.tempHome = tempHome
	p.removeTmpPoint = removeTmpPoint
	tr.mark("finish")
	tr.print()
	p.trace = tr != nil
	return p, nil
}

// rootHostError is Start's error for err from what a root host prepares
// itself: the idmapped trees (runUnprivileged) and the server's root
// (hostRoot).
func rootHostError(name string, err error) error {
	var se *stepError
	switch {
	case errors.Is(err, errTooManyIdmaps):
		return invalidConfig(name, err)
	case errors.Is(err, unix.ELOOP):
		// A granted path checked a moment ago is now a symbolic link:
		// someone swapped it in.
		return invalidConfig(name, fmt.Errorf("%w: %v: a granted path became a symbolic link while the server started", ErrLinkedPath, err))
	case errors.As(err, &se) && !se.unsupported:
		return fmt.Errorf("sandbox: server %q: %w", name, err)
	}
	return unsupported(name, err.Error()+"; or run the host as an ordinary user")
}

// Probe reports how this kernel can confine a server, as the string
// Process.Confinement would give for a server with the network off (with
// the network on, "+netns" is absent; where user namespaces are refused,
// the reduced tier's "+reduced"), or an error wrapping ErrUnsupported that
// says what is missing. It sets up every layer in a real helper
// process, so its answer is what Start would meet; that costs about as
// much as starting a small server, a few milliseconds.
func Probe() (string, error) {
	if err := kernelCanConfine(""); err != nil {
		return "", err
	}
	hostEnv := os.Environ()
	sys := canonicalExisting(systemReadPaths())
	sp := &spec{Probe: true, Hide: emptyDirs(sys, canonicalExisting(homeDirs(hostEnv))), Links: systemLinks()}
	sp.Read = sys
	// ours is the probe's uid lease until launch takes it (the helper's
	// Process frees it).
	var ours *serverIDLease
	defer func() {
		if ours != nil {
			ours.release()
		}
	}()
	if dropsRoot() {
		// The probe's confining thread runs as a server uid as a server's
		// does, one it holds, so that it shares no identity with a live
		// server (which could signal it).
		lease, err := takeServerID()
		if err != nil {
			return "", unsupported("", "no uid of its own for the probe: "+err.Error()+"; or run the host as an ordinary user")
		}
		sp.RunAs, sp.lease, ours = lease.uid, lease, lease
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	userNS := useUserNS()
	if userNS && refusedUserNS() != "" {
		if err := reduce(sp); err != nil {
			return "", unsupported("", err.Error())
		}
		userNS = false
	}
	p, err := launch(ctx, "", sp, userNS, nil, startOptions{})
	ours = nil
	if err != nil && errors.Is(err, errUserNSRefused) {
		// As Start would: remember the refusal, and probe the reduced tier.
		var ue *userNSError
		if errors.As(err, &ue) {
			refuseUserNS(ue.why)
		}
		if rerr := reduce(sp); rerr != nil {
			return "", unsupported("", rerr.Error())
		}
		p, err = launch(ctx, "", sp, false, nil, startOptions{})
	}
	if err != nil {
		return "", err
	}
	conf := p.confinement
	// The probe is over once reported: kill the helper rather than wait
	// for it to exit on its own.
	if err := p.Close(0); err != nil {
		return "", fmt.Errorf("sandbox: probe: %w", err)
	}
	return conf, nil
}

// kernelCanConfine checks, cheaply and on the host, what must be there for
// the helper to have a chance.
func kernelCanConfine(name string) error {
	abi, err := landlockABI()
	if err != nil {
		return unsupported(name, err.Error())
	}
	if abi < 1 {
		return unsupported(name, fmt.Sprintf("Landlock ABI %d", abi))
	}
	if !seccompSupported {
		return unsupported(name, "no seccomp filter is built for GOARCH="+runtime.GOARCH)
	}
	return nil
}

// unsupported returns the error Start gives when the system cannot confine.
func unsupported(name, why string) error {
	if name == "" {
		return fmt.Errorf("%w: %s", ErrUnsupported, why)
	}
	return fmt.Errorf("%w: server %q: %s; to run it without confinement anyway (a risk: it can then read, write and reach everything you can), set sandbox = \"off\" in its [mcp.%s] table",
		ErrUnsupported, name, why, name)
}

// useUserNS reports whether the helper needs a user namespace to get the
// privilege to create the others: when the host is not root, or is a root
// without CAP_SYS_ADMIN (in a container).
func useUserNS() bool {
	return os.Geteuid() != 0 || !hasCapSysAdmin()
}

// systemReadPaths are the directories every server may read and execute
// from: programs, libraries, configuration, and the fresh /proc and /sys.
func systemReadPaths() []string {
	return []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/proc", "/sys"}
}

// reduceOrRefuse turns sp into the reduced tier's spec, or, when cfg
// requires full confinement, returns the error that says why it cannot be
// had (why: the kernel's refusal).
func reduceOrRefuse(cfg *Config, sp *spec, why string) error {
	if cfg.RequireFull {
		return fmt.Errorf("%w: server %q: full confinement is required (sandbox = \"full\" in its [mcp.%s] table), but %s; an administrator can allow unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns = 0, user.max_user_namespaces > 0), or remove sandbox = \"full\" to run it in the reduced tier, which lacks: %s",
			ErrUnsupported, cfg.Name, cfg.Name, why, strings.Join(reducedLacks(0, sp.Network)[:3], "; "))
	}
	if err := reduce(sp); err != nil {
		return unsupported(cfg.Name, fmt.Sprintf("%s, and the reduced tier cannot run either: %v", why, err))
	}
	return nil
}

// buildHostRoot builds a root host's server root on the host (hostRoot),
// after the TMPDIR the root needs. Where the kernel refuses a step its
// probe did not try, the helper builds the root from then on.
func buildHostRoot(name string, sp *spec, opts startOptions, tr *startTrace, makeTmp func() error) error {
	if hostTmpNeeded(sp) {
		// Before the root is built: its read-only trees take no new
		// directory.
		if err := makeTmp(); err != nil {
			return err
		}
	}
	err := hostRoot(sp, opts.rootRefused)
	if err != nil && rootRefused(err) {
		// A step the probe did not try was refused (a container's user
		// namespace, a security module): from now on the helper builds
		// the root, with idmapped trees made anew (the host's build took
		// these).
		detachedTreesRefused(err)
		tr.note("the helper builds the root from now on: the host's build was refused: " + err.Error())
		for _, f := range sp.idmapFiles {
			f.Close()
		}
		sp.Idmap, sp.idmapFiles = nil, nil
		err = runUnprivileged(sp, sp.lease.uid)
	}
	if err != nil {
		return rootHostError(name, err)
	}
	if sp.Root {
		tr.mark("root")
	}
	return nil
}

// applyLimits puts l's bounds on processes and memory into sp: a cgroup
// where the host can make one, else rlimits (the caller sets the sizes of
// files and tmpfs). It returns the cgroup, if any, and the words
// Process.Limits gives.
func applyLimits(sp *spec, name string, l Limits, early *earlyCgroup) (*cgroup, string) {
	setKernelBudgets(sp, useUserNS())
	file := ", " + bytesize.Format(l.FileSize) + "/file"
	if dropsRoot() {
		cg, err := early.get()
		if err == nil {
			sp.Cgroups = cg.dirs
			return cg, fmt.Sprintf("cgroup v%d: %d processes, %s memory, %s tmp%s", cg.version, l.Processes, bytesize.Format(l.Memory), bytesize.Format(l.Tmp), file)
		}
		// Without a cgroup: each server runs as a uid of its own, which
		// RLIMIT_NPROC counts alone.
		sp.NProc = l.Processes
		sp.Data = l.Memory
		return nil, fmt.Sprintf("rlimits: %d processes, %s data/process, %s tmp%s (no cgroup: %v)", l.Processes, bytesize.Format(l.Memory), bytesize.Format(l.Tmp), file, err)
	}
	sp.NProc = l.Processes
	sp.Data = l.Memory
	return nil, fmt.Sprintf("rlimits: %d processes, %s data/process, %s tmp%s", l.Processes, bytesize.Format(l.Memory), bytesize.Format(l.Tmp), file)
}

// setKernelBudgets puts into sp the caps on the kernel budgets the kernel
// counts per user (see Limits): the rlimits, and, when the helper gets a
// user namespace of its own (userNS), a quarter of each of the host's
// own /proc/sys/user limits on inotify and fanotify, for the helper to
// set there. A limit this kernel lacks is left out.
func setKernelBudgets(sp *spec, userNS bool) {
	sp.SigPending, sp.MsgQueue, sp.MemLock, sp.NoFile = serverSigPending, serverMsgQueue, serverMemLock, serverNoFile
	if !userNS {
		return
	}
	for _, name := range userNSLimitNames {
		b, err := os.ReadFile("/proc/sys/user/" + name)
		if err != nil {
			continue // not in this kernel
		}
		v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || v < 0 {
			continue
		}
		if v >= 1<<31-1 {
			// Unlimited here (a host in a user namespace of its own): an
			// ancestor's limit binds, which this host cannot read.
			v = userNSLimitDefaults[name]
		}
		if sp.UserNSLimits == nil {
			sp.UserNSLimits = make(map[string]int64, len(userNSLimitNames))
		}
		sp.UserNSLimits[name] = max(v/4, 1)
	}
}

// sharedBudgetLacks lists, for Process.Lacks, what a server in a user
// namespace of its own still shares with the person: what the kernel
// counts per user with no cap a namespace or an rlimit could set.
func sharedBudgetLacks() []string {
	return []string{
		"descriptors it keeps in flight in unread unix socket messages (SCM_RIGHTS) count against yours: many in flight make your own programs' sends of descriptors fail (ETOOMANYREFS)",
		"its pipe buffers count against your pipe pages (fs.pipe-user-pages-soft): many large pipes leave your programs' new pipes at one page",
		"its processes count against your own process limit (RLIMIT_NPROC) as well as its own (max_processes)",
	}
}

// errTooManyIdmaps says a root host's server has more granted paths to
// idmap than maxIdmap.
var errTooManyIdmaps = errors.New("too many idmapped grants")

// tempName returns a path for the server's TMPDIR in the host's temporary
// directory that no one could have predicted (64 random bits), not made.
// It is canonical, as the path the helper mounts it at: a TMPDIR through
// a symbolic link of the host's would not exist in the server's root.
func tempName(name string) (string, error) {
	dir, err := filepath.EvalSymlinks(os.TempDir())
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "mcphost-"+tempPrefix(name)+"-"+strconv.FormatUint(rand.Uint64(), 36)), nil
}

// hostTmpNeeded reports whether the server of sp sees its TMPDIR in the
// host's tree, which must then hold it: unconfined, in the reduced tier
// (no mount namespace), with / granted, or where a grant shows the host's
// directories there. Otherwise the helper mounts a tmpfs at that path in
// the root it builds (beneath a private home, on a mount point
// prepareHome makes in the home's directory), which the host never sees,
// and the host makes (and Close removes) nothing.
func hostTmpNeeded(sp *spec) bool {
	if sp.Off || sp.Reduced || sp.Tmp == "" {
		return true
	}
	plan, err := planMounts(sp)
	if err != nil || !plan.NewRoot || plan.Tmp == "" {
		return true
	}
	return underAny(sp.Tmp, plan.Binds)
}

// runUnprivileged makes the server of sp run as uid, with every
// granted path outside the system directories shown through an idmapped
// mount that maps its owner to uid (see ServerID).
func runUnprivileged(sp *spec, uid uint32) error {
	sp.RunAs = uid
	sys := canonicalExisting(systemReadPaths())
	var paths []string
	granted := append(append([]string(nil), sp.Write...), sp.Read...)
	if sp.HomeSource != "" && sp.HomeSize == 0 {
		granted = append(granted, sp.HomeSource)
	}
	for _, p := range granted {
		if !underAny(p, sys) && p != sp.Tmp {
			paths = append(paths, p)
		}
	}
	if len(paths) > maxIdmap {
		return fmt.Errorf("%w: %d granted paths outside the system directories (the worktree, read and write grants, the program's directories), more than the %d one start can pass to the sandbox; grant fewer, broader directories", errTooManyIdmaps, len(paths), maxIdmap)
	}
	for _, p := range paths {
		f, err := idmappedTree(p, uid)
		if err != nil {
			for _, f := range sp.idmapFiles {
				f.Close()
			}
			sp.idmapFiles = nil
			return err
		}
		sp.Idmap = append(sp.Idmap, p)
		sp.idmapFiles = append(sp.idmapFiles, f)
	}
	return nil
}

// emptyDirs are the directories the server sees empty unless granted: the
// home directories (homes, canonical), which programs expect to exist, other
// than those within the system read paths (sys, canonical). (Every other
// path that is not granted does not exist in the server's view.)
func emptyDirs(sys, homes []string) []string {
	var out []string
	for _, h := range homes {
		if h != "/" && !anyUnder(sys, h) {
			out = append(out, h)
		}
	}
	return outermost(out)
}

// systemLinks returns the system read paths that are symbolic links on
// this host (/bin -> usr/bin on a merged /usr), each with its target as
// written, for the helper to make the same links in the server's root.
func systemLinks() map[string]string {
	var links map[string]string
	for _, p := range systemReadPaths() {
		st, err := os.Lstat(p)
		if err != nil || st.Mode()&fs.ModeSymlink == 0 {
			continue
		}
		target, err := os.Readlink(p)
		if err != nil || target == "" {
			continue
		}
		if links == nil {
			links = make(map[string]string)
		}
		links[p] = target
	}
	return links
}

// hideCandidates are the directories covered by an empty tmpfs in the
// server's mount namespace unless granted: where listening unix sockets and
// per-user secrets live. HOME and XDG_RUNTIME_DIR are taken both from the
// server's host environment and from the host process's own. sys are the
// system read paths, canonical, which are never covered.
func hideCandidates(hostEnv, sys []string) []string {
	c := []string{"/tmp", "/var/tmp", "/run", "/var/run", "/home", "/root"}
	for _, name := range []string{"HOME", "XDG_RUNTIME_DIR"} {
		if v, ok := envValue(hostEnv, name); ok {
			c = append(c, v)
		}
		if v := os.Getenv(name); v != "" {
			c = append(c, v)
		}
	}
	var out []string
	for _, h := range canonicalExisting(c) {
		// Never cover / or a system directory (HOME=/ happens for root
		// in containers).
		if h == "/" || anyUnder(sys, h) {
			continue
		}
		out = append(out, h)
	}
	return outermost(out)
}

// anyUnder reports whether one of paths lies at or beneath root.
func anyUnder(paths []string, root string) bool {
	for _, p := range paths {
		if isUnder(p, root) {
			return true
		}
	}
	return false
}

// canonical resolves p, which must exist, through symbolic links.
func canonical(what, p string) (string, error) {
	c, err := filepath.EvalSymlinks(filepath.Clean(p))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("%s %s does not exist: create it or remove it from the config", what, p)
		}
		return "", fmt.Errorf("%s %s: %w", what, p, err)
	}
	return c, nil
}

// buildSpec turns cfg into the spec for the helper: it scrubs the
// environment, finds the executable and its interpreters, and resolves
// every path the server is granted, hidden from or protected from.
//
// home, when not "", is the directory to give the server as its home.
func buildSpec(cfg *Config, hostEnv []string, tmp, home string) (*spec, error) {
	name := cfg.Name
	env, err := buildEnv(hostEnv, cfg.EnvPass, cfg.Env, tmp)
	if err != nil {
		return nil, invalidConfig(name, err)
	}
	worktree, err := canonical("worktree", cfg.Worktree)
	if err != nil {
		return nil, invalidConfig(name, err)
	}
	if st, err := os.Stat(worktree); err != nil || !st.IsDir() {
		return nil, invalidConfig(name, fmt.Errorf("worktree %s is not a directory", cfg.Worktree))
	}
	pathEnv, _ := envValue(env, "PATH")
	untrusted := untrustedDirs(worktree, cfg.Write, cfg.PeerWrite)
	exe, err := lookPath(cfg.Argv[0], pathEnv, worktree, untrusted)
	if err != nil {
		return nil, fmt.Errorf("sandbox: server %q: finding its program: %w", name, err)
	}
	exeCanon, err := filepath.EvalSymlinks(exe)
	if err != nil {
		return nil, fmt.Errorf("sandbox: server %q: %w", name, err)
	}
	programs, err := programFiles(cfg.Argv, exe, pathEnv, worktree, untrusted)
	if err != nil {
		return nil, fmt.Errorf("sandbox: server %q: %w", name, err)
	}
	s := &spec{
		Off:     cfg.Off,
		Path:    exeCanon,
		Argv:    append([]string(nil), cfg.Argv...),
		Env:     env,
		Dir:     worktree,
		Network: cfg.Network,
	}
	if cfg.Off {
		// Its grants are ignored, but what it runs must not be replaceable
		// by the confined servers beside it any more than theirs.
		roots := append([]string{worktree}, canonicalExisting(append(append([]string(nil), cfg.Write...), cfg.PeerWrite...))...)
		if err := checkLinks(&Config{}, programs, roots); err != nil {
			return nil, invalidConfig(name, err)
		}
		return s, nil
	}
	if cfg.Proxy != nil && !cfg.Network {
		s.Proxy = ProxyPort
		s.proxy = cfg.Proxy
		s.Env = withProxyVars(s.Env)
		if d, ok := cfg.Proxy.(DirectProxy); ok {
			if s.Direct, err = newDirectSpec(d); err != nil {
				return nil, invalidConfig(name, err)
			}
		}
	}

	// tmp's directory, canonical: tmp itself may not exist on the host.
	tmpDir, err := filepath.EvalSymlinks(filepath.Dir(tmp))
	if err != nil {
		return nil, fmt.Errorf("sandbox: server %q: %w", name, err)
	}
	tmpCanon := filepath.Join(tmpDir, filepath.Base(tmp))
	s.Dir = worktree
	s.Tmp = tmpCanon
	write := []string{worktree, tmpCanon}
	for _, p := range cfg.Write {
		c, err := canonical("write path", p)
		if err != nil {
			return nil, invalidConfig(name, err)
		}
		write = append(write, c)
	}
	// Whoever may write these can replace a symbolic link that lies there
	// between two starts: no grant and no program may go through one.
	untrusted = append(append([]string(nil), write...), canonicalExisting(cfg.PeerWrite)...)
	if err := checkLinks(cfg, programs, untrusted); err != nil {
		return nil, invalidConfig(name, err)
	}
	// The system read paths and the host's home directories, resolved once
	// for every check below.
	sys := canonicalExisting(systemReadPaths())
	hide := hideCandidates(hostEnv, sys)
	homes := canonicalExisting(homeDirs(hostEnv))
	for _, w := range write {
		switch {
		case w == "/":
			return nil, invalidConfig(name, errors.New("a writable path is /"))
		case isUnder(w, "/proc"), isUnder(w, "/sys"), isUnder(w, "/dev"):
			return nil, invalidConfig(name, fmt.Errorf("writable path %s is in /proc, /sys or /dev", w))
		}
		for _, h := range homes {
			if isUnder(h, w) {
				return nil, invalidConfig(name, fmt.Errorf("writable path %s contains the home directory %s: a server could read and change every secret in it; use a project directory", w, h))
			}
		}
	}
	s.Write = outermost(write)

	read := append([]string(nil), sys...)
	for _, p := range cfg.Read {
		c, err := canonical("read path", p)
		if err != nil {
			return nil, invalidConfig(name, err)
		}
		read = append(read, c)
	}
	// The program and its interpreters: the directory each lives in, or
	// the file alone when that directory is too broad to grant (/, /tmp,
	// a home directory).
	tooBroad := func(d string) bool { return d == "/" || anyUnder(hide, d) || anyUnder(homes, d) }
	grantExec := func(p string) {
		if d := filepath.Dir(p); !tooBroad(d) {
			read = append(read, d)
		} else {
			read = append(read, p)
		}
	}
	for _, e := range programs {
		if e.script {
			continue // read through the worktree or a Read path, not granted
		}
		c := e.canon
		grantExec(c)
		if e.lexical && c != e.path {
			// The kernel or env(1) opens this one by the path as
			// written: the link itself must be visible.
			if d, err := filepath.EvalSymlinks(filepath.Dir(e.path)); err == nil && !tooBroad(d) {
				read = append(read, d)
			}
		}
	}
	if cfg.Network {
		// A resolv.conf that links into /run (systemd-resolved) would be
		// hidden with /run.
		if c, err := filepath.EvalSymlinks("/etc/resolv.conf"); err == nil && c != "/etc/resolv.conf" {
			read = append(read, c)
		}
	}
	var readOnly []string
	for _, r := range outermost(read) {
		if !underAny(r, s.Write) {
			readOnly = append(readOnly, r)
		}
	}
	s.Read = readOnly
	if home != "" {
		if err := s.setHome(home, homes, sys); err != nil {
			return nil, invalidConfig(name, err)
		}
	}
	s.Hide = emptyDirs(sys, homes)
	s.Links = systemLinks()

	for _, q := range cfg.Protect {
		c, err := protectPath(q, s.Write)
		if err != nil {
			return nil, invalidConfig(name, err)
		}
		if c != "" {
			s.Protect = append(s.Protect, c)
		}
	}
	// Its own program files, so that it cannot change what runs as itself
	// (perhaps with more grants) next time.
	for _, f := range programs {
		if !underAny(f.canon, s.Write) {
			continue // resolved already: nothing writable above it
		}
		c, err := protectPath(f.canon, s.Write)
		if err != nil {
			return nil, invalidConfig(name, fmt.Errorf("its program: %w", err))
		}
		if c != "" {
			s.Protect = append(s.Protect, c)
		}
	}
	if !cfg.WritableGit {
		git, err := gitPaths(worktree)
		if err != nil {
			return nil, invalidConfig(name, fmt.Errorf("%w (or give the server git = \"write\")", err))
		}
		for _, g := range git {
			c, err := protectPath(g, s.Write)
			if err != nil {
				return nil, invalidConfig(name, fmt.Errorf("the repository's git directory: %w (or give the server git = \"write\")", err))
			}
			if c != "" {
				s.Protect = append(s.Protect, c)
			}
		}
	}
	s.Protect = outermost(s.Protect)
	if _, err := planMounts(s); err != nil {
		return nil, invalidConfig(name, err)
	}
	return s, nil
}

// checkLinks refuses a Read or Write path, a program file or a script that
// goes through a symbolic link lying in one of roots.
func checkLinks(cfg *Config, programs []programFile, roots []string) error {
	for _, list := range []struct {
		field string
		paths []string
	}{{"read", cfg.Read}, {"write", cfg.Write}} {
		for _, p := range list.paths {
			link, root, err := linkIn(filepath.Clean(p), roots)
			if err != nil {
				return fmt.Errorf("%s path %s: %w", list.field, p, err)
			}
			if link != "" {
				return &LinkError{Field: list.field, Path: p, Link: link, Root: root}
			}
		}
	}
	for _, f := range programs {
		link, root, err := linkIn(f.path, roots)
		if err != nil {
			return fmt.Errorf("command path %s: %w", f.path, err)
		}
		if link != "" {
			return &LinkError{Field: "command", Path: f.path, Link: link, Root: root}
		}
	}
	return nil
}

// homeDirs are the home directories no writable path may contain.
func homeDirs(hostEnv []string) []string {
	var h []string
	if v, ok := envValue(hostEnv, "HOME"); ok && v != "" {
		h = append(h, v)
	}
	if v := os.Getenv("HOME"); v != "" {
		h = append(h, v)
	}
	var out []string
	for _, p := range h {
		if filepath.IsAbs(p) && filepath.Clean(p) != "/" {
			out = append(out, p)
		}
	}
	return out
}

// protectPath resolves a protect path. It returns "" when nothing needs
// doing: the path lies outside every writable root, where Landlock and the
// read-only mounts already keep the server from changing it. Inside a
// writable root the path must exist (a server could otherwise create it
// first) and must not be reached through a symbolic link that is itself
// inside a writable root (a server could replace the link).
func protectPath(q string, write []string) (string, error) {
	clean := filepath.Clean(q)
	// A link along the way whose own location is writable could be
	// replaced by the server, whatever it points to now.
	link, _, err := linkIn(clean, write)
	if err != nil {
		return "", fmt.Errorf("protect path %s: %w", q, err)
	}
	if link != "" {
		return "", fmt.Errorf("protect path %s goes through the symbolic link %s, which lies in a writable path where a server could replace it: protect the link's target and have the host use that", q, link)
	}
	c, err := filepath.EvalSymlinks(clean)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("protect path %s: %w", q, err)
		}
		// Where would it be? Resolve the part that exists.
		anc, rest := clean, ""
		for anc != "/" {
			rest = filepath.Join(filepath.Base(anc), rest)
			anc = filepath.Dir(anc)
			ca, err := filepath.EvalSymlinks(anc)
			if err != nil {
				continue
			}
			if underAny(filepath.Join(ca, rest), write) {
				return "", fmt.Errorf("protect path %s does not exist inside a writable path, where the server could create it first: create it before starting the server", q)
			}
			break
		}
		return "", nil
	}
	for _, w := range write {
		if isUnder(w, c) {
			return "", fmt.Errorf("protect path %s contains the writable path %s", q, w)
		}
	}
	if !underAny(c, write) {
		return "", nil
	}
	if err := checkHardLinks(c); err != nil {
		return "", fmt.Errorf("protect path %s: %w", q, err)
	}
	return c, nil
}

// maxLinkCheck bounds the entries of a protected directory whose link
// counts are checked.
const maxLinkCheck = 2000

// checkHardLinks refuses a protected regular file that has another name:
// a hard link a server made earlier, anywhere it may write, would let it
// write the file through that name while the protected one is read-only.
// In a protected directory it checks the files at most two levels down
// (a git dir's config, hooks and info), leaving out git's object store
// and its refs and logs, which run nothing and which git itself checks.
func checkHardLinks(p string) error {
	st, err := os.Lstat(p)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return singleLink(p, st)
	}
	seen := 0
	return filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable: nothing a server could have linked either
		}
		if seen++; seen > maxLinkCheck {
			return filepath.SkipAll
		}
		if d.IsDir() {
			rel, _ := filepath.Rel(p, path)
			switch {
			case path == p:
			case d.Name() == "objects" || d.Name() == "refs" || d.Name() == "logs" || strings.Count(rel, "/") >= 1:
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		return singleLink(path, info)
	})
}

func singleLink(p string, st fs.FileInfo) error {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && st.Mode().IsRegular() && sys.Nlink > 1 {
		return fmt.Errorf("%s has %d names (hard links): a server could write it through another one; remove the other links (find them with find / -xdev -samefile %s) and start again", p, sys.Nlink, p)
	}
	return nil
}

// clone is what starting the helper needs, known before its spec is: a
// root host starts the helper from these alone, so that the helper's
// runtime starts while the host prepares the spec (the helper waits for
// it); then deliver checks that the spec agrees.
type clone struct {
	off, reduced, network bool
	proxy, direct         bool // a proxy socketpair; the helper's caps
	userNSLimits          bool // the helper's CAP_SYS_RESOURCE
	fileSize              int64
	cgroups               []string // for the host to move the helper into (not spec.CgroupsSelf)
	lease                 *serverIDLease
}

// cloneOf is what sp says the helper's start needs.
func cloneOf(sp *spec) clone {
	cl := clone{
		off: sp.Off, reduced: sp.Reduced, network: sp.Network,
		proxy: sp.Proxy != 0, direct: sp.Direct != nil, userNSLimits: len(sp.UserNSLimits) > 0,
		fileSize: sp.FileSize, lease: sp.lease,
	}
	if !sp.CgroupsSelf {
		cl.cgroups = sp.Cgroups
	}
	return cl
}

// agrees reports whether cl, which started the helper, is what sp needs.
func (cl clone) agrees(sp *spec) bool {
	want := cloneOf(sp)
	return want.off == cl.off && want.reduced == cl.reduced && want.network == cl.network &&
		want.proxy == cl.proxy && want.direct == cl.direct && want.userNSLimits == cl.userNSLimits &&
		want.fileSize == cl.fileSize && slices.Equal(want.cgroups, cl.cgroups) && want.lease == cl.lease
}

// started is a helper started and waiting for its spec.
type started struct {
	p         *Process
	cl        clone
	userNS    bool
	specW     *os.File // the host's end of the spec socket, the lifeline
	proxyHost *os.File
	first     chan reportResult
	trace     *startTrace
	// plan says the helper's entry may take a plan (prestart_linux.go).
	plan bool

	// The helper's clone and exec run on run's thread while the host
	// prepares (about a millisecond); await takes their outcome, once.
	ran                 chan error
	childEnds, hostEnds []*os.File
	repR                *os.File
	awaited             bool
	runErr              error
}

// await waits for the helper's exec, as spawn began it, and returns
// spawn's error if it failed. Its first call closes the child's ends of
// the descriptors (and, after a failure, the host's), and starts reading
// the helper's reports.
func (st *started) await() error {
	if st.awaited {
		return st.runErr
	}
	st.awaited = true
	if err := <-st.ran; err != nil {
		closeFiles(st.childEnds)
		closeFiles(st.hostEnds)
		st.runErr = startError(st.p.name, st.cl.off, st.userNS, err)
		return st.runErr
	}
	closeFiles(st.childEnds)
	go st.p.readReports(st.repR, st.first)
	return nil
}

// launch starts the helper with sp and waits for its first report. The
// helper is the embedded helper program unless opts say otherwise or it
// cannot run here; then it is the host program.
func launch(ctx context.Context, name string, sp *spec, userNS bool, stderr io.Writer, opts startOptions) (*Process, error) {
	st, err := spawn(name, cloneOf(sp), userNS, stderr, opts)
	if err != nil {
		return nil, err
	}
	return st.deliver(ctx, name, sp)
}

// spawn begins the helper's start as cl says and returns at once: the
// helper's clone and exec go on beside the caller, whose next call on the
// result (deliver or abort) waits for them (await) and returns their
// error if they failed. It takes cl.lease: the helper's Process frees it
// once the helper reports the server alone or is gone, or once the helper
// could not be started at all.
func spawn(name string, cl clone, userNS bool, stderr io.Writer, opts startOptions) (*started, error) {
	// Descriptors for the child (closed here once it has them) and for
	// the host.
	var childEnds, hostEnds []*os.File
	var err error
	specR, specW := socketPairUnlessFailed(&err)
	repR, repW := pipeUnlessFailed(&err)
	stdinR, stdinW := pipeUnlessFailed(&err)
	stdoutR, stdoutW := pipeUnlessFailed(&err)
	childEnds = append(childEnds, specR, repW, stdinR, stdoutW)
	hostEnds = append(hostEnds, specW, repR, stdinW, stdoutR)
	var stderrW, stderrR *os.File
	if err == nil {
		switch w := stderr.(type) {
		case nil:
			stderrW, err = os.OpenFile(os.DevNull, os.O_WRONLY, 0)
			childEnds = append(childEnds, stderrW)
		case *os.File:
			if w == nil {
				stderrW, err = os.OpenFile(os.DevNull, os.O_WRONLY, 0)
				childEnds = append(childEnds, stderrW)
				break
			}
			stderrW = w // the caller's: not ours to close
		default:
			stderrR, stderrW = pipeUnlessFailed(&err)
			childEnds = append(childEnds, stderrW)
			hostEnds = append(hostEnds, stderrR)
		}
	}
	extra := []*os.File{specR, repW}
	var proxyHost *os.File
	if err == nil && cl.proxy {
		var proxyHelper *os.File
		if proxyHost, proxyHelper, err = proxySocketPair(); err == nil {
			childEnds = append(childEnds, proxyHelper)
			hostEnds = append(hostEnds, proxyHost)
			extra = append(extra, proxyHelper) // helperProxyFD
		}
	}
	if err != nil {
		closeFiles(childEnds)
		closeFiles(hostEnds)
		if cl.lease != nil {
			cl.lease.release()
		}
		return nil, fmt.Errorf("sandbox: server %q: %w", name, err)
	}

	attr := &syscall.SysProcAttr{
		// No controlling terminal: a server must not be able to open
		// /dev/tty and push keystrokes into the user's shell (TIOCSTI).
		Setsid: true,
	}
	if !cl.off && !cl.reduced {
		// If the thread that started the helper ends, or the host dies,
		// the kernel kills the helper, and with it (as init of its PID
		// namespace) every process of the server.
		attr.Pdeathsig = syscall.SIGKILL
		attr.Cloneflags = unix.CLONE_NEWPID | unix.CLONE_NEWNS | unix.CLONE_NEWIPC
		if !cl.network {
			attr.Cloneflags |= unix.CLONE_NEWNET
		}
		if userNS {
			attr.Cloneflags |= unix.CLONE_NEWUSER
			// The user keeps their own identity inside, so files the
			// server makes are theirs; the helper keeps, across its own
			// exec, the two capabilities it needs to build the mounts and
			// then drop everything.
			uid, gid := os.Getuid(), os.Getgid()
			attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
			attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
			attr.GidMappingsEnableSetgroups = false
			attr.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_SETPCAP}
			if cl.proxy {
				// To bring the namespace's loopback up.
				attr.AmbientCaps = append(attr.AmbientCaps, unix.CAP_NET_ADMIN)
			}
			if cl.direct {
				// To listen on the nameserver's port 53 and granted ports
				// below 1024 (80, 443) in the namespace.
				attr.AmbientCaps = append(attr.AmbientCaps, unix.CAP_NET_BIND_SERVICE)
			}
			if cl.userNSLimits {
				// To lower the namespace's limits in /proc/sys/user.
				attr.AmbientCaps = append(attr.AmbientCaps, unix.CAP_SYS_RESOURCE)
			}
		}
	}
	tr := opts.trace
	path := helperPath()
	tr.mark("helper-file")
	switch {
	case opts.selfHelper:
		path = selfExe
	case opts.helper != "":
		path = opts.helper
	}
	// The embedded program's entry can start the server itself, where
	// the host builds the root (prestart_linux.go); the host program
	// re-executed has no such entry.
	plan := prestartWanted() && !cl.off && !cl.reduced && !userNS && !cl.proxy &&
		path != selfExe && detachedTreesWork()
	args := []string{helperArg0}
	if plan {
		// The host program, should run fall back to it, takes this too;
		// having no entry, it gets the spec (deliver sees p.ranSelf).
		args = append(args, helperPlanArg)
	}
	newCmd := func(path string) *exec.Cmd {
		return &exec.Cmd{
			Path: path,
			Args: args,
			// The helper's whole environment; the server never inherits
			// it (the helper execs the server with the spec's). One P,
			// for the Go helper (the prestart's entry supervises with no
			// runtime at all): its runtime starts beside the server's
			// own start, on the same cores, and its few goroutines (the
			// relay, the reaper, the umask answers) mostly block. With
			// one P they share a thread and never wake a second one to
			// spin for work: the helper used 3-5% less CPU per start,
			// about 0.2 ms (BENCHMARKS.md, "Stop 43").
			Env:         []string{"GOMAXPROCS=1"},
			Dir:         "/",
			Stdin:       stdinR,
			Stdout:      stdoutW,
			Stderr:      stderrW,
			ExtraFiles:  extra,
			SysProcAttr: attr,
		}
	}
	p := &Process{
		name:       name,
		off:        cl.off,
		fileSize:   cl.fileSize,
		stdin:      stdinW,
		stdout:     stdoutR,
		lifeline:   specW,
		done:       make(chan struct{}),
		reportDone: make(chan struct{}),
		exited:     make(chan struct{}),
		lease:      cl.lease,
	}
	if len(cl.cgroups) > 0 {
		// run moves the helper there as soon as it exists.
		p.joinDirs = cl.cgroups
		p.joined = make(chan error, 1)
	}
	if stderrR != nil {
		// Started before run, whose finish waits for it (Done also
		// means the server's stderr is delivered). If the helper does not
		// start, closing the host's ends below ends it.
		p.stderrDone = make(chan struct{})
		go func() {
			defer close(p.stderrDone)
			io.Copy(stderr, stderrR)
			stderrR.Close()
		}()
	}
	st := &started{
		p: p, cl: cl, userNS: userNS, specW: specW, proxyHost: proxyHost, first: make(chan reportResult, 1), trace: tr, plan: plan,
		ran: make(chan error, 1), childEnds: childEnds, hostEnds: hostEnds, repR: repR,
	}
	tr.mark("pipes")
	go p.run(newCmd, path, st.ran)
	return st, nil
}

// abort ends a started helper that will get no spec.
func (st *started) abort() {
	if st.await() != nil {
		return // nothing runs; await closed everything
	}
	st.p.abort()
	if st.proxyHost != nil {
		st.proxyHost.Close()
	}
}

// deliver hands sp, which must agree with what started the helper, and
// its idmapped trees to the helper, and returns the Process once the
// server runs. On an error the helper is gone.
func (st *started) deliver(ctx context.Context, name string, sp *spec) (*Process, error) {
	p, tr := st.p, st.trace
	sp.Trace = tr != nil
	var payload []byte
	var rights []int
	var plan *prestartPlan
	if st.plan {
		// The helper's entry starts the server (prestart_linux.go), from
		// a plan made while its clone and exec go on. What
		// the host cannot prepare for it (a step the kernel refuses, a
		// spec too large for the entry's memory) goes to the Go helper
		// instead, which confines or refuses as ever.
		var perr error
		plan, perr = buildPlan(sp, p.joined != nil)
		if perr == nil {
			defer plan.close()
			payload, rights = plan.payload, plan.fds
			tr.mark("plan")
		} else {
			tr.note("the Go helper starts the server: " + perr.Error())
		}
	}
	if err := st.await(); err != nil {
		return nil, err
	}
	if plan != nil && p.ranSelf {
		// The embedded program could not be executed, and the host
		// program, which has no prestart entry, stands in: it gets the
		// spec. (The deferred close finds the plan closed already.)
		plan.close()
		plan, payload, rights = nil, nil, nil
		tr.note("the Go helper starts the server: the embedded helper could not be executed")
	}
	if st.proxyHost != nil {
		// Every way out of deliver is done with it: the listener it
		// carried has been taken, or will never be.
		defer st.proxyHost.Close()
	}
	if !st.cl.agrees(sp) {
		p.abort()
		return nil, fmt.Errorf("sandbox: server %q: the helper was started for another spec than the one prepared (a bug in package sandbox)", name)
	}
	if len(sp.Idmap) != len(sp.idmapFiles) || len(sp.Idmap) > maxIdmap {
		// runUnprivileged refuses more than maxIdmap with a config error.
		p.abort()
		return nil, fmt.Errorf("sandbox: server %q: %d idmapped trees for %d paths, at most %d (a bug in package sandbox)", name, len(sp.idmapFiles), len(sp.Idmap), maxIdmap)
	}
	if plan == nil {
		var err error
		payload, err = encodeSpec(sp)
		if err != nil {
			p.abort()
			return nil, fmt.Errorf("sandbox: server %q: %w", name, err)
		}
		if sp.Root {
			rights = append(rights, int(sp.rootFile.Fd()))
		}
		for _, f := range sp.idmapFiles {
			rights = append(rights, int(f.Fd()))
		}
	}
	// The spec with the trees, in one message; then, once run has moved
	// the helper into the server's cgroups, the byte that tells the
	// helper so. The trees are the caller's to close once deliver returns:
	// the helper has its own by then, or is gone.
	written := make(chan error, 1)
	go func() {
		err := sendSpec(st.specW, payload, rights)
		if p.joined != nil {
			jerr := <-p.joined
			if err == nil {
				err = jerr
			}
			if err == nil {
				_, err = st.specW.Write([]byte{cgroupJoined})
			}
		}
		written <- err
	}()

	// fail ends the helper, and waits for the writer, which holds the
	// trees' descriptor numbers until it is done (the caller closes them).
	fail := func(err error) (*Process, error) {
		p.abort()
		<-written
		return nil, err
	}
	var res reportResult
	select {
	case res = <-st.first:
	case <-ctx.Done():
		return fail(fmt.Errorf("sandbox: server %q: starting: %w", name, ctx.Err()))
	}
	if jerr := p.joinError(); jerr != nil {
		// run could not move the helper into the server's cgroups, and
		// killed it.
		return fail(fmt.Errorf("sandbox: server %q: %w", name, jerr))
	}
	if res.err != nil {
		// The helper died without saying why; its exit status and stderr
		// (in cfg.Stderr) tell the rest.
		return fail(fmt.Errorf("sandbox: server %q: the sandbox helper ended before starting the server (%s): %w", name, p.ExitStatus(), res.err))
	}
	if res.rep.Error != "" {
		return fail(reportError(name, res.rep, st.userNS))
	}
	// The helper could only report after reading the whole spec.
	<-written
	if tr != nil {
		tr.rejoin()
		tr.markAt("clone-exec", p.traceExeced)
		phases := helperPhases
		if plan != nil {
			phases = prestartPhases
		}
		traceHelper(tr, phases, res.rep.Trace)
		tr.mark("report")
		if p.joinDirs != nil {
			tr.span("host-cgroup-join", p.traceJoin[0], p.traceJoin[1])
		}
	}
	p.confinement = res.rep.Confinement
	if st.proxyHost != nil && !sp.Probe {
		socks, err := receiveProxySockets(st.proxyHost, sp.Direct)
		if err != nil {
			p.abort()
			return nil, fmt.Errorf("sandbox: server %q: %w", name, err)
		}
		p.proxySockets = socks.closers()
		p.proxyDone = make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			sp.proxy.Serve(socks.proxy)
		}()
		if d, ok := sp.proxy.(DirectProxy); ok && sp.Direct != nil {
			wg.Add(1)
			go func() {
				defer wg.Done()
				d.ServeDirect(socks.direct, socks.dns, socks.dnsStream)
			}()
		}
		go func() {
			wg.Wait()
			close(p.proxyDone)
		}()
	}
	return p, nil
}

// reportError is Start's error for the helper's report rep of why the
// server did not start (rep.Error); userNS says the helper ran in a user
// namespace.
func reportError(name string, rep report, userNS bool) error {
	switch {
	case rep.Linked:
		// As rootHostError says it where the host opens the grants.
		return invalidConfig(name, fmt.Errorf("%w: %s: a granted path became a symbolic link while the server started", ErrLinkedPath, rep.Error))
	case rep.Unsupported && userNS:
		// In a user namespace the kernel gave, a step that needs its
		// privileges failed (an AppArmor policy empties them).
		why := "in the user namespace the kernel gave, " + rep.Error
		return &userNSError{why, unsupported(name, why)}
	case rep.Unsupported:
		return unsupported(name, rep.Error)
	}
	return fmt.Errorf("sandbox: server %q: %s", name, rep.Error)
}

// sendSpec writes payload to the spec socket f, the first bytes in one
// message with the descriptors rights.
func sendSpec(f *os.File, payload []byte, rights []int) error {
	sc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var n int
	var serr error
	err = sc.Write(func(fd uintptr) bool {
		var oob []byte
		if len(rights) > 0 {
			oob = unix.UnixRights(rights...)
		}
		n, serr = unix.SendmsgN(int(fd), payload, oob, nil, unix.MSG_NOSIGNAL)
		return serr != unix.EAGAIN
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("sending the spec: %w", err)
	}
	if n < len(payload) {
		if _, err := f.Write(payload[n:]); err != nil {
			return fmt.Errorf("sending the spec: %w", err)
		}
	}
	return nil
}

// socketPairUnlessFailed is pipeUnlessFailed for a stream socketpair.
func socketPairUnlessFailed(err *error) (r, w *os.File) {
	if *err != nil {
		return nil, nil
	}
	fds, e := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if e != nil {
		*err = fmt.Errorf("socketpair for the spec: %w", e)
		return nil, nil
	}
	return os.NewFile(uintptr(fds[0]), "spec-helper"), os.NewFile(uintptr(fds[1]), "spec-host")
}

// startError explains a failure to start the helper process itself.
func startError(name string, off, userNS bool, err error) error {
	if !off {
		var errno syscall.Errno
		if errors.As(err, &errno) {
			switch errno {
			case syscall.EPERM, syscall.EINVAL, syscall.ENOSPC, syscall.EUSERS, syscall.EACCES:
				u := unsupported(name, fmt.Sprintf("creating the sandbox's namespaces failed (%v); user namespaces may be disabled for unprivileged users (sysctls kernel.unprivileged_userns_clone, user.max_user_namespaces, kernel.apparmor_restrict_unprivileged_userns) or forbidden in this container", err))
				if userNS {
					return &userNSError{fmt.Sprintf("the kernel refuses this user a user namespace (%v)", errno), u}
				}
				return u
			}
		}
		if errors.Is(err, fs.ErrNotExist) {
			return unsupported(name, fmt.Sprintf("re-executing this program through /proc/self/exe failed (%v); is /proc mounted?", err))
		}
	}
	return fmt.Errorf("sandbox: server %q: starting the sandbox helper: %w", name, err)
}

// reportResult is the first report from the helper, or why there was none.
type reportResult struct {
	rep report
	err error
}

// run starts the helper and waits for it, on a locked thread: Pdeathsig
// fires when the thread that started the child ends, so that thread must
// live exactly as long as the helper. It is never unlocked; when run
// returns after the helper's end, the runtime ends the thread with it.
//
// The helper is newCmd(path); when path is the embedded helper program and
// it cannot be executed, a root host's copy gives way to a memory file
// (helperRefused), and where that cannot run either (a security module
// may forbid executing memory files) the host program stands in, now and
// for every later start.
func (p *Process) run(newCmd func(path string) *exec.Cmd, path string, started chan<- error) {
	runtime.LockOSThread()
	defer close(p.exited)
	startAt := func(path string) (*exec.Cmd, error) {
		cmd := newCmd(path)
		release, err := passHelper(cmd)
		if err == nil {
			err = cmd.Start()
			release()
		}
		return cmd, err
	}
	cmd, err := startAt(path)
	for try := 1; try <= 3 && errors.Is(err, syscall.ETXTBSY) && path != selfExe; try++ {
		// A descriptor that could write the program's file still open
		// somewhere: a child another goroutine forked while a copy was
		// being written (helperCache), until that child's own exec.
		time.Sleep(time.Duration(try) * time.Millisecond)
		cmd, err = startAt(path)
	}
	if err != nil && path != selfExe {
		if next := helperRefused(path); next != "" {
			path = next
			cmd, err = startAt(path)
		}
	}
	p.traceExeced = monoNow() // the helper runs from here on
	if err != nil && path != selfExe {
		first := err
		if cmd, err = startAt(selfExe); err == nil {
			disableEmbedded(first)
			p.ranSelf = true
		}
		p.traceExeced = monoNow()
	}
	if err != nil {
		if p.lease != nil {
			p.lease.release()
		}
		if p.joined != nil {
			p.joined <- err
		}
		started <- err
		return
	}
	p.helper = cmd.Process
	started <- nil
	if p.joinDirs != nil {
		// The helper is not reaped before this is done, so its pid names
		// it and no other process.
		from := monoNow()
		jerr := joinCgroups(p.joinDirs, cmd.Process.Pid)
		p.traceJoin = [2]int64{from, monoNow()}
		if jerr != nil {
			p.mu.Lock()
			p.joinErr = jerr
			p.mu.Unlock()
			cmd.Process.Kill()
		}
		p.joined <- jerr
	}
	cmd.Wait()
	if p.lease != nil {
		// The helper, init of the server's PID namespace, is reaped
		// after every other process of it: the server's uid is free.
		p.lease.release()
	}
	// The report pipe reaches EOF when the helper is gone (nothing else
	// holds it), so this wait is short.
	<-p.reportDone
	status := "unknown"
	if cmd.ProcessState != nil {
		status = cmd.ProcessState.String()
	}
	p.finish(status)
}

// joinCgroups moves the process pid (the helper, in the host's PID
// namespace) into each of the cgroups dirs.
func joinCgroups(dirs []string, pid int) error {
	b := []byte(strconv.Itoa(pid))
	for _, d := range dirs {
		if err := os.WriteFile(d+"/cgroup.procs", b, 0); err != nil {
			return fmt.Errorf("moving the sandbox helper into the cgroup %s: %w", d, err)
		}
	}
	return nil
}

// joinError is why run could not move the helper into the server's
// cgroups, or nil.
func (p *Process) joinError() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.joinErr
}

// traceHelper puts the helper's timestamps (report.Trace) on tr.
// phases names its intervals (helperPhases, or prestartPhases).
func traceHelper(tr *startTrace, phases []string, ts string) {
	f := strings.Fields(ts)
	if len(f) != len(phases) {
		tr.note("helper trace: " + ts)
		return
	}
	for i, v := range f {
		at, _ := strconv.ParseInt(v, 10, 64)
		tr.markAt(phases[i], at)
	}
}

// parseMarks reads a report's Trace; a field that is no number is 0.
func parseMarks(ts string) []int64 {
	var marks []int64
	for _, v := range strings.Fields(ts) {
		at, _ := strconv.ParseInt(v, 10, 64)
		marks = append(marks, at)
	}
	return marks
}

// readReports reads the helper's reports: the first goes to first, an exit
// report is kept as the exit status.
func (p *Process) readReports(r *os.File, first chan<- reportResult) {
	defer close(p.reportDone)
	defer r.Close()
	br := bufio.NewReader(r)
	rep, err := readReport(br)
	first <- reportResult{rep, err}
	if err != nil || !rep.Started {
		io.Copy(io.Discard, br)
		return
	}
	for {
		rep, err := readReport(br)
		if err != nil {
			io.Copy(io.Discard, br)
			return
		}
		if rep.Exit != "" {
			if rep.Alone && p.lease != nil {
				// No process or thread runs as the server's uid any
				// more (the helper's other threads never did): free
				// it now, not when the helper is reaped, which a host
				// that exits right after Close (the CLI) never sees.
				// Its lock file would keep the host's pid, and the
				// next start would scan /proc before taking the slot.
				// Before alone is set: Close, once it sees alone, does
				// not wait for the helper, so the slot is free by then.
				p.lease.release()
			}
			p.mu.Lock()
			p.reported = rep.Exit
			p.alone = rep.Alone
			if rep.Trace != "" {
				p.exitTrace = append(parseMarks(rep.Trace), monoNow())
			}
			p.mu.Unlock()
			if rep.Alone {
				p.finish(rep.Exit)
			}
		}
	}
}

// abort ends a helper that did not start its server properly.
func (p *Process) abort() {
	p.helper.Kill()
	p.lifeline.Close()
	p.waitDone(killWait)
	p.stdin.Close()
	p.stdout.Close()
}

// setHome makes the directory home the server's home (Config.Home): at the
// path of its HOME where that can be a mount point of its own, else at
// home's own path, with HOME set to where it is. s.Read and s.Write must be final;
// realHomes are the host's home directories, which home must not expose;
// sys the system read paths (both canonical).
func (s *spec) setHome(home string, realHomes, sys []string) error {
	src, err := canonical("home directory", home)
	if err != nil {
		return err
	}
	if st, err := os.Stat(src); err != nil || !st.IsDir() {
		return fmt.Errorf("home directory %s is not a directory", home)
	}
	switch {
	case src == "/" || underAny(src, sys):
		return fmt.Errorf("home directory %s is / or a system directory", home)
	case underAny(src, s.Write):
		return fmt.Errorf("home directory %s lies in the worktree or a writable path, where another server could reach it; use a directory outside them", home)
	case anyUnder(realHomes, src):
		return fmt.Errorf("home directory %s is or contains the home directory %s: a server must never get the real one; use a directory of its own", home, strings.Join(realHomes, ", "))
	case anyUnder(s.Write, src) || anyUnder(s.Read, src):
		return fmt.Errorf("home directory %s contains a granted path; use a directory of its own", home)
	}
	target := ""
	if h, ok := envValue(s.Env, "HOME"); ok && filepath.IsAbs(h) {
		c := filepath.Clean(h)
		if r, err := filepath.EvalSymlinks(c); err == nil {
			c = r
		}
		binds := outermost(append(append([]string(nil), s.Read...), s.Write...))
		if c != "/" && !underAny(c, binds) && !underAny(c, []string{"/proc", "/sys", "/dev"}) {
			target = c
		}
	}
	if target == "" {
		// Nowhere of its own to show it: at its own path.
		if underAny(src, s.Read) {
			return fmt.Errorf("home directory %s lies in a read path; use a directory outside the grants", home)
		}
		target = src
	}
	s.Home, s.HomeSource = target, src
	s.Env = setEnv(s.Env, "HOME", target)
	return nil
}

// prepareHome makes in the server's home directory, on the host, the
// mount points of the granted paths that the helper binds beneath the
// home's place in the view (the worktree when HOME holds it, a dotfile
// granted with read). The helper cannot always make them itself: a root
// host's helper has no identity in an idmapped home. What is there already
// (a persistent home the server wrote) is used only as an empty place to
// mount on; a symbolic link or a file where a directory belongs fails the
// start, with no link followed.
//
// tmpPoint is the mount point it made for the server's TMPDIR, as a path
// beneath s.HomeSource ("/tmp/mcphost-..."), or "": its name is new at
// every start, so the caller removes it once the server is gone
// (removeMountPoint), or the home would keep one empty directory per
// start.
func prepareHome(s *spec) (tmpPoint string, err error) {
	if s.Home == "" {
		return "", nil
	}
	plan, err := planMounts(s)
	if err != nil {
		return "", err
	}
	root, err := openNoSymlinks(s.HomeSource)
	if err != nil {
		return "", err
	}
	defer unix.Close(root)
	points := plan.Binds
	if plan.Tmp != "" {
		points = append(append([]string(nil), points...), plan.Tmp)
	}
	for _, b := range points {
		if b == s.Home || !isUnder(b, s.Home) {
			continue
		}
		// TMPDIR is a directory the helper mounts a tmpfs on, which need
		// not exist on the host (hostTmpNeeded); a bind's mount point is
		// what its source on the host is.
		dir := true
		if b != plan.Tmp {
			st, err := os.Stat(b)
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					continue // the helper skips it too
				}
				return tmpPoint, err
			}
			dir = st.IsDir()
		}
		rel := "/" + strings.TrimPrefix(b, s.Home+"/")
		mp, err := makeMountPoint(root, rel, dir)
		if err != nil {
			return tmpPoint, fmt.Errorf("making the mount point of %s: %w", b, err)
		}
		unix.Close(mp)
		if b == plan.Tmp {
			tmpPoint = rel
		}
	}
	return tmpPoint, nil
}

// removeMountPoint removes the empty directory rel (a path beneath home,
// as prepareHome returns it) in the directory home, following no link: a
// server that wrote its home may have replaced a parent with one, and the
// host removes nothing outside the home. A directory that is gone, not
// empty, or made unreachable (a server may take the permissions off its
// own directories) is left as it is: one empty directory in the server's
// own home, not a reason to fail Close. Only an empty mount point is
// removed.
func removeMountPoint(home, rel string) error {
	err := unlinkBeneath(home, rel)
	for _, left := range []unix.Errno{
		unix.ENOENT, unix.ENOTEMPTY, unix.EEXIST, unix.ENOTDIR, unix.EBUSY, // gone, or not an empty directory
		unix.ELOOP, unix.EXDEV, // a link on the way
		unix.EACCES, unix.EPERM, // the server took the permissions off
	} {
		if errors.Is(err, left) {
			return nil
		}
	}
	return err
}

// unlinkBeneath removes the directory rel beneath home, following no link.
func unlinkBeneath(home, rel string) error {
	root, err := openNoSymlinks(home)
	if err != nil {
		return err
	}
	defer unix.Close(root)
	dir, err := openBeneath(root, filepath.Dir(rel))
	if err != nil {
		return &os.PathError{Op: "open", Path: filepath.Join(home, filepath.Dir(rel)), Err: errors.Unwrap(err)}
	}
	defer unix.Close(dir)
	if err := unix.Unlinkat(dir, filepath.Base(rel), unix.AT_REMOVEDIR); err != nil {
		return &os.PathError{Op: "remove", Path: filepath.Join(home, rel), Err: err}
	}
	return nil
}
