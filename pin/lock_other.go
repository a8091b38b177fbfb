//go:build !unix

package pin

import (
	"errors"
	"fmt"
	"time"
)

// lock fails: without a file lock, concurrent writers could lose each
// other's pins, so this package refuses to write the state at all.
func lock(path string, timeout time.Duration) (unlock func(), err error) {
	return nil, fmt.Errorf("file locking is not implemented on this platform: %w", errors.ErrUnsupported)
}

// lockDir fails as lock does.
func lockDir(dir string, timeout time.Duration) (unlock func(), err error) {
	return lock(dir, timeout)
}
