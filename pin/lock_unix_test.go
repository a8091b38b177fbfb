//go:build unix

package pin

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// helperHold is a process that holds a state directory's lock hostage, as a
// server that can only read the directory could: it opens the lock file
// read-only, flocks it, says "held" and keeps it until its stdin closes
// (at most a minute, so that it never outlives a failed test for long).
func helperHold() {
	path := filepath.Join(os.Getenv(helperDirEnv), FileName+".lock")
	f, err := os.Open(path)
	if err != nil {
		helperFail(err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		helperFail(err)
	}
	fmt.Println("held")
	done := make(chan struct{})
	go func() { io.Copy(io.Discard, os.Stdin); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
	}
	os.Exit(0)
}

// TestUpdateLockHostage: a process that holds the lock (opened read-only,
// so read access is all it needs) makes Update fail with ErrLocked after
// LockTimeout, writing nothing, instead of hanging; once it lets go,
// Update works again.
func TestUpdateLockHostage(t *testing.T) {
	s := &Store{Dir: t.TempDir(), LockTimeout: 300 * time.Millisecond}
	if err := s.Update(func(st *State) error { st.Tools["a/x"] = testEntry("x"); return nil }); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=hold", helperDirEnv+"="+s.Dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); cmd.Process.Kill(); cmd.Wait() }()
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "held\n" {
		t.Fatalf("the holder did not take the lock: %q, %v", line, err)
	}

	var wg = make(chan struct{})
	const n = 8 // many waiters, each bounded
	errs := make(chan error, n)
	start := time.Now()
	for range n {
		go func() {
			errs <- s.Update(func(st *State) error { st.Tools["b/y"] = testEntry("y"); return nil })
		}()
	}
	go func() {
		for range n {
			err := <-errs
			if !errors.Is(err, ErrLocked) {
				t.Errorf("Update under a held lock: %v; want ErrLocked", err)
			}
		}
		close(wg)
	}()
	select {
	case <-wg:
	case <-time.After(10 * time.Second):
		t.Fatal("Update still waits for the lock after 10s (LockTimeout 300ms)")
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("Update gave up after %v, before its LockTimeout", d)
	}
	st, err := s.Load()
	if err != nil || len(st.Tools) != 1 {
		t.Errorf("the state changed under a held lock: %v %v", st, err)
	}

	stdin.Close()
	cmd.Wait()
	if err := s.Update(func(st *State) error { st.Tools["b/y"] = testEntry("y"); return nil }); err != nil {
		t.Errorf("Update after the holder let go: %v", err)
	}
}
