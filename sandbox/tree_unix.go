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
type tree struct {
	pgid int

	mu    sync.Mutex
	known map[int]uint64 // pid to start time, noted by note
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
	return nil
}

func (t *tree) attach(p *os.Process) error {
	t.pgid = p.Pid
	return nil
}

func (t *tree) release() {}

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
