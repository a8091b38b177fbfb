//go:build !unix

package schema

import "os/exec"

// ownGroup does nothing here: only Unix systems have process groups.
func ownGroup(*exec.Cmd) {}

// killGroup kills cmd's process, the nearest this system has to its group.
func killGroup(cmd *exec.Cmd) error { return cmd.Process.Kill() }
