package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// helperCacheDir is where a root host keeps its copy of the embedded helper
// program: the directory of runtime files (on most systems a tmpfs,
// emptied at each boot; on some, as on the machine the benchmarks ran on,
// the root filesystem).
//
// Writing the program (2.7 MB) into a memory file cost every host process
// about 2 ms of CPU (the kernel's page allocations and copy), on the
// critical path of a CLI run. A root host writes it once per program
// version and boot instead, to helper-SHA256 in this directory, and every
// later process opens it.
//
// The copy is trusted for who can write it, as the host program itself
// is: only root. Before it is used, the directory and each one above it
// must belong to root and be writable by no one else (an ancestor may be
// writable by others if it is sticky, as /tmp is: they cannot move what
// root owns there), and the file must be root's, mode 0500, a regular
// file with one link and the program's size, immutable, on a filesystem
// that lets it run and is not FUSE. Its bytes are not compared: a root
// process that cleared the flag to change them could as well change the
// host program. The file is written under no name (O_TMPFILE), linked
// once it is whole and no descriptor can write it, then made immutable,
// under the directory's lock, so no process ever runs a partial copy or
// removes one being made. Anything else (a host that is not root, or
// without CAP_LINUX_IMMUTABLE, a directory this host cannot make, a file
// that fails a check after a rewrite) and the host uses a sealed memory
// file, as before.
//
// A server cannot reach the copy: it runs as a uid of its own, without
// capabilities, in a root that does not hold the directory, and the
// helper's /proc/1/exe is root's, which the server may not open.
const helperCacheDir = "/run/mcphost"

// fsImmutable is FS_IMMUTABLE_FL (linux/fs.h), which golang.org/x/sys
// does not name: a file no one may change, link, rename or remove, root
// included, until a holder of CAP_LINUX_IMMUTABLE clears it.
const fsImmutable = 0x10

// immutable reports whether the file fd has FS_IMMUTABLE_FL; false where
// its filesystem keeps no flags.
func immutable(fd int) bool {
	flags, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
	return err == nil && flags&fsImmutable != 0
}

// setImmutable sets or clears FS_IMMUTABLE_FL on the file fd, keeping its
// other flags.
func setImmutable(fd int, on bool) error {
	flags, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
	if err != nil {
		return err
	}
	if on {
		flags |= fsImmutable
	} else {
		flags &^= fsImmutable
	}
	return unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, int(flags))
}

// helperCache returns the copy of prog in dir, named for sum, making it if
// it is missing; see helperCacheDir.
//
// Hosts that find the copy missing or failing a check take an exclusive
// lock on the directory (flock) and look again before they replace it:
// one host writes it, and none removes a copy another is still making.
// Hosts that find a good copy take no lock.
func helperCache(prog, sum, dir string) (helperFile, error) {
	none := helperFile{fd: -1}
	sum = strings.TrimSpace(sum)
	if len(sum) != 64 || strings.Trim(sum, "0123456789abcdef") != "" {
		return none, errors.New("no SHA-256 of the helper program")
	}
	d, err := openCacheDir(dir)
	if err != nil {
		return none, err
	}
	defer unix.Close(d)
	name := "helper-" + sum
	path := filepath.Join(dir, name)
	if f, err := openCached(d, name, len(prog)); err == nil {
		return f, nil
	}
	if err := flock(d); err != nil {
		return none, fmt.Errorf("locking %s: %w", dir, err)
	}
	defer unix.Flock(d, unix.LOCK_UN)
	f, err := openCached(d, name, len(prog))
	if err == nil {
		return f, nil // another host made it meanwhile
	}
	switch {
	case errors.Is(err, errBadCopy):
		// Only root could have put it there: a copy root changed, one
		// another version's removal made mutable, a file of the wrong
		// size. Replaced.
		if rerr := removeCopy(d, name); rerr != nil {
			return none, fmt.Errorf("%s: %w; removing it: %w", path, err, rerr)
		}
	case !errors.Is(err, unix.ENOENT):
		return none, fmt.Errorf("%s: %w", path, err)
	}
	if err := canMakeImmutable(d); err != nil {
		return none, fmt.Errorf("%s: %w", dir, err)
	}
	if err := writeCached(d, name, prog); err != nil {
		return none, fmt.Errorf("writing %s: %w", path, err)
	}
	f, err = openCached(d, name, len(prog))
	if err != nil {
		return none, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// flock takes an exclusive lock on the directory d, waiting for it.
func flock(d int) error {
	for {
		err := unix.Flock(d, unix.LOCK_EX)
		if err != unix.EINTR {
			return err
		}
	}
}

// canMakeImmutable says why this host could not make a copy immutable in
// the directory d, or nil: without CAP_LINUX_IMMUTABLE (a container's
// root, often), or on a filesystem without the flag, every process would
// write the copy only to refuse it.
func canMakeImmutable(d int) error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return err
	}
	if data[unix.CAP_LINUX_IMMUTABLE/32].Effective&(1<<(unix.CAP_LINUX_IMMUTABLE%32)) == 0 {
		return errors.New("no CAP_LINUX_IMMUTABLE to make the copy immutable")
	}
	if _, err := unix.IoctlGetUint32(d, unix.FS_IOC_GETFLAGS); err != nil {
		return fmt.Errorf("its filesystem keeps no file flags (immutable): %w", err)
	}
	return nil
}

// openCached opens the copy name in the directory d, a program of size
// bytes, and checks it (cachedFileOK): ENOENT if there is none, an error
// wrapping errBadCopy if what is there fails a check.
func openCached(d int, name string, size int) (helperFile, error) {
	none := helperFile{fd: -1}
	fd, err := unix.Openat(d, name, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err == unix.ELOOP {
		return none, fmt.Errorf("%w: a symbolic link", errBadCopy)
	}
	if err != nil {
		return none, err
	}
	high, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, helperFD)
	unix.Close(fd)
	if err != nil {
		return none, fmt.Errorf("moving the helper program's descriptor: %w", err)
	}
	var st unix.Stat_t
	if err = unix.Fstat(high, &st); err == nil {
		if err = cachedFileOK(high, &st, size); err != nil {
			err = fmt.Errorf("%w: %w", errBadCopy, err)
		}
	}
	if err != nil {
		unix.Close(high)
		return none, err
	}
	return helperFile{fd: high, dev: st.Dev, ino: st.Ino, cached: true}, nil
}

// errBadCopy is what openCached returns, wrapped, for a file that is no
// copy to run.
var errBadCopy = errors.New("not a copy of the helper program that only root can change")

// removeCopy removes what is at name in the directory d, clearing the
// immutable flag of a file first. The caller holds the directory's lock.
func removeCopy(d int, name string) error {
	if fd, err := unix.Openat(d, name, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0); err == nil {
		if immutable(fd) {
			setImmutable(fd, false)
		}
		unix.Close(fd)
	}
	if err := unix.Unlinkat(d, name, 0); err != nil && err != unix.ENOENT {
		return err
	}
	return nil
}

// cachedFileOK says why fd, of status st, is not a copy of a program of
// size bytes that only root can change, or nil. The copy must be
// immutable (FS_IMMUTABLE_FL): root itself may not write it by mistake
// (a write through /proc/self/fd, as into a memory file, fails with
// EPERM); only a root process that first clears the flag could.
func cachedFileOK(fd int, st *unix.Stat_t, size int) error {
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return errors.New("not a regular file")
	case st.Uid != 0:
		return fmt.Errorf("owned by uid %d, not root", st.Uid)
	case st.Mode&0o7777 != 0o500:
		return fmt.Errorf("mode %04o, not 0500", st.Mode&0o7777)
	case st.Nlink != 1:
		return fmt.Errorf("%d links", st.Nlink)
	case st.Size != int64(size):
		return fmt.Errorf("%d bytes, not the program's %d", st.Size, size)
	}
	if !immutable(fd) {
		return errors.New("not immutable")
	}
	return nil
}

// openCacheDir opens dir, an absolute path, making its last component
// (mode 0700) if it is missing, and returns a descriptor of it once every
// directory on the way is checked (helperCacheDir). No component may be a
// symbolic link.
func openCacheDir(dir string) (int, error) {
	if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir || dir == "/" {
		return -1, fmt.Errorf("%q is not a clean absolute path", dir)
	}
	parts := strings.Split(dir[1:], "/")
	d, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	at := "/"
	for i, part := range parts {
		if err := cacheDirOK(d, at, false); err != nil {
			unix.Close(d)
			return -1, err
		}
		last := i == len(parts)-1
		next, err := unix.Openat(d, part, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == unix.ENOENT && last {
			if err = unix.Mkdirat(d, part, 0o700); err == nil || err == unix.EEXIST {
				next, err = unix.Openat(d, part, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			}
		}
		unix.Close(d)
		if err != nil {
			return -1, fmt.Errorf("%s: %w", filepath.Join(at, part), err)
		}
		d, at = next, filepath.Join(at, part)
	}
	defer unix.Close(d)
	if err := cacheDirOK(d, at, true); err != nil {
		return -1, err
	}
	var fs unix.Statfs_t
	if err := unix.Fstatfs(d, &fs); err != nil {
		return -1, err
	}
	if fs.Flags&unix.ST_NOEXEC != 0 {
		return -1, fmt.Errorf("%s is on a filesystem mounted noexec", dir)
	}
	if fs.Type == unix.FUSE_SUPER_MAGIC {
		// Its owners and flags are whatever its daemon says.
		return -1, fmt.Errorf("%s is on a FUSE filesystem", dir)
	}
	// A descriptor that reads the directory (the one above only names
	// it), for the stale copies' removal.
	return unix.Openat(d, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
}

// cacheDirOK says why the directory d (at, for errors) may be changed by
// someone other than root, or nil. An ancestor (not last) may be
// writable by all if it is sticky.
func cacheDirOK(d int, at string, last bool) error {
	var st unix.Stat_t
	if err := unix.Fstat(d, &st); err != nil {
		return err
	}
	if st.Uid != 0 {
		return fmt.Errorf("%s is owned by uid %d, not root", at, st.Uid)
	}
	if st.Mode&0o022 != 0 && (last || st.Mode&unix.S_ISVTX == 0) {
		return fmt.Errorf("%s (mode %04o) is writable by others than root", at, st.Mode&0o7777)
	}
	return nil
}

// writeCached writes prog into a new file in the directory d, mode 0500
// whatever the umask, and links it as name once it is whole and no
// descriptor can write it (an exec of a file open for writing fails with
// ETXTBSY), then makes it immutable; then it removes stale copies of other
// versions. The caller holds the directory's lock.
func writeCached(d int, name, prog string) error {
	fd, err := unix.Openat(d, ".", unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, 0o500)
	if err != nil {
		return err
	}
	w := os.NewFile(uintptr(fd), name)
	_, err = w.WriteString(prog)
	if err == nil {
		err = unix.Fchmod(fd, 0o500)
	}
	if err == nil {
		// Whole on the disk before it has a name: a crash leaves no name
		// on a partial file.
		err = w.Sync()
	}
	ro := -1
	if err == nil {
		ro, err = unix.Open("/proc/self/fd/"+strconv.Itoa(fd), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	}
	w.Close()
	if err != nil {
		return err
	}
	defer unix.Close(ro)
	if err := unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(ro), d, name, unix.AT_SYMLINK_FOLLOW); err != nil {
		return err
	}
	// Immutable once linked (an immutable file cannot be linked); until
	// then, the lock keeps other hosts from judging it.
	if err := setImmutable(ro, true); err != nil {
		unix.Unlinkat(d, name, 0)
		return fmt.Errorf("making it immutable: %w", err)
	}
	removeStaleHelpers(d, name)
	return nil
}

// Bounds on the copies of other versions in the cache directory
// (removeStaleHelpers): hosts of different versions that run by turns
// (an agent built with one mcphost, the CLI of another) each keep theirs,
// but the directory, often in memory, does not grow without end.
const (
	helperCopiesMax = 4              // copies kept, this version's included
	helperCopyAge   = 24 * time.Hour // older copies of other versions go
)

// removeStaleHelpers removes from the directory d the copies of other
// versions than name made more than helperCopyAge ago, then the oldest
// beyond helperCopiesMax. The caller holds the directory's lock. A
// process that runs a removed copy keeps it through its descriptor, and
// stops using it at its next start (check: it is no longer immutable); a
// later one of that version writes it anew.
func removeStaleHelpers(d int, name string) {
	dup, err := unix.Dup(d)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(dup), "dir")
	names, _ := f.Readdirnames(-1)
	f.Close()
	type copyOf struct {
		name string
		made time.Time
	}
	var others []copyOf
	for _, n := range names {
		var st unix.Stat_t
		if n == name || !strings.HasPrefix(n, "helper-") || unix.Fstatat(d, n, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			continue
		}
		others = append(others, copyOf{n, time.Unix(st.Mtim.Unix())})
	}
	// Newest first: what is kept.
	slices.SortFunc(others, func(a, b copyOf) int { return b.made.Compare(a.made) })
	for i, c := range others {
		if i+1 < helperCopiesMax && time.Since(c.made) < helperCopyAge {
			continue
		}
		removeCopy(d, c.name)
	}
}
