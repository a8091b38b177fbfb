package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcphost/mcphost/internal/egress"
)

// bulkSize is what one bulk request of BenchmarkNetwork downloads.
const bulkSize = 16 << 20

// BenchmarkNetwork measures what the network by name costs a server: time
// to first byte of a fresh connection (ttfb: connect, GET, first byte) and
// throughput of a 16 MiB download (bulk), to a service on the host's
// loopback, three ways: through the proxy (proxy: CONNECT to localhost:PORT
// first), directly by name (names: the name looked up through the
// namespace's stub resolver, then a plain connection that the host's proxy
// carries on, as a client that knows no proxy makes), directly to a
// granted address (addr: the same without the lookup), and on the host's
// own network (host: Network true, no proxy). Compare the sub-benchmarks of
// one run: ns/op includes the same request and reply over the server's
// stdio for all; ttfb-µs is measured inside the server.
func BenchmarkNetwork(b *testing.B) {
	if _, err := Probe(); errors.Is(err, ErrUnsupported) {
		b.Skipf("this kernel cannot confine: %v", err)
	}
	payload := bytes.Repeat([]byte("x"), bulkSize)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/bulk" {
			w.Header().Set("Content-Length", strconv.Itoa(len(payload)))
			w.Write(payload)
			return
		}
		w.Write([]byte("ok"))
	})}
	go srv.Serve(l)
	defer srv.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	for _, mode := range []string{"proxy", "names", "addr", "host"} {
		cfg := Config{Name: "bench", Argv: []string{hostilePath()}, Worktree: b.TempDir(), HostEnv: []string{"PATH=/usr/bin:/bin"}}
		target, how := "127.0.0.1:"+port, "direct"
		switch mode {
		case "host":
			cfg.Network = true
		default:
			var gs []egress.Grant
			for _, s := range []string{"localhost:" + port, "bench.test:" + port, "127.0.0.1:" + port} {
				g, err := egress.ParseGrant(s)
				if err != nil {
					b.Fatal(err)
				}
				gs = append(gs, g)
			}
			res := &recordingResolver{names: map[string][]netip.Addr{"bench.test": {netip.MustParseAddr("127.0.0.1")}}}
			p, err := egress.New(egress.Config{Grants: gs, Resolver: res})
			if err != nil {
				b.Fatal(err)
			}
			cfg.Proxy = p
			switch mode {
			case "proxy":
				target, how = "localhost:"+port, "proxy"
			case "names":
				target = "bench.test:" + port
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		p, err := Start(ctx, cfg)
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		sc := bufio.NewScanner(p.Stdout())
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		enc := json.NewEncoder(p.Stdin())
		do := func(b *testing.B, op string) (time.Duration, int64) {
			if err := enc.Encode(map[string]any{"op": op, "args": []string{target, how}}); err != nil {
				b.Fatal(err)
			}
			if !sc.Scan() {
				b.Fatalf("no reply: %v", sc.Err())
			}
			var r reply
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil || !r.OK {
				b.Fatalf("%s: %s %v", op, sc.Bytes(), err)
			}
			var ns, n int64
			if _, err := fmt.Sscan(r.Out, &ns, &n); err != nil {
				b.Fatalf("reply %q: %v", r.Out, err)
			}
			return time.Duration(ns), n
		}
		b.Run("ttfb/"+mode, func(b *testing.B) {
			var total time.Duration
			for b.Loop() {
				d, _ := do(b, "ttfb")
				total += d
			}
			b.ReportMetric(float64(total.Microseconds())/float64(b.N), "ttfb-µs")
		})
		b.Run("bulk/"+mode, func(b *testing.B) {
			b.SetBytes(bulkSize)
			for b.Loop() {
				if _, n := do(b, "bulk"); n < bulkSize {
					b.Fatalf("read %d bytes, want %d and the header", n, bulkSize)
				}
			}
		})
		if err := p.Close(time.Second); err != nil && !strings.Contains(err.Error(), "exit") {
			b.Fatal(err)
		}
	}
}
