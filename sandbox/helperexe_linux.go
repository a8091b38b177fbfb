package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// selfExe runs the host program itself as the helper: the fallback when the
// embedded helper program cannot be used. The package's init turns any
// importing program into a helper when started as one.
const selfExe = "/proc/self/exe"

// embedded is the embedded helper program, loaded once per process (a
// root host's copy on disk, else a sealed memory file): a cache of
// immutable bytes, not state a caller sees, which is why it may be
// package-level. After a failure to load or to run it, every Start uses
// selfExe.
var embedded struct {
	once sync.Once
	file helperFile // its file; fd < 0 when there is none
	err  error      // why there is none

	mu       sync.Mutex
	disabled error // set when running it failed; the file is not used again
	// refused is a root host's copy that gave way to a memory file
	// (helperRefused), kept open; the zero helperFile when none did.
	refused helperFile
}

// helperPath returns the program Start executes as the helper: the
// embedded one when this system lets it run, else the host program.
func helperPath() string {
	embedded.once.Do(func() {
		embedded.file, embedded.err = loadHelper(helperProgram, helperSum, helperCacheDir)
	})
	embedded.mu.Lock()
	defer embedded.mu.Unlock()
	if embedded.file.fd < 0 || embedded.disabled != nil {
		return selfExe
	}
	// The descriptor is only a number: code elsewhere in the process that
	// closed it by mistake would let the next file opened take its place,
	// and that file would run as the helper. Check it is still ours.
	if err := embedded.file.check(); err != nil {
		embedded.disabled = err
		return selfExe
	}
	return embedded.file.path()
}

// passHelper makes cmd, whose Path is helperPath's, run the embedded
// helper program from a descriptor the child is given, checked again (as
// helperPath checked it), not from the host's own: os/exec moves some of the child's descriptors, before its
// exec, to the numbers just above the highest it passes, and the host's
// descriptor of the program could be one of them (the exec then ran a
// pipe and failed with EACCES, which happened whenever the program's file
// was opened after the start's pipes). A copy of the descriptor is
// appended to cmd.ExtraFiles and executed as the number the child gets.
// The returned function closes that copy; call it once cmd.Start has
// returned. A Path of a root host's copy that gave way to a memory file
// (helperRefused), which a start may hold from before, is passed and
// checked the same way. For any other Path it does nothing. An error
// means the program at Path is not to be run: the embedded program is
// disabled (the caller then runs selfExe), unless Path was that refused
// copy's (the caller then asks helperRefused for the memory file). The
// copy lands at descriptor 5 (6 with a network proxy, whose socket is 5):
// the helper uses 5 only when its spec has a proxy, and marks every
// descriptor from 3 on close-on-exec before the server's exec.
func passHelper(cmd *exec.Cmd) (release func(), err error) {
	embedded.mu.Lock()
	fd := -1
	src, refused := embedded.file, embedded.refused.cached && cmd.Path == embedded.refused.path()
	if refused {
		src = embedded.refused
	}
	if src.fd >= 0 && cmd.Path == src.path() {
		fd, err = unix.FcntlInt(uintptr(src.fd), unix.F_DUPFD_CLOEXEC, 3)
		if err == nil {
			// The copy, checked again: the number helperPath checked may
			// have been closed and taken by another file since.
			copied := src
			copied.fd = fd
			if err = copied.check(); err != nil {
				unix.Close(fd)
				fd = -1
				if !refused && embedded.disabled == nil {
					embedded.disabled = err
				}
			}
		}
	}
	embedded.mu.Unlock()
	if fd < 0 {
		return func() {}, err
	}
	f := os.NewFile(uintptr(fd), helperArg0)
	cmd.ExtraFiles = append(cmd.ExtraFiles, f)
	cmd.Path = "/proc/self/fd/" + strconv.Itoa(2+len(cmd.ExtraFiles))
	return func() { f.Close() }, nil
}

// helperRefused is what a start whose exec of the helper program at path
// failed runs next, or "" for the host program (selfExe). A root
// host's copy that its own exec refuses (a security module's rule on its
// directory, say) gives way to a sealed memory file, for that start and
// every later one; a start that took the copy's path before another
// start's exec was refused gets the memory file too. The copy's
// descriptor stays open: a number closed here could be taken by another
// file while such a start still holds its path.
func helperRefused(path string) string {
	embedded.mu.Lock()
	defer embedded.mu.Unlock()
	switch {
	case embedded.disabled != nil || embedded.file.fd < 0:
		return ""
	case embedded.refused.cached && path == embedded.refused.path():
		return embedded.file.path() // replaced meanwhile
	case path != embedded.file.path() || !embedded.file.cached:
		return ""
	}
	f, err := memoryHelper(helperProgram)
	if err != nil {
		return ""
	}
	embedded.refused, embedded.file = embedded.file, f
	return f.path()
}

// disableEmbedded stops using the embedded helper after err running it.
func disableEmbedded(err error) {
	embedded.mu.Lock()
	defer embedded.mu.Unlock()
	if embedded.disabled == nil {
		embedded.disabled = err
	}
}

// helperFD is the lowest descriptor the helper program's file may have:
// above stdio, onto which programs dup2 other files (check would then
// find another file there, and the embedded program be given up). The
// child never runs the host's number (passHelper), so no higher bound
// matters.
const helperFD = 10

// helperFile is the file holding the helper program: a sealed memory
// file, or a root host's copy on disk (cached).
type helperFile struct {
	fd       int
	dev, ino uint64
	cached   bool
}

func (f helperFile) path() string { return "/proc/self/fd/" + strconv.Itoa(f.fd) }

// helperSeals are the seals that make the memory file immutable.
const helperSeals = unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE

// check reports an error unless f.fd still refers to the file loadHelper
// returned: the same file, and for a memory file, still sealed.
func (f helperFile) check() error {
	var st unix.Stat_t
	if err := unix.Fstat(f.fd, &st); err != nil {
		return fmt.Errorf("descriptor %d of the helper program: %w", f.fd, err)
	}
	same := st.Dev == f.dev && st.Ino == f.ino
	if !f.cached {
		seals, err := unix.FcntlInt(uintptr(f.fd), unix.F_GET_SEALS, 0)
		same = same && err == nil && seals&helperSeals == helperSeals
	}
	if !same {
		return fmt.Errorf("descriptor %d no longer holds the helper program (closed and reused elsewhere in this process?)", f.fd)
	}
	if f.cached {
		// Still immutable: another version's host clears the flag of
		// a copy it removes as stale.
		if !immutable(f.fd) {
			return fmt.Errorf("the helper program's copy is no longer immutable (removed as stale by another version?)")
		}
	}
	return nil
}

// loadHelper returns the helper program prog, whose SHA-256 in hex is
// sum: on a root host its copy in the directory dir (helperCache), and
// where that cannot be had, or the host is not root, a sealed memory file
// (memoryHelper). The file lives as long as the process; its descriptor
// is close-on-exec, so no child keeps it.
func loadHelper(prog, sum, dir string) (helperFile, error) {
	if prog == "" {
		return helperFile{fd: -1}, errors.New("no helper program is embedded for this architecture")
	}
	if dir != "" && os.Geteuid() == 0 {
		if f, err := helperCache(prog, sum, dir); err == nil {
			return f, nil
		}
	}
	return memoryHelper(prog)
}

// memoryHelper writes prog into a memory file, seals it against every
// change and returns it. The file lives as long as the process; it is
// close-on-exec, so no child keeps it.
func memoryHelper(prog string) (helperFile, error) {
	none := helperFile{fd: -1}
	flags := unix.MFD_CLOEXEC | unix.MFD_ALLOW_SEALING
	fd, err := unix.MemfdCreate(helperArg0, flags|unix.MFD_EXEC)
	if err == unix.EINVAL {
		// Before Linux 6.3 there is no MFD_EXEC, and every memory file
		// may be executed.
		fd, err = unix.MemfdCreate(helperArg0, flags)
	}
	if err != nil {
		// EACCES: vm.memfd_noexec forbids executable memory files.
		return none, fmt.Errorf("memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), helperArg0)
	defer f.Close()
	if _, err := io.WriteString(f, prog); err != nil {
		return none, fmt.Errorf("writing the helper program: %w", err)
	}
	// Sealed, nothing in this process (or one it passed the file to)
	// can change the program between two starts.
	if _, err := unix.FcntlInt(f.Fd(), unix.F_ADD_SEALS, helperSeals); err != nil {
		return none, fmt.Errorf("sealing the helper program: %w", err)
	}
	high, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, helperFD)
	if err != nil {
		return none, fmt.Errorf("moving the helper program's descriptor: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(high, &st); err != nil {
		unix.Close(high)
		return none, fmt.Errorf("the helper program's memory file: %w", err)
	}
	return helperFile{fd: high, dev: st.Dev, ino: st.Ino}, nil
}
