// Package hostfile opens and reads mcphost's own files — the config
// (mcphost.toml), a lock file (mcphost.lock), the reviewed-tools state
// file, a package-lock.json that names a server's package — as files a
// server could have written.
//
// A confined server may write its worktree, and most of these files lie
// there or may: the server can put anything in their place. A symbolic
// link to /dev/zero reads without end; a FIFO makes a plain open wait
// forever for a writer; a regular file can be grown past any real one.
// So Open and Read take a regular file only (a symbolic link is followed,
// but only to a regular file), never wait opening one (a FIFO is opened
// without blocking, then refused), and Read reads at most a bound its
// caller names. Everything else is refused with an error that names the
// file, says what it is, and what to do.
//
// The bounds, each far above any real file of its kind:
//
//	the config (mcphost.toml)        1 MiB    MaxConfig
//	a lock file (mcphost.lock)       256 MiB  MaxLock
//	the reviewed-tools state file    256 MiB  package pin
//	a package-lock.json              64 MiB   package mcphost (past it, no package version is shown)
package hostfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"

	"github.com/mcphost/mcphost/internal/bytesize"
)

const (
	// MaxConfig bounds a config file (mcphost.toml, an agent's config): a
	// config of a hundred servers is tens of KiB.
	MaxConfig = 1 << 20
	// MaxLock bounds a lock file (mcphost.lock), as package pin bounds a
	// state file: ten thousand tools of 10 KiB each are 100 MiB.
	MaxLock = 256 << 20
)

var (
	// ErrNotRegular means the file is neither a regular file nor a
	// symbolic link to one: it is a directory, a FIFO, a socket, a device
	// or another kind. It is not read.
	ErrNotRegular = errors.New("not a regular file")
	// ErrTooLarge means the file holds more bytes than its bound. It is
	// not returned, not even in part.
	ErrTooLarge = errors.New("file too large")
)

// Open opens the file at path for reading, following a symbolic link, and
// returns it if it is a regular file. It never blocks opening the file,
// whatever it is. It returns an error wrapping ErrNotRegular, naming the
// path and the kind of file found, for anything but a regular file, and
// the *fs.PathError of the open otherwise (so errors.Is(err,
// fs.ErrNotExist) tells a missing file).
func Open(path string) (*os.File, error) {
	f, _, err := open(path)
	return f, err
}

// Read returns the content of the regular file at path, as Open opens it,
// if it holds at most max bytes (max >= 0). A larger file is refused,
// unread past max+1 bytes, with an error wrapping ErrTooLarge that names
// the path and the bound; a file that grows past max while read is too.
// Other errors are Open's, or the *fs.PathError of the read.
func Read(path string, max int64) ([]byte, error) {
	f, fi, err := open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// The size is only a hint: the file may change while it is read, so the
	// bound is enforced on the bytes read, and at most one past it is.
	size := fi.Size()
	if size > max {
		return nil, tooLarge(path, max)
	}
	limit := max
	if limit < math.MaxInt64 {
		limit++
	}
	// One byte more than the size, so that a file as large as it says
	// ends without the buffer growing.
	data := make([]byte, 0, size+1)
	r := io.LimitReader(f, limit)
	for {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
		n, err := r.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if int64(len(data)) > max {
			return nil, tooLarge(path, max)
		}
		if err == io.EOF {
			return data, nil
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
	}
}

// open is Open, also returning the open file's information.
func open(path string) (*os.File, fs.FileInfo, error) {
	// A look before opening keeps a device (or a FIFO) from being opened
	// at all in the common case; the look at the open file in openRegular
	// is the one that counts, since the file can be replaced in between.
	// Errors are left to the open, whose are the ones callers know.
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return nil, nil, notRegular(path, fi.Mode())
	}
	return openRegular(path)
}

// openRegular opens path without blocking and keeps it open only if it is
// a regular file.
func openRegular(path string) (*os.File, fs.FileInfo, error) {
	f, err := openNoBlock(path)
	if err != nil {
		// Opening a socket fails (ENXIO on Linux): say what it is.
		if fi, serr := os.Stat(path); serr == nil && !fi.Mode().IsRegular() {
			return nil, nil, notRegular(path, fi.Mode())
		}
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, notRegular(path, fi.Mode())
	}
	return f, fi, nil
}

// notRegular returns the error for path, found to be of mode m (through
// any symbolic links), which is not a regular file.
func notRegular(path string, m fs.FileMode) error {
	var kind string
	switch t := m.Type(); {
	case t&fs.ModeDir != 0:
		kind = "a directory"
	case t&fs.ModeNamedPipe != 0:
		kind = "a FIFO (named pipe)"
	case t&fs.ModeSocket != 0:
		kind = "a socket"
	case t&fs.ModeDevice != 0:
		kind = "a device"
	default:
		kind = "not a regular file (" + t.String() + ")"
	}
	// Say so when a symbolic link leads there: the link is what a person
	// finds and removes. Its target is quoted, since a server chose it.
	if li, err := os.Lstat(path); err == nil && li.Mode()&fs.ModeSymlink != 0 {
		if target, err := os.Readlink(path); err == nil {
			kind = fmt.Sprintf("a symbolic link to %q, which is %s", target, kind)
		} else {
			kind = "a symbolic link to " + kind
		}
	}
	// A *fs.PathError, as an open's error is: callers that match one
	// (errors.As) keep working.
	return &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w: it is %s; mcphost reads it only as a regular file, since a server may have put something else in its place to stall mcphost or flood its memory; "+
		"see what it is and put the file it should be there", ErrNotRegular, kind)}
}

// tooLarge returns the error for path, which holds more than max bytes.
func tooLarge(path string, max int64) error {
	return fmt.Errorf("%s: %w: it holds more than %s, the most mcphost reads of such a file, so a server may have grown it to flood mcphost's memory; "+
		"see what wrote it and put the file it should be there", path, ErrTooLarge, bytesize.Format(max))
}
