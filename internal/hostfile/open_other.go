//go:build !unix

package hostfile

import "os"

// openNoBlock opens path for reading. Outside Unix a file system holds no
// FIFO to wait on (Windows' named pipes live in a namespace of their own),
// so this is a plain open; open still refuses all but a regular file.
func openNoBlock(path string) (*os.File, error) {
	return os.Open(path)
}
