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
// program: the directory of runtime files, which the system empties at
// each boot.
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
// root owns there), and the file must be root's, writable by no one
// else, a regular file with one link and the program's size, on a
// filesystem that lets it run. The file is written under no name
// (O_TMPFILE) and linked once it is whole, so no process ever finds a
// partial copy. Anything else (a host that is not root, a directory this
// host cannot make, a file that fails a check) and the host uses a
// sealed memory file, as before.
//
// A server cannot reach the copy: it runs as a uid of its own, without
// capabilities, in a root that does not hold the directory, and the
// helper's /proc/1/exe is root's, which the server may not open.
const helperCacheDir = "/run/mcphost"

// fsImmutable is FS_IMMUTABLE_FL (linux/fs.h), which golang.org/x/sys
// does not name: a file no one may change, link, rename or remove, root
// included, until a holder of CAP_LINUX_IMMUTABLE clears it.
const fsImmutable = 0x10

// helperCache returns the copy of prog in dir, named for sum, making it if
// it is missing; see helperCacheDir.
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
	f, err := openCached(d, name, len(prog))
	if err == unix.ENOENT {
		if err := writeCached(d, name, prog); err != nil && err != unix.EEXIST {
			return none, fmt.Errorf("writing the helper program to %s: %w", dir, err)
		}
		f, err = openCached(d, name, len(prog))
	}
	if err != nil {
		return none, fmt.Errorf("%s: %w", filepath.Join(dir, name), err)
	}
	return f, nil
}

// openCached opens the copy name in the directory d, a program of size
// bytes, and checks it (cachedFileOK). A copy that fails a check is
// removed (only root could have put it there: a copy another version
// left, or one root changed), and ENOENT returned, so that the caller
// writes it anew.
func openCached(d int, name string, size int) (helperFile, error) {
	none := helperFile{fd: -1}
	fd, err := unix.Openat(d, name, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err == unix.ELOOP {
		// A symbolic link: not the copy, whatever it names.
		if unix.Unlinkat(d, name, 0) == nil {
			return none, unix.ENOENT
		}
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
		err = cachedFileOK(high, &st, size)
	}
	if err != nil {
		if st.Mode&unix.S_IFMT == unix.S_IFREG {
			// Mutable again, so that it can be removed.
			if flags, ferr := unix.IoctlGetUint32(high, unix.FS_IOC_GETFLAGS); ferr == nil && flags&fsImmutable != 0 {
				unix.IoctlSetPointerInt(high, unix.FS_IOC_SETFLAGS, int(flags&^fsImmutable))
			}
			if unix.Unlinkat(d, name, 0) == nil {
				err = unix.ENOENT
			}
		}
		unix.Close(high)
		return none, err
	}
	return helperFile{fd: high, dev: st.Dev, ino: st.Ino, cached: true}, nil
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
	case st.Mode&0o022 != 0:
		return fmt.Errorf("mode %04o: writable by others than its owner", st.Mode&0o7777)
	case st.Nlink != 1:
		return fmt.Errorf("%d links", st.Nlink)
	case st.Size != int64(size):
		return fmt.Errorf("%d bytes, not the program's %d", st.Size, size)
	}
	flags, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
	if err != nil {
		return fmt.Errorf("its flags: %w", err)
	}
	if flags&fsImmutable == 0 {
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

// writeCached writes prog into a new file in the directory d and links it
// as name once it is whole; then it removes the copies of other versions.
// EEXIST: another process linked it first.
func writeCached(d int, name, prog string) error {
	fd, err := unix.Openat(d, ".", unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, 0o500)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	if _, err := f.WriteString(prog); err != nil {
		return err
	}
	// Whole on the disk before it has a name: a crash leaves no name on
	// a partial file.
	if err := f.Sync(); err != nil {
		return err
	}
	if err := unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), d, name, unix.AT_SYMLINK_FOLLOW); err != nil {
		return err
	}
	// Immutable once linked (an immutable file cannot be linked); until
	// then, openCached refuses it.
	flags, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
	if err == nil {
		err = unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, int(flags|fsImmutable))
	}
	if err != nil {
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
// beyond helperCopiesMax. A process that runs a removed copy keeps it
// through its descriptor; a later one of that version writes it anew.
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
		if fd, err := unix.Openat(d, c.name, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0); err == nil {
			if flags, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS); err == nil && flags&fsImmutable != 0 {
				unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, int(flags&^fsImmutable))
			}
			unix.Close(fd)
		}
		unix.Unlinkat(d, c.name, 0)
	}
}
