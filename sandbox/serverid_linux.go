package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"
)

// A root host's servers do not share a kernel identity: each runs as a
// uid of its own, ServerID - k for a slot k below ServerIDSlots (the uids
// 2147479537 to 2147483632), so that what the kernel counts per user
// (inotify instances and watches, RLIMIT_NPROC's processes, queued
// signals, message queue bytes, locked memory) is each server's own, and
// no server may signal another.
//
// A slot is held by a lock: the file serverIDDir/k, locked with flock(2)
// by the host for as long as a server of that slot may have a process.
// The kernel drops the lock when the host closes it or dies, so a killed
// host leaks no slot; every root host on the machine that shares /run
// takes slots from the same directory, so no two live servers of any of
// them share a uid. A host takes the lowest slot it can lock, which keeps
// its cached idmapping namespaces (one per owner and slot) in use.
//
// The lock alone would let a slot go as soon as a killed host's lock is
// dropped, a moment before the kernel has ended its servers. So the host
// writes its pid into the file when it takes the slot and empties the file
// only once no task runs as the uid: when the helper reports every process
// of the server reaped and the thread that started it ended ("alone"), or
// else when the helper itself has been reaped (as init of the server's PID
// namespace it is reaped after every process of the namespace). A slot
// whose file is not empty was left by a host that died, and is taken only
// when no task in /proc (a process or any of its threads) runs under its
// uid (real, effective, saved or file system), else skipped; that scan
// costs milliseconds (3.6 ms with 72 processes here, more where processes
// have many threads), which a host that closes its servers cleanly never
// makes the next one pay.
//
// Not covered: root hosts that do not share /run (a container with a /run
// of its own that still shares the machine's user namespace and may
// create namespaces, which container runtimes do not allow by default)
// can give two servers the same uid.

// ServerIDSlots is how many uids, ServerID and those below it, a root
// host's servers run as; a root host runs at most this many servers at a
// time, together with the other root hosts of the machine.
const ServerIDSlots = 4096

// serverIDDir holds the slot locks. Only root may write /run.
const serverIDDir = "/run/mcphost-server-ids"

// takeServerID leases the lowest free slot.
func takeServerID() (*serverIDLease, error) {
	if err := os.Mkdir(serverIDDir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("making %s for the servers' uids: %w", serverIDDir, err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(serverIDDir, &st); err != nil {
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || st.Uid != 0 || st.Mode&0o022 != 0 {
		return nil, fmt.Errorf("%s is not a directory only root may write", serverIDDir)
	}
	for slot := 0; slot < ServerIDSlots; slot++ {
		uid := uint32(ServerID - slot)
		fd, err := unix.Open(filepath.Join(serverIDDir, strconv.Itoa(slot)), unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return nil, fmt.Errorf("the lock of server uid %d: %w", uid, err)
		}
		if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
			unix.Close(fd)
			if err == unix.EWOULDBLOCK {
				continue // a live server's
			}
			return nil, fmt.Errorf("locking server uid %d: %w", uid, err)
		}
		var fst unix.Stat_t
		if err := unix.Fstat(fd, &fst); err != nil {
			unix.Close(fd)
			return nil, err
		}
		if fst.Size > 0 && uidInUse(uid) {
			// Left by a host that died, and its server is not gone yet.
			unix.Close(fd)
			continue
		}
		f := os.NewFile(uintptr(fd), "server uid lock")
		// The pid marks the slot taken until the server is reaped: without
		// it, a host killed while its server lives would free the uid for
		// the next host at once.
		err = f.Truncate(0)
		if err == nil {
			_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("marking server uid %d taken: %w", uid, err)
		}
		return &serverIDLease{uid: uid, f: f}, nil
	}
	return nil, fmt.Errorf("all %d server uids are in use", ServerIDSlots)
}

// uidInUse reports whether a task in /proc runs under uid (real,
// effective, saved or file system). A thread's credentials are its own (a
// helper's confining thread switches to the server's uid alone), so the
// threads of a process with more than one are each read. A process or
// thread that is gone is skipped; any other failure to read says in use,
// the safe side.
func uidInUse(uid uint32) bool { return uidInUseIn(os.DirFS("/proc"), uid) }

// uidInUseIn is uidInUse over proc, a /proc file system (tests give it
// one whose reads fail).
func uidInUseIn(proc fs.FS, uid uint32) bool {
	ents, err := fs.ReadDir(proc, ".")
	if err != nil {
		return true
	}
	want := []byte(strconv.FormatUint(uint64(uid), 10))
	// inUse reads the status file at path: whether its task runs as
	// uid, and its process's thread count. A task that is gone does not.
	inUse := func(path string) (bool, int) {
		b, err := fs.ReadFile(proc, path)
		if err != nil {
			return !gone(err), 1
		}
		uids, threads := statusUIDs(b)
		return slices.ContainsFunc(uids, func(f []byte) bool { return bytes.Equal(f, want) }), threads
	}
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		in, threads := inUse(e.Name() + "/status")
		if in {
			return true
		}
		if threads == 1 {
			continue
		}
		tasks, err := fs.ReadDir(proc, e.Name()+"/task")
		if err != nil && !gone(err) {
			return true
		}
		for _, task := range tasks {
			if in, _ := inUse(e.Name() + "/task/" + task.Name() + "/status"); in {
				return true
			}
		}
	}
	return false
}

// gone reports whether err, from reading /proc, says the process or thread
// has ended.
func gone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ESRCH)
}

// statusUIDs returns the four uids of the "Uid:" line of a
// /proc/.../status file and the count on its "Threads:" line (0 if
// absent).
func statusUIDs(status []byte) (uids [][]byte, threads int) {
	for _, line := range bytes.Split(status, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte("Uid:")); ok {
			uids = bytes.Fields(rest)
		} else if rest, ok := bytes.CutPrefix(line, []byte("Threads:")); ok {
			threads, _ = strconv.Atoi(string(bytes.TrimSpace(rest)))
		}
	}
	return uids, threads
}
