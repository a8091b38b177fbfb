package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
)

// The reduced tier. Where the host is not root and may not create a user
// namespace (Ubuntu's AppArmor policy, user.max_user_namespaces = 0, a
// container that forbids them), no namespace can be made, so a server is
// confined with what needs no privilege: Landlock (files, TCP, and the
// scopes of abstract unix sockets and signals from ABI 6), the seccomp
// filter, no_new_privs, the scrubbed environment and private TMPDIR, and a
// helper that, as a child subreaper, ends the server's whole process tree.
// It keeps the core promises: no writes outside the grants, no reads of
// HOME or of other users' files beyond what file permissions allow, no
// network, no reading of other processes' memory or environment (Landlock
// also bounds ptrace), no orphans, and protected paths stay unwritable.
// Process.Lacks lists what it does not have.
//
// Without a mount namespace a protected path inside a writable root cannot
// be bound read-only. Landlock has no deny rule either, and a right granted
// on a directory holds for everything beneath it. So the reduced tier does
// not grant the writable roots that hold a protected path as a whole: the
// root, and each directory between it and the protected path, may only be
// read, and every other entry in them is granted on its own. The cost: the
// server cannot create, remove or rename entries directly in those
// directories (the worktree's top directory, when .git is protected).

// errUserNSRefused marks a start that failed because the kernel refused
// the user namespace (or the privileges in it) that full confinement of an
// ordinary user's server needs.
var errUserNSRefused = errors.New("user namespaces are refused to this user")

// userNSError is a start's failure for want of a user namespace: Error is
// the whole story, why the short reason a later start repeats.
type userNSError struct {
	why string
	err error
}

func (e *userNSError) Error() string        { return e.err.Error() }
func (e *userNSError) Unwrap() error        { return e.err }
func (e *userNSError) Is(target error) bool { return target == errUserNSRefused }

// minReducedABI is the oldest Landlock ABI the reduced tier accepts:
// before ABI 3 truncate(2) is not mediated, and without the read-only
// mounts of the full tier nothing else would stop a server from emptying
// any file of the user it can name.
const minReducedABI = 3

// maxSplitEntries bounds the entries of one directory that the reduced
// tier grants one by one.
const maxSplitEntries = 4096

// userNSRefusal remembers, for the life of the host process, why the
// kernel refused a user namespace, so that later starts go straight to the
// reduced tier.
var userNSRefusal struct {
	mu  sync.Mutex
	why string
}

func refusedUserNS() string {
	userNSRefusal.mu.Lock()
	defer userNSRefusal.mu.Unlock()
	return userNSRefusal.why
}

func refuseUserNS(why string) {
	userNSRefusal.mu.Lock()
	defer userNSRefusal.mu.Unlock()
	if userNSRefusal.why == "" {
		userNSRefusal.why = why
	}
}

// reduce turns the full tier's spec sp into the reduced tier's.
func reduce(sp *spec) error {
	abi, err := landlockABI()
	if err != nil {
		return err
	}
	if abi < minReducedABI {
		return fmt.Errorf("the reduced tier needs Landlock ABI %d (Linux 6.2) or later; this kernel has ABI %d", minReducedABI, abi)
	}
	if sp.Proxy != 0 {
		// Without a network namespace of its own the server would share
		// the host's, where its proxy port is any host's port 3128 and
		// its listener anyone's to use.
		return errors.New("network by name (a list in network) needs a network namespace of the server's own, which this host cannot create without user namespaces; use network = false, or network = true (the host's whole network), or have an administrator allow unprivileged user namespaces")
	}
	sp.Reduced = true
	sp.Hide, sp.Links, sp.Tmp, sp.TmpSize = nil, nil, "", 0
	reduceHome(sp)
	// RLIMIT_NPROC would count every process of the user, not the
	// server's: only the per-process memory bound is kept.
	sp.NProc = 0
	// Without a user namespace of its own, the per-user counts behind
	// these would be the person's: the server would fail when the
	// person's own use reached them. Descriptors stay bounded per process.
	sp.UserNSLimits, sp.SigPending, sp.MsgQueue, sp.MemLock = nil, 0, 0, 0
	write, read, err := splitWritable(sp.Write, sp.Protect)
	if err != nil {
		return err
	}
	sp.Write = write
	sp.Read = append(sp.Read, read...)
	sp.Protect = nil
	return nil
}

// reduceHome gives the server of sp its private home, if any, without a
// mount namespace: at its own path, as a writable path, with HOME naming
// it. Read grants beneath the host's HOME stay at their own paths.
func reduceHome(sp *spec) {
	if sp.Home == "" {
		return
	}
	sp.Write = outermost(append(sp.Write, sp.HomeSource))
	sp.Env = setEnv(sp.Env, "HOME", sp.HomeSource)
	sp.Home, sp.HomeSource, sp.HomeSize = "", "", 0
}

// splitWritable returns the paths to grant writable and the extra ones to
// grant readable so that no protected path lies beneath a writable one:
// each writable root above a protected path, and each directory between
// them, is only read, and its other entries are granted one by one.
func splitWritable(write, protect []string) (w, r []string, err error) {
	// The directories that must not be granted whole: the ancestors of
	// each protected path up to (and including) its writable root.
	split := map[string]bool{}
	for _, q := range protect {
		for _, root := range write {
			if !isUnder(q, root) || q == root {
				continue
			}
			for d := filepath.Dir(q); isUnder(d, root); d = filepath.Dir(d) {
				split[d] = true
				if d == root {
					break
				}
			}
		}
	}
	protected := map[string]bool{}
	for _, q := range protect {
		protected[q] = true
	}
	var dirs []string
	for d := range split {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, root := range write {
		if !split[root] {
			w = append(w, root)
		}
	}
	for _, d := range dirs {
		r = append(r, d)
		ents, err := os.ReadDir(d)
		if err != nil {
			return nil, nil, fmt.Errorf("listing %s to protect what lies in it: %w", d, err)
		}
		if len(ents) > maxSplitEntries {
			return nil, nil, fmt.Errorf("%s has %d entries, more than the %d the reduced tier can grant one by one around a protected path", d, len(ents), maxSplitEntries)
		}
		for _, e := range ents {
			p := filepath.Join(d, e.Name())
			if protected[p] || split[p] || e.Type()&os.ModeSymlink != 0 {
				// A link is not granted: writing through it would reach
				// wherever it points, and it cannot be replaced (no
				// right to remove it is granted).
				continue
			}
			w = append(w, p)
		}
	}
	return w, r, nil
}

// lacks lists what the reduced tier does not give, for Process.Lacks.
func reducedLacks(abi int, network bool) []string {
	l := []string{
		"no PID namespace: the server sees the host's processes and their command lines in /proc (not their memory or environment)",
		"no mount namespace: paths outside its grants can be seen with stat (not read or written)",
		"it can change the mode and times of your files, protected ones (.git) included (Landlock does not mediate them), though never to world-writable (the filter refuses that, and extended attributes, in both tiers)",
		"no masked /proc: /proc/keys shows the names (not the contents: the keyring calls are refused) of your kernel keys, and /proc/timer_list and the like what the host's /proc shows anyone",
		"no file watching: inotify and fanotify are refused (ENOSYS), since without a mount namespace a watch on any directory you can read would show the names of the files made in it",
		"no IPC namespace: System V IPC objects and POSIX message queues of yours are within reach",
		"no private /dev/shm (it is not granted)",
		"its private home is at its own path (HOME names it), not at your home's: a dotfile granted with read stays at its own path",
		"limits: private memory per process only (shared memory is not bounded), and each file's size; processes and TMPDIR not bounded",
		"around a protected path (.git, the config) it cannot create, remove or rename entries directly in the directories above it",
	}
	if abi < 9 {
		l = append(l, "no unix sockets of its own making: socket(AF_UNIX) is refused, since Landlock below ABI 9 would let it reach any listening one it can name (socketpair works)")
	}
	if abi < 6 {
		l = append(l, "it can signal your other processes (Landlock below ABI 6)")
	}
	if !network && abi < 4 {
		l = append(l, "TCP is refused by seccomp alone (Landlock below ABI 4)")
	}
	return l
}
