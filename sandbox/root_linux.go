package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// The server's new root is one mount tree, assembled by buildRoot in a
// fresh tmpfs that it reaches only by descriptor. Where that tmpfs is
// mounted does not matter to it, so the same code serves two cases:
//
//   - A root host builds the tree detached, before the helper needs it,
//     while the helper's runtime starts (hostRoot), and sends it with the
//     spec (spec.Root). The helper then only attaches it, mounts /proc and
//     pivots. Mounting onto a detached tree needs Linux 6.15
//     (detachedTreesWork); on an older kernel the helper builds it.
//   - Otherwise the helper builds it, mounted in its own namespace.
//
// Every mount is made read-only as it is attached, before anything can
// see it, except the writable roots (which keep the host's flags, so a
// read-only filesystem inside the worktree stays read-only), the private
// home's own mount, /dev/shm and TMPDIR. The root's tmpfs itself is made
// read-only last. Landlock already denies writing elsewhere, but it does
// not mediate chmod, chown, utimes or extended attributes, nor truncate
// below ABI 3: a read-only mount refuses all of them.

// rootOptions are the new root's tmpfs options: it holds only mount
// points, links and empty directories.
const rootOptions = "mode=0755,size=1m,nr_inodes=4096"

// rootSource is one tree attached in the new root.
type rootSource struct {
	path  string
	fd    int   // a detached copy of the tree (-1 for a tmpfs)
	tmpfs int64 // > 0: no fd; a tmpfs of this size (the private home)
}

// newTmpfs returns a detached tmpfs mounted with options (tmpfsOptions'
// form), nosuid, nodev and the MOUNT_ATTR_ flags of attr.
func newTmpfs(options string, attr int) (int, error) {
	ctx, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("fsopen(tmpfs): %w", err)
	}
	defer unix.Close(ctx)
	for _, kv := range strings.Split(options, ",") {
		k, v, _ := strings.Cut(kv, "=")
		if err := unix.FsconfigSetString(ctx, k, v); err != nil {
			return -1, fmt.Errorf("fsconfig(%s): %w", k, err)
		}
	}
	if err := unix.FsconfigCreate(ctx); err != nil {
		return -1, fmt.Errorf("fsconfig(create): %w", err)
	}
	mnt, err := unix.Fsmount(ctx, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|attr)
	if err != nil {
		return -1, fmt.Errorf("fsmount: %w", err)
	}
	return mnt, nil
}

// openBeneath opens p (absolute, as the server sees it) beneath root as an
// O_PATH descriptor, following no symbolic link.
func openBeneath(root int, p string) (int, error) {
	rel := strings.TrimPrefix(p, "/")
	if rel == "" {
		rel = "."
	}
	fd, err := unix.Openat2(root, rel, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: p, Err: err}
	}
	return fd, nil
}

// setTree sets the flags of every mount of the tree t: private always, so
// that nothing mounted in it later propagates to the host's mounts it was
// copied from, and read-only with ro.
func setTree(t int, ro bool) error {
	attr := unix.MountAttr{Propagation: unix.MS_PRIVATE}
	if ro {
		attr.Attr_set = unix.MOUNT_ATTR_RDONLY
	}
	if err := unix.MountSetattr(t, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		return fmt.Errorf("mount_setattr: %w", err)
	}
	return nil
}

// rootSources copies what buildRoot attaches: the plan's binds (or their
// idmapped trees), the device files, the writable roots that lie in a
// bind, and the private home, outer paths first, each a detached tree.
// They are copied here, before anything else happens, because the helper
// mounts the new root at rootScratch before it builds it: a tree that
// holds rootScratch (a grant of the host's /tmp), copied later, would
// hold the new root too. The caller closes their descriptors.
func rootSources(plan mountPlan, idmapped map[string]int) ([]rootSource, error) {
	var sources []rootSource
	fail := func(err error) ([]rootSource, error) {
		closeSources(sources)
		return nil, err
	}
	// copyTree copies the host's tree at p, opened following no link;
	// missing reports ENOENT as (-1, nil).
	copyTree := func(p string, missing bool) (int, error) {
		fd, err := openNoSymlinks(p)
		if err != nil {
			if missing && errors.Is(err, os.ErrNotExist) {
				return -1, nil
			}
			return -1, failedStep("opening "+p, err)
		}
		defer unix.Close(fd)
		t, err := cloneTree(fd)
		if err != nil {
			return -1, failedStep("binding "+p, err)
		}
		return t, nil
	}
	// dup copies a descriptor of an idmapped tree, close-on-exec: a root
	// host runs this beside its other goroutines' forks.
	dup := func(p string, fd int) (int, error) {
		d, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			return -1, failedStep("binding "+p, err)
		}
		return d, nil
	}
	for _, p := range append(append([]string(nil), plan.Binds...), deviceFiles()...) {
		if _, ok := idmapped[p]; ok {
			continue
		}
		t, err := copyTree(p, true)
		if err != nil {
			return fail(err)
		}
		if t < 0 {
			continue // a system directory or device this host lacks grants nothing
		}
		sources = append(sources, rootSource{path: p, fd: t})
	}
	// The idmapped trees (one may lie within a bound system directory).
	for p, fd := range idmapped {
		if p == plan.HomeSource {
			continue // bound at plan.Home, below
		}
		d, err := dup(p, fd)
		if err != nil {
			return fail(err)
		}
		sources = append(sources, rootSource{path: p, fd: d})
	}
	switch {
	case plan.Home != "" && plan.HomeSize > 0:
		sources = append(sources, rootSource{path: plan.Home, fd: -1, tmpfs: plan.HomeSize})
	case plan.Home != "":
		var t int
		var err error
		if fd, ok := idmapped[plan.HomeSource]; ok {
			t, err = dup(plan.HomeSource, fd)
		} else {
			t, err = copyTree(plan.HomeSource, false)
		}
		if err != nil {
			return fail(err)
		}
		sources = append(sources, rootSource{path: plan.Home, fd: t})
	}
	// A writable root that lies in a bind is bound as a tree of its own,
	// from the host's tree (a root host's idmaps every granted path
	// outside the system directories, so those are sources already), on
	// top of the one it lies in, which is made read-only.
	for _, w := range plan.Writable {
		own := w == plan.Tmp // a tmpfs of its own
		for _, s := range sources {
			own = own || s.path == w
		}
		if own {
			continue
		}
		t, err := copyTree(w, false)
		if err != nil {
			return fail(err)
		}
		sources = append(sources, rootSource{path: w, fd: t})
	}
	// Outer paths first: a tree goes on top of those it lies in (the
	// private home holds the worktree when HOME does on the host).
	sort.SliceStable(sources, func(i, j int) bool { return sources[i].path < sources[j].path })
	return sources, nil
}

// closeSources closes the descriptors of sources.
func closeSources(sources []rootSource) {
	for _, s := range sources {
		if s.fd >= 0 {
			unix.Close(s.fd)
		}
	}
}

// buildRoot assembles the server's view in the empty tmpfs open as root
// (mounted, or detached), as the package comment above says, from the
// trees rootSources opened, leaving /proc an empty mount point for the
// helper. It attaches the idmapped trees among sources (and so consumes
// them); the caller closes sources' descriptors.
func buildRoot(plan mountPlan, sources []rootSource, root int) error {
	for _, s := range sources {
		if s.tmpfs > 0 {
			if err := mountTmpfs(root, s.path, tmpfsOptions("0700", s.tmpfs, plan.TmpOwner)); err != nil {
				return unsupportedStep("mounting the home directory "+s.path, err)
			}
			continue
		}
		t := s.fd
		// The flags go on while the tree is detached: nothing sees it
		// writable, and a detached tree's mounts take them as a whole.
		var err error
		if s.path == plan.Home {
			// The home's own mount stays writable; what is mounted in it
			// on the host does not (a read grant such as ~/.gitconfig).
			err = readOnlyBelow(t)
		} else {
			// The writable roots, and what lies in them, keep the host's
			// flags.
			err = setTree(t, !underAny(s.path, plan.Writable))
		}
		if err != nil {
			return unsupportedStep("setting the flags of "+s.path, err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(t, &st); err != nil {
			return failedStep("fstat "+s.path, err)
		}
		mp, err := makeMountPoint(root, s.path, st.Mode&unix.S_IFMT == unix.S_IFDIR)
		if err == nil {
			err = attach(t, mp)
			unix.Close(mp)
		}
		if err != nil {
			return failedStep("binding "+s.path, err)
		}
	}
	for _, d := range append(append([]string(nil), plan.Empty...), "/proc") {
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
	if err := mountTmpfs(root, "/dev/shm", tmpfsOptions("1777", plan.TmpSize, 0)); err != nil {
		return unsupportedStep("mounting /dev/shm", err)
	}
	if plan.Tmp != "" {
		if err := mountTmpfs(root, plan.Tmp, tmpfsOptions("0700", plan.TmpSize, plan.TmpOwner)); err != nil {
			return unsupportedStep("mounting "+plan.Tmp, err)
		}
	}
	if plan.StubResolvConf {
		if err := bindStubResolvConf(root); err != nil {
			return failedStep("binding the stub resolv.conf", err)
		}
	}
	for _, d := range plan.Pin {
		if err := withBeneath(root, d, bindOnto); err != nil {
			return failedStep("pinning "+d, err)
		}
	}
	for _, q := range plan.Protect {
		if err := withBeneath(root, q, bindReadOnlyOnto); err != nil {
			return failedStep("protecting "+q, err)
		}
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	if err := unix.MountSetattr(root, "", unix.AT_EMPTY_PATH, &attr); err != nil {
		return unsupportedStep("making the new root read-only", fmt.Errorf("mount_setattr: %w", err))
	}
	return nil
}

// readOnlyBelow makes every mount of the tree t read-only but its top:
// the top's flags are kept by setting the whole tree read-only and then
// clearing read-only on the top alone, unless the top was read-only
// already (on the host).
func readOnlyBelow(t int) error {
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(t, &sfs); err != nil {
		return fmt.Errorf("fstatfs: %w", err)
	}
	if err := setTree(t, true); err != nil {
		return err
	}
	if sfs.Flags&unix.ST_RDONLY != 0 {
		return nil
	}
	attr := unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_RDONLY}
	if err := unix.MountSetattr(t, "", unix.AT_EMPTY_PATH, &attr); err != nil {
		return fmt.Errorf("mount_setattr: %w", err)
	}
	return nil
}

// cloneBeneath returns a detached copy of the mount tree at rel beneath
// dir, following no symbolic link.
func cloneBeneath(dir int, rel string) (int, error) {
	fd, err := openBeneath(dir, "/"+rel)
	if err != nil {
		return -1, err
	}
	defer unix.Close(fd)
	return cloneTree(fd)
}

// mountTmpfs mounts a new tmpfs with options at p beneath root, making
// the mount point.
func mountTmpfs(root int, p, options string) error {
	t, err := newTmpfs(options, 0)
	if err != nil {
		return err
	}
	defer unix.Close(t)
	mp, err := makeMountPoint(root, p, true)
	if err != nil {
		return err
	}
	defer unix.Close(mp)
	return attach(t, mp)
}

// enterRoot mounts a fresh /proc in the new root open as root and pivots
// into it, detaching the host's tree: the server's namespace then holds
// nothing else.
func enterRoot(root int) error {
	if err := withBeneath(root, "/proc", mountProc); err != nil {
		return unsupportedStep("mounting a fresh /proc", err)
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

// withBeneath opens p beneath root and calls f with the descriptor.
func withBeneath(root int, p string, f func(fd int) error) error {
	fd, err := openBeneath(root, p)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return f(fd)
}

// detachedTreesWork reports whether the host may build servers' roots
// (hostRoot): whether this kernel mounts onto a detached mount tree and
// copies one (Linux 6.15), which it tries once per process on two tiny
// tmpfs mounts, and no build has been refused since
// (detachedTreesRefused).
var detachedTreesWork = func() bool { return detachedTreesProbe() && hostBuild.refused.Load() == nil }

// hostBuild records the first refusal of a host's build of a root.
var hostBuild struct{ refused atomic.Pointer[error] }

// detachedTreesRefused records err, a refusal of the host's build of a
// root that the probe did not foresee: the helpers build them from then
// on.
func detachedTreesRefused(err error) { hostBuild.refused.CompareAndSwap(nil, &err) }

// rootRefused reports whether err, from hostRoot, is the kernel refusing
// a step (an operation or a permission), rather than a path that is
// missing or became a link, which the helper would meet as well.
func rootRefused(err error) bool {
	for _, e := range []error{unix.EPERM, unix.EACCES, unix.EINVAL, unix.ENOSYS, unix.EOPNOTSUPP, unix.EBUSY} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

var detachedTreesProbe = sync.OnceValue(func() bool {
	a, err := newTmpfs("mode=0755,size=4096,nr_inodes=4", 0)
	if err != nil {
		return false
	}
	defer unix.Close(a)
	if unix.Mkdirat(a, "d", 0o755) != nil {
		return false
	}
	b, err := newTmpfs("mode=0755,size=4096,nr_inodes=4", 0)
	if err != nil {
		return false
	}
	defer unix.Close(b)
	if unix.MoveMount(b, "", a, "d", unix.MOVE_MOUNT_F_EMPTY_PATH) != nil {
		return false
	}
	c, err := cloneBeneath(a, "d")
	if err != nil {
		return false
	}
	unix.Close(c)
	return true
})

// hostRoot builds sp's new root on the host as a detached tree
// (sp.rootFile, sp.Root), for a root host's helper to attach, unless the
// helper is to build it: where there is no new root (/ is granted), or
// the kernel cannot (detachedTreesWork). It attaches the idmapped trees
// of sp.Idmap in it and closes them: the spec then names none. After an
// error those trees may be spent, attached in the tree it dropped.
func hostRoot(sp *spec, refuse error) error {
	plan, err := planMounts(sp)
	if err != nil || !plan.NewRoot || !detachedTreesWork() {
		return err
	}
	root, err := newTmpfs(rootOptions, 0)
	if err != nil {
		return unsupportedStep("mounting the new root's tmpfs", err)
	}
	idmapped := make(map[string]int, len(sp.Idmap))
	for i, p := range sp.Idmap {
		idmapped[p] = int(sp.idmapFiles[i].Fd())
	}
	sources, err := rootSources(plan, idmapped)
	if err == nil {
		err = buildRoot(plan, sources, root)
		closeSources(sources)
	}
	if err == nil && refuse != nil {
		err = refuse // a test's
	}
	if err != nil {
		unix.Close(root)
		return err
	}
	for _, f := range sp.idmapFiles {
		f.Close()
	}
	sp.Idmap, sp.idmapFiles = nil, nil
	sp.Root, sp.rootFile = true, os.NewFile(uintptr(root), "root")
	return nil
}
