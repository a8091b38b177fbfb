//go:build unix || windows

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
)

// This file is Config.Off outside Linux: the server runs as a plain child
// process, with the scrubbed environment and the private TMPDIR of every
// system, in a process tree the operating system can end as a whole (a
// session and process group, or a job object; see the tree type of each
// system). It builds on Linux too, where only the tests use it, so that
// the part of it that is the same everywhere runs on a real kernel.

// unavailable returns the error Start gives without Config.Off on a system
// (goos, as runtime.GOOS) where no confinement is built. It names the exact
// opt-out and nothing that only Linux has.
func unavailable(name, goos string) error {
	return fmt.Errorf("%w: server %q: confinement is built only for Linux (Landlock, seccomp and namespaces), and this is %s; to run the server without confinement anyway (a risk: it can then read, write and reach everything you can), set sandbox = \"off\" in its [mcp.%s] table",
		ErrUnsupported, name, goos, name)
}

// startOff starts cfg's server unconfined in a new process tree of this
// system.
func startOff(ctx context.Context, cfg Config) (*Process, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sandbox: server %q: starting: %w", cfg.Name, err)
	}
	hostEnv := cfg.HostEnv
	if hostEnv == nil {
		hostEnv = os.Environ()
	}
	if err := checkConfig(&cfg); err != nil {
		return nil, invalidConfig(cfg.Name, err)
	}
	worktree := filepath.Clean(cfg.Worktree)
	if st, err := os.Stat(worktree); err != nil || !st.IsDir() {
		return nil, invalidConfig(cfg.Name, fmt.Errorf("worktree %s is not a directory", cfg.Worktree))
	}
	tmp, err := os.MkdirTemp("", "mcphost-"+tempPrefix(cfg.Name)+"-")
	if err != nil {
		return nil, fmt.Errorf("sandbox: server %q: creating its temporary directory: %w", cfg.Name, err)
	}
	p, err := launchOff(cfg, hostEnv, worktree, tmp)
	if err != nil {
		removeAll(tmp)
		return nil, err
	}
	p.tempDir, p.tempOnHost = tmp, true
	return p, nil
}

func launchOff(cfg Config, hostEnv []string, worktree, tmp string) (*Process, error) {
	name := cfg.Name
	env, err := buildEnv(hostEnv, cfg.EnvPass, cfg.Env, tmp)
	if err != nil {
		return nil, invalidConfig(name, err)
	}
	exe, err := lookProgram(cfg.Argv[0], env, worktree, untrustedDirs(worktree, cfg.Write, cfg.PeerWrite))
	if err != nil {
		return nil, fmt.Errorf("sandbox: server %q: finding its program: %w", name, err)
	}
	var childEnds, hostEnds []*os.File
	stdinR, stdinW := pipeUnlessFailed(&err)
	stdoutR, stdoutW := pipeUnlessFailed(&err)
	childEnds = append(childEnds, stdinR, stdoutW)
	hostEnds = append(hostEnds, stdinW, stdoutR)
	var stderrR, stderrW *os.File
	if err == nil {
		switch w := cfg.Stderr.(type) {
		case nil:
		case *os.File:
			stderrW = w // the caller's: not ours to close; nil means none
		default:
			stderrR, stderrW = pipeUnlessFailed(&err)
			childEnds = append(childEnds, stderrW)
			hostEnds = append(hostEnds, stderrR)
		}
	}
	if err != nil {
		closeFiles(childEnds)
		closeFiles(hostEnds)
		return nil, fmt.Errorf("sandbox: server %q: %w", name, err)
	}
	cmd := &exec.Cmd{
		Path:  exe,
		Args:  slices.Clone(cfg.Argv),
		Env:   env,
		Dir:   worktree,
		Stdin: stdinR,
		// A nil *os.File stays a nil io.Writer: os/exec then gives the
		// server the null device.
		Stdout: stdoutW,
	}
	if stderrW != nil {
		cmd.Stderr = stderrW
	}
	tr := newTree()
	if err := tr.prepare(cmd); err != nil {
		closeFiles(childEnds)
		closeFiles(hostEnds)
		return nil, fmt.Errorf("sandbox: server %q: %w", name, err)
	}
	if err := cmd.Start(); err != nil {
		tr.release()
		closeFiles(childEnds)
		closeFiles(hostEnds)
		return nil, fmt.Errorf("sandbox: server %q: starting its program: %w", name, err)
	}
	closeFiles(childEnds)
	if err := tr.attach(cmd.Process); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		tr.kill() // what the server forked meanwhile
		tr.release()
		closeFiles(hostEnds)
		return nil, fmt.Errorf("sandbox: server %q: %w", name, err)
	}
	p := &Process{
		name:        name,
		off:         true,
		stdin:       stdinW,
		stdout:      stdoutR,
		confinement: "none",
		helper:      cmd.Process,
		done:        make(chan struct{}),
		exited:      make(chan struct{}),
		endTree:     tr.kill,
		noteTree:    tr.note,
	}
	if stderrR != nil {
		p.stderrDone = make(chan struct{})
		go func() {
			defer close(p.stderrDone)
			io.Copy(cfg.Stderr, stderrR)
			stderrR.Close()
		}()
	}
	go func() {
		defer close(p.exited)
		cmd.Wait()
		status := "unknown"
		if cmd.ProcessState != nil {
			status = cmd.ProcessState.String()
		}
		// As on Linux, the server's exit ends what it left behind, so
		// that Done means every process of the server is gone.
		if err := tr.kill(); err != nil {
			status += " (" + err.Error() + ")"
		}
		tr.release()
		p.finish(status)
	}()
	return p, nil
}

// errTreeSurvived is wrapped when processes of a server's tree were still
// there after the tree was killed.
var errTreeSurvived = errors.New("processes of the server survived the kill of its process tree")

// closeFiles closes each of fs (a nil one is skipped).
func closeFiles(fs []*os.File) {
	for _, f := range fs {
		f.Close()
	}
}

// pipeUnlessFailed makes a pipe for a starting child, unless *err already
// says an earlier step failed; a failure is left in *err. It lets a start
// make its pipes in a row and check once.
func pipeUnlessFailed(err *error) (r, w *os.File) {
	if *err != nil {
		return nil, nil
	}
	r, w, *err = os.Pipe()
	return r, w
}
