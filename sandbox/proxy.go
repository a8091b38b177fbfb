package sandbox

import (
	"net"
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
