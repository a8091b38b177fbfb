package mcphost

import (
	"context"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcphost/mcphost/sandbox"
)

// countingListener accepts on a host loopback port, counting connections.
func countingListener(t *testing.T) (port string, n func() int64) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var count atomic.Int64
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			count.Add(1)
			c.Close()
		}
	}()
	_, port, _ = net.SplitHostPort(l.Addr().String())
	return port, count.Load
}

// TestNetworkGrantNotices: a server with network = [...] reaches what it
// was granted; what it was refused is a notice, once per destination even
// across a restart, that names the destination and the grant to add.
func TestNetworkGrantNotices(t *testing.T) {
	if _, err := sandbox.Probe(); err != nil {
		t.Skipf("this kernel cannot confine: %v", err)
	}
	granted, grantedN := countingListener(t)
	other, otherN := countingListener(t)
	e := newEnv(t)
	sc := fixture("net", "-connect", "localhost:"+granted+",localhost:"+other+",evil.example.net:443")
	sc.NetworkGrant = []string{"localhost:" + granted}
	s := e.connect(e.opts(), sc)
	if info := s.Servers()[0]; info.Network != "localhost:"+granted || !strings.Contains(info.Confinement, "proxy") {
		t.Errorf("ServerInfo %+v, want network %q and a proxy in the confinement", info, "localhost:"+granted)
	}
	if err := s.Restart(context.Background(), "net"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for grantedN() < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if grantedN() < 2 {
		t.Errorf("the granted service saw %d connections, want one per start", grantedN())
	}
	if otherN() != 0 {
		t.Errorf("the service not granted saw %d connections", otherN())
	}
	want := map[string]string{
		"localhost:" + other:   `add "localhost:` + other + `" to network in [mcp.net]`,
		"evil.example.net:443": `add "evil.example.net" to network in [mcp.net]`,
	}
	for dest, hint := range want {
		n := 0
		for _, notice := range s.Notices() {
			if strings.Contains(notice, "server net tried to reach "+dest+",") {
				n++
				if !strings.Contains(notice, hint) {
					t.Errorf("notice %q does not say %s", notice, hint)
				}
			}
		}
		if n != 1 {
			t.Errorf("%d notices for %s, want 1: %q", n, dest, s.Notices())
		}
	}
}
