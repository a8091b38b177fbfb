package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// fdPath names the file open as fd through /proc, the way to hand an
// already resolved place to the classic mount(2), which takes paths.
func fdPath(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// stepError is a failure of one step of the helper's setup.
type stepError struct {
	step        string
	err         error
	unsupported bool // the kernel refuses: running confined is not possible here
}

func (e *stepError) Error() string { return e.step + ": " + e.err.Error() }
func (e *stepError) Unwrap() error { return e.err }

func unsupportedStep(step string, err error) error {
	return &stepError{step: step, err: err, unsupported: true}
}

func failedStep(step string, err error) error {
	return &stepError{step: step, err: err}
}

// applyMounts carries out plan in the helper's new mount namespace: it
// builds the server's root (only what it may use, a fresh /proc, a private
// /dev/shm, the device files it may open) and moves into it. With root >=
// 0, the host built that root already (hostRoot): it is attached, given
// its /proc and entered. Without a new root (/ is granted), the host's
// tree is the view, with the same flags as a new root's (root_linux.go).
//
// idmapped maps granted paths to the descriptors of the idmapped trees the
// host passed for them: those are bound in place of the plain tree.
//
// It marks the helper's trace once, when the root is built.
func applyMounts(plan mountPlan, idmapped map[string]int, root int) error {
	// Nothing done here may propagate back to the host's namespace.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return unsupportedStep("making mounts private", err)
	}
	if !plan.NewRoot {
		return applyHostTree(plan, idmapped)
	}
	if root >= 0 {
		if err := withPath(rootScratch, func(fd int) error { return attach(root, fd) }); err != nil {
			return unsupportedStep("mounting the new root", err)
		}
	} else {
		// The trees are opened before the new root covers rootScratch;
		// it is attached before it is built, so that it is built in this
		// namespace: a kernel before 6.15 mounts nothing onto a detached
		// tree.
		sources, err := rootSources(plan, idmapped)
		if err != nil {
			return err
		}
		defer func() { closeSources(sources) }()
		t, err := newTmpfs(rootOptions, 0)
		if err != nil {
			return unsupportedStep("mounting the new root's tmpfs", err)
		}
		defer unix.Close(t)
		if err := withPath(rootScratch, func(fd int) error { return attach(t, fd) }); err != nil {
			return unsupportedStep("mounting the new root's tmpfs", err)
		}
		if err := buildRoot(plan, sources, t); err != nil {
			return err
		}
		root = t
	}
	helperMark()
	if err := enterRoot(root); err != nil {
		return err
	}
	if err := maskProc(); err != nil {
		return unsupportedStep("masking /proc", err)
	}
	return nil
}

// applyHostTree is applyMounts where / is granted: the host's tree is the
// server's view, with a fresh /proc and /dev/shm, the idmapped trees bound
// in place, everything but the writable roots read-only, and the pins and
// protected paths bound onto themselves.
func applyHostTree(plan mountPlan, idmapped map[string]int) error {
	for p, fd := range idmapped {
		// Private, as buildRoot makes every tree: the host copied it
		// from a mount that may be shared with its own.
		if err := setTree(fd, false); err != nil {
			return unsupportedStep("binding "+p, err)
		}
		if err := withPath(p, func(target int) error { return attach(fd, target) }); err != nil {
			return failedStep("binding "+p, err)
		}
	}
	if err := withPath("/proc", mountProc); err != nil {
		return unsupportedStep("mounting a fresh /proc", err)
	}
	if err := withPath("/dev/shm", mountShm); err != nil && !errors.Is(err, os.ErrNotExist) {
		return unsupportedStep("mounting a private /dev/shm", err)
	}
	helperMark()
	if err := maskProc(); err != nil {
		return unsupportedStep("masking /proc", err)
	}
	for _, w := range plan.Writable {
		if err := withPath(w, bindOnto); err != nil {
			return failedStep("binding writable "+w, err)
		}
	}
	if err := readOnlyExcept(append([]string{"/proc", "/dev/shm"}, plan.Writable...)); err != nil {
		return err
	}
	for _, d := range plan.Pin {
		if err := withPath(d, bindOnto); err != nil {
			return failedStep("pinning "+d, err)
		}
	}
	for _, q := range plan.Protect {
		if err := withPath(q, bindReadOnlyOnto); err != nil {
			return failedStep("protecting "+q, err)
		}
	}
	return unix.Chdir("/")
}

// bindStubResolvConf binds a file of stubResolvConf's text, read-only,
// onto the file /etc/resolv.conf leads to in the new root open as root,
// following links within that root only. Where it leads to nothing (a
// link into the hidden /run, as with systemd-resolved), nothing is bound:
// a resolver without a resolv.conf asks 127.0.0.1, as glibc, musl, Go
// and c-ares all do. The file is made in the new root's own tmpfs and
// unlinked once bound.
func bindStubResolvConf(root int) error {
	target, err := unix.Openat2(root, "etc/resolv.conf", &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err == unix.ENOENT {
		return nil
	}
	if err != nil {
		return err
	}
	defer unix.Close(target)
	var st unix.Stat_t
	if err := unix.Fstat(target, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("/etc/resolv.conf is not a regular file")
	}
	// Written under ForkLock: a descriptor open for writing in the root,
	// copied by a fork of the host meanwhile, would keep the root from
	// being made read-only (EBUSY) until that child's exec.
	const name = ".mcphost-resolv.conf"
	syscall.ForkLock.RLock()
	fd, err := unix.Openat(root, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o644)
	if err == nil {
		_, err = unix.Write(fd, []byte(stubResolvConf))
		unix.Close(fd)
	}
	syscall.ForkLock.RUnlock()
	if err == nil {
		var t int
		if t, err = cloneBeneath(root, name); err == nil {
			if err = setTree(t, true); err == nil {
				err = attach(t, target)
			}
			unix.Close(t)
		}
	}
	if rerr := unix.Unlinkat(root, name, 0); err == nil {
		err = rerr
	}
	return err
}

// mountProc mounts a fresh procfs, which shows only the processes of the
// helper's PID namespace, on the place open as fd.
func mountProc(fd int) error {
	return unix.Mount("proc", fdPath(fd), "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
}

// procMasked are the entries of the server's /proc that it sees empty
// and read-only, where the kernel has them: what a fresh procfs still
// shows of the machine beyond the server's own processes. keys and
// key-users name the kernel keys of the user (and of the session keyring
// the server inherits) and count every user's; the rest are the entries
// container runtimes mask: the machine's memory (kcore), a trigger of
// kernel actions (sysrq-trigger, root's alone but masked all the same),
// kernel timers, scheduler and latency internals (which leak other
// processes' activity) and the hardware lists of scsi, acpi and asound.
var procMasked = []string{
	"keys", "key-users", "kcore", "sysrq-trigger", "timer_list", "timer_stats",
	"sched_debug", "latency_stats", "scsi", "acpi", "asound",
}

// maskProc covers each entry of procMasked in /proc that exists: a file
// with an empty read-only file, a directory with an empty read-only
// directory, both from a tiny tmpfs that is never mounted anywhere else
// (maskSource). The server can neither read what they cover nor unmount
// them (it has no capability).
func maskProc() error {
	mnt, err := maskSource()
	if err != nil {
		return err
	}
	defer unix.Close(mnt)
	for _, name := range procMasked {
		p := "/proc/" + name
		var st unix.Stat_t
		if err := unix.Fstatat(unix.AT_FDCWD, p, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if err == unix.ENOENT {
				continue
			}
			return fmt.Errorf("stat %s: %w", p, err)
		}
		src := "file"
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			src = "dir"
		}
		t, err := unix.OpenTree(mnt, src, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
		if err != nil {
			return fmt.Errorf("open_tree: %w", err)
		}
		err = unix.MoveMount(t, "", unix.AT_FDCWD, p, unix.MOVE_MOUNT_F_EMPTY_PATH)
		unix.Close(t)
		if err != nil {
			return fmt.Errorf("covering %s: move_mount: %w", p, err)
		}
	}
	return nil
}

// maskSource returns a detached, read-only tmpfs that holds an empty
// directory "dir" and an empty file "file", the masks of maskProc.
func maskSource() (int, error) {
	// Three inodes: the root, the empty directory and the empty file. The
	// root is writable by its owner, the helper, which in a user namespace
	// has no CAP_DAC_OVERRIDE; the mount is read-only before it is used.
	mnt, err := newTmpfs("mode=0755,size=4096,nr_inodes=3", unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return -1, err
	}
	if err := unix.Mkdirat(mnt, "dir", 0o555); err != nil {
		unix.Close(mnt)
		return -1, fmt.Errorf("making the empty directory: %w", err)
	}
	// Made with mknodat, not opened for writing: a host forks beside
	// this, and a fork's copy of a writable descriptor would keep the
	// mount from being made read-only (EBUSY).
	if err := unix.Mknodat(mnt, "file", unix.S_IFREG|0o444, 0); err != nil {
		unix.Close(mnt)
		return -1, fmt.Errorf("making the empty file: %w", err)
	}
	// Read-only before it is cloned: every clone is read-only too.
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	if err := unix.MountSetattr(mnt, "", unix.AT_EMPTY_PATH, &attr); err != nil {
		unix.Close(mnt)
		return -1, fmt.Errorf("mount_setattr(read-only): %w", err)
	}
	return mnt, nil
}

// mountShm mounts a private tmpfs for POSIX shared memory on the place open
// as fd.
func mountShm(fd int) error {
	return unix.Mount("tmpfs", fdPath(fd), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777")
}

// tmpfsOptions are the mount options of a tmpfs of at most size bytes
// (0: the kernel's default, half the memory), with mode, owned by owner
// (0: the mounter).
func tmpfsOptions(mode string, size int64, owner uint32) string {
	o := "mode=" + mode
	if size > 0 {
		o += ",size=" + strconv.FormatInt(size, 10)
	}
	if owner != 0 {
		id := strconv.FormatUint(uint64(owner), 10)
		o += ",uid=" + id + ",gid=" + id
	}
	return o
}

// rootScratch is where the new root is mounted while it is built and
// entered, in the helper's private mount namespace: a directory every
// system has.
const rootScratch = "/tmp"

// withPath opens p without following symbolic links and calls f with the
// descriptor.
func withPath(p string, f func(fd int) error) error {
	fd, err := openNoSymlinks(p)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return f(fd)
}

// cloneTree returns a detached copy of the mount tree at fd, submounts
// included (a user namespace refuses a copy that would leave out locked
// submounts, and leaving them out would uncover what they hide).
func cloneTree(fd int) (int, error) {
	t, err := unix.OpenTree(fd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH|unix.AT_RECURSIVE)
	if err != nil {
		return -1, fmt.Errorf("open_tree: %w", err)
	}
	return t, nil
}

// attach mounts the detached tree t on the place open as target.
func attach(t, target int) error {
	if err := unix.MoveMount(t, "", target, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("move_mount: %w", err)
	}
	return nil
}

// bindOnto binds the place open as fd onto itself, making it a mount point
// of its own.
func bindOnto(fd int) error {
	t, err := cloneTree(fd)
	if err != nil {
		return err
	}
	defer unix.Close(t)
	return attach(t, fd)
}

// bindReadOnlyOnto binds the place open as fd onto itself, read-only.
func bindReadOnlyOnto(fd int) error {
	t, err := cloneTree(fd)
	if err != nil {
		return err
	}
	defer unix.Close(t)
	if err := setTree(t, true); err != nil {
		return err
	}
	return attach(t, fd)
}

// makeMountPoint makes the directories leading to p (absolute) beneath
// root, then p itself, an empty directory or file, and returns it opened
// as an O_PATH descriptor. Everything it creates is in the fresh tmpfs at
// root, where nothing else can have made links; the host's own tree is not
// touched.
func makeMountPoint(root int, p string, isDir bool) (int, error) {
	dir, err := unix.Dup(root)
	if err != nil {
		return -1, err
	}
	if p == "/" {
		return dir, nil
	}
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, name := range parts {
		if !isDir && i == len(parts)-1 {
			// Made, not opened: a descriptor open for writing, even for an
			// instant, keeps the tree from being made read-only while a
			// fork of the host holds a copy of it (EBUSY).
			err = unix.Mknodat(dir, name, unix.S_IFREG|0o644, 0)
		} else {
			err = unix.Mkdirat(dir, name, 0o755)
		}
		if err != nil && err != unix.EEXIST {
			unix.Close(dir)
			return -1, fmt.Errorf("making %s: %w", "/"+filepath.Join(parts[:i+1]...), err)
		}
		next, err := unix.Openat2(dir, name, &unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_BENEATH,
		})
		unix.Close(dir)
		if err != nil {
			return -1, fmt.Errorf("opening %s: %w", "/"+filepath.Join(parts[:i+1]...), err)
		}
		dir = next
	}
	return dir, nil
}

// readOnlyExcept makes every mount of the namespace read-only except those
// at or beneath the writable roots, whose flags stay as the host has them
// (a read-only filesystem inside the worktree stays read-only). Only the
// host's tree as the view (/ granted) needs it: a new root's trees are
// made read-only as they are attached (buildRoot).
func readOnlyExcept(writable []string) error {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return unsupportedStep("reading mountinfo", err)
	}
	mps, err := parseMountPoints(f)
	f.Close()
	if err != nil {
		return unsupportedStep("reading mountinfo", err)
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	for _, mp := range mps {
		if underAny(mp, writable) {
			continue
		}
		// mount_setattr acts on the topmost mount at mp. A mount point
		// that no longer resolves is covered by a hidden directory's tmpfs
		// and out of the server's reach.
		err := unix.MountSetattr(unix.AT_FDCWD, mp, unix.AT_SYMLINK_NOFOLLOW, &attr)
		if err != nil && err != unix.ENOENT && err != unix.ENOTDIR {
			return unsupportedStep("making "+mp+" read-only", fmt.Errorf("mount_setattr: %w", err))
		}
	}
	return nil
}
