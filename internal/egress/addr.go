package egress

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
)

// globalUnicast6 is the IPv6 global unicast space (RFC 4291): every IPv6
// address outside it (loopback, the IPv4-compatible ::a.b.c.d and
// IPv4-mapped forms, NAT64's local-use 64:ff9b:1::/48, unique local,
// link-local, site-local, multicast, SRv6 SIDs) is not public.
var globalUnicast6 = netip.MustParsePrefix("2000::/3")

// notPublic are the ranges of IPv4 and of IPv6 global unicast space that
// are not the public internet (the IANA special-purpose address
// registries). Within 2001::/23, the few ranges reachable on the internet
// that no API is served from (AMT, AS112, ORCHIDv2) are refused with the
// rest, to keep the list short.
var notPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("10.0.0.0/8"),      // private
	netip.MustParsePrefix("100.64.0.0/10"),   // shared address space: carrier NAT, and VPNs such as Tailscale
	netip.MustParsePrefix("127.0.0.0/8"),     // loopback
	netip.MustParsePrefix("169.254.0.0/16"),  // link-local (cloud metadata services)
	netip.MustParsePrefix("172.16.0.0/12"),   // private
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation (TEST-NET-1)
	netip.MustParsePrefix("192.88.99.0/24"),  // 6to4 relay anycast, deprecated
	netip.MustParsePrefix("192.168.0.0/16"),  // private
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // documentation (TEST-NET-2)
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation (TEST-NET-3)
	netip.MustParsePrefix("224.0.0.0/4"),     // multicast
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, and the limited broadcast address
	netip.MustParsePrefix("2001::/23"),       // IETF protocol assignments: Teredo 2001::/32, benchmarking 2001:2::/48, ORCHID
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("3fff::/20"),       // documentation
}

// Prefixes whose addresses stand for an IPv4 address: NAT64's well-known
// prefix (the IPv4 address in the last 32 bits) and 6to4 (in bits 16 to
// 47). Such an address is as public as the address it stands for.
var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// isPublic reports whether a is an address on the public internet. It is
// an allowlist: IPv4 unicast and IPv6 global unicast space, less the
// special-purpose ranges of notPublic; an address that stands for an IPv4
// address (NAT64, 6to4) is public when that address is. An IPv4-mapped
// IPv6 address is not: callers unmap an address first, and dial the
// unmapped form.
func isPublic(a netip.Addr) bool {
	if !a.IsValid() || a.Zone() != "" || a.Is4In6() {
		return false
	}
	if v4, ok := embedded4(a); ok {
		return isPublic(v4)
	}
	if a.Is6() && !globalUnicast6.Contains(a) {
		return false
	}
	for _, p := range notPublic {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// embedded4 returns the IPv4 address a NAT64 (64:ff9b::/96) or 6to4
// (2002::/16) address stands for: a gateway turns a connection to it into
// one to that address.
func embedded4(a netip.Addr) (netip.Addr, bool) {
	if !a.Is6() {
		return netip.Addr{}, false
	}
	b := a.As16()
	switch {
	case nat64.Contains(a):
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), true
	case sixToFour.Contains(a):
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), true
	}
	return netip.Addr{}, false
}

// isOwn reports whether a is one of own (the host's addresses), directly
// or as the NAT64 or 6to4 form of one.
func isOwn(own []netip.Addr, a netip.Addr) bool {
	a = a.WithZone("")
	if slices.Contains(own, a) {
		return true
	}
	v4, ok := embedded4(a)
	return ok && slices.Contains(own, v4)
}

// hostAddrs returns the addresses of the host's own interfaces as they are
// now, unmapped and without zones. It is called at each connection, not
// once, so that an address added after the proxy started is seen.
func hostAddrs() ([]netip.Addr, error) {
	ifas, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("egress: listing this host's addresses: %w", err)
	}
	out := make([]netip.Addr, 0, len(ifas))
	for _, ifa := range ifas {
		var ip net.IP
		switch v := ifa.(type) {
		case *net.IPNet:
			ip = v.IP
		case *net.IPAddr:
			ip = v.IP
		}
		if a, ok := netip.AddrFromSlice(ip); ok {
			out = append(out, a.Unmap())
		}
	}
	return out, nil
}

// errSelf is why a connection to the host itself is closed at once.
var errSelf = errors.New("connected to an address of this host")

// checkNotSelf returns errSelf when c, just connected, reaches the host
// itself: its remote address is one of the host's addresses now, or is the
// very address it was connected from (which is how a connection to one of
// the host's own addresses looks even when that address was added after
// the list was taken). A connection whose addresses are not IP addresses
// (a Config.Dial of a test) is not checked.
func checkNotSelf(c net.Conn) error {
	remote, ok := connAddr(c.RemoteAddr())
	if !ok {
		return nil
	}
	if local, ok := connAddr(c.LocalAddr()); ok && local == remote {
		return errSelf
	}
	own, err := hostAddrs()
	if err != nil {
		return err
	}
	if isOwn(own, remote) {
		return errSelf
	}
	return nil
}

// connAddr returns the IP address of a connection's address, unmapped and
// without a zone.
func connAddr(a net.Addr) (netip.Addr, bool) {
	if a == nil {
		return netip.Addr{}, false
	}
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.Addr{}, false
	}
	return ap.Addr().Unmap().WithZone(""), true
}
