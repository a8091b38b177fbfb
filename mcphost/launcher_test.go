package mcphost

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestPackageLauncher(t *testing.T) {
	for _, tt := range []struct {
		argv []string
		want string
	}{
		{[]string{"npx", "-y", "pkg"}, "npx"},
		{[]string{"/usr/bin/npx", "pkg"}, "npx"},
		{[]string{"npm", "exec", "pkg"}, "npm exec"},
		{[]string{"pnpm", "dlx", "pkg"}, "pnpm dlx"},
		{[]string{"uvx", "pkg"}, "uvx"},
		{[]string{"uv", "tool", "run", "pkg"}, "uv tool run"},
		{[]string{"pipx", "run", "pkg"}, "pipx run"},
		{[]string{"deno", "run", "-A", "npm:pkg"}, "deno"},
		{[]string{"node", "server.js"}, ""},
		{[]string{"npm", "start"}, ""},
		{[]string{"uv", "run", "server.py"}, ""},
		{[]string{"deno", "run", "server.ts"}, ""},
	} {
		got, _, ok := packageLauncher(tt.argv)
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("packageLauncher(%q) = %q, %v; want %q", tt.argv, got, ok, tt.want)
		}
	}
}

// TestLauncherOffline: npx with the network off, asked for a package it
// does not have, is stopped within a few seconds with a notice that says
// the launcher needs the network to fetch the package, instead of waiting
// out its startup_timeout in silence.
func TestLauncherOffline(t *testing.T) {
	npx, err := exec.LookPath("npx")
	if err != nil {
		t.Skip("npx is not installed")
	}
	e := newEnv(t)
	sc := ServerConfig{Name: "fetch", Command: []string{npx, "-y", "@mcphost-test/not-installed-anywhere"}, StartupTimeout: time.Minute}
	start := time.Now()
	s := e.connect(e.opts(), sc, fixture("good"))
	took := time.Since(start)
	if took > launcherWait+10*time.Second {
		t.Errorf("Connect took %v with a launcher that has no network; want about %v", took, launcherWait)
	}
	n := noticeWith(s, "server fetch did not start", "npx fetches the package", "needs the network", "network is off", `network = ["registry.npmjs.org"]`)
	if n == "" {
		t.Errorf("no notice that the launcher needs the network: %q", s.Notices())
	}
	for _, info := range s.Servers() {
		if info.Name == "fetch" && !strings.Contains(info.Error, "needs the network") {
			t.Errorf("ServerInfo.Error %q", info.Error)
		}
	}
	if _, ok := s.Tool("mcp__good__echo"); !ok {
		t.Error("the good server is missing")
	}
}
