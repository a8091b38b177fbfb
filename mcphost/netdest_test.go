package mcphost

import (
	"strings"
	"testing"

	"github.com/mcphost/mcphost/internal/egress"
)

// netDestLines are real error lines of common runtimes (and a few traps),
// each with the destinations networkDests should find in it, as their
// grant entries.
var netDestLines = []struct {
	name string
	text string
	want []string
}{
	// Node.js (libuv, undici, node-fetch, pg).
	{"node enotfound", "Error: getaddrinfo ENOTFOUND mcp.stripe.com", []string{"mcp.stripe.com"}},
	{"node eai_again", "Error: getaddrinfo EAI_AGAIN api.x.com\n    at GetAddrInfoReqWrap.onlookupall [as oncomplete] (node:dns:120:26) {\n  errno: -3001,\n  code: 'EAI_AGAIN',\n  syscall: 'getaddrinfo',\n  hostname: 'api.x.com'\n}", []string{"api.x.com"}},
	{"node econnrefused", "Error: connect ECONNREFUSED 127.0.0.1:5432\n    at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1611:16)", []string{"127.0.0.1:5432"}},
	{"node eacces", "Error: connect EACCES 127.0.0.1:8080", []string{"127.0.0.1:8080"}},
	{"node enetunreach", "Error: connect ENETUNREACH 1.2.3.4:443 - Local (0.0.0.0:0)", []string{"1.2.3.4:443"}},
	{"node ipv6 unbracketed", "Error: connect ECONNREFUSED ::1:5432", []string{"[::1]:5432"}},
	{"node ipv6 global", "connect ENETUNREACH 2606:4700::6810:84e5:443 - Local (:::0)", []string{"[2606:4700::6810:84e5]:443"}},
	{"node fetch cause", "TypeError: fetch failed\n    at node:internal/deps/undici/undici:13510:13 {\n  [cause]: Error: getaddrinfo ENOTFOUND api.github.com", []string{"api.github.com"}},
	{"node-fetch url", "FetchError: request to https://api.openai.com/v1/models failed, reason: getaddrinfo ENOTFOUND api.openai.com", []string{"api.openai.com"}},
	{"node enotfound undefined", "Error: getaddrinfo ENOTFOUND undefined", nil},
	{"node single label", "Error: getaddrinfo ENOTFOUND db", nil},
	{"node etimedout name port", "Error: connect ETIMEDOUT api.x.com:8443", []string{"api.x.com:8443"}},
	// Go.
	{"go no such host", `Get "https://api.x.com/v1": dial tcp: lookup api.x.com on 127.0.0.53:53: no such host`, []string{"api.x.com"}},
	{"go lookup no server", "dial tcp: lookup api.example.com on [::1]:53: dial udp [::1]:53: socket: address family not supported by protocol", []string{"api.example.com"}},
	{"go lookup short", "fixture: fetching the API schema: lookup mcp.stripe.com: no such host", []string{"mcp.stripe.com"}},
	{"go refused", "dial tcp 1.2.3.4:443: connect: connection refused", []string{"1.2.3.4:443"}},
	{"go unreachable", "dial tcp 10.0.0.5:8080: connect: network is unreachable", []string{"10.0.0.5:8080"}},
	{"go ipv6", "dial tcp [2001:db8::1]:443: connect: network is unreachable", []string{"[2001:db8::1]:443"}},
	{"go tcp4 permission", "dial tcp4 127.0.0.1:6379: connect: permission denied", []string{"127.0.0.1:6379"}},
	// Python.
	{"requests", "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='api.x.com', port=443): Max retries exceeded with url: /v1/items (Caused by NameResolutionError(\"<urllib3.connection.HTTPSConnection object at 0x7f2c>: Failed to resolve 'api.x.com' ([Errno -3] Temporary failure in name resolution)\"))", []string{"api.x.com"}},
	{"requests port", "urllib3.exceptions.MaxRetryError: HTTPConnectionPool(host='localhost', port=8080): Max retries exceeded with url: / (Caused by NewConnectionError('<urllib3.connection.HTTPConnection object at 0x7f>: Failed to establish a new connection: [Errno 111] Connection refused'))", []string{"localhost:8080"}},
	{"urllib3 resolve", "Failed to resolve 'pypi.org' ([Errno -2] Name or service not known)", []string{"pypi.org"}},
	{"httpx nearby", "Traceback (most recent call last):\n  File \"/srv/server.py\", line 12, in fetch\n    r = httpx.get(\"https://api.weather.gov/points/1,2\")\n  File \"/usr/lib/python3/site-packages/httpx/_api.py\", line 195, in get\nhttpx.ConnectError: [Errno -3] Temporary failure in name resolution", []string{"api.weather.gov"}},
	{"httpx too far", "r = httpx.get(\"https://api.weather.gov/points\")\n1\n2\n3\n4\n5\n6\nhttpx.ConnectError: [Errno -3] Temporary failure in name resolution", nil},
	{"aiohttp", "aiohttp.client_exceptions.ClientConnectorDNSError: Cannot connect to host api.x.com:443 ssl:default [Temporary failure in name resolution]", []string{"api.x.com"}},
	{"urllib alone", "urllib.error.URLError: <urlopen error [Errno -3] Temporary failure in name resolution>", nil},
	// curl, Java, Rust, Deno.
	{"curl resolve", "curl: (6) Could not resolve host: registry.example.org", []string{"registry.example.org"}},
	{"curl connect", "curl: (7) Failed to connect to api.x.com port 8443 after 2 ms: Couldn't connect to server", []string{"api.x.com:8443"}},
	{"java", "java.net.UnknownHostException: api.x.com: Temporary failure in name resolution", []string{"api.x.com"}},
	{"reqwest", "Error: error sending request for url (https://api.x.com:8443/v1): error trying to connect: dns error: failed to lookup address information: Temporary failure in name resolution", []string{"api.x.com:8443"}},
	{"deno ipv6 url", "TypeError: error sending request for url (http://[2001:db8::2]:8080/): client error (Connect): tcp connect error: Network is unreachable (os error 101)", []string{"[2001:db8::2]:8080"}},
	{"url userinfo", "error sending request for url (https://user:pw@Api.X.com/v1)", []string{"api.x.com"}},
	// Several, each once, at most maxNetDests.
	{"several", "getaddrinfo ENOTFOUND a.x.com\ngetaddrinfo ENOTFOUND a.x.com\ngetaddrinfo ENOTFOUND b.x.com\nconnect ECONNREFUSED 127.0.0.1:1\nconnect ECONNREFUSED 127.0.0.1:2\nconnect ECONNREFUSED 127.0.0.1:3", []string{"a.x.com", "b.x.com", "127.0.0.1:1", "127.0.0.1:2"}},
	// Not destinations.
	{"url without failure", "Listening; docs at https://docs.example.com/start", nil},
	{"address without port", "Error: connect ECONNREFUSED 127.0.0.1", nil},
	{"localhost without port", "Error: getaddrinfo ENOTFOUND localhost", nil},
	{"port zero", "dial tcp 1.2.3.4:0: connect: connection refused", nil},
	{"port too big", "dial tcp 1.2.3.4:70000: connect: connection refused", nil},
	{"numeric name", "getaddrinfo ENOTFOUND 1.2.3", nil},
	{"non-ascii", "getaddrinfo ENOTFOUND bücher.example", nil},
	{"control", "getaddrinfo ENOTFOUND api\x1b[31m.x.com", nil},
	{"wildcard", "getaddrinfo ENOTFOUND *.x.com", nil},
	{"zone", "connect ECONNREFUSED fe80::1%eth0:80", nil},
	{"go udp resolver only", "read udp 127.0.0.1:40000->127.0.0.53:53: read: connection refused", nil},
	{"plain error", "Error: ENOENT: no such file or directory, open '/home/u/.config/x.json'", nil},
	{"empty", "", nil},
}

func TestNetworkDests(t *testing.T) {
	for _, tt := range netDestLines {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, d := range networkDests(tt.text) {
				got = append(got, d.grant())
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("networkDests(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}

func TestNetDestCovered(t *testing.T) {
	grants := func(entries ...string) []egress.Grant {
		var gs []egress.Grant
		for _, e := range entries {
			g, err := egress.ParseGrant(e)
			if err != nil {
				t.Fatal(err)
			}
			gs = append(gs, g)
		}
		return gs
	}
	dest := func(text string) netDest {
		d, ok := parseDest(text)
		if !ok {
			t.Fatalf("parseDest(%q) failed", text)
		}
		return d
	}
	for _, tt := range []struct {
		dest   string
		grants []string
		want   bool
	}{
		{"api.x.com", []string{"api.x.com"}, true},
		{"api.x.com", []string{"api.x.com:8443"}, true}, // a lookup: the name resolves
		{"api.x.com:443", []string{"api.x.com"}, true},
		{"api.x.com:80", []string{"api.x.com"}, true},
		{"api.x.com:8443", []string{"api.x.com"}, false},
		{"api.x.com:8443", []string{"api.x.com:8443"}, true},
		{"api.x.com", []string{"*.x.com"}, true},
		{"x.com", []string{"*.x.com"}, false},
		{"api.x.com", []string{"other.x.com", "localhost:443"}, false},
		{"127.0.0.1:5432", []string{"localhost:5432"}, true},
		{"127.0.0.1:5432", []string{"127.0.0.1:5432"}, true},
		{"127.0.0.1:5433", []string{"localhost:5432"}, false},
		{"[::1]:5432", []string{"localhost:5432"}, true},
		// As the proxy decides it: only a localhost grant covers the name
		// localhost (which may resolve to ::1), so adding one is the advice.
		{"localhost:5432", []string{"127.0.0.1:5432"}, false},
		{"localhost:5432", []string{"localhost:5432"}, true},
		{"1.2.3.4:443", []string{"api.x.com"}, false},
		{"1.2.3.4:443", []string{"1.2.3.4:443"}, true},
	} {
		if got := dest(tt.dest).covered(grants(tt.grants...)); got != tt.want {
			t.Errorf("%s covered by %q = %v, want %v", tt.dest, tt.grants, got, tt.want)
		}
	}
}

// FuzzNetworkDest: whatever a server writes, networkDests returns at most
// maxNetDests destinations, each once, each a grant egress.ParseGrant
// accepts (so a notice never suggests an entry the config refuses), made of
// text the server wrote (it invents nothing), and printable as it is.
func FuzzNetworkDest(f *testing.F) {
	for _, tt := range netDestLines {
		f.Add(tt.text)
	}
	f.Fuzz(func(t *testing.T, text string) {
		ds := networkDests(text)
		if len(ds) > maxNetDests {
			t.Fatalf("%d destinations", len(ds))
		}
		lower := strings.ToLower(text)
		for i, d := range ds {
			g := d.grant()
			if _, err := egress.ParseGrant(g); err != nil {
				t.Fatalf("destination %q is not a grant: %v", g, err)
			}
			if printable(g, 300) != g {
				t.Fatalf("destination %q is not printable as it is", g)
			}
			if d.host != "" && !strings.Contains(lower, d.host) {
				t.Fatalf("destination %q is not in the text", d.host)
			}
			if d.addr.IsValid() && d.port == 0 {
				t.Fatalf("address %v without a port", d.addr)
			}
			for _, e := range ds[:i] {
				if e.grant() == g {
					t.Fatalf("%s twice", g)
				}
			}
		}
	})
}
