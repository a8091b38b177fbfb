package mcphost

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost/mcphost/pin"
)

// Each benchmark here has its reference, the bare go-sdk client doing the
// same work, as a sibling sub-benchmark, so a ratio is measured in one run.
// BENCHMARKS.md has the table and how to read it.
//
// The machines these run on are often shared, so wall time is noisy; where
// the host's own work is the question, a benchmark also reports
// host-cpu-ns/op: the CPU time of this process (every thread, the garbage
// collector included; not the server's) per operation.

// reportHostCPU reports the CPU time used since start per operation.
func reportHostCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(hostCPU()-start)/float64(b.N), "host-cpu-ns/op")
}

// reportOpCPU reports the CPU time that this process and its reaped
// descendants (opCPU) used since start, per operation: on a machine of
// few cores, what a start costs every other process there, and a measure
// that another tenant's load moves less than wall time. Where opCPU
// cannot say, nothing is reported.
func reportOpCPU(b *testing.B, start time.Duration) {
	if now, ok := opCPU(); ok {
		b.ReportMetric(float64(now-start)/float64(b.N), "cpu-ns/op")
	}
}

// bareConnect starts the fixture with the go-sdk client alone: no sandbox,
// no naming, schemas, decisions or pins.
func bareConnect(b *testing.B, flags ...string) *mcp.ClientSession {
	b.Helper()
	cmd := exec.Command(fixtureBin, flags...)
	client := mcp.NewClient(&mcp.Implementation{Name: "bare", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd, TerminateDuration: time.Second}, nil)
	if err != nil {
		b.Fatal(err)
	}
	return cs
}

func bareListAll(b *testing.B, cs *mcp.ClientSession) int {
	n := 0
	for _, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			b.Fatal(err)
		}
		n++
	}
	return n
}

func benchConnect(b *testing.B, opts Options, servers ...ServerConfig) *Session {
	b.Helper()
	s, err := Connect(context.Background(), servers, opts)
	if err != nil {
		b.Fatal(err)
	}
	for _, srv := range s.Servers() {
		if srv.State != ServerRunning {
			b.Fatalf("server %s: %s: %s", srv.Name, srv.State, srv.Error)
		}
	}
	return s
}

func benchOpts(b *testing.B) Options {
	return Options{Worktree: b.TempDir(), StateDir: b.TempDir(), ReadOnlyState: true, CloseGrace: time.Second}
}

// BenchmarkStartList: start one server, initialize, list its tools, close.
func BenchmarkStartList(b *testing.B) {
	b.Run("bare-sdk", func(b *testing.B) {
		cpu, _ := opCPU()
		for b.Loop() {
			cs := bareConnect(b)
			bareListAll(b, cs)
			cs.Close()
		}
		reportOpCPU(b, cpu)
	})
	for _, mode := range []struct {
		name       string
		unconfined bool
	}{{"mcphost-confined", false}, {"mcphost-unconfined", true}} {
		b.Run(mode.name, func(b *testing.B) {
			opts := benchOpts(b)
			sc := fixture("one")
			sc.Unconfined = mode.unconfined
			cpu, _ := opCPU()
			for b.Loop() {
				benchConnect(b, opts, sc).Close()
			}
			reportOpCPU(b, cpu)
		})
	}
}

// BenchmarkStartListEight: one server, then eight at once, each started,
// initialized, listed and closed as in BenchmarkStartList, by the bare
// go-sdk client (goroutines) and by mcphost confined. On a machine of fewer
// cores than servers the eight share them, bare or not: compare mcphost's
// ratio of eight to one with the bare client's.
func BenchmarkStartListEight(b *testing.B) {
	for _, n := range []int{1, 8} {
		b.Run(fmt.Sprintf("bare-sdk-%d", n), func(b *testing.B) {
			for b.Loop() {
				var wg sync.WaitGroup
				for range n {
					wg.Go(func() {
						cs := bareConnect(b)
						bareListAll(b, cs)
						cs.Close()
					})
				}
				wg.Wait()
			}
		})
	}
	for _, n := range []int{1, 8} {
		b.Run(fmt.Sprintf("mcphost-confined-%d", n), func(b *testing.B) {
			opts := benchOpts(b)
			var servers []ServerConfig
			for i := range n {
				servers = append(servers, fixture(fmt.Sprintf("s%d", i)))
			}
			for b.Loop() {
				benchConnect(b, opts, servers...).Close()
			}
		})
	}
}

// BenchmarkStartListEightSlow: eight servers that each take 300ms to
// initialize start in parallel, so eight cost about what one does.
func BenchmarkStartListEightSlow(b *testing.B) {
	for _, n := range []int{1, 8} {
		b.Run(fmt.Sprintf("mcphost-%d", n), func(b *testing.B) {
			opts := benchOpts(b)
			var servers []ServerConfig
			for i := range n {
				servers = append(servers, fixture(fmt.Sprintf("s%d", i), "-init-delay", "300ms"))
			}
			for b.Loop() {
				benchConnect(b, opts, servers...).Close()
			}
		})
	}
}

// BenchmarkCall: one echo call, sequential and from 16 goroutines at once.
func BenchmarkCall(b *testing.B) {
	args := json.RawMessage(`{"text":"hello"}`)
	b.Run("bare-sdk", func(b *testing.B) {
		cs := bareConnect(b)
		defer cs.Close()
		cpu := hostCPU()
		for b.Loop() {
			if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: args}); err != nil {
				b.Fatal(err)
			}
		}
		reportHostCPU(b, cpu)
	})
	b.Run("mcphost", func(b *testing.B) {
		s := benchConnect(b, benchOpts(b), fixture("one"))
		defer s.Close()
		cpu := hostCPU()
		for b.Loop() {
			if _, err := s.Call(context.Background(), "mcp__one__echo", args); err != nil {
				b.Fatal(err)
			}
		}
		reportHostCPU(b, cpu)
	})
	// With OnProgress set every call carries a progress token (and the
	// tap looks at every notification): what that costs per call.
	b.Run("mcphost-progress", func(b *testing.B) {
		opts := benchOpts(b)
		opts.OnProgress = func(Progress) {}
		s := benchConnect(b, opts, fixture("one"))
		defer s.Close()
		cpu := hostCPU()
		for b.Loop() {
			if _, err := s.Call(context.Background(), "mcp__one__echo", args); err != nil {
				b.Fatal(err)
			}
		}
		reportHostCPU(b, cpu)
	})
	// 16 goroutines calling at once: ns/op is wall time over all calls,
	// so throughput scales when it drops below the sequential ns/op.
	parallel16 := max(1, 16/runtime.GOMAXPROCS(0))
	b.Run("bare-sdk-parallel16", func(b *testing.B) {
		cs := bareConnect(b)
		defer cs.Close()
		b.SetParallelism(parallel16)
		cpu := hostCPU()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: args}); err != nil {
					b.Error(err)
					return
				}
			}
		})
		reportHostCPU(b, cpu)
	})
	b.Run("mcphost-parallel16", func(b *testing.B) {
		s := benchConnect(b, benchOpts(b), fixture("one"))
		defer s.Close()
		b.SetParallelism(parallel16)
		cpu := hostCPU()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := s.Call(context.Background(), "mcp__one__echo", args); err != nil {
					b.Error(err)
					return
				}
			}
		})
		reportHostCPU(b, cpu)
	})
}

// BenchmarkDiscovery10k: a server with 10,000 tools in pages of 1,000. The
// host-side sub-benchmark times only what mcphost adds per listing
// (naming, closing, digest, pin lookup), reported per tool.
func BenchmarkDiscovery10k(b *testing.B) {
	flags := []string{"-tools", "10000", "-page", "1000"}
	b.Run("bare-sdk", func(b *testing.B) {
		cpu := hostCPU()
		for b.Loop() {
			cs := bareConnect(b, flags...)
			if n := bareListAll(b, cs); n < 10000 {
				b.Fatalf("%d tools", n)
			}
			cs.Close()
		}
		reportHostCPU(b, cpu)
	})
	b.Run("mcphost", func(b *testing.B) {
		opts := benchOpts(b)
		cpu := hostCPU()
		for b.Loop() {
			benchConnect(b, opts, fixture("many", flags...)).Close()
		}
		reportHostCPU(b, cpu)
	})
	// host-side: what mcphost adds per tool on top of the protocol, on
	// first sight (nothing cached) and on a re-list after list_changed
	// (every definition as before, so the per-tool work is reused).
	for _, mode := range []string{"host-side-first", "host-side-relist"} {
		b.Run(mode, func(b *testing.B) {
			s := benchConnect(b, benchOpts(b), fixture("many", flags...))
			defer s.Close()
			srv := s.servers["many"]
			raws := srv.lastList
			// A state that pins every tool, as after a review.
			st := &pin.State{Tools: map[string]pin.Entry{}}
			for _, raw := range raws {
				var d toolDef
				d.decode(raw)
				dg, _ := pin.Digest(raw)
				st.Tools[pin.Key("many", *d.Name)] = pin.Entry{Digest: dg, Definition: raw}
			}
			b.ResetTimer()
			cpu := hostCPU()
			for b.Loop() {
				if mode == "host-side-first" {
					srv.mu.Lock()
					srv.prepCache = nil
					srv.mu.Unlock()
				}
				entries, _, _ := srv.build(raws, loadedState{v: &stateView{st: st}})
				if len(entries) != len(raws) {
					b.Fatalf("%d of %d tools built", len(entries), len(raws))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(raws)), "ns/tool")
			reportHostCPU(b, cpu)
		})
	}
}

// BenchmarkCloseEight: closing eight servers, half of which ignore stdin
// closing and SIGTERM, takes about one grace period, not eight.
func BenchmarkCloseEight(b *testing.B) {
	opts := benchOpts(b)
	opts.CloseGrace = 200 * time.Millisecond
	var servers []ServerConfig
	for i := range 8 {
		var flags []string
		if i%2 == 0 {
			flags = []string{"-ignore-eof"}
		}
		servers = append(servers, fixture(fmt.Sprintf("s%d", i), flags...))
	}
	for b.Loop() {
		b.StopTimer()
		s := benchConnect(b, opts, servers...)
		b.StartTimer()
		s.Close()
	}
}

// BenchmarkHeapPerServer reports the host heap a connected server holds.
func BenchmarkHeapPerServer(b *testing.B) {
	const n = 8
	opts := benchOpts(b)
	var servers []ServerConfig
	for i := range n {
		servers = append(servers, fixture(fmt.Sprintf("s%d", i)))
	}
	var total uint64
	var mu sync.Mutex
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		s := benchConnect(b, opts, servers...)
		runtime.GC()
		runtime.ReadMemStats(&after)
		mu.Lock()
		if after.HeapAlloc > before.HeapAlloc {
			total += after.HeapAlloc - before.HeapAlloc
		}
		mu.Unlock()
		s.Close()
	}
	b.ReportMetric(float64(total)/float64(b.N*n), "heap-B/server")
}

// BenchmarkStderrFlood: a server writes 100 MiB to stderr before it
// answers initialize; Connect drains it. MB/s is the drain rate, and
// peak-heap-B the most the host heap grew meanwhile (sampled every
// millisecond): bounded by the kept tail and the pipe copy's buffer, not
// by the flood. With a debug logger every line is also routed to it.
func BenchmarkStderrFlood(b *testing.B) {
	const mib = 100
	for _, mode := range []string{"no-logger", "debug-logger"} {
		b.Run(mode, func(b *testing.B) {
			opts := benchOpts(b)
			if mode == "debug-logger" {
				opts.Logger = slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelDebug}))
			}
			sc := fixture("flood", "-flood-stderr", fmt.Sprint(mib))
			b.SetBytes(mib << 20)
			var peak uint64
			for b.Loop() {
				b.StopTimer()
				runtime.GC()
				var before runtime.MemStats
				runtime.ReadMemStats(&before)
				stop := sampleHeap(time.Millisecond)
				b.StartTimer()
				s := benchConnect(b, opts, sc)
				b.StopTimer()
				if p := stop(); p > before.HeapAlloc {
					peak = max(peak, p-before.HeapAlloc)
				}
				if w := s.servers["flood"].stderr.Written(); w < mib<<20 {
					b.Fatalf("only %d bytes of stderr drained", w)
				}
				s.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(peak), "peak-heap-B")
		})
	}
}

// sampleHeap samples HeapAlloc every interval until the returned function
// is called, which returns the highest value seen.
func sampleHeap(interval time.Duration) func() uint64 {
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var m runtime.MemStats
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			runtime.ReadMemStats(&m)
			peak.Store(max(peak.Load(), m.HeapAlloc))
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

// BenchmarkBuildGenerated is host-side-first without a server process:
// build on 10,000 definitions shaped like the discovery fixture's, every
// one pinned, nothing cached. It profiles cleanly where the full benchmark
// also holds a running server and its listing.
func BenchmarkBuildGenerated(b *testing.B) {
	const n = 10000
	raws := make([]json.RawMessage, n)
	st := &pin.State{Tools: map[string]pin.Entry{}}
	for i := range raws {
		raws[i] = fmt.Appendf(nil, `{"description":"Generated tool number %d: echo the arguments.","inputSchema":{"type":"object","properties":{"x_%d":{"type":"string","description":"field %d"},"n":{"type":"integer","minimum":%d}},"required":["x_%d"]},"name":"gen_%05d"}`, i, i, i, i, i, i)
		dg, err := pin.Digest(raws[i])
		if err != nil {
			b.Fatal(err)
		}
		st.Tools[pin.Key("many", fmt.Sprintf("gen_%05d", i))] = pin.Entry{Digest: dg, Definition: raws[i]}
	}
	srv := &server{cfg: ServerConfig{Name: "many", Allow: []string{"gen_00001"}, Default: Approval}, sess: &Session{reviews: &stateStore{}}}
	b.ReportAllocs()
	cpu := hostCPU()
	for b.Loop() {
		srv.prepCache = nil
		entries, _, _ := srv.build(raws, loadedState{v: &stateView{st: st}})
		if len(entries) != n {
			b.Fatalf("%d of %d tools built", len(entries), n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/tool")
	reportHostCPU(b, cpu)
}
