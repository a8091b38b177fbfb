//go:build unix

package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestRunPlantedConfig: a FIFO in place of the config (as a server that
// writes the worktree could leave one) fails the run at once, saying what
// it is, instead of waiting for a writer.
func TestRunPlantedConfig(t *testing.T) {
	config := filepath.Join(t.TempDir(), "agent.toml")
	if err := unix.Mkfifo(config, 0o644); err != nil {
		t.Skip("no FIFO here:", err)
	}
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- run(context.Background(), []string{"-config", config}, strings.NewReader(""), &out) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), config) || !strings.Contains(err.Error(), "is a FIFO") {
			t.Errorf("run = %v; want an error naming %s and saying it is a FIFO", err, config)
		}
	case <-time.After(5 * time.Second):
		// A writer's open ends the wait in the read end's.
		if fd, err := unix.Open(config, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err == nil {
			unix.Close(fd)
		}
		t.Fatal("run has not returned after 5s")
	}
}
