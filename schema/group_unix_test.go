//go:build unix

package schema

import (
	"os/exec"
	"syscall"
)

// ownGroup makes cmd lead a process group of its own, so that killGroup
// ends what it starts too.
func ownGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// killGroup kills cmd's process group.
func killGroup(cmd *exec.Cmd) error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
