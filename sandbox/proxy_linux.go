package sandbox

import (
	"errors"
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// How a proxied server reaches its proxy. The helper, in the server's new
// network namespace and before it confines the server, brings the loopback
// up, listens on 127.0.0.1:ProxyPort and sends the listening socket to the
// host over a unix socket pair the host gave it (an inherited descriptor,
// nothing reachable by path), then closes its own copy. The host accepts
// the server's connections on it directly: no relay copies a byte, and the
// server, whose every other TCP connection finds nothing but its own down
// or empty loopback, has no route anywhere else.

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
// first sending the proxy's listening socket.
var errNoProxyListener = errors.New("the sandbox helper sent no listening socket for the network proxy")

// receiveProxyListener takes the listening socket the helper sent over
// host (it was sent before the helper reported the server started, so it
// is there or will never be) and checks that it is a listening TCP socket
// on the proxy address.
func receiveProxyListener(host *os.File) (net.Listener, error) {
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := unix.Recvmsg(int(host.Fd()), buf, oob, unix.MSG_DONTWAIT|unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNoProxyListener, err)
	}
	if n != 1 || oobn == 0 {
		return nil, errNoProxyListener
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, errNoProxyListener
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, errNoProxyListener
	}
	f := os.NewFile(uintptr(fds[0]), "proxy-listener")
	defer f.Close() // FileListener duplicates it
	l, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("the network proxy's socket: %w", err)
	}
	addr, ok := l.Addr().(*net.TCPAddr)
	if !ok || !addr.IP.Equal(net.IPv4(127, 0, 0, 1)) || addr.Port != ProxyPort {
		l.Close()
		return nil, fmt.Errorf("the network proxy's socket listens on %v, not 127.0.0.1:%d", l.Addr(), ProxyPort)
	}
	return l, nil
}

// openProxyListener runs in the helper, in the server's network namespace:
// it brings the loopback up, listens on 127.0.0.1:port and sends the
// listening socket over the socket at descriptor sock, then closes its
// copies of both.
func openProxyListener(sock, port int) error {
	defer unix.Close(sock)
	if err := loopbackUp(); err != nil {
		return err
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return fmt.Errorf("bind 127.0.0.1:%d: %w", port, err)
	}
	if err := unix.Listen(fd, 128); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	if err := unix.Sendmsg(sock, []byte{0}, unix.UnixRights(fd), nil, 0); err != nil {
		return fmt.Errorf("sending the listening socket to the host: %w", err)
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
