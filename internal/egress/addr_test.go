package egress

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestIsPublic(t *testing.T) {
	for _, tt := range []struct {
		addr string
		want bool
	}{
		// Public, and the neighbours of each range below.
		{"93.184.215.14", true}, {"8.8.8.8", true}, {"1.0.0.0", true},
		{"2606:2800:21f:cb07:6820:80da:af6b:8b2c", true}, {"2a00:1450:4001::1", true},
		{"9.255.255.255", true}, {"11.0.0.0", true}, {"100.63.255.255", true}, {"100.128.0.0", true},
		{"126.255.255.255", true}, {"128.0.0.0", true}, {"169.253.255.255", true}, {"169.255.0.0", true},
		{"172.15.255.255", true}, {"172.32.0.0", true}, {"191.255.255.255", true}, {"192.0.1.0", true},
		{"192.0.3.0", true}, {"192.88.98.255", true}, {"192.88.100.0", true}, {"192.167.255.255", true},
		{"192.169.0.0", true}, {"198.17.255.255", true}, {"198.20.0.0", true}, {"198.51.99.255", true},
		{"198.51.101.0", true}, {"203.0.112.255", true}, {"203.0.114.0", true}, {"223.255.255.255", true},
		{"2000::1", true}, {"2001:200::1", true}, {"2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", true},
		{"2001:db9::1", true}, {"2003::1", true}, {"3ffe:ffff::1", true}, {"3fff:1000::1", true},
		{"3fff:ffff::1", true},
		// NAT64 and 6to4 of public IPv4.
		{"64:ff9b::808:808", true}, {"2002:808:808::1", true},

		// IPv4 special-purpose ranges.
		{"0.0.0.0", false}, {"0.1.2.3", false}, {"0.255.255.255", false},
		{"10.0.0.0", false}, {"10.0.0.1", false}, {"10.255.255.255", false},
		{"100.64.0.0", false}, {"100.100.1.1", false}, {"100.127.255.255", false},
		{"127.0.0.1", false}, {"127.8.9.1", false}, {"127.255.255.255", false},
		{"169.254.0.0", false}, {"169.254.169.254", false}, {"169.254.255.255", false},
		{"172.16.0.1", false}, {"172.31.255.255", false},
		{"192.0.0.0", false}, {"192.0.0.9", false}, {"192.0.0.255", false},
		{"192.0.2.0", false}, {"192.0.2.2", false}, {"192.0.2.255", false},
		{"192.88.99.1", false},
		{"192.168.0.0", false}, {"192.168.1.1", false}, {"192.168.255.255", false},
		{"198.18.0.0", false}, {"198.18.0.1", false}, {"198.19.255.255", false},
		{"198.51.100.0", false}, {"198.51.100.7", false}, {"198.51.100.255", false},
		{"203.0.113.0", false}, {"203.0.113.9", false}, {"203.0.113.255", false},
		{"224.0.0.0", false}, {"224.0.0.1", false}, {"239.255.255.255", false},
		{"240.0.0.0", false}, {"240.1.2.3", false}, {"255.255.255.255", false},

		// IPv6 outside global unicast space.
		{"::", false}, {"::1", false}, {"1fff:ffff::1", false}, {"4000::1", false},
		{"::127.0.0.1", false}, {"::8.8.8.8", false}, // IPv4-compatible
		{"::ffff:127.0.0.1", false}, {"::ffff:8.8.8.8", false}, // IPv4-mapped: unmapped by callers first
		// SIIT, discard-only and local-use NAT64.
		{"::ffff:0:808:808", false}, {"100::1", false},
		{"64:ff9b:1::808:808", false}, {"64:ff9b:1:ffff::1", false},
		{"5f00::1", false}, // SRv6 SIDs
		{"fc00::1", false}, {"fd00::2", false}, {"fd12::1", false}, {"fdff:ffff::1", false},
		{"fe80::1", false}, {"febf::1", false}, {"fec0::1", false}, {"feff::1", false},
		{"ff02::1", false}, {"ff0e::1", false},
		// Special-purpose ranges of global unicast space.
		{"2001::", false}, {"2001::1", false}, {"2001:0:4136:e378:8000:63bf:3fff:fdd2", false}, // Teredo
		{"2001:2::", false}, {"2001:2::1", false}, {"2001:2:0:ffff::1", false}, // benchmarking
		{"2001:10::1", false}, {"2001:1ff:ffff::1", false}, // the rest of IETF protocol assignments
		{"2001:db8::", false}, {"2001:db8::1", false}, {"2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", false},
		{"3fff::", false}, {"3fff::1", false}, {"3fff:fff:ffff::1", false},
		// NAT64 and 6to4 of IPv4 that is not public.
		{"64:ff9b::", false}, {"64:ff9b::a00:1", false}, {"64:ff9b::7f00:1", false},
		{"64:ff9b::c000:202", false}, {"64:ff9b::a9fe:a9fe", false}, {"64:ff9b::6440:1", false},
		{"2002::1", false}, {"2002:a00:1::1", false}, {"2002:7f00:1::1", false},
		{"2002:c000:202::1", false}, {"2002:c612::1", false}, {"2002:e000:1::1", false},
		// Zones.
		{"fe80::1%eth0", false}, {"2606:2800::1%eth0", false},
	} {
		if got := isPublic(netip.MustParseAddr(tt.addr)); got != tt.want {
			t.Errorf("isPublic(%s) = %v, want %v", tt.addr, got, tt.want)
		}
	}
	if isPublic(netip.Addr{}) {
		t.Error("isPublic(the zero Addr) = true")
	}
}

// countingListener is a TCP listener that counts the connections it
// accepts and closes them.
type countingListener struct {
	l  net.Listener
	mu sync.Mutex
	n  int
}

func listenCounting(t *testing.T, addr string) *countingListener {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{l: l}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			cl.mu.Lock()
			cl.n++
			cl.mu.Unlock()
			c.Close()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		wg.Wait()
	})
	return cl
}

func (cl *countingListener) port() uint16 { return uint16(cl.l.Addr().(*net.TCPAddr).Port) }

func (cl *countingListener) conns() int {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.n
}

// ownAddrs returns the host's addresses that a service listening on every
// address answers on, and that are neither loopback nor link-local (which
// needs a zone to dial).
func ownAddrs(t *testing.T) []netip.Addr {
	t.Helper()
	all, err := hostAddrs()
	if err != nil {
		t.Fatal(err)
	}
	var out []netip.Addr
	for _, a := range all {
		if !a.IsLoopback() && !a.IsLinkLocalUnicast() && !a.IsUnspecified() {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		t.Skip("this machine has no address but loopback and link-local ones: there is no address of its own to point a name at")
	}
	return out
}

// TestProxyHostAddress: a granted name that resolves to an address of the
// host itself does not reach a service the host listens on at every
// address, whatever range the address is in, unless the address is
// granted too.
func TestProxyHostAddress(t *testing.T) {
	own := ownAddrs(t)
	l := listenCounting(t, ":0") // every address, IPv4 and IPv6
	port := fmt.Sprint(l.port())
	res := &fakeResolver{names: map[string][]netip.Addr{"self.example.com": own}}
	everyAddressPublic := func(p *Proxy) {
		// As on a host with a public address on an interface: only the
		// check against the host's own addresses is left.
		p.public = func(netip.Addr) bool { return true }
	}
	for _, tt := range []struct {
		name   string
		adjust []func(*Proxy)
	}{
		{"by range", nil},
		{"by the host's addresses", []func(*Proxy){everyAddressPublic}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			addr, refused := startProxy(t, Config{Grants: grants(t, "self.example.com:"+port), Resolver: res}, tt.adjust...)
			before := l.conns()
			connectStatus(t, addr, "self.example.com:"+port, 403)
			if code, body := get(t, addr, "http://self.example.com:"+port+"/"); code != 403 || !strings.Contains(body, "an address of this host") {
				t.Errorf("GET http://self.example.com:%s/: %d %q, want 403 saying why", port, code, body)
			}
			time.Sleep(50 * time.Millisecond) // for the listener to count a connection made after all
			if n := l.conns() - before; n != 0 {
				t.Errorf("the host's own service saw %d connections through the proxy", n)
			}
			r := refused()
			if len(r) != 1 || r[0].Host != "self.example.com" || fmt.Sprint(r[0].Port) != port ||
				!strings.Contains(r[0].Reason, "an address of this host") || !strings.Contains(r[0].Reason, own[0].String()) {
				t.Errorf("refusals %+v, want one naming self.example.com:%s and the host's address %s", r, port, own[0])
			}
		})
	}

	// A person's grant of the address still reaches it, by address and
	// by a name that resolves to it.
	t.Run("granted address", func(t *testing.T) {
		a := own[0]
		hp := net.JoinHostPort(a.String(), port)
		addr, refused := startProxy(t, Config{Grants: grants(t, hp, "self.example.com:"+port), Resolver: &fakeResolver{names: map[string][]netip.Addr{"self.example.com": {a}}}})
		before := l.conns()
		connectStatus(t, addr, hp, 200)
		connectStatus(t, addr, "self.example.com:"+port, 200)
		// The listener counts what it accepts a moment after the proxy
		// connected.
		for deadline := time.Now().Add(5 * time.Second); l.conns()-before < 2 && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		if n := l.conns() - before; n != 2 {
			t.Errorf("the granted service saw %d connections, want 2", n)
		}
		if r := refused(); len(r) != 0 {
			t.Errorf("refusals %+v, want none", r)
		}
	})

	// An address of the host that vetting took for another (added after
	// the list was taken, say) is caught once connected: here the dial
	// itself is sent to the host's address.
	t.Run("after connecting", func(t *testing.T) {
		far := netip.MustParseAddr("93.184.215.14") // never dialed
		var dialed []string
		var mu sync.Mutex
		dial := func(ctx context.Context, network, address string) (net.Conn, error) {
			mu.Lock()
			dialed = append(dialed, address)
			mu.Unlock()
			return (&net.Dialer{}).DialContext(ctx, network, net.JoinHostPort(own[0].String(), port))
		}
		addr, refused := startProxy(t, Config{
			Grants:   grants(t, "far.example.com:"+port),
			Resolver: &fakeResolver{names: map[string][]netip.Addr{"far.example.com": {far}}},
			Dial:     dial,
		})
		connectStatus(t, addr, "far.example.com:"+port, 403)
		r := refused()
		if len(r) != 1 || r[0].Host != "far.example.com" || !strings.Contains(r[0].Reason, "an address of this host") {
			t.Errorf("refusals %+v, want one for far.example.com, an address of this host", r)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(dialed) != 1 || dialed[0] != net.JoinHostPort(far.String(), port) {
			t.Errorf("dialed %v", dialed)
		}
	})
}

// connectStatus sends CONNECT target through the proxy at addr and checks
// the answer's status.
func connectStatus(t *testing.T, addr, target string, want int) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatalf("CONNECT %s: %v", target, err)
	}
	if resp.StatusCode != want {
		t.Errorf("CONNECT %s: %d, want %d", target, resp.StatusCode, want)
	}
}

func TestCheckNotSelf(t *testing.T) {
	own := ownAddrs(t)
	l := listenCounting(t, ":0")
	for _, a := range append([]netip.Addr{netip.MustParseAddr("127.0.0.1")}, own...) {
		c, err := net.Dial("tcp", net.JoinHostPort(a.String(), fmt.Sprint(l.port())))
		if err != nil {
			t.Fatal(err)
		}
		if err := checkNotSelf(c); err != errSelf {
			t.Errorf("checkNotSelf(a connection to %s) = %v, want errSelf", a, err)
		}
		c.Close()
	}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if err := checkNotSelf(a); err != nil {
		t.Errorf("checkNotSelf(a pipe) = %v, want nil", err)
	}
}

// TestVetHostAddressEmbedded (found in review): a granted name that
// resolves to the NAT64 or 6to4 form of one of the host's own IPv4
// addresses is the host's own: on a network with such a gateway, the
// gateway would connect it back to the host.
func TestVetHostAddressEmbedded(t *testing.T) {
	all, err := hostAddrs()
	if err != nil {
		t.Fatal(err)
	}
	var v4 netip.Addr
	for _, a := range all {
		if a.Is4() {
			v4 = a // 127.0.0.1 at least: every host has one
			break
		}
	}
	if !v4.IsValid() {
		t.Fatalf("no IPv4 address among the host's own: %v", all)
	}
	b := v4.As4()
	forms := map[string]netip.Addr{
		"nat64": netip.AddrFrom16([16]byte{0: 0, 1: 0x64, 2: 0xff, 3: 0x9b, 12: b[0], 13: b[1], 14: b[2], 15: b[3]}),
		"6to4":  netip.AddrFrom16([16]byte{0: 0x20, 1: 0x02, 2: b[0], 3: b[1], 4: b[2], 5: b[3], 15: 1}),
	}
	for name, a := range forms {
		t.Run(name, func(t *testing.T) {
			p, err := New(Config{Grants: grants(t, "self.example.com:443"), Resolver: &fakeResolver{names: map[string][]netip.Addr{"self.example.com": {a}}}})
			if err != nil {
				t.Fatal(err)
			}
			// As on a host with a public IPv4 address: only the check
			// against the host's own addresses is left.
			p.public = func(netip.Addr) bool { return true }
			if dests, err := p.vet(context.Background(), "self.example.com", 443); err == nil {
				t.Errorf("%s (the %s form of %s) was let through: %v", a, name, v4, dests)
			}
		})
	}
}
