// Package testbin builds the programs a package's tests run as real child
// processes (the fixture server, the example server), once per test binary,
// from TestMain. It is for tests only.
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// Build builds the Go package pkg (a path relative to the test's package
// directory, such as "../testdata/fixture") into the file out. The go
// command's output goes to standard error.
func Build(out, pkg string) error {
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building %s: %w", pkg, err)
	}
	return nil
}

// Run is the body of a TestMain: it makes a temporary directory whose name
// starts with prefix, calls setup with it (which builds what the tests need,
// usually with Build), runs the tests and removes the directory. It returns
// the exit code for os.Exit; a failed setup is reported and is code 1.
func Run(m *testing.M, prefix string, setup func(dir string) error) int {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if err := setup(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}
