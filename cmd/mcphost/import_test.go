package main

import (
	"bytes"
	"context"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcphost/mcphost/internal/hostfile"
	"github.com/mcphost/mcphost/mcphost"
	"github.com/mcphost/mcphost/pin"
)

// withImportOptions makes import consult a made-up configuration, in
// which npm names registry.example.org, for the test's duration.
func withImportOptions(t *testing.T) {
	saved := importOptions
	importOptions = mcphost.ImportOptions{
		Env: []string{"HOME=/nonexistent"},
		NpmConfig: func(_ context.Context, key string) (string, error) {
			if key == "registry" {
				return "https://registry.example.org/\n", nil
			}
			return "undefined\n", nil
		},
		ReadFile: func(path string) ([]byte, error) {
			return nil, &fs.PathError{Op: "open", Path: path, Err: fs.ErrNotExist}
		},
		LookupHost: func(context.Context, string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("93.184.215.14")}, nil
		},
	}
	t.Cleanup(func() { importOptions = saved })
}

func runImport(stdin string, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"import"}, args...), strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

// TestImportCLI: exit codes, and a stdout that is TOML Parse accepts,
// notes first as comments.
func TestImportCLI(t *testing.T) {
	withImportOptions(t)
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := `{"mcpServers": {"Notes App": {"command": "npx", "args": ["-y", "notes-mcp"], "env": {"NOTES_TOKEN": "abc", "MODE": "ro"}}}}`
	for _, tc := range []struct {
		name   string
		args   []string
		stdin  string
		code   int
		tables []string
		errHas string
	}{
		{name: "file", args: []string{write("a.json", good)}, code: 0, tables: []string{"notes-app"}},
		{name: "stdin", args: []string{"-"}, stdin: good, code: 0, tables: []string{"notes-app"}},
		{name: "flag after", args: []string{"-", "-h"}, code: 0},
		{name: "no file", args: nil, code: 2, errHas: "name one FILE"},
		{name: "two files", args: []string{"a", "b"}, code: 2, errHas: "name one FILE"},
		{name: "bad flag", args: []string{"-x", "a"}, code: 2},
		{name: "missing", args: []string{filepath.Join(dir, "missing.json")}, code: 1, errHas: "no such file"},
		{name: "directory", args: []string{dir}, code: 1, errHas: "only as a regular file"},
		{name: "large file", args: []string{write("big.json", strings.Repeat(" ", hostfile.MaxConfig+1))}, code: 1, errHas: "file too large"},
		{name: "not a config", args: []string{write("b.txt", "hello")}, code: 1, errHas: "paste a server's JSON"},
		{name: "only remote", args: []string{"-"}, stdin: `{"mcpServers": {"r": {"url": "https://r.example/mcp"}}}`, code: 1, errHas: "no server could be imported"},
		{name: "too large", args: []string{"-"}, stdin: strings.Repeat(" ", hostfile.MaxConfig+1), code: 1, errHas: "more than 1MiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, stderr := runImport(tc.stdin, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, out, stderr)
			}
			if !strings.Contains(stderr, tc.errHas) {
				t.Errorf("stderr does not say %q: %s", tc.errHas, stderr)
			}
			if tc.code != 0 {
				if out != "" {
					t.Errorf("stdout on failure: %s", out)
				}
				return
			}
			if len(tc.tables) == 0 {
				return
			}
			servers, err := mcphost.Parse([]byte(out))
			if err != nil {
				t.Fatalf("Parse refused the output: %v\n%s", err, out)
			}
			if len(servers) != len(tc.tables) || servers[0].Name != tc.tables[0] {
				t.Fatalf("tables %v, want %v", servers, tc.tables)
			}
			s := servers[0]
			if strings.Join(s.EnvPass, ",") != "NOTES_TOKEN" || s.Env["MODE"] != "ro" || strings.Join(s.NetworkGrant, ",") != "registry.example.org" {
				t.Errorf("table %+v", s)
			}
			if !strings.HasPrefix(out, "# Imported by mcphost import") || !strings.Contains(out, "# note: ") {
				t.Errorf("no header or notes:\n%s", out)
			}
			if strings.Contains(out, "abc") {
				t.Errorf("the secret is in the output:\n%s", out)
			}
			if !strings.Contains(stderr, "mcphost approve notes-app") {
				t.Errorf("stderr does not say how to review: %s", stderr)
			}
		})
	}
}

// TestImportCLIHostile: nothing of the input reaches the terminal raw, in
// the notes, the tables or the errors, and the output still parses.
func TestImportCLIHostile(t *testing.T) {
	withImportOptions(t)
	// U+3164, a Hangul filler, is a letter to strconv.Quote, which keeps
	// it, and invisible to a person: only pin.Visible escapes it.
	hostile := "\x1b]0;pwned\x07\x1b[2J\u202e\u200b\n# [mcp.evil]\r\u009b\u3164"
	for _, tc := range []struct {
		in      string
		imports bool // a table comes out, which holds the command as it is
	}{
		{`{"mcpServers": {"` + jsonEscape(hostile) + `": {"command": "` + jsonEscape(hostile) + `", "args": ["` + jsonEscape(hostile) + `"], "env": {"A": "` + jsonEscape(hostile) + `"}, "` + jsonEscape(hostile) + `": 1, "cwd": "` + jsonEscape(hostile) + `"}, "r": {"type": "` + jsonEscape(hostile) + `"}}}`, true},
		{"[mcp_servers.\"" + jsonEscape(hostile) + "\"]\ncommand = \"" + jsonEscape(hostile) + "\"\nargs = []\nenv_vars = [\"" + jsonEscape(hostile) + "\"]\n", true},
		{`{"mcpServers": ` + jsonEscape(hostile), false},
	} {
		code, out, stderr := runImport(tc.in, "-")
		for _, s := range []string{out, stderr} {
			for _, r := range s {
				if r != '\n' && r != '\\' && r != '<' && pin.Visible(string(r)) != string(r) {
					t.Errorf("raw %q reached the terminal:\n%s", r, s)
					break
				}
			}
		}
		if (code == 0) != tc.imports {
			t.Errorf("exit %d, want a table: %v\n%s", code, tc.imports, stderr)
		}
		if code == 0 {
			servers, err := mcphost.Parse([]byte(out))
			if err != nil || len(servers) != 1 || strings.Contains(out, "[mcp.evil]\n") {
				t.Errorf("output %v %v:\n%s", servers, err, out)
				continue
			}
			// The hostile command is kept, byte for byte.
			if servers[0].Command[0] != hostile {
				t.Errorf("command %q, want %q", servers[0].Command[0], hostile)
			}
		}
	}
}

func jsonEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteString(`\` + string(r))
		case r < 0x20 || r >= 0x7f:
			b.WriteString(`\u`)
			const hex = "0123456789abcdef"
			b.WriteByte(hex[r>>12&0xf])
			b.WriteByte(hex[r>>8&0xf])
			b.WriteByte(hex[r>>4&0xf])
			b.WriteByte(hex[r&0xf])
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// endless is a standard input that never ends.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}

// TestImportCLIEndlessStdin: standard input is read only up to the bound,
// so an endless one is refused rather than read into memory forever.
func TestImportCLIEndlessStdin(t *testing.T) {
	withImportOptions(t)
	var out, errb bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- run(context.Background(), []string{"import", "-"}, endless{}, &out, &errb) }()
	select {
	case code := <-done:
		if code != 1 || !strings.Contains(errb.String(), "more than 1MiB") {
			t.Errorf("exit %d: %s", code, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("import is still reading an endless standard input")
	}
}
