// Package egress gives a confined server the network by name: a per-server
// HTTP proxy that reaches only the destinations the server was granted.
//
//	grants := []egress.Grant{must(egress.ParseGrant("registry.npmjs.org"))}
//	p, err := egress.New(egress.Config{Grants: grants, Refused: notify})
//	go p.Serve(listener) // connections from the server only
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
// Config.Refused, naming the host and port the server asked for.
//
// # Bounds
//
// Per Proxy, that is per server, with Config's defaults (the constants
// below):
//
//   - 64 connections of the server at once; one more is answered 503.
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
//
// Memory: a connection costs the host at most about 0.5 MiB, the most
// being a header read up to its bound in one-byte fields, which net/http
// holds in about 20 times its size; so the proxy of one server holds at
// most about 32 MiB (64 connections), and the proxies of all servers
// together at most 32 MiB times the number of servers with a network
// grant. The Go collector may let the heap grow to twice what is live.
//
// What the sandbox adds (package sandbox): the server has no network of its
// own, only a loopback on which this proxy is the one listener it can reach.
package egress
