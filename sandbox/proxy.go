package sandbox

import (
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strconv"
	"strings"
)

// Proxy serves the connections a server makes to its proxy address, for a
// server that may reach the network only through it (Config.Proxy).
// *egress.Proxy is one; so, for plain forwarding, is *http.Server.
type Proxy interface {
	// Serve accepts and serves connections from l until l is closed,
	// then closes what it opened for them and returns.
	Serve(l net.Listener) error
}

// DirectProxy is a Proxy that also serves the clients that ignore the
// proxy variables (Node's fetch before 22.21, Go's net/http to localhost,
// Java, database drivers, SSH). For one, the sandbox makes the server's
// empty network namespace look like a network that leads to its grants and
// nowhere else:
//
//   - the prefixes of Direct are put on the namespace's loopback, so that
//     every address in them is local to the server;
//   - on each port of Direct the namespace listens on every one of its
//     addresses (one socket per port), so a connection to any of them, or
//     to 127.0.0.1 or ::1, is accepted, and reaches ServeDirect with the
//     address and port the server connected to as its LocalAddr;
//   - 127.0.0.1 is the namespace's one nameserver: its resolv.conf says so
//     (where the view has one; without one, every common resolver asks
//     127.0.0.1 anyway), and ServeDirect answers on UDP and TCP port 53
//     there;
//   - seccomp lets the server make UDP sockets too (nothing but that
//     nameserver listens for UDP in the namespace, which has no route out),
//     and Landlock (ABI 4+) lets it connect to the ports of Direct and to
//     53 as well as to ProxyPort.
//
// Ports 53 and ProxyPort cannot be among Direct's: they are the
// nameserver's and the proxy's own.
type DirectProxy interface {
	Proxy
	// Direct returns the TCP ports the namespace listens on for
	// ServeDirect, and the prefixes put on its loopback. It is called
	// once per Start and must return the same each time.
	Direct() (ports []uint16, addrs []netip.Prefix)
	// ServeDirect serves the sockets of one start of the server until
	// every one of them is closed: tcp, one listener per port of Direct in
	// Direct's order, whose connections are to the address and port of
	// their LocalAddr; dns, the nameserver's UDP socket at 127.0.0.1:53;
	// dnsStream, its TCP listener there. Then it closes what it opened for
	// them and returns. It may run at the same time as Serve.
	ServeDirect(tcp []net.Listener, dns net.PacketConn, dnsStream net.Listener) error
}

// Bounds of what a DirectProxy may ask of a namespace.
const (
	// maxDirectPorts bounds Direct's ports: every listening socket goes to
	// the host in one message, which carries at most 253 descriptors
	// (SCM_MAX_FD), three of them the proxy's and the nameserver's.
	maxDirectPorts = 200
	// maxDirectAddrs bounds Direct's prefixes.
	maxDirectAddrs = 256
	// dnsPort is the nameserver's port.
	dnsPort = 53
)

// stubResolvConf is the resolv.conf of a server with a DirectProxy: the
// nameserver in its namespace, no search domains (a name is asked as
// written), short timeouts (the answer is local).
const stubResolvConf = "# mcphost: names resolve to the server's network grants only\nnameserver 127.0.0.1\noptions timeout:2 attempts:2\n"

// directSpec is what the helper sets up for a DirectProxy.
type directSpec struct {
	// Ports are the TCP ports to listen on, on every address.
	Ports []int `json:"ports,omitempty"`
	// Addrs are the prefixes to put on the loopback ("198.18.0.0/15").
	Addrs []string `json:"addrs,omitempty"`
}

// newDirectSpec turns what d asks for into a directSpec, or says why it
// cannot be had.
func newDirectSpec(d DirectProxy) (*directSpec, error) {
	ports, addrs := d.Direct()
	ds := &directSpec{}
	seen := make(map[uint16]bool)
	for _, p := range ports {
		switch {
		case p == 0:
			return nil, fmt.Errorf("the network proxy asked for port 0")
		case p == dnsPort || p == ProxyPort:
			return nil, fmt.Errorf("the network proxy asked for port %d, the namespace's nameserver's or proxy's own", p)
		case seen[p]:
			continue
		}
		seen[p] = true
		ds.Ports = append(ds.Ports, int(p))
	}
	if len(ds.Ports) > maxDirectPorts {
		return nil, fmt.Errorf("the network grants name %d ports; at most %d can be reached directly", len(ds.Ports), maxDirectPorts)
	}
	if len(addrs) > maxDirectAddrs {
		return nil, fmt.Errorf("the network grants name %d addresses; at most %d can be reached directly", len(addrs), maxDirectAddrs)
	}
	for _, a := range addrs {
		if !a.IsValid() || a.Addr().Zone() != "" {
			return nil, fmt.Errorf("the network proxy asked for the prefix %v", a)
		}
		ds.Addrs = append(ds.Addrs, a.String())
	}
	return ds, nil
}

// check says what is wrong with a decoded directSpec.
func (d *directSpec) check() error {
	if len(d.Ports) > maxDirectPorts || len(d.Addrs) > maxDirectAddrs {
		return fmt.Errorf("%d ports and %d prefixes, more than %d and %d", len(d.Ports), len(d.Addrs), maxDirectPorts, maxDirectAddrs)
	}
	for _, p := range d.Ports {
		if p <= 0 || p > 65535 || p == dnsPort || p == ProxyPort {
			return fmt.Errorf("direct port %d", p)
		}
	}
	for _, a := range d.Addrs {
		if p, err := netip.ParsePrefix(a); err != nil || p.Addr().Zone() != "" {
			return fmt.Errorf("direct prefix %q", a)
		}
	}
	return nil
}

// ProxyPort is the port of the proxy address 127.0.0.1:ProxyPort in a
// proxied server's network namespace, the one TCP port it may connect to.
// It is the server's own loopback, so the number is the same for every
// server and clashes with nothing on the host.
const ProxyPort = 3128

// proxyURL is what the proxy variables of a proxied server say.
var proxyURL = "http://127.0.0.1:" + strconv.Itoa(ProxyPort)

// proxyVars are the variables set for a proxied server, so that the common
// runtimes send their traffic to the proxy: the upper and lower case
// HTTP_PROXY, HTTPS_PROXY and ALL_PROXY that curl, Python (urllib,
// requests, httpx), Go's net/http, Deno, Bun, git and most others read (curl
// reads http_proxy only in lower case), an empty NO_PROXY so that nothing
// inherited goes around the proxy, NODE_USE_ENV_PROXY for the fetch and
// http modules of Node 22.21, 24.5 and later, and npm's own proxy settings
// (npm reads HTTPS_PROXY too; these win over an .npmrc the server reads).
func proxyVars() map[string]string {
	v := make(map[string]string)
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"} {
		v[k] = proxyURL
		v[strings.ToLower(k)] = proxyURL
	}
	v["NO_PROXY"], v["no_proxy"] = "", ""
	v["NODE_USE_ENV_PROXY"] = "1"
	v["npm_config_proxy"] = proxyURL
	v["npm_config_https_proxy"] = proxyURL
	v["npm_config_noproxy"] = ""
	return v
}

// withProxyVars returns env (sorted "k=v" entries) with the proxy
// variables set, over whatever env said.
func withProxyVars(env []string) []string {
	set := proxyVars()
	out := make([]string, 0, len(env)+len(set))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; !ok {
			out = append(out, kv)
		}
	}
	for k, v := range set {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// netAccess is the network a server has.
type netAccess int

const (
	// netNone: an empty network namespace, unix sockets only.
	netNone netAccess = iota
	// netProxy: the empty namespace with the proxy on its loopback; TCP
	// to the proxy's port only.
	netProxy
	// netHost: the host's network.
	netHost
)

// access returns the network s gives its server.
func (s *spec) access() netAccess {
	switch {
	case s.Network:
		return netHost
	case s.Proxy != 0:
		return netProxy
	}
	return netNone
}
