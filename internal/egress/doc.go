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
// name whose addresses are loopback, private, link-local or otherwise not
// public is refused unless the grant names that address and port
// explicitly: a name cannot be pointed at the host's own services (DNS
// rebinding). The proxy connects to the very addresses it vetted.
//
// Every refused destination is reported once per Proxy through
// Config.Refused, naming the host and port the server asked for. The bounds
// (connections at once, idle time, header size and time) are the constants
// below.
//
// What the sandbox adds (package sandbox): the server has no network of its
// own, only a loopback on which this proxy is the one listener it can reach.
package egress
