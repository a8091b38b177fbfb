package mcphost

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcphost/mcphost/sandbox"
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

// TestLauncherStartupTimeout: a package launcher that may use the network
// gets DefaultLauncherStartupTimeout when its table leaves startup_timeout
// unset, whether Parse read the table or a program built it; a table that
// sets it, to any value (the default's included), gets that value, and so
// does every other server.
func TestLauncherStartupTimeout(t *testing.T) {
	parse := func(table string) ServerConfig {
		t.Helper()
		scs, err := Parse([]byte("[mcp.x]\n" + table))
		if err != nil || len(scs) != 1 {
			t.Fatalf("Parse: %v", err)
		}
		return scs[0]
	}
	changed := parse(`command = ["npx", "-y", "pkg"]` + "\nnetwork = true")
	changed.StartupTimeout = time.Minute
	for _, tt := range []struct {
		name     string
		sc       ServerConfig
		want     time.Duration
		launcher bool
	}{
		{"npx, a list, unset", parse(`command = ["npx", "-y", "pkg"]` + "\nnetwork = [\"registry.npmjs.org\"]"), DefaultLauncherStartupTimeout, true},
		{"uvx, the whole network, unset", parse(`command = ["uvx", "pkg"]` + "\nnetwork = true"), DefaultLauncherStartupTimeout, true},
		{"pnpm dlx, unconfined", parse(`command = ["pnpm", "dlx", "pkg"]` + "\nsandbox = \"off\""), DefaultLauncherStartupTimeout, true},
		{"npx, set", parse(`command = ["npx", "-y", "pkg"]` + "\nnetwork = true\nstartup_timeout = \"45s\""), 45 * time.Second, false},
		{"npx, set to the default", parse(`command = ["npx", "-y", "pkg"]` + "\nnetwork = true\nstartup_timeout = \"30s\""), DefaultStartupTimeout, false},
		{"npx, network off", parse(`command = ["npx", "-y", "pkg"]`), DefaultStartupTimeout, false},
		{"not a launcher", parse(`command = ["node", "server.js"]` + "\nnetwork = true"), DefaultStartupTimeout, false},
		{"npx, changed by the program", changed, time.Minute, false},
		{"built, zero", ServerConfig{Name: "x", Command: []string{"/usr/bin/npx", "pkg"}, NetworkGrant: []string{"registry.npmjs.org"}}, DefaultLauncherStartupTimeout, true},
		{"built, with defaults", ServerConfig{Name: "x", Command: []string{"npx", "pkg"}, Network: true}.withDefaults(), DefaultLauncherStartupTimeout, true},
		{"built, set", ServerConfig{Name: "x", Command: []string{"npx", "pkg"}, Network: true, StartupTimeout: 5 * time.Second}, 5 * time.Second, false},
	} {
		got, launcher := tt.sc.startupTimeout()
		if got != tt.want || launcher != tt.launcher {
			t.Errorf("%s: startupTimeout() = %v, %v; want %v, %v", tt.name, got, launcher, tt.want, tt.launcher)
		}
	}
	// The table's definition (its digest, what a person reviewed) keeps
	// the value the table states: the launcher's bound is no part of it.
	def, err := parse(`command = ["npx", "-y", "pkg"]` + "\nnetwork = true").Definition()
	if err != nil || !strings.Contains(string(def), `"startup_timeout":"30s"`) {
		t.Errorf("Definition %s, %v", def, err)
	}
}

// fakeLauncher copies the fixture to a directory of its own under name
// (npx, uvx...), so that mcphost takes it for that package launcher.
func fakeLauncher(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(fixtureBin)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestLauncherStillInstalling: a package launcher with a network list that
// has not answered initialize when its startup_timeout ends (as npx does
// while it fetches a large package, printing nothing) gets a notice that it
// was probably still installing, what to set, where npx leaves its
// unfinished install and that it must be removed; a destination refused
// meanwhile is marked as probably the launcher's. With home = "tmp" the
// notice says every start fetches it again.
func TestLauncherStillInstalling(t *testing.T) {
	if _, err := sandbox.Probe(); err != nil {
		t.Skipf("this kernel cannot confine: %v", err)
	}
	npx := fakeLauncher(t, "npx")
	e := newEnv(t)
	opts := e.opts()
	fetch := ServerConfig{Name: "fetch", Command: []string{npx, "-connect", "evil.example.net:443", "-hang-init"},
		NetworkGrant: []string{"registry.npmjs.org"}, StartupTimeout: 3 * time.Second}
	temp := fetch
	temp.Name, temp.Home = "temp", HomeTemp
	s := e.connect(opts, fetch, temp)
	home := filepath.Join(e.state, "home")
	n := noticeWith(s, "server fetch did not start")
	for _, want := range []string{"no answer within startup_timeout 3s: npx was probably still fetching and installing its package",
		`set startup_timeout = "10m" in [mcp.fetch]`, "install the package beforehand",
		"npx leaves an unfinished install in " + filepath.Join(home, "fetch", ".npm", "_npx") + ", which the next start takes as complete"} {
		if !strings.Contains(n, want) {
			t.Errorf("the notice lacks %q:\n%s", want, n)
		}
	}
	if strings.Contains(n, "gets 3m0s") {
		t.Errorf("the notice names the launcher default, which the table overrode:\n%s", n)
	}
	if n := noticeWith(s, "server temp did not start"); !strings.Contains(n, `every start fetches the package again; home = "persist" keeps npx's cache`) || strings.Contains(n, "_npx") {
		t.Errorf("the notice of a launcher with a temporary home:\n%s", n)
	}
	n = noticeWith(s, "server fetch tried to reach evil.example.net:443")
	if !strings.Contains(n, "probably from npx fetching its package") {
		t.Errorf("the refusal during the install is not marked as the launcher's: %q", s.Notices())
	}
}

// TestLauncherDefaultTimeout: a package launcher with a network list and
// no startup_timeout that answers initialize after DefaultStartupTimeout
// (a first start still installing) starts.
func TestLauncherDefaultTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("waits past DefaultStartupTimeout")
	}
	if _, err := sandbox.Probe(); err != nil {
		t.Skipf("this kernel cannot confine: %v", err)
	}
	npx := fakeLauncher(t, "npx")
	e := newEnv(t)
	sc := ServerConfig{Name: "slow", Command: []string{npx, "-init-delay", (DefaultStartupTimeout + time.Second).String()},
		NetworkGrant: []string{"registry.npmjs.org"}, Allow: []string{"echo"}}
	s := e.connect(e.opts(), sc)
	if _, ok := s.Tool("mcp__slow__echo"); !ok {
		t.Errorf("the launcher did not start within its default bound: %q", s.Notices())
	}
}

// TestNpxHint: a server npx runs that fails for a module missing from
// npx's install in its private home (an earlier start stopped midway) is
// told which directory of the host to remove; not for a module missing
// elsewhere, another launcher or a temporary home.
func TestNpxHint(t *testing.T) {
	const esm = "Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'zod' imported from /home/u/.npm/_npx/de2bd410102f5eda/node_modules/@x/server/dist/index.js"
	const cjs = "Error: Cannot find module 'color-name'\nRequire stack:\n- /home/u/.npm/_npx/9c00aa27ff46b79b/node_modules/color-string/index.js"
	for _, tt := range []struct {
		name, command, home, stderr, want string
	}{
		{"esm", "npx", HomePersist, esm, "remove /state/home/x/.npm/_npx/de2bd410102f5eda and start the server again"},
		{"cjs", "npx", HomePersist, cjs, "remove /state/home/x/.npm/_npx/9c00aa27ff46b79b and start"},
		{"other home", "npx", HomePersist, strings.ReplaceAll(esm, "/home/u/", "/home/v/"), ""},
		{"not missing", "npx", HomePersist, "Error: boom at /home/u/.npm/_npx/de2bd410102f5eda/node_modules/x.js", ""},
		{"uvx", "uvx", HomePersist, esm, ""},
		{"tmp home", "npx", HomeTemp, esm, ""},
	} {
		srv := testServer(ServerConfig{Name: "x", Command: []string{tt.command, "pkg"}, Home: tt.home}, "HOME=/home/u")
		srv.stderr.Write([]byte(tt.stderr + "\n"))
		got := srv.npxHint()
		if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
			t.Errorf("%s: npxHint() = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestLauncherRefusalEarly: a refusal of a package launcher's network
// that comes before the host gets to the server's initialize (its
// process fetches from its first moment; here the host waits for the
// refusal before it initializes) is marked as the launcher's fetching. It
// failed when the mark was set just before initialize.
func TestLauncherRefusalEarly(t *testing.T) {
	if _, err := sandbox.Probe(); err != nil {
		t.Skipf("this kernel cannot confine: %v", err)
	}
	afterSandboxStart = func(srv *server) {
		for deadline := time.Now().Add(10 * time.Second); srv.refusals.Load() == 0 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
	}
	t.Cleanup(func() { afterSandboxStart = nil })
	npx := fakeLauncher(t, "npx")
	e := newEnv(t)
	sc := ServerConfig{Name: "fetch", Command: []string{npx, "-connect", "evil.example.net:443"},
		NetworkGrant: []string{"registry.npmjs.org"}, StartupTimeout: 20 * time.Second}
	s := e.connect(e.opts(), sc)
	n := noticeWith(s, "server fetch tried to reach evil.example.net:443")
	if !strings.Contains(n, "probably from npx fetching its package") {
		t.Errorf("the refusal before initialize is not marked as the launcher's: %q", s.Notices())
	}
}
