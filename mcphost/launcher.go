package mcphost

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
)

// DefaultLauncherStartupTimeout is the startup_timeout of a package
// launcher (npx, uvx...: see ServerConfig.StartupTimeout) that may use the
// network, when its table does not set one. Its first start fetches and
// installs the package before the server can answer initialize, and says
// nothing meanwhile. Three minutes is an estimate for a large package on a
// slow link, not a measurement: a 95 MB npm package takes about 150 s to
// arrive at 5 Mbit/s, and npm then resolves, unpacks and links it.
// DefaultStartupTimeout (30 s) lets the same package arrive only over
// about 25 Mbit/s, and a start stopped midway is worse than a slow one (npx
// keeps its unfinished install: see launcherTimeout). A later start finds
// the package in its cache, in the server's private home, and takes a
// second or so.
const DefaultLauncherStartupTimeout = 3 * time.Minute

// startupTimeout is what bounds a start of the server: StartupTimeout,
// or DefaultLauncherStartupTimeout for a package launcher that may use the
// network when the table leaves startup_timeout unset (launcherDefault).
func (sc *ServerConfig) startupTimeout() (d time.Duration, launcherDefault bool) {
	if sc.StartupTimeout == 0 || sc.startupUnset && sc.StartupTimeout == DefaultStartupTimeout {
		if _, _, ok := packageLauncher(sc.Command); ok && sc.network() != "none" {
			return DefaultLauncherStartupTimeout, true
		}
		return DefaultStartupTimeout, false
	}
	return sc.StartupTimeout, false
}

// launcherWait is how long a package launcher (npx, uvx...) run with the
// network off gets to answer initialize. A launcher that finds its package
// installed (in the worktree's node_modules, say) starts within it; one
// that has to fetch the package waits on a network it does not have, for
// the whole startup_timeout, and says nothing.
const launcherWait = 5 * time.Second

// packageLauncher reports whether argv runs a package launcher, one that
// fetches the package it runs from a registry unless it finds it
// installed, and returns its name and the registry, for a notice.
func packageLauncher(argv []string) (name, registry string, ok bool) {
	if len(argv) == 0 {
		return "", "", false
	}
	arg := func(i int) string {
		if i < len(argv) {
			return argv[i]
		}
		return ""
	}
	switch base := filepath.Base(argv[0]); base {
	case "npx", "pnpx", "bunx":
		return base, "the npm registry", true
	case "npm":
		if arg(1) == "exec" || arg(1) == "x" {
			return "npm " + arg(1), "the npm registry", true
		}
	case "pnpm", "yarn":
		if arg(1) == "dlx" {
			return base + " dlx", "the npm registry", true
		}
	case "bun":
		if arg(1) == "x" {
			return "bun x", "the npm registry", true
		}
	case "uvx":
		return "uvx", "PyPI", true
	case "uv":
		if arg(1) == "tool" && arg(2) == "run" {
			return "uv tool run", "PyPI", true
		}
	case "pipx":
		if arg(1) == "run" {
			return "pipx run", "PyPI", true
		}
	case "deno":
		for _, a := range argv[1:] {
			if strings.HasPrefix(a, "npm:") || strings.HasPrefix(a, "jsr:") {
				return "deno", "the npm or JSR registry", true
			}
		}
	}
	return "", "", false
}

// registryHost is the host name a launcher's default registry is reached
// at, for the grant a notice suggests.
func registryHost(launcher string) string {
	switch launcher {
	case "uvx", "uv tool run", "pipx run":
		return "pypi.org\", \"files.pythonhosted.org"
	case "deno":
		return "registry.npmjs.org\", \"jsr.io"
	}
	return "registry.npmjs.org"
}

// npmExec reports whether the launcher is npm's own (npx, npm exec), which
// installs a package in $HOME/.npm/_npx/<hash>.
func npmExec(launcher string) bool {
	return launcher == "npx" || launcher == "npm exec" || launcher == "npm x"
}

// launcherTimeout says why a package launcher that may use the network did
// not answer initialize within timeout (launcherDefault: the launcher
// default, the table set none) and what to do: what it fetched, where that
// is kept and what a start stopped midway leaves behind.
func (srv *server) launcherTimeout(launcher string, timeout time.Duration, launcherDefault bool) string {
	name := srv.cfg.Name
	n := fmt.Sprintf("%s was probably still fetching and installing its package, which a first start does before the server can answer, silently", launcher)
	if launcherDefault {
		n += fmt.Sprintf(" (a package launcher that may use the network gets %v when startup_timeout is not set)", DefaultLauncherStartupTimeout)
	}
	n += fmt.Sprintf(". To let it finish, set startup_timeout = \"10m\" in [mcp.%s], or install the package beforehand and run it directly (see \"Running real servers\" in mcphost's README)", name)
	switch {
	case srv.cfg.Unconfined:
	case srv.cfg.Home == HomeTemp:
		n += fmt.Sprintf(". Its home is emptied at every start (home = \"tmp\"), so every start fetches the package again; home = \"persist\" keeps %s's cache, and a start after one that finished is quick", launcher)
	case npmExec(launcher):
		dir := filepath.Join(srv.sess.opts.HomeDir, name, ".npm", "_npx")
		n += fmt.Sprintf(". Once an install finished, later starts find the package in the server's private home and are quick. The packages fetched so far stay in npm's cache there, but npx leaves an unfinished install in %s, which the next start takes as complete and then fails for a missing module (npm does not repair it): remove that directory before starting the server again", dir)
	default:
		n += fmt.Sprintf(". Once an install finished, later starts find the package in its cache in the server's private home (%s) and are quick; what it had fetched so far may stay there", filepath.Join(srv.sess.opts.HomeDir, name))
	}
	return n
}

// npxInstall finds a path in a package npx installed in
// $HOME/.npm/_npx/<hash>: the home, and the hash; npxMissing, that Node
// could not find a module (ESM names the importing file on the same line,
// CommonJS in its "Require stack" below).
var (
	npxInstall = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(/[^\s'"]*)/\.npm/_npx/([0-9a-f]{16})/node_modules/`)
	})
	npxMissing = []string{"Cannot find module", "Cannot find package", "ERR_MODULE_NOT_FOUND", "MODULE_NOT_FOUND"}
)

// npxHint says, when the server is npx's and its stderr shows a module
// missing from npx's install in the server's private home, that the
// install is unfinished (an earlier start stopped while npx installed it:
// npx takes such an install as complete and never repairs it) and which
// directory of the host to remove; "" otherwise.
func (srv *server) npxHint() string {
	launcher, _, ok := packageLauncher(srv.cfg.Command)
	if !ok || !npmExec(launcher) || srv.cfg.Unconfined || srv.cfg.Home == HomeTemp {
		return ""
	}
	text := srv.stderr.text()
	if !containsAny(text, npxMissing) {
		return ""
	}
	m := npxInstall().FindStringSubmatch(text)
	if m == nil || m[1] != srv.serverHome() {
		return ""
	}
	dir := filepath.Join(srv.sess.opts.HomeDir, srv.cfg.Name, ".npm", "_npx", m[2])
	return fmt.Sprintf("%s's install of the package in the server's private home lacks a module it needs: probably an earlier start was stopped while %s installed it, and npx takes an unfinished install as complete; remove %s and start the server again", launcher, launcher, dir)
}

// serverHome is the path of the server's HOME as it sees it: the host's
// HOME path, where its private home is bound.
func (srv *server) serverHome() string {
	home := ""
	for _, kv := range srv.sess.hostEnv() {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = v
		}
	}
	return filepath.Clean(home)
}
