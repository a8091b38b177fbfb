package mcphost

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/BurntSushi/toml"

	"github.com/mcphost/mcphost/internal/goldenfile"
	"github.com/mcphost/mcphost/pin"
)

// Its own flag name, so that it cannot clash with another test file's
// -update in this package.
var importUpdate = flag.Bool("update-import", false, "rewrite the golden files under testdata/import from what Import returns (review the diff by hand)")

// fakeConfig is a person's configuration for Import, made up: files by
// path, and what npm config get answers by key (a key it lacks is
// "undefined", as npm prints it; npmErr makes npm fail, as when it is not
// installed).
type fakeConfig struct {
	env    []string
	files  map[string]string
	npm    map[string]string
	npmErr error
	// hosts are the addresses of names; a name not in it does not
	// resolve.
	hosts map[string][]string
}

func (c fakeConfig) options() ImportOptions {
	return ImportOptions{
		Env: append([]string{"HOME=/home/pat"}, c.env...),
		NpmConfig: func(_ context.Context, key string) (string, error) {
			if c.npmErr != nil {
				return "", c.npmErr
			}
			if v, ok := c.npm[key]; ok {
				return v + "\n", nil
			}
			return "undefined\n", nil
		},
		ReadFile: func(path string) ([]byte, error) {
			if v, ok := c.files[filepath.ToSlash(path)]; ok {
				return []byte(v), nil
			}
			return nil, &fs.PathError{Op: "open", Path: path, Err: fs.ErrNotExist}
		},
		LookupHost: func(_ context.Context, host string) ([]netip.Addr, error) {
			list, ok := c.hosts[host]
			if !ok {
				return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
			}
			var out []netip.Addr
			for _, a := range list {
				out = append(out, netip.MustParseAddr(a))
			}
			return out, nil
		},
	}
}

// goldenConfig is the configuration every golden file is made with.
var goldenConfig = fakeConfig{
	npm: map[string]string{
		"registry":       "https://registry.npmjs.org/",
		"@corp:registry": "https://npm.corp.example:8443/",
	},
	files: map[string]string{
		"/home/pat/.config/uv/uv.toml":   "index-url = \"https://pypi.mirror.example/simple/\"\n",
		"/home/pat/.config/pip/pip.conf": "[global]\nindex-url = https://pip.mirror.example/simple\n",
	},
	hosts: map[string][]string{
		"registry.npmjs.org": {"104.16.0.35"},
		"npm.corp.example":   {"10.20.30.40", "8.8.4.4"},
	},
}

// importGolden is what a golden file holds: Import's result, with the TOML
// as lines so that a diff reads.
type importGolden struct {
	Format  string   `json:"format"`
	Names   []string `json:"names"`
	Sources []string `json:"sources"`
	Notes   []string `json:"notes"`
	TOML    []string `json:"toml"`
}

// TestImportGolden imports one input of each format and compares what it
// makes with testdata/import/*.golden.json; every output must be what
// Parse accepts, holding the tables Names says.
func TestImportGolden(t *testing.T) {
	inputs, err := filepath.Glob("testdata/import/*")
	if err != nil {
		t.Fatal(err)
	}
	inputs = slices.DeleteFunc(inputs, func(p string) bool { return strings.HasSuffix(p, ".golden.json") })
	if len(inputs) < 7 {
		t.Fatalf("found only %d inputs: %v", len(inputs), inputs)
	}
	for _, in := range inputs {
		t.Run(filepath.Base(in), func(t *testing.T) {
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			im, err := Import(context.Background(), data, goldenConfig.options())
			if err != nil {
				t.Fatalf("Import: %v", err)
			}
			checkParses(t, im)
			got := importGolden{Format: im.Format, Names: im.Names, Sources: im.Sources, Notes: im.Notes, TOML: strings.Split(im.TOML, "\n")}
			goldenfile.Compare(t, in+".golden.json", got, *importUpdate)
		})
	}
}

// checkParses fails the test unless im.TOML is accepted by Parse and holds
// exactly the tables im.Names names, and nothing in it or the notes is a
// secret of the inputs.
func checkParses(t *testing.T, im *Imported) {
	t.Helper()
	servers, err := Parse([]byte(im.TOML))
	if err != nil {
		t.Fatalf("Parse refused Import's output: %v\n%s", err, im.TOML)
	}
	var names []string
	for _, s := range servers {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, im.Names) || len(im.Sources) != len(im.Names) {
		t.Fatalf("Parse found tables %v, Import names %v from %v", names, im.Names, im.Sources)
	}
	for _, secret := range []string{"hunter22", "sk-live-0123456789abcdefghij", "sk-proj-AbCdEf0123456789GhIjKl", "Zk3q9Vx2LmP8wR7tY4nB6cJ1"} {
		if strings.Contains(im.TOML, secret) || strings.Contains(strings.Join(im.Notes, "\n"), secret) {
			t.Errorf("the secret %q was carried over", secret)
		}
	}
}

// TestImportFormats: what is detected, and what is refused as no known
// configuration.
func TestImportFormats(t *testing.T) {
	for _, tc := range []struct {
		name, in   string
		format     string // "" when Import must fail
		names      []string
		noteHas    string
		errHas     string
		wantNoDraw bool
	}{
		{name: "claude", in: `{"mcpServers":{"a":{"command":"a"}}}`, format: "mcpServers", names: []string{"a"}},
		{name: "vscode", in: `{"servers":{"a":{"type":"stdio","command":"a"}}}`, format: "servers", names: []string{"a"}},
		{name: "vscode settings", in: `{"mcp":{"servers":{"a":{"command":"a"}}}}`, format: "servers", names: []string{"a"}},
		{name: "bare map", in: `{"a":{"command":"a"},"b":{"command":"b"}}`, format: "map", names: []string{"a", "b"}},
		{name: "fragment", in: "\"mcpServers\": {\"a\": {\"command\": \"a\"}}\n", format: "mcpServers", names: []string{"a"}},
		{name: "fragment of servers", in: `"a": {"command": "a"}, "b": {"command": "b"},`, format: "map", names: []string{"a", "b"}},
		{name: "byte order mark", in: "\ufeff{\"mcpServers\":{\"a\":{\"command\":\"a\"}}}", format: "mcpServers", names: []string{"a"}},
		{name: "comments", in: "// x\n{\"mcpServers\": {/* y */ \"a\": {\"command\": \"a // not a comment\",},},}", format: "mcpServers", names: []string{"a"}},
		{name: "codex", in: "[mcp_servers.a]\ncommand = \"a\"\n", format: "codex", names: []string{"a"}},
		{name: "command line", in: `{"mcpServers": {"a": {"command": "npx -y pkg"}}}`, format: "mcpServers", names: []string{"a"}, noteHas: "split at its spaces into 3 arguments"},
		{name: "codex env_vars", in: "[mcp_servers.a]\ncommand = \"a\"\nenv_vars = [\"AWS_SECRET_ACCESS_KEY\"]\n", format: "codex", names: []string{"a"}, noteHas: "env_vars become env_pass: AWS_SECRET_ACCESS_KEY pass from your environment"},
		{name: "code path in env", in: `{"mcpServers": {"a": {"command": "a", "env": {"NODE_PATH": "/x"}}}}`, format: "mcpServers", names: []string{"a"}, noteHas: "changes what code the program runs"},
		{name: "zed", in: `{"context_servers": {"a": {"command": "a", "args": []}}}`, format: "context_servers", names: []string{"a"}},
		{name: "opencode", in: `{"mcp": {"a": {"type": "local", "command": ["a", "x"], "environment": {"K": "v"}, "enabled": true}, "b": {"type": "local", "command": ["b"], "enabled": false}, "r": {"type": "remote", "url": "https://r.example/mcp"}}}`, format: "map", names: []string{"a"}, noteHas: "\"enabled\": false"},
		{name: "codex inline", in: "mcp_servers = { a = { command = \"a\", args = [\"x\"] } }\n", format: "codex", names: []string{"a"}},
		{name: "nothing importable", in: `{"mcpServers":{"a":{"url":"https://a.example/mcp"}}}`, format: "mcpServers", noteHas: "remote server"},
		{name: "empty mcpServers", in: `{"mcpServers":{}}`, format: "mcpServers"},
		{name: "one server without a name", in: `{"command":"npx","args":["x"]}`, errHas: "without its name"},
		{name: "mcphost already", in: "[mcp.a]\ncommand = [\"a\"]\n", errHas: "mcphost's own"},
		{name: "empty", in: " \n", errHas: "empty"},
		{name: "not json", in: `{"mcpServers": `, errHas: "starts like JSON"},
		{name: "error line", in: "// a\n{\n \"mcpServers\": {\n  \"a\": {\"command\": x}}}\n", errHas: "line 4: invalid character 'x'"},
		{name: "error line of fragment", in: "\n\n\"mcpServers\": {\n  \"a\": {\"command\": x}}}\n", errHas: "line 4: invalid character 'x'"},
		{name: "two objects", in: `{"mcpServers":{}} {}`, errHas: "more follows"},
		{name: "json array", in: `[1, 2]`, errHas: "neither JSON nor TOML"},
		{name: "mcpServers not an object", in: `{"mcpServers":[]}`, errHas: "not an object of servers"},
		{name: "no servers key", in: `{"name":"x"}`, errHas: "without \"mcpServers\""},
		{name: "toml without servers", in: "x = 1\n", errHas: "without [mcp_servers"},
		{name: "prose", in: "Add this to your config!", errHas: "neither JSON nor TOML"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			im, err := Import(context.Background(), []byte(tc.in), goldenConfig.options())
			if tc.format == "" {
				if err == nil || !errors.Is(err, ErrImportFormat) || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("err = %v, want ErrImportFormat saying %q", err, tc.errHas)
				}
				return
			}
			if err != nil {
				t.Fatalf("Import: %v", err)
			}
			checkParses(t, im)
			if im.Format != tc.format || !slices.Equal(im.Names, tc.names) {
				t.Errorf("format %q names %v, want %q %v", im.Format, im.Names, tc.format, tc.names)
			}
			if tc.noteHas != "" && !strings.Contains(strings.Join(im.Notes, "\n"), tc.noteHas) {
				t.Errorf("no note says %q: %q", tc.noteHas, im.Notes)
			}
		})
	}
}

// TestImportNames: every name Import gives is valid and unique, and a name
// already valid is kept over one renamed to it.
func TestImportNames(t *testing.T) {
	for _, tc := range []struct {
		keys []string
		want map[string]string
	}{
		{[]string{"notes"}, map[string]string{"notes": "notes"}},
		{[]string{"My Server", "my-server"}, map[string]string{"My Server": "my-server-2", "my-server": "my-server"}},
		{[]string{"My_Server", "My Server", "my--server"}, map[string]string{"My Server": "my-server", "My_Server": "my-server-2", "my--server": "my-server-3"}},
		{[]string{"git", "fs", "proc"}, map[string]string{"git": "git-server", "fs": "fs-server", "proc": "proc-server"}},
		{[]string{"git", "git-server"}, map[string]string{"git": "git-server-2", "git-server": "git-server"}},
		{[]string{"---", "", "ü"}, map[string]string{"": "server", "---": "server-2", "ü": "server-3"}},
		{[]string{strings.Repeat("x", 40), strings.Repeat("x", 32)}, map[string]string{strings.Repeat("x", 40): strings.Repeat("x", 30) + "-2", strings.Repeat("x", 32): strings.Repeat("x", 32)}},
		{[]string{"a-" + strings.Repeat("b", 29) + "-c"}, map[string]string{"a-" + strings.Repeat("b", 29) + "-c": "a-" + strings.Repeat("b", 29)}},
		{[]string{"Server.v2", "server/v2"}, map[string]string{"Server.v2": "server-v2", "server/v2": "server-v2-2"}},
	} {
		t.Run(strings.Join(tc.keys, ","), func(t *testing.T) {
			var b strings.Builder
			b.WriteString(`{"mcpServers":{`)
			for i, k := range tc.keys {
				if i > 0 {
					b.WriteString(",")
				}
				fmt.Fprintf(&b, "%q:{\"command\":\"x\"}", k)
			}
			b.WriteString("}}")
			im, err := Import(context.Background(), []byte(b.String()), goldenConfig.options())
			if err != nil {
				t.Fatal(err)
			}
			checkParses(t, im)
			got := map[string]string{}
			for i, n := range im.Names {
				got[im.Sources[i]] = n
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("names %v, want %v", got, tc.want)
			}
			for _, n := range im.Names {
				if err := validServerName(n); err != nil {
					t.Errorf("invalid name: %v", err)
				}
			}
		})
	}
}

// TestImportSecrets: which env values become env_pass, and which
// arguments are replaced, never reaching the output.
func TestImportSecrets(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		secret      bool
	}{
		{"GITHUB_TOKEN", "placeholder", true},
		{"API_KEY", "", true},
		{"DB_PASSWORD", "x", true},
		{"SESSION_ID", "abc", true},
		{"MY_AUTH", "x", true},
		{"PRIVATE_THING", "x", true},
		{"SLACK_COOKIE", "x", true},
		{"AWS_CREDENTIALS", "x", true},
		{"GOOGLE_APPLICATION_CREDENTIALS", "/home/pat/creds.json", false}, // a path to one
		{"SSH_KEY_FILE", "~/.ssh/id_ed25519", false},
		{"PWD", "/tmp", false},
		{"LOG_LEVEL", "debug", false},
		{"REGION", "eu-west-1", false},
		{"PORT", "8080", false},
		{"HOMEPAGE", "https://example.com/path?x=1", false},
		{"BASE_URL", "https://user:pw@example.com/", true},
		{"SENTRY", "https://0123456789abcdef0123@o1.ingest.example.io/2", true},
		{"WEBHOOK", "https://hooks.example.com/x?token=abc", true},
		{"X", "ghp_0123456789abcdefghijABCDEFGHIJ", true},
		{"X", "github_pat_11AAAAAAA0123456789", true},
		{"X", "xoxb-1234-5678-abcdefgh", true},
		{"X", "AKIAABCDEFGHIJKLMNOP", true},
		{"X", "Bearer abc.def", true},
		{"X", "-----BEGIN OPENSSH PRIVATE KEY-----", true},
		{"X", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig", true},
		{"X", "Zk3q9Vx2LmP8wR7tY4nB6cJ1", true},
		{"X", "3f2a9c7e1b5d4f6a8c0e2b4d6f8a0c2e", true},
		{"X", "this is a long sentence with 2 words", false},
		{"X", "/usr/local/lib/node_modules/x/y/z/1234", false},
		{"X", "@scope/package-name@1.2.3", false},
		{"X", "YOUR_VALUE_HERE_PLEASE", false},
		{"X", "production", false},
	} {
		t.Run(tc.name+"="+tc.value, func(t *testing.T) {
			in := fmt.Sprintf(`{"mcpServers":{"s":{"command":"x","env":{%q:%q}}}}`, tc.name, tc.value)
			im, err := Import(context.Background(), []byte(in), goldenConfig.options())
			if err != nil {
				t.Fatal(err)
			}
			checkParses(t, im)
			servers, _ := Parse([]byte(im.TOML))
			passed := slices.Contains(servers[0].EnvPass, tc.name)
			_, copied := servers[0].Env[tc.name]
			if passed != tc.secret || copied == tc.secret {
				t.Fatalf("env_pass %v env %v, want secret=%v:\n%s", servers[0].EnvPass, servers[0].Env, tc.secret, im.TOML)
			}
			if tc.secret && len(tc.value) > 3 && strings.Contains(im.TOML+strings.Join(im.Notes, ""), tc.value) {
				t.Errorf("the secret value is in the output")
			}
		})
	}
	for _, tc := range []struct {
		args     []string
		replaced []int // indexes into args
	}{
		{[]string{"--api-key", "abc"}, []int{1}},
		{[]string{"--token=abc"}, []int{0}},
		{[]string{"--password", "hunter2", "--verbose"}, []int{1}},
		{[]string{"--key-file", "secret.pem"}, nil}, // names the file, not the key
		{[]string{"--token-env", "MY_TOKEN"}, nil},
		{[]string{"--key-file=/etc/key.pem"}, nil},
		{[]string{"--keyword", "abc"}, nil},
		{[]string{"--password", "/run/secrets/pw"}, nil},
		{[]string{"--port", "8080", "ghp_0123456789abcdefghijABCDEFGHIJ"}, []int{2}},
		{[]string{"--api-key", "--verbose"}, nil},
		{[]string{"@scope/pkg@1.2.3", "/home/pat/data"}, nil},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			im, err := Import(context.Background(), []byte(fmt.Sprintf(`{"mcpServers":{"s":{"command":"x","args":%s}}}`, jsonList(tc.args))), goldenConfig.options())
			if err != nil {
				t.Fatal(err)
			}
			checkParses(t, im)
			servers, _ := Parse([]byte(im.TOML))
			var replaced []int
			for i, a := range servers[0].Command[1:] {
				if a == secretPlaceholder {
					replaced = append(replaced, i)
				} else if a != tc.args[i] {
					t.Errorf("argument %d is %q, want it unchanged", i, a)
				}
			}
			if !slices.Equal(replaced, tc.replaced) {
				t.Errorf("replaced %v, want %v", replaced, tc.replaced)
			}
		})
	}
}

func jsonList(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = fmt.Sprintf("%q", s)
	}
	return "[" + strings.Join(q, ",") + "]"
}

// TestImportRegistry: the grant a launcher gets comes from the person's
// configuration, in the order the tools read it, and is a note when none
// can be found.
func TestImportRegistry(t *testing.T) {
	npmMissing := errors.New("exec: \"npm\": executable file not found in $PATH")
	for _, tc := range []struct {
		name    string
		cmd     string
		cfg     fakeConfig
		grants  []string
		noteHas string
	}{
		{"npm config", `"npx","-y","pkg"`, fakeConfig{npm: map[string]string{"registry": "https://registry.npmjs.org/"}}, []string{"registry.npmjs.org"}, "npm config get registry"},
		{"npm port", `"npx","pkg"`, fakeConfig{npm: map[string]string{"registry": "http://localhost:4873/"}}, []string{"localhost:4873"}, ""},
		{"npm address", `"npx","pkg"`, fakeConfig{npm: map[string]string{"registry": "https://10.1.2.3/npm/"}}, []string{"10.1.2.3:443"}, ""},
		{"npm ipv6", `"npx","pkg"`, fakeConfig{npm: map[string]string{"registry": "https://[fd00::1]:8443/"}}, []string{"[fd00::1]:8443"}, ""},
		{"npm default port", `"npx","pkg"`, fakeConfig{npm: map[string]string{"registry": "https://Registry.Example.com:443/"}}, []string{"registry.example.com"}, ""},
		{"npm odd port", `"npx","pkg"`, fakeConfig{npm: map[string]string{"registry": "https://registry.example.com:80/"}}, []string{"registry.example.com:80"}, ""},
		{"npm scope", `"npx","-y","@corp/pkg"`, fakeConfig{npm: map[string]string{"registry": "https://registry.npmjs.org/", "@corp:registry": "https://npm.corp.example/"}}, []string{"registry.npmjs.org", "npm.corp.example"}, "@corp:registry"},
		{"npm scope by --package", `"npm","exec","--package=@corp/pkg","--","pkg"`, fakeConfig{npm: map[string]string{"registry": "https://registry.npmjs.org/", "@corp:registry": "https://npm.corp.example/"}}, []string{"registry.npmjs.org", "npm.corp.example"}, ""},
		{"npm scope none", `"npx","@other/pkg"`, fakeConfig{npm: map[string]string{"registry": "https://registry.npmjs.org/"}}, []string{"registry.npmjs.org"}, ""},
		{"npm env when npm fails", `"pnpm","dlx","pkg"`, fakeConfig{npmErr: npmMissing, env: []string{"npm_config_registry=https://env.example/"}}, []string{"env.example"}, "npm_config_registry"},
		{"npmrc when npm fails", `"bunx","pkg"`, fakeConfig{npmErr: npmMissing, files: map[string]string{"/home/pat/.npmrc": "; comment\nregistry = https://rc.example/\n"}}, []string{"rc.example"}, ".npmrc"},
		{"npmrc named", `"yarn","dlx","pkg"`, fakeConfig{npmErr: npmMissing, env: []string{"NPM_CONFIG_USERCONFIG=/etc/npmrc"}, files: map[string]string{"/etc/npmrc": "registry=https://etc.example/"}}, []string{"etc.example"}, "/etc/npmrc"},
		{"npm nothing", `"npx","pkg"`, fakeConfig{npmErr: npmMissing}, nil, "npm could not say which"},
		{"npm says undefined", `"npx","pkg"`, fakeConfig{npm: map[string]string{}}, nil, "names none"},
		{"npm not a URL", `"npx","pkg"`, fakeConfig{npm: map[string]string{"registry": "ftp://x.example/"}}, nil, "not an http(s) URL"},
		{"npm bad host", `"npx","pkg"`, fakeConfig{npm: map[string]string{"registry": "https://bad_host!.example/"}}, nil, ""},
		{"uv env", `"uvx","pkg"`, fakeConfig{env: []string{"UV_INDEX_URL=https://uv.example/simple"}}, []string{"uv.example"}, "UV_INDEX_URL"},
		{"uv default index first", `"uvx","pkg"`, fakeConfig{env: []string{"UV_INDEX_URL=https://old.example/simple", "UV_DEFAULT_INDEX=https://new.example/simple"}}, []string{"new.example"}, ""},
		{"uv extra", `"uv","tool","run","pkg"`, fakeConfig{env: []string{"UV_INDEX_URL=https://uv.example/simple", "UV_INDEX=internal=https://extra.example/simple"}}, []string{"uv.example", "extra.example"}, ""},
		{"uv toml", `"uvx","pkg"`, fakeConfig{files: map[string]string{"/home/pat/.config/uv/uv.toml": "[[index]]\nname = \"x\"\nurl = \"https://idx.example/simple\"\ndefault = true\n"}}, []string{"idx.example"}, "uv.toml"},
		{"uv xdg", `"uvx","pkg"`, fakeConfig{env: []string{"XDG_CONFIG_HOME=/cfg"}, files: map[string]string{"/cfg/uv/uv.toml": "index-url = \"https://xdg.example/simple\"\n"}}, []string{"xdg.example"}, ""},
		{"uv nothing", `"uvx","pkg"`, fakeConfig{}, nil, "no index is configured"},
		{"uv ignores pip", `"uvx","pkg"`, fakeConfig{env: []string{"PIP_INDEX_URL=https://pip.example/"}}, nil, "no index is configured"},
		{"pip env", `"pipx","run","pkg"`, fakeConfig{env: []string{"PIP_INDEX_URL=https://pip.example/simple"}}, []string{"pip.example"}, ""},
		{"pip conf", `"pipx","run","pkg"`, fakeConfig{files: map[string]string{"/home/pat/.pip/pip.conf": "[global]\nindex-url = https://conf.example/simple\nextra-index-url =\n    https://more.example/simple\n"}}, []string{"conf.example", "more.example"}, ""},
		{"pip nothing", `"pipx","run","pkg"`, fakeConfig{}, nil, "pip uses PyPI"},
		{"npm private mirror", `"npx","pkg"`, fakeConfig{npm: map[string]string{"registry": "https://mirror.example/"}, hosts: map[string][]string{"mirror.example": {"203.0.113.7", "192.168.1.2", "fd00::5", "1.1.1.1", "2606:4700::1111"}}}, []string{"mirror.example", "203.0.113.7:443", "192.168.1.2:443", "[fd00::5]:443"}, "not public"},
		{"npm private mirror port", `"npx","pkg"`, fakeConfig{npm: map[string]string{"registry": "http://mirror.example:8080/"}, hosts: map[string][]string{"mirror.example": {"10.0.0.1", "::ffff:10.0.0.1"}}}, []string{"mirror.example:8080", "10.0.0.1:8080"}, ""},
		{"npm loopback name", `"npx","pkg"`, fakeConfig{npm: map[string]string{"registry": "http://verdaccio.test:4873/"}, hosts: map[string][]string{"verdaccio.test": {"127.0.0.1"}}}, []string{"verdaccio.test:4873", "127.0.0.1:4873"}, ""},
		{"npm address needs no lookup", `"npx","pkg"`, fakeConfig{npm: map[string]string{"registry": "https://10.1.2.3/"}, hosts: map[string][]string{"10.1.2.3": {"10.9.9.9"}}}, []string{"10.1.2.3:443"}, ""},
		{"no launcher", `"node","server.js"`, fakeConfig{npm: map[string]string{"registry": "https://registry.npmjs.org/"}}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := fmt.Sprintf(`{"mcpServers":{"s":{"command":[%s]}}}`, tc.cmd)
			im, err := Import(context.Background(), []byte(in), tc.cfg.options())
			if err != nil {
				t.Fatal(err)
			}
			checkParses(t, im)
			servers, _ := Parse([]byte(im.TOML))
			if !slices.Equal(servers[0].NetworkGrant, tc.grants) {
				t.Errorf("network %q, want %q\nnotes: %q", servers[0].NetworkGrant, tc.grants, im.Notes)
			}
			if servers[0].Network {
				t.Errorf("network = true: the whole network was granted")
			}
			notes := strings.Join(im.Notes, "\n")
			if tc.noteHas != "" && !strings.Contains(notes, tc.noteHas) {
				t.Errorf("no note says %q: %q", tc.noteHas, im.Notes)
			}
			if len(tc.grants) == 0 && tc.cmd != `"node","server.js"` && !strings.Contains(notes, "add your registry's hosts to network") {
				t.Errorf("no note says what to add: %q", im.Notes)
			}
		})
	}
}

// TestImportNpmOnce: npm runs once per key however many servers use it.
func TestImportNpmOnce(t *testing.T) {
	runs := 0
	opts := goldenConfig.options()
	npm := opts.NpmConfig
	opts.NpmConfig = func(ctx context.Context, key string) (string, error) {
		runs++
		return npm(ctx, key)
	}
	in := `{"mcpServers":{"a":{"command":"npx","args":["a"]},"b":{"command":"npx","args":["b"]},"c":{"command":"bunx","args":["c"]}}}`
	if _, err := Import(context.Background(), []byte(in), opts); err != nil {
		t.Fatal(err)
	}
	if runs != 1 {
		t.Errorf("npm ran %d times, want 1", runs)
	}
}

// TestImportTOMLString: every string is written so that it reads back as
// it was and shows nothing a person could not see.
func TestImportTOMLString(t *testing.T) {
	for _, s := range []string{"", "plain", `a "quoted" \ back`, "tab\tnl\ncr\r", "\x1b[31mred\x1b[0m", "\u202eevil\u202c", "zero\u200bwidth", "\u009bcsi", "é ü 日本", "\U0001F600", "\x7f", "\ufeffbom", "tag\U000E0041"} {
		q := tomlString(s)
		var doc struct{ V string }
		if _, err := toml.Decode("v = "+q, &doc); err != nil {
			t.Fatalf("%q: %v", q, err)
		}
		if doc.V != s {
			t.Errorf("%q reads back as %q", s, doc.V)
		}
		for _, r := range q {
			if r != '\\' && r != '<' && pin.Visible(string(r)) != string(r) {
				t.Errorf("%q: %q is not visible", q, r)
			}
		}
	}
	// Invalid UTF-8 cannot be TOML: it becomes U+FFFD.
	if q := tomlString("a\xffb"); !utf8.ValidString(q) {
		t.Errorf("%q is not UTF-8", q)
	}
}

// TestImportBound: a hostile input of many servers imports a bounded
// number of them.
func TestImportBound(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"mcpServers":{`)
	for i := range maxImportServers + 5 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"S%d":{"command":"x"}`, i)
	}
	b.WriteString("}}")
	im, err := Import(context.Background(), []byte(b.String()), goldenConfig.options())
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Names) != maxImportServers {
		t.Errorf("%d servers imported, want %d", len(im.Names), maxImportServers)
	}
	if !slices.ContainsFunc(im.Notes, func(n string) bool { return strings.Contains(n, "the ones after it are left out") }) {
		t.Errorf("no note says the rest are left out")
	}
}

// FuzzImport: Import never panics, and any output it gives is what Parse
// accepts, with the tables it names.
func FuzzImport(f *testing.F) {
	entries, _ := os.ReadDir("testdata/import")
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".golden.json") {
			if b, err := os.ReadFile(filepath.Join("testdata/import", e.Name())); err == nil {
				f.Add(b)
			}
		}
	}
	f.Add([]byte(`{"mcpServers":{"fs":{"command":"x\u0000"}}}`))
	f.Add([]byte(`{"servers":{"a":{"command":"npx","args":["${input:x}"],"env":{"K":"${env:Y}"}}}}`))
	f.Add([]byte("[mcp_servers.a]\ncommand = \"x\"\ntool_timeout_sec = 1e300\nstartup_timeout_sec = -1\nenv_vars = [1]\n"))
	f.Add([]byte(`"a": {"command": ["x", "y"], "env": {"A B": "c", "D": null}}`))
	opts := goldenConfig.options()
	f.Fuzz(func(t *testing.T, data []byte) {
		im, err := Import(context.Background(), data, opts)
		if err != nil {
			if !errors.Is(err, ErrImportFormat) {
				t.Fatalf("error not ErrImportFormat: %v", err)
			}
			return
		}
		servers, err := Parse([]byte(im.TOML))
		if err != nil {
			t.Fatalf("Parse refused Import's output: %v\n%s", err, im.TOML)
		}
		if len(servers) != len(im.Names) {
			t.Fatalf("Parse found %d tables, Import names %d", len(servers), len(im.Names))
		}
		for _, n := range im.Notes {
			if strings.Contains(n, "\n") {
				t.Fatalf("a note of several lines: %q", n)
			}
		}
	})
}

// TestImportCommandLineSecret: a command line without "args" is split, its
// secret arguments removed, and the note that says so does not repeat it.
func TestImportCommandLineSecret(t *testing.T) {
	im, err := Import(context.Background(), []byte(`{"mcpServers": {"a": {"command": "npx srv --password hunter22hunter22"}}}`), goldenConfig.options())
	if err != nil {
		t.Fatal(err)
	}
	checkParses(t, im)
	if !strings.Contains(strings.Join(im.Notes, "\n"), "split at its spaces into 4 arguments") {
		t.Errorf("no note of the split: %q", im.Notes)
	}
}
