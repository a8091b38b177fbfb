package sandbox

import (
	"context"
	"errors"
	"os/exec"
	"testing"
	"time"

	"github.com/mcphost/mcphost/internal/egress"
)

// BenchmarkStart measures starting /bin/true and closing it: with a bare
// exec for reference, unconfined (Off: the helper alone) and confined
// (every layer), each with the embedded helper program and with the host
// program (this test binary) re-executed as the helper, which is what
// Start falls back to. Compare the ns/op of these in one run.
func BenchmarkStart(b *testing.B) {
	if _, err := Probe(); errors.Is(err, ErrUnsupported) {
		b.Skipf("this kernel cannot confine: %v", err)
	}
	wt := b.TempDir()
	b.Run("exec", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command("/bin/true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	// A network grant's proxy: proxy-only is the HTTP proxy alone (a
	// listener in the namespace), names adds the listeners of the granted
	// ports, the loopback's prefixes and the nameserver.
	grants := func() []egress.Grant {
		var gs []egress.Grant
		for _, s := range []string{"api.example.com", "localhost:5432", "10.0.0.5:8080"} {
			g, err := egress.ParseGrant(s)
			if err != nil {
				b.Fatal(err)
			}
			gs = append(gs, g)
		}
		return gs
	}
	names, err := egress.New(egress.Config{Grants: grants()})
	if err != nil {
		b.Fatal(err)
	}
	for _, mode := range []struct {
		name  string
		off   bool
		opts  startOptions
		proxy Proxy
	}{
		{"off", true, startOptions{}, nil},
		{"confined", false, startOptions{}, nil},
		{"off-selfhelper", true, startOptions{selfHelper: true}, nil},
		{"confined-selfhelper", false, startOptions{selfHelper: true}, nil},
		{"confined-proxy-only", false, startOptions{}, proxyOnly{names}},
		{"confined-names", false, startOptions{}, names},
	} {
		b.Run(mode.name, func(b *testing.B) {
			cfg := Config{Name: "bench", Argv: []string{"/bin/true"}, Worktree: wt, Off: mode.off, HostEnv: []string{"PATH=/usr/bin:/bin"}, Proxy: mode.proxy}
			var starting, run, closing time.Duration
			for b.Loop() {
				t0 := time.Now()
				p, err := start(context.Background(), cfg, mode.opts)
				if err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				<-p.Done()
				t2 := time.Now()
				if err := p.Close(time.Second); err != nil {
					b.Fatal(err)
				}
				starting, run, closing = starting+t1.Sub(t0), run+t2.Sub(t1), closing+time.Since(t2)
				if got := p.ExitStatus(); got != "exit status 0" {
					b.Fatalf("ExitStatus %q", got)
				}
			}
			// Where the time goes: Start (up to the server's exec), the
			// server's run until Done, and Close.
			n := float64(b.N)
			b.ReportMetric(float64(starting.Microseconds())/n, "start-µs/op")
			b.ReportMetric(float64(run.Microseconds())/n, "run-µs/op")
			b.ReportMetric(float64(closing.Microseconds())/n, "close-µs/op")
		})
	}
}
