package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// selfExe runs the host program itself as the helper: the fallback when the
// embedded helper program cannot be used. The package's init turns any
// importing program into a helper when started as one.
const selfExe = "/proc/self/exe"

// embedded is the embedded helper program loaded into a sealed memory file,
// once per process: a cache of immutable bytes, not state a caller sees,
// which is why it may be package-level. After a failure to load or to run
// it, every Start uses selfExe.
var embedded struct {
	once sync.Once
	path string // /proc/self/fd/N of the sealed memory file, or ""
	err  error  // why there is no path

	mu       sync.Mutex
	disabled error // set when running it failed; path is not used again
}

// helperPath returns the program Start executes as the helper: the
// embedded one when this system lets it run, else the host program.
func helperPath() string {
	embedded.once.Do(func() {
		embedded.path, embedded.err = loadHelper(helperProgram)
	})
	embedded.mu.Lock()
	defer embedded.mu.Unlock()
	if embedded.path == "" || embedded.disabled != nil {
		return selfExe
	}
	return embedded.path
}

// disableEmbedded stops using the embedded helper after err running it.
func disableEmbedded(err error) {
	embedded.mu.Lock()
	defer embedded.mu.Unlock()
	if embedded.disabled == nil {
		embedded.disabled = err
	}
}

// helperFD is the lowest descriptor the memory file may have: os/exec
// places the helper's stdio and extra files at 0 to 4 before it executes
// /proc/self/fd/N, which must not be one of them.
const helperFD = 10

// loadHelper writes prog into a memory file, seals it against every change
// and returns the path the kernel can execute it by. The file lives as long
// as the process; it is close-on-exec, so no child keeps it.
func loadHelper(prog string) (string, error) {
	if prog == "" {
		return "", errors.New("no helper program is embedded for this architecture")
	}
	flags := unix.MFD_CLOEXEC | unix.MFD_ALLOW_SEALING
	fd, err := unix.MemfdCreate(helperArg0, flags|unix.MFD_EXEC)
	if err == unix.EINVAL {
		// Before Linux 6.3 there is no MFD_EXEC, and every memory file
		// may be executed.
		fd, err = unix.MemfdCreate(helperArg0, flags)
	}
	if err != nil {
		// EACCES: vm.memfd_noexec forbids executable memory files.
		return "", fmt.Errorf("memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), helperArg0)
	if _, err := io.WriteString(f, prog); err != nil {
		f.Close()
		return "", fmt.Errorf("writing the helper program: %w", err)
	}
	// Sealed, nothing in this process (or one it passed the file to)
	// can change the program between two starts.
	const seals = unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE
	if _, err := unix.FcntlInt(f.Fd(), unix.F_ADD_SEALS, seals); err != nil {
		f.Close()
		return "", fmt.Errorf("sealing the helper program: %w", err)
	}
	high, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, helperFD)
	f.Close()
	if err != nil {
		return "", fmt.Errorf("moving the helper program's descriptor: %w", err)
	}
	return "/proc/self/fd/" + strconv.Itoa(high), nil
}
