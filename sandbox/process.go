package sandbox

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mcphost/mcphost/internal/bytesize"
)

// ErrUnsupported is wrapped by the error of Start and Probe when this
// system cannot confine a server: no Landlock (or it is disabled), no
// seccomp filter for this architecture, namespaces refused (unprivileged
// user namespaces disabled, a restrictive container), or not Linux. The
// error's text says which, and how to opt out.
var ErrUnsupported = errors.New("sandbox: this system cannot confine the server")

// ErrInvalidConfig is wrapped by the error of Start when the Config cannot
// be used as given: an empty command, a relative or missing path, a
// writable path that would expose the home directory, a protected path that
// does not exist yet inside a writable one, and so on. The error's text
// names the field and the value.
var ErrInvalidConfig = errors.New("sandbox: invalid config")

// Config describes one server process. It is plain data; the zero value of
// every field is the safe default (confined, no network, nothing extra
// granted).
type Config struct {
	// Name is the server's name, used in error text and in the name of
	// its temporary directory.
	Name string
	// Argv is the command, run without a shell. Argv[0] is looked up
	// through the PATH of the scrubbed environment (absolute entries
	// only); with a slash it is taken relative to Worktree.
	Argv []string
	// Worktree is the server's working directory, which it may read and
	// write. Absolute; it must exist and must not contain the home
	// directory.
	Worktree string
	// Env are variables added to the scrubbed environment, overriding it
	// (except TMPDIR, TMP and TEMP).
	Env map[string]string
	// EnvPass names variables copied from HostEnv when present.
	EnvPass []string
	// HostEnv is the environment to scrub; nil means os.Environ().
	HostEnv []string
	// Read are extra paths the server may read and execute. Absolute
	// (expand ~ first); they must exist.
	Read []string
	// Write are extra paths the server may read, write and execute.
	// Absolute; they must exist.
	Write []string
	// Protect are absolute paths that must stay unwritable and
	// unreplaceable by the server even when they lie inside Worktree or a
	// Write path (the state directory, the agent's config file, other
	// servers' programs). Inside a writable path a protected path must
	// already exist; outside every writable path nothing is needed, and a
	// path that does not exist is fine. Start also protects, without being
	// told, the server's own program files (see Programs) and, unless
	// WritableGit, the git directory. See the package documentation for
	// what this does not cover.
	Protect []string
	// WritableGit leaves the repository's git directory as writable as
	// the path it lies in. By default (false) it is read-only to the
	// server, like a Protect path: the ".git" of Worktree or of its
	// nearest ancestor that has one and, when that ".git" is a file
	// ("gitdir: ..."), the git directory it names and that directory's
	// common directory, wherever they lie in a writable path. A server
	// that can write them can make git run its code on the host (hooks,
	// core.fsmonitor), so this is a grant to show as a risk.
	WritableGit bool
	// PeerWrite are paths that other servers of the same host may write.
	// A Read or Write path, the program or its script going through a
	// symbolic link that lies there (or in Worktree, TMPDIR or a Write
	// path) is refused with an error wrapping ErrLinkedPath.
	PeerWrite []string
	// Network false (the default) gives the server no network at all:
	// no TCP, UDP, MPTCP, raw, packet or netlink socket, only unix
	// sockets and a NETLINK_ROUTE socket that lists the interfaces of its
	// empty network namespace. True gives it the host's network.
	Network bool
	// RequireFull makes Start fail with ErrUnsupported rather than confine
	// the server in the reduced tier, where the host may not create user
	// namespaces (`sandbox = "full"`). See Process.Lacks for what that
	// tier lacks.
	RequireFull bool
	// Home, when not empty, is a directory of the host's (absolute,
	// existing) that the server gets as its home directory, writable: it
	// is bound at the path of the server's HOME, so that ~ is where the
	// server expects it and holds only what the server wrote there, with
	// Read and Write paths that lie beneath HOME (a dotfile, the worktree)
	// bound on top of it; the host's own home directory stays out of
	// sight. Start makes the mount points of those paths in Home. Where
	// HOME is unset, not absolute, or lies in a system or granted path,
	// Home is shown at its own path and HOME is set to it. Home must lie
	// outside the worktree and the Write paths, and must neither be nor
	// contain the host's home directory; each server needs its own.
	Home string
	// TempHome gives the server, as Home does, a fresh empty home
	// directory that Close removes: a tmpfs of at most Limits.Tmp bytes,
	// which never reaches the host's disk (in the reduced tier, which
	// mounts nothing, a directory named mcphost-NAME-home-* in the host's
	// temporary directory, bounded only per file by Limits.FileSize). It
	// excludes Home.
	TempHome bool
	// Proxy, when not nil and Network is false, gives the server the
	// network through Proxy alone: the server keeps its empty network
	// namespace, whose loopback is brought up with one listener on
	// 127.0.0.1:ProxyPort, and every connection to it is served by
	// Proxy.Serve (in a goroutine of the host, from Start until Close).
	// The server's environment points HTTP_PROXY, HTTPS_PROXY, ALL_PROXY
	// (both cases), NODE_USE_ENV_PROXY and npm's proxy settings there,
	// over Env; seccomp lets it make TCP sockets (no UDP, raw or other
	// family) and Landlock (ABI 4+) lets it connect to that port only and
	// bind none. A Proxy that is a DirectProxy also serves the clients
	// that ignore those variables: see DirectProxy for what the namespace
	// gets then (UDP to its nameserver and connections to the granted
	// ports among it). What the proxy lets through is the Proxy's business.
	Proxy Proxy
	// Off runs the server unconfined: only the scrubbed environment, the
	// private TMPDIR and the lifetime guarantees remain (Read, Write,
	// Protect, Network, Proxy, Home and TempHome are ignored: HOME is the
	// host's). It is the user's explicit
	// `sandbox = "off"`, a risk; Confinement then reports "none".
	Off bool
	// Limits bound the server's processes, memory and temporary space;
	// the zero value gives the defaults (see Limits). Off ignores them.
	Limits Limits
	// Stderr receives the server's standard error; nil discards it. An
	// *os.File is handed to the server as its descriptor 2 (so the server
	// can also seek or truncate it); any other writer, such as a bounded
	// buffer, is fed by a goroutine and sees only what the server writes.
	Stderr io.Writer
}

// Process is a running server started by Start. Its methods are safe for
// concurrent use.
type Process struct {
	name        string
	off         bool
	stdin       *os.File
	stdout      *os.File
	confinement string
	tempDir     string
	tempOnHost  bool // tempDir was made on the host; Close removes it
	// removeTmpPoint removes the empty mount point of tempDir that Start
	// made in a private home (prepareHome), or is nil.
	removeTmpPoint func() error
	tempHome       string // removed by Close too, if not ""
	helper         *os.Process
	// lifeline is the host's end of the spec socket. The helper ends the
	// server when it reads EOF: when Close closes it, or when the host
	// dies and the kernel closes it.
	lifeline     *os.File
	done         chan struct{} // closed when the server and all it started are gone
	doneOnce     sync.Once
	reportDone   chan struct{} // closed when the helper's reports are read
	exited       chan struct{} // closed when the helper process has been waited for
	stderrDone   chan struct{} // closed when the stderr copy ends; nil without one
	proxySockets []io.Closer   // the sockets Config.Proxy serves; nil without one
	proxyDone    chan struct{} // closed when Config.Proxy's Serve (and ServeDirect) returned

	mu         sync.Mutex
	reported   string // how the server ended, as the helper reported it
	exitStatus string // set when done closes

	closeOnce sync.Once
	closeErr  error

	limits   string   // how Limits are enforced, for Limits()
	fileSize int64    // the server's RLIMIT_FSIZE, for ExitStatus; 0 if none
	reduced  bool     // confined in the reduced tier: no namespaces
	lacks    []string // what the confinement lacks, for Lacks()
	// alone: the helper reported that it reaped every process of the
	// server (under mu).
	alone bool
	// lease, on a root host, holds the server's uid; it is freed when the
	// helper reports the server alone (readReports), else once the helper
	// has been reaped (run).
	lease *serverIDLease
	// removeCgroup removes the server's cgroup once it is empty, and
	// limitHits says which of its limits the kernel enforced on the
	// server (cgroup.hits); both nil without a cgroup.
	removeCgroup func() error
	limitHits    func() string
	cgroupDirs   []string // the server's cgroups (for tests)

	// joinDirs, on a root host without spec.CgroupsSelf (cgroup v2), are
	// the server's cgroups, which run moves the helper into right after
	// starting it; joined gets the result (for the spec writer), joinErr
	// keeps a failure (under mu).
	joinDirs []string
	joined   chan error
	joinErr  error

	// ranSelf says run executed the host program as the helper, the
	// embedded one having failed to execute (set before run reports to
	// spawn's caller).
	ranSelf bool

	// trace: Start traced itself, so Close does too
	// (MCPHOST_START_TRACE); traceExeced and traceJoin are run's
	// timestamps for Start's trace.
	trace       bool
	traceExeced int64
	traceJoin   [2]int64
	// exitTrace, when tracing, is the helper's Exit report's timestamps
	// and the host's receipt of it, under mu.
	exitTrace []int64

	// endTree, outside Linux, kills the server's process tree (its
	// session and process group, or its job object) and waits for it;
	// noteTree, where set, records the tree's processes as Close begins.
	// Both are nil on Linux, where the helper does that.
	endTree  func() error
	noteTree func()
}

// Lacks lists, in words for a person, what the confinement of this server
// lacks: compared with the full one (the reduced tier, on a host that may
// not create user namespaces), or, in the full tier of a host that is not
// root, the person's kernel budgets it still shares (descriptors in
// flight, pipe pages, the person's process count); nil for a root host's
// fully confined server or Off.
func (p *Process) Lacks() []string { return p.lacks }

// Limits says how the server's Limits are enforced here: by a cgroup or by
// rlimits, with the numbers; "" for an unconfined server.
func (p *Process) Limits() string { return p.limits }

// Stdin returns the server's standard input. Closing it tells a well
// behaved server to exit.
func (p *Process) Stdin() io.WriteCloser { return p.stdin }

// Stdout returns the server's standard output. Close closes it.
func (p *Process) Stdout() io.ReadCloser { return p.stdout }

// Confinement describes how the server is confined, for people to read:
// for example "landlock-v7+seccomp+pidns+mntns+ipcns+netns" ("+userns"
// when the host is not root, no "+netns" with the network on), or "none"
// for Config.Off.
func (p *Process) Confinement() string { return p.confinement }

// TempDir returns the server's private temporary directory (its TMPDIR),
// as the server sees it. Where the server has a root of its own (the full
// tier, unless a grant shows the host's directories there) it is a tmpfs
// in that root and nothing on the host: host code must not make or use
// that path. Elsewhere Start made it on the host, and Close removes it.
func (p *Process) TempDir() string { return p.tempDir }

// Done returns a channel closed once the server has exited or been
// killed, and with it every process it started, and what they wrote to
// stderr has been written to Config.Stderr (waited for at most 2 s).
func (p *Process) Done() <-chan struct{} { return p.done }

// ExitStatus describes how the server ended, in the words of
// os.ProcessState ("exit status 3", "signal: killed"), followed, in
// parentheses, by the limits that ended it or refused it something, with
// their config keys (see Limits). It is "" until Done is closed.
func (p *Process) ExitStatus() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exitStatus
}

// How long Close waits for the kernel or the helper to end the server's
// processes after it asked, and for the last of the server's stderr.
const (
	killWait   = 10 * time.Second
	stderrWait = 2 * time.Second
)

// Close ends the server and every process it started (daemons that called
// setsid and double-forked included), waits for them, closes Stdin and
// Stdout and removes TempDir. It first closes Stdin and gives the server up
// to grace to exit on its own, then kills everything. Where the sandbox's
// helper reported that it reaped every process of the server itself, and
// the helper is not in the server's cgroups (it is not on cgroup v1, nor
// without cgroups; on v2 they hold it until it is gone), Close does not
// wait for the helper's own exit (the kernel's teardown of the
// namespaces, about a millisecond): the helper is reaped in the
// background, or, if the host exits first, ends with it a moment later
// (it is in the host's own cgroup until then).
//
// Close is idempotent and safe to call concurrently and after the server
// died; every call returns the first call's result. It returns within
// grace plus twelve seconds, even if processes refuse to die (stuck in the
// kernel: its error then says so) or a writer given as Config.Stderr
// blocks.
func (p *Process) Close(grace time.Duration) error {
	p.closeOnce.Do(func() { p.closeErr = p.close(grace) })
	return p.closeErr
}

func (p *Process) close(grace time.Duration) error {
	var errs []error
	var tr *startTrace
	if p.trace {
		tr = newTrace("close", p.name)
		defer tr.print()
	}
	if p.noteTree != nil {
		p.noteTree()
	}
	// Taken before the close: after it, a host thread preempted on a
	// busy machine could read the clock after the server's exit.
	stdinClosed := monoNow()
	closeQuietly(p.stdin)
	if grace > 0 {
		t := time.NewTimer(grace)
		select {
		case <-p.done:
		case <-t.C:
		}
		t.Stop()
	}
	tr.mark("server-done")
	p.mu.Lock()
	if x := p.exitTrace; len(x) == 4 && x[0] > stdinClosed {
		// Where server-done went: the server's exit (as the helper saw
		// it), the reaping of the rest, the confining thread's end, the
		// report's way to the host.
		tr.span("server-exit", stdinClosed, x[0])
		tr.span("helper-reap", x[0], x[1])
		tr.span("helper-thread", x[1], x[2])
		tr.span("report-read", x[2], x[3])
	}
	p.mu.Unlock()
	select {
	case <-p.done:
	default:
		if err := p.kill(); err != nil {
			errs = append(errs, err)
		}
		tr.mark("kill")
	}
	closeQuietly(p.lifeline)
	// Done can close when the helper reports every process of the server
	// gone and reaped (alone), a moment before the helper itself exits:
	// nothing of the server is left, and the helper, whose last act that
	// report was, is reaped in the background (run). Otherwise, or when
	// the host moved the helper into the server's cgroups (cgroup v2:
	// they hold it until it has exited), Close waits for it, and then
	// removes the cgroups: left to the background, a host that exits right
	// after Close (the CLI) would leave them beneath its own cgroup, which
	// keeps whoever made that (a test, a service manager) from removing it
	// until some later start sweeps them. On cgroup v1 the helper is never
	// in them (spec.CgroupsSelf): they are empty once the server is.
	if !p.helperAlone() || p.joinDirs != nil {
		if err := p.waitExited(); err != nil {
			errs = append(errs, err)
		}
		tr.mark("helper-exit")
	}
	if p.proxySockets != nil {
		// Nothing of the server is left to connect: Serve (and
		// ServeDirect) end and close the connections they had.
		for _, c := range p.proxySockets {
			c.Close()
		}
		select {
		case <-p.proxyDone:
		case <-time.After(killWait):
			errs = append(errs, fmt.Errorf("its network proxy did not stop within %v", killWait))
		}
	}
	if p.stderrDone != nil {
		select {
		case <-p.stderrDone:
		case <-time.After(stderrWait):
		}
	}
	closeQuietly(p.stdout)
	tr.mark("stderr-stdout")
	if p.removeCgroup != nil {
		if err := p.removeCgroup(); err != nil {
			errs = append(errs, fmt.Errorf("removing the cgroup: %w", err))
		}
		tr.mark("cgroup-remove")
	}
	if p.tempOnHost {
		if err := removeAll(p.tempDir); err != nil {
			errs = append(errs, fmt.Errorf("removing the temporary directory: %w", err))
		}
	}
	if p.tempHome != "" {
		if err := removeAll(p.tempHome); err != nil {
			errs = append(errs, fmt.Errorf("removing the temporary home directory: %w", err))
		}
	}
	if p.removeTmpPoint != nil {
		if err := p.removeTmpPoint(); err != nil {
			errs = append(errs, fmt.Errorf("removing the mount point of its TMPDIR in its home: %w", err))
		}
	}
	tr.mark("tmp-remove")
	if len(errs) > 0 {
		return fmt.Errorf("sandbox: server %q: closing: %w", p.name, errors.Join(errs...))
	}
	return nil
}

// helperAlone reports whether the helper said it reaped every process of
// the server before exiting.
func (p *Process) helperAlone() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.alone
}

// waitExited waits for the helper process to be reaped, killing it if it
// lingers past killWait.
func (p *Process) waitExited() error {
	if p.exited == nil {
		return nil
	}
	t := time.NewTimer(killWait)
	defer t.Stop()
	select {
	case <-p.exited:
		return nil
	case <-t.C:
	}
	p.helper.Kill()
	select {
	case <-p.exited:
		return nil
	case <-time.After(killWait):
		return errors.New("the sandbox helper did not exit after SIGKILL")
	}
}

// kill ends the server's processes and waits, at most killWait, for Done.
func (p *Process) kill() error {
	if p.endTree != nil {
		if err := p.endTree(); err != nil {
			return err
		}
		return p.waitDone(killWait)
	}
	if !p.off && !p.reduced {
		// The helper is init of the server's PID namespace: when it dies
		// the kernel kills everything else in the namespace.
		p.helper.Kill()
		return p.waitDone(killWait)
	}
	// Unconfined, only the helper knows the server's processes: closing
	// the lifeline makes it kill them all, then exit. (It gives up after
	// five seconds; that it has not exited by then means it is stuck.)
	closeQuietly(p.lifeline)
	if err := p.waitDone(killWait * 3 / 4); err == nil {
		return nil
	}
	p.helper.Kill()
	if err := p.waitDone(killWait / 4); err != nil {
		return err
	}
	return errors.New("the helper did not end the server's processes in time and was killed; some may survive")
}

// waitDone waits up to limit for Done.
func (p *Process) waitDone(limit time.Duration) error {
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-p.done:
		return nil
	case <-t.C:
		return fmt.Errorf("the server's processes did not exit within %v of being killed", limit)
	}
}

func closeQuietly(f *os.File) {
	if f != nil {
		f.Close()
	}
}

// removeAll removes the tree at dir even where the server took away the
// permissions needed to remove it (a directory without write or search
// permission), as the server's own files are the host user's.
func removeAll(dir string) error {
	err := os.RemoveAll(dir)
	if err == nil {
		return nil
	}
	// WalkDir calls the function for a directory before reading it, so
	// restoring the permissions there lets it read on.
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, _ error) error {
		if d != nil && d.IsDir() {
			os.Chmod(path, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}

// finish records how the server ended, unless that is known already, and
// closes Done. It is called when the helper reports that the server and
// everything it started are gone, and when the helper has exited.
func (p *Process) finish(status string) {
	p.doneOnce.Do(func() {
		p.mu.Lock()
		if p.reported != "" {
			status = p.reported
		}
		var hits []string
		if p.limitHits != nil {
			if h := p.limitHits(); h != "" {
				hits = append(hits, h)
			}
		}
		if h := fileSizeHit(status, p.fileSize); h != "" {
			hits = append(hits, h)
		}
		if len(hits) > 0 {
			status += " (" + strings.Join(hits, "; ") + ")"
		}
		p.exitStatus = status
		p.mu.Unlock()
		// Done also means that what the server wrote to stderr has
		// reached Config.Stderr: a crash's last words are there before
		// anyone who waited for Done reads them. Nothing of the server
		// holds stderr by now, so this is the pipe draining; it is
		// bounded all the same.
		if p.stderrDone != nil {
			select {
			case <-p.stderrDone:
			case <-time.After(stderrWait):
			}
		}
		close(p.done)
	})
}

// xfszStatus starts the status of a process ended by SIGXFSZ, in the words
// of os.ProcessState ("signal: file size limit exceeded", and maybe
// " (core dumped)").
const xfszStatus = "signal: file size limit exceeded"

// fileSizeHit is the note ExitStatus adds when the server was ended by
// SIGXFSZ under a file size limit of limit bytes (status is how it ended):
// the kernel sends that signal to a process whose write would take a file
// past its RLIMIT_FSIZE.
func fileSizeHit(status string, limit int64) string {
	if limit <= 0 || !strings.HasPrefix(status, xfszStatus) {
		return ""
	}
	return fmt.Sprintf("a file it wrote reached the server's file size limit, %s: max_file_size", bytesize.Format(limit))
}
