// Package egress gives a confined server the network by name: a per-server
// proxy that reaches only the destinations the server was granted.
//
//	grants := []egress.Grant{must(egress.ParseGrant("registry.npmjs.org"))}
//	p, err := egress.New(egress.Config{Grants: grants, Refused: notify})
//	go p.Serve(listener) // connections from the server only
//	ports, addrs := p.Direct() // what the server's namespace must offer
//	go p.ServeDirect(tcp, dns, dnsStream) // the namespace's sockets for them
//
// A server has two ways to the same checks. The HTTP proxy (Serve) is for
// the clients that honour the proxy variables; the network by name
// (ServeDirect) is for those that do not (Node's fetch, Java, database
// drivers): the server's namespace answers DNS and accepts connections on
// the grants' ports at every address, and hands them to the Proxy. Either
// way a destination is vetted by the same code (grants, public addresses
// only for a name, none of the host's own), reported the same, and counted
// against the same connection bound.
//
// The stub resolver (AnswerDNS) resolves nothing and asks no one: a name a
// name grant matches, at any port, gets an address of NamesPrefix,
// 198.18.0.0/15 (the benchmarking range of RFC 2544: never routed and
// served from nowhere, so an address of it can mean nothing but the name;
// Clash's and Surge's "fake-ip" use the same range). It hands them out in
// order from 198.18.0.2, at most MaxNames (4096) per Proxy, and keeps them
// for the Proxy's life, restarts included. localhost and names under it
// are 127.0.0.1 and ::1; a granted name has no IPv6 address (its other
// types are answered empty), so clients use IPv4; any other name is
// NXDOMAIN, reported once. A direct connection's destination is the
// address it was made to: one of NamesPrefix stands for its name and is
// vetted as that name, at the port connected to, as CONNECT to the name
// would be (an address never handed out is refused), and so is CONNECT to
// that address through the HTTP proxy; another address is vetted as an
// address. The namespace's ports 53 and 3128 are the stub resolver's and
// the HTTP proxy's own: a grant of either port is reachable through the
// HTTP proxy only.
//
// The proxy speaks HTTP CONNECT (any protocol in a tunnel, TLS above all)
// and plain-HTTP forwarding of requests with absolute http:// URLs. Both are
// filtered by host and port. Names are resolved by the proxy, and only once
// a request for them is found granted, so a server cannot learn anything of
// a name it was not granted, nor leak data through the lookup. A granted
// name reaches only public addresses, and none of the host's own, unless
// the grant names that address and port explicitly: a name cannot be
// pointed at the host's own services (DNS rebinding). Public is an
// allowlist: IPv4 unicast and IPv6 global unicast (2000::/3), less the
// special-purpose ranges (private, shared 100.64/10, loopback, link-local,
// documentation, benchmarking, 192.0.0.0/24, IETF 2001::/23 with Teredo,
// multicast, reserved); a NAT64 (64:ff9b::/96) or 6to4 (2002::/16) address
// is as public as the IPv4 address it stands for. The host's own addresses
// are those of its interfaces, listed at each connection so that one added
// after start counts; the proxy drops them before connecting, and closes a
// connection that turns out to reach the host after all (its remote
// address is the host's, or the very address it came from); the NAT64 or
// 6to4 form of one of them is the host's too. The proxy connects to the
// very addresses it vetted. What it cannot know is an address that is the
// host's only through a router: a public address a cloud maps to the
// host's private one (1:1 NAT, hairpin), which is on no interface.
//
// Every refused destination is reported once per Proxy through
// Config.Refused, naming the host and port the server asked for; a name
// the stub resolver refused is reported once, with port 0. A refused
// direct connection is closed without a byte.
//
// # Bounds
//
// Per Proxy, that is per server, with Config's defaults (the constants
// below):
//
//   - 64 connections of the server at once, to the HTTP proxy and direct
//     ones together; one more is answered 503 (a direct one is closed).
//   - A connection carrying no byte either way for 2 minutes is closed.
//   - A request header must arrive within 10 s, in at most 16 KiB (and
//     net/http's 4 KiB of slack) and 256 field lines (431 past that).
//   - A forwarded response's header: at most 16 KiB and 256 field lines
//     (the request fails with 502, and the destination is reported once);
//     its trailer, net/http's 4 KiB.
//   - Nothing is buffered whole: a tunnel copies each direction through a
//     32 KiB buffer (256 KiB for the first four tunnels at once, for
//     speed), a forwarded body streams through 32 KiB, and the connections
//     net/http keeps to a host have 4 KiB buffers each way.
//   - The stub resolver: 4096 names (past that, SERVFAIL for a new name,
//     reported once); a query over UDP is read into 1232 bytes, an answer
//     is at most 512; over TCP, 16 connections at once (one more is
//     closed), each message within 10 s and of at most 4096 bytes, any
//     number of them on a connection. The table of names holds at most
//     about 2 MiB (4096 names of 253 bytes).
//
// Memory: a connection costs the host at most about 0.5 MiB, the most
// being a header read up to its bound in one-byte fields, which net/http
// holds in about 20 times its size; so the proxy of one server holds at
// most about 32 MiB (64 connections) and its table of names about 2 MiB
// more (1.7 MiB measured, TestNamesMemory), and the proxies of all
// servers together at most 34 MiB times the number of servers with a
// network grant. The Go collector may let the heap grow to twice what is live.
//
// What the sandbox adds (package sandbox): the server has no network of its
// own, only a loopback on which this proxy is the one listener it can
// reach, and with ServeDirect the prefixes of Direct on that loopback,
// listeners at every address on the ports of Direct, and the stub
// resolver at 127.0.0.1:53 as its one nameserver.
package egress
