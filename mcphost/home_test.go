package mcphost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestPrivateHome: a server that keeps settings in ~ starts; with home =
// "persist" (the default) what it wrote is there at its next start and lives
// under Options.HomeDir, with home = "tmp" every start begins empty and
// nothing is kept; the person's home is never written.
func TestPrivateHome(t *testing.T) {
	e := newEnv(t)
	realHome := t.TempDir()
	opts := e.opts()
	opts.HostEnv = []string{"PATH=/usr/bin:/bin", "HOME=" + realHome}
	keep := fixture("keep", "-home-write")
	temp := fixture("temp", "-home-write")
	temp.Home = HomeTemp
	starts := func(s *Session, server string) string {
		t.Helper()
		res, err := s.Call(context.Background(), "mcp__"+server+"__home", json.RawMessage(`{}`))
		if err != nil {
			t.Fatalf("%s: %v (notices %q)", server, err, s.Notices())
		}
		return resultText(t, res)
	}
	for round := 1; round <= 2; round++ {
		s := e.connect(opts, keep, temp)
		if got, want := starts(s, "keep"), fmt.Sprint(round); got != want {
			t.Errorf("round %d: persistent home counted %q starts, want %q", round, got, want)
		}
		if got := starts(s, "temp"); got != "1" {
			t.Errorf("round %d: temporary home counted %q starts, want 1", round, got)
		}
		res, err := s.Call(context.Background(), "mcp__keep__env", json.RawMessage(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		if env := strings.Split(resultText(t, res), "\n"); !slices.Contains(env, "HOME="+realHome) {
			t.Errorf("the server's HOME is not the host's HOME path: %q", env)
		}
		s.Close()
	}
	if b, err := os.ReadFile(filepath.Join(e.state, "home", "keep", ".fixture", "starts")); err != nil || string(b) != "2" {
		t.Errorf("the persistent home on the host: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(e.state, "home", "temp")); err == nil {
		t.Error("a temporary home was kept under HomeDir")
	}
	if ents, _ := os.ReadDir(realHome); len(ents) != 0 {
		t.Errorf("the person's home was written: %v", ents)
	}
}

// TestHomeDirReachable: a server granted the directory of private homes
// could read or change the others' homes: Connect refuses, naming the key.
func TestHomeDirReachable(t *testing.T) {
	e := newEnv(t)
	opts := e.opts()
	opts.HomeDir = filepath.Join(t.TempDir(), "homes")
	sc := fixture("nosy")
	sc.Read = []string{filepath.Dir(opts.HomeDir)}
	_, err := Connect(context.Background(), []ServerConfig{sc}, opts)
	var ce *ConfigError
	if !errors.Is(err, ErrStateReachable) || !errors.As(err, &ce) || ce.Key != "read" || !strings.Contains(err.Error(), "private homes") {
		t.Errorf("Connect: %v; want ErrStateReachable naming [mcp.nosy] read", err)
	}
}
