package egress

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// floodHeader returns a response whose head has at most fields field
// lines, of valueLen bytes each under distinct names, and about size bytes
// in all.
func floodHeader(size, fields, valueLen int) []byte {
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n")
	value := strings.Repeat("a", valueLen)
	for i := 1; i < fields && b.Len() < size-len(value)-16; i++ {
		fmt.Fprintf(&b, "%x: %s\r\n", i, value)
	}
	b.WriteString("\r\nok")
	return b.Bytes()
}

// The answers of hostile backends: 9 MiB of 1 KiB fields; a header within
// MaxResponseHeaderBytes of single-byte fields under distinct names (the
// shape net/http takes the most memory to hold, 25 times its size), more
// than MaxHeaderFields of them; and the largest header within both
// bounds.
func flood9MiB() []byte { return floodHeader(9<<20, 1<<20, 1000) }
func floodTiny() []byte { return floodHeader(MaxResponseHeaderBytes-512, 1<<20, 1) }
func floodMax() []byte {
	return floodHeader(MaxResponseHeaderBytes-512, MaxHeaderFields, (MaxResponseHeaderBytes-1024)/MaxHeaderFields-8)
}

// serveLoopback serves each connection of a new listener on a loopback
// port with handle (which has a minute, then the connection is closed),
// until the test ends, and returns the port.
func serveLoopback(t testing.TB, handle func(net.Conn)) uint16 {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				c.SetDeadline(time.Now().Add(time.Minute))
				handle(c)
			}()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		wg.Wait()
	})
	return uint16(l.Addr().(*net.TCPAddr).Port)
}

// startFlood serves answer, as it is, to every request on a loopback
// listener, and returns its port. With hold, it then keeps the connection
// open until the proxy closes it.
func startFlood(t testing.TB, answer []byte, hold bool) uint16 {
	return serveLoopback(t, func(c net.Conn) {
		// Past the request's head, whatever it is.
		br := bufio.NewReader(c)
		for {
			line, err := br.ReadSlice('\n')
			if err != nil || len(line) <= 2 {
				break
			}
		}
		c.Write(answer)
		if hold {
			io.Copy(io.Discard, br)
		}
	})
}

// rawRequest sends req to the proxy at addr and reads its answer to the
// end, keeping only the first 512 bytes, so that the client holds no
// header of its own.
func rawRequest(addr, req string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Minute))
	if _, err := io.WriteString(c, req); err != nil {
		return "", err
	}
	head := make([]byte, 512)
	n, err := io.ReadFull(c, head)
	if err == io.ErrUnexpectedEOF {
		err = nil
	}
	if err != nil {
		return string(head[:n]), err
	}
	_, err = io.Copy(io.Discard, c)
	return string(head[:n]), err
}

// heapPeak samples the heap (live and not yet collected objects) until
// stopped, and returns the highest sample.
func heapPeak() (stop func() uint64) {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(200 * time.Microsecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		wg.Wait()
		return peak.Load()
	}
}

// flood sends n requests at once through the proxy at addr, each a plain
// GET of http://target/ or, with tunnel, a CONNECT to target and a GET in
// the tunnel, and returns the beginning of each answer.
func flood(addr, target string, n int, tunnel bool) ([]string, []error) {
	req := fmt.Sprintf("GET http://%s/ HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", target, target)
	if tunnel {
		req = fmt.Sprintf("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\nGET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", target, target, target)
	}
	heads := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			heads[i], errs[i] = rawRequest(addr, req)
		}()
	}
	wg.Wait()
	return heads, errs
}

const floodConns = DefaultMaxConns

// TestProxyResponseHeaderBound: a granted host that floods the proxy with
// response header, on all of the server's connections at once, fails each
// request with a 502 that says why, is reported once, and costs the host
// no more than the proxy's memory bound. A header within the bounds goes
// through, and a tunnel to the flood carries it through fixed buffers.
func TestProxyResponseHeaderBound(t *testing.T) {
	good := startOrigin(t, "good")
	for _, tt := range []struct {
		name   string
		answer []byte
		tunnel bool
		want   string // the beginning of every answer
		reason string // of the one refusal; "" for none
	}{
		{"9 MiB", flood9MiB(), false, "HTTP/1.1 502 ", "response header was larger than 16384 bytes"},
		{"many fields", floodTiny(), false, "HTTP/1.1 502 ", "more than the proxy's bound of 256"},
		{"at the bounds", floodMax(), false, "HTTP/1.1 200 OK\r\n", ""},
		{"9 MiB through a tunnel", flood9MiB(), true, "HTTP/1.1 200 Connection established\r\n\r\nHTTP/1.1 200 OK\r\n", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			port := startFlood(t, tt.answer, false)
			target := fmt.Sprintf("localhost:%d", port)
			var p *Proxy
			addr, refused := startProxy(t, Config{Grants: grants(t, target, fmt.Sprintf("localhost:%d", good.port))}, func(q *Proxy) { p = q })
			runtime.GC()
			base := heapNow()
			stop := heapPeak()
			heads, errs := flood(addr, target, floodConns, tt.tunnel)
			grew := stop() - base
			for i := range heads {
				if errs[i] != nil || !strings.HasPrefix(heads[i], tt.want) || (tt.reason != "" && !strings.Contains(heads[i], tt.reason)) {
					t.Fatalf("request %d: %q, %v; want %q saying %q", i, heads[i], errs[i], tt.want, tt.reason)
				}
			}
			t.Logf("the heap grew by %.1f MiB at most", float64(grew)/(1<<20))
			if grew > proxyMemoryBound {
				t.Errorf("the heap grew by %.1f MiB, more than the bound of %d MiB", float64(grew)/(1<<20), proxyMemoryBound>>20)
			}
			r := refused()
			if tt.reason == "" && len(r) != 0 {
				t.Errorf("refusals %+v, want none", r)
			}
			if tt.reason != "" && (len(r) != 1 || r[0].Host != "localhost" || r[0].Port != port || !strings.Contains(r[0].Reason, tt.reason) || r[0].Grant != "") {
				t.Errorf("refusals %+v, want one for %s saying %q", r, target, tt.reason)
			}
			// The proxy still serves.
			waitClosed(t, p)
			if code, body := get(t, addr, fmt.Sprintf("http://localhost:%d/after", good.port)); code != 200 || !strings.HasPrefix(body, "good ") {
				t.Errorf("after the flood: %d %q", code, body)
			}
		})
	}
}

// TestProxyRequestHeaderFields: a request of more than MaxHeaderFields
// header fields is answered 431 and goes no further.
func TestProxyRequestHeaderFields(t *testing.T) {
	o := startOrigin(t, "o")
	target := fmt.Sprintf("localhost:%d", o.port)
	addr, _ := startProxy(t, Config{Grants: grants(t, target)})
	for _, tt := range []struct {
		fields int // besides Connection (Host is not a field in net/http)
		want   string
	}{
		{MaxHeaderFields - 1, "HTTP/1.1 200 "},
		{MaxHeaderFields, "HTTP/1.1 431 "},
	} {
		var b strings.Builder
		for i := range tt.fields {
			fmt.Fprintf(&b, "%x: v\r\n", i)
		}
		n, want := tt.fields, tt.want
		for _, req := range []string{
			fmt.Sprintf("GET http://%s/ HTTP/1.1\r\nHost: %s\r\n%sConnection: close\r\n\r\n", target, target, b.String()),
			fmt.Sprintf("CONNECT %s HTTP/1.1\r\nHost: %s\r\n%sConnection: close\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", target, target, b.String()),
		} {
			head, err := rawRequest(addr, req)
			if !strings.HasPrefix(head, want) {
				t.Errorf("%d fields, %.7s: %q, %v; want %q", n, req, head, err, want)
			}
		}
	}
	if n := o.conns(); n != 2 {
		t.Errorf("the origin saw %d connections, want 2 (the requests within the bound)", n)
	}
}

// heapNow returns the heap's size (live and not yet collected objects).
func heapNow() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// proxyMemoryBound is how much the tests let the heap grow while one Proxy
// is flooded: the proxy's documented bound and room for the test's own
// clients and the collector's lag.
const proxyMemoryBound = 48 << 20

// BenchmarkHeaderFlood: one op is 64 requests at once (the connection
// bound) through one Proxy to a granted backend that answers each with a
// flood of header. peak-heap-MiB is how much the heap (live and not yet
// collected objects) grew at most during the run: the proxy's, the
// clients' and the backend's, which hold no header of their own;
// peak-rss-MiB is the process's peak resident size (Linux), the answer
// held by the backend included.
//
//	forward-9MiB:  plain GETs; each answer has 9 MiB of 1 KiB fields
//	forward-tiny:  plain GETs; each answer has a header just under
//	               MaxResponseHeaderBytes of single-byte fields
//	forward-max:   plain GETs; each answer has the largest header within
//	               both bounds, and goes through
//	tunnel-9MiB:   CONNECT, then the 9 MiB answer through the tunnel
func BenchmarkHeaderFlood(b *testing.B) {
	for _, bc := range []struct {
		name   string
		answer func() []byte
		tunnel bool
	}{
		{"forward-9MiB", flood9MiB, false},
		{"forward-tiny", floodTiny, false},
		{"forward-max", floodMax, false},
		{"tunnel-9MiB", flood9MiB, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			port := startFlood(b, bc.answer(), false)
			target := fmt.Sprintf("localhost:%d", port)
			var p *Proxy
			addr, _ := startProxy(b, Config{Grants: grants(b, target)}, func(q *Proxy) { p = q })
			runtime.GC()
			base := heapNow()
			resetPeakRSS()
			stop := heapPeak()
			for b.Loop() {
				heads, errs := flood(addr, target, floodConns, bc.tunnel)
				for i := range heads {
					if errs[i] != nil || !strings.HasPrefix(heads[i], "HTTP/1.1 ") || strings.HasPrefix(heads[i], "HTTP/1.1 503") {
						b.Fatalf("request %d: %q, %v", i, heads[i], errs[i])
					}
				}
				waitClosed(b, p)
			}
			b.ReportMetric(float64(stop()-base)/(1<<20), "peak-heap-MiB")
			if rss, ok := peakRSS(); ok {
				b.ReportMetric(float64(rss)/(1<<20), "peak-rss-MiB")
			}
		})
	}
}

// waitClosed waits until p has closed every connection of the server: it
// closes its side a moment after the client saw the end.
func waitClosed(t testing.TB, p *Proxy) {
	for deadline := time.Now().Add(10 * time.Second); ; {
		p.mu.Lock()
		n := p.clients
		p.mu.Unlock()
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections still open 10 s after their last request", n)
		}
		time.Sleep(time.Millisecond)
	}
}

// resetPeakRSS resets the process's peak resident size where the system
// can (Linux); elsewhere it does nothing.
func resetPeakRSS() {
	os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// peakRSS returns the process's peak resident size, where the system says
// (Linux).
func peakRSS() (uint64, bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb uint64
			if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%d kB", &kb); err == nil {
				return kb << 10, true
			}
		}
	}
	return 0, false
}

// BenchmarkHeaderHeld: one op is 64 connections at once (the connection
// bound) that each leave the proxy holding a header it has read up to its
// bound in fields of one byte, and has not seen the end of: the most
// net/http holds for a connection. In request, the server sends the
// header (up to MaxHeaderBytes and net/http's 4 KiB of slack); in
// response, a granted backend answers a GET with it (up to
// MaxResponseHeaderBytes). peak-heap-MiB is as in BenchmarkHeaderFlood;
// live-MiB is what the heap keeps above its level before the run, after a
// collection, while the 64 headers are held.
func BenchmarkHeaderHeld(b *testing.B) {
	var fields strings.Builder
	for i := 0; fields.Len() < MaxHeaderBytes+4096-64; i++ {
		fmt.Fprintf(&fields, "%x: b\r\n", i)
	}
	tiny := floodTiny()
	for _, bc := range []struct {
		name string
		req  func(target string) string
		hold []byte // the backend's answer, without its end
	}{
		{"request", func(target string) string {
			return fmt.Sprintf("GET http://%s/ HTTP/1.1\r\nHost: %s\r\n%s", target, target, fields.String())
		}, nil},
		{"response", func(target string) string {
			return fmt.Sprintf("GET http://%s/ HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
		}, tiny[:len(tiny)-len("\r\nok")]},
	} {
		b.Run(bc.name, func(b *testing.B) {
			port := startFlood(b, bc.hold, true)
			target := fmt.Sprintf("localhost:%d", port)
			var p *Proxy
			addr, _ := startProxy(b, Config{Grants: grants(b, target)}, func(q *Proxy) { p = q })
			req := bc.req(target)
			runtime.GC()
			base := heapNow()
			stop := heapPeak()
			var live uint64
			for b.Loop() {
				var conns []net.Conn
				for range floodConns {
					c, err := net.Dial("tcp", addr)
					if err != nil {
						b.Fatal(err)
					}
					conns = append(conns, c)
					if _, err := io.WriteString(c, req); err != nil {
						b.Fatal(err)
					}
				}
				// For the proxy to read all there is.
				time.Sleep(300 * time.Millisecond)
				runtime.GC()
				live = max(live, heapNow()-base)
				for _, c := range conns {
					c.Close()
				}
				waitClosed(b, p)
			}
			b.ReportMetric(float64(stop()-base)/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(live)/(1<<20), "live-MiB")
		})
	}
}

// TestNamesMemory: a server that looks up MaxNames granted names of the
// longest form (under a wildcard grant) grows the host's heap by the
// table's documented bound, about 2 MiB, and not by more past it.
func TestNamesMemory(t *testing.T) {
	g, err := ParseGrant("*.example.com")
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(Config{Grants: []Grant{g}})
	if err != nil {
		t.Fatal(err)
	}
	label := strings.Repeat("a", 63)
	longName := func(i int) string {
		// 4 labels of 63, the last made unique, then .example.com: 253
		// bytes at most with the dots.
		n := fmt.Sprintf("%s.%s.%s.%06d%s.example.com", label, label, label, i, label[:45])
		return n[len(n)-253:]
	}
	query := func(name string) []byte {
		b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: 1, RecursionDesired: true})
		b.StartQuestions()
		b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName(name + "."), Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET})
		m, err := b.Finish()
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	runtime.GC()
	before := heapNow()
	for i := range MaxNames + 1000 {
		p.AnswerDNS(query(longName(i)))
	}
	runtime.GC()
	grew := int64(heapNow()) - int64(before)
	t.Logf("%d names of 253 bytes: the heap grew %.2f MiB", MaxNames, float64(grew)/(1<<20))
	if grew > 3<<20 {
		t.Errorf("the table of names grew the heap by %d bytes, more than its documented bound of about 2 MiB", grew)
	}
	runtime.KeepAlive(p)
}
