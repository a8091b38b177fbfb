package realservers_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost/mcphost/internal/egress"
	"github.com/mcphost/mcphost/mcphost"
	"github.com/mcphost/mcphost/sandbox"
)

// requireConfinement skips a test where this kernel cannot confine (and
// fails it in CI, which must run it).
func requireConfinement(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the network grants need Linux")
	}
	if _, err := sandbox.Probe(); err != nil {
		skipOrFail(t, fmt.Sprintf("SKIP: this kernel cannot confine: %v", err))
	}
}

// serveCounting serves h on a new listener of the host's loopback and
// counts the requests it answers.
func serveCounting(t *testing.T, h http.Handler) (port string, requests *atomic.Int64) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	requests = new(atomic.Int64)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		h.ServeHTTP(w, r)
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	_, port, _ = net.SplitHostPort(l.Addr().String())
	return port, requests
}

// TestMCPRemoteByName: mcp-remote, the common stdio bridge to a remote
// server, ignores the proxy variables unless given --enable-proxy. Given
// only `network = ["localhost:PORT"]`, it reaches the Streamable-HTTP
// server on that port of the host directly (the namespace listens there
// and the host carries the connection on), and mcphost lists and calls
// that server's tools through it. A server on another port of the host
// sees nothing.
func TestMCPRemoteByName(t *testing.T) {
	requireConfinement(t)
	nm := installDir(t)
	node := nodePath(t)
	entry := filepath.Join(nm, "mcp-remote", "dist", "proxy.js")
	remote := mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "1"}, nil)
	type in struct {
		Text string `json:"text"`
	}
	mcp.AddTool(remote, &mcp.Tool{Name: "shout", Description: "Returns the text in capitals."},
		func(ctx context.Context, req *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.ToUpper(a.Text)}}}, nil, nil
		})
	port, requests := serveCounting(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return remote }, nil))
	_, otherRequests := serveCounting(t, http.NotFoundHandler())

	read := []string{nm}
	if !underSystemPath(node) {
		read = append(read, filepath.Dir(filepath.Dir(node)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*startupTimeout)
	defer cancel()
	s, err := mcphost.Connect(ctx, []mcphost.ServerConfig{{
		Name:    "remote",
		Command: []string{node, entry, "http://localhost:" + port + "/mcp", "--transport", "http-only"},
		Read:    read, NetworkGrant: []string{"localhost:" + port}, Allow: []string{"shout"},
		StartupTimeout: startupTimeout,
	}}, mcphost.Options{Worktree: t.TempDir(), StateDir: t.TempDir(), CloseGrace: closeGrace})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var names []string
	for _, tool := range s.AllTools() {
		names = append(names, tool.Name)
	}
	if len(names) != 1 || names[0] != "mcp__remote__shout" {
		t.Fatalf("mcp-remote confined lists %v, want the remote server's one tool\nnotices:\n%s", names, strings.Join(s.Notices(), "\n"))
	}
	res, err := s.Call(ctx, "mcp__remote__shout", json.RawMessage(`{"text":"by name"}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "BY NAME" {
		t.Errorf("the call's result: %+v", res.Content)
	}
	if requests.Load() == 0 {
		t.Error("the remote server saw no request")
	}
	if n := otherRequests.Load(); n != 0 {
		t.Errorf("the server on the port not granted saw %d requests", n)
	}
	if info := s.Servers(); len(info) != 1 || !strings.Contains(info[0].Confinement, "+names") {
		t.Errorf("confinement: %+v", info)
	}
}

// nodeFetchScript fetches each URL of argv in turn with Node's own fetch
// (which Node before 22.21 never sends through a proxy) and prints, per
// URL, a JSON line: the body, or the error's code.
const nodeFetchScript = `
(async () => {
  for (const url of process.argv.slice(1)) {
    try {
      const r = await fetch(url, {signal: AbortSignal.timeout(10000)});
      console.log(JSON.stringify({url, body: await r.text()}));
    } catch (e) {
      const c = e.cause || e;
      console.log(JSON.stringify({url, error: String(c.code || c.message || c)}));
    }
  }
})();
`

// TestNodeFetchByName: Node's fetch, on the Node this machine has (20 here,
// which ignores proxy variables; a newer one is started without
// NODE_USE_ENV_PROXY, so it does too), confined with a grant of one name and
// port, reaches that name and port; a name not granted does not resolve
// (ENOTFOUND, and the stub resolver's refusal is reported), and another
// port of the granted name is refused. The service on the other port sees
// nothing.
func TestNodeFetchByName(t *testing.T) {
	requireConfinement(t)
	node := nodePath(t)
	port, requests := serveCounting(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "granted") }))
	oport, otherRequests := serveCounting(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "other") }))
	var gs []egress.Grant
	// The name resolves, on the host, to its loopback, which a name may
	// reach only where the address is granted too.
	for _, g := range []string{"api.granted.test:" + port, "127.0.0.1:" + port} {
		pg, err := egress.ParseGrant(g)
		if err != nil {
			t.Fatal(err)
		}
		gs = append(gs, pg)
	}
	var mu sync.Mutex
	var refused []egress.Refusal
	p, err := egress.New(egress.Config{
		Grants:   gs,
		Resolver: staticResolver{"api.granted.test": {netip.MustParseAddr("127.0.0.1")}},
		Refused: func(r egress.Refusal) {
			mu.Lock()
			refused = append(refused, r)
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	var read []string
	if !underSystemPath(node) {
		read = append(read, filepath.Dir(filepath.Dir(node)))
	}
	urls := []string{
		"http://api.granted.test:" + port + "/",
		"http://evil.test:" + port + "/",
		"http://api.granted.test:" + oport + "/",
	}
	ctx, cancel := context.WithTimeout(context.Background(), startupTimeout)
	defer cancel()
	proc, err := sandbox.Start(ctx, sandbox.Config{
		// Without NODE_USE_ENV_PROXY, so that a Node that would use the
		// proxy (22.21, 24.5 and later) takes the names path too.
		Name: "fetch", Argv: append([]string{"/usr/bin/env", "-u", "NODE_USE_ENV_PROXY", node, "-e", nodeFetchScript}, urls...),
		Worktree: t.TempDir(), Read: read, Proxy: p, TempHome: true,
		HostEnv: []string{"PATH=/usr/bin:/bin"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer proc.Close(time.Second)
	proc.Stdin().Close()
	got := map[string]map[string]string{}
	sc := bufio.NewScanner(proc.Stdout())
	for sc.Scan() {
		var line map[string]string
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("node printed %q", sc.Bytes())
		}
		got[line["url"]] = line
	}
	if g := got[urls[0]]; g["body"] != "granted" {
		t.Errorf("fetch of the granted name and port: %v", g)
	}
	if g := got[urls[1]]; g["error"] != "ENOTFOUND" {
		t.Errorf("fetch of a name not granted: %v, want ENOTFOUND", g)
	}
	if g := got[urls[2]]; g["error"] != "ECONNREFUSED" && g["error"] != "EACCES" {
		t.Errorf("fetch of the granted name's other port: %v, want ECONNREFUSED or EACCES", g)
	}
	if requests.Load() != 1 || otherRequests.Load() != 0 {
		t.Errorf("the granted service saw %d requests, the other %d; want 1 and 0", requests.Load(), otherRequests.Load())
	}
	mu.Lock()
	defer mu.Unlock()
	found := false
	for _, r := range refused {
		if r.Host == "evil.test" && r.Port == 0 && r.Grant == "evil.test" {
			found = true
		}
	}
	if !found {
		t.Errorf("no refusal of the lookup of evil.test among %+v", refused)
	}
}

// staticResolver resolves from a table.
type staticResolver map[string][]netip.Addr

func (r staticResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if a, ok := r[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}
