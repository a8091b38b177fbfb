//go:build unix

package pin

import (
	"os"

	"golang.org/x/sys/unix"
)

// lock takes an exclusive flock on the file at path, creating it (mode
// 0600) if needed, and returns the function that releases it. flock locks
// belong to the open file description, so two lock calls conflict even
// within one process, and the kernel releases the lock if the process dies.
func lock(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}
