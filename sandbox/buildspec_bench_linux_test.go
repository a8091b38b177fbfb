package sandbox

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkBuildSpec measures the host's side of a start: scrubbing the
// environment, finding the program and its interpreters, resolving and
// checking every path (symbolic links included), finding the git directory
// and planning the mounts. The worktree holds a .git directory, a write
// grant and the program, a script run through env(1), so every check has
// work to do.
func BenchmarkBuildSpec(b *testing.B) {
	wt := b.TempDir()
	for _, d := range []string{".git/hooks", "data", "bin"} {
		if err := os.MkdirAll(filepath.Join(wt, d), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	script := filepath.Join(wt, "bin", "server")
	if err := os.WriteFile(script, []byte("#!/usr/bin/env sh\nexit 0\n"), 0o755); err != nil {
		b.Fatal(err)
	}
	cfg := Config{Name: "bench", Argv: []string{"bin/server"}, Worktree: wt,
		Write: []string{filepath.Join(wt, "data")}, Read: []string{"/usr/share"},
		HostEnv: []string{"PATH=/usr/bin:/bin", "HOME=" + b.TempDir()}}
	tmp := b.TempDir()
	for b.Loop() {
		if _, err := buildSpec(&cfg, cfg.HostEnv, tmp, ""); err != nil {
			b.Fatal(err)
		}
	}
}
