package sandbox

import (
	"os"
	"sync"
)

// Limits bound what one server may use of the machine. The zero value of
// each field means its default; the defaults are on for every confined
// server (Config.Off ignores Limits).
//
// How each is enforced depends on the host (Process.Limits says which):
//
//   - Processes: a cgroup's pids.max where the host can make a cgroup (a
//     root host, with the pids controller mounted), else RLIMIT_NPROC, which
//     in the server's own user namespace counts only its processes. Past
//     it, fork and clone fail with EAGAIN (with a cgroup, Process.ExitStatus
//     then says how many the kernel refused).
//   - Memory: a cgroup's memory limit (RAM of every process of the server
//     together, its tmpfs pages included) where the host can make one; the
//     kernel's OOM killer then ends the server, and Process.ExitStatus
//     names the limit. Else RLIMIT_DATA, which bounds each process's data
//     (private writable memory) on its own: allocations past it fail, but
//     shared memory (a memfd, MAP_SHARED, the tmpfs mounts) is not
//     bounded.
//   - Tmp: the server's TMPDIR and its /dev/shm, and its home with
//     Config.TempHome, are each a tmpfs of at most this size: a write past
//     it fails with ENOSPC. (In the reduced tier, which mounts nothing,
//     none of them is bounded but by FileSize.)
//   - FileSize: RLIMIT_FSIZE, in both tiers: no file the server writes,
//     wherever it may write (the worktree, the Write paths, its private
//     home, TMPDIR), grows past it. A write that would cross it stops at
//     it; one at it fails with EFBIG, and the kernel sends SIGXFSZ, which
//     ends the process unless it ignores the signal (Go and Python
//     programs do, and see only EFBIG); Process.ExitStatus names the
//     limit when the server itself ended so. It bounds each file, not their sum: the worktree and the
//     Write paths lie on the person's own file systems, where nothing
//     bounds how many files a server writes.
//
// Besides these, the full tier caps, for each server, the kernel budgets
// that the kernel counts per user and lets a user namespace or an rlimit
// cap (not configurable; Process.Limits does not list them):
//
//   - In the server's own user namespace (a host that is not root), the
//     limits in its /proc/sys/user: max_inotify_instances,
//     max_inotify_watches, max_fanotify_groups and max_fanotify_marks
//     are set to a quarter of the host's own (on a default kernel 32
//     inotify instances of the 128 a user has, and 32 fanotify groups).
//     The kernel counts every process of the namespace against them, and
//     against the person's own limits above: without them a server could
//     take all 128 inotify instances and leave the person's editor with
//     EMFILE (inside a new user namespace they are unlimited).
//   - RLIMIT_SIGPENDING (queued signals, serverSigPending = 1024),
//     RLIMIT_MSGQUEUE (POSIX message queue bytes, 256 KiB), RLIMIT_MEMLOCK
//     (locked memory, 8 MiB) and RLIMIT_NOFILE (open descriptors per
//     process, 16384), each lowered to that where the host has more. The
//     first three the kernel counts per user in each user namespace, so
//     in the server's own namespace they count the server's processes
//     together.
//
// What the kernel counts per user without a per-namespace cap is not
// capped per server: descriptors in flight in unread SCM_RIGHTS messages,
// pipe buffer pages (fs.pipe-user-pages-soft) and, beyond
// Limits.Processes, the person's own process count. A non-root host's
// Process.Lacks lists them.
type Limits struct {
	// Processes bounds the server's processes and threads together;
	// default DefaultMaxProcesses.
	Processes int
	// Memory bounds the server's memory in bytes; default DefaultMaxMemory.
	Memory int64
	// Tmp bounds each of the server's TMPDIR, /dev/shm and temporary home
	// in bytes; default DefaultMaxTmp.
	Tmp int64
	// FileSize bounds each file the server writes, in bytes; default
	// DefaultMaxFileSize.
	FileSize int64
}

// The default limits of a confined server.
const (
	DefaultMaxProcesses = 512
	DefaultMaxMemory    = 2 << 30
	DefaultMaxTmp       = 1 << 30
	DefaultMaxFileSize  = 1 << 30
)

// withDefaults returns l with every zero field set to its default.
func (l Limits) withDefaults() Limits {
	if l.Processes <= 0 {
		l.Processes = DefaultMaxProcesses
	}
	if l.Memory <= 0 {
		l.Memory = DefaultMaxMemory
	}
	if l.Tmp <= 0 {
		l.Tmp = DefaultMaxTmp
	}
	if l.FileSize <= 0 {
		l.FileSize = DefaultMaxFileSize
	}
	return l
}

// The rlimits of the kernel budgets each confined server of the full tier
// starts with (see Limits); a host with less keeps its own.
const (
	serverSigPending = 1024
	serverMsgQueue   = 256 << 10
	serverMemLock    = 8 << 20
	serverNoFile     = 16384
)

// userNSLimitNames are the limits in /proc/sys/user that the helper sets
// in a server's own user namespace: the kernel's per-user caps on
// inotify and fanotify, which it checks in every user namespace up to
// the initial one.
var userNSLimitNames = []string{"max_inotify_instances", "max_inotify_watches", "max_fanotify_groups", "max_fanotify_marks"}

// userNSLimitDefaults are the kernel's traditional defaults of those
// limits, which stand in for the host's own where it has none of its own
// (a host in a user namespace of its own sees them unlimited).
var userNSLimitDefaults = map[string]int64{
	"max_inotify_instances": 128, "max_inotify_watches": 8192,
	"max_fanotify_groups": 128, "max_fanotify_marks": 8192,
}

// isUserNSLimit reports whether name is one of userNSLimitNames.
func isUserNSLimit(name string) bool {
	for _, n := range userNSLimitNames {
		if n == name {
			return true
		}
	}
	return false
}

// serverIDLease is one of the uids a root host's servers run as, held
// until release (serverid_linux.go).
type serverIDLease struct {
	uid  uint32
	f    *os.File
	once sync.Once
}

// release frees the uid: only once no process of its server, and no
// thread of its helper, runs as it. It empties the lock file, which says
// the server ended cleanly, and drops the lock. Safe to call more than
// once, from any goroutine.
func (l *serverIDLease) release() {
	l.once.Do(func() {
		l.f.Truncate(0)
		l.f.Close()
	})
}
