//go:build unix

package pin

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// lock takes an exclusive flock on the file at path, creating it (mode
// 0600) if needed, and returns the function that releases it. flock locks
// belong to the open file description, so two lock calls conflict even
// within one process, and the kernel releases the lock if the process dies.
//
// It waits at most timeout for a holder to let go, then fails with an
// error wrapping ErrLocked: a blocking flock cannot be interrupted, so it
// tries without blocking, at growing intervals (1 ms to 50 ms).
func lock(path string, timeout time.Duration) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	return flockWait(f, path, timeout)
}

// lockDir takes an exclusive flock on the directory dir itself, as lock
// does on a file: for a file that lives in a project (a lock file), so
// that locking it leaves no second file there.
func lockDir(dir string, timeout time.Duration) (unlock func(), err error) {
	f, err := os.OpenFile(dir, os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	return flockWait(f, dir, timeout)
}

func flockWait(f *os.File, path string, timeout time.Duration) (unlock func(), err error) {
	deadline := time.Now().Add(timeout)
	pause := time.Millisecond
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == unix.EINTR {
			continue
		}
		if err != unix.EWOULDBLOCK || !time.Now().Before(deadline) {
			break
		}
		time.Sleep(min(pause, time.Until(deadline)))
		pause = min(2*pause, 50*time.Millisecond)
	}
	if err == unix.EWOULDBLOCK {
		err = &lockedError{path: path, waited: timeout}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}
