package sandbox

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
