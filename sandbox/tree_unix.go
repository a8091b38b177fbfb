//go:build unix

package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// tree is the process tree of an unconfined server on a Unix system
// without the Linux helper: the server leads a new session and process
// group. Killing the tree kills the group and every process the process
// table ties to it: descendants of a member that left the group, and the
// processes noted as the tree's when Close began (so that a setsid child
// of a server that exits when its stdin closes is still found).
//
// What it cannot guarantee: a descendant that left the group (setsid,
// setpgid), was not noted, and whose parent exited before the kill has
// been reparented to init (launchd); nothing in the process table ties it
// to the server any more, and it survives. That includes a setsid child of
// a server that exits on its own, before Close. Only Linux (a subreaper or
// a PID namespace) closes that gap.
//
// A host that dies without Close (SIGKILL, a crash) cannot end the tree
// itself, so each tree has a guard: a shell, in a session of its own,
// that reads a pipe only the host holds open (close-on-exec, so no child
// inherits it). attach writes it the server's process group; release,
// which follows the end of the tree, kills it. End of input while it
// still runs means the host is gone, and the guard kills the server's
// process group. What left the group is out of its reach, as above, and
// so is a server whose host died between its start and attach (a window
// of a few system calls).
type tree struct {
	pgid int

	mu    sync.Mutex
	known map[int]uint64 // pid to start time, noted by note

	guard    *os.File  // the write end of the guard's pipe; nil once released
	guardCmd *exec.Cmd // the guard, reaped by release
}

// guardScript is the guard: the first line is the server's process group;
// end of input after it kills the group (no second line is ever written).
const guardScript = `read -r pg || exit 0
read -r word || { [ "$pg" -gt 1 ] && kill -9 -"$pg"; }`

// startGuard starts the tree's guard, before the server, so that it is
// there to read the server's process group as soon as the server runs.
func (t *tree) startGuard() error {
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("the lifeline of its process tree: %w", err)
	}
	cmd := &exec.Cmd{
		Path: "/bin/sh",
		// argv[0] "sh": a busybox /bin/sh picks its applet by it.
		Args:  []string{"sh", "-c", guardScript},
		Env:   []string{"PATH=/usr/bin:/bin"},
		Dir:   "/",
		Stdin: r,
		// Its own session: the terminal's signals to the host's process
		// group (Ctrl-C) do not end it.
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	err = cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		return fmt.Errorf("starting the lifeline of its process tree (/bin/sh), which ends the server if this process dies without closing it: %w", err)
	}
	t.guard, t.guardCmd = w, cmd
	return nil
}

// maxSweeps bounds the rounds of stopping in kill; maxKnown bounds what
// note keeps.
const (
	maxSweeps = 20
	maxKnown  = 4096
)

func newTree() *tree { return &tree{known: make(map[int]uint64)} }

// prepare makes the server lead a new session, without a controlling
// terminal: it cannot open /dev/tty to push keystrokes into the user's
// shell, and its process group is its own.
func (t *tree) prepare(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	return t.startGuard()
}

// attach names the server's process group to the tree and its guard.
func (t *tree) attach(p *os.Process) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pgid = p.Pid
	if _, err := fmt.Fprintf(t.guard, "%d\n", t.pgid); err != nil {
		return fmt.Errorf("arming the lifeline of its process tree: %w", err)
	}
	return nil
}

// release ends the guard and reaps it; the tree is ended or was never
// started. The guard is killed before its pipe closes, so it never reads
// the end of input, and a guard that does not cooperate (a server of the
// same user may have stopped it) cannot hold release up.
func (t *tree) release() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.guard == nil {
		return
	}
	t.guardCmd.Process.Kill()
	t.guardCmd.Wait()
	t.guard.Close()
	t.guard, t.guardCmd = nil, nil
}

// note records the processes the table ties to the tree now, so that kill
// ends them even if they lose that tie meanwhile.
func (t *tree) note() {
	table, err := processTable()
	if err != nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, e := range groupTree(table, t.pgid, t.known, os.Getpid()) {
		if len(t.known) < maxKnown {
			t.known[e.pid] = e.start
		}
	}
}

// kill ends the tree. It first stops it, round after round, until the
// process table shows no running process of it that is not stopped yet
// (a process that left the group is found through its parent, which must
// therefore stay alive, stopped, until it has been seen), then kills every
// process it stopped and the group. Each round stops what the previous
// one's processes forked before they were stopped. Without a readable
// process table only the group is killed.
func (t *tree) kill() error {
	if t.pgid <= 1 {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	self := os.Getpid()
	stopped := make(map[int]bool)
	defer func() {
		for pid := range stopped {
			unix.Kill(pid, unix.SIGKILL)
		}
		unix.Kill(-t.pgid, unix.SIGKILL)
	}()
	for range maxSweeps {
		unix.Kill(-t.pgid, unix.SIGSTOP)
		table, err := processTable()
		if err != nil {
			return nil
		}
		fresh := 0
		for _, e := range groupTree(table, t.pgid, t.known, self) {
			if !stopped[e.pid] {
				stopped[e.pid] = true
				fresh++
				unix.Kill(e.pid, unix.SIGSTOP)
			}
		}
		if fresh == 0 {
			return nil
		}
	}
	return fmt.Errorf("%w: it still forked after %d rounds of stopping", errTreeSurvived, maxSweeps)
}

// lookProgram finds the server's program as execvp would, through the
// absolute entries of the PATH in env that are not in untrusted
// directories (ones servers may write).
func lookProgram(file string, env []string, dir string, untrusted []string) (string, error) {
	pathEnv, _ := envValue(env, "PATH")
	return lookPath(file, pathEnv, dir, untrusted)
}
