//go:build unix

package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// tree is the process tree of an unconfined server on a Unix system
// without the Linux helper: the server leads a new session and process
// group, and killing the tree kills the group and, found in the process
// table, every descendant of a member that left the group.
//
// What it cannot guarantee: a descendant that left the group (setsid,
// setpgid) and whose parent exited before the kill has been reparented to
// init (launchd), and nothing in the process table ties it to the server
// any more; it survives. Only Linux (a subreaper or a PID namespace) closes
// that gap.
type tree struct {
	pgid int
}

// maxSweeps bounds the rounds of stopping in kill.
const maxSweeps = 20

func newTree() *tree { return &tree{} }

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

// kill ends the tree. It first stops it, round after round, until the
// process table shows no running process of it (the group, and the
// descendants of any member: a process that left the group is still found
// through its parent, which must therefore stay alive, stopped, until it
// has been seen), then kills every process it stopped and the group. Each
// round stops what the previous one's processes forked before they were
// stopped. Without a readable process table only the group is killed.
func (t *tree) kill() error {
	if t.pgid <= 1 {
		return nil
	}
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
		for _, pid := range groupTree(table, t.pgid, self) {
			if !stopped[pid] {
				stopped[pid] = true
				fresh++
				unix.Kill(pid, unix.SIGSTOP)
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
