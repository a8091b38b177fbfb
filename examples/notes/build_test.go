package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// buildLine matches a command that builds this example server.
var buildLine = regexp.MustCompile(`(?:go|\$\(GO\)) build[^&\n]*\./examples/notes`)

// TestBuildIsReproducible: a lock records the digest of bin/notes, so the
// build the README and the Makefile give must make the same file in every
// clone. Built as they say in two copies of the module at different paths
// (two clones), the binaries are the same bytes; without -trimpath they
// would hold each copy's path.
func TestBuildIsReproducible(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the example twice")
	}
	var cmds []string
	for _, f := range []string{"../../README.md", "../../Makefile", "main.go", "../mcphost.toml"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		found := buildLine.FindAllString(string(b), -1)
		if len(found) == 0 {
			t.Errorf("%s: no command builds ./examples/notes", f)
		}
		for _, c := range found {
			if !strings.Contains(c, "-trimpath") {
				t.Errorf("%s: %q builds without -trimpath: its digest differs in every clone", f, c)
			}
			cmds = append(cmds, c)
		}
	}
	if len(cmds) == 0 {
		return
	}
	args := strings.Fields(cmds[0])[1:] // after "go"
	var bins [][]byte
	for range 2 {
		dir := t.TempDir()
		for _, f := range []string{"go.mod", "go.sum", "examples/notes/main.go"} {
			b, err := os.ReadFile(filepath.Join("../..", f))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
		}
		b, err := os.ReadFile(filepath.Join(dir, "bin", "notes"))
		if err != nil {
			t.Fatal(err)
		}
		bins = append(bins, b)
	}
	if !bytes.Equal(bins[0], bins[1]) {
		t.Errorf("%q made different binaries in two clones", cmds[0])
	}
}
