package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestParseGrant(t *testing.T) {
	tests := []struct {
		in   string
		want string // String() of the result; "" for an error
		err  string // part of the error
	}{
		{in: "api.example.com", want: "api.example.com"},
		{in: "API.Example.COM.", want: "api.example.com"},
		{in: "api.example.com:8443", want: "api.example.com:8443"},
		{in: "*.example.com", want: "*.example.com"},
		{in: "*.example.com:8443", want: "*.example.com:8443"},
		{in: "localhost:5432", want: "localhost:5432"},
		{in: "127.0.0.1:5432", want: "127.0.0.1:5432"},
		{in: "[::1]:5432", want: "[::1]:5432"},
		{in: "[::ffff:127.0.0.1]:80", want: "127.0.0.1:80"},
		{in: "10.1.2.3:80", want: "10.1.2.3:80"},
		{in: "registry.npmjs.org", want: "registry.npmjs.org"},
		{in: "xn--bcher-kva.example", want: "xn--bcher-kva.example"},
		{in: "", err: "empty"},
		{in: "localhost", err: "localhost needs a port"},
		{in: "127.0.0.1", err: "an address needs a port"},
		{in: "*.com", err: "at least two labels"},
		{in: "*", err: "'*' may only start"},
		{in: "*.*.example.com", err: "'*' may only start"},
		{in: "a.*.example.com", err: "'*' may only start"},
		{in: "*.localhost:80", err: "at least two labels"}, {in: "*.a.localhost:80", err: "names under localhost"},
		{in: "db.localhost:80", err: "names under localhost"},
		{in: "https://api.example.com", err: "not a URL"},
		{in: "api.example.com/v1", err: "not a URL"},
		{in: "user@api.example.com", err: "not a URL"},
		{in: "api.example.com:0", err: "not a number from 1 to 65535"},
		{in: "api.example.com:65536", err: "not a number from 1 to 65535"},
		{in: "api.example.com:080", err: "not a number from 1 to 65535"},
		{in: "api.example.com:", err: "not a number from 1 to 65535"},
		{in: "api.example.com:+80", err: "not a number from 1 to 65535"},
		{in: "::1", err: "IPv6 address in brackets"},
		{in: "[::1]", err: "needs its port"},
		{in: "[::1", err: "lacks its ']'"},
		{in: "[fe80::1%eth0]:80", err: "not an IPv6 address"},
		{in: "0.0.0.0:80", err: "not an address a server can connect to"},
		{in: "224.0.0.1:80", err: "not an address a server can connect to"},
		{in: "127.1:80", err: "looks like an address"},
		{in: "2130706433:80", err: "looks like an address"},
		{in: "bad..example.com", err: "empty label"},
		{in: "-bad.example.com", err: "starts or ends with '-'"},
		{in: "bad!.example.com", err: "has the character"},
		{in: "b\u00fccher.example", err: "non-ASCII"},
		{in: "api example.com", err: "non-ASCII"},
		{in: strings.Repeat("a", 64) + ".example.com", err: "longer than 63"},
		{in: strings.Repeat("a.", 130) + "com", err: "longer than"},
	}
	for _, tt := range tests {
		g, err := ParseGrant(tt.in)
		switch {
		case tt.err != "" && err == nil:
			t.Errorf("ParseGrant(%q) = %v, want an error with %q", tt.in, g, tt.err)
		case tt.err != "" && (!strings.Contains(err.Error(), tt.err) || !errors.Is(err, ErrBadGrant)):
			t.Errorf("ParseGrant(%q) error %q, want one with %q wrapping ErrBadGrant", tt.in, err, tt.err)
		case tt.err != "" && !isGrantError(err, tt.in, tt.err):
			t.Errorf("ParseGrant(%q) error %#v, want a *GrantError of that text whose reason has %q", tt.in, err, tt.err)
		case tt.err == "" && err != nil:
			t.Errorf("ParseGrant(%q): %v", tt.in, err)
		case tt.err == "" && g.String() != tt.want:
			t.Errorf("ParseGrant(%q) = %q, want %q", tt.in, g, tt.want)
		}
	}
}

// fakeResolver answers from a table and records every lookup.
type fakeResolver struct {
	mu      sync.Mutex
	names   map[string][]netip.Addr
	lookups []string
}

func (r *fakeResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lookups = append(r.lookups, host)
	if a, ok := r.names[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func (r *fakeResolver) looked() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.lookups...)
}

// origin is a loopback HTTP listener that counts the connections it sees.
type origin struct {
	addr string
	port uint16
	mu   sync.Mutex
	n    int
}

func startOrigin(t *testing.T, body string) *origin {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o := &origin{addr: l.Addr().String(), port: uint16(l.Addr().(*net.TCPAddr).Port)}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "%s %s %s", body, r.Host, r.URL.Path)
		}),
		ConnState: func(c net.Conn, s http.ConnState) {
			if s == http.StateNew {
				o.mu.Lock()
				o.n++
				o.mu.Unlock()
			}
		},
	}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return o
}

func (o *origin) conns() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.n
}

// startProxy serves a Proxy for grants on a loopback listener and returns
// its address and the refusals it reported. Each of adjust is applied to
// the Proxy before it serves.
func startProxy(t testing.TB, cfg Config, adjust ...func(*Proxy)) (string, func() []Refusal) {
	t.Helper()
	var mu sync.Mutex
	var refused []Refusal
	cfg.Refused = func(r Refusal) {
		mu.Lock()
		refused = append(refused, r)
		mu.Unlock()
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range adjust {
		f(p)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Serve(l) }()
	t.Cleanup(func() {
		l.Close()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return 10s after its listener closed")
		}
	})
	return l.Addr().String(), func() []Refusal {
		mu.Lock()
		defer mu.Unlock()
		return append([]Refusal(nil), refused...)
	}
}

func grants(t testing.TB, s ...string) []Grant {
	t.Helper()
	var out []Grant
	for _, x := range s {
		g, err := ParseGrant(x)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, g)
	}
	return out
}

// connect sends CONNECT target through the proxy at addr, then a GET in the
// tunnel, and returns the CONNECT status and the tunnelled body.
func connect(t *testing.T, addr, target string) (int, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\nGET /in-tunnel HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", target, target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatalf("CONNECT %s: %v", target, err)
	}
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, ""
	}
	inner, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("in the tunnel to %s: %v", target, err)
	}
	b, _ := io.ReadAll(inner.Body)
	return resp.StatusCode, string(b)
}

// get sends a plain-HTTP proxy request for url.
func get(t *testing.T, addr, url string) (int, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\nProxy-Connection: keep-alive\r\nConnection: close\r\n\r\n", url)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestProxyGrants(t *testing.T) {
	granted := startOrigin(t, "granted")
	other := startOrigin(t, "other")
	res := &fakeResolver{names: map[string][]netip.Addr{
		// A granted name that points at the host's loopback: rebinding.
		"rebind.example.com":   {netip.MustParseAddr("127.0.0.1")},
		"internal.example.com": {netip.MustParseAddr("10.0.0.7")},
	}}
	// Every vetted public address is sent to the granted origin.
	var dialed []string
	var dmu sync.Mutex
	dial := func(ctx context.Context, network, address string) (net.Conn, error) {
		dmu.Lock()
		dialed = append(dialed, address)
		dmu.Unlock()
		return (&net.Dialer{}).DialContext(ctx, network, address)
	}
	gport := fmt.Sprint(granted.port)
	addr, refused := startProxy(t, Config{
		Grants:   grants(t, "localhost:"+gport, "rebind.example.com:"+gport, "internal.example.com:"+gport),
		Resolver: res,
		Dial:     dial,
	})
	oport := fmt.Sprint(other.port)
	for _, tt := range []struct {
		name   string
		target string
		code   int
	}{
		{"granted localhost port", "localhost:" + gport, 200},
		{"granted via 127.0.0.1", "127.0.0.1:" + gport, 200},
		{"another port", "localhost:" + oport, 403},
		{"another port by address", "127.0.0.1:" + oport, 403},
		{"a name not granted", "evil.example.net:443", 403},
		{"a granted name resolving to loopback", "rebind.example.com:" + gport, 403},
		{"a granted name resolving to a private address", "internal.example.com:" + gport, 403},
		{"an address in another form", "2130706433:" + gport, 403},
		{"a name under localhost", "db.localhost:" + gport, 403},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, body := connect(t, addr, tt.target)
			if code != tt.code {
				t.Fatalf("CONNECT %s: %d, want %d", tt.target, code, tt.code)
			}
			if code == 200 && !strings.HasPrefix(body, "granted ") {
				t.Errorf("tunnel body %q, want the granted origin's", body)
			}
			code, _ = get(t, addr, "http://"+tt.target+"/plain")
			if code != tt.code {
				t.Errorf("GET http://%s/plain: %d, want %d", tt.target, code, tt.code)
			}
		})
	}
	if n := other.conns(); n != 0 {
		t.Errorf("the origin on the port not granted saw %d connections", n)
	}
	for _, name := range res.looked() {
		if name != "rebind.example.com" && name != "internal.example.com" {
			t.Errorf("the proxy resolved %q, which is not granted", name)
		}
	}
	got := map[string]int{}
	suggested := map[string]string{}
	for _, r := range refused() {
		got[fmt.Sprintf("%s:%d", r.Host, r.Port)]++
		suggested[fmt.Sprintf("%s:%d", r.Host, r.Port)] = r.Grant
	}
	for _, want := range []string{"localhost:" + oport, "127.0.0.1:" + oport, "evil.example.net:443", "rebind.example.com:" + gport, "internal.example.com:" + gport} {
		if got[want] != 1 {
			t.Errorf("refusal of %s reported %d times, want once (all: %v)", want, got[want], got)
		}
	}
	for dest, grant := range map[string]string{
		"evil.example.net:443":          "evil.example.net",
		"localhost:" + oport:            "localhost:" + oport,
		"rebind.example.com:" + gport:   "127.0.0.1:" + gport,
		"internal.example.com:" + gport: "10.0.0.7:" + gport,
		"2130706433:" + gport:           "",
	} {
		if suggested[dest] != grant {
			t.Errorf("refusal of %s suggests %q, want %q", dest, suggested[dest], grant)
		}
	}
	dmu.Lock()
	defer dmu.Unlock()
	for _, d := range dialed {
		if d != "127.0.0.1:"+gport && d != "[::1]:"+gport {
			t.Errorf("the proxy dialed %s", d)
		}
	}
}

// TestProxyAddressGrant: a granted name may reach a private address when
// that address is granted too.
func TestProxyAddressGrant(t *testing.T) {
	o := startOrigin(t, "db")
	port := fmt.Sprint(o.port)
	res := &fakeResolver{names: map[string][]netip.Addr{"db.internal.example": {netip.MustParseAddr("127.0.0.1")}}}
	addr, _ := startProxy(t, Config{Grants: grants(t, "db.internal.example:"+port, "127.0.0.1:"+port), Resolver: res})
	if code, body := connect(t, addr, "db.internal.example:"+port); code != 200 || !strings.HasPrefix(body, "db db.internal.example") {
		t.Errorf("CONNECT: %d %q, want 200 from the origin", code, body)
	}
	if code, body := get(t, addr, "http://db.internal.example:"+port+"/x"); code != 200 || body != "db db.internal.example:"+port+" /x" {
		t.Errorf("GET: %d %q", code, body)
	}
}

func TestProxyBounds(t *testing.T) {
	o := startOrigin(t, "o")
	port := fmt.Sprint(o.port)
	addr, refused := startProxy(t, Config{Grants: grants(t, "localhost:"+port), MaxConns: 4, IdleTimeout: 300 * time.Millisecond})
	var held []net.Conn
	for i := 0; i < 4; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		fmt.Fprintf(c, "CONNECT localhost:%s HTTP/1.1\r\nHost: x\r\n\r\n", port)
		resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("tunnel %d: %v %v", i, resp, err)
		}
	}
	// A fifth connection is over the bound.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != 503 {
		t.Fatalf("fifth connection: %v %v, want 503", resp, err)
	}
	c.Close()
	// The idle tunnels are closed within the idle time (and a tick).
	for i, c := range held {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		start := time.Now()
		if _, err := c.Read(make([]byte, 1)); err == nil {
			t.Errorf("tunnel %d: read data, want the proxy to close it", i)
		} else if errors.Is(err, errTimeout) || time.Since(start) > 4*time.Second {
			t.Errorf("tunnel %d still open after the idle time: %v", i, err)
		}
		c.Close()
	}
	// Room again.
	deadline := time.Now().Add(5 * time.Second)
	for {
		code, _ := connect(t, addr, "localhost:"+port)
		if code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the idle tunnels closed, CONNECT answers %d", code)
		}
		time.Sleep(20 * time.Millisecond)
	}
	n := 0
	for _, r := range refused() {
		if r.Host == "" && strings.Contains(r.Reason, "more than 4 connections") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the connection bound was reported %d times, want once: %v", n, refused())
	}
}

var errTimeout = errors.New("timeout")

func TestProxyReportBound(t *testing.T) {
	addr, refused := startProxy(t, Config{Grants: grants(t, "api.example.com")})
	for i := 0; i < MaxReported+10; i++ {
		connect(t, addr, fmt.Sprintf("h%d.example.net:443", i))
		connect(t, addr, fmt.Sprintf("h%d.example.net:443", i))
	}
	r := refused()
	if len(r) != MaxReported+1 {
		t.Fatalf("%d refusals reported, want %d", len(r), MaxReported+1)
	}
	if last := r[len(r)-1]; last.Host != "" || !strings.Contains(last.Reason, "not reported") {
		t.Errorf("last refusal %+v, want the end of reporting", last)
	}
}

func TestProxyBadRequests(t *testing.T) {
	addr, _ := startProxy(t, Config{Grants: grants(t, "api.example.com")})
	for _, req := range []string{
		"GET /relative HTTP/1.1\r\nHost: api.example.com\r\n\r\n",
		"GET https://api.example.com/ HTTP/1.1\r\nHost: api.example.com\r\n\r\n",
		"CONNECT api.example.com HTTP/1.1\r\nHost: api.example.com\r\n\r\n",
	} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(c, req)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != 400 {
			t.Errorf("%q: %v %v, want 400", req, resp, err)
		}
		c.Close()
	}
}

// TestProxyConcurrent: many goroutines through one proxy.
func TestProxyConcurrent(t *testing.T) {
	o := startOrigin(t, "o")
	port := fmt.Sprint(o.port)
	addr, _ := startProxy(t, Config{Grants: grants(t, "localhost:"+port), MaxConns: 200})
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if i%2 == 0 {
				if code, _ := connect(t, addr, "localhost:"+port); code != 200 {
					t.Errorf("CONNECT %d: %d", i, code)
				}
			} else if code, _ := connect(t, addr, fmt.Sprintf("n%d.example.net:443", i)); code != 403 {
				t.Errorf("CONNECT %d: %d, want 403", i, code)
			}
		}(i)
	}
	wg.Wait()
}

// FuzzParseGrant: ParseGrant never panics, and what it accepts prints back
// to itself and is accepted by New.
func FuzzParseGrant(f *testing.F) {
	for _, s := range []string{"api.example.com", "*.example.com:8443", "localhost:5432", "[::1]:80", "127.0.0.1:1", "x.y:65535", "*.a.b", "A.B.", "[::ffff:1.2.3.4]:9"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		g, err := ParseGrant(s)
		if err != nil {
			if !errors.Is(err, ErrBadGrant) {
				t.Fatalf("ParseGrant(%q): %v does not wrap ErrBadGrant", s, err)
			}
			return
		}
		again, err := ParseGrant(g.String())
		if err != nil || again != g {
			t.Fatalf("ParseGrant(%q) = %+v, whose String %q parses to %+v, %v", s, g, g.String(), again, err)
		}
		if _, err := New(Config{Grants: []Grant{g}}); err != nil {
			t.Fatalf("New rejects the parsed grant %+v: %v", g, err)
		}
	})
}

// isGrantError reports whether err is a *GrantError for text whose reason
// holds reason, and says no more than its parts.
func isGrantError(err error, text, reason string) bool {
	var ge *GrantError
	return errors.As(err, &ge) && ge.Text == text && strings.Contains(ge.Reason, reason) &&
		err.Error() == fmt.Sprintf("%v: %q: %s", ErrBadGrant, ge.Text, ge.Reason)
}

// TestGrantAllows: Allows, the rule the proxy's vet applies to each
// grant, for each form of destination.
func TestGrantAllows(t *testing.T) {
	for _, tt := range []struct {
		grant, host string
		port        uint16
		want        bool
	}{
		{"api.x.com", "api.x.com", 443, true},
		{"api.x.com", "api.x.com", 80, true},
		{"api.x.com", "api.x.com", 8443, false},
		{"api.x.com", "api.x.com", 0, true},
		{"api.x.com:8443", "api.x.com", 0, true},
		{"api.x.com", "www.x.com", 443, false},
		{"*.x.com", "api.x.com", 443, true},
		{"*.x.com", "a.b.x.com", 0, true},
		{"*.x.com", "x.com", 443, false},
		{"localhost:5432", "localhost", 5432, true},
		{"localhost:5432", "localhost", 0, false},
		{"localhost:5432", "127.0.0.1", 5432, true},
		{"localhost:5432", "::1", 5432, true},
		{"localhost:5432", "127.0.0.1", 5433, false},
		{"127.0.0.1:5432", "localhost", 5432, false},
		{"127.0.0.1:5432", "127.0.0.1", 5432, true},
		{"127.0.0.1:5432", "::ffff:127.0.0.1", 5432, true},
		{"10.0.0.5:8080", "10.0.0.5", 8080, true},
		{"10.0.0.5:8080", "10.0.0.5", 0, false},
		{"api.x.com", "10.0.0.5", 443, false},
	} {
		g, err := ParseGrant(tt.grant)
		if err != nil {
			t.Fatal(err)
		}
		if got := g.Allows(tt.host, tt.port); got != tt.want {
			t.Errorf("%s allows %s port %d = %v, want %v", tt.grant, tt.host, tt.port, got, tt.want)
		}
	}
}
