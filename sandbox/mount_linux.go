package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

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
// /dev/shm, the device files it may open) and moves into it.
//
// Every mount other than the writable roots and the private /dev/shm and
// /proc ends up read-only. Landlock already denies writing there, but it
// does not mediate chmod, chown, utimes or extended attributes, nor
// truncate below ABI 3: a read-only mount refuses all of them.
//
// idmapped maps granted paths to the descriptors of the idmapped trees the
// host passed for them: those are bound in place of the plain tree.
func applyMounts(plan mountPlan, idmapped map[string]int) error {
	// Nothing done here may propagate back to the host's namespace.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return unsupportedStep("making mounts private", err)
	}
	if plan.NewRoot {
		if err := enterNewRoot(plan, idmapped); err != nil {
			return err
		}
	} else {
		for p, fd := range idmapped {
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
	}

	if plan.StubResolvConf {
		if err := bindStubResolvConf(); err != nil {
			return failedStep("binding the stub resolv.conf", err)
		}
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
	if err := readOnlyExcept(append([]string{"/proc", "/dev/shm"}, plan.Writable...), plan.Home); err != nil {
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
	if err := unix.Chdir("/"); err != nil {
		return failedStep("chdir /", err)
	}
	return nil
}

// bindStubResolvConf binds a file of stubResolvConf's text onto the file
// /etc/resolv.conf leads to in the new root (which is the working
// directory's root by now), following links within that root only. Where
// it leads to nothing (a link into the hidden /run, as with
// systemd-resolved), nothing is bound: a resolver without a resolv.conf
// asks 127.0.0.1, as glibc, musl, Go and c-ares all do. The file is made in
// the new root's own tmpfs and unlinked once bound.
func bindStubResolvConf() error {
	target, err := unix.Openat2(unix.AT_FDCWD, "/etc/resolv.conf", &unix.OpenHow{
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
	const name = "/.mcphost-resolv.conf"
	fd, err := unix.Open(name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o644)
	if err != nil {
		return err
	}
	_, err = unix.Write(fd, []byte(stubResolvConf))
	unix.Close(fd)
	if err == nil {
		err = withPath(name, func(src int) error {
			t, err := cloneTree(src)
			if err != nil {
				return err
			}
			defer unix.Close(t)
			return attach(t, target)
		})
	}
	if rerr := unix.Unlink(name); err == nil {
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
// directory, both from a tiny tmpfs that is never mounted anywhere else.
// The server can neither read what they cover nor unmount them (it has no
// capability).
func maskProc() error {
	ctx, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return fmt.Errorf("fsopen(tmpfs): %w", err)
	}
	defer unix.Close(ctx)
	// Three inodes: the root, the empty directory and the empty file. The
	// root is writable by its owner, the helper, which in a user namespace
	// has no CAP_DAC_OVERRIDE; the mount is read-only before it is used.
	for _, kv := range [][2]string{{"mode", "0755"}, {"size", "4096"}, {"nr_inodes", "3"}} {
		if err := unix.FsconfigSetString(ctx, kv[0], kv[1]); err != nil {
			return fmt.Errorf("fsconfig(%s): %w", kv[0], err)
		}
	}
	if err := unix.FsconfigCreate(ctx); err != nil {
		return fmt.Errorf("fsconfig(create): %w", err)
	}
	mnt, err := unix.Fsmount(ctx, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return fmt.Errorf("fsmount: %w", err)
	}
	defer unix.Close(mnt)
	if err := unix.Mkdirat(mnt, "dir", 0o555); err != nil {
		return fmt.Errorf("making the empty directory: %w", err)
	}
	f, err := unix.Openat(mnt, "file", unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o444)
	if err != nil {
		return fmt.Errorf("making the empty file: %w", err)
	}
	unix.Close(f)
	// Read-only before it is cloned: every clone is read-only too.
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	if err := unix.MountSetattr(mnt, "", unix.AT_EMPTY_PATH, &attr); err != nil {
		return fmt.Errorf("mount_setattr(read-only): %w", err)
	}
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

// rootScratch is where the new root's tmpfs is mounted while it is built,
// in the helper's private mount namespace: a directory every system has.
const rootScratch = "/tmp"

// enterNewRoot builds the server's root in a fresh tmpfs, binds into it
// every granted path from the host's tree (opened before anything is
// covered), makes the links, empty directories, devices, /proc and
// /dev/shm the plan and a program need, and pivots into it, detaching the
// host's tree: the server's namespace then holds nothing else.
func enterNewRoot(plan mountPlan, idmapped map[string]int) error {
	type source struct {
		path     string
		fd       int
		idmapped bool  // fd is a detached tree to attach as it is
		tmpfs    int64 // > 0: no fd; a tmpfs of this size (the home)
	}
	var sources []source
	defer func() {
		for _, s := range sources {
			unix.Close(s.fd)
		}
	}()
	for _, p := range append(append([]string(nil), plan.Binds...), deviceFiles()...) {
		if _, ok := idmapped[p]; ok {
			continue
		}
		fd, err := openNoSymlinks(p)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue // a system directory or device this host lacks grants nothing
			}
			return failedStep("opening "+p, err)
		}
		sources = append(sources, source{p, fd, false, 0})
	}
	// The idmapped trees, after the plain binds (outer paths first): one
	// may lie within a bound system directory.
	var idm []string
	for p := range idmapped {
		idm = append(idm, p)
	}
	sort.Strings(idm)
	for _, p := range idm {
		if p == plan.HomeSource {
			continue // bound at plan.Home, below
		}
		fd, err := unix.Dup(idmapped[p])
		if err != nil {
			return failedStep("binding "+p, err)
		}
		sources = append(sources, source{p, fd, true, 0})
	}
	if plan.Home != "" && plan.HomeSize > 0 {
		sources = append(sources, source{path: plan.Home, fd: -1, tmpfs: plan.HomeSize})
	} else if plan.Home != "" {
		s, err := homeSource(plan, idmapped)
		if err != nil {
			return failedStep("binding the home directory "+plan.Home, err)
		}
		sources = append(sources, source{plan.Home, s.fd, s.idmapped, 0})
	}
	// Outer paths first: a bind goes on top of those it lies in (the
	// private home holds the worktree when HOME does on the host).
	sort.SliceStable(sources, func(i, j int) bool { return sources[i].path < sources[j].path })

	if err := withPath(rootScratch, func(fd int) error {
		return unix.Mount("tmpfs", fdPath(fd), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=1m,nr_inodes=4096")
	}); err != nil {
		return unsupportedStep("mounting the new root's tmpfs", err)
	}
	root, err := openNoSymlinks(rootScratch)
	if err != nil {
		return failedStep("opening the new root", err)
	}
	defer unix.Close(root)

	for _, s := range sources {
		if s.tmpfs > 0 {
			// Its mount points are made in it below, by the helper,
			// which owns it or is root.
			mp, err := makeMountPoint(root, s.path, true)
			if err == nil {
				err = unix.Mount("tmpfs", fdPath(mp), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, tmpfsOptions("0700", s.tmpfs, plan.TmpOwner))
				unix.Close(mp)
			}
			if err != nil {
				return unsupportedStep("mounting the home directory "+s.path, err)
			}
			continue
		}
		var st unix.Stat_t
		if err := unix.Fstat(s.fd, &st); err != nil {
			return failedStep("fstat "+s.path, err)
		}
		mp, err := makeMountPoint(root, s.path, st.Mode&unix.S_IFMT == unix.S_IFDIR)
		if err != nil {
			return failedStep("binding "+s.path, err)
		}
		if s.idmapped {
			err = attach(s.fd, mp)
		} else {
			var t int
			t, err = cloneTree(s.fd)
			if err == nil {
				err = attach(t, mp)
				unix.Close(t)
			}
		}
		unix.Close(mp)
		if err != nil {
			return failedStep("binding "+s.path, err)
		}
	}
	for _, d := range plan.Empty {
		mp, err := makeMountPoint(root, d, true)
		if err != nil {
			return failedStep("making "+d, err)
		}
		unix.Close(mp)
	}
	links := map[string]string{
		"/dev/fd": "/proc/self/fd", "/dev/stdin": "/proc/self/fd/0",
		"/dev/stdout": "/proc/self/fd/1", "/dev/stderr": "/proc/self/fd/2",
	}
	for l, target := range plan.Links {
		links[l] = target
	}
	for l, target := range links {
		dir, err := makeMountPoint(root, filepath.Dir(l), true)
		if err != nil {
			return failedStep("making link "+l, err)
		}
		err = unix.Symlinkat(target, dir, filepath.Base(l))
		unix.Close(dir)
		if err != nil && err != unix.EEXIST {
			return failedStep("making link "+l, err)
		}
	}
	shm := func(fd int) error {
		return unix.Mount("tmpfs", fdPath(fd), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, tmpfsOptions("1777", plan.TmpSize, 0))
	}
	mounts := []struct {
		path  string
		mount func(int) error
	}{{"/proc", mountProc}, {"/dev/shm", shm}}
	if plan.Tmp != "" {
		mounts = append(mounts, struct {
			path  string
			mount func(int) error
		}{plan.Tmp, func(fd int) error {
			return unix.Mount("tmpfs", fdPath(fd), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, tmpfsOptions("0700", plan.TmpSize, plan.TmpOwner))
		}})
	}
	for _, m := range mounts {
		mp, err := makeMountPoint(root, m.path, true)
		if err == nil {
			err = m.mount(mp)
			unix.Close(mp)
		}
		if err != nil {
			return unsupportedStep("mounting "+m.path, err)
		}
	}

	// pivot_root(".", ".") stacks the old root on the new one; detaching
	// it leaves the new root alone in the namespace.
	if err := unix.Fchdir(root); err != nil {
		return failedStep("entering the new root", err)
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return unsupportedStep("pivot_root", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return unsupportedStep("detaching the host's tree", err)
	}
	return unix.Chdir("/")
}

// homeFD is the tree bound as the server's private home.
type homeFD struct {
	fd       int
	idmapped bool
}

// homeSource opens the tree to bind at plan.Home: the idmapped tree the
// host passed for plan.HomeSource (a root host's), or HomeSource itself.
func homeSource(plan mountPlan, idmapped map[string]int) (homeFD, error) {
	if fd, ok := idmapped[plan.HomeSource]; ok {
		d, err := unix.Dup(fd)
		return homeFD{d, true}, err
	}
	fd, err := openNoSymlinks(plan.HomeSource)
	return homeFD{fd, false}, err
}

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
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	if err := unix.MountSetattr(t, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		return fmt.Errorf("mount_setattr(read-only): %w", err)
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
			var fd int
			fd, err = unix.Openat(dir, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o644)
			if err == nil {
				unix.Close(fd)
			}
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
// (a read-only filesystem inside the worktree stays read-only), and the
// private home itself (not what is mounted beneath it), if home is not "".
func readOnlyExcept(writable []string, home string) error {
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
		if underAny(mp, writable) || (home != "" && mp == home) {
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
