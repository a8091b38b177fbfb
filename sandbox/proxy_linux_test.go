package sandbox

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcphost/mcphost/internal/egress"
)

// recordingResolver resolves from a table and records every name asked.
type recordingResolver struct {
	mu    sync.Mutex
	names map[string][]netip.Addr
	asked []string
}

func (r *recordingResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, host)
	if a, ok := r.names[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func (r *recordingResolver) lookups() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.asked...)
}

// serveHTTP serves body on a host loopback port and counts connections.
func serveHTTP(t *testing.T, body string) (port string, conns func() int) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	n := 0
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, body) }),
		ConnState: func(c net.Conn, s http.ConnState) {
			if s == http.StateNew {
				mu.Lock()
				n++
				mu.Unlock()
			}
		},
	}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	_, port, _ = net.SplitHostPort(l.Addr().String())
	return port, func() int { mu.Lock(); defer mu.Unlock(); return n }
}

// newProxy returns an egress proxy for grants, the refusals it reports
// and its resolver.
func newProxy(t *testing.T, names map[string][]netip.Addr, grants ...string) (*egress.Proxy, func() []egress.Refusal, *recordingResolver) {
	t.Helper()
	var gs []egress.Grant
	for _, s := range grants {
		g, err := egress.ParseGrant(s)
		if err != nil {
			t.Fatal(err)
		}
		gs = append(gs, g)
	}
	res := &recordingResolver{names: names}
	var mu sync.Mutex
	var refused []egress.Refusal
	p, err := egress.New(egress.Config{Grants: gs, Resolver: res, Refused: func(r egress.Refusal) {
		mu.Lock()
		refused = append(refused, r)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	return p, func() []egress.Refusal {
		mu.Lock()
		defer mu.Unlock()
		return append([]egress.Refusal(nil), refused...)
	}, res
}

// proxyOnly hides a proxy's DirectProxy methods: the server gets the
// HTTP proxy and nothing else.
type proxyOnly struct{ Proxy }

const (
	afInet, afInet6, afNetlink, afPacket = "2", "10", "16", "17"
	sockStream, sockDgram, sockRaw       = "1", "2", "3"
)

// TestNetworkProxy: a server whose proxy is only an HTTP proxy reaches a
// granted destination through it and nothing else: not another port, not
// a name it was not granted (which is not even resolved), not the host
// directly, not UDP; and the host's listeners see nothing of it.
func TestNetworkProxy(t *testing.T) {
	requireConfinement(t)
	gport, granted := serveHTTP(t, "granted")
	oport, other := serveHTTP(t, "other")
	udp, udpGot := listenUDP(t)
	p, refused, res := newProxy(t,
		map[string][]netip.Addr{"granted.test": {netip.MustParseAddr("127.0.0.1")}},
		"localhost:"+gport, "granted.test:"+gport, "127.0.0.1:"+gport)
	s := startHostile(t, Config{Worktree: t.TempDir(), Proxy: proxyOnly{p}})
	if c := s.p.Confinement(); !strings.Contains(c, "+netns+proxy") || strings.Contains(c, "names") {
		t.Errorf("Confinement %q, want +netns+proxy without names", c)
	}
	env := s.must("env").Out
	for _, want := range []string{"HTTPS_PROXY=http://127.0.0.1:3128", "http_proxy=http://127.0.0.1:3128", "ALL_PROXY=http://127.0.0.1:3128", "NO_PROXY=", "NODE_USE_ENV_PROXY=1", "npm_config_https_proxy=http://127.0.0.1:3128"} {
		if !strings.Contains("\n"+env+"\n", "\n"+want+"\n") {
			t.Errorf("the server's environment lacks %s:\n%s", want, env)
		}
	}
	before := granted()
	if r := s.must("proxy-connect", "localhost:"+gport); r.Out != "granted" {
		t.Errorf("CONNECT to the granted port: %q, want the granted service's answer", r.Out)
	}
	if r := s.must("fetch", "http://granted.test:"+gport+"/"); r.Out != "granted" {
		t.Errorf("plain HTTP to the granted name: %q", r.Out)
	}
	if granted() == before {
		t.Error("the granted service saw no connection")
	}
	s.check(t, []op{
		{name: "CONNECT to another port", op: "proxy-connect", args: []string{"localhost:" + oport}},
		{name: "CONNECT to another port by address", op: "proxy-connect", args: []string{"127.0.0.1:" + oport}},
		{name: "CONNECT to a name not granted", op: "proxy-connect", args: []string{"evil.test:443"}},
		{name: "plain HTTP to a name not granted", op: "fetch", args: []string{"http://evil.test/"}},
		{name: "a direct connection to the granted port", op: "tcp", args: []string{"127.0.0.1:" + gport}, errnos: []string{"EACCES", "ECONNREFUSED"}},
		{name: "a direct connection to another port", op: "tcp", args: []string{"127.0.0.1:" + oport}, errnos: []string{"EACCES", "ECONNREFUSED"}},
		// The proxy's port on an address outside: no route out of the
		// namespace (nothing leaves it).
		{name: "the proxy port elsewhere", op: "tcp", args: []string{"192.0.2.1:3128"}, errnos: []string{"ENETUNREACH"}},
		{name: "udp to the host", op: "udp", args: []string{udp}, errnos: []string{"EAFNOSUPPORT"}},
		// Refused at the socket, not for a name that does not exist.
		{name: "a name lookup", op: "lookup", args: []string{"granted.test"}, errHas: "socket: address family not supported"},
		{name: "tcp socket", op: "socket", args: []string{afInet, sockStream, "0"}, ok: true},
		{name: "tcp6 socket", op: "socket", args: []string{afInet6, sockStream, "6"}, ok: true},
		{name: "udp socket", op: "socket", args: []string{afInet, sockDgram, "0"}, errnos: []string{"EAFNOSUPPORT"}},
		{name: "udp6 socket", op: "socket", args: []string{afInet6, sockDgram, "17"}, errnos: []string{"EAFNOSUPPORT"}},
		{name: "mptcp socket", op: "socket", args: []string{afInet, sockStream, "262"}, errnos: []string{"EAFNOSUPPORT"}},
		{name: "raw socket", op: "socket", args: []string{afInet, sockRaw, "1"}, errnos: []string{"EAFNOSUPPORT"}},
		{name: "packet socket", op: "socket", args: []string{afPacket, sockRaw, "0"}, errnos: []string{"EAFNOSUPPORT"}},
		{name: "netlink socket", op: "socket", args: []string{afNetlink, sockRaw, "0"}, errnos: []string{"EAFNOSUPPORT"}},
	})
	if n := other(); n != 0 {
		t.Errorf("the service on the port not granted saw %d connections", n)
	}
	if n := udpGot(); n != 0 {
		t.Errorf("the UDP listener received %d packets", n)
	}
	checkRefusals(t, res, refused(), "localhost:"+oport, "127.0.0.1:"+oport, "evil.test:443", "evil.test:80")
}

// checkRefusals checks that the proxy resolved no name but granted.test
// and reported each refusal of want ("host:port") once.
func checkRefusals(t *testing.T, res *recordingResolver, refused []egress.Refusal, want ...string) {
	t.Helper()
	for _, name := range res.lookups() {
		if name != "granted.test" {
			t.Errorf("the proxy resolved %q, which was not granted", name)
		}
	}
	got := map[string]int{}
	for _, r := range refused {
		got[fmt.Sprintf("%s:%d", r.Host, r.Port)]++
	}
	for _, w := range want {
		if got[w] != 1 {
			t.Errorf("refusal of %s reported %d times, want once (all: %v)", w, got[w], refused)
		}
	}
}

// TestNetworkByName: with the egress proxy (a DirectProxy), a client that
// knows nothing of proxies reaches its grants directly: a granted name
// resolves, inside the namespace, to an address that leads through the
// host's checks to that name; a granted localhost or address port is
// connectable at its address. Nothing widens: a name not granted does not
// resolve (and is reported), a port not granted is refused, an address of
// the names' range that was never handed out leads nowhere, nothing leaves
// the namespace by any other route, UDP reaches nothing but the
// namespace's nameserver, and raw, packet, netlink, MPTCP and ICMP sockets
// stay refused. The proxy path keeps working beside it.
func TestNetworkByName(t *testing.T) {
	requireConfinement(t)
	gport, granted := serveHTTP(t, "granted")
	oport, other := serveHTTP(t, "other")
	udp, udpGot := listenUDP(t)
	p, refused, res := newProxy(t,
		map[string][]netip.Addr{"granted.test": {netip.MustParseAddr("127.0.0.1")}},
		"localhost:"+gport, "granted.test:"+gport, "127.0.0.1:"+gport)
	s := startHostile(t, Config{Worktree: t.TempDir(), Proxy: p})
	if c := s.p.Confinement(); !strings.Contains(c, "+netns+proxy+names") {
		t.Errorf("Confinement %q, want +netns+proxy+names", c)
	}
	if _, err := os.Stat("/etc/resolv.conf"); err == nil {
		if r := s.must("read", "/etc/resolv.conf"); !strings.Contains(r.Out, "\nnameserver 127.0.0.1\n") || strings.Count(r.Out, "nameserver") != 1 {
			t.Errorf("the server's resolv.conf:\n%s", r.Out)
		}
	}
	addr := s.must("lookup", "granted.test").Out
	if a, err := netip.ParseAddr(addr); err != nil || !egress.NamesPrefix.Contains(a) {
		t.Errorf("granted.test resolves to %q in the namespace, want one address of %v", addr, egress.NamesPrefix)
	}
	before := granted()
	for _, url := range []string{
		"http://granted.test:" + gport + "/", // a name, through the stub resolver
		"http://localhost:" + gport + "/",    // Go's net/http never proxies localhost
		"http://127.0.0.1:" + gport + "/",
		"http://[::1]:" + gport + "/",
	} {
		if r := s.must("get", url); r.Out != "granted" {
			t.Errorf("GET %s without a proxy: %q, want the granted service's answer", url, r.Out)
		}
	}
	// Go's net/http with the proxy variables: localhost goes direct, the
	// name through the proxy.
	for _, url := range []string{"http://localhost:" + gport + "/", "http://granted.test:" + gport + "/"} {
		if r := s.must("fetch", url); r.Out != "granted" {
			t.Errorf("GET %s with the proxy variables: %q", url, r.Out)
		}
	}
	if r := s.must("proxy-connect", "granted.test:"+gport); r.Out != "granted" {
		t.Errorf("CONNECT to the granted name: %q", r.Out)
	}
	if granted() == before {
		t.Error("the granted service saw no connection")
	}
	s.check(t, []op{
		{name: "a name not granted", op: "lookup", args: []string{"evil.test"}, errHas: "no such host"},
		{name: "a name not granted, again", op: "get", args: []string{"http://evil.test/"}, errHas: "no such host"},
		{name: "a granted name's other port", op: "get", args: []string{"http://granted.test:" + oport + "/"}, errnos: []string{"EACCES", "ECONNREFUSED"}},
		{name: "localhost's other port", op: "tcp", args: []string{"127.0.0.1:" + oport}, errnos: []string{"EACCES", "ECONNREFUSED"}},
		{name: "an address never handed out", op: "get", args: []string{"http://198.18.200.1:" + gport + "/"}},
		{name: "an address outside", op: "tcp", args: []string{"192.0.2.1:" + gport}, errnos: []string{"ENETUNREACH"}},
		{name: "udp outside", op: "udp", args: []string{"192.0.2.1:53"}, errnos: []string{"ENETUNREACH"}},
		{name: "udp socket", op: "socket", args: []string{afInet, sockDgram, "0"}, ok: true},
		{name: "udp6 socket", op: "socket", args: []string{afInet6, sockDgram, "17"}, ok: true},
		{name: "icmp socket", op: "socket", args: []string{afInet, sockDgram, "1"}, errnos: []string{"EAFNOSUPPORT"}},
		{name: "mptcp socket", op: "socket", args: []string{afInet, sockStream, "262"}, errnos: []string{"EAFNOSUPPORT"}},
		{name: "raw socket", op: "socket", args: []string{afInet, sockRaw, "1"}, errnos: []string{"EAFNOSUPPORT"}},
		{name: "packet socket", op: "socket", args: []string{afPacket, sockRaw, "0"}, errnos: []string{"EAFNOSUPPORT"}},
		{name: "netlink socket", op: "socket", args: []string{afNetlink, sockRaw, "0"}, errnos: []string{"EAFNOSUPPORT"}},
	})
	// The host's UDP listener: a datagram to its address stays in the
	// namespace, where nothing listens there.
	s.do("udp", udp)
	if n := other(); n != 0 {
		t.Errorf("the service on the port not granted saw %d connections", n)
	}
	if n := udpGot(); n != 0 {
		t.Errorf("the UDP listener received %d packets", n)
	}
	checkRefusals(t, res, refused(), "evil.test:0", "198.18.200.1:"+gport)
}

// TestNetworkProxyNoBind: a proxied server can listen on no TCP port, so it
// cannot stand in for its proxy or serve anything.
func TestNetworkProxyNoBind(t *testing.T) {
	requireConfinement(t)
	if kernelABI(t) < 4 {
		t.Skip("Landlock below ABI 4 does not restrict TCP bind")
	}
	p, _, _ := newProxy(t, nil, "api.example.com")
	s := startHostile(t, Config{Worktree: t.TempDir(), Proxy: p})
	s.check(t, []op{
		{name: "bind a port", op: "listen-tcp", args: []string{"127.0.0.1:8080"}, errnos: []string{"EACCES"}},
		{name: "bind the proxy's port", op: "listen-tcp", args: []string{"127.0.0.1:3128"}, errnos: []string{"EACCES"}}, // Landlock's hook runs before the address is looked at
	})
}

// TestNonRootProxy: as an ordinary user (nobody), through a user namespace,
// the helper can still bring the loopback up for the proxy, and the server
// reaches the granted port and nothing else.
func TestNonRootProxy(t *testing.T) {
	requireConfinement(t)
	if os.Getuid() != 0 {
		t.Skip("needs root to run the host fixture as nobody; as non-root TestNetworkProxy covers this path")
	}
	const nobody = 65534
	wt, err := os.MkdirTemp("", "mcphost-nonroot-proxy-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(wt) })
	if err := os.Chown(wt, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	gport, granted := serveHTTP(t, "granted")
	oport, other := serveHTTP(t, "other")
	ops := fmt.Sprintf(`[
		{"op":"proxy-connect","args":["localhost:%[1]s"]},
		{"op":"proxy-connect","args":["localhost:%[2]s"]},
		{"op":"tcp","args":["127.0.0.1:%[2]s"]},
		{"op":"get","args":["http://localhost:%[1]s/"]},
		{"op":"lookup","args":["evil.test"]}]`, gport, oport)
	lines, stderr := hostAsNobody(t, wt, "/nonexistent", "-worktree", wt, "-proxy", "localhost:"+gport, "-ops", ops)
	if len(lines) != 8 || lines[7] != "ready" {
		t.Fatalf("host fixture output:\n%s\nstderr: %s", strings.Join(lines, "\n"), stderr)
	}
	if !strings.Contains(lines[0], "+userns+") || !strings.Contains(lines[0], "+proxy") {
		t.Errorf("%s: want a user namespace and the proxy", lines[0])
	}
	if !strings.HasPrefix(lines[2], `{"ok":true,"out":"granted"`) {
		t.Errorf("CONNECT to the granted port: %s", lines[2])
	}
	for _, l := range []string{lines[3], lines[4], lines[6]} {
		if strings.HasPrefix(l, `{"ok":true`) {
			t.Errorf("want a refusal: %s", l)
		}
	}
	// By name: the namespace's listener on the granted port, which the
	// helper opened with its ambient CAP_NET_BIND_SERVICE (53 for the
	// nameserver is below 1024).
	if !strings.HasPrefix(lines[5], `{"ok":true,"out":"granted"`) {
		t.Errorf("GET without a proxy of the granted port: %s", lines[5])
	}
	if !strings.Contains(lines[0], "+names") {
		t.Errorf("%s: want the names", lines[0])
	}
	if granted() == 0 || other() != 0 {
		t.Errorf("the granted service saw %d connections, the other %d; want some and none", granted(), other())
	}
}

// hostAddress returns an IPv4 address of one of the host's interfaces
// other than the loopback, or skips the test.
func hostAddress(t *testing.T) netip.Addr {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Is4() && !p.Addr().IsLoopback() {
			return p.Addr()
		}
	}
	t.Skip("this host has no IPv4 address but its loopback's")
	return netip.Addr{}
}

// TestNetworkByAddress: a plain TCP client (bash's /dev/tcp, which knows
// no proxy and no resolver) granted ADDR:PORT, an address of the host's own
// network, connects to that address directly and talks to the service
// there; another port of that address is refused, and its service sees
// nothing.
func TestNetworkByAddress(t *testing.T) {
	requireConfinement(t)
	addr := hostAddress(t)
	serve := func(answer string) (port int, got func() string) {
		l, err := net.Listen("tcp", netip.AddrPortFrom(addr, 0).String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		var mu sync.Mutex
		var heard strings.Builder
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				buf := make([]byte, 64)
				n, _ := c.Read(buf)
				mu.Lock()
				heard.Write(buf[:n])
				mu.Unlock()
				c.Write([]byte(answer))
				c.Close()
			}
		}()
		return l.Addr().(*net.TCPAddr).Port, func() string { mu.Lock(); defer mu.Unlock(); return heard.String() }
	}
	gport, gheard := serve("granted\n")
	oport, oheard := serve("other\n")
	p, refused, _ := newProxy(t, nil, fmt.Sprintf("%s:%d", addr, gport))
	script := fmt.Sprintf(`exec 3<>/dev/tcp/%[1]s/%[2]d && echo plain >&3 && head -n 1 <&3
exec 4<>/dev/tcp/%[1]s/%[3]d && echo plain >&4 && head -n 1 <&4 || echo refused`, addr, gport, oport)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	proc, err := Start(ctx, Config{
		Name: "plain", Argv: []string{"/bin/bash", "-c", script}, Worktree: t.TempDir(), Proxy: p,
		HostEnv: []string{"PATH=/usr/bin:/bin"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer proc.Close(time.Second)
	out, _ := io.ReadAll(proc.Stdout())
	if string(out) != "granted\nrefused\n" {
		t.Errorf("the client printed %q, want the granted service's answer, then a refusal", out)
	}
	if h := gheard(); h != "plain\n" {
		t.Errorf("the granted service heard %q", h)
	}
	if h := oheard(); h != "" {
		t.Errorf("the service on the port not granted heard %q", h)
	}
	if r := refused(); len(r) != 0 {
		t.Logf("refusals: %+v", r)
	}
}
