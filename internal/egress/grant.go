package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// ErrBadGrant is wrapped by every error of ParseGrant (a *GrantError) and
// of New.
var ErrBadGrant = errors.New("egress: bad network grant")

// GrantError is ParseGrant's error: which text, and what is wrong with it,
// so that a caller can word its own message (the config names its table
// and key) without taking this one apart.
type GrantError struct {
	Text   string // the destination as written
	Reason string // what is wrong with it ("empty", "port 0 is out of range")
}

func (e *GrantError) Error() string {
	return fmt.Sprintf("%v: %q: %s", ErrBadGrant, e.Text, e.Reason)
}

// Unwrap returns ErrBadGrant.
func (e *GrantError) Unwrap() error { return ErrBadGrant }

// Grant is one destination a server may reach, parsed from the config by
// ParseGrant. It is plain, comparable data.
type Grant struct {
	// Host is a lowercase DNS name without a trailing dot ("api.example.com"),
	// the suffix of a wildcard ("example.com" for "*.example.com"),
	// "localhost", or empty for an address grant.
	Host string
	// Wildcard makes Host match every name that ends in "."+Host (at any
	// depth), and not Host itself.
	Wildcard bool
	// Addr is the address of an address grant ("127.0.0.1:8080",
	// "[::1]:8080"); the zero Addr otherwise.
	Addr netip.Addr
	// Port is the one port granted; 0 means 80 and 443 (names only: a
	// localhost or address grant always names its port).
	Port uint16
}

// Longest DNS name and label (RFC 1035).
const (
	maxName  = 253
	maxLabel = 63
)

// ParseGrant reads one destination of a server's network list:
//
//	api.example.com          that name, ports 443 and 80
//	api.example.com:8443     that name, that port only
//	*.example.com            every name under example.com (not example.com itself), ports 443 and 80
//	*.example.com:8443       the same, that port only
//	localhost:5432           the host's loopback (127.0.0.1 or ::1), that port
//	127.0.0.1:5432           that address, that port ([::1]:5432 for IPv6)
//
// Names are case-insensitive and may end in a dot; they must be ASCII
// (write an internationalized name in its xn-- form). A wildcard needs at
// least two labels after "*." so that "*.com" cannot grant a whole top-level
// domain. A localhost or address grant must name its port: there is no way
// to grant every port of an address. The error is a *GrantError (which
// wraps ErrBadGrant) that says what is wrong with s.
func ParseGrant(s string) (Grant, error) {
	bad := func(format string, args ...any) (Grant, error) {
		return Grant{}, &GrantError{Text: s, Reason: fmt.Sprintf(format, args...)}
	}
	if s == "" {
		return bad("empty")
	}
	if len(s) > maxName+7 {
		return bad("longer than %d bytes", maxName+7)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f {
			return bad("contains a space, control or non-ASCII byte (write an internationalized name in its xn-- form)")
		}
	}
	if strings.Contains(s, "://") || strings.ContainsAny(s, "/?#@") {
		return bad("write a host and an optional port, not a URL: e.g. \"api.example.com\" or \"api.example.com:8443\"")
	}
	host, portText, hasPort := s, "", false
	if strings.HasPrefix(s, "[") {
		end := strings.Index(s, "]")
		if end < 0 {
			return bad("an IPv6 address in brackets lacks its ']'")
		}
		host = s[1:end]
		rest := s[end+1:]
		if !strings.HasPrefix(rest, ":") {
			return bad("an IPv6 address needs its port: e.g. \"[::1]:8080\"")
		}
		portText, hasPort = rest[1:], true
		a, err := netip.ParseAddr(host)
		if err != nil || !a.Is6() || a.Zone() != "" {
			return bad("%q in brackets is not an IPv6 address", host)
		}
	} else if i := strings.LastIndexByte(s, ':'); i >= 0 {
		if strings.Count(s, ":") > 1 {
			return bad("write an IPv6 address in brackets with its port: e.g. \"[::1]:8080\"")
		}
		host, portText, hasPort = s[:i], s[i+1:], true
	}
	var g Grant
	if hasPort {
		p, err := strconv.ParseUint(portText, 10, 16)
		if err != nil || p == 0 || portText[0] == '0' || portText[0] == '+' {
			return bad("port %q is not a number from 1 to 65535", portText)
		}
		g.Port = uint16(p)
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return bad("an address with a zone is not supported")
		}
		if !hasPort {
			return bad("an address needs a port: e.g. \"%s:8080\"", host)
		}
		if a.Is4In6() {
			a = a.Unmap()
		}
		if a.IsUnspecified() || a.IsMulticast() {
			return bad("%s is not an address a server can connect to", a)
		}
		g.Addr = a
		return g, nil
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if strings.HasPrefix(host, "*.") {
		g.Wildcard = true
		host = host[2:]
		if strings.Count(host, ".") < 1 {
			return bad("a wildcard needs at least two labels after \"*.\" (\"*.example.com\"), so that it cannot grant a whole top-level domain")
		}
	}
	if err := checkName(host); err != nil {
		return bad("%v", err)
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		if g.Wildcard || host != "localhost" {
			return bad("names under localhost are the host's loopback: grant \"localhost:PORT\" for a local service")
		}
		if !hasPort {
			return bad("localhost needs a port: grant the one port of the local service, e.g. \"localhost:8080\"")
		}
	}
	if isNumericName(host) {
		return bad("%q looks like an address but is not one", host)
	}
	g.Host = host
	return g, nil
}

// checkName reports whether name (lowercase, no trailing dot) is a DNS
// name: labels of letters, digits, '-' and '_', 1 to 63 bytes each, not
// starting or ending with '-', at most 253 bytes in all.
func checkName(name string) error {
	if name == "" {
		return errors.New("no host name")
	}
	if len(name) > maxName {
		return fmt.Errorf("the name is longer than %d bytes", maxName)
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" {
			return errors.New("an empty label (two dots, or a leading dot)")
		}
		if label == "*" {
			return errors.New("'*' may only start a name, as \"*.example.com\"")
		}
		if len(label) > maxLabel {
			return fmt.Errorf("the label %q is longer than %d bytes", label, maxLabel)
		}
		if label[0] == '-' || label[len(label)-1] == '-' {
			return fmt.Errorf("the label %q starts or ends with '-'", label)
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return fmt.Errorf("the label %q has the character %q: use letters, digits, '-' and '_'", label, c)
			}
		}
	}
	return nil
}

// isNumericName reports whether every label of name is digits: such a name
// is an address in a form that netip does not read ("127.1", "2130706433"),
// which resolvers would still treat as one.
func isNumericName(name string) bool {
	for _, label := range strings.Split(name, ".") {
		for i := 0; i < len(label); i++ {
			if label[i] < '0' || label[i] > '9' {
				return false
			}
		}
	}
	return true
}

// String returns g in the form ParseGrant reads.
func (g Grant) String() string {
	var host string
	switch {
	case g.Addr.IsValid():
		host = g.Addr.String()
		if g.Addr.Is6() {
			host = "[" + host + "]"
		}
	case g.Wildcard:
		host = "*." + g.Host
	default:
		host = g.Host
	}
	if g.Port != 0 {
		return host + ":" + strconv.Itoa(int(g.Port))
	}
	return host
}

// portOK reports whether g grants port.
func (g Grant) portOK(port uint16) bool {
	if g.Port == 0 {
		return port == 443 || port == 80
	}
	return g.Port == port
}

// matchName reports whether g grants the name host (lowercase, no
// trailing dot) at port.
func (g Grant) matchName(host string, port uint16) bool {
	return g.portOK(port) && g.matchNameAnyPort(host)
}

// Allows reports whether g lets a server reach host at port, by the rule the
// proxy's vet applies to each grant: host is a name (lowercase, no trailing dot), which
// a name or wildcard grant matches at its ports; "localhost", which only a
// localhost grant of that port matches; or an address, which an address
// grant of that address and port matches, and a localhost grant of that
// port when it is a loopback address. Port 0 asks whether a name is
// granted at any port (whether it resolves in the server's namespace). It
// says nothing of where a granted name resolves to.
func (g Grant) Allows(host string, port uint16) bool {
	if a, err := netip.ParseAddr(host); err == nil {
		return port != 0 && g.matchAddr(a.Unmap(), port)
	}
	if host == "localhost" {
		return g.Host == "localhost" && g.Port == port
	}
	if port == 0 {
		return g.matchNameAnyPort(host)
	}
	return g.matchName(host, port)
}

// matchNameAnyPort reports whether g grants the name host (lowercase, no
// trailing dot) at some port: g is a name grant, not localhost's, that
// names host or, as a wildcard, a domain above it.
func (g Grant) matchNameAnyPort(host string) bool {
	if !g.isName() {
		return false
	}
	if g.Wildcard {
		return strings.HasSuffix(host, "."+g.Host)
	}
	return host == g.Host
}

// isName reports whether g is a grant of a name (or a wildcard) other than
// localhost: one whose names the stub resolver answers.
func (g Grant) isName() bool {
	return !g.Addr.IsValid() && g.Host != "" && g.Host != "localhost"
}

// ports returns the ports g grants.
func (g Grant) ports() []uint16 {
	if g.Port == 0 {
		return []uint16{80, 443}
	}
	return []uint16{g.Port}
}

// matchAddr reports whether g grants the address a at port: an address
// grant of that address, or a localhost grant for a loopback address.
func (g Grant) matchAddr(a netip.Addr, port uint16) bool {
	if g.Port != port {
		return false
	}
	if g.Addr.IsValid() {
		return g.Addr == a
	}
	return g.Host == "localhost" && a.IsLoopback()
}
