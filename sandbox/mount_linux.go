package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
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

// applyMounts carries out plan in the helper's new mount namespace, then
// mounts a fresh /proc (so that only this PID namespace's processes are
// visible) and a private /dev/shm.
//
// Every mount other than the writable roots and the private /dev/shm and
// /proc ends up read-only. Landlock already denies writing there, but it
// does not mediate chmod, chown, utimes or extended attributes, nor
// truncate below ABI 3: a read-only mount refuses all of them.
func applyMounts(plan mountPlan) error {
	// Nothing done here may propagate back to the host's namespace.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return unsupportedStep("making mounts private", err)
	}

	// Open what will be revealed before hiding covers it.
	sources := make(map[string]int, len(plan.Reveal))
	defer func() {
		for _, fd := range sources {
			unix.Close(fd)
		}
	}()
	for _, r := range plan.Reveal {
		fd, err := openNoSymlinks(r)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue // a read path that vanished grants nothing
			}
			return failedStep("opening "+r, err)
		}
		sources[r] = fd
	}

	for _, h := range plan.Hide {
		if err := withPath(h, func(fd int) error {
			return unix.Mount("tmpfs", fdPath(fd), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC,
				"mode=0755,size=64k,nr_inodes=16384")
		}); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return unsupportedStep("mounting a tmpfs over "+h, err)
		}
	}

	for _, r := range plan.Reveal {
		src, ok := sources[r]
		if !ok {
			continue
		}
		var hidden string
		for _, h := range plan.Hide {
			if isUnder(r, h) {
				hidden = h
			}
		}
		if err := reveal(hidden, r, src); err != nil {
			return failedStep("revealing "+r, err)
		}
	}

	for _, w := range plan.Writable {
		if err := withPath(w, bindOnto); err != nil {
			return failedStep("binding writable "+w, err)
		}
	}

	if err := readOnlyExcept(plan.Writable); err != nil {
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

	if err := withPath("/proc", func(fd int) error {
		return unix.Mount("proc", fdPath(fd), "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
	}); err != nil {
		return unsupportedStep("mounting a fresh /proc", err)
	}
	if err := withPath("/dev/shm", func(fd int) error {
		return unix.Mount("tmpfs", fdPath(fd), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777")
	}); err != nil && !errors.Is(err, os.ErrNotExist) {
		return unsupportedStep("mounting a private /dev/shm", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return failedStep("chdir /", err)
	}
	return nil
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

// reveal makes a mount point for r in the tmpfs now covering hidden, its
// ancestor (the directories leading to it, then an empty directory or
// file), and binds the original, open as src, there. Everything it creates
// is in that fresh tmpfs, where nothing else can have made links; the
// host's own tree is not touched.
func reveal(hidden, r string, src int) error {
	rel, err := filepath.Rel(hidden, r)
	if err != nil || hidden == "" || rel == "." || strings.HasPrefix(rel, "..") {
		return fmt.Errorf("%s is not beneath a hidden directory (%q)", r, hidden)
	}
	var st unix.Stat_t
	if err := unix.Fstat(src, &st); err != nil {
		return fmt.Errorf("fstat: %w", err)
	}
	isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
	dir, err := openNoSymlinks(hidden)
	if err != nil {
		return err
	}
	defer func() { unix.Close(dir) }()
	parts := strings.Split(rel, "/")
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
			return fmt.Errorf("making mount point %s: %w", filepath.Join(hidden, filepath.Join(parts[:i+1]...)), err)
		}
		next, err := unix.Openat2(dir, name, &unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_BENEATH,
		})
		if err != nil {
			return fmt.Errorf("opening mount point %s: %w", filepath.Join(hidden, filepath.Join(parts[:i+1]...)), err)
		}
		unix.Close(dir)
		dir = next
	}
	t, err := cloneTree(src)
	if err != nil {
		return err
	}
	defer unix.Close(t)
	return attach(t, dir)
}

// readOnlyExcept makes every mount of the namespace read-only except those
// at or beneath the writable roots, whose flags stay as the host has them
// (a read-only filesystem inside the worktree stays read-only).
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
