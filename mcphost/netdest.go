package mcphost

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/mcphost/mcphost/internal/egress"
	"github.com/mcphost/mcphost/sandbox"
)

// netDest is a destination a server's own error names: the host or
// address:port it could not resolve or reach, so that a notice can say what
// to add to its network grant.
type netDest struct {
	// host is a lowercase DNS name without a trailing dot, or "" for an
	// address.
	host string
	// addr is the address, for an address.
	addr netip.Addr
	// port is the port the error names; 0 when it names none (a failed
	// lookup: any port of a granted name resolves).
	port uint16
}

// grant is the entry of a network list that lets d through, in the form
// egress.ParseGrant reads: a name alone when its port is 443 or 80 (or
// unknown), which the bare name grants.
func (d netDest) grant() string {
	if d.host != "" && (d.port == 0 || d.port == 443 || d.port == 80) {
		return d.host
	}
	return d.String()
}

// String is d as a notice shows it: "api.example.com",
// "api.example.com:8443", "127.0.0.1:5432", "[::1]:5432".
func (d netDest) String() string {
	h := d.host
	if h == "" {
		h = d.addr.String()
		if d.addr.Is6() {
			h = "[" + h + "]"
		}
	}
	if d.port == 0 {
		return h
	}
	return h + ":" + strconv.Itoa(int(d.port))
}

// covered reports whether grants let d through, as the proxy decides it
// (egress.Grant.Allows): for a failed lookup (no port), whether any grant
// names the name (the name then resolves); else whether one grants that
// name or address at that port.
func (d netDest) covered(grants []egress.Grant) bool {
	host := d.host
	if host == "" {
		host = d.addr.String()
	}
	for _, g := range grants {
		if g.Allows(host, d.port) {
			return true
		}
	}
	return false
}

// maxNetDests bounds the destinations networkDests returns.
const maxNetDests = 4

// destFinders find, in one line of a runtime's error, the destination it
// names; the first group is a host, a host:port or an address:port, the
// second, if any, a port. They are compiled on first use, as are the
// other patterns that read a server's stderr: only a failed start reads
// it, and compiling them all costs every process that imports this
// package about a millisecond at init.
var destFinders = sync.OnceValue(func() []*regexp.Regexp {
	return []*regexp.Regexp{
		// Node (libuv, getaddrinfo): "getaddrinfo ENOTFOUND api.x.com",
		// "getaddrinfo EAI_AGAIN api.x.com".
		regexp.MustCompile(`getaddrinfo (?:ENOTFOUND|EAI_AGAIN|EAI_FAIL|EAI_NONAME|EAI_NODATA|EAI_ADDRFAMILY|EAI_SERVICE) ([^\s'",;()]+)`),
		// Node's socket errors: "connect ECONNREFUSED 127.0.0.1:5432",
		// "connect ENETUNREACH 2606:4700::1:443" (an IPv6 address unbracketed).
		regexp.MustCompile(`connect (?:ECONNREFUSED|EACCES|EPERM|ENETUNREACH|EHOSTUNREACH|ETIMEDOUT|ECONNRESET|EADDRNOTAVAIL|EAFNOSUPPORT) ([^\s'",;()]+)`),
		// Go: "dial tcp: lookup api.x.com on 127.0.0.53:53: no such host",
		// "lookup api.x.com: no such host".
		regexp.MustCompile(`\blookup ([A-Za-z0-9._-]+)(?:: | on )`),
		// Go: "dial tcp 1.2.3.4:443: connect: connection refused", "dial tcp
		// [2001:db8::1]:443: ...", "dial tcp4 ...".
		regexp.MustCompile(`\bdial tcp[46]? (\[[0-9A-Fa-f:.]+\]:[0-9]+|[A-Za-z0-9._-]+:[0-9]+)`),
		// curl: "Could not resolve host: api.x.com", "Failed to connect to
		// api.x.com port 443".
		regexp.MustCompile(`Could not resolve host: ([^\s'",;()]+)`),
		regexp.MustCompile(`Failed to connect to ([^\s'",;()]+) port ([0-9]+)`),
		// Python urllib3 (requests): "HTTPSConnectionPool(host='api.x.com',
		// port=443)", "Failed to resolve 'api.x.com'"; aiohttp: "Cannot connect
		// to host api.x.com:443".
		hostPortFinder(),
		regexp.MustCompile(`Failed to resolve '([^'\s]+)'`),
		regexp.MustCompile(`Cannot connect to host ([^\s'",;()]+)`),
		// Java: "java.net.UnknownHostException: api.x.com".
		regexp.MustCompile(`UnknownHostException: ([^\s'",;()]+)`),
	}
})

// hostPortFinder finds urllib3's "HTTPSConnectionPool(host='api.x.com',
// port=443)".
var hostPortFinder = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`ConnectionPool\(host='([^'\s]+)', port=([0-9]+)\)`)
})

// urlFinder finds the host of a URL, on a line that shows a network
// failure (Rust's reqwest, Deno, Node's fetch and Go's net/http name the
// URL they failed): the authority, and the scheme for its default port.
var urlFinder = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\b(https?|wss?)://([^/\s"'<>?#\\]+)`)
})

// failureWords mark a line as a network failure, for urlFinder: a URL on
// any other line is not a destination the server failed to reach.
var failureWords = append(slices.Clone(networkMarks), "no such host", "onnection refused", "Could not resolve", "Failed to resolve",
	"Failed to connect", "Failed to establish a new connection", "Cannot connect to host", "UnknownHostException", "dns error",
	"error trying to connect", "error sending request", "nodename nor servname", "Max retries exceeded", "NameResolutionError",
	"ConnectError", "ConnectTimeout", "timed out", "ETIMEDOUT", "EHOSTUNREACH", "EACCES", "dial tcp", "[Errno")

// nameFailures are what a runtime writes when a lookup failed without
// naming the host ("[Errno -3] Temporary failure in name resolution", from
// Python's socket.gaierror under httpx or urllib); the host is then looked
// for on the few lines before, where a traceback shows the call.
var nameFailures = []string{"Temporary failure in name resolution", "Name or service not known", "nodename nor servname",
	"No address associated with hostname", "[Errno -2]", "[Errno -3]", "[Errno -5]", "[Errno 8]", "[Errno 11001]", "getaddrinfo failed"}

// nearbyLines is how many lines before a host-less lookup failure are
// searched for the URL or host it was about.
const nearbyLines = 5

// networkDests returns the destinations text (a server's stderr) names in
// the errors of common runtimes, each grant once, at most maxNetDests, in the
// order they appear: each one a destination a grant can name (checked with
// egress.ParseGrant; an address or localhost needs its port), and a name
// with at least two labels (a single label, as "db" or Node's "undefined",
// is a local name or a bug, which a name grant could not reach: it is
// granted only public addresses). The text is the server's; a destination
// is only ever a part of it.
func networkDests(text string) []netDest {
	var out []netDest
	add := func(d netDest) {
		// Once per grant: "api.x.com" and "api.x.com:443" are one.
		if !slices.ContainsFunc(out, func(e netDest) bool { return e.grant() == d.grant() }) && len(out) < maxNetDests {
			out = append(out, d)
		}
	}
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		found := lineDests(line)
		if len(found) == 0 && containsAny(line, nameFailures) {
			for j := i - 1; j >= 0 && j >= i-nearbyLines && len(found) == 0; j-- {
				found = urlDests(lines[j])
				if len(found) == 0 {
					if m := hostPortFinder().FindStringSubmatch(lines[j]); m != nil {
						found = destsOf(m)
					}
				}
			}
		}
		for _, d := range found {
			add(d)
		}
		if len(out) == maxNetDests {
			break
		}
	}
	return out
}

// lineDests returns the destinations one line of stderr names.
func lineDests(line string) []netDest {
	var out []netDest
	for _, re := range destFinders() {
		for _, m := range re.FindAllStringSubmatch(line, 4) {
			out = append(out, destsOf(m)...)
		}
	}
	if len(out) == 0 && containsAny(line, failureWords) {
		out = urlDests(line)
	}
	return out
}

// destsOf reads a destFinders match: group 1 a host, host:port or
// address:port, group 2 (if any) a port.
func destsOf(m []string) []netDest {
	text := m[1]
	if len(m) > 2 && m[2] != "" {
		text = joinPort(text, m[2])
	}
	if d, ok := parseDest(text); ok {
		return []netDest{d}
	}
	return nil
}

// urlDests returns the hosts of the URLs on line, with the port the URL
// names or its scheme's.
func urlDests(line string) []netDest {
	var out []netDest
	for _, m := range urlFinder().FindAllStringSubmatch(line, 4) {
		auth := m[2]
		if i := strings.LastIndexByte(auth, '@'); i >= 0 {
			auth = auth[i+1:]
		}
		auth = strings.TrimRight(auth, ".,;:)}")
		hasPort := strings.Contains(auth, ":")
		if strings.HasPrefix(auth, "[") {
			end := strings.IndexByte(auth, ']')
			hasPort = end >= 0 && strings.HasPrefix(auth[end+1:], ":")
		}
		if !hasPort {
			port := "443"
			if m[1] == "http" || m[1] == "ws" {
				port = "80"
			}
			auth += ":" + port
		}
		if d, ok := parseDest(auth); ok {
			out = append(out, d)
		}
	}
	return out
}

// joinPort puts a port after host, bracketing an IPv6 address.
func joinPort(host, port string) string {
	if strings.Contains(host, ":") && !strings.HasPrefix(host, "[") {
		return "[" + host + "]:" + port
	}
	return host + ":" + port
}

// parseDest reads "host", "host:port", "a.b.c.d:port", "[v6]:port" or
// Node's unbracketed "v6:port" into a destination a grant can name, or
// reports false.
func parseDest(text string) (netDest, bool) {
	text = strings.TrimRight(text, ".,;:'\")}")
	if text == "" {
		return netDest{}, false
	}
	host, portText := text, ""
	switch {
	case strings.HasPrefix(text, "["):
		end := strings.IndexByte(text, ']')
		if end < 0 || !strings.HasPrefix(text[end+1:], ":") {
			return netDest{}, false
		}
		host, portText = text[1:end], text[end+2:]
	case strings.Count(text, ":") == 1:
		i := strings.IndexByte(text, ':')
		host, portText = text[:i], text[i+1:]
	case strings.Count(text, ":") > 1:
		// Node writes an IPv6 address and its port unbracketed.
		i := strings.LastIndexByte(text, ':')
		host, portText = text[:i], text[i+1:]
		if _, err := netip.ParseAddr(host); err != nil {
			return netDest{}, false
		}
	}
	var d netDest
	if portText != "" {
		p, err := strconv.ParseUint(portText, 10, 16)
		if err != nil || p == 0 {
			return netDest{}, false
		}
		d.port = uint16(p)
	}
	if a, err := netip.ParseAddr(host); err == nil {
		d.addr = a.Unmap()
		if d.addr.Zone() != "" {
			return netDest{}, false
		}
	} else {
		d.host = strings.ToLower(strings.TrimSuffix(host, "."))
		if d.host != "localhost" && !strings.Contains(d.host, ".") {
			return netDest{}, false
		}
	}
	g, err := egress.ParseGrant(d.grant())
	if err != nil || g.Wildcard {
		return netDest{}, false
	}
	return d, true
}

func containsAny(s string, marks []string) bool {
	for _, m := range marks {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}

// networkHints say, for a server that failed or exited with network errors
// in its stderr (networkMarks, networkDests), what its network setting has
// to do with it:
//   - network off: that it is off, and the grant of what stderr names
//     (network = ["mcp.stripe.com"]), or of a placeholder when it names
//     nothing;
//   - a list: what stderr names that the list does not cover, and the
//     entries to add; and when what it names is covered, or it names
//     nothing, and mcphost refused nothing for the server, why a granted
//     server can still fail (see grantedFailure).
//
// Nothing for a server with the whole network.
func (srv *server) networkHints() []string {
	cfg := srv.cfg
	if cfg.Network || cfg.Unconfined {
		return nil
	}
	mark := srv.stderr.networkFailure()
	dests := srv.stderr.destinations()
	if mark == "" && len(dests) == 0 {
		return nil
	}
	label := ""
	if mark != "" {
		label = mark + ": "
	}
	if len(cfg.NetworkGrant) == 0 {
		if len(dests) == 0 {
			return []string{fmt.Sprintf("%sthe server tried to reach a host, but its network is off; if it needs one, grant it by name in [mcp.%s]: network = [\"api.example.com\"] (or network = true, the host's whole network)", label, cfg.Name)}
		}
		public, local := splitLocal(dests)
		var hints []string
		if len(public) > 0 {
			hints = append(hints, fmt.Sprintf("%sthe server tried to reach %s, but its network is off; if it needs %s, grant %s in [mcp.%s]: network = [%s]",
				label, joinDests(public, netDest.String), pick(len(public) == 1, "it", "them"), pick(len(public) == 1, "it", "them"), cfg.Name, joinDests(public, quotedGrant)))
		}
		if len(local) > 0 {
			hints = append(hints, label+localAdvice(local, "but its network is off"))
		}
		return hints
	}
	var grants []egress.Grant
	for _, e := range cfg.NetworkGrant {
		if g, err := egress.ParseGrant(e); err == nil {
			grants = append(grants, g)
		}
	}
	var missing, covered, standIns []netDest
	for _, d := range dests {
		switch {
		case d.addr.IsLoopback() && d.port == sandbox.ProxyPort:
			// Its own proxy's address: not a destination.
		case egress.NamesPrefix.Contains(d.addr):
			// An address mcphost's resolver gave a granted name (network
			// by name): not one a person could grant.
			standIns = append(standIns, d)
		case d.covered(grants):
			covered = append(covered, d)
		default:
			missing = append(missing, d)
		}
	}
	var hints []string
	if public, local := splitLocal(missing); len(public) > 0 {
		hints = append(hints, fmt.Sprintf("%sthe server could not reach %s, which its network grant does not cover; if it needs %s, add %s to network in [mcp.%s]",
			label, joinDests(public, netDest.String), pick(len(public) == 1, "it", "them"), joinDests(public, quotedGrant), cfg.Name))
		if len(local) > 0 {
			hints = append(hints, label+localAdvice(local, "which its network grant does not cover"))
		}
	} else if len(local) > 0 {
		hints = append(hints, label+localAdvice(local, "which its network grant does not cover"))
	}
	if len(standIns) > 0 {
		hints = append(hints, fmt.Sprintf("the server connected to %s, an address mcphost's resolver gave it for a granted name, on a port that name's grant does not cover; if it needs that port, add the name with the port (\"NAME:PORT\") to network in [mcp.%s]",
			joinDests(standIns, netDest.String), cfg.Name))
	}
	if len(missing) == 0 && len(standIns) == 0 && srv.refusals.Load() == 0 {
		hints = append(hints, label+srv.grantedFailure(covered))
	}
	return hints
}

// grantedFailure says why a server with a network list can fail to reach
// what its grant covers (covered, maybe none named) while mcphost refused
// nothing for it: a client that ignores the proxy variables reaches
// granted destinations too (sandbox.DirectProxy), so what is left is a
// port or address the grant does not cover, or the destination itself.
func (srv *server) grantedFailure(covered []netDest) string {
	what := "a host"
	if len(covered) > 0 {
		what = joinDests(covered, netDest.String) + ", which its network grant covers"
	}
	return fmt.Sprintf("the server failed to reach %s, and mcphost refused nothing for it, so its grant did not stop it: a client that ignores the proxy variables reaches granted destinations here too, so it may have connected to a port or address its grant does not cover (a granted name covers ports 443 and 80 unless it names one), which fails inside its namespace without a refusal, or the destination failed on the host's side", what)
}

// splitLocal splits dests, which the server's own error output names (its
// text: a server can name anything there), into names and public
// addresses, whose grant a hint may suggest, and the host's own and local
// network addresses (localhost included), whose grant it does not: a
// server could name the Docker API's port to have a person open it.
func splitLocal(dests []netDest) (public, local []netDest) {
	for _, d := range dests {
		if d.host == "localhost" || d.addr.IsValid() && (!d.addr.IsGlobalUnicast() || d.addr.IsPrivate()) {
			local = append(local, d)
		} else {
			public = append(public, d)
		}
	}
	return public, local
}

// localAdvice is the hint for local, addresses on this host or its local
// network that the server's error output names; why says how they failed.
func localAdvice(local []netDest, why string) string {
	return fmt.Sprintf("the server tried to reach %s, %s: %s on this host or its local network, so grant %s only if you know the server must reach that service (its error output is its own text)",
		joinDests(local, netDest.String), why, pick(len(local) == 1, "that is", "those are"), pick(len(local) == 1, "it", "them"))
}

func quotedGrant(d netDest) string { return strconv.Quote(d.grant()) }

// joinDests shows dests, each as show says, separated by ", ".
func joinDests(dests []netDest, show func(netDest) string) string {
	s := make([]string, len(dests))
	for i, d := range dests {
		s[i] = show(d)
	}
	return strings.Join(s, ", ")
}

func pick(cond bool, a, b string) string {
	if cond {
		return a
	}
	return b
}
