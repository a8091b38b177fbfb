//go:build !unix

package sandbox

import (
	"fmt"
	"io"
	"os"
)

// readHead returns up to n bytes from the start of the file at p, which
// must be a regular file. (Only Linux reads a program's "#!" line; this
// keeps the package building elsewhere.)
func readHead(p string, n int) ([]byte, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%v)", p, st.Mode().Type())
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, n)
	m, err := io.ReadFull(f, buf)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return nil, err
	}
	return buf[:m], nil
}
