package mcphost

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcphost/mcphost/internal/egress"
	"github.com/mcphost/mcphost/sandbox"
)

// countingListener accepts on a host loopback port, counting connections.
func countingListener(t *testing.T) (port string, n func() int64) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var count atomic.Int64
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			count.Add(1)
			c.Close()
		}
	}()
	_, port, _ = net.SplitHostPort(l.Addr().String())
	return port, count.Load
}

// TestNetworkGrantNotices: a server with network = [...] reaches what it
// was granted; what it was refused is a notice, once per destination even
// across a restart, that names the destination and the grant to add.
func TestNetworkGrantNotices(t *testing.T) {
	if _, err := sandbox.Probe(); err != nil {
		t.Skipf("this kernel cannot confine: %v", err)
	}
	granted, grantedN := countingListener(t)
	other, otherN := countingListener(t)
	e := newEnv(t)
	sc := fixture("net", "-connect", "localhost:"+granted+",localhost:"+other+",evil.example.net:443")
	sc.NetworkGrant = []string{"localhost:" + granted}
	s := e.connect(e.opts(), sc)
	if info := s.Servers()[0]; info.Network != "localhost:"+granted || !strings.Contains(info.Confinement, "proxy") {
		t.Errorf("ServerInfo %+v, want network %q and a proxy in the confinement", info, "localhost:"+granted)
	}
	if err := s.Restart(context.Background(), "net"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for grantedN() < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if grantedN() < 2 {
		t.Errorf("the granted service saw %d connections, want one per start", grantedN())
	}
	if otherN() != 0 {
		t.Errorf("the service not granted saw %d connections", otherN())
	}
	want := map[string]string{
		"localhost:" + other:   `add "localhost:` + other + `" to network in [mcp.net]`,
		"evil.example.net:443": `add "evil.example.net" to network in [mcp.net]`,
	}
	for dest, hint := range want {
		n := 0
		for _, notice := range s.Notices() {
			if strings.Contains(notice, "server net tried to reach "+dest+",") {
				n++
				if !strings.Contains(notice, hint) {
					t.Errorf("notice %q does not say %s", notice, hint)
				}
			}
		}
		if n != 1 {
			t.Errorf("%d notices for %s, want 1: %q", n, dest, s.Notices())
		}
	}
}

// testServer is a server of a bare session, for the notices it builds.
func testServer(cfg ServerConfig, hostEnv ...string) *server {
	s := &Session{logger: slog.New(slog.DiscardHandler), opts: Options{HomeDir: "/state/home", HostEnv: hostEnv}}
	return &server{cfg: cfg.withDefaults(), sess: s, stderr: newStderrLog(cfg.Name, s.logger)}
}

// TestRefusedNotice: a refusal's notice names what the server tried and
// the entry to add, the server's text escaped and cut; a refused lookup
// (Port 0: network by name) says the name did not resolve, never "name:0";
// one that comes while a package launcher waits for initialize says it is
// probably the launcher fetching its package.
func TestRefusedNotice(t *testing.T) {
	long := strings.Repeat("a", 300) + ".example.com"
	for _, tt := range []struct {
		name       string
		command    string
		installing bool
		r          egress.Refusal
		want       []string
		not        []string
	}{
		{"lookup", "srv", false, egress.Refusal{Host: "evil.example.net", Reason: "not in the server's network grant", Grant: "evil.example.net"},
			[]string{`server x looked up evil.example.net, which is not in its network grant, so the name did not resolve; to allow it, add "evil.example.net" to network in [mcp.x]`},
			[]string{":0", "tried to reach", "fetching"}},
		{"lookup escaped", "srv", false, egress.Refusal{Host: "a\x1b[31mb.example.net", Reason: "not in the server's network grant"},
			[]string{"looked up a?[31mb.example.net, which"}, []string{"\x1b"}},
		{"lookup cut", "srv", false, egress.Refusal{Host: long, Reason: "not in the server's network grant", Grant: long},
			[]string{"looked up " + long[:260] + "…, which", `add "` + long[:260] + `…" to network`}, nil},
		{"connect", "srv", false, egress.Refusal{Host: "evil.example.net", Port: 443, Reason: "not in the server's network grant", Grant: "evil.example.net"},
			[]string{`server x tried to reach evil.example.net:443, which was refused: not in the server's network grant; to allow it, add "evil.example.net" to network in [mcp.x]`},
			[]string{"fetching"}},
		{"bound", "srv", false, egress.Refusal{Reason: "the server opened more than 64 connections"},
			[]string{"server x: the server opened more than 64 connections"}, []string{"to allow it"}},
		{"during install", "npx", true, egress.Refusal{Host: "registry.npmjs.org", Port: 443, Reason: "it resolves only to private addresses", Grant: "203.0.113.80:443"},
			[]string{"server x tried to reach registry.npmjs.org:443", `add "203.0.113.80:443"`, "(this came before the server answered initialize, so probably from npx fetching its package)"}, nil},
		{"lookup during install", "uvx", true, egress.Refusal{Host: "files.pythonhosted.org", Reason: "not in the server's network grant", Grant: "files.pythonhosted.org"},
			[]string{"looked up files.pythonhosted.org", "probably from uvx fetching its package"}, nil},
		{"launcher after start", "npx", false, egress.Refusal{Host: "api.example.net", Port: 443, Reason: "not in the server's network grant"},
			nil, []string{"fetching"}},
		{"not a launcher", "srv", true, egress.Refusal{Host: "api.example.net", Port: 443, Reason: "not in the server's network grant"},
			nil, []string{"fetching"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := testServer(ServerConfig{Name: "x", Command: []string{tt.command, "pkg"}, NetworkGrant: []string{"api.example.com"}})
			srv.installing.Store(tt.installing)
			srv.refusedNotice(tt.r)
			ns := srv.sess.Notices()
			if len(ns) != 1 {
				t.Fatalf("notices %q, want one", ns)
			}
			for _, w := range tt.want {
				if !strings.Contains(ns[0], w) {
					t.Errorf("notice %q lacks %q", ns[0], w)
				}
			}
			for _, w := range tt.not {
				if strings.Contains(ns[0], w) {
					t.Errorf("notice %q has %q", ns[0], w)
				}
			}
			if srv.refusals.Load() != 1 {
				t.Errorf("%d refusals counted, want 1", srv.refusals.Load())
			}
		})
	}
}

// TestNetworkHints: what a failed server's notice says of its network,
// from its stderr: with the network off, the grant of the host it tried
// (the placeholder only when stderr names none); with a list, the entries
// it lacks for what stderr names; for what it covers, when mcphost refused
// nothing, why a granted server can still fail.
func TestNetworkHints(t *testing.T) {
	for _, tt := range []struct {
		name     string
		network  any // false, true or a list
		stderr   string
		refusals int64
		want     []string // each in some hint
		not      []string // in none
		none     bool     // no hint at all
	}{
		{"off, node", false, "Error: getaddrinfo ENOTFOUND mcp.stripe.com\n    at GetAddrInfoReqWrap.onlookupall", 0,
			[]string{`ENOTFOUND: the server tried to reach mcp.stripe.com, but its network is off; if it needs it, grant it in [mcp.x]: network = ["mcp.stripe.com"]`},
			[]string{"api.example.com", "network = true"}, false},
		{"off, two", false, "dial tcp: lookup mcp.stripe.com on 10.0.0.53:53: dial udp: socket: address family not supported by protocol\nError: connect ECONNREFUSED 127.0.0.1:5432", 0,
			[]string{`the server tried to reach mcp.stripe.com, but its network is off; if it needs it, grant it in [mcp.x]: network = ["mcp.stripe.com"]`,
				`the server tried to reach 127.0.0.1:5432, but its network is off: that is on this host or its local network, so grant it only if you know the server must reach that service`},
			// A local address the server names is not offered as a grant.
			[]string{"api.example.com", `"127.0.0.1:5432"`}, false},
		{"off, no host", false, "urllib.error.URLError: <urlopen error [Errno -3] Temporary failure in name resolution>", 0,
			[]string{`Temporary failure in name resolution: the server tried to reach a host, but its network is off; if it needs one, grant it by name in [mcp.x]: network = ["api.example.com"]`}, nil, false},
		{"off, no network error", false, "Error: ENOENT: no such file or directory, open '/x'", 0, nil, nil, true},
		{"whole network", true, "Error: getaddrinfo ENOTFOUND mcp.stripe.com", 0, nil, nil, true},
		{"list lacks it", []string{"api.example.com"}, "Error: getaddrinfo ENOTFOUND mcp.stripe.com\ncurl: (7) Failed to connect to api.example.com port 8443 after 2 ms", 0,
			[]string{`the server could not reach mcp.stripe.com, api.example.com:8443, which its network grant does not cover; if it needs them, add "mcp.stripe.com", "api.example.com:8443" to network in [mcp.x]`},
			[]string{"refused nothing"}, false},
		{"list lacks it, refused", []string{"api.example.com"}, "Error: getaddrinfo ENOTFOUND mcp.stripe.com", 1,
			[]string{`add "mcp.stripe.com" to network in [mcp.x]`}, []string{"refused nothing"}, false},
		{"list covers it", []string{"api.example.com"}, "FetchError: request to https://api.example.com/v1 failed, reason: connect ETIMEDOUT", 0,
			[]string{"the server failed to reach api.example.com:443, which its network grant covers, and mcphost"}, []string{"add \"api.example.com\"", "which its network grant does not cover"}, false},
		{"list covers it, refused before", []string{"api.example.com"}, "FetchError: request to https://api.example.com/v1 failed, reason: connect ETIMEDOUT", 3, nil, nil, true},
		{"list, no host named", []string{"api.example.com"}, "TypeError: fetch failed", 0,
			[]string{"fetch failed: the server failed to reach a host, and mcphost"}, nil, false},
		{"list, its proxy", []string{"api.example.com"}, "proxyconnect tcp: dial tcp 127.0.0.1:3128: connect: connection refused", 1, nil, nil, true},
		{"list, stand-in address", []string{"api.example.com"}, "Error: connect ECONNREFUSED 198.18.0.7:8443", 0,
			[]string{"the server connected to 198.18.0.7:8443, an address mcphost's resolver gave it for a granted name, on a port that name's grant does not cover; if it needs that port, add the name with the port (\"NAME:PORT\") to network in [mcp.x]"},
			[]string{`"198.18.0.7:8443"`, "refused nothing"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := ServerConfig{Name: "x", Command: []string{"srv"}}
			switch v := tt.network.(type) {
			case bool:
				cfg.Network = v
			case []string:
				cfg.NetworkGrant = v
			}
			srv := testServer(cfg)
			srv.stderr.Write([]byte(tt.stderr + "\n"))
			srv.refusals.Store(tt.refusals)
			hints := srv.networkHints()
			all := strings.Join(hints, "\n")
			if tt.none != (len(hints) == 0) {
				t.Fatalf("hints %q", hints)
			}
			for _, w := range tt.want {
				if !strings.Contains(all, w) {
					t.Errorf("hints %q lack %q", hints, w)
				}
			}
			for _, w := range tt.not {
				if strings.Contains(all, w) {
					t.Errorf("hints %q have %q", hints, w)
				}
			}
			if strings.Contains(all, "refused nothing") && !strings.Contains(all, "a client that ignores the proxy variables reaches granted destinations here too") {
				// Truthful for this proxy, which serves such clients too.
				t.Errorf("hints %q blame a client that ignores the proxy variables", hints)
			}
		})
	}
}

// TestNetworkOffNamesHost: a server with the network off that fails to
// resolve a host (as Node and Go write it) gets a notice whose grant names
// that host, not a placeholder.
func TestNetworkOffNamesHost(t *testing.T) {
	e := newEnv(t)
	s := e.connect(e.opts(),
		fixture("node", "-exit", "1", "-exit-msg", "Error: getaddrinfo ENOTFOUND mcp.stripe.com"),
		fixture("gosrv", "-net-fail", "api.github.com:443"))
	for server, host := range map[string]string{"node": "mcp.stripe.com", "gosrv": "api.github.com"} {
		n := noticeWith(s, "server "+server+" did not start")
		if !strings.Contains(n, "but its network is off") || !strings.Contains(n, `network = ["`+host+`"]`) || strings.Contains(n, "api.example.com") {
			t.Errorf("the notice of %s does not grant %s:\n%s", server, host, n)
		}
	}
}

// TestNetworkListMissing: a server with a network list that fails for a
// destination its list does not cover is told the entry to add, from its
// own stderr (a client that never asked the proxy leaves no refusal).
func TestNetworkListMissing(t *testing.T) {
	if _, err := sandbox.Probe(); err != nil {
		t.Skipf("this kernel cannot confine: %v", err)
	}
	e := newEnv(t)
	sc := fixture("lister", "-exit", "1", "-exit-msg", "Error: connect ECONNREFUSED 127.0.0.1:5432")
	sc.NetworkGrant = []string{"api.example.com"}
	s := e.connect(e.opts(), sc)
	n := noticeWith(s, "server lister did not start")
	if !strings.Contains(n, `the server tried to reach 127.0.0.1:5432, which its network grant does not cover: that is on this host or its local network, so grant it only if you know the server must reach that service`) || strings.Contains(n, `add "127.0.0.1:5432"`) {
		t.Errorf("the notice does not say what to add:\n%s", n)
	}
}

// TestNetworkByNameLookup: a server with a network list that looks up a
// name it was not granted gets a notice that the name did not resolve and
// what to add (never "name:0"), where mcphost's resolver answers it, and
// its failure notice names the entry to add, from its own stderr, either
// way.
func TestNetworkByNameLookup(t *testing.T) {
	if _, err := sandbox.Probe(); err != nil {
		t.Skipf("this kernel cannot confine: %v", err)
	}
	e := newEnv(t)
	sc := fixture("byname", "-net-fail", "evil.example.net:443")
	sc.NetworkGrant = []string{"api.example.com"}
	s := e.connect(e.opts(), sc)
	n := noticeWith(s, "server byname did not start")
	if !strings.Contains(n, `the server could not reach evil.example.net, which its network grant does not cover; if it needs it, add "evil.example.net" to network in [mcp.byname]`) {
		t.Errorf("the failure notice does not say what to add:\n%s", n)
	}
	for _, n := range s.Notices() {
		if strings.Contains(n, "evil.example.net:0") {
			t.Errorf("a notice names port 0: %s", n)
		}
	}
	srv := s.servers["byname"]
	if p, _ := srv.networkProxy(); p != nil {
		if _, direct := any(p).(sandbox.DirectProxy); direct && noticeWith(s, `server byname looked up evil.example.net, which is not in its network grant, so the name did not resolve; to allow it, add "evil.example.net" to network in [mcp.byname]`) == "" {
			t.Errorf("no notice of the refused lookup: %q", s.Notices())
		}
	}
}
