package mcphost

import (
	"path/filepath"
	"strings"
	"time"
)

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
