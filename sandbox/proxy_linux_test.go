package sandbox

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"

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

// TestNetworkProxy: a server with the network by name reaches a granted
// destination through its proxy and nothing else: not another port, not a
// name it was not granted (which is not even resolved), not the host
// directly, not UDP; and the host's listeners see nothing of it.
func TestNetworkProxy(t *testing.T) {
	requireConfinement(t)
	gport, granted := serveHTTP(t, "granted")
	oport, other := serveHTTP(t, "other")
	udp, udpGot := listenUDP(t)
	p, refused, res := newProxy(t,
		map[string][]netip.Addr{"granted.test": {netip.MustParseAddr("127.0.0.1")}},
		"localhost:"+gport, "granted.test:"+gport, "127.0.0.1:"+gport)
	s := startHostile(t, Config{Worktree: t.TempDir(), Proxy: p})
	if c := s.p.Confinement(); !strings.Contains(c, "+netns+proxy") {
		t.Errorf("Confinement %q, want +netns+proxy", c)
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
	const (
		afInet, afInet6, afNetlink, afPacket = "2", "10", "16", "17"
		sockStream, sockDgram, sockRaw       = "1", "2", "3"
	)
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
	for _, name := range res.lookups() {
		if name != "granted.test" {
			t.Errorf("the proxy resolved %q, which was not granted", name)
		}
	}
	got := map[string]int{}
	for _, r := range refused() {
		got[fmt.Sprintf("%s:%d", r.Host, r.Port)]++
	}
	for _, want := range []string{"localhost:" + oport, "127.0.0.1:" + oport, "evil.test:443", "evil.test:80"} {
		if got[want] != 1 {
			t.Errorf("refusal of %s reported %d times, want once (all: %v)", want, got[want], refused())
		}
	}
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
		{"op":"proxy-connect","args":["localhost:%s"]},
		{"op":"proxy-connect","args":["localhost:%s"]},
		{"op":"tcp","args":["127.0.0.1:%s"]}]`, gport, oport, oport)
	cmd := exec.Command(hostPath(), "-hostile", hostilePath(), "-worktree", wt, "-proxy", "localhost:"+gport, "-ops", ops)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	cmd.Env = []string{"HOME=/nonexistent", "PATH=/usr/bin:/bin"}
	cmd.Dir = wt
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if strings.Contains(stderr.String(), ErrUnsupported.Error()) {
			t.Skipf("this kernel cannot confine for an ordinary user: %s", stderr.String())
		}
		t.Fatalf("host fixture as nobody: %v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 6 || lines[5] != "ready" {
		t.Fatalf("host fixture output:\n%s\nstderr: %s", out, stderr.String())
	}
	if !strings.Contains(lines[0], "+userns+") || !strings.Contains(lines[0], "+proxy") {
		t.Errorf("%s: want a user namespace and the proxy", lines[0])
	}
	if !strings.HasPrefix(lines[2], `{"ok":true,"out":"granted"`) {
		t.Errorf("CONNECT to the granted port: %s", lines[2])
	}
	for _, l := range lines[3:5] {
		if strings.HasPrefix(l, `{"ok":true`) {
			t.Errorf("want a refusal: %s", l)
		}
	}
	if granted() == 0 || other() != 0 {
		t.Errorf("the granted service saw %d connections, the other %d; want some and none", granted(), other())
	}
}
