package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The proxy's bounds. Each is per Proxy, that is per server.
const (
	// DefaultMaxConns bounds the connections a server has open to its
	// proxy at once, to the HTTP proxy and direct ones together; one more
	// is answered 503 and closed (a direct one: closed without a byte).
	DefaultMaxConns = 64
	// DefaultIdleTimeout is how long a connection (the server's, or one the
	// proxy opened for it) may carry no byte in either direction before
	// the proxy closes it.
	DefaultIdleTimeout = 2 * time.Minute
	// HeaderTimeout bounds the wait for a request's header.
	HeaderTimeout = 10 * time.Second
	// MaxHeaderBytes bounds a request's header.
	MaxHeaderBytes = 16 << 10
	// MaxResponseHeaderBytes bounds the header of a response the proxy
	// forwards (plain HTTP): a larger one fails the request with 502,
	// reported once per destination. Node's own bound is the same.
	MaxResponseHeaderBytes = 16 << 10
	// MaxHeaderFields bounds the field lines of a request's header
	// (past it: 431) and of a forwarded response's (past it: 502,
	// reported once per destination). net/http holds a header of many
	// small fields in about 20 times its size; past the bound it is
	// dropped before it is copied on or held for a tunnel's life.
	MaxHeaderFields = 256
	// DialTimeout bounds resolving a granted name and connecting to it,
	// for the HTTP proxy and for a direct connection.
	DialTimeout = 10 * time.Second
	// MaxReported bounds the refused destinations (and names the stub
	// resolver refused) reported through Config.Refused; after that many,
	// one last Refusal says the rest go unreported.
	MaxReported = 64
)

// ErrNotGranted is wrapped by the error of a connection the proxy refused
// because the server's grant does not name its destination, or the granted
// name resolved only to addresses the grant does not allow.
var ErrNotGranted = errors.New("egress: destination not granted")

// Resolver looks up the addresses of a name; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Refusal is a destination the proxy refused, a name its stub resolver
// would not answer, or a granted destination whose response it refused (a
// header past its bounds), reported once per Proxy.
type Refusal struct {
	// Host is the name or address the server asked for or looked up,
	// lowercased and cut to 253 bytes; it is the server's text, so show
	// it escaped. What is neither a host name nor an address (a looked-up
	// name may hold spaces, quotes, any byte) is given quoted, in ASCII,
	// as strconv.QuoteToASCII writes it, so that it cannot pass for the
	// words around it. Empty when the refusal is not about one destination
	// (the connection bound, the bound of names, or the end of
	// reporting).
	Host string
	// Port is the port it asked for; 0 for a name the server only looked
	// up through the stub resolver (answered "no such name"), and 0 with
	// an empty Host.
	Port uint16
	// Reason says why, for a person.
	Reason string
	// Grant is a grant, in the form ParseGrant reads, that would let this
	// destination through; empty when none would (the host is not a
	// name or address a grant can name).
	Grant string
}

// Config configures a Proxy. The zero value of each field but Grants has a
// documented default.
type Config struct {
	// Grants are the destinations the server may reach; nothing else is
	// reachable. A name is resolved (by Resolver) only once a request for
	// it is found granted; the stub resolver of ServeDirect resolves
	// nothing.
	Grants []Grant
	// Resolver resolves granted names; nil means net.DefaultResolver.
	Resolver Resolver
	// Dial opens a connection to a vetted address ("203.0.113.7:443");
	// nil means a net.Dialer. Tests use it to see what the proxy dials.
	// A connection it returns for a granted name is still closed when its
	// remote address is one of the host's own.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
	// MaxConns bounds the server's connections at once; 0 means
	// DefaultMaxConns.
	MaxConns int
	// IdleTimeout closes a connection idle that long; 0 means
	// DefaultIdleTimeout.
	IdleTimeout time.Duration
	// Refused, when not nil, is called once for each refused destination
	// and each name the stub resolver refused (at most MaxReported times,
	// then once more to say so), once when the connection bound is first
	// hit, and once when the bound of names (MaxNames) is first hit. It is called from the proxy's
	// goroutines, one call at a time, and must not block for long.
	Refused func(Refusal)
}

// Proxy is the way out for one server: an HTTP proxy (CONNECT tunnels and
// plain-HTTP forwarding with absolute URLs, Serve) and the network by name
// (a stub resolver and direct connections, ServeDirect), both of which let
// through only the destinations of its grants. Serve and ServeDirect may
// run at the same time, and each may be called again after it returned (a
// restarted server); refusals are reported once per Proxy, not per call,
// and a name keeps its address of NamesPrefix for the Proxy's life. Its
// methods are safe for concurrent use.
type Proxy struct {
	cfg       Config
	dial      func(ctx context.Context, network, address string) (net.Conn, error)
	transport *http.Transport
	forward   *httputil.ReverseProxy
	public    func(netip.Addr) bool // isPublic; tests pretend an address of the host is public
	fast      chan struct{}         // a token per fast tunnel buffer in use

	reportMu  sync.Mutex // serializes cfg.Refused
	mu        sync.Mutex
	reported  map[string]bool
	overflow  bool // the end of reporting was reported
	limited   bool // the connection bound was reported
	namesFull bool // the bound of names was reported
	conns     map[*trackedConn]struct{}
	clients   int

	names names // the stub resolver's names and their addresses
}

// New returns a Proxy for cfg. It fails, wrapping ErrBadGrant, when a
// grant is not one ParseGrant could return.
func New(cfg Config) (*Proxy, error) {
	for _, g := range cfg.Grants {
		if h, err := ParseGrant(g.String()); err != nil || h != g {
			return nil, fmt.Errorf("%w: %+v is not a parsed grant", ErrBadGrant, g)
		}
	}
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	p := &Proxy{
		cfg:      cfg,
		public:   isPublic,
		fast:     make(chan struct{}, fastTunnelBuffers),
		reported: make(map[string]bool),
		conns:    make(map[*trackedConn]struct{}),
	}
	p.names.init(cfg.Grants)
	p.dial = cfg.Dial
	if p.dial == nil {
		p.dial = (&net.Dialer{}).DialContext
	}
	p.transport = &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, port, err := splitHostPort(addr, 80)
			if err != nil {
				return nil, err
			}
			ctx, cancel := context.WithTimeout(ctx, DialTimeout)
			defer cancel()
			return p.open(ctx, host, port)
		},
		MaxIdleConns:          cfg.MaxConns,
		IdleConnTimeout:       cfg.IdleTimeout,
		ResponseHeaderTimeout: cfg.IdleTimeout,
		// net/http's default is 10 MiB, which a granted host could send
		// on each of the server's connections at once.
		MaxResponseHeaderBytes: MaxResponseHeaderBytes,
		// The server's own TLS goes through CONNECT; this transport only
		// forwards plain HTTP, and must not add a proxy of its own.
		Proxy: nil,
	}
	p.forward = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			// The request's URL is absolute already; only the server's
			// choice of host and path goes on.
			pr.Out.URL = pr.In.URL
			pr.Out.Host = pr.In.Host
		},
		Transport:     p.transport,
		FlushInterval: -1,
		ModifyResponse: func(res *http.Response) error {
			if n := headerFields(res.Header); n > MaxHeaderFields {
				return &tooManyFieldsError{n}
			}
			return nil
		},
		ErrorLog: log.New(io.Discard, "", 0),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			host, port, _ := splitHostPort(r.URL.Host, 80)
			var tooMany *tooManyFieldsError
			switch {
			case strings.Contains(err.Error(), "response headers exceeded"):
				// net/http says so only in its error's text (a test
				// sees it change).
				err = p.refuseResponse(host, port, fmt.Sprintf("its response header was larger than %d bytes, the proxy's bound; the request failed", MaxResponseHeaderBytes))
			case errors.As(err, &tooMany):
				err = p.refuseResponse(host, port, fmt.Sprintf("its response header had %d fields, more than the proxy's bound of %d; the request failed", tooMany.n, MaxHeaderFields))
			}
			writeError(w, err)
		},
	}
	return p, nil
}

// Serve accepts the server's connections to its HTTP proxy from l and
// serves them until l is closed; then it closes every connection it
// accepted or opened for them and returns nil once their goroutines are
// done. Other errors of Accept (out of descriptors) are retried, after a
// pause of up to a second. Serve may run at the same time as ServeDirect,
// and be called again after it returned; the connection bound
// (Config.MaxConns) counts the connections of both.
func (p *Proxy) Serve(l net.Listener) error {
	s := &serving{}
	ctx, cancel := context.WithCancel(withServing(context.Background(), s))
	defer cancel()
	conns := make(chan net.Conn)
	cl := &chanListener{conns: conns, addr: l.Addr(), done: make(chan struct{})}
	srv := &http.Server{
		Handler:           http.HandlerFunc(p.serveHTTP),
		ReadHeaderTimeout: HeaderTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		IdleTimeout:       p.cfg.IdleTimeout,
		ErrorLog:          log.New(io.Discard, "", 0),
		// Requests carry s: what a request opens is closed with it.
		BaseContext: func(net.Listener) context.Context { return ctx },
		ConnState: func(c net.Conn, st http.ConnState) {
			if st == http.StateClosed {
				if tc, ok := c.(*trackedConn); ok {
					p.untrack(tc)
				}
			}
		},
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		srv.Serve(cl)
	}()
	stop := make(chan struct{})
	go func() {
		defer wg.Done()
		p.watch(stop, s)
	}()
	acceptLoop(l, func(c net.Conn) {
		tc, ok := p.admit(c, s, true)
		if !ok {
			return
		}
		select {
		case conns <- tc:
		case <-cl.done:
			tc.Close()
		}
	})
	close(stop)
	srv.Close()
	p.closeServing(s)
	cancel() // dials under way for s give up
	wg.Wait()
	s.handlers.Wait()
	p.transport.CloseIdleConnections()
	return nil
}

// acceptLoop hands each connection of l to handle until l is closed. Other
// errors of Accept (out of descriptors, say) are retried a little later, at
// most once a second: the server keeps its way out.
func acceptLoop(l net.Listener, handle func(net.Conn)) {
	var backoff time.Duration
	for {
		c, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			pause(&backoff)
			continue
		}
		backoff = 0
		handle(c)
	}
}

// pause waits after a failed Accept or read (out of descriptors, say)
// before the next try: 5 ms, doubled each time in a row, at most a second.
func pause(backoff *time.Duration) {
	*backoff = min(max(2**backoff, 5*time.Millisecond), time.Second)
	time.Sleep(*backoff)
}

// serving is one call of Serve or ServeDirect. When the call ends it
// closes every connection tracked for it, whatever other calls still
// serve.
type serving struct {
	closing  bool           // under Proxy.mu: the call is ending, a new connection of it is closed at once
	handlers sync.WaitGroup // Serve: requests being served
}

type servingKey struct{}

func withServing(ctx context.Context, s *serving) context.Context {
	return context.WithValue(ctx, servingKey{}, s)
}

// servingOf returns the call ctx was made for, or nil.
func servingOf(ctx context.Context) *serving {
	s, _ := ctx.Value(servingKey{}).(*serving)
	return s
}

// admit counts a new connection of the server, accepted by the call s,
// refusing it over the bound: answered 503 when it came to the HTTP proxy
// (httpProxy), closed without a byte otherwise.
func (p *Proxy) admit(c net.Conn, s *serving, httpProxy bool) (*trackedConn, bool) {
	p.mu.Lock()
	if s.closing {
		p.mu.Unlock()
		c.Close()
		return nil, false
	}
	if p.clients >= p.cfg.MaxConns {
		first := !p.limited
		p.limited = true
		p.mu.Unlock()
		if httpProxy {
			go func() {
				// Answer without reading: the server learns why, and a
				// server that never reads cannot hold this goroutine.
				c.SetWriteDeadline(time.Now().Add(time.Second))
				io.WriteString(c, "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
				c.Close()
			}()
		} else {
			c.Close()
		}
		if first {
			p.report(Refusal{Reason: fmt.Sprintf("the server opened more than %d connections to its network proxy at once; the rest were refused", p.cfg.MaxConns)})
		}
		return nil, false
	}
	p.clients++
	tc := &trackedConn{Conn: c, p: p, s: s, client: true}
	tc.touch()
	p.conns[tc] = struct{}{}
	p.mu.Unlock()
	return tc, true
}

// track registers c, opened for the call s, for the idle watch and for
// closing when s ends. When s is ending already (or nil) it closes c and
// returns false.
func (p *Proxy) track(c net.Conn, s *serving) (*trackedConn, bool) {
	tc := &trackedConn{Conn: c, p: p, s: s}
	tc.touch()
	p.mu.Lock()
	ok := s != nil && !s.closing
	if ok {
		p.conns[tc] = struct{}{}
	}
	p.mu.Unlock()
	if !ok {
		c.Close()
	}
	return tc, ok
}

func (p *Proxy) untrack(tc *trackedConn) {
	p.mu.Lock()
	if _, ok := p.conns[tc]; ok {
		delete(p.conns, tc)
		if tc.client {
			p.clients--
		}
	}
	p.mu.Unlock()
}

// watch closes the idle connections of s until stop is closed.
func (p *Proxy) watch(stop <-chan struct{}, s *serving) {
	tick := p.cfg.IdleTimeout / 4
	if tick > time.Second {
		tick = time.Second
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		limit := time.Now().Add(-p.cfg.IdleTimeout).UnixNano()
		var idle []*trackedConn
		p.mu.Lock()
		for tc := range p.conns {
			if tc.s == s && tc.last.Load() < limit {
				idle = append(idle, tc)
			}
		}
		p.mu.Unlock()
		for _, tc := range idle {
			tc.Close()
		}
	}
}

// closeServing closes every connection of s, and any it tracks from now.
func (p *Proxy) closeServing(s *serving) {
	p.mu.Lock()
	s.closing = true
	var all []*trackedConn
	for tc := range p.conns {
		if tc.s == s {
			all = append(all, tc)
		}
	}
	p.mu.Unlock()
	for _, tc := range all {
		tc.Close()
	}
}

// trackedConn is a connection whose last transfer the idle watch sees.
type trackedConn struct {
	net.Conn
	p      *Proxy
	s      *serving     // the call it is closed with
	client bool         // a connection of the server, counted against MaxConns
	last   atomic.Int64 // UnixNano of the last byte moved
	once   sync.Once
}

func (c *trackedConn) touch() { c.last.Store(time.Now().UnixNano()) }

func (c *trackedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.touch()
	}
	return n, err
}

func (c *trackedConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if n > 0 {
		c.touch()
	}
	return n, err
}

func (c *trackedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.p.untrack(c) })
	return err
}

// closeWrite half-closes c where it can, and closes it otherwise.
func closeWrite(c net.Conn) {
	inner := c
	if tc, ok := c.(*trackedConn); ok {
		inner = tc.Conn
	}
	if cw, ok := inner.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
		return
	}
	c.Close()
}

// chanListener hands http.Server the connections Serve admitted.
type chanListener struct {
	conns <-chan net.Conn
	addr  net.Addr
	done  chan struct{}
	once  sync.Once
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *chanListener) Addr() net.Addr { return l.addr }

// serveHTTP serves one request of the server: a CONNECT tunnel or a
// plain-HTTP request with an absolute URL.
func (p *Proxy) serveHTTP(w http.ResponseWriter, r *http.Request) {
	// A request net/http hands over after Serve began to end is not
	// served: Serve's wait for the handlers must not race a new one.
	s := servingOf(r.Context())
	p.mu.Lock()
	if s == nil || s.closing {
		p.mu.Unlock()
		http.Error(w, "mcphost network proxy: closing", http.StatusServiceUnavailable)
		return
	}
	s.handlers.Add(1)
	p.mu.Unlock()
	defer s.handlers.Done()
	// What a header holds is dropped now, not copied on or held for a
	// tunnel's life.
	if n := headerFields(r.Header); n > MaxHeaderFields {
		http.Error(w, fmt.Sprintf("mcphost network proxy: the request header has %d fields, more than %d", n, MaxHeaderFields), http.StatusRequestHeaderFieldsTooLarge)
		return
	}
	if r.Method == http.MethodConnect {
		p.tunnel(w, r)
		return
	}
	if r.URL.Scheme != "http" || r.URL.Host == "" {
		http.Error(w, "mcphost network proxy: send CONNECT host:port, or a plain-HTTP request with an absolute http:// URL", http.StatusBadRequest)
		return
	}
	p.forward.ServeHTTP(w, r)
}

// tunnel serves a CONNECT request.
func (p *Proxy) tunnel(w http.ResponseWriter, r *http.Request) {
	host, port, err := splitHostPort(r.Host, 0)
	if err != nil {
		http.Error(w, "mcphost network proxy: "+err.Error(), http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), DialTimeout)
	up, err := p.open(ctx, host, port)
	cancel()
	if err != nil {
		writeError(w, err)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		up.Close()
		http.Error(w, "mcphost network proxy: cannot tunnel", http.StatusInternalServerError)
		return
	}
	c, brw, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	defer c.Close()
	defer up.Close()
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	// What the server sent after its CONNECT (a TLS hello, say) may be
	// buffered already.
	var down io.Reader = c
	if n := brw.Reader.Buffered(); n > 0 {
		buffered, _ := brw.Reader.Peek(n)
		down = io.MultiReader(strings.NewReader(string(buffered)), c)
	}
	p.splice(c, down, up)
}

// splice copies down (what the server sends on c) to up, and up to c,
// half-closing each side when its source ends, until both directions are
// done. The caller closes c and up.
func (p *Proxy) splice(c net.Conn, down io.Reader, up net.Conn) {
	done := make(chan struct{}, 2)
	go func() {
		p.pipe(up, down)
		closeWrite(up)
		done <- struct{}{}
	}()
	go func() {
		p.pipe(c, up)
		closeWrite(c)
		done <- struct{}{}
	}()
	<-done
	<-done
}

// The buffers of tunnels: each direction of a tunnel copies through one.
// The first fastTunnelBuffers directions of a Proxy at once get a large
// buffer, fewer system calls on a download (with io.Copy's 32 KiB a
// proxied download ran at 0.67 of the speed of a direct one, at 256 KiB
// at about 1); the rest get tunnelBuffer, so that a server's 64 idle
// tunnels cost the host 4 MiB of buffers, not 32.
const (
	tunnelBuffer      = 32 << 10
	fastTunnelBuffer  = 256 << 10
	fastTunnelBuffers = 8 // four tunnels, both ways
)

var (
	tunnelBuffers = sync.Pool{New: func() any { b := make([]byte, tunnelBuffer); return &b }}
	fastBuffers   = sync.Pool{New: func() any { b := make([]byte, fastTunnelBuffer); return &b }}
)

// pipe copies src to dst until either fails.
func (p *Proxy) pipe(dst io.Writer, src io.Reader) {
	pool := &tunnelBuffers
	select {
	case p.fast <- struct{}{}:
		pool = &fastBuffers
		defer func() { <-p.fast }()
	default:
	}
	buf := pool.Get().(*[]byte)
	defer pool.Put(buf)
	// Hide dst's ReadFrom and src's WriteTo: through trackedConn they
	// would fall back to a 32 KiB copy anyway.
	io.CopyBuffer(struct{ io.Writer }{dst}, struct{ io.Reader }{src}, *buf)
}

// headerFields returns the number of field lines of h.
func headerFields(h http.Header) int {
	n := 0
	for _, vv := range h {
		n += len(vv)
	}
	return n
}

// tooManyFieldsError is a response whose header has n fields, more than
// MaxHeaderFields.
type tooManyFieldsError struct{ n int }

func (e *tooManyFieldsError) Error() string {
	return fmt.Sprintf("egress: a response header of %d fields, more than %d", e.n, MaxHeaderFields)
}

// writeError answers a request the proxy could not carry out.
func writeError(w http.ResponseWriter, err error) {
	code := http.StatusBadGateway
	if errors.Is(err, ErrNotGranted) {
		code = http.StatusForbidden
	}
	http.Error(w, "mcphost network proxy: "+err.Error(), code)
}

// splitHostPort reads "host:port" or "[v6]:port"; a missing port is def,
// or an error when def is 0.
func splitHostPort(hostport string, def uint16) (string, uint16, error) {
	host, portText, err := net.SplitHostPort(hostport)
	if err != nil {
		if def == 0 || strings.Contains(hostport, "]") || strings.Count(hostport, ":") > 0 {
			return "", 0, fmt.Errorf("%q is not host:port", cut(hostport))
		}
		return hostport, def, nil
	}
	n, err := strconv.ParseUint(portText, 10, 16)
	if err != nil || n == 0 {
		return "", 0, fmt.Errorf("%q has no valid port", cut(hostport))
	}
	return host, uint16(n), nil
}

// dest is an address the proxy may connect to for a request.
type dest struct {
	addr netip.Addr
	// granted: a grant names this address (an address grant, or a
	// localhost grant for a loopback address), so it may be the host's
	// own. Otherwise it is a public address of a granted name, and the
	// proxy refuses to connect to it when it is the host's own.
	granted bool
}

// open vets the destination host:port against the grants, resolves it if
// it is a granted name, and connects to the first allowed address that
// answers. A name never leads to the host itself: an address of the host
// is dropped before connecting, and a connection found to reach the host
// after all (an address added in between) is closed.
func (p *Proxy) open(ctx context.Context, host string, port uint16) (net.Conn, error) {
	dests, err := p.vet(ctx, host, port)
	if err != nil {
		return nil, err
	}
	var errs []error
	var self []netip.Addr
	for _, d := range dests {
		c, err := p.dial(ctx, "tcp", netip.AddrPortFrom(d.addr, port).String())
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !d.granted {
			if err := checkNotSelf(c); err != nil {
				c.Close()
				if errors.Is(err, errSelf) {
					self = append(self, d.addr)
				} else {
					errs = append(errs, err)
				}
				continue
			}
		}
		tc, ok := p.track(c, servingOf(ctx))
		if !ok {
			return nil, errors.New("egress: the proxy is closing")
		}
		return tc, nil
	}
	if len(self) > 0 {
		errs = append(errs, p.refuseSelf(host, port, self))
	}
	return nil, fmt.Errorf("egress: connecting to %s: %w", net.JoinHostPort(cut(host), strconv.Itoa(int(port))), errors.Join(errs...))
}

// vet returns the addresses the server may reach for host:port, or an
// error wrapping ErrNotGranted (reported once) when it may reach none.
// Only a granted name is resolved. An address of NamesPrefix that no
// address grant names stands for the name the stub resolver handed it out
// for, and is vetted as that name; one it never handed out is refused.
func (p *Proxy) vet(ctx context.Context, host string, port uint16) ([]dest, error) {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if a, err := netip.ParseAddr(h); err == nil {
		a = a.Unmap()
		if NamesPrefix.Contains(a) && a.Zone() == "" && !p.grantsAddr(a) {
			name, ok := p.names.name(a)
			if !ok {
				return nil, p.refuse(a.String(), port, "it is an address the stub resolver never handed out (the server's names resolve to addresses of "+NamesPrefix.String()+" only through it)", "")
			}
			return p.vet(ctx, name, port)
		}
		for _, g := range p.cfg.Grants {
			if a.Zone() == "" && g.Allows(a.String(), port) {
				return []dest{{addr: a, granted: true}}, nil
			}
		}
		return nil, p.refuse(h, port, "not in the server's network grant", suggest(h, port))
	}
	if checkName(h) != nil || isNumericName(h) {
		return nil, p.refuse(h, port, "not a host name", "")
	}
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		for _, g := range p.cfg.Grants {
			if h == "localhost" && g.Allows(h, port) {
				return []dest{
					{addr: netip.AddrFrom4([4]byte{127, 0, 0, 1}), granted: true},
					{addr: netip.IPv6Loopback(), granted: true},
				}, nil
			}
		}
		return nil, p.refuse(h, port, "not in the server's network grant", suggest(h, port))
	}
	granted := false
	for _, g := range p.cfg.Grants {
		if g.Allows(h, port) {
			granted = true
			break
		}
	}
	if !granted {
		return nil, p.refuse(h, port, "not in the server's network grant", suggest(h, port))
	}
	found, err := p.cfg.Resolver.LookupNetIP(ctx, "ip", h)
	if err != nil {
		return nil, fmt.Errorf("egress: resolving %s: %w", h, err)
	}
	var ok []dest
	var other []netip.Addr
	var own []netip.Addr // the host's addresses now, listed at the first public address
	for _, a := range found {
		// Classify and dial the same, unmapped, form.
		a = a.Unmap()
		switch {
		case p.addrGranted(a, port):
			ok = append(ok, dest{addr: a, granted: true})
		case !p.public(a):
			other = append(other, a)
		default:
			if own == nil {
				if own, err = hostAddrs(); err != nil {
					return nil, err
				}
			}
			if isOwn(own, a) {
				other = append(other, a)
				continue
			}
			ok = append(ok, dest{addr: a})
		}
	}
	if len(ok) == 0 {
		if own == nil {
			// Say so when an address is the host's own, whatever its range.
			own, _ = hostAddrs()
		}
		var self []netip.Addr
		for _, a := range other {
			if isOwn(own, a) {
				self = append(self, a)
			}
		}
		if len(self) > 0 {
			return nil, p.refuseSelf(h, port, self)
		}
		return nil, p.refuse(h, port, fmt.Sprintf("it resolves only to loopback, private, link-local or other non-public addresses (%s), which a granted name may not reach unless the address is granted too", joinAddrs(other)), addrGrantExample(other, port))
	}
	return ok, nil
}

// refuseSelf refuses host:port, a granted name, because it leads only to
// self, addresses of the host itself.
func (p *Proxy) refuseSelf(host string, port uint16, self []netip.Addr) error {
	return p.refuse(strings.ToLower(strings.TrimSuffix(host, ".")), port, fmt.Sprintf("it resolves to an address of this host (%s), which a granted name may not reach unless the address is granted too", joinAddrs(self)), addrGrantExample(self, port))
}

// grantsAddr reports whether an address grant names a, at any port.
func (p *Proxy) grantsAddr(a netip.Addr) bool {
	for _, g := range p.cfg.Grants {
		if g.Addr.IsValid() && g.Addr == a {
			return true
		}
	}
	return false
}

func (p *Proxy) addrGranted(a netip.Addr, port uint16) bool {
	for _, g := range p.cfg.Grants {
		if g.Addr.IsValid() && g.matchAddr(a, port) {
			return true
		}
	}
	return false
}

func joinAddrs(as []netip.Addr) string {
	var s []string
	for i, a := range as {
		if i == 4 {
			s = append(s, "...")
			break
		}
		s = append(s, a.String())
	}
	return strings.Join(s, ", ")
}

func addrGrantExample(as []netip.Addr, port uint16) string {
	if len(as) == 0 {
		return ""
	}
	return suggest(as[0].String(), port)
}

// suggest returns the grant that names host:port, or "" when no grant can.
func suggest(host string, port uint16) string {
	hp := net.JoinHostPort(host, strconv.Itoa(int(port)))
	if _, err := netip.ParseAddr(host); err != nil && host != "localhost" && (port == 443 || port == 80) {
		hp = host
	}
	g, err := ParseGrant(hp)
	if err != nil {
		return ""
	}
	return g.String()
}

// refuse reports host:port once and returns the error for the request.
func (p *Proxy) refuse(host string, port uint16, reason, grant string) error {
	host = cut(host)
	p.reportOnce(host, port, reason, grant)
	return fmt.Errorf("%w: %s: %s", ErrNotGranted, net.JoinHostPort(host, strconv.Itoa(int(port))), reason)
}

// refuseResponse reports once that a response of host:port, a granted
// destination, was refused, and returns the error for the request.
func (p *Proxy) refuseResponse(host string, port uint16, reason string) error {
	host = cut(host)
	p.reportOnce(host, port, reason, "")
	return fmt.Errorf("egress: %s: %s", net.JoinHostPort(host, strconv.Itoa(int(port))), reason)
}

// reportOnce reports host:port through Config.Refused, once per Proxy, and
// no more than MaxReported destinations.
func (p *Proxy) reportOnce(host string, port uint16, reason, grant string) {
	host = shown(host)
	key := host + ":" + strconv.Itoa(int(port))
	p.mu.Lock()
	var send []Refusal
	if !p.reported[key] {
		if len(p.reported) < MaxReported {
			p.reported[key] = true
			send = append(send, Refusal{Host: host, Port: port, Reason: reason, Grant: grant})
		} else if !p.overflow {
			p.overflow = true
			send = append(send, Refusal{Reason: fmt.Sprintf("more than %d destinations were refused; the rest are not reported", MaxReported)})
		}
	}
	p.mu.Unlock()
	for _, r := range send {
		p.report(r)
	}
}

func (p *Proxy) report(r Refusal) {
	if p.cfg.Refused == nil {
		return
	}
	p.reportMu.Lock()
	defer p.reportMu.Unlock()
	p.cfg.Refused(r)
}

// shown returns host as a Refusal gives it: itself when it is a host name
// or an address, else quoted in ASCII.
func shown(host string) string {
	if checkName(host) == nil {
		return host
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return host
	}
	return strconv.QuoteToASCII(host)
}

// cut bounds a server-supplied host for errors and reports.
func cut(s string) string {
	if len(s) > maxName {
		return s[:maxName]
	}
	return s
}
