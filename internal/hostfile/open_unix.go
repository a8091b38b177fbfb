//go:build unix

package hostfile

import (
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// openNoBlock opens path for reading without waiting: O_NONBLOCK makes
// opening a FIFO return at once, writer or not, and reading a regular file
// is unaffected by it; O_NOCTTY keeps a terminal from becoming mcphost's.
func openNoBlock(path string) (*os.File, error) {
	for {
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: path, Err: err}
		}
		return os.NewFile(uintptr(fd), path), nil
	}
}
