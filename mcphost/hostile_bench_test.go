package mcphost

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// rawBench is a raw fixture serving echoDefs, for benchmarks.
func rawBench(b *testing.B, dir, name string, flags ...string) ServerConfig {
	b.Helper()
	path := filepath.Join(dir, name+".json")
	if err := os.WriteFile(path, []byte(echoDefs), 0o644); err != nil {
		b.Fatal(err)
	}
	sc := fixture(name, append([]string{"-raw", path}, flags...)...)
	sc.Allow = []string{"echo"}
	sc.Deny = nil
	return sc
}

// peakRSS returns the process's peak resident set since the last
// resetPeakRSS (VmHWM), in bytes, or 0 where it cannot be read.
func peakRSS() uint64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("VmHWM:")); ok {
			kb, _ := strconv.ParseUint(string(bytes.TrimSuffix(bytes.TrimSpace(v), []byte(" kB"))), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// resetPeakRSS resets VmHWM to the current resident set (Linux 4.0 on).
func resetPeakRSS() { os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// BenchmarkRequestFlood: a server floods ping requests (params of 1 KiB,
// which trips the bound on unanswered requests, or 1 MiB, which trips the
// bound on one message) and never reads the answers. ns/op is the time from
// Connect to the notice that mcphost stopped it; peak-heap-MiB and
// peak-RSS-MiB are the host's peak while it ran (the RSS includes the
// test binary's own).
func BenchmarkRequestFlood(b *testing.B) {
	for _, kib := range []int{1, 1024} {
		b.Run(fmt.Sprintf("ping=%dKiB", kib), func(b *testing.B) {
			opts := benchOpts(b)
			sc := rawBench(b, opts.Worktree, "flood", "-raw-mode", "flood", "-flood-kib", strconv.Itoa(kib))
			runtime.GC()
			resetPeakRSS()
			var heapPeak atomic.Uint64
			stop := make(chan struct{})
			sampled := make(chan struct{})
			go func() {
				defer close(sampled)
				var ms runtime.MemStats
				for {
					runtime.ReadMemStats(&ms)
					if ms.HeapInuse > heapPeak.Load() {
						heapPeak.Store(ms.HeapInuse)
					}
					select {
					case <-stop:
						return
					case <-time.After(5 * time.Millisecond):
					}
				}
			}()
			for b.Loop() {
				s := benchConnect(b, opts, sc)
				deadline := time.Now().Add(30 * time.Second)
				for noticeWith(s, "flood", "mcphost stopped it") == "" {
					if time.Now().After(deadline) {
						b.Fatalf("the flooding server was not stopped: %q", s.Notices())
					}
					time.Sleep(time.Millisecond)
				}
				s.Close()
			}
			close(stop)
			<-sampled
			b.ReportMetric(float64(heapPeak.Load())/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(peakRSS())/(1<<20), "peak-RSS-MiB")
		})
	}
}

// BenchmarkStuckWrite: a call whose request (1 MiB) is stuck in the pipe of
// a server that stopped reading. ns-late/op is the time from the moment the
// call should end (its caller cancels, or its call_timeout passes, 300ms
// after its start) to its return; the server is restarted between calls.
func BenchmarkStuckWrite(b *testing.B) {
	args := json.RawMessage(bigText(1 << 20))
	for _, how := range []string{"cancel", "call_timeout"} {
		b.Run(how, func(b *testing.B) {
			opts := benchOpts(b)
			sc := rawBench(b, opts.Worktree, "stuck", "-raw-mode", "stop-reading")
			// Long enough for the 1 MiB arguments to be checked and
			// their write to be stuck when the call should end.
			const timeout = 300 * time.Millisecond
			if how == "call_timeout" {
				sc.CallTimeout = timeout
			}
			s := benchConnect(b, opts, sc)
			defer s.Close()
			var late time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				if i > 0 {
					if err := s.Restart(context.Background(), "stuck"); err != nil {
						b.Fatal(err)
					}
				}
				ctx, cancel := context.WithCancel(context.Background())
				start := time.Now()
				end := start.Add(timeout)
				if how == "cancel" {
					time.AfterFunc(timeout, cancel)
				}
				_, err := s.Call(ctx, "mcp__stuck__echo", args)
				returned := time.Now()
				cancel()
				if err == nil {
					b.Fatal("a call of a server that does not read succeeded")
				}
				late += returned.Sub(end)
			}
			b.StopTimer()
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(float64(late.Nanoseconds())/float64(b.N), "ns-late/op")
		})
	}
}
