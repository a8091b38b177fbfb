package egress

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

func TestDirect(t *testing.T) {
	names := []netip.Prefix{NamesPrefix}
	for _, tt := range []struct {
		grants []string
		ports  []uint16
		addrs  []netip.Prefix
	}{
		{nil, nil, nil},
		{[]string{"api.example.com"}, []uint16{80, 443}, names},
		{[]string{"*.example.com:8443"}, []uint16{8443}, names},
		{[]string{"api.example.com:8443", "api.example.com", "*.example.org:443", "b.example.com:22"}, []uint16{22, 80, 443, 8443}, names},
		// 53 and 3128 are the namespace's own: the HTTP proxy only.
		{[]string{"dns.example.com:53", "proxy.example.com:3128", "10.0.0.1:53", "localhost:3128"}, nil, names},
		{[]string{"localhost:5432"}, []uint16{5432}, nil},
		{[]string{"127.0.0.1:5432", "[::1]:5433", "127.0.0.2:99"}, []uint16{99, 5432, 5433}, nil},
		{[]string{"10.0.0.7:5432", "10.0.0.7:5433", "[2001:db8::1]:80"}, []uint16{80, 5432, 5433},
			[]netip.Prefix{netip.MustParsePrefix("10.0.0.7/32"), netip.MustParsePrefix("2001:db8::1/128")}},
		{[]string{"db.example.com:5432", "10.0.0.7:5432", "localhost:8080"}, []uint16{5432, 8080},
			[]netip.Prefix{NamesPrefix, netip.MustParsePrefix("10.0.0.7/32")}},
		// An address of NamesPrefix is on the loopback with the prefix,
		// and on its own without it.
		{[]string{"198.18.0.9:80", "a.example.com"}, []uint16{80, 443}, names},
		{[]string{"198.18.0.9:80"}, []uint16{80}, []netip.Prefix{netip.MustParsePrefix("198.18.0.9/32")}},
	} {
		t.Run(strings.Join(tt.grants, ","), func(t *testing.T) {
			p, err := New(Config{Grants: grants(t, tt.grants...)})
			if err != nil {
				t.Fatal(err)
			}
			ports, addrs := p.Direct()
			if !slices.Equal(ports, tt.ports) || !slices.Equal(addrs, tt.addrs) {
				t.Errorf("Direct() = %v, %v; want %v, %v", ports, addrs, tt.ports, tt.addrs)
			}
		})
	}
}

// dnsQuery returns a query of id for name and typ, with RD set.
func dnsQuery(t testing.TB, id uint16, name string, typ dnsmessage.Type) []byte {
	t.Helper()
	if !strings.HasSuffix(name, ".") {
		name += "."
	}
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: id, RecursionDesired: true})
	b.StartQuestions()
	if err := b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName(name), Type: typ, Class: dnsmessage.ClassINET}); err != nil {
		t.Fatal(err)
	}
	msg, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

// dnsReply is a parsed answer of the stub resolver.
type dnsReply struct {
	h       dnsmessage.Header
	q       []dnsmessage.Question
	answers []dnsmessage.Resource
}

func parseReply(b []byte) (dnsReply, error) {
	var p dnsmessage.Parser
	var r dnsReply
	var err error
	if r.h, err = p.Start(b); err != nil {
		return r, err
	}
	if r.q, err = p.AllQuestions(); err != nil {
		return r, err
	}
	r.answers, err = p.AllAnswers()
	return r, err
}

// a returns the address of the one A record of r, if it has one.
func (r dnsReply) a() (netip.Addr, bool) {
	if len(r.answers) != 1 {
		return netip.Addr{}, false
	}
	if a, ok := r.answers[0].Body.(*dnsmessage.AResource); ok {
		return netip.AddrFrom4(a.A), true
	}
	return netip.Addr{}, false
}

// askUDP sends q to the stub resolver at addr and returns its answer, or
// an error when none comes within wait.
func askUDP(addr string, q []byte, wait time.Duration) ([]byte, error) {
	c, err := net.Dial("udp", addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(wait))
	if _, err := c.Write(q); err != nil {
		return nil, err
	}
	buf := make([]byte, 2048)
	n, err := c.Read(buf)
	return buf[:n], err
}

// askStream sends q over c, a TCP connection to the stub resolver, and
// returns its answer.
func askStream(c net.Conn, q []byte) ([]byte, error) {
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write(append(binary.BigEndian.AppendUint16(nil, uint16(len(q))), q...)); err != nil {
		return nil, err
	}
	var n [2]byte
	if _, err := io.ReadFull(c, n[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint16(n[:]))
	_, err := io.ReadFull(c, b)
	return b, err
}

// direct is a Proxy serving ServeDirect on loopback sockets.
type direct struct {
	p       *Proxy
	udp     string         // the stub resolver's UDP address
	stream  string         // its TCP address
	tcp     *localListener // the direct listener
	refused func() []Refusal
	dialed  func() []string
	stop    func() // closes the listeners and waits for ServeDirect
}

// startDirect serves ServeDirect for cfg. Each of adjust is applied to the
// Proxy before it serves. When cfg.Dial is nil, every dial goes to the
// loopback port echo (a connection that does not look like one to the
// host, so that its addresses stand for the public ones dialed).
func startDirect(t testing.TB, cfg Config, echo uint16, adjust ...func(*Proxy)) *direct {
	t.Helper()
	var mu sync.Mutex
	var refused []Refusal
	var dialed []string
	cfg.Refused = func(r Refusal) {
		mu.Lock()
		refused = append(refused, r)
		mu.Unlock()
	}
	if cfg.Dial == nil {
		cfg.Dial = func(ctx context.Context, network, address string) (net.Conn, error) {
			mu.Lock()
			dialed = append(dialed, address)
			mu.Unlock()
			c, err := (&net.Dialer{}).DialContext(ctx, network, fmt.Sprintf("127.0.0.1:%d", echo))
			if err != nil {
				return nil, err
			}
			return farConn{c}, nil
		}
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range adjust {
		f(p)
	}
	d := &direct{p: p, refused: func() []Refusal {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(refused)
	}, dialed: func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(dialed)
	}}
	d.stop = d.serve(t)
	t.Cleanup(d.stop)
	return d
}

// serve starts ServeDirect on new loopback sockets and returns what stops
// it.
func (d *direct) serve(t testing.TB) func() {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ds, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d.udp, d.stream = pc.LocalAddr().String(), ds.Addr().String()
	d.tcp = &localListener{Listener: l, local: make(map[int]netip.AddrPort)}
	d.tcp.cond = sync.NewCond(&d.tcp.mu)
	done := make(chan error, 1)
	go func() { done <- d.p.ServeDirect([]net.Listener{d.tcp}, pc, ds) }()
	var once sync.Once
	return func() {
		once.Do(func() {
			pc.Close()
			ds.Close()
			l.Close()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("ServeDirect: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Error("ServeDirect did not return 10 s after its listeners closed")
			}
		})
	}
}

// lookup asks the stub resolver of d for name's address over UDP.
func (d *direct) lookup(t testing.TB, name string) netip.Addr {
	t.Helper()
	b, err := askUDP(d.udp, dnsQuery(t, 7, name, dnsmessage.TypeA), 5*time.Second)
	if err != nil {
		t.Fatalf("looking up %s: %v", name, err)
	}
	r, err := parseReply(b)
	if err != nil {
		t.Fatalf("the answer for %s: %v", name, err)
	}
	a, ok := r.a()
	if !ok {
		t.Fatalf("the answer for %s: %+v, want one A record", name, r)
	}
	return a
}

// farConn is a connection whose addresses are not IP addresses, as a
// connection to a far host looks to checkNotSelf.
type farConn struct{ net.Conn }

func (farConn) RemoteAddr() net.Addr { return fakeAddr{} }
func (farConn) LocalAddr() net.Addr  { return fakeAddr{} }
func (c farConn) CloseWrite() error  { return c.Conn.(*net.TCPConn).CloseWrite() }

type fakeAddr struct{}

func (fakeAddr) Network() string { return "tcp" }
func (fakeAddr) String() string  { return "far" }

// localListener presents each connection as made to the address the test
// dialing it chose, as in the server's namespace, where the listener is
// at every address: the production code reads only LocalAddr.
type localListener struct {
	net.Listener
	mu    sync.Mutex
	cond  *sync.Cond
	local map[int]netip.AddrPort // by the client's port
}

func (l *localListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &localConn{TCPConn: c.(*net.TCPConn), l: l}, nil
}

// dial connects to l as a connection to dst.
func (l *localListener) dial(t testing.TB, dst netip.AddrPort) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	l.local[c.LocalAddr().(*net.TCPAddr).Port] = dst
	l.cond.Broadcast()
	l.mu.Unlock()
	return c
}

type localConn struct {
	*net.TCPConn
	l *localListener
}

func (c *localConn) LocalAddr() net.Addr {
	port := c.RemoteAddr().(*net.TCPAddr).Port
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	for {
		if ap, ok := c.l.local[port]; ok {
			return net.TCPAddrFromAddrPort(ap)
		}
		c.l.cond.Wait()
	}
}

// startEcho serves an echo on a loopback port.
func startEcho(t testing.TB) uint16 {
	return serveLoopback(t, func(c net.Conn) { io.Copy(c, c) })
}

// roundTrip writes msg on c and reads it back; it returns what it read
// and the error that stopped it.
func roundTrip(c net.Conn, msg string) (string, error) {
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, msg); err != nil {
		return "", err
	}
	b := make([]byte, len(msg))
	n, err := io.ReadFull(c, b)
	return string(b[:n]), err
}

// refusalsOf returns the refusals of host.
func refusalsOf(rs []Refusal, host string) []Refusal {
	var out []Refusal
	for _, r := range rs {
		if r.Host == host {
			out = append(out, r)
		}
	}
	return out
}

func TestDNS(t *testing.T) {
	d := startDirect(t, Config{Grants: grants(t, "api.example.com", "db.example.com:5432", "*.wild.example", "localhost:8080", "10.0.0.7:80")}, 1)
	viaTCP := func(t *testing.T, q []byte) ([]byte, error) {
		c, err := net.Dial("tcp", d.stream)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return askStream(c, q)
	}
	seen := map[string]netip.Addr{} // the address each name was given
	for _, tr := range []struct {
		name string
		ask  func(*testing.T, []byte) ([]byte, error)
	}{
		{"udp", func(t *testing.T, q []byte) ([]byte, error) { return askUDP(d.udp, q, 5*time.Second) }},
		{"tcp", viaTCP},
	} {
		t.Run(tr.name, func(t *testing.T) {
			for _, tt := range []struct {
				name  string
				typ   dnsmessage.Type
				rcode dnsmessage.RCode
				addr  string // "names": an address of NamesPrefix; "" no answer
			}{
				{"api.example.com", dnsmessage.TypeA, dnsmessage.RCodeSuccess, "names"},
				{"API.Example.COM.", dnsmessage.TypeA, dnsmessage.RCodeSuccess, "names"},
				{"db.example.com", dnsmessage.TypeA, dnsmessage.RCodeSuccess, "names"},
				{"a.wild.example", dnsmessage.TypeA, dnsmessage.RCodeSuccess, "names"},
				{"b.c.wild.example", dnsmessage.TypeA, dnsmessage.RCodeSuccess, "names"},
				{"api.example.com", dnsmessage.TypeAAAA, dnsmessage.RCodeSuccess, ""},
				{"api.example.com", dnsmessage.TypeMX, dnsmessage.RCodeSuccess, ""},
				{"api.example.com", dnsmessage.TypeTXT, dnsmessage.RCodeSuccess, ""},
				{"localhost", dnsmessage.TypeA, dnsmessage.RCodeSuccess, "127.0.0.1"},
				{"localhost", dnsmessage.TypeAAAA, dnsmessage.RCodeSuccess, "::1"},
				{"db.localhost", dnsmessage.TypeA, dnsmessage.RCodeSuccess, "127.0.0.1"},
				{"wild.example", dnsmessage.TypeA, dnsmessage.RCodeNameError, ""}, // a wildcard does not match itself
				{"evil.example.net", dnsmessage.TypeA, dnsmessage.RCodeNameError, ""},
				{"evil.example.net", dnsmessage.TypeAAAA, dnsmessage.RCodeNameError, ""},
				{"x.api.example.com", dnsmessage.TypeA, dnsmessage.RCodeNameError, ""},
				{"10.0.0.7", dnsmessage.TypeA, dnsmessage.RCodeNameError, ""},
				{"1.0.0.10.in-addr.arpa", dnsmessage.TypePTR, dnsmessage.RCodeNameError, ""},
			} {
				q := dnsQuery(t, 0x1234, tt.name, tt.typ)
				b, err := tr.ask(t, q)
				if err != nil {
					t.Fatalf("%s %v: %v", tt.name, tt.typ, err)
				}
				r, err := parseReply(b)
				if err != nil {
					t.Fatalf("%s %v: the answer does not parse: %v", tt.name, tt.typ, err)
				}
				want := dnsmessage.Header{ID: 0x1234, Response: true, Authoritative: true, RecursionDesired: true, RecursionAvailable: true, RCode: tt.rcode}
				if r.h != want {
					t.Errorf("%s %v: header %+v, want %+v", tt.name, tt.typ, r.h, want)
				}
				if len(r.q) != 1 || r.q[0].Name.String() != strings.TrimSuffix(tt.name, ".")+"." || r.q[0].Type != tt.typ {
					t.Errorf("%s %v: question %v, want the query's", tt.name, tt.typ, r.q)
				}
				switch tt.addr {
				case "":
					if len(r.answers) != 0 {
						t.Errorf("%s %v: answers %v, want none", tt.name, tt.typ, r.answers)
					}
				case "names":
					a, ok := r.a()
					if !ok || !NamesPrefix.Contains(a) || a.Compare(firstName) < 0 || r.answers[0].Header.TTL != nameTTL {
						t.Fatalf("%s: answers %v, want one A of %v from %v", tt.name, r.answers, NamesPrefix, firstName)
					}
					key := strings.ToLower(strings.TrimSuffix(tt.name, "."))
					if prev, ok := seen[key]; ok && prev != a {
						t.Errorf("%s: %v, and %v before", tt.name, a, prev)
					}
					for other, b := range seen {
						if other != key && b == a {
							t.Errorf("%s and %s both have %v", tt.name, other, a)
						}
					}
					seen[key] = a
				default:
					var got string
					if len(r.answers) == 1 {
						switch body := r.answers[0].Body.(type) {
						case *dnsmessage.AResource:
							got = netip.AddrFrom4(body.A).String()
						case *dnsmessage.AAAAResource:
							got = netip.AddrFrom16(body.AAAA).String()
						}
					}
					if got != tt.addr {
						t.Errorf("%s %v: answers %v, want %s", tt.name, tt.typ, r.answers, tt.addr)
					}
				}
			}
		})
	}
	if len(seen) != 4 {
		t.Errorf("names given addresses: %v, want 4", seen)
	}
	// Refused names are reported once each, whatever the transport and
	// type, with the grant that would let them through.
	rs := d.refused()
	for name, grant := range map[string]string{
		"evil.example.net":      "evil.example.net",
		"wild.example":          "wild.example",
		"x.api.example.com":     "x.api.example.com",
		"10.0.0.7":              "",
		"1.0.0.10.in-addr.arpa": "",
	} {
		r := refusalsOf(rs, name)
		if len(r) != 1 || r[0].Port != 0 || r[0].Grant != grant || !strings.Contains(r[0].Reason, "not in the server's network grant") {
			t.Errorf("refusals of %s: %+v, want one of port 0 suggesting %q", name, r, grant)
		}
	}
	if len(rs) != 5 {
		t.Errorf("refusals %+v, want 5", rs)
	}
}

const noAnswer dnsmessage.RCode = 0xffff

// TestDNSBad: what is not a standard query of one question of class IN.
func TestDNSBad(t *testing.T) {
	d := startDirect(t, Config{Grants: grants(t, "api.example.com")}, 1)
	good := dnsQuery(t, 0x4242, "api.example.com", dnsmessage.TypeA)
	build := func(h dnsmessage.Header, qs ...dnsmessage.Question) []byte {
		b := dnsmessage.NewBuilder(nil, h)
		b.StartQuestions()
		for _, q := range qs {
			b.Question(q)
		}
		msg, err := b.Finish()
		if err != nil {
			t.Fatal(err)
		}
		return msg
	}
	q := dnsmessage.Question{Name: dnsmessage.MustNewName("api.example.com."), Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET}
	chaos := q
	chaos.Class = dnsmessage.ClassCHAOS
	for _, tt := range []struct {
		name  string
		query []byte
		rcode dnsmessage.RCode // noAnswer: dropped
		qs    int              // questions in the answer
	}{
		{"empty", nil, noAnswer, 0},
		{"short header", good[:11], noAnswer, 0},
		{"a response", build(dnsmessage.Header{ID: 1, Response: true}, q), noAnswer, 0},
		{"no question", good[:12:12], dnsmessage.RCodeFormatError, 0}, // QDCOUNT 1, and no bytes
		{"zero questions", build(dnsmessage.Header{ID: 2}), dnsmessage.RCodeFormatError, 0},
		{"two questions", build(dnsmessage.Header{ID: 3}, q, q), dnsmessage.RCodeFormatError, 0},
		{"cut question", good[:len(good)-3], dnsmessage.RCodeFormatError, 0},
		{"bad name", append(good[:12:12], 0x80, 0, 0, 1, 0, 1), dnsmessage.RCodeFormatError, 0},
		{"opcode status", build(dnsmessage.Header{ID: 4, OpCode: 2}, q), dnsmessage.RCodeNotImplemented, 0},
		{"class chaos", build(dnsmessage.Header{ID: 5}, chaos), dnsmessage.RCodeNotImplemented, 1},
		{"http", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), dnsmessage.RCodeNotImplemented, 0}, // opcode 10
		{"garbage", []byte("\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x3f\xff\xfe"), dnsmessage.RCodeFormatError, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b, err := askUDP(d.udp, tt.query, 300*time.Millisecond)
			if tt.rcode == noAnswer {
				if err == nil {
					t.Fatalf("answered %x, want no answer", b)
				}
				if r := d.p.AnswerDNS(tt.query); r != nil {
					t.Fatalf("AnswerDNS = %x, want nil", r)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			r, err := parseReply(b)
			if err != nil {
				t.Fatalf("the answer does not parse: %v", err)
			}
			if r.h.ID != binary.BigEndian.Uint16(tt.query) || !r.h.Response || r.h.RCode != tt.rcode || len(r.q) != tt.qs || len(r.answers) != 0 {
				t.Errorf("answer %+v, want ID %x and %v with %d questions", r, tt.query[:2], tt.rcode, tt.qs)
			}
		})
	}
	// The stub resolver still answers.
	if a := d.lookup(t, "api.example.com"); a != firstName {
		t.Errorf("api.example.com is %v, want %v", a, firstName)
	}
	if r := d.refused(); len(r) != 0 {
		t.Errorf("refusals %+v, want none", r)
	}
}

// TestDNSStreamBounds: the TCP connections to the stub resolver are bounded
// in number and in message size, and a connection asks many queries.
func TestDNSStreamBounds(t *testing.T) {
	d := startDirect(t, Config{Grants: grants(t, "api.example.com")}, 1)
	var held []net.Conn
	for i := range MaxDNSStreams {
		c, err := net.Dial("tcp", d.stream)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		held = append(held, c)
		for j := range 3 {
			b, err := askStream(c, dnsQuery(t, uint16(i*10+j), "api.example.com", dnsmessage.TypeA))
			if err != nil {
				t.Fatalf("connection %d, query %d: %v", i, j, err)
			}
			if r, err := parseReply(b); err != nil || r.h.ID != uint16(i*10+j) {
				t.Fatalf("connection %d, query %d: %+v %v", i, j, r, err)
			}
		}
	}
	// One more is closed at once.
	c, err := net.Dial("tcp", d.stream)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := askStream(c, dnsQuery(t, 1, "api.example.com", dnsmessage.TypeA)); err == nil {
		t.Errorf("connection %d was answered %x, want it closed", MaxDNSStreams+1, b)
	}
	c.Close()
	// A message longer than the bound closes its connection, and frees
	// its place.
	c = held[0]
	c.SetDeadline(time.Now().Add(5 * time.Second))
	c.Write(binary.BigEndian.AppendUint16(nil, MaxDNSMessage+1))
	if n, err := c.Read(make([]byte, 1)); err == nil {
		t.Errorf("after a message of %d bytes the connection read %d bytes, want it closed", MaxDNSMessage+1, n)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		c, err := net.Dial("tcp", d.stream)
		if err != nil {
			t.Fatal(err)
		}
		_, err = askStream(c, dnsQuery(t, 1, "api.example.com", dnsmessage.TypeA))
		c.Close()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no place for a new connection after one was closed")
		}
	}
}

func TestDNSMaxNames(t *testing.T) {
	d := startDirect(t, Config{Grants: grants(t, "*.example.com")}, 1, func(p *Proxy) { p.names.max = 3 })
	var addrs []netip.Addr
	for i := range 3 {
		addrs = append(addrs, d.lookup(t, fmt.Sprintf("n%d.example.com", i)))
	}
	if want := []netip.Addr{firstName, firstName.Next(), firstName.Next().Next()}; !slices.Equal(addrs, want) {
		t.Errorf("addresses %v, want %v", addrs, want)
	}
	for i := range 2 {
		b, err := askUDP(d.udp, dnsQuery(t, 9, fmt.Sprintf("more%d.example.com", i), dnsmessage.TypeA), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if r, err := parseReply(b); err != nil || r.h.RCode != dnsmessage.RCodeServerFailure || len(r.answers) != 0 {
			t.Errorf("a name past the bound: %+v %v, want SERVFAIL", r, err)
		}
	}
	// The names in the table keep their addresses.
	if a := d.lookup(t, "n1.example.com"); a != addrs[1] {
		t.Errorf("n1.example.com is %v after the bound, was %v", a, addrs[1])
	}
	rs := d.refused()
	if len(rs) != 1 || rs[0].Host != "" || !strings.Contains(rs[0].Reason, "more than 3 granted names") {
		t.Errorf("refusals %+v, want one saying the bound of 3 names was hit", rs)
	}
}

// TestNamesTable: addresses are handed out in order from 198.18.0.2,
// skipping an address an address grant names, and never the last of the
// range.
func TestNamesTable(t *testing.T) {
	var n names
	n.init(grants(t, "198.18.0.3:80", "198.19.255.254:80"))
	n.max = 1 << 20
	want := []string{"198.18.0.2", "198.18.0.4", "198.18.0.5"}
	for i, w := range want {
		if a, ok := n.addr(fmt.Sprint(i)); !ok || a.String() != w {
			t.Errorf("name %d: %v %v, want %s", i, a, ok, w)
		}
	}
	all := 3
	var last netip.Addr
	for ; ; all++ {
		a, ok := n.addr(fmt.Sprint(all))
		if !ok {
			break
		}
		last = a
	}
	// 2^17 addresses less .0, .1, the two granted and the broadcast one.
	if all != 1<<17-5 || last.String() != "198.19.255.253" {
		t.Errorf("%d names, the last at %v", all, last)
	}
	if name, ok := n.name(netip.MustParseAddr("198.18.0.4")); !ok || name != "1" {
		t.Errorf("198.18.0.4 is %q %v, want name 1", name, ok)
	}
	if _, ok := n.name(netip.MustParseAddr("198.18.0.3")); ok {
		t.Error("the granted 198.18.0.3 was handed out")
	}
}

// TestServeDirect: a connection the server makes directly reaches what
// the grants allow, checked as CONNECT is.
func TestServeDirect(t *testing.T) {
	echo := startEcho(t)
	local := startEcho(t) // the host's local service of a localhost grant
	public := netip.MustParseAddr("93.184.215.14")
	res := &fakeResolver{names: map[string][]netip.Addr{
		"api.example.com":      {public},
		"internal.example.com": {netip.MustParseAddr("10.0.0.7")},
	}}
	var mu sync.Mutex
	var dialed []string
	dial := func(ctx context.Context, network, address string) (net.Conn, error) {
		mu.Lock()
		dialed = append(dialed, address)
		mu.Unlock()
		if strings.HasPrefix(address, "127.0.0.1:") {
			return (&net.Dialer{}).DialContext(ctx, network, address)
		}
		c, err := (&net.Dialer{}).DialContext(ctx, network, fmt.Sprintf("127.0.0.1:%d", echo))
		if err != nil {
			return nil, err
		}
		return farConn{c}, nil
	}
	d := startDirect(t, Config{
		Grants:   grants(t, "api.example.com:8443", "internal.example.com:8443", fmt.Sprintf("localhost:%d", local)),
		Resolver: res,
		Dial:     dial,
		MaxConns: 3,
	}, 0)
	api := d.lookup(t, "api.example.com")
	internal := d.lookup(t, "internal.example.com")
	never := netip.MustParseAddr("198.18.7.7")
	for _, tt := range []struct {
		name string
		dst  netip.AddrPort
		ok   bool
		dial string // what is dialed, if anything
	}{
		{"a granted name's address", netip.AddrPortFrom(api, 8443), true, "93.184.215.14:8443"},
		{"its v4-in-v6 form", netip.AddrPortFrom(netip.AddrFrom16(api.As16()), 8443), true, "93.184.215.14:8443"},
		{"a port not granted", netip.AddrPortFrom(api, 443), false, ""},
		{"an address never handed out", netip.AddrPortFrom(never, 8443), false, ""},
		{"the loopback's own", netip.AddrPortFrom(netip.MustParseAddr("198.18.0.1"), 8443), false, ""},
		{"a granted name of a private address", netip.AddrPortFrom(internal, 8443), false, ""},
		{"localhost by 127.0.0.1", netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), local), true, fmt.Sprintf("127.0.0.1:%d", local)},
		{"127.0.0.1 at another port", netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), 8443), false, ""},
		{"an address not granted", netip.AddrPortFrom(public, 8443), false, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			mu.Lock()
			dialed = nil
			mu.Unlock()
			c := d.tcp.dial(t, tt.dst)
			defer c.Close()
			got, err := roundTrip(c, "hello")
			if tt.ok && (err != nil || got != "hello") {
				t.Errorf("echo %q %v, want hello", got, err)
			}
			if !tt.ok && (err == nil || got != "") {
				t.Errorf("read %q %v, want the connection closed without a byte", got, err)
			}
			mu.Lock()
			defer mu.Unlock()
			if tt.dial == "" && len(dialed) != 0 || tt.dial != "" && !slices.Equal(dialed, []string{tt.dial}) {
				t.Errorf("dialed %v, want %q", dialed, tt.dial)
			}
		})
	}
	rs := d.refused()
	for _, want := range []Refusal{
		{Host: "api.example.com", Port: 443, Grant: "api.example.com"},
		{Host: never.String(), Port: 8443, Reason: "never handed out"},
		{Host: "198.18.0.1", Port: 8443, Reason: "never handed out"},
		{Host: "internal.example.com", Port: 8443, Grant: "10.0.0.7:8443"},
		// A loopback address is dialled as localhost (127.0.0.1, then ::1).
		{Host: "localhost", Port: 8443, Grant: "localhost:8443"},
		{Host: public.String(), Port: 8443, Grant: public.String() + ":8443"},
	} {
		r := refusalsOf(rs, want.Host)
		if len(r) != 1 || r[0].Port != want.Port || r[0].Grant != want.Grant || !strings.Contains(r[0].Reason, want.Reason) {
			t.Errorf("refusals of %s: %+v, want one like %+v", want.Host, r, want)
		}
	}

	// The connection bound counts direct connections; one more is closed
	// without a byte (no HTTP 503), and reported once.
	waitClosed(t, d.p)
	var held []net.Conn
	for range 3 {
		c := d.tcp.dial(t, netip.AddrPortFrom(api, 8443))
		defer c.Close()
		if got, err := roundTrip(c, "x"); err != nil || got != "x" {
			t.Fatalf("held connection: %q %v", got, err)
		}
		held = append(held, c)
	}
	for range 2 {
		c := d.tcp.dial(t, netip.AddrPortFrom(api, 8443))
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if b, err := io.ReadAll(c); err != nil || len(b) != 0 {
			t.Errorf("a connection over the bound read %q %v, want it closed without a byte", b, err)
		}
		c.Close()
	}
	n := 0
	for _, r := range d.refused() {
		if r.Host == "" && strings.Contains(r.Reason, "more than 3 connections") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the connection bound was reported %d times, want once: %+v", n, d.refused())
	}
	// Closing the listeners closes the held connections.
	d.stop()
	for i, c := range held {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil || isTimeout(err) {
			t.Errorf("held connection %d still open after ServeDirect returned: %v", i, err)
		}
	}
	waitClosed(t, d.p)
}

// TestProxyNamesAddress: the HTTP proxy vets an address the stub resolver
// handed out as its name, and refuses one it never handed out.
func TestProxyNamesAddress(t *testing.T) {
	o := startOrigin(t, "origin")
	res := &fakeResolver{names: map[string][]netip.Addr{"api.example.com": {netip.MustParseAddr("93.184.215.14")}}}
	var mu sync.Mutex
	var dialed []string
	dial := func(ctx context.Context, network, address string) (net.Conn, error) {
		mu.Lock()
		dialed = append(dialed, address)
		mu.Unlock()
		c, err := (&net.Dialer{}).DialContext(ctx, network, o.addr)
		if err != nil {
			return nil, err
		}
		return farConn{c}, nil
	}
	var p *Proxy
	addr, refused := startProxy(t, Config{Grants: grants(t, "api.example.com"), Resolver: res, Dial: dial}, func(q *Proxy) { p = q })
	a, ok := p.names.addr("api.example.com")
	if !ok {
		t.Fatal("no address for api.example.com")
	}
	target := netip.AddrPortFrom(a, 443).String()
	if code, body := connect(t, addr, target); code != 200 || !strings.HasPrefix(body, "origin "+target) {
		t.Errorf("CONNECT %s: %d %q, want 200 from the origin", target, code, body)
	}
	if code, body := get(t, addr, "http://"+a.String()+"/x"); code != 200 || body != "origin "+a.String()+" /x" {
		t.Errorf("GET http://%s/x: %d %q", a, code, body)
	}
	connectStatus(t, addr, netip.AddrPortFrom(a, 8443).String(), 403)
	connectStatus(t, addr, "198.18.0.200:443", 403)
	connectStatus(t, addr, "[::ffff:198.18.0.201]:443", 403)
	mu.Lock()
	if !slices.Equal(dialed, []string{"93.184.215.14:443", "93.184.215.14:80"}) {
		t.Errorf("dialed %v, want the name's address", dialed)
	}
	mu.Unlock()
	rs := refused()
	if r := refusalsOf(rs, "api.example.com"); len(r) != 1 || r[0].Port != 8443 || r[0].Grant != "api.example.com:8443" {
		t.Errorf("refusals of api.example.com: %+v, want one of port 8443", r)
	}
	for _, h := range []string{"198.18.0.200", "198.18.0.201"} {
		if r := refusalsOf(rs, h); len(r) != 1 || r[0].Port != 443 || r[0].Grant != "" || !strings.Contains(r[0].Reason, "never handed out") {
			t.Errorf("refusals of %s: %+v, want one saying it was never handed out", h, r)
		}
	}
}

// TestServeBoth: Serve and ServeDirect at once, many clients of each at
// once, then closed, then again (a restarted server), with the names
// table kept.
func TestServeBoth(t *testing.T) {
	echo := startEcho(t)
	res := &fakeResolver{names: map[string][]netip.Addr{}}
	for i := range 8 {
		res.names[fmt.Sprintf("n%d.example.com", i)] = []netip.Addr{netip.AddrFrom4([4]byte{93, 184, 215, byte(i)})}
	}
	d := startDirect(t, Config{Grants: grants(t, "*.example.com:7000"), Resolver: res, MaxConns: 500}, echo)
	var first map[string]netip.Addr
	for round := range 3 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		served := make(chan error, 1)
		go func() { served <- d.p.Serve(l) }()
		got := make(map[string]netip.Addr)
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range 40 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				name := fmt.Sprintf("n%d.example.com", i%8)
				var b []byte
				var err error
				q := dnsQuery(t, uint16(i), name, dnsmessage.TypeA)
				if i%4 != 1 { // fewer TCP connections at once than MaxDNSStreams
					b, err = askUDP(d.udp, q, 5*time.Second)
				} else {
					var c net.Conn
					if c, err = net.Dial("tcp", d.stream); err == nil {
						b, err = askStream(c, q)
						c.Close()
					}
				}
				if err != nil {
					t.Errorf("looking up %s: %v", name, err)
					return
				}
				r, err := parseReply(b)
				a, ok := r.a()
				if err != nil || !ok || r.h.ID != uint16(i) {
					t.Errorf("the answer for %s: %+v %v", name, r, err)
					return
				}
				mu.Lock()
				if prev, ok := got[name]; ok && prev != a {
					t.Errorf("%s is %v and %v", name, a, prev)
				}
				got[name] = a
				mu.Unlock()
				c := d.tcp.dial(t, netip.AddrPortFrom(a, 7000))
				defer c.Close()
				msg := fmt.Sprintf("direct %d", i)
				if s, err := roundTrip(c, msg); err != nil || s != msg {
					t.Errorf("direct %s: %q %v", name, s, err)
				}
				// The same name through the HTTP proxy, by its address.
				p, err := tunnelTo(l.Addr().String(), netip.AddrPortFrom(a, 7000).String())
				if err != nil {
					t.Error(err)
					return
				}
				defer p.Close()
				if s, err := roundTrip(p, msg); err != nil || s != msg {
					t.Errorf("tunnel %s: %q %v", name, s, err)
				}
			}()
		}
		wg.Wait()
		if round == 0 {
			first = got
		} else if !maps(first, got) {
			t.Errorf("round %d: addresses %v, round 0: %v", round, got, first)
		}
		if rs := d.refused(); len(rs) != 0 {
			t.Errorf("refusals %+v", rs)
		}
		// A connection of each kind held open while both are closed.
		a := first["n0.example.com"]
		direct := d.tcp.dial(t, netip.AddrPortFrom(a, 7000))
		defer direct.Close()
		if s, err := roundTrip(direct, "held"); err != nil || s != "held" {
			t.Fatalf("held direct: %q %v", s, err)
		}
		tunnel, err := tunnelTo(l.Addr().String(), netip.AddrPortFrom(a, 7000).String())
		if err != nil {
			t.Fatal(err)
		}
		defer tunnel.Close()
		l.Close()
		d.stop()
		select {
		case err := <-served:
			if err != nil {
				t.Fatalf("Serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Serve did not return")
		}
		for _, c := range []net.Conn{direct, tunnel} {
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := c.Read(make([]byte, 1)); err == nil || isTimeout(err) {
				t.Errorf("a held connection is open after Serve and ServeDirect returned: %v", err)
			}
		}
		waitClosed(t, d.p)
		d.stop = d.serve(t)
		t.Cleanup(d.stop)
	}
}

// tunnelTo opens a CONNECT tunnel to target through the HTTP proxy at
// addr.
func tunnelTo(addr, target string) (net.Conn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	want := "HTTP/1.1 200 Connection established\r\n\r\n"
	head := make([]byte, len(want))
	if _, err := io.ReadFull(c, head); err != nil || string(head) != want {
		c.Close()
		return nil, fmt.Errorf("CONNECT %s: %q %v", target, head, err)
	}
	c.SetDeadline(time.Time{})
	return c, nil
}

// isTimeout reports whether err is a deadline's.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func maps(a, b map[string]netip.Addr) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestServeDirectAlone: ServeDirect ends while Serve keeps serving (and
// the other way round): each closes what it opened, not the other's.
func TestServeDirectAlone(t *testing.T) {
	echo := startEcho(t)
	res := &fakeResolver{names: map[string][]netip.Addr{"api.example.com": {netip.MustParseAddr("93.184.215.14")}}}
	d := startDirect(t, Config{Grants: grants(t, "api.example.com:7000"), Resolver: res}, echo)
	a := d.lookup(t, "api.example.com")
	target := netip.AddrPortFrom(a, 7000).String()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- d.p.Serve(l) }()
	tunnel, err := tunnelTo(l.Addr().String(), target)
	if err != nil {
		t.Fatal(err)
	}
	defer tunnel.Close()
	direct := d.tcp.dial(t, netip.AddrPortFrom(a, 7000))
	defer direct.Close()
	if s, err := roundTrip(direct, "d"); err != nil || s != "d" {
		t.Fatalf("direct: %q %v", s, err)
	}
	d.stop()
	direct.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := direct.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Errorf("the direct connection is open after ServeDirect returned: %v", err)
	}
	if s, err := roundTrip(tunnel, "still"); err != nil || s != "still" {
		t.Errorf("the tunnel after ServeDirect returned: %q %v", s, err)
	}
	// ServeDirect again; now Serve ends first.
	d.stop = d.serve(t)
	t.Cleanup(d.stop)
	direct = d.tcp.dial(t, netip.AddrPortFrom(a, 7000))
	defer direct.Close()
	l.Close()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return while ServeDirect serves")
	}
	tunnel.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := tunnel.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Errorf("the tunnel is open after Serve returned: %v", err)
	}
	if s, err := roundTrip(direct, "still"); err != nil || s != "still" {
		t.Errorf("the direct connection after Serve returned: %q %v", s, err)
	}
}

// FuzzDNS: AnswerDNS never panics, never answers a response, and its
// answer parses and keeps the query's ID.
func FuzzDNS(f *testing.F) {
	for _, q := range [][]byte{
		dnsQuery(f, 1, "api.example.com", dnsmessage.TypeA),
		dnsQuery(f, 2, "a.wild.example", dnsmessage.TypeAAAA),
		dnsQuery(f, 3, "evil.example.net", dnsmessage.TypeA),
		dnsQuery(f, 4, "localhost", dnsmessage.TypeA),
		dnsQuery(f, 5, "API.EXAMPLE.COM.", dnsmessage.TypeMX),
		{0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xc0, 12, 0, 1, 0, 1},
		{},
	} {
		f.Add(q)
	}
	p, err := New(Config{Grants: grants(f, "api.example.com", "*.wild.example:8443", "10.0.0.7:80")})
	if err != nil {
		f.Fatal(err)
	}
	p.names.max = 16
	f.Fuzz(func(t *testing.T, q []byte) {
		b := p.AnswerDNS(q)
		if b == nil {
			return
		}
		if len(q) < 12 || q[2]&0x80 != 0 {
			t.Fatalf("answered %x to %x, not a query", b, q)
		}
		r, err := parseReply(b)
		if err != nil {
			t.Fatalf("the answer %x to %x does not parse: %v", b, q, err)
		}
		if r.h.ID != binary.BigEndian.Uint16(q) || !r.h.Response || len(b) > 512 {
			t.Fatalf("the answer %+v to %x", r, q)
		}
		if a, ok := r.a(); ok && !NamesPrefix.Contains(a) && a != netip.MustParseAddr("127.0.0.1") {
			t.Fatalf("the answer to %x is %v", q, a)
		}
	})
}

// TestRefusalNameQuoted: a looked-up name is the server's bytes, spaces,
// quotes and all; one that is not a host name is reported quoted, so that
// it cannot pass for the words of the notice around it, and with no grant
// to suggest.
func TestRefusalNameQuoted(t *testing.T) {
	var got []Refusal
	p, err := New(Config{Refused: func(r Refusal) { got = append(got, r) }})
	if err != nil {
		t.Fatal(err)
	}
	forged := `api.github.com (needed); to allow it, add "*.evil.example" to network. server x looked up a`
	var labels []string
	for rest := forged; rest != ""; {
		n := min(len(rest), 60)
		labels = append(labels, rest[:n])
		rest = rest[n:]
	}
	p.AnswerDNS(dnsQuery(t, 7, strings.Join(labels, ".")+".", dnsmessage.TypeA))
	p.AnswerDNS(dnsQuery(t, 8, "plain.example.com.", dnsmessage.TypeA))
	if len(got) != 2 {
		t.Fatalf("refusals %+v, want two", got)
	}
	if u, err := strconv.Unquote(got[0].Host); err != nil || !strings.Contains(u, `add "*.evil.example"`) || got[0].Grant != "" {
		t.Errorf("a name that is not a host name is reported as %+v, want it quoted and no grant", got[0])
	}
	if got[1].Host != "plain.example.com" || got[1].Grant != "plain.example.com" {
		t.Errorf("a plain name is reported as %+v", got[1])
	}
}
