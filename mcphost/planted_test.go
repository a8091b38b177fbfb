//go:build unix

package mcphost

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestPlantedPackageLock: a package-lock.json a server put in place as a
// FIFO or a symbolic link to /dev/zero gives no package version, at once,
// instead of a program identity that waits for a writer or reads without
// end; a real one gives the version.
func TestPlantedPackageLock(t *testing.T) {
	for _, tt := range []struct {
		name  string
		plant func(path string) error
		want  string
	}{
		{"regular", func(p string) error {
			return os.WriteFile(p, []byte(`{"packages":{"node_modules/@acme/notes":{"version":"1.2.3"}}}`), 0o644)
		}, "@acme/notes@1.2.3"},
		{"FIFO", func(p string) error { return unix.Mkfifo(p, 0o644) }, ""},
		{"/dev/zero", func(p string) error { return os.Symlink("/dev/zero", p) }, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			wt := t.TempDir()
			script := filepath.Join(wt, "node_modules", "@acme", "notes", "index.js")
			if err := os.MkdirAll(filepath.Dir(script), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(script, []byte("console.log(1)\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			lock := filepath.Join(wt, "package-lock.json")
			if err := tt.plant(lock); err != nil {
				t.Skip(err)
			}
			done := make(chan string, 1)
			go func() { done <- npmPackage(script) }()
			select {
			case got := <-done:
				if got != tt.want {
					t.Errorf("npmPackage = %q, want %q", got, tt.want)
				}
			case <-time.After(5 * time.Second):
				// A writer's open ends the wait in the read end's.
				if fd, err := unix.Open(lock, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err == nil {
					unix.Close(fd)
				}
				t.Fatal("npmPackage has not returned after 5s")
			}
		})
	}
}
