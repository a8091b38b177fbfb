//go:build unix

package pin

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcphost/mcphost/internal/hostfile"
	"golang.org/x/sys/unix"
)

// TestPlantedFiles: a FIFO or a symbolic link to /dev/zero in place of a
// lock file, a state file or a program is refused at once, as not a
// regular file, instead of waiting for a writer or reading without end.
func TestPlantedFiles(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip(err)
	}
	for _, tt := range []struct {
		name string
		read func(dir, path string) error // path is dir's planted file
		file string                       // the planted file's name
	}{
		{"lock", func(_, p string) error { _, _, err := (&LockStore{Path: p}).Load(); return err }, LockFileName},
		{"state", func(d, _ string) error { _, err := (&Store{Dir: d}).Load(); return err }, FileName},
		{"program", func(_, p string) error { _, err := DigestFile(p); return err }, "server.js"},
	} {
		for _, kind := range []string{"FIFO", "/dev/zero"} {
			t.Run(tt.name+" "+kind, func(t *testing.T) {
				dir := t.TempDir()
				path := filepath.Join(dir, tt.file)
				var err error
				if kind == "FIFO" {
					err = unix.Mkfifo(path, 0o644)
				} else {
					err = os.Symlink("/dev/zero", path)
				}
				if err != nil {
					t.Skip(err)
				}
				done := make(chan error, 1)
				go func() { done <- tt.read(dir, path) }()
				select {
				case err := <-done:
					if !errors.Is(err, hostfile.ErrNotRegular) {
						t.Errorf("error %v; want one wrapping %q", err, hostfile.ErrNotRegular)
					}
				case <-time.After(5 * time.Second):
					// A writer's open ends the wait in the read end's.
					if fd, err := unix.Open(path, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err == nil {
						unix.Close(fd)
					}
					t.Fatal("still reading after 5s")
				}
			})
		}
	}
}
