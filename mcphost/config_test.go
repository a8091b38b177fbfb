package mcphost

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseFull(t *testing.T) {
	const doc = `
model = "gpt"            # the agent's own key: ignored
[agent]
name = "x"               # the agent's own table: ignored

[mcp.notes]
command = ["notes-server", "--db", "notes.db"]
allow = ["list_notes"]
deny  = ["delete_note"]
default = "deny"
env = { NOTES_MODE = "ro" }
env_pass = ["NOTES_TOKEN"]
network = true
read  = ["~/.cache/notes"]
write = ["out"]
startup_timeout = "5s"
call_timeout = "1m"
max_output = "1MiB"
sandbox = "off"
max_processes = 64
max_memory = "512MiB"
max_tmp = 1048576
new_tools = "hold"
home = "tmp"

[mcp.a-b2]
command = ["srv"]
max_output = 4096
sandbox = "full"
new_tools = "offer"
max_memory = "1TiB"     # the top of the range an error names
max_tmp = "2097152 bytes"  # the way an error spells a size
`
	got, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := []ServerConfig{
		{Name: "a-b2", Command: []string{"srv"}, Default: Approval, StartupTimeout: DefaultStartupTimeout, startupUnset: true,
			CallTimeout: DefaultCallTimeout, MaxOutput: 4096, RequireFullSandbox: true, Home: HomePersist,
			MaxProcesses: 512, MaxMemory: 1 << 40, MaxTmp: 2 << 20},
		{Name: "notes", Command: []string{"notes-server", "--db", "notes.db"}, Allow: []string{"list_notes"},
			Deny: []string{"delete_note"}, Default: Deny, Env: map[string]string{"NOTES_MODE": "ro"},
			EnvPass: []string{"NOTES_TOKEN"}, Network: true, Read: []string{"~/.cache/notes"}, Write: []string{"out"},
			Unconfined: true, HoldNewTools: true, Home: HomeTemp, StartupTimeout: 5 * time.Second, CallTimeout: time.Minute, MaxOutput: 1 << 20,
			MaxProcesses: 64, MaxMemory: 512 << 20, MaxTmp: 1 << 20},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Parse:\n got %+v\nwant %+v", got, want)
	}
}

func TestParseNoServers(t *testing.T) {
	got, err := Parse([]byte("model = 1\n[other]\nx = 2\n"))
	if err != nil || len(got) != 0 {
		t.Fatalf("Parse = %v, %v; want no servers, no error", got, err)
	}
}

// TestParseErrors checks that every problem names its table and key and
// says what is allowed.
func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, doc string
		want      []string // substrings of the error
		not       []string // substrings it must not have
	}{
		{"unknown key", "[mcp.x]\ncommand=[\"a\"]\nalow=[\"t\"]", []string{"[mcp.x] alow", "unknown key", "allow"}, nil},
		{"no command", "[mcp.x]\nallow=[\"t\"]", []string{"[mcp.x] command", "required"}, nil},
		{"empty command", "[mcp.x]\ncommand=[]", []string{"[mcp.x] command", "required"}, nil},
		{"empty argv0", "[mcp.x]\ncommand=[\"\"]", []string{"[mcp.x] command"}, nil},
		{"reserved fs", "[mcp.fs]\ncommand=[\"a\"]", []string{"[mcp.fs]", "reserved"}, nil},
		{"reserved git", "[mcp.git]\ncommand=[\"a\"]", []string{"[mcp.git]", "reserved"}, nil},
		{"upper case", "[mcp.Notes]\ncommand=[\"a\"]", []string{"[mcp.Notes]", "lowercase"}, nil},
		{"underscore", "[mcp.a_b]\ncommand=[\"a\"]", []string{"[mcp.a_b]", "lowercase"}, nil},
		{"double dash", "[mcp.a--b]\ncommand=[\"a\"]", []string{"[mcp.a--b]", "single '-'"}, nil},
		{"trailing dash", "[mcp.a-]\ncommand=[\"a\"]", []string{"[mcp.a-]"}, nil},
		{"bad default", "[mcp.x]\ncommand=[\"a\"]\ndefault=\"allow\"", []string{"[mcp.x] default", `"approval"`, `"deny"`}, nil},
		{"bad home", "[mcp.x]\ncommand=[\"a\"]\nhome=\"real\"", []string{"[mcp.x] home", `"persist"`, `"tmp"`}, nil},
		{"bad sandbox", "[mcp.x]\ncommand=[\"a\"]\nsandbox=\"maybe\"", []string{"[mcp.x] sandbox", `"off"`, `"full"`}, nil},
		{"bad new_tools", "[mcp.x]\ncommand=[\"a\"]\nnew_tools=\"hide\"", []string{"[mcp.x] new_tools", `"hold"`, `"offer"`}, nil},
		{"bad duration", "[mcp.x]\ncommand=[\"a\"]\nstartup_timeout=\"soon\"", []string{"[mcp.x] startup_timeout", "30s"}, nil},
		{"negative duration", "[mcp.x]\ncommand=[\"a\"]\ncall_timeout=\"-1s\"", []string{"[mcp.x] call_timeout", "range"}, nil},
		{"duration number", "[mcp.x]\ncommand=[\"a\"]\ncall_timeout=30", []string{"[mcp.x] call_timeout", "string"}, nil},
		{"bad size", "[mcp.x]\ncommand=[\"a\"]\nmax_output=\"lots\"", []string{"[mcp.x] max_output", "256KiB"}, nil},
		{"zero size", "[mcp.x]\ncommand=[\"a\"]\nmax_output=0", []string{"[mcp.x] max_output", "range"}, nil},
		{"huge size", "[mcp.x]\ncommand=[\"a\"]\nmax_output=\"1GiB\"", []string{"[mcp.x] max_output", "64MiB"}, nil},
		{"too few processes", "[mcp.x]\ncommand=[\"a\"]\nmax_processes=2", []string{"[mcp.x] max_processes", "8 to"}, nil},
		{"processes as a string", "[mcp.x]\ncommand=[\"a\"]\nmax_processes=\"many\"", []string{"[mcp.x] max_processes", "whole number"}, nil},
		{"tiny memory", "[mcp.x]\ncommand=[\"a\"]\nmax_memory=\"1MiB\"", []string{"[mcp.x] max_memory", "16MiB to 1TiB"}, nil},
		{"bad memory", "[mcp.x]\ncommand=[\"a\"]\nmax_memory=\"lots\"", []string{"[mcp.x] max_memory", "not a size"}, nil},
		{"huge tmp", "[mcp.x]\ncommand=[\"a\"]\nmax_tmp=\"2048GiB\"", []string{"[mcp.x] max_tmp", "1MiB to 1TiB"}, nil},
		{"wrong type", "[mcp.x]\ncommand=\"srv --db x\"", []string{"[mcp.x] command: must be an array of strings, not a string"}, []string{"incompatible", "required"}},
		{"wrong element type", "[mcp.x]\ncommand=[\"a\"]\nallow=[1]", []string{"[mcp.x] allow: must be an array of strings"}, []string{"incompatible"}},
		{"wrong types hide nothing", "[mcp.x]\ncommand=\"srv\"\nnetwork=\"yes\"\ndefault=\"sometimes\"\nalow=[]\nenv={A=1}\nmax_processes=2",
			[]string{"[mcp.x] command: must be", "[mcp.x] network", "[mcp.x] default", "[mcp.x] alow", "[mcp.x] env: must be a table of strings", "[mcp.x] max_processes"},
			[]string{"incompatible", "required"}},
		{"key directly in [mcp]", "[mcp]\ncommand=[\"srv\"]", []string{"[mcp] command", "directly in [mcp]", "[mcp.notes]"}, []string{"[mcp.command]"}},
		{"bad env name", "[mcp.x]\ncommand=[\"a\"]\nenv={\"A-B\"=\"1\"}", []string{"[mcp.x] env", "A-B"}, nil},
		{"bad env_pass", "[mcp.x]\ncommand=[\"a\"]\nenv_pass=[\"1X\"]", []string{"[mcp.x] env_pass"}, nil},
		{"other user's home", "[mcp.x]\ncommand=[\"a\"]\nread=[\"~bob/x\"]", []string{"[mcp.x] read", "~/"}, nil},
		{"not a table", "mcp.x = 3", []string{"[mcp] x", "an integer", "table"}, nil},
		{"syntax", "[mcp.x\ncommand=", []string{"config:"}, nil},
		{"network string", "[mcp.x]\ncommand=[\"a\"]\nnetwork=\"api.example.com\"", []string{"[mcp.x] network", "a list of destinations"}, nil},
		{"network number entry", "[mcp.x]\ncommand=[\"a\"]\nnetwork=[\"a.example.com\", 3]", []string{"[mcp.x] network", "entry 2", "not a string"}, nil},
		{"network url", "[mcp.x]\ncommand=[\"a\"]\nnetwork=[\"https://api.example.com\"]", []string{"[mcp.x] network", "entry 1", `"https://api.example.com"`, "not a URL"}, nil},
		{"network localhost", "[mcp.x]\ncommand=[\"a\"]\nnetwork=[\"a.example.com\", \"localhost\"]", []string{"[mcp.x] network", "entry 2", "needs a port"}, nil},
		{"network tld", "[mcp.x]\ncommand=[\"a\"]\nnetwork=[\"*.com\"]", []string{"[mcp.x] network", "entry 1", "two labels"}, nil},
		{"network off", "[mcp.x]\ncommand=[\"a\"]\nsandbox=\"off\"\nnetwork=[\"a.example.com\"]", []string{"[mcp.x] network", "needs the sandbox"}, nil},
		{"two problems", "[mcp.x]\ncommand=[\"a\"]\nfoo=1\n[mcp.y]\nbar=2", []string{"[mcp.x] foo", "[mcp.y] bar", "[mcp.y] command"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.doc))
			if err == nil {
				t.Fatal("Parse succeeded; want an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			for _, w := range tt.not {
				if strings.Contains(err.Error(), w) {
					t.Errorf("error %q contains %q", err, w)
				}
			}
		})
	}
}

func TestParseNetwork(t *testing.T) {
	for _, tt := range []struct {
		value   string
		network bool
		grant   []string
	}{
		{"false", false, nil},
		{"true", true, nil},
		{"[]", false, nil},
		{`["registry.npmjs.org", "*.example.com:8443", "localhost:5432", "[::1]:8080"]`, false,
			[]string{"registry.npmjs.org", "*.example.com:8443", "localhost:5432", "[::1]:8080"}},
	} {
		got, err := Parse([]byte("[mcp.x]\ncommand=[\"a\"]\nnetwork=" + tt.value))
		if err != nil {
			t.Errorf("network = %s: %v", tt.value, err)
			continue
		}
		if got[0].Network != tt.network || !reflect.DeepEqual(got[0].NetworkGrant, tt.grant) {
			t.Errorf("network = %s: Network %v, NetworkGrant %q; want %v, %q", tt.value, got[0].Network, got[0].NetworkGrant, tt.network, tt.grant)
		}
	}
}

func TestParseErrorIsConfigError(t *testing.T) {
	_, err := Parse([]byte("[mcp.x]\ncommand=[\"a\"]\nnope=1"))
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Table != "mcp.x" || ce.Key != "nope" {
		t.Fatalf("errors.As(%v) = %+v; want table mcp.x key nope", err, ce)
	}
}

func TestPolicy(t *testing.T) {
	sc := ServerConfig{Allow: []string{"a", "both"}, Deny: []string{"d", "both"}, Default: Approval}
	for tool, want := range map[string]Decision{"a": Allow, "d": Deny, "both": Deny, "other": Approval} {
		if got := sc.policy(tool); got != want {
			t.Errorf("policy(%q) = %s; want %s", tool, got, want)
		}
	}
	sc.Default = Deny
	if got := sc.policy("other"); got != Deny {
		t.Errorf("default deny: policy(other) = %s", got)
	}
	if got := sc.policy("a"); got != Allow {
		t.Errorf("default deny: policy(a) = %s; want allow", got)
	}
}

// FuzzParse: Parse never panics, and what it accepts is valid and maps to
// model names.
func FuzzParse(f *testing.F) {
	f.Add([]byte("[mcp.notes]\ncommand=[\"x\"]\nallow=[\"a\"]\n"))
	f.Add([]byte("[mcp.a-b]\ncommand=[\"x\"]\nmax_output=\"1MiB\"\nstartup_timeout=\"1s\"\n"))
	f.Add([]byte("mcp = 1"))
	f.Add([]byte("[mcp]\nx = {command=[\"y\"]}"))
	f.Add([]byte("[mcp.n]\ncommand=[\"x\"]\nnetwork=[\"api.example.com\", \"*.example.org:8443\", \"localhost:80\", \"[::1]:1\"]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		servers, err := Parse(data)
		if err != nil {
			return
		}
		for _, sc := range servers {
			if len(sc.validate()) != 0 {
				t.Fatalf("Parse accepted an invalid config: %+v", sc)
			}
			if _, err := ModelName(sc.Name, "tool"); err != nil {
				t.Fatalf("accepted server name %q cannot name a tool: %v", sc.Name, err)
			}
		}
	})
}
