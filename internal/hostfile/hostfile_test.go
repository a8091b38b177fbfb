//go:build unix

package hostfile

import (
	"bytes"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// readBound is how long a Read may take before the test calls it stuck: a
// Read that waits on a FIFO fails the test instead of hanging it.
const readBound = 5 * time.Second

// readWithin runs Read(path, max), failing the test if it has not
// returned within readBound.
func readWithin(t *testing.T, path string, max int64) ([]byte, error) {
	t.Helper()
	var data []byte
	err := within(t, path, func() (err error) {
		data, err = Read(path, max)
		return err
	})
	return data, err
}

// within runs fn, which opens path, and returns its error, failing the
// test if it has not returned within readBound.
func within(t *testing.T, path string, fn func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-time.After(readBound):
		// Opening the write end ends a wait in opening the read end, so
		// the stuck goroutine does not outlive the test.
		if fd, err := unix.Open(path, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err == nil {
			unix.Close(fd)
		}
		t.Fatalf("opening %s has not returned after %v", path, readBound)
		return nil
	}
}

func writeFile(t *testing.T, path string, n int) []byte {
	t.Helper()
	data := bytes.Repeat([]byte("x"), n)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return data
}

func TestRead(t *testing.T) {
	const max = 1 << 10
	for _, tt := range []struct {
		name string
		// plant makes the file at path and returns the content Read must
		// return, if it must succeed.
		plant func(t *testing.T, path string) []byte
		max   int64
		want  error    // nil: the content plant returned
		msg   []string // what the error says
	}{
		{name: "max bytes", max: max, plant: func(t *testing.T, p string) []byte { return writeFile(t, p, max) }},
		{name: "empty", max: max, plant: func(t *testing.T, p string) []byte { return writeFile(t, p, 0) }},
		{name: "empty, bound 0", max: 0, plant: func(t *testing.T, p string) []byte { return writeFile(t, p, 0) }},
		{name: "max+1 bytes", max: max, plant: func(t *testing.T, p string) []byte { writeFile(t, p, max+1); return nil },
			want: ErrTooLarge, msg: []string{"more than 1KiB"}},
		{name: "one byte, bound 0", max: 0, plant: func(t *testing.T, p string) []byte { writeFile(t, p, 1); return nil },
			want: ErrTooLarge, msg: []string{"more than 0 bytes"}},
		{name: "sparse 1TiB", max: max, plant: func(t *testing.T, p string) []byte {
			// Refused from its size, so at once: reading it would take
			// minutes.
			writeFile(t, p, 0)
			if err := os.Truncate(p, 1<<40); err != nil {
				t.Skip("no sparse file of 1TiB here:", err)
			}
			return nil
		}, want: ErrTooLarge, msg: []string{"more than 1KiB"}},
		{name: "more than its size says", max: 64, plant: func(t *testing.T, p string) []byte {
			// A file of /proc is regular, of size 0, and longer: only the
			// bound on the bytes read refuses it.
			if fi, err := os.Stat("/proc/self/status"); err != nil || fi.Size() != 0 {
				t.Skip("no /proc/self/status of size 0 here")
			}
			symlink(t, "/proc/self/status", p)
			return nil
		}, want: ErrTooLarge, msg: []string{"more than 64 bytes"}},
		{name: "symlink to a regular file", max: max, plant: func(t *testing.T, p string) []byte {
			data := writeFile(t, p+".real", 100)
			symlink(t, filepath.Base(p)+".real", p)
			return data
		}},
		{name: "FIFO", max: max, plant: func(t *testing.T, p string) []byte { mkfifo(t, p); return nil },
			want: ErrNotRegular, msg: []string{"is a FIFO"}},
		{name: "symlink to a FIFO", max: max, plant: func(t *testing.T, p string) []byte {
			mkfifo(t, p+".fifo")
			symlink(t, p+".fifo", p)
			return nil
		}, want: ErrNotRegular, msg: []string{"is a symbolic link to", "which is a FIFO"}},
		{name: "symlink to /dev/zero", max: max, plant: func(t *testing.T, p string) []byte {
			if _, err := os.Stat("/dev/zero"); err != nil {
				t.Skip(err)
			}
			symlink(t, "/dev/zero", p)
			return nil
		}, want: ErrNotRegular, msg: []string{`is a symbolic link to "/dev/zero", which is a device`}},
		{name: "directory", max: max, plant: func(t *testing.T, p string) []byte {
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
			return nil
		}, want: ErrNotRegular, msg: []string{"is a directory"}},
		{name: "socket", max: max, plant: func(t *testing.T, p string) []byte {
			l, err := net.Listen("unix", p)
			if err != nil {
				t.Skip("no Unix socket here:", err)
			}
			t.Cleanup(func() { l.Close() })
			return nil
		}, want: ErrNotRegular, msg: []string{"is a socket"}},
		{name: "missing", max: max, plant: func(t *testing.T, p string) []byte { return nil }, want: fs.ErrNotExist},
		{name: "dangling symlink", max: max, plant: func(t *testing.T, p string) []byte { symlink(t, "nowhere", p); return nil }, want: fs.ErrNotExist},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// A short directory: a Unix socket's path is limited to about
			// 100 bytes.
			dir, err := os.MkdirTemp("", "hf")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			path := filepath.Join(dir, "mcphost.toml")
			content := tt.plant(t, path)
			start := time.Now()
			data, err := readWithin(t, path, tt.max)
			if tt.want == nil {
				if err != nil || !bytes.Equal(data, content) {
					t.Fatalf("Read = %d bytes, %v; want %d bytes", len(data), err, len(content))
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("Read = %d bytes, %v; want an error wrapping %q", len(data), err, tt.want)
			}
			if data != nil {
				t.Errorf("Read returned %d bytes with its error", len(data))
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("Read took %v to refuse", d)
			}
			for _, m := range append(tt.msg, path) {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q lacks %q", err, m)
				}
			}
			if tt.want != ErrNotRegular {
				return
			}
			// The same file put in place between Read's look at the path
			// and its open: the open must not wait, and the look at the
			// open file must refuse it.
			err = within(t, path, func() error {
				f, _, err := openRegular(path)
				if err == nil {
					f.Close()
				}
				return err
			})
			if !errors.Is(err, ErrNotRegular) {
				t.Fatalf("openRegular = %v; want an error wrapping %q", err, ErrNotRegular)
			}
			for _, m := range append(tt.msg, path) {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("openRegular's error %q lacks %q", err, m)
				}
			}
		})
	}
}

// TestOpen: Open gives a regular file, ready to read, and refuses a FIFO
// at once.
func TestOpen(t *testing.T) {
	dir := t.TempDir()
	reg := filepath.Join(dir, "program")
	want := writeFile(t, reg, 3000)
	f, err := Open(reg)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got bytes.Buffer
	if _, err := got.ReadFrom(f); err != nil || !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("read %d bytes, %v; want %d", got.Len(), err, len(want))
	}

	fifo := filepath.Join(dir, "fifo")
	mkfifo(t, fifo)
	err = within(t, fifo, func() error {
		f, err := Open(fifo)
		if err == nil {
			f.Close()
		}
		return err
	})
	if !errors.Is(err, ErrNotRegular) {
		t.Fatalf("Open(FIFO) = %v; want an error wrapping %q", err, ErrNotRegular)
	}
}

func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := unix.Mkfifo(path, 0o644); err != nil {
		t.Skip("no FIFO here:", err)
	}
}

func symlink(t *testing.T, target, path string) {
	t.Helper()
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
}
