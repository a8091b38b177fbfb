//go:build unix

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/mcphost/mcphost/pin"
	"golang.org/x/sys/unix"
)

// TestPlantedSpecialFiles: a server that can write the worktree puts a
// symbolic link to /dev/zero or a FIFO in place of mcphost.toml or
// mcphost.lock. Every command that reads the file refuses it at once,
// saying what it is, instead of reading without end or waiting forever.
func TestPlantedSpecialFiles(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip(err)
	}
	zero := func(t *testing.T, p string) {
		if err := os.Symlink("/dev/zero", p); err != nil {
			t.Fatal(err)
		}
	}
	fifo := func(t *testing.T, p string) {
		if err := unix.Mkfifo(p, 0o644); err != nil {
			t.Skip("no FIFO here:", err)
		}
	}
	const (
		isZero = `is a symbolic link to "/dev/zero", which is a device`
		isFIFO = "is a FIFO"
	)
	for _, tt := range []struct {
		name string
		// planted is "config" or "lock": which of the worktree's
		// mcphost.toml and mcphost.lock plant makes. The config is
		// otherwise a real one outside the worktree; the lock is
		// otherwise missing, or an empty one if realLock.
		planted  string
		plant    func(t *testing.T, path string)
		realLock bool
		args     []string // LOCK stands for the lock's path
		ok       bool     // the command succeeds all the same
		want     string   // "": the command does not report the file
	}{
		{"list, config to /dev/zero", "config", zero, false, []string{"list"}, false, isZero},
		{"list, config a FIFO", "config", fifo, false, []string{"list"}, false, isFIFO},
		{"check, config a FIFO", "config", fifo, false, []string{"check"}, false, isFIFO},
		{"approve a table, config to /dev/zero", "config", zero, false, []string{"approve", "-yes", "notes"}, false, isZero},
		{"approve a table into the lock, config a FIFO", "config", fifo, false, []string{"approve", "-lock", "LOCK", "-yes", "notes"}, false, isFIFO},
		// The config only names the lock's servers here: without it,
		// the lock is accepted all the same.
		{"approve -lock, config to /dev/zero", "config", zero, true, []string{"approve", "-lock", "LOCK", "-yes"}, true, ""},
		{"check -lock, lock a FIFO", "lock", fifo, false, []string{"check", "-lock", "LOCK"}, false, isFIFO},
		// list shows the tools, all held, and says why in a notice.
		{"list -lock, lock to /dev/zero", "lock", zero, false, []string{"list", "-lock", "LOCK"}, true, isZero},
		{"approve -lock, lock a FIFO", "lock", fifo, false, []string{"approve", "-lock", "LOCK", "-yes"}, false, isFIFO},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newCLIEnv(t, notesTable)
			lock := filepath.Join(e.worktree, "mcphost.lock")
			if tt.realLock {
				data, err := (&pin.Lock{Version: pin.LockVersion, Servers: map[string]pin.LockServer{}}).Marshal()
				if err != nil {
					t.Fatal(err)
				}
				mkfileT(t, lock, data, 0o644)
			}
			planted := lock
			if tt.planted == "config" {
				planted = filepath.Join(e.worktree, "mcphost.toml")
				e.config = planted
			}
			tt.plant(t, planted)
			args := make([]string, len(tt.args))
			for i, a := range tt.args {
				args[i] = strings.ReplaceAll(a, "LOCK", lock)
			}
			code, out := e.runBounded(planted, args...)
			if (code == exitOK) != tt.ok {
				t.Errorf("exit %d, want success %v\n%s", code, tt.ok, out)
			}
			if tt.want != "" && (!strings.Contains(out, planted) || !strings.Contains(out, tt.want)) {
				t.Errorf("the output does not name %s and say %q:\n%s", planted, tt.want, out)
			}
		})
	}
}

// runBounded is run, failing the test if the command has not ended within
// 20 s: it has waited on a FIFO (which it then lets go). It stops the whole
// test binary if the command holds 256 MiB more than when it started: it
// is reading a planted file without end, and would take the machine's
// memory. It returns the exit code and stdout and stderr together.
func (e *cliEnv) runBounded(fifo string, args ...string) (int, string) {
	e.t.Helper()
	const (
		bound = 20 * time.Second
		flood = 256 << 20
	)
	type result struct {
		code int
		out  string
	}
	done := make(chan result, 1)
	go func() {
		code, out, stderr := e.run("", args...)
		done <- result{code, out + stderr}
	}()
	heap := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(heap)
	base := heap[0].Value.Uint64()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	timeout := time.After(bound)
	for {
		select {
		case r := <-done:
			return r.code, r.out
		case <-tick.C:
			metrics.Read(heap)
			if used := heap[0].Value.Uint64(); used > base+flood {
				panic(fmt.Sprintf("mcphost %s holds %d MiB more than when it started: it is reading the planted file without end", strings.Join(args, " "), (used-base)>>20))
			}
		case <-timeout:
			if fd, err := unix.Open(fifo, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err == nil {
				unix.Close(fd)
			}
			e.t.Fatalf("mcphost %s has not ended after %v", strings.Join(args, " "), bound)
			return 0, ""
		}
	}
}
