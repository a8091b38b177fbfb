package sandbox

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// A root host's servers do not run as root. Started by root, the helper
// builds the sandbox with root's privileges and then starts the server as
// a uid of its own from the range below ServerID (serverid_linux.go), an
// identity that owns nothing on the host: root-only files (/etc/shadow, a
// 0600 key under a system path) are closed to it by plain file
// permissions, whatever Landlock grants.
//
// The paths granted outside the system directories (the worktree, the
// private TMPDIR, read and write grants, the program's own directory) are
// shown to it through idmapped mounts that map each path's owner to the
// server's uid: the server may use them as their owner may, and what it
// creates there is owned on disk by that owner (the person's files stay
// the person's). System directories are never idmapped.

// ServerID is the highest of the user and group IDs under which a root
// host's servers run, each its own: ServerID - k for a slot k below
// ServerIDSlots. They are below 2^31 (some programs treat IDs as signed)
// and far above the ranges distributions hand out to users and services.
const ServerID = 0x7ffffff0

// userNSArg0 is the argv[0] under which the host starts a process whose
// only purpose is to own a user namespace with a given mapping, for
// idmapped mounts, where newUserNS cannot make one without: it waits for
// EOF on its stdin and exits.
const userNSArg0 = "mcphost-sandbox-userns"

// holdUserNS is the body of the process started as userNSArg0.
func holdUserNS() {
	io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// dropsRoot reports whether servers started by this host run as a server uid:
// the host is root with the privilege to build the namespaces itself.
func dropsRoot() bool { return os.Geteuid() == 0 && !useUserNS() }

// idmaps caches, for the life of the host process, one user namespace per
// owner (uid, gid) and server uid, mapping that owner to that server uid.
// Creating one costs a clone and a reap on amd64, a process start
// elsewhere; a host sees few owners, and takes the lowest free server uids.
var idmaps struct {
	mu  sync.Mutex
	fds map[[3]uint32]int
}

// ownerUserNS returns a descriptor of a user namespace that maps uid and
// gid to as and nothing else. The descriptor stays open and cached.
func ownerUserNS(uid, gid, as uint32) (int, error) {
	idmaps.mu.Lock()
	defer idmaps.mu.Unlock()
	key := [3]uint32{uid, gid, as}
	if fd, ok := idmaps.fds[key]; ok {
		return fd, nil
	}
	fd, err := newUserNS(uid, gid, as)
	if err != nil {
		// Not amd64, or a step refused: a holder process makes the
		// namespace instead, or says why it cannot.
		var herr error
		if fd, herr = heldUserNS(uid, gid, as); herr != nil {
			return -1, fmt.Errorf("%w (and without a holder: %v)", herr, err)
		}
	}
	if idmaps.fds == nil {
		idmaps.fds = make(map[[3]uint32]int)
	}
	idmaps.fds[key] = fd
	return fd, nil
}

// newUserNS makes a user namespace that maps uid and gid to as, without a
// process to hold it: a child made in it by vforkUserNS exits at once, and
// its zombie, which keeps its credentials and so the namespace until it is
// reaped, lets this process open the namespace and its map files and write
// the maps (as root in the parent namespace, which may map any ID). The
// descriptor then keeps the namespace. Against a holder process
// (heldUserNS) this saves a fork that copies the host's page tables, the
// start of a program and the copy-on-write faults the fork leaves the
// host: about 2 ms of a root host's first start (BENCHMARKS.md).
//
// The files are opened by pid, which names the child only while it is
// unreaped: nothing else in the process reaps it (it sends no exit
// signal, so only a wait with __WALL or __WCLONE sees it), and the pidfd
// check before the maps are written makes sure, so that a map is never
// written into someone else's namespace. A host that is not dumpable may
// not open the zombie's namespace; ownerUserNS then starts a holder.
func newUserNS(uid, gid, as uint32) (int, error) {
	pid, pidfd, errno := vforkUserNS()
	if errno != 0 {
		return -1, fmt.Errorf("clone of a user namespace: %w", unix.Errno(errno))
	}
	defer func() {
		unix.Close(int(pidfd))
		var ws unix.WaitStatus
		for {
			if _, err := unix.Wait4(int(pid), &ws, unix.WALL, nil); err != unix.EINTR {
				return
			}
		}
	}()
	dir := "/proc/" + strconv.Itoa(int(pid)) + "/"
	files := []struct {
		name string
		fd   int
		text string
	}{
		{name: "ns/user"},
		// Denied, as Go's os/exec does for heldUserNS: nothing in the
		// namespace may call setgroups(2).
		{name: "setgroups", text: "deny\n"},
		{name: "uid_map", text: strconv.FormatUint(uint64(uid), 10) + " " + strconv.FormatUint(uint64(as), 10) + " 1\n"},
		{name: "gid_map", text: strconv.FormatUint(uint64(gid), 10) + " " + strconv.FormatUint(uint64(as), 10) + " 1\n"},
	}
	opened := 0
	closeAll := func() {
		for _, f := range files[:opened] {
			unix.Close(f.fd)
		}
	}
	for i, f := range files {
		mode := unix.O_WRONLY
		if f.text == "" {
			mode = unix.O_RDONLY
		}
		fd, err := unix.Open(dir+f.name, mode|unix.O_CLOEXEC, 0)
		if err != nil {
			closeAll()
			return -1, fmt.Errorf("opening %s of a new user namespace: %w", f.name, err)
		}
		files[i].fd = fd
		opened++
	}
	// The child is still unreaped, so the files opened by its pid are its.
	if err := unix.PidfdSendSignal(int(pidfd), 0, nil, 0); err != nil {
		closeAll()
		return -1, fmt.Errorf("the child of a new user namespace was reaped by someone else: %w", err)
	}
	for _, f := range files[1:] {
		if n, err := unix.Write(f.fd, []byte(f.text)); err != nil || n != len(f.text) {
			if err == nil {
				err = io.ErrShortWrite
			}
			closeAll()
			return -1, fmt.Errorf("writing %s of a new user namespace: %w", f.name, err)
		}
	}
	for _, f := range files[1:] {
		unix.Close(f.fd)
	}
	return files[0].fd, nil
}

// heldUserNS makes the user namespace of ownerUserNS with a holder process,
// the helper program started as userNSArg0 in it, where newUserNS cannot.
func heldUserNS(uid, gid, as uint32) (int, error) {
	// A fresh command for each program tried: os/exec closes a failed
	// start's pipes.
	start := func(path string) (*exec.Cmd, io.Closer, error) {
		cmd := &exec.Cmd{
			Path: path,
			Args: []string{userNSArg0},
			Env:  []string{},
			Dir:  "/",
			SysProcAttr: &syscall.SysProcAttr{
				Cloneflags:  unix.CLONE_NEWUSER,
				UidMappings: []syscall.SysProcIDMap{{ContainerID: int(uid), HostID: int(as), Size: 1}},
				GidMappings: []syscall.SysProcIDMap{{ContainerID: int(gid), HostID: int(as), Size: 1}},
				Pdeathsig:   syscall.SIGKILL,
			},
		}
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return nil, nil, err
		}
		release, err := passHelper(cmd)
		if err == nil {
			err = cmd.Start()
			release()
		}
		if err != nil {
			stdin.Close()
			return nil, nil, err
		}
		return cmd, stdin, nil
	}
	path := helperPath()
	cmd, stdin, err := start(path)
	if err != nil && path != selfExe {
		if next := helperRefused(path); next != "" {
			cmd, stdin, err = start(next)
		}
		if err != nil {
			var err2 error
			if cmd, stdin, err2 = start(selfExe); err2 == nil {
				err = nil
			}
		}
	}
	if err != nil {
		return -1, fmt.Errorf("starting a user namespace for idmapped mounts: %w", err)
	}
	// The namespace is needed, not the process: once its descriptor is
	// open the holder is killed and reaped in the background, instead of
	// Start waiting for a Go program to start and exit (or that
	// program's start taking a core from the server's). Until it is
	// reaped its pid is not reused, so the path below names it.
	defer func() {
		cmd.Process.Kill()
		stdin.Close()
		go cmd.Wait()
	}()
	fd, err := unix.Open("/proc/"+strconv.Itoa(cmd.Process.Pid)+"/ns/user", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("opening the user namespace for idmapped mounts: %w", err)
	}
	return fd, nil
}

// warmOwnerUserNS makes, before the idmapped trees that need them, the
// user namespaces (ownerUserNS) that map the worktree's owner and the
// host's own uid (the owner of a home or grant the host made) to the
// server uid as, which most starts need; where both are one, one. An
// error is left for the idmapped tree that meets it.
func warmOwnerUserNS(worktree string, as uint32) {
	var st unix.Stat_t
	if worktree != "" && unix.Stat(worktree, &st) == nil {
		ownerUserNS(st.Uid, st.Gid, as)
	}
	ownerUserNS(uint32(os.Getuid()), uint32(os.Getgid()), as)
}

// idmappedTree returns a detached copy of the mount tree at p (opened
// without following links), idmapped so that p's owner appears as the
// server uid as.
func idmappedTree(p string, as uint32) (*os.File, error) {
	src, err := openNoSymlinks(p)
	if err != nil {
		return nil, err
	}
	defer unix.Close(src)
	var st unix.Stat_t
	if err := unix.Fstat(src, &st); err != nil {
		return nil, fmt.Errorf("fstat %s: %w", p, err)
	}
	ns, err := ownerUserNS(st.Uid, st.Gid, as)
	if err != nil {
		return nil, err
	}
	t, err := cloneTree(src)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP, Userns_fd: uint64(ns)}
	if err := unix.MountSetattr(t, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		unix.Close(t)
		return nil, fmt.Errorf("idmapping %s (its filesystem may not support idmapped mounts): mount_setattr: %w", p, err)
	}
	return os.NewFile(uintptr(t), "idmapped "+p), nil
}
