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
// idmapped mounts: it waits for EOF on its stdin and exits.
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
// Creating one costs a process start; a host sees few owners, and takes
// the lowest free server uids.
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
	path := helperPath()
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
		return -1, err
	}
	if err := cmd.Start(); err != nil {
		if path == selfExe {
			return -1, fmt.Errorf("starting a user namespace for idmapped mounts: %w", err)
		}
		cmd.Path = selfExe
		cmd.Process = nil
		if err2 := cmd.Start(); err2 != nil {
			return -1, fmt.Errorf("starting a user namespace for idmapped mounts: %w", err)
		}
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
	if idmaps.fds == nil {
		idmaps.fds = make(map[[3]uint32]int)
	}
	idmaps.fds[key] = fd
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
