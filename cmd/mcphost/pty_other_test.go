//go:build !linux

package main

import (
	"os"
	"testing"
)

// openPTY skips the test: it opens pseudo-terminals the Linux way only.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	t.Skip("the pseudo-terminal tests open terminals the Linux way only")
	return nil, nil
}
