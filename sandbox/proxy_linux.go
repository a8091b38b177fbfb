package sandbox

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// How a proxied server reaches its proxy. The helper, in the server's new
// network namespace and before it confines the server, brings the loopback
// up, listens on 127.0.0.1:ProxyPort (and, for a DirectProxy, puts its
// prefixes on the loopback and listens on its ports at every address and
// on 127.0.0.1:53, UDP and TCP) and sends the listening sockets to the
// host in one message over a unix socket pair the host gave it (an
// inherited descriptor, nothing reachable by path), then closes its own
// copies. The host accepts the server's connections on them directly: no
// relay copies a byte inside the sandbox, and the server, whose every
// other TCP connection finds nothing but its own loopback, has no route
// anywhere else.

// proxySocketPair returns the two ends of the socket pair over which the
// helper sends the listening socket: the host's and the helper's.
func proxySocketPair() (host, helper *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("socketpair for the network proxy: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "proxy-host"), os.NewFile(uintptr(fds[1]), "proxy-helper"), nil
}

// errNoProxyListener says the helper reported the server started without
// first sending the proxy's listening sockets.
var errNoProxyListener = errors.New("the sandbox helper sent no listening socket for the network proxy")

// The kinds of socket the helper sends, one byte each in the message's
// data, in the order of its descriptors.
const (
	sockProxy     = 'p' // the proxy's listener, 127.0.0.1:ProxyPort
	sockDirect    = 't' // a direct port's listener, every address
	sockDNS       = 'u' // the nameserver's UDP socket, 127.0.0.1:53
	sockDNSStream = 's' // the nameserver's TCP listener, 127.0.0.1:53
)

// proxySockets are the listening sockets of a proxied server's namespace,
// on the host's side.
type proxySockets struct {
	proxy     net.Listener
	direct    []net.Listener // in the order of directSpec.Ports
	dns       net.PacketConn
	dnsStream net.Listener
}

// close closes every socket of s.
func (s *proxySockets) close() {
	for _, c := range s.closers() {
		c.Close()
	}
}

// closers returns the sockets of s.
func (s *proxySockets) closers() []io.Closer {
	var cs []io.Closer
	if s.proxy != nil {
		cs = append(cs, s.proxy)
	}
	for _, l := range s.direct {
		cs = append(cs, l)
	}
	if s.dns != nil {
		cs = append(cs, s.dns)
	}
	if s.dnsStream != nil {
		cs = append(cs, s.dnsStream)
	}
	return cs
}

// receiveProxySockets takes the listening sockets the helper sent over
// host (they were sent before the helper reported the server started, so
// they are there or will never be) and checks that each is what it must
// be: the proxy's listener on 127.0.0.1:ProxyPort and, with direct, a
// listener on every address at each of its ports, in order, and the
// nameserver's UDP socket and TCP listener on 127.0.0.1:53.
func receiveProxySockets(host *os.File, direct *directSpec) (*proxySockets, error) {
	buf := make([]byte, 4+maxDirectPorts)
	oob := make([]byte, unix.CmsgSpace(4*(4+maxDirectPorts)))
	n, oobn, flags, _, err := unix.Recvmsg(int(host.Fd()), buf, oob, unix.MSG_DONTWAIT|unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNoProxyListener, err)
	}
	var fds []int
	if oobn > 0 {
		msgs, _ := unix.ParseSocketControlMessage(oob[:oobn])
		for i := range msgs {
			got, _ := unix.ParseUnixRights(&msgs[i])
			fds = append(fds, got...)
		}
	}
	files := make([]*os.File, len(fds))
	for i, fd := range fds {
		files[i] = os.NewFile(uintptr(fd), "proxy-socket")
	}
	defer func() {
		for _, f := range files {
			f.Close() // FileListener and FilePacketConn duplicate them
		}
	}()
	want := string(sockProxy)
	if direct != nil {
		want += strings.Repeat(string(sockDirect), len(direct.Ports)) + string(sockDNS) + string(sockDNSStream)
	}
	if flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0 || string(buf[:n]) != want || len(files) != n {
		return nil, fmt.Errorf("%w (it sent %d sockets, %q)", errNoProxyListener, len(files), buf[:n])
	}
	s := &proxySockets{}
	fail := func(err error) (*proxySockets, error) {
		s.close()
		return nil, fmt.Errorf("the network proxy's sockets: %w", err)
	}
	loopback := net.IPv4(127, 0, 0, 1)
	for i, f := range files {
		kind := buf[i]
		if kind == sockDNS {
			pc, err := net.FilePacketConn(f)
			if err != nil {
				return fail(err)
			}
			s.dns = pc
			if a, ok := pc.LocalAddr().(*net.UDPAddr); !ok || !a.IP.Equal(loopback) || a.Port != dnsPort {
				return fail(fmt.Errorf("the nameserver's socket is bound to %v, not 127.0.0.1:%d", pc.LocalAddr(), dnsPort))
			}
			continue
		}
		l, err := net.FileListener(f)
		if err != nil {
			return fail(err)
		}
		a, ok := l.Addr().(*net.TCPAddr)
		switch kind {
		case sockProxy:
			s.proxy = l
			ok = ok && a.IP.Equal(loopback) && a.Port == ProxyPort
		case sockDNSStream:
			s.dnsStream = l
			ok = ok && a.IP.Equal(loopback) && a.Port == dnsPort
		default:
			s.direct = append(s.direct, l)
			ok = ok && a.IP.IsUnspecified() && a.Port == direct.Ports[len(s.direct)-1]
		}
		if !ok {
			return fail(fmt.Errorf("a %q socket listens on %v", kind, l.Addr()))
		}
	}
	return s, nil
}

// openProxyListeners runs in the helper, in the server's network
// namespace: it brings the loopback up, listens on 127.0.0.1:port and,
// with direct, puts direct's prefixes on the loopback and opens the direct
// ports' listeners and the nameserver's sockets; then it sends every
// listening socket over the socket at descriptor sock, and closes its
// copies of all.
func openProxyListeners(sock, port int, direct *directSpec) error {
	defer unix.Close(sock)
	if err := loopbackUp(); err != nil {
		return err
	}
	var fds []int
	defer func() { closeFDs(fds) }()
	kinds := []byte{sockProxy}
	fd, err := listenTCP4([4]byte{127, 0, 0, 1}, port)
	if err != nil {
		return err
	}
	fds = append(fds, fd)
	if direct != nil {
		lo, err := loopbackIndex()
		if err != nil {
			return err
		}
		for _, a := range direct.Addrs {
			p, err := netip.ParsePrefix(a)
			if err != nil {
				return err
			}
			if err := addAddress(lo, p); err != nil {
				return fmt.Errorf("adding %s to the loopback: %w", p, err)
			}
		}
		for _, p := range direct.Ports {
			fd, err := listenEvery(p)
			if err != nil {
				return err
			}
			fds = append(fds, fd)
			kinds = append(kinds, sockDirect)
		}
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("socket for the nameserver: %w", err)
		}
		fds = append(fds, fd)
		if err := unix.Bind(fd, &unix.SockaddrInet4{Port: dnsPort, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
			return fmt.Errorf("bind udp 127.0.0.1:%d: %w", dnsPort, err)
		}
		kinds = append(kinds, sockDNS)
		fd, err = listenTCP4([4]byte{127, 0, 0, 1}, dnsPort)
		if err != nil {
			return err
		}
		fds = append(fds, fd)
		kinds = append(kinds, sockDNSStream)
	}
	if err := unix.Sendmsg(sock, kinds, unix.UnixRights(fds...), nil, 0); err != nil {
		return fmt.Errorf("sending the listening sockets to the host: %w", err)
	}
	return nil
}

// listenTCP4 returns a TCP socket listening on addr:port.
func listenTCP4(addr [4]byte, port int) (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Port: port, Addr: addr}); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("bind %v:%d: %w", netip.AddrFrom4(addr), port, err)
	}
	if err := unix.Listen(fd, 128); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("listen: %w", err)
	}
	return fd, nil
}

// listenEvery returns a TCP socket listening on port at every address of
// the namespace: a dual-stack [::]:port, or 0.0.0.0:port where the kernel
// has no IPv6.
func listenEvery(port int) (int, error) {
	fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err == unix.EAFNOSUPPORT {
		return listenTCP4([4]byte{}, port)
	}
	if err != nil {
		return -1, fmt.Errorf("socket: %w", err)
	}
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 0); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("dual-stack socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet6{Port: port}); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("bind [::]:%d: %w", port, err)
	}
	if err := unix.Listen(fd, 128); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("listen: %w", err)
	}
	return fd, nil
}

// loopbackIndex returns the interface index of the namespace's loopback.
func loopbackIndex() (int32, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("socket for the loopback: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return 0, err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFINDEX, ifr); err != nil {
		return 0, fmt.Errorf("the loopback's index: %w", err)
	}
	return int32(ifr.Uint32()), nil
}

// addAddress puts prefix p on the interface of index dev, as `ip address
// add` does (RTM_NEWADDR). On the loopback the kernel makes the whole
// prefix local, not only its one address: a connection to any address
// in it is a connection to this namespace.
func addAddress(dev int32, p netip.Prefix) error {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("netlink socket: %w", err)
	}
	defer unix.Close(fd)
	// The prefix's first usable address is the loopback's own there.
	a := p.Masked().Addr()
	if p.Bits() < a.BitLen() {
		a = a.Next()
	}
	family := unix.AF_INET6
	if a.Is4() {
		family = unix.AF_INET
	}
	raw := a.AsSlice()
	attr := func(typ uint16, data []byte) []byte {
		b := make([]byte, unix.SizeofRtAttr+len(data), (unix.SizeofRtAttr+len(data)+3)&^3)
		binary.NativeEndian.PutUint16(b[0:], uint16(unix.SizeofRtAttr+len(data)))
		binary.NativeEndian.PutUint16(b[2:], typ)
		copy(b[unix.SizeofRtAttr:], data)
		return b[:cap(b)]
	}
	body := make([]byte, unix.SizeofIfAddrmsg)
	body[0] = byte(family)
	body[1] = byte(p.Bits())
	body[3] = unix.RT_SCOPE_HOST
	binary.NativeEndian.PutUint32(body[4:], uint32(dev))
	body = append(body, attr(unix.IFA_LOCAL, raw)...)
	body = append(body, attr(unix.IFA_ADDRESS, raw)...)
	msg := make([]byte, unix.SizeofNlMsghdr, unix.SizeofNlMsghdr+len(body))
	binary.NativeEndian.PutUint32(msg[0:], uint32(unix.SizeofNlMsghdr+len(body)))
	binary.NativeEndian.PutUint16(msg[4:], unix.RTM_NEWADDR)
	binary.NativeEndian.PutUint16(msg[6:], unix.NLM_F_REQUEST|unix.NLM_F_ACK|unix.NLM_F_CREATE|unix.NLM_F_EXCL)
	binary.NativeEndian.PutUint32(msg[8:], 1)
	msg = append(msg, body...)
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("netlink send: %w", err)
	}
	ack := make([]byte, 4096)
	n, _, err := unix.Recvfrom(fd, ack, 0)
	if err != nil {
		return fmt.Errorf("netlink receive: %w", err)
	}
	msgs, err := syscall.ParseNetlinkMessage(ack[:n])
	if err != nil || len(msgs) == 0 || msgs[0].Header.Type != unix.NLMSG_ERROR || len(msgs[0].Data) < 4 {
		return fmt.Errorf("netlink: no acknowledgement")
	}
	if e := int32(binary.NativeEndian.Uint32(msgs[0].Data)); e != 0 {
		return unix.Errno(-e)
	}
	return nil
}

// loopbackUp sets the loopback interface of the helper's network
// namespace up (a new namespace has it down).
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket for the loopback: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("reading the loopback's flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bringing the loopback up: %w", err)
	}
	return nil
}
