package egress

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
)

// NamesPrefix is the range the stub resolver hands out addresses of, one
// per granted name a server looks up: 198.18.0.0/15, set aside for
// benchmarking network devices (RFC 2544, RFC 5735). It is never routed
// on the internet and no host or API is served from it (the proxy counts
// it as not public, see isPublic), so an address of it stands for nothing
// but the name it was handed out for; Clash and Surge hand out "fake-ip"
// addresses from the same range for the same reason. In a server's
// network namespace the whole prefix is on the loopback, so a connection
// to any of its addresses is the host's to vet. Its first addresses are
// not handed out: 198.18.0.0 (the network's), and 198.18.0.1 (the
// loopback's own in the namespace).
var NamesPrefix = netip.MustParsePrefix("198.18.0.0/15")

// MaxNames bounds the names the stub resolver of one Proxy hands out
// addresses for. Past it, a lookup of a granted name not yet in the
// table is answered SERVFAIL, reported once (a Refusal with an empty
// Host); the names in the table keep their addresses.
const MaxNames = 4096

// The ports of the server's namespace that are not served directly: the
// stub resolver's (53) and the HTTP proxy's (3128, sandbox.ProxyPort). A
// grant of either port is reachable through the HTTP proxy only.
const (
	dnsPort   = 53
	proxyPort = 3128
)

// firstName is the first address the stub resolver hands out.
var firstName = netip.AddrFrom4([4]byte{198, 18, 0, 2})

// names is the stub resolver's table: a bijection of granted names and
// addresses of NamesPrefix, handed out in order from firstName. Its
// methods are safe for concurrent use.
type names struct {
	mu     sync.Mutex
	byName map[string]netip.Addr
	byAddr map[netip.Addr]string
	next   netip.Addr // the next address to hand out; invalid when none is left
	max    int        // MaxNames; tests lower it
	skip   []netip.Addr
}

// init readies the table for grants: an address of NamesPrefix that an
// address grant names is never handed out, being that address's own.
func (n *names) init(grants []Grant) {
	n.byName = make(map[string]netip.Addr)
	n.byAddr = make(map[netip.Addr]string)
	n.max = MaxNames
	for _, g := range grants {
		if g.Addr.IsValid() && NamesPrefix.Contains(g.Addr) {
			n.skip = append(n.skip, g.Addr)
		}
	}
	n.next = n.free(firstName)
}

// free returns the first address from a on that may be handed out, or the
// invalid address when none is left. The last address of NamesPrefix (its
// broadcast address) is never handed out.
func (n *names) free(a netip.Addr) netip.Addr {
	for ; NamesPrefix.Contains(a) && NamesPrefix.Contains(a.Next()); a = a.Next() {
		if !slices.Contains(n.skip, a) {
			return a
		}
	}
	return netip.Addr{}
}

// addr returns the address of name, handing the next one out when name
// has none yet; false when the table is full.
func (n *names) addr(name string) (netip.Addr, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if a, ok := n.byName[name]; ok {
		return a, true
	}
	if len(n.byName) >= n.max || !n.next.IsValid() {
		return netip.Addr{}, false
	}
	a := n.next
	n.next = n.free(a.Next())
	n.byName[name] = a
	n.byAddr[a] = name
	return a, true
}

// name returns the name a was handed out for.
func (n *names) name(a netip.Addr) (string, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	name, ok := n.byAddr[a]
	return name, ok
}

// Direct returns what the server's namespace must offer clients that
// ignore the proxy variables, for ServeDirect to serve: the ports to
// listen on at every address (sorted, each once: every port of a grant,
// 80 and 443 for a name grant without one; never 53 or 3128, the stub
// resolver's and the HTTP proxy's own, so a grant of those is reachable
// through the HTTP proxy only), and the addresses to put on the
// namespace's loopback: NamesPrefix when a grant names a name other than
// localhost (a wildcard included), and, as a single-address prefix, the
// address of each address grant of a port served directly, unless it is a
// loopback address (on the loopback already) or in NamesPrefix when that
// is returned. Both are empty for a Proxy without grants.
func (p *Proxy) Direct() (ports []uint16, addrs []netip.Prefix) {
	names := false
	for _, g := range p.cfg.Grants {
		names = names || g.isName()
		for _, port := range g.ports() {
			if port != dnsPort && port != proxyPort && !slices.Contains(ports, port) {
				ports = append(ports, port)
			}
		}
	}
	slices.Sort(ports)
	if names {
		addrs = append(addrs, NamesPrefix)
	}
	for _, g := range p.cfg.Grants {
		a := g.Addr
		if !a.IsValid() || a.IsLoopback() || names && NamesPrefix.Contains(a) || g.Port == dnsPort || g.Port == proxyPort {
			continue
		}
		if pfx := netip.PrefixFrom(a, a.BitLen()); !slices.Contains(addrs, pfx) {
			addrs = append(addrs, pfx)
		}
	}
	return ports, addrs
}

// ServeDirect serves, for clients that ignore the proxy variables, the
// listeners the server's namespace offers (see Direct): the connections
// of tcp, each to the destination it was made to (its local address: an
// address of NamesPrefix stands for the name the stub resolver handed it
// out for), with the very checks, reports and bounds of the HTTP proxy's
// CONNECT (a refused connection is closed without a byte; one over the
// connection bound, shared with Serve, too); and the stub resolver, on dns
// (UDP) and dnsStream (TCP, at most MaxDNSStreams connections at once, a
// message each DNSTimeout and of at most MaxDNSMessage bytes): see
// AnswerDNS. It serves until every one of them is closed (any may be nil
// or empty), then closes what it accepted or opened for them and returns
// nil once their goroutines are done. Other errors of Accept and ReadFrom
// are retried, after a pause of up to a second. ServeDirect may run at the
// same time as Serve, and be called again after it returned.
func (p *Proxy) ServeDirect(tcp []net.Listener, dns net.PacketConn, dnsStream net.Listener) error {
	s := &serving{}
	ctx, cancel := context.WithCancel(withServing(context.Background(), s))
	defer cancel()
	var loops, conns sync.WaitGroup // loops: accept and read loops; conns: what they started
	for _, l := range tcp {
		if l == nil {
			continue
		}
		loops.Add(1)
		go func() {
			defer loops.Done()
			acceptLoop(l, func(c net.Conn) {
				tc, ok := p.admit(c, s, false)
				if !ok {
					return
				}
				conns.Add(1)
				go func() {
					defer conns.Done()
					p.serveDirect(ctx, tc)
				}()
			})
		}()
	}
	if dns != nil {
		loops.Add(1)
		go func() {
			defer loops.Done()
			p.serveDNSPackets(dns)
		}()
	}
	if dnsStream != nil {
		loops.Add(1)
		go func() {
			defer loops.Done()
			p.serveDNSStream(dnsStream, s, &conns)
		}()
	}
	stop := make(chan struct{})
	conns.Add(1)
	go func() {
		defer conns.Done()
		p.watch(stop, s)
	}()
	loops.Wait()
	close(stop)
	p.closeServing(s)
	cancel() // dials under way for s give up
	conns.Wait()
	return nil
}

// serveDirect serves c, a connection the server made to a destination
// directly: it connects to c's local address and port as CONNECT would,
// and copies both ways; a destination refused, or one that does not
// answer, closes c without a byte.
func (p *Proxy) serveDirect(ctx context.Context, c *trackedConn) {
	defer c.Close()
	dst, ok := localAddrPort(c.LocalAddr())
	if !ok {
		return
	}
	host := dst.Addr().String()
	if dst.Addr().IsLoopback() && !p.addrGranted(dst.Addr(), dst.Port()) {
		// A client that looked up localhost in the namespace (which has
		// both loopbacks) may have got either, and picks ::1 first where
		// the host's own service listens on 127.0.0.1 only, or the other
		// way round: a localhost grant is for the host's loopback, so
		// it is dialled as localhost is, 127.0.0.1 and then ::1.
		host = "localhost"
	}
	ctx, cancel := context.WithTimeout(ctx, DialTimeout)
	up, err := p.open(ctx, host, dst.Port())
	cancel()
	if err != nil {
		return
	}
	defer up.Close()
	p.splice(c, c, up)
}

// localAddrPort returns the address and port of a connection's local
// address, unmapped; false when it has none (or port 0).
func localAddrPort(a net.Addr) (netip.AddrPort, bool) {
	var ap netip.AddrPort
	switch v := a.(type) {
	case nil:
		return ap, false
	case *net.TCPAddr:
		ap = v.AddrPort()
	default:
		var err error
		if ap, err = netip.ParseAddrPort(a.String()); err != nil {
			return ap, false
		}
	}
	ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	return ap, ap.Addr().IsValid() && ap.Port() != 0
}

// reportNamesFull reports, once per Proxy, that the table of names is full.
func (p *Proxy) reportNamesFull() {
	p.mu.Lock()
	first := !p.namesFull
	p.namesFull = true
	p.mu.Unlock()
	if first {
		p.report(Refusal{Reason: fmt.Sprintf("the server looked up more than %d granted names; the stub resolver answered the rest with a server failure (SERVFAIL)", p.names.max)})
	}
}
