package interop_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcphost/mcphost/mcphost"
)

// npxPackage is the server the launcher test fetches, pinned.
const npxPackage = "@modelcontextprotocol/server-sequential-thinking@2026.8.31"

// npmRegistry returns the registry this machine's npm uses, from npm's own
// config (never a host written here), and the network grant that reaches
// it: its name, and, where the name resolves to addresses that are not
// public (a registry mirror on a private or documentation address, as on
// the machines this project's CI runs on), each of those addresses, which
// a granted name may not reach unless a person grants the address too.
func npmRegistry(t *testing.T, npm string) (registry string, grant []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, npm, "config", "get", "registry").Output()
	if err != nil {
		t.Fatalf("npm config get registry: %v", err)
	}
	registry = strings.TrimSpace(string(out))
	u, err := url.Parse(registry)
	if err != nil || u.Hostname() == "" || (u.Scheme != "https" && u.Scheme != "http") {
		t.Fatalf("npm's registry %q is not an http(s) URL", registry)
	}
	name := u.Hostname()
	if u.Port() != "" {
		name = u.Host
	}
	grant = []string{name}
	port := u.Port()
	if port == "" {
		port = map[string]string{"https": "443", "http": "80"}[u.Scheme]
	}
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", u.Hostname())
	if err != nil {
		t.Fatalf("resolving npm's registry %s: %v", u.Hostname(), err)
	}
	for _, a := range addrs {
		if a := a.Unmap(); a.IsPrivate() || a.IsLoopback() || !a.IsGlobalUnicast() || documentation.Contains(a) {
			grant = append(grant, net.JoinHostPort(a.String(), port))
		}
	}
	return registry, grant
}

// documentation is TEST-NET-3, where this project's machines find their
// package registry.
var documentation = netip.MustParsePrefix("203.0.113.0/24")

// TestNpxThroughRegistryGrant: a server launched with `npx -y`, as most
// published configs do, starts confined with only its registry granted,
// fetches its package through the proxy and lists its tool.
func TestNpxThroughRegistryGrant(t *testing.T) {
	t.Parallel()
	npx, err := exec.LookPath("npx")
	if err != nil {
		skipOrFail(t, fmt.Sprintf("SKIP: npx is not installed (%v)", err))
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		skipOrFail(t, fmt.Sprintf("SKIP: npm is not installed (%v)", err))
	}
	nodePath(t) // skips without node
	registry, grant := npmRegistry(t, npm)
	h := newHarness(t)
	// npx keeps its cache under HOME: the server's private one (the
	// default, home = "persist") is enough.
	cfg := mcphost.ServerConfig{
		Name:    "thinking",
		Command: []string{npx, "-y", npxPackage},
		Env: map[string]string{
			"npm_config_registry":        registry,
			"npm_config_update_notifier": "false",
			"npm_config_fund":            "false",
			"npm_config_audit":           "false",
		},
		NetworkGrant:   grant,
		Allow:          []string{"sequentialthinking"},
		StartupTimeout: 2 * startupTimeout, // the harness bounds Connect by as much
		CallTimeout:    time.Minute,
	}
	s := h.connect(h.opts(), cfg)
	info := s.Servers()[0]
	if !strings.Contains(info.Confinement, "+netns+proxy") || info.Network != strings.Join(grant, ", ") {
		t.Errorf("server info %+v: want the network through its proxy, granted %q", info, grant)
	}
	var names []string
	for _, tool := range s.Tools() {
		names = append(names, tool.Name)
	}
	if len(names) != 1 || names[0] != "mcp__thinking__sequentialthinking" {
		t.Fatalf("tools %q, want mcp__thinking__sequentialthinking; notices:\n%s", names, strings.Join(s.Notices(), "\n"))
	}
	for _, n := range s.Notices() {
		if strings.Contains(n, "tried to reach") {
			t.Errorf("npx was refused a destination: %s", n)
		}
	}
	s.Close()

	// What npx fetched stays in the server's private home, so a second
	// start fetches only the package's metadata (npx asks the registry
	// each time, even for a pinned version: with the grant taken away it
	// fails with the registry refused).
	npxCache := filepath.Join(h.state, "home", "thinking", ".npm", "_npx")
	if ents, err := os.ReadDir(npxCache); err != nil || len(ents) == 0 {
		t.Fatalf("npx's cache in the private home %s: %v, %d entries", npxCache, err, len(ents))
	}
	s2 := h.connect(h.opts(), cfg)
	if _, ok := s2.Tool("mcp__thinking__sequentialthinking"); !ok {
		t.Errorf("the second start, from npx's cache: no tool; notices:\n%s", strings.Join(s2.Notices(), "\n"))
	}
}
