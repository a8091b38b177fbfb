//go:build unix

package sandbox

import (
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// readHead returns up to n bytes from the start of the file at p.
func readHead(p string, n int) ([]byte, error) {
	// Not blocking, and only a regular file: a FIFO (or a terminal) a
	// server put in place of a script or interpreter would otherwise hang
	// the start, or read what the person types.
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: p, Err: err}
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%v)", p, st.Mode().Type())
	}
	buf := make([]byte, n)
	m, err := io.ReadFull(f, buf)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return nil, err
	}
	return buf[:m], nil
}
