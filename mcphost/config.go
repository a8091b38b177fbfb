package mcphost

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/mcphost/mcphost/internal/bytesize"
	"github.com/mcphost/mcphost/internal/egress"
	"github.com/mcphost/mcphost/sandbox"
)

// Defaults for the keys of a [mcp.<name>] table that may be left out.
const (
	DefaultStartupTimeout = 30 * time.Second
	DefaultCallTimeout    = 120 * time.Second
	DefaultMaxOutput      = 256 << 10
)

// Bounds on the keys, so that a typo cannot turn a limit into no limit.
const (
	maxTimeout   = 24 * time.Hour
	maxMaxOutput = 64 << 20
	// A server needs a few threads of its own (a Go or Node.js program
	// starts with 5 to 12) and some memory just to start.
	minProcesses = 8
	maxProcesses = 1 << 20
	minMemory    = 16 << 20
	minTmp       = 1 << 20
	maxLimitSize = 1 << 40
)

// ServerConfig is one [mcp.<name>] table of the config: how to start one
// server and which of its tools the agent may call. It is plain data; Parse
// fills it and validates it, and a program may also build it directly (Connect
// validates it again).
type ServerConfig struct {
	// Name is the table's name: lowercase letters, digits and single '-'
	// between them, not "fs", "proc" or "git".
	Name string `json:"name"`
	// Command is the argv to run, without a shell. A Command[0] with a '/'
	// that is not absolute is relative to the worktree; one without a '/'
	// is looked up in the scrubbed environment's PATH.
	Command []string `json:"command"`
	// Allow names the tools that are called without a person's approval
	// (pinned: a changed allowed tool is held until re-reviewed).
	Allow []string `json:"allow,omitempty"`
	// Deny names the tools that are never called and never offered to the
	// model. Deny wins over Allow.
	Deny []string `json:"deny,omitempty"`
	// Default is the decision for tools in neither list: Approval (the
	// default when empty) or Deny.
	Default Decision `json:"default"`
	// HoldNewTools (`new_tools = "hold"`) keeps tools the server lists
	// after its first review, and that no person has reviewed since, from
	// the model: Session.Tools leaves them out and calls of them are
	// refused until Session.Approve (`mcphost approve`) records them. The
	// default (`new_tools = "offer"`) offers them at once, each call asking
	// the Approver, with a notice.
	HoldNewTools bool `json:"hold_new_tools,omitempty"`
	// Env holds literal variables added to the scrubbed environment.
	Env map[string]string `json:"env,omitempty"`
	// EnvPass names variables copied from the host's environment.
	EnvPass []string `json:"env_pass,omitempty"`
	// Network lets the server use the host's network, all of it. The
	// default, false, leaves it none at all, or only NetworkGrant.
	Network bool `json:"network"`
	// NetworkGrant lists the only destinations the server may reach when
	// Network is false (the TOML `network = ["api.example.com"]`), in the
	// grammar of egress.ParseGrant: "name", "name:port", "*.name",
	// "*.name:port", "localhost:port", "address:port". It reaches them
	// through the host's proxy, or by names that resolve only in its
	// namespace, with the same checks; see the README's "Network grants".
	NetworkGrant []string `json:"network_grant,omitempty"`
	// Read and Write are extra read-only and writable paths: absolute,
	// starting with "~/" (the user's home), or relative to the worktree.
	Read  []string `json:"read,omitempty"`
	Write []string `json:"write,omitempty"`
	// Protect names further paths that no server of the session may write,
	// rename or replace (an agent's instruction files, its own config
	// directory): absolute, "~/..." or relative to the worktree. An entry
	// ending in "/" is a directory, created empty before the servers start
	// if it is missing; a file that does not exist cannot be protected and
	// gets a notice.
	Protect []string `json:"protect,omitempty"`
	// WritableGit lets the server write the repository's git directory
	// (`git = "write"`). By default it is read-only to servers, because
	// whoever writes it can make git run code on the host (hooks,
	// core.fsmonitor). A risk the config must state explicitly.
	WritableGit bool `json:"writable_git,omitempty"`
	// Home says what the server's private home directory (its HOME, which
	// is never the person's) is: HomePersist (the default when empty), a
	// directory kept between sessions under Options.HomeDir, or HomeTemp,
	// an empty one removed when the server stops. Ignored when Unconfined.
	Home string `json:"home,omitempty"`
	// Unconfined runs the server without Landlock, seccomp or namespaces
	// (`sandbox = "off"`). It is a risk the config must state explicitly;
	// the scrubbed environment, private TMPDIR and process cleanup remain.
	Unconfined bool `json:"unconfined,omitempty"`
	// RequireFullSandbox makes the server fail to start rather than run in
	// the reduced tier of confinement, where the host may not create user
	// namespaces (`sandbox = "full"`).
	RequireFullSandbox bool `json:"require_full_sandbox,omitempty"`
	// StartupTimeout bounds initialize plus every page of tools/list. Zero
	// means the default: DefaultStartupTimeout, or, for a package launcher
	// (npx, uvx...) that may use the network (a list, true or
	// Unconfined), DefaultLauncherStartupTimeout at each start, as its first
	// start installs its package. Parse fills DefaultStartupTimeout for a
	// table without the key, and such a launcher still gets the longer
	// bound; a table that sets the key, to any value, gets that value. The
	// table's Definition (what a person reviews) shows the 30 s default
	// for such a launcher, not the longer bound; and the unset mark does
	// not survive JSON: a ServerConfig decoded from JSON with 30s set
	// keeps 30 s.
	StartupTimeout time.Duration `json:"startup_timeout"`
	// CallTimeout bounds one tools/call.
	CallTimeout time.Duration `json:"call_timeout"`
	// MaxOutput bounds the size of one call's result in bytes; a larger
	// result is cut, with a notice in the result.
	MaxOutput int64 `json:"max_output"`
	// MaxProcesses, MaxMemory and MaxTmp bound a confined server's
	// processes and threads together, its memory in bytes, and the size in
	// bytes of each of its TMPDIR and /dev/shm (see sandbox.Limits for how
	// each is enforced). Zero means the default: 512, 2GiB, 1GiB.
	MaxProcesses int   `json:"max_processes"`
	MaxMemory    int64 `json:"max_memory"`
	MaxTmp       int64 `json:"max_tmp"`
	// MaxFileSize bounds each file a server writes, anywhere, in bytes
	// (RLIMIT_FSIZE, in every tier). Zero means the default, 1GiB. It is
	// left out of Definition while it is zero, so that a table reviewed
	// before the key existed is still as reviewed.
	MaxFileSize int64 `json:"max_file_size,omitempty"`

	// source is the absolute path of the config file Load read the table
	// from; "" for a table from Parse or built by a program.
	source string
	// startupUnset: StartupTimeout is DefaultStartupTimeout because the
	// table did not set it (Parse) or it was zero (withDefaults), so a
	// package launcher may get DefaultLauncherStartupTimeout instead
	// (startupTimeout). A program that changes StartupTimeout afterwards
	// sets it: the flag counts only while the value is still the default.
	startupUnset bool
}

// The values of ServerConfig.Home (the home key).
const (
	HomePersist = "persist"
	HomeTemp    = "tmp"
)

// ConfigError is a problem with one key of one [mcp.<name>] table.
type ConfigError struct {
	Table string // e.g. "mcp.notes"
	Key   string // e.g. "allow"; empty when the problem is the table itself
	Msg   string
	// Err is the underlying error, if any (a *sandbox.LinkError for a
	// grant through a replaceable symbolic link); Unwrap returns it.
	Err error
}

// Unwrap returns e.Err.
func (e *ConfigError) Unwrap() error { return e.Err }

func (e *ConfigError) Error() string {
	if e.Key == "" {
		return fmt.Sprintf("config: [%s]: %s", e.Table, e.Msg)
	}
	return fmt.Sprintf("config: [%s] %s: %s", e.Table, e.Key, e.Msg)
}

// rawServer mirrors the TOML keys. Sizes and durations are decoded as any
// so that both "256KiB" and 262144 are accepted.
type rawServer struct {
	Command        []string          `toml:"command"`
	Allow          []string          `toml:"allow"`
	Deny           []string          `toml:"deny"`
	Default        string            `toml:"default"`
	NewTools       string            `toml:"new_tools"`
	Env            map[string]string `toml:"env"`
	EnvPass        []string          `toml:"env_pass"`
	Network        any               `toml:"network"`
	Read           []string          `toml:"read"`
	Write          []string          `toml:"write"`
	Protect        []string          `toml:"protect"`
	Git            string            `toml:"git"`
	Sandbox        string            `toml:"sandbox"`
	Home           string            `toml:"home"`
	StartupTimeout any               `toml:"startup_timeout"`
	CallTimeout    any               `toml:"call_timeout"`
	MaxOutput      any               `toml:"max_output"`
	MaxProcesses   any               `toml:"max_processes"`
	MaxMemory      any               `toml:"max_memory"`
	MaxTmp         any               `toml:"max_tmp"`
	MaxFileSize    any               `toml:"max_file_size"`
}

var knownKeys = []string{"allow", "call_timeout", "command", "default", "deny", "env", "env_pass", "git", "home",
	"max_file_size", "max_memory", "max_output", "max_processes", "max_tmp", "network", "new_tools", "protect", "read", "sandbox", "startup_timeout", "write"}

// Parse reads the [mcp.<name>] tables of a TOML document and ignores
// everything else in it, so an agent can keep its own settings in the same
// file. It knows no path: a config read from a file a server could write
// is gated (its tables start only as reviewed) only when the agent loads it
// with Load, or names the file in Options.ConfigFile. The servers come back sorted by name, validated, with defaults filled
// in. Every problem found is reported (joined), each as a *ConfigError naming
// the table and the key.
func Parse(data []byte) ([]ServerConfig, error) {
	var doc struct {
		MCP map[string]toml.Primitive `toml:"mcp"`
	}
	md, err := toml.Decode(string(data), &doc)
	if err != nil {
		// Not ParseError.ErrorWithPosition: it panics on some inputs
		// (found by FuzzParse); Error already names the line.
		var perr toml.ParseError
		if errors.As(err, &perr) {
			return nil, fmt.Errorf("config: %s", perr.Error())
		}
		return nil, fmt.Errorf("config: %w", err)
	}
	names := make([]string, 0, len(doc.MCP))
	for name := range doc.MCP {
		names = append(names, name)
	}
	sort.Strings(names)
	var (
		servers []ServerConfig
		errs    []error
	)
	for _, name := range names {
		table := "mcp." + name
		if t := md.Type("mcp", name); t != "Hash" {
			// `[mcp] command = [...]`: a key where a server's table was
			// meant.
			errs = append(errs, &ConfigError{Table: "mcp", Key: name,
				Msg: fmt.Sprintf("is %s directly in [mcp], where only server tables go: each server is a table of its own, such as [mcp.notes] with command = [\"notes-server\"] in it", tomlTypeName(t))})
			continue
		}
		raw, bad := decodeServer(md, name, doc.MCP[name])
		errs = append(errs, bad...)
		for _, key := range md.Undecoded() {
			if len(key) >= 3 && key[0] == "mcp" && key[1] == name {
				errs = append(errs, &ConfigError{Table: table, Key: key[2:].String(),
					Msg: "unknown key; the keys are " + strings.Join(knownKeys, ", ")})
			}
		}
		sc, verrs := raw.config(name)
		for _, e := range verrs {
			// A key of the wrong type was reported as such: what the
			// checks say of its absence would only repeat that.
			var ce *ConfigError
			if errors.As(e, &ce) && slices.ContainsFunc(bad, func(b error) bool {
				var be *ConfigError
				return errors.As(b, &be) && be.Key == ce.Key
			}) {
				continue
			}
			errs = append(errs, e)
		}
		if len(verrs) == 0 && len(bad) == 0 {
			servers = append(servers, sc)
		}
	}
	if len(errs) > 0 {
		return nil, dedupe(errs)
	}
	return servers, nil
}

// dedupe joins errors, dropping repeats (an unknown nested key can be
// reported once per level by the TOML decoder).
func dedupe(errs []error) error {
	seen := map[string]bool{}
	var out []error
	for _, e := range errs {
		if !seen[e.Error()] {
			seen[e.Error()] = true
			out = append(out, e)
		}
	}
	return errors.Join(out...)
}

// decodeServer decodes the keys of server name's table one at a time, so
// that a value of the wrong type is reported as such, naming its key, and
// does not hide the other keys' problems; an unknown key is reported too.
func decodeServer(md toml.MetaData, name string, prim toml.Primitive) (rawServer, []error) {
	table := "mcp." + name
	var raw rawServer
	var keys map[string]toml.Primitive
	if err := md.PrimitiveDecode(prim, &keys); err != nil {
		return raw, []error{decodeError(table, err)}
	}
	// The keys are rawServer's toml tags, so a key added there is known
	// here too.
	fields := make(map[string]reflect.Value)
	rv := reflect.ValueOf(&raw).Elem()
	for i := range rv.NumField() {
		fields[rv.Type().Field(i).Tag.Get("toml")] = rv.Field(i).Addr()
	}
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	var errs []error
	for _, k := range names {
		to, ok := fields[k]
		if !ok {
			errs = append(errs, &ConfigError{Table: table, Key: k,
				Msg: "unknown key; the keys are " + strings.Join(knownKeys, ", ")})
			continue
		}
		if err := md.PrimitiveDecode(keys[k], to.Interface()); err != nil {
			want := goTypeName(to.Elem().Type())
			got := tomlTypeName(md.Type("mcp", name, k))
			msg := fmt.Sprintf("must be %s, not %s", want, got)
			if got == "an array" || got == "a table" {
				// The container is right; something in it is not.
				msg = fmt.Sprintf("must be %s, and not every element is a string", want)
			}
			errs = append(errs, &ConfigError{Table: table, Key: k, Msg: msg})
		}
	}
	return raw, errs
}

// goTypeName says in words what TOML value decodes into a field of type t
// of rawServer.
func goTypeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Slice:
		return "an array of strings"
	case reflect.Map:
		return "a table of strings"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	}
	return "a value of another type"
}

// tomlTypeName says in words what md.Type calls a TOML type.
func tomlTypeName(t string) string {
	switch t {
	case "String":
		return "a string"
	case "Integer":
		return "an integer"
	case "Float":
		return "a number"
	case "Bool":
		return "true or false"
	case "Array":
		return "an array"
	case "Hash", "ArrayHash":
		return "a table"
	case "Datetime", "DatetimeLocal", "DateLocal", "TimeLocal":
		return "a date or time"
	}
	return "a value of type " + t
}

func decodeError(table string, err error) error {
	msg := err.Error()
	// BurntSushi reports `toml: line N (last key "mcp.x.allow"): ...`; pull
	// the key out so the error names it like every other config error.
	key := ""
	if i := strings.Index(msg, `(last key "`); i >= 0 {
		rest := msg[i+len(`(last key "`):]
		if j := strings.Index(rest, `"`); j >= 0 {
			key = strings.TrimPrefix(rest[:j], table+".")
		}
	}
	return &ConfigError{Table: table, Key: key, Msg: strings.TrimPrefix(msg, "toml: ")}
}

var (
	envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// reservedNames are the agent's own tool namespaces.
var reservedNames = []string{"fs", "proc", "git"}

// validServerName reports whether name may name a server: lowercase letters
// and digits, with single '-' between them, at most 32 bytes, and not a
// reserved name. Single dashes keep model names unambiguous: "a--b" would map
// to "a__b", which is where a server name ends and a tool name starts.
func validServerName(name string) error {
	switch {
	case name == "":
		return errors.New("empty server name")
	case slices.Contains(reservedNames, name):
		return fmt.Errorf("%q is reserved for the agent's own tools (fs, proc, git); choose another name", name)
	case len(name) > 32:
		return fmt.Errorf("%q is longer than 32 bytes", name)
	case !serverNameChars(name):
		return fmt.Errorf("%q is not a server name: use lowercase letters and digits, with single '-' between them", name)
	}
	return nil
}

// serverNameChars reports whether name is runs of [a-z0-9] joined by
// single dashes, as ^[a-z0-9]+(-[a-z0-9]+)*$ would: a byte loop, because
// ModelName checks the server's name again for every tool it names.
func serverNameChars(name string) bool {
	dash := true // as if after a dash: a name cannot start with one
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case 'a' <= c && c <= 'z' || '0' <= c && c <= '9':
			dash = false
		case c == '-' && !dash:
			dash = true
		default:
			return false
		}
	}
	return !dash // nor end with one, nor be empty
}

func (r rawServer) config(name string) (ServerConfig, []error) {
	table := "mcp." + name
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &ConfigError{Table: table, Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	if err := validServerName(name); err != nil {
		errs = append(errs, &ConfigError{Table: table, Msg: err.Error()})
	}
	sc := ServerConfig{
		Name:    name,
		Command: r.Command,
		Allow:   r.Allow,
		Deny:    r.Deny,
		Env:     r.Env,
		EnvPass: r.EnvPass,
		Read:    r.Read,
		Write:   r.Write,
		Protect: r.Protect,
		Home:    r.Home,
	}
	if sc.Home == "" {
		sc.Home = HomePersist
	}
	switch r.Git {
	case "", "read":
	case "write":
		sc.WritableGit = true
	default:
		bad("git", "%q is not allowed; use \"read\" (the default: the git directory is read-only to the server) or \"write\" (it may change hooks and config that git runs on the host: a risk)", r.Git)
	}
	switch v := r.Network.(type) {
	case nil:
	case bool:
		sc.Network = v
	case []any:
		for i, e := range v {
			str, ok := e.(string)
			if !ok {
				bad("network", "entry %d (%v) is not a string; write destinations such as \"api.example.com\" or \"localhost:8080\"", i+1, e)
				continue
			}
			sc.NetworkGrant = append(sc.NetworkGrant, str)
		}
	default:
		bad("network", "%v is not allowed; use false (the default: no network), true (the host's whole network) or a list of destinations such as [\"api.example.com\"]", r.Network)
	}
	switch r.Default {
	case "", "approval":
		sc.Default = Approval
	case "deny":
		sc.Default = Deny
	default:
		bad("default", "%q is not allowed; use \"approval\" (the default) or \"deny\"", r.Default)
	}
	switch r.NewTools {
	case "", "offer":
	case "hold":
		sc.HoldNewTools = true
	default:
		bad("new_tools", "%q is not allowed; use \"offer\" (the default: offered at once, each call asks) or \"hold\" (not offered until mcphost approve)", r.NewTools)
	}
	switch r.Sandbox {
	case "", "on":
	case "full":
		sc.RequireFullSandbox = true
	case "off":
		sc.Unconfined = true
	default:
		bad("sandbox", "%q is not allowed; use \"on\" (the default: the best confinement this host allows), \"full\" (fail unless fully confined) or \"off\" (runs the server unconfined: a risk)", r.Sandbox)
	}
	var err error
	if sc.StartupTimeout, err = durationValue(r.StartupTimeout, DefaultStartupTimeout); err != nil {
		bad("startup_timeout", "%v", err)
	}
	sc.startupUnset = r.StartupTimeout == nil
	if sc.CallTimeout, err = durationValue(r.CallTimeout, DefaultCallTimeout); err != nil {
		bad("call_timeout", "%v", err)
	}
	if sc.MaxOutput, err = sizeValue(r.MaxOutput, DefaultMaxOutput); err != nil {
		bad("max_output", "%v", err)
	}
	if sc.MaxProcesses, err = countValue(r.MaxProcesses, sandbox.DefaultMaxProcesses, minProcesses, maxProcesses); err != nil {
		bad("max_processes", "%v", err)
	}
	if sc.MaxMemory, err = sizeIn(r.MaxMemory, sandbox.DefaultMaxMemory, minMemory, maxLimitSize); err != nil {
		bad("max_memory", "%v", err)
	}
	if sc.MaxTmp, err = sizeIn(r.MaxTmp, sandbox.DefaultMaxTmp, minTmp, maxLimitSize); err != nil {
		bad("max_tmp", "%v", err)
	}
	// Zero (the default) when not given: see MaxFileSize.
	if sc.MaxFileSize, err = sizeIn(r.MaxFileSize, 0, minTmp, maxLimitSize); err != nil {
		bad("max_file_size", "%v", err)
	}
	for _, e := range sc.validate() {
		errs = append(errs, &ConfigError{Table: table, Key: e.key, Msg: e.msg})
	}
	return sc, errs
}

type keyProblem struct{ key, msg string }

// validate checks what both Parse and a hand-built ServerConfig must satisfy.
func (sc *ServerConfig) validate() []keyProblem {
	var out []keyProblem
	bad := func(key, format string, args ...any) {
		out = append(out, keyProblem{key, fmt.Sprintf(format, args...)})
	}
	if len(sc.Command) == 0 || sc.Command[0] == "" {
		bad("command", "required: the server's argv, e.g. command = [\"notes-server\", \"--db\", \"notes.db\"]")
	}
	for _, a := range sc.Command {
		if strings.ContainsRune(a, 0) {
			bad("command", "an argument contains a NUL byte")
		}
	}
	for _, list := range []struct {
		key   string
		names []string
	}{{"allow", sc.Allow}, {"deny", sc.Deny}} {
		for _, n := range list.names {
			if n == "" {
				bad(list.key, "an empty tool name")
			}
		}
	}
	for k, v := range sc.Env {
		if !envNameRE.MatchString(k) {
			bad("env", "%q is not a variable name", k)
		}
		if strings.ContainsRune(v, 0) {
			bad("env", "the value of %s contains a NUL byte", k)
		}
	}
	for _, k := range sc.EnvPass {
		if !envNameRE.MatchString(k) {
			bad("env_pass", "%q is not a variable name", k)
		}
	}
	for _, list := range []struct {
		key   string
		paths []string
	}{{"read", sc.Read}, {"write", sc.Write}, {"protect", sc.Protect}} {
		for _, p := range list.paths {
			if p == "" || strings.ContainsRune(p, 0) {
				bad(list.key, "%q is not a path", p)
			} else if strings.HasPrefix(p, "~") && p != "~" && !strings.HasPrefix(p, "~/") {
				bad(list.key, "%q: only ~/ (the user's own home) is expanded", p)
			}
		}
	}
	for i, d := range sc.NetworkGrant {
		if _, err := egress.ParseGrant(d); err != nil {
			var ge *egress.GrantError
			if !errors.As(err, &ge) {
				bad("network", "entry %d: %v", i+1, err)
				continue
			}
			bad("network", "entry %d: %q: %s", i+1, ge.Text, ge.Reason)
		}
	}
	if len(sc.NetworkGrant) > 0 && sc.Network {
		bad("network", "true (the host's whole network) and a list of destinations together; choose one")
	}
	if len(sc.NetworkGrant) > 0 && sc.Unconfined {
		bad("network", "a list of destinations needs the sandbox: with sandbox = \"off\" the server reaches every host; remove sandbox = \"off\" or the list")
	}
	switch sc.Home {
	case "", HomePersist, HomeTemp:
	default:
		bad("home", "%q is not allowed; use \"persist\" (the default: a private home kept between sessions) or \"tmp\" (an empty one each start)", sc.Home)
	}
	if sc.Default != "" && sc.Default != Approval && sc.Default != Deny {
		bad("default", "%q is not allowed; use \"approval\" or \"deny\"", sc.Default)
	}
	if sc.StartupTimeout < 0 || sc.StartupTimeout > maxTimeout {
		bad("startup_timeout", "%v is out of range (0 to 24h)", sc.StartupTimeout)
	}
	if sc.CallTimeout < 0 || sc.CallTimeout > maxTimeout {
		bad("call_timeout", "%v is out of range (0 to 24h)", sc.CallTimeout)
	}
	if sc.MaxOutput < 0 || sc.MaxOutput > maxMaxOutput {
		bad("max_output", "%d is out of range (1 byte to 64MiB)", sc.MaxOutput)
	}
	if sc.MaxProcesses != 0 && (sc.MaxProcesses < minProcesses || sc.MaxProcesses > maxProcesses) {
		bad("max_processes", "%d is out of range (%d to %d)", sc.MaxProcesses, minProcesses, maxProcesses)
	}
	if sc.MaxMemory != 0 && (sc.MaxMemory < minMemory || sc.MaxMemory > maxLimitSize) {
		bad("max_memory", "%d bytes is out of range (16MiB to 1TiB)", sc.MaxMemory)
	}
	if sc.MaxTmp != 0 && (sc.MaxTmp < minTmp || sc.MaxTmp > maxLimitSize) {
		bad("max_tmp", "%d bytes is out of range (1MiB to 1TiB)", sc.MaxTmp)
	}
	if sc.MaxFileSize != 0 && (sc.MaxFileSize < minTmp || sc.MaxFileSize > maxLimitSize) {
		bad("max_file_size", "%d bytes is out of range (1MiB to 1TiB)", sc.MaxFileSize)
	}
	return out
}

// network describes what the server may reach, for ServerInfo.Network.
func (sc *ServerConfig) network() string {
	switch {
	case sc.Network || sc.Unconfined:
		return "all"
	case len(sc.NetworkGrant) > 0:
		return strings.Join(sc.NetworkGrant, ", ")
	}
	return "none"
}

// withDefaults fills the zero values a hand-built config may leave.
func (sc ServerConfig) withDefaults() ServerConfig {
	if sc.Default == "" {
		sc.Default = Approval
	}
	if sc.StartupTimeout == 0 {
		sc.StartupTimeout = DefaultStartupTimeout
		sc.startupUnset = true
	}
	if sc.CallTimeout == 0 {
		sc.CallTimeout = DefaultCallTimeout
	}
	if sc.MaxOutput == 0 {
		sc.MaxOutput = DefaultMaxOutput
	}
	if sc.MaxProcesses == 0 {
		sc.MaxProcesses = sandbox.DefaultMaxProcesses
	}
	if sc.MaxMemory == 0 {
		sc.MaxMemory = sandbox.DefaultMaxMemory
	}
	if sc.MaxTmp == 0 {
		sc.MaxTmp = sandbox.DefaultMaxTmp
	}
	if sc.Home == "" {
		sc.Home = HomePersist
	}
	return sc
}

func durationValue(v any, def time.Duration) (time.Duration, error) {
	var d time.Duration
	switch v := v.(type) {
	case nil:
		return def, nil
	case string:
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			return 0, fmt.Errorf("%q is not a duration; write e.g. \"30s\" or \"2m\"", v)
		}
	default:
		return 0, fmt.Errorf("%v is not a duration; write a string such as \"30s\"", v)
	}
	if d <= 0 || d > maxTimeout {
		return 0, fmt.Errorf("%v is out of range (more than 0, at most 24h)", d)
	}
	return d, nil
}

func sizeValue(v any, def int64) (int64, error) {
	return sizeIn(v, def, 1, maxMaxOutput)
}

// sizeIn reads a size key: def when absent, else a number of bytes or a
// string such as "2GiB", between lo and hi.
func sizeIn(v any, def, lo, hi int64) (int64, error) {
	var n int64
	switch v := v.(type) {
	case nil:
		return def, nil
	case int64:
		n = v
	case string:
		var err error
		if n, err = bytesize.Parse(v); err != nil {
			return 0, fmt.Errorf("%q is not a size; write e.g. \"256KiB\", \"1MiB\" or a number of bytes", v)
		}
	default:
		return 0, fmt.Errorf("%v is not a size; write e.g. \"256KiB\"", v)
	}
	if n < lo || n > hi {
		return 0, fmt.Errorf("%d bytes is out of range (%s to %s)", n, bytesize.Format(lo), bytesize.Format(hi))
	}
	return n, nil
}

// countValue reads a whole-number key: def when absent, else between lo
// and hi.
func countValue(v any, def, lo, hi int) (int, error) {
	switch v := v.(type) {
	case nil:
		return def, nil
	case int64:
		if v < int64(lo) || v > int64(hi) {
			return 0, fmt.Errorf("%d is out of range (%d to %d)", v, lo, hi)
		}
		return int(v), nil
	default:
		return 0, fmt.Errorf("%v is not a whole number; write e.g. %d", v, def)
	}
}
