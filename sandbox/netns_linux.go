package sandbox

import (
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// A server without the host's network gets a network namespace of its
// own. Creating one is most of what the helper's clone costs (about 0.5 of
// 0.8 ms here, BenchmarkStart/confined), and nothing in it depends on the
// spec, so a root host makes it in the background from the beginning of
// Start, beside the spec, the uid lease and the cgroups. The locked thread
// that forks the helper enters it for the fork, as it enters the server's
// cgroups, so the helper is born in it; each server still gets a new,
// empty namespace of its own, never one another server had.
//
// A host that is not root cannot: its helper's network namespace must
// belong to the helper's user namespace, made at the same clone.

// earlyNetns is a network namespace being made for one start.
type earlyNetns struct {
	done chan struct{}
	fd   int // the namespace, once done; -1 after an error
	err  error
}

// startNetns begins making a new, empty network namespace.
func startNetns() *earlyNetns {
	e := &earlyNetns{done: make(chan struct{}), fd: -1}
	go func() {
		defer close(e.done)
		// unshare and setns change this thread alone: it is locked for
		// them, and given back only if it is back in the host's
		// namespace. Otherwise it ends with this goroutine, and the
		// runtime never runs anything else on it (nor clones a new
		// thread from it: a locked thread's state may be strange).
		runtime.LockOSThread()
		var back bool
		e.fd, back, e.err = newNetns()
		if back {
			runtime.UnlockOSThread()
		}
	}()
	return e
}

// newNetns makes a new network namespace on the calling, locked thread,
// returns a descriptor of it, and moves the thread back into its own;
// back says it is there.
func newNetns() (fd int, back bool, err error) {
	own, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, true, fmt.Errorf("opening the host's network namespace: %w", err)
	}
	defer unix.Close(own)
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		return -1, true, fmt.Errorf("making a network namespace: unshare: %w", err)
	}
	fd, err = unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if serr := unix.Setns(own, unix.CLONE_NEWNET); serr != nil {
		if err == nil {
			unix.Close(fd)
		}
		return -1, false, fmt.Errorf("returning to the host's network namespace: setns: %w", serr)
	}
	if err != nil {
		return -1, true, fmt.Errorf("opening the new network namespace: %w", err)
	}
	return fd, true, nil
}

// take waits for the namespace and returns it, for the caller to close,
// or nil where it could not be made (the helper's clone then makes one,
// and meets whatever stopped this).
func (e *earlyNetns) take() *os.File {
	if e == nil {
		return nil
	}
	<-e.done
	fd := e.fd
	e.fd = -1
	if fd < 0 {
		return nil
	}
	return os.NewFile(uintptr(fd), "netns")
}

// discard closes the namespace of a start that did not take it.
func (e *earlyNetns) discard() {
	if f := e.take(); f != nil {
		f.Close()
	}
}

// enterNetns moves the calling thread, which must be locked, into the
// network namespace fd for a fork, and returns a function that moves it
// back, which reports whether it could. A thread that could not go back
// must not be given back to the runtime.
func enterNetns(fd int) (leave func() error, err error) {
	own, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
		unix.Close(own)
		return nil, fmt.Errorf("setns: %w", err)
	}
	return func() error {
		defer unix.Close(own)
		if err := unix.Setns(own, unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("returning to the host's network namespace: setns: %w", err)
		}
		return nil
	}, nil
}
