package mcphost

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/BurntSushi/toml"

	"github.com/mcphost/mcphost/internal/egress"
	"github.com/mcphost/mcphost/internal/hostfile"
	"github.com/mcphost/mcphost/pin"
)

// ImportOptions is the person's own configuration that Import consults to
// grant a package launcher (npx, uvx...) its registry. Every field may be
// left zero for the real one; tests set them so that Import does not depend
// on the machine it runs on.
type ImportOptions struct {
	// Env is the person's environment, as "NAME=value" entries: it gives
	// NPM_CONFIG_REGISTRY, UV_DEFAULT_INDEX, UV_INDEX_URL, PIP_INDEX_URL
	// and the like, and HOME, XDG_CONFIG_HOME and APPDATA, under which
	// ~/.npmrc, pip.conf and uv.toml are looked for. Nil means
	// os.Environ().
	Env []string
	// NpmConfig returns what `npm config get KEY` prints (KEY is
	// "registry" or "@scope:registry"). Nil means running npm itself,
	// for at most 5 seconds; if it fails, Import reads the registry from
	// Env and the .npmrc it names instead.
	NpmConfig func(ctx context.Context, key string) (string, error)
	// ReadFile reads one of the person's config files (~/.npmrc, pip.conf,
	// uv.toml). Nil means reading it as a regular file of at most 1 MiB.
	ReadFile func(path string) ([]byte, error)
	// LookupHost resolves the host of a registry found in the person's
	// configuration, so that one on an address that is not public (a
	// mirror in a private network) is granted that address too. Nil means
	// the system's resolver, for at most 5 seconds.
	LookupHost func(ctx context.Context, host string) ([]netip.Addr, error)
}

// Imported is what Import made of a pasted configuration.
type Imported struct {
	// Format names the format read: "mcpServers" (Claude Desktop, Cursor,
	// Claude Code's .mcp.json and most others), "servers" (VS Code),
	// "context_servers" (Zed), "map" (a bare object of servers, as
	// opencode's "mcp") or "codex" (Codex's TOML).
	Format string
	// TOML holds one [mcp.<name>] table per imported server, in the order
	// of Names, ready to review and append to mcphost.toml; Parse accepts
	// it. It holds no comment: the notes are for the person, to be shown
	// with it.
	TOML string
	// Names are the imported tables' names, sorted.
	Names []string
	// Sources are the servers' names in the input: Sources[i] is the
	// server that became table Names[i].
	Sources []string
	// Notes say, one sentence each and on one line, what the person should
	// know before using TOML: servers renamed or left out, secrets turned
	// into env_pass, grants computed or missing, keys not carried over.
	// They hold text of the input, quoted with %q but not otherwise
	// escaped: show them through pin.Visible.
	Notes []string
}

// ErrImportFormat is wrapped by Import's error when the input is neither
// JSON nor TOML that names MCP servers as a known client writes them.
var ErrImportFormat = errors.New("not a known MCP server configuration")

// maxImportServers bounds the servers one input may import, so that a
// hostile input of a mebibyte of tiny servers costs no more than a real
// one: no client's config has a hundred.
const maxImportServers = 1000

// npmConfigTimeout bounds one run of `npm config get`, lookupTimeout one
// lookup of a registry's name.
const (
	npmConfigTimeout = 5 * time.Second
	lookupTimeout    = 5 * time.Second
)

// Import reads the MCP server configuration of another client (pasted from
// a server's README, or a client's config file) and returns it as
// [mcp.<name>] tables, with notes. It reads:
//
//	{"mcpServers": {NAME: {...}}}   Claude Desktop, Cursor, Windsurf, Cline, Claude Code's .mcp.json
//	{"servers": {NAME: {...}}, "inputs": [...]}   VS Code's mcp.json ({"mcp": {"servers": ...}} in settings.json)
//	{"context_servers": {...}}      Zed
//	{"mcp": {NAME: {"type": "local", ...}}}   opencode
//	{NAME: {"command": ...}, ...}   a bare object of servers
//	"mcpServers": {...}             a fragment of one of these, without its braces
//	[mcp_servers.NAME]              Codex's config.toml
//
// JSON may hold // and /* */ comments and trailing commas, as VS Code's
// does. Only stdio servers are imported; remote ones (url, type "http" or
// "sse") and disabled ones are left out, each with a note.
//
// The input is treated as hostile: nothing in it is run, looked up or
// trusted. Its secrets are not copied: an env value whose name or look
// says it is a secret becomes env_pass, for the person to export, and an
// argument that looks like one is replaced by a placeholder. Allow lists
// (autoApprove, alwaysAllow) are not carried over: the person reviews the
// tools. A package launcher (npx, pnpm dlx, bunx, uvx, pipx run...) gets a
// network grant of its registry's host, taken from opts (the person's own
// npm, uv and pip configuration, never from the input), or a note saying
// what to add.
//
// The error, which wraps ErrImportFormat, is for input that is not such a
// configuration at all. Input in which no server could be imported is not
// an error: Names is empty and the notes say why. Import is safe to call
// from several goroutines (if opts' functions are); ctx bounds the run of
// npm and the lookups of registries' names.
func Import(ctx context.Context, data []byte, opts ImportOptions) (*Imported, error) {
	if opts.Env == nil {
		opts.Env = os.Environ()
	}
	if opts.NpmConfig == nil {
		opts.NpmConfig = runNpmConfig
	}
	if opts.LookupHost == nil {
		opts.LookupHost = func(ctx context.Context, host string) ([]netip.Addr, error) {
			ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
			defer cancel()
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	if opts.ReadFile == nil {
		opts.ReadFile = func(path string) ([]byte, error) { return hostfile.Read(path, hostfile.MaxConfig) }
	}
	im := &importer{ctx: ctx, opts: opts, env: envMap(opts.Env), inputs: map[string]bool{}}
	entries, err := im.decode(data)
	if err != nil {
		return nil, err
	}
	out := &Imported{Format: im.format}
	servers := im.keep(entries)
	im.name(servers)
	slices.SortFunc(servers, func(a, b *importServer) int { return strings.Compare(a.name, b.name) })
	var b strings.Builder
	for _, s := range servers {
		im.convert(s)
		table := s.render()
		// What is written must be what Parse accepts; a table it refuses
		// (which the checks above should make impossible) is left out
		// rather than handed to the person broken.
		if _, err := Parse([]byte(table)); err != nil {
			im.notef("[mcp.%s] is left out: its table would not be valid: %v", s.name, err)
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(table)
		out.Names = append(out.Names, s.name)
		out.Sources = append(out.Sources, s.key)
	}
	out.TOML = b.String()
	out.Notes = im.notes
	return out, nil
}

// importer holds one Import's state.
type importer struct {
	ctx    context.Context
	opts   ImportOptions
	env    map[string]string
	format string
	// inputs are the ids of VS Code's "inputs", which ${input:ID} names.
	inputs map[string]bool
	notes  []string
	// registries caches the grants of each registry kind ("npm",
	// "npm:@scope", "uv", "pip"), so npm runs once per key.
	registries map[string]registryGrant
}

type registryGrant struct {
	grants []string
	from   string // where the registry was found, for the note
	err    string // why no (main) registry was found, for the note
	// names are the granted names with the port their URL reaches,
	// which grantPrivate resolves.
	names []hostPort
	// private are the address grants added for names that resolve to
	// addresses a granted name may not reach.
	private []string
}

type hostPort struct{ host, port string }

// notef adds a note, on one line whatever its arguments hold.
func (im *importer) notef(format string, args ...any) {
	im.notes = append(im.notes, strings.ReplaceAll(fmt.Sprintf(format, args...), "\n", "; "))
}

// importEntry is one server of the input, as decoded.
type importEntry struct {
	key    string
	fields map[string]any
}

// importServer is one server being imported.
type importServer struct {
	key     string // its name in the input
	name    string // its table's name
	fields  map[string]any
	argv    []string
	env     map[string]string
	envPass []string
	network []string
	deny    []string
	startup time.Duration
	call    time.Duration
}

// decode detects the format of data and returns its servers, sorted by
// name so that the output does not depend on the input's key order.
func (im *importer) decode(data []byte) ([]importEntry, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, fmt.Errorf("%w: the input is empty", ErrImportFormat)
	}
	var top map[string]any
	if c := trimmed[0]; c == '{' || c == '"' || c == '/' {
		var err error
		if top, err = decodeJSONC(data); err != nil {
			return nil, fmt.Errorf("%w: it starts like JSON but is not: %v", ErrImportFormat, err)
		}
		return im.jsonServers(top)
	}
	if _, err := toml.Decode(string(data), &top); err != nil {
		var perr toml.ParseError
		if errors.As(err, &perr) {
			err = errors.New(perr.Error())
		}
		return nil, fmt.Errorf("%w: it is neither JSON nor TOML: %v", ErrImportFormat, err)
	}
	servers, ok := top["mcp_servers"].(map[string]any)
	if !ok {
		if _, mine := top["mcp"]; mine {
			return nil, fmt.Errorf("%w: it already has [mcp.<name>] tables, which are mcphost's own: append them to mcphost.toml as they are", ErrImportFormat)
		}
		return nil, fmt.Errorf("%w: TOML without [mcp_servers.<name>] tables (Codex's format)", ErrImportFormat)
	}
	im.format = "codex"
	return im.entries(servers), nil
}

// jsonServers finds the servers of a JSON document.
func (im *importer) jsonServers(top map[string]any) ([]importEntry, error) {
	if m, ok := top["mcp"].(map[string]any); ok && top["servers"] == nil && top["mcpServers"] == nil {
		top = m // VS Code's settings.json, or opencode's servers
	}
	var entries []importEntry
	for _, key := range []string{"mcpServers", "servers", "context_servers"} {
		v, ok := top[key]
		if !ok {
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%w: %q is not an object of servers", ErrImportFormat, key)
		}
		if im.format == "" {
			im.format = key
		}
		entries = append(entries, im.entries(m)...)
	}
	if im.format == "servers" || top["inputs"] != nil {
		im.readInputs(top["inputs"])
	}
	if im.format != "" {
		return entries, nil
	}
	// A bare object of servers: every value an object, one at least with
	// the key a server has.
	server := false
	for _, v := range top {
		m, ok := v.(map[string]any)
		if !ok {
			server = false
			break
		}
		for _, k := range []string{"command", "url", "serverUrl", "type"} {
			if _, ok := m[k]; ok {
				server = true
			}
		}
	}
	if !server {
		if _, ok := top["command"]; ok {
			return nil, fmt.Errorf("%w: it is one server without its name: paste it as {\"mcpServers\": {\"NAME\": {...}}}", ErrImportFormat)
		}
		return nil, fmt.Errorf("%w: JSON without \"mcpServers\" or \"servers\" (an object of servers by name)", ErrImportFormat)
	}
	im.format = "map"
	return im.entries(top), nil
}

// entries returns the servers of m sorted by name; a value that is not a
// table or object is left out with a note.
func (im *importer) entries(m map[string]any) []importEntry {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []importEntry
	for _, k := range keys {
		fields, ok := m[k].(map[string]any)
		if !ok {
			im.notef("%q is left out: it is not an object of a server's settings", k)
			continue
		}
		out = append(out, importEntry{key: k, fields: fields})
	}
	return out
}

// readInputs records the ids of VS Code's inputs.
func (im *importer) readInputs(v any) {
	list, ok := v.([]any)
	if !ok {
		return
	}
	for _, e := range list {
		if m, ok := e.(map[string]any); ok {
			if id, ok := m["id"].(string); ok {
				im.inputs[id] = true
			}
		}
	}
}

// Keys of a server's settings that Import reads, by format. Others are
// named in a note.
var (
	jsonKeys  = []string{"alwaysAllow", "args", "autoApprove", "command", "cwd", "disabled", "enabled", "env", "envFile", "environment", "headers", "httpUrl", "serverUrl", "type", "url"}
	codexKeys = []string{"args", "bearer_token_env_var", "command", "cwd", "disabled_tools", "enabled", "enabled_tools", "env", "env_http_headers", "env_vars", "http_headers", "startup_timeout_ms", "startup_timeout_sec", "tool_timeout_sec", "url"}
)

// keep returns the servers that can be imported, noting why each other
// one is not, and reads their argv.
func (im *importer) keep(entries []importEntry) []*importServer {
	var out []*importServer
	for _, e := range entries {
		if len(out) == maxImportServers {
			im.notef("only the first %d servers (by name) are imported; %q and the ones after it are left out", maxImportServers, e.key)
			break
		}
		f := e.fields
		if im.format == "codex" {
			if v, ok := f["enabled"].(bool); ok && !v {
				im.notef("%q is left out: it is disabled (enabled = false); import it again enabled to use it", e.key)
				continue
			}
		} else if v, ok := f["disabled"].(bool); ok && v {
			im.notef("%q is left out: it is disabled (\"disabled\": true); import it again enabled to use it", e.key)
			continue
		} else if v, ok := f["enabled"].(bool); ok && !v {
			im.notef("%q is left out: it is disabled (\"enabled\": false); import it again enabled to use it", e.key)
			continue
		}
		typ, typeOK := f["type"].(string)
		remote := ""
		for _, k := range []string{"url", "serverUrl", "httpUrl"} {
			if _, ok := f[k]; ok {
				remote = k
			}
		}
		if t := strings.ToLower(typ); t != "" && t != "stdio" && t != "local" {
			im.notef("%q is left out: it is a remote server (type %q); mcphost runs local stdio servers only", e.key, typ)
			continue
		}
		if remote != "" && f["command"] == nil {
			im.notef("%q is left out: it is a remote server (%q); mcphost runs local stdio servers only", e.key, remote)
			continue
		}
		if _, ok := f["type"]; ok && !typeOK {
			im.notef("%q is left out: its \"type\" is not a string", e.key)
			continue
		}
		argv, problem := serverArgv(f)
		if problem != "" {
			im.notef("%q is left out: %s", e.key, problem)
			continue
		}
		if _, ok := f["command"].(string); ok && f["args"] == nil && len(argv) > 1 {
			// The command is not quoted here: it may hold a secret that
			// the table's arguments have removed.
			im.notef("%q: its command is split at its spaces into %d arguments, as it has no \"args\"", e.key, len(argv))
		}
		out = append(out, &importServer{key: e.key, fields: f, argv: argv})
	}
	return out
}

// serverArgv returns command and args as one argv, or what is wrong.
func serverArgv(f map[string]any) ([]string, string) {
	var argv []string
	switch c := f["command"].(type) {
	case nil:
		return nil, "it has no \"command\""
	case string:
		if strings.TrimSpace(c) == "" {
			return nil, "its \"command\" is empty"
		}
		argv = []string{c}
		if f["args"] == nil && strings.ContainsAny(c, " \t") && !looksLikePath(c) {
			// A whole command line, as some READMEs give it; a path
			// may hold a space (C:\Program Files\...) and is left
			// whole.
			argv = strings.Fields(c)
		}
	case []any:
		// Some clients take the whole argv as the command.
		for _, a := range c {
			s, ok := a.(string)
			if !ok {
				return nil, "its \"command\" holds something other than a string"
			}
			argv = append(argv, s)
		}
		if len(argv) == 0 || strings.TrimSpace(argv[0]) == "" {
			return nil, "its \"command\" is empty"
		}
	default:
		return nil, "its \"command\" is not a string"
	}
	switch a := f["args"].(type) {
	case nil:
	case []any:
		for i, v := range a {
			switch v := v.(type) {
			case string:
				argv = append(argv, v)
			case json.Number:
				argv = append(argv, v.String())
			case int64:
				argv = append(argv, strconv.FormatInt(v, 10))
			case bool:
				argv = append(argv, strconv.FormatBool(v))
			default:
				return nil, fmt.Sprintf("argument %d is not a string", i+1)
			}
		}
	default:
		return nil, "its \"args\" is not a list"
	}
	for _, a := range argv {
		if strings.ContainsRune(a, 0) {
			return nil, "an argument holds a NUL byte"
		}
	}
	return argv, ""
}

// name gives each server a valid, unique table name. Names that are valid
// as they are keep them first, so that "My-Server" renamed cannot take the
// name of a "my-server" beside it.
func (im *importer) name(servers []*importServer) {
	taken := map[string]bool{}
	for _, s := range servers {
		if validServerName(s.key) == nil && !taken[s.key] {
			s.name = s.key
			taken[s.key] = true
		}
	}
	next := map[string]int{} // the next suffix to try, per base
	for _, s := range servers {
		if s.name != "" {
			continue
		}
		base := importName(s.key)
		name := base
		for n := max(next[base], 2); taken[name]; n++ {
			suffix := "-" + strconv.Itoa(n)
			name = strings.TrimRight(base[:min(len(base), 32-len(suffix))], "-") + suffix
			next[base] = n + 1
		}
		s.name = name
		taken[name] = true
		var why []string
		switch {
		case slices.Contains(reservedNames, s.key):
			why = append(why, "fs, proc and git name the agent's own tools")
		case !serverNameChars(s.key):
			why = append(why, "a server name is lowercase letters and digits with single '-' between them")
		case len(s.key) > 32:
			why = append(why, "a server name has at most 32 bytes")
		}
		if name != base {
			why = append(why, base+" was taken")
		}
		im.notef("%q is named %s (%s)", s.key, name, strings.Join(why, "; "))
	}
}

// importName makes key a valid server name: lowercase ASCII letters and
// digits, every other run of characters one '-'.
func importName(key string) string {
	var b []byte
	dash := false
	for _, r := range strings.ToLower(key) {
		if 'a' <= r && r <= 'z' || '0' <= r && r <= '9' {
			if dash && len(b) > 0 {
				b = append(b, '-')
			}
			dash = false
			b = append(b, byte(r))
		} else {
			dash = true
		}
		if len(b) >= 32 {
			break
		}
	}
	name := strings.TrimRight(string(b[:min(len(b), 32)]), "-")
	if name == "" {
		name = "server"
	}
	if slices.Contains(reservedNames, name) {
		name += "-server"
	}
	return name
}

// convert reads a server's settings other than its argv.
func (im *importer) convert(s *importServer) {
	table := "[mcp." + s.name + "]"
	im.convertArgs(s, table)
	im.convertEnv(s, table)
	if im.format == "codex" {
		im.convertCodex(s, table)
	}
	im.grantRegistry(s, table)
	known := jsonKeys
	if im.format == "codex" {
		known = codexKeys
	}
	f := s.fields
	if v, ok := f["cwd"]; ok {
		im.notef("%s: its cwd (%q) is not carried over: mcphost runs every server in the worktree", table, fmt.Sprint(v))
	}
	if _, ok := f["envFile"]; ok {
		im.notef("%s: its envFile is not carried over: list the variables it needs in env_pass and export them", table)
	}
	for _, k := range []string{"autoApprove", "alwaysAllow", "enabled_tools"} {
		if _, ok := f[k]; ok {
			im.notef("%s: its %s list is not carried over: review its tools with mcphost list, then allow or deny them in the table", table, k)
		}
	}
	var unknown []string
	for k := range f {
		if !slices.Contains(known, k) {
			unknown = append(unknown, strconv.Quote(k))
		}
	}
	sort.Strings(unknown)
	if len(unknown) > 0 {
		im.notef("%s: not carried over, as mcphost has no such setting: %s", table, strings.Join(unknown, ", "))
	}
}

// refRE matches a variable reference as VS Code (${input:ID},
// ${env:NAME}, ${workspaceFolder}) and Claude Code (${NAME},
// ${NAME:-default}) expand them.
var refRE = regexp.MustCompile(`\$\{[^}]*\}`)

// convertArgs replaces arguments that look like secrets and notes the ones
// mcphost will not expand or cannot reach.
func (im *importer) convertArgs(s *importServer, table string) {
	var refs, paths []string
	for i := 0; i < len(s.argv); i++ {
		a := s.argv[i]
		if i > 0 && secretArg(s.argv, i) {
			s.argv[i] = secretPlaceholder
			im.notef("%s: argument %d looked like a secret and is replaced by %q: pass it in a variable the server reads, if it has one, listed in env_pass; or put it back, knowing mcphost.toml then holds it", table, i, secretPlaceholder)
			continue
		}
		if strings.Contains(a, "${workspaceFolder}") {
			s.argv[i] = strings.ReplaceAll(a, "${workspaceFolder}", ".")
			a = s.argv[i]
			if i == 0 {
				im.notef("%s: ${workspaceFolder} in its command is now \".\": mcphost runs servers in the worktree", table)
			} else {
				im.notef("%s: ${workspaceFolder} in argument %d is now \".\": mcphost runs servers in the worktree", table, i)
			}
		}
		if refRE.MatchString(a) {
			refs = append(refs, strconv.Itoa(i))
		}
		if i > 0 && looksLikeOutsidePath(a) {
			paths = append(paths, strconv.Quote(a))
		}
	}
	if len(refs) > 0 {
		im.notef("%s: argument %s (0 is the command) refers to a variable (${...}), which mcphost does not expand: it passes arguments as they are, so replace the reference with the value", table, strings.Join(refs, ", "))
	}
	if len(paths) > 0 {
		im.notef("%s: the server may not reach %s: a confined server sees the worktree, system directories and its grants, so add what it needs to read (or write, if it must change it)", table, strings.Join(paths, ", "))
	}
	if base := strings.ToLower(filepath.Base(s.argv[0])); base == "docker" || base == "podman" || base == "docker.exe" {
		im.notef("%s: it runs %s, which needs the container daemon's socket; a confined server cannot reach it, so run the server's own program instead", table, base)
	}
}

const secretPlaceholder = "SECRET-REMOVED"

// secretArg reports whether argv[i] looks like a secret: by its look, or
// as the value of a flag whose name says it is one.
func secretArg(argv []string, i int) bool {
	a := argv[i]
	if looksLikeToken(a) {
		return true
	}
	if name, value, ok := strings.Cut(a, "="); ok && strings.HasPrefix(name, "-") {
		return secretFlag(name) && value != "" && !looksLikePath(value)
	}
	prev := argv[i-1]
	return i > 1 && strings.HasPrefix(prev, "-") && !strings.Contains(prev, "=") && !strings.HasPrefix(a, "-") &&
		secretFlag(prev) && !looksLikePath(a)
}

// secretFlag reports whether a flag's name says its value is a secret. It
// is stricter than secretName, word by word: replacing an argument that
// is not a secret breaks the server.
func secretFlag(flag string) bool {
	words := strings.FieldsFunc(strings.ToLower(flag), func(r rune) bool { return r == '-' || r == '_' || r == '.' })
	if len(words) == 0 {
		return false
	}
	switch words[len(words)-1] {
	case "file", "path", "dir", "env", "var", "name", "id", "type", "mode", "url":
		return false // the value names the secret or describes it
	}
	for _, w := range words {
		switch w {
		case "token", "secret", "password", "passwd", "pass", "pwd", "apikey", "key", "pat", "credential", "credentials", "cookie", "bearer":
			return true
		}
	}
	return false
}

// convertEnv copies plain env values and turns secrets and references into
// env_pass.
func (im *importer) convertEnv(s *importServer, table string) {
	var names []string
	env, ok := s.fields["env"]
	if !ok && im.format != "codex" {
		env = s.fields["environment"] // opencode's name for it
	}
	switch e := env.(type) {
	case nil:
		return
	case map[string]any:
		for k := range e {
			names = append(names, k)
		}
		sort.Strings(names)
		var secrets []string
		for _, k := range names {
			if !envNameRE.MatchString(k) {
				im.notef("%s: env %q is left out: it is not a variable name", table, k)
				continue
			}
			var v string
			switch x := e[k].(type) {
			case string:
				v = x
			case json.Number:
				v = x.String()
			case int64:
				v = strconv.FormatInt(x, 10)
			case float64:
				v = strconv.FormatFloat(x, 'g', -1, 64)
			case bool:
				v = strconv.FormatBool(x)
			default:
				im.notef("%s: env %s is left out: its value is not a string", table, k)
				continue
			}
			if strings.Contains(v, "${workspaceFolder}") {
				v = strings.ReplaceAll(v, "${workspaceFolder}", ".")
				im.notef("%s: ${workspaceFolder} in env %s is now \".\": mcphost runs servers in the worktree", table, k)
			}
			switch {
			case strings.ContainsRune(v, 0):
				im.notef("%s: env %s is left out: its value holds a NUL byte", table, k)
			case refRE.MatchString(v):
				s.addPass(k)
				im.notef("%s: env %s refers to %s, which mcphost does not expand: env_pass passes %s from your environment, so export it there, set to the whole value meant", table, k, describeRefs(v, im.inputs), k)
			case secretName(k) && !(looksLikePath(v) && pathName(k)) || looksLikeToken(v):
				s.addPass(k)
				secrets = append(secrets, k)
			default:
				if s.env == nil {
					s.env = map[string]string{}
				}
				s.env[k] = v
				if risky := riskyEnv(k); risky != "" {
					im.notef("%s: env %s %s: check its value", table, k, risky)
				}
			}
		}
		if len(secrets) == 1 {
			im.notef("%s: env %s looked like a secret and is not copied: env_pass passes it from your environment, so export it there before mcphost starts the server", table, secrets[0])
		} else if len(secrets) > 1 {
			im.notef("%s: env %s looked like secrets and are not copied: env_pass passes them from your environment, so export them there before mcphost starts the server", table, strings.Join(secrets, ", "))
		}
	default:
		im.notef("%s: its env is not carried over: it is not an object of variables", table)
	}
}

func (s *importServer) addPass(name string) {
	if !slices.Contains(s.envPass, name) {
		s.envPass = append(s.envPass, name)
	}
}

// describeRefs says what the references in v stand for.
func describeRefs(v string, inputs map[string]bool) string {
	var parts []string
	for _, r := range refRE.FindAllString(v, 8) {
		inner := r[2 : len(r)-1]
		switch {
		case strings.HasPrefix(inner, "input:"):
			what := "an input VS Code asks for"
			if !inputs[inner[len("input:"):]] {
				what = "an input the config does not define"
			}
			parts = append(parts, fmt.Sprintf("%q (%s)", r, what))
		case strings.HasPrefix(inner, "env:"):
			parts = append(parts, fmt.Sprintf("%q (the variable %s)", r, inner[len("env:"):]))
		default:
			parts = append(parts, strconv.Quote(r))
		}
	}
	return strings.Join(parts, " and ")
}

// convertCodex reads Codex's own keys.
func (im *importer) convertCodex(s *importServer, table string) {
	f := s.fields
	if v, ok := f["env_vars"]; ok {
		list, ok := v.([]any)
		if !ok {
			im.notef("%s: its env_vars is not carried over: it is not a list", table)
		}
		var passed []string
		for _, e := range list {
			if name, ok := e.(string); ok && envNameRE.MatchString(name) {
				s.addPass(name)
				passed = append(passed, name)
			} else {
				im.notef("%s: env_vars entry %q is left out: it is not a variable name", table, fmt.Sprint(e))
			}
		}
		if len(passed) > 0 {
			im.notef("%s: env_vars become env_pass: %s pass from your environment to the server", table, strings.Join(passed, ", "))
		}
	}
	timeout := func(key string, unit time.Duration, to *time.Duration, ours string) {
		v, ok := f[key]
		if !ok {
			return
		}
		var n float64
		switch x := v.(type) {
		case int64:
			n = float64(x)
		case float64:
			n = x
		default:
			im.notef("%s: %s is not carried over: it is not a number", table, key)
			return
		}
		d := n * float64(unit)
		if math.IsNaN(d) || d <= 0 || d > float64(maxTimeout) {
			im.notef("%s: %s is not carried over: %v is not more than 0 and at most a day", table, key, v)
			return
		}
		*to = time.Duration(d).Round(time.Millisecond)
		if *to <= 0 {
			*to = time.Millisecond
		}
		im.notef("%s: its %s is %s = %q", table, key, ours, formatDuration(*to))
	}
	timeout("startup_timeout_sec", time.Second, &s.startup, "startup_timeout")
	if s.startup == 0 {
		timeout("startup_timeout_ms", time.Millisecond, &s.startup, "startup_timeout")
	}
	timeout("tool_timeout_sec", time.Second, &s.call, "call_timeout")
	if v, ok := f["disabled_tools"]; ok {
		list, _ := v.([]any)
		for _, e := range list {
			if name, ok := e.(string); ok && name != "" && !slices.Contains(s.deny, name) {
				s.deny = append(s.deny, name)
			}
		}
		if len(s.deny) > 0 {
			im.notef("%s: its disabled_tools are denied (deny)", table)
		}
	}
}

// formatDuration writes d as time.ParseDuration reads it, in whole seconds
// when it is.
func formatDuration(d time.Duration) string {
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return d.String()
}

// riskyEnv says what a variable changes about how the program starts, or ""
// for one that changes nothing of the kind.
func riskyEnv(name string) string {
	u := strings.ToUpper(name)
	switch {
	case strings.HasPrefix(u, "LD_") || strings.HasPrefix(u, "DYLD_"):
		return "changes which libraries the program loads"
	case slices.Contains(pathVars, u) || slices.Contains(optionVars, u) || u == "PYTHONSTARTUP" || u == "BASH_ENV" || u == "ENV" || u == "JAVA_TOOL_OPTIONS":
		return "changes what code the program runs"
	case u == "PATH":
		return "replaces the PATH in which the program is looked up"
	}
	return ""
}

// secretNameParts are the parts of a variable's or flag's name that say its
// value is a secret.
var secretNameParts = []string{"TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "PASS", "PWD", "AUTH", "CREDENTIAL", "COOKIE", "SESSION", "PRIVATE", "SIGNATURE", "BEARER"}

// secretName reports whether a variable or flag named name holds a secret by
// its name. It errs towards yes: the cost of a false one is an export.
func secretName(name string) bool {
	u := strings.ToUpper(name)
	if u == "PWD" || u == "OLDPWD" {
		return false // the working directory
	}
	for _, p := range secretNameParts {
		if strings.Contains(u, p) {
			return true
		}
	}
	return false
}

// pathName reports whether a variable's name says its value is a path (a
// key file's, not a key), which is not itself a secret.
func pathName(name string) bool {
	u := strings.ToUpper(name)
	for _, s := range []string{"_FILE", "_PATH", "_DIR", "_HOME", "_CREDENTIALS"} {
		if strings.HasSuffix(u, s) {
			return true
		}
	}
	return false
}

// tokenPrefixes start the tokens of well-known services and the schemes of
// HTTP authorization.
var tokenPrefixes = []string{"sk-", "sk_", "rk_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxs-", "xapp-",
	"AKIA", "ASIA", "AIza", "ya29.", "npm_", "pypi-", "hf_", "shpat_", "dop_v1_", "lin_api_", "sntrys_", "xai-", "gsk_", "eyJ"}

// looksLikeToken reports whether v looks like a credential by itself: a
// known token prefix, an authorization header value, a private key, a URL
// carrying credentials, or a long random-looking string.
func looksLikeToken(v string) bool {
	v = strings.TrimSpace(v)
	lower := strings.ToLower(v)
	for _, p := range []string{"bearer ", "basic ", "token ", "-----begin"} {
		if strings.HasPrefix(lower, p) && len(v) > len(p)+3 {
			return true
		}
	}
	if len(v) >= 16 && !strings.ContainsAny(v, " \t\n") {
		for _, p := range tokenPrefixes {
			if strings.HasPrefix(v, p) {
				return true
			}
		}
	}
	if strings.Contains(v, "://") {
		u, err := url.Parse(v)
		if err != nil || u.User == nil && u.RawQuery == "" {
			return false
		}
		if u.User != nil {
			if _, ok := u.User.Password(); ok || len(u.User.Username()) >= 16 {
				return true
			}
		}
		for k := range u.Query() {
			if secretName(k) || strings.EqualFold(k, "sig") {
				return true
			}
		}
		return false
	}
	return highEntropy(v)
}

// highEntropy reports whether v is long, without spaces, not a path, and
// mixes digits with letters the way a random token does (about 3.5 bits a
// character or more).
func highEntropy(v string) bool {
	if len(v) < 20 || len(v) > 4096 || looksLikePath(v) || strings.ContainsAny(v, " \t\n@") {
		return false
	}
	var digit, lower, upper bool
	counts := map[rune]int{}
	n := 0
	for _, r := range v {
		switch {
		case '0' <= r && r <= '9':
			digit = true
		case 'a' <= r && r <= 'z':
			lower = true
		case 'A' <= r && r <= 'Z':
			upper = true
		case strings.ContainsRune("-_+/=.:~", r):
		default:
			return false
		}
		counts[r]++
		n++
	}
	if !digit || !lower && !upper {
		return false
	}
	var bits float64
	for _, c := range counts {
		p := float64(c) / float64(n)
		bits -= p * math.Log2(p)
	}
	return bits >= 3.5
}

// looksLikePath reports whether v reads as a file path.
func looksLikePath(v string) bool {
	return strings.HasPrefix(v, "/") || strings.HasPrefix(v, "~/") || strings.HasPrefix(v, "./") || strings.HasPrefix(v, "../") ||
		len(v) >= 3 && v[1] == ':' && (v[2] == '\\' || v[2] == '/') && ('a' <= v[0]|0x20 && v[0]|0x20 <= 'z') ||
		strings.HasPrefix(v, "\\\\")
}

// looksLikeOutsidePath reports whether argument a is a path that is not
// relative to the worktree: a confined server cannot reach it unless
// granted.
func looksLikeOutsidePath(a string) bool {
	if _, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(a, "-") {
		a = v
	}
	return a == "~" || strings.HasPrefix(a, "~/") || strings.HasPrefix(a, "/") || (looksLikePath(a) && !strings.HasPrefix(a, "./") && !strings.HasPrefix(a, "../"))
}

// grantRegistry grants a package launcher its registry.
func (im *importer) grantRegistry(s *importServer, table string) {
	launcher, _, ok := packageLauncher(s.argv)
	if !ok {
		return
	}
	var kinds []string
	switch launcher {
	case "uvx", "uv tool run":
		kinds = []string{"uv"}
	case "pipx run":
		kinds = []string{"pip"}
	default:
		kinds = []string{"npm"}
		if scope := npmScope(s.argv); scope != "" {
			kinds = append(kinds, "npm:"+scope)
		}
	}
	var reached []string
	for i, kind := range kinds {
		r := im.registry(kind)
		if i > 0 && len(r.grants) == 0 {
			continue // the scope has no registry of its own
		}
		if r.err != "" {
			im.notef("%s: %s fetches its package from a registry, and %s; add your registry's hosts to network (see the README's \"Network grants\")", table, launcher, r.err)
		}
		if len(r.grants) == 0 {
			continue
		}
		for _, g := range r.grants {
			if !slices.Contains(s.network, g) {
				s.network = append(s.network, g)
			}
		}
		reached = append(reached, fmt.Sprintf("%s (as %s names it)", strings.Join(r.grants, ", "), r.from))
		if len(r.private) > 0 {
			im.notef("%s: the registry's name resolves here to %s, which is not public, and a granted name reaches public addresses only: so it is granted too; change it if the registry moves", table, strings.Join(r.private, ", "))
		}
	}
	if len(reached) > 0 {
		im.notef("%s: %s fetches its package, so network grants it %s; add any host the server itself calls", table, launcher, strings.Join(reached, " and "))
	}
	for i, a := range s.argv[1:] {
		if strings.Contains(a, "://") || strings.HasPrefix(a, "git+") || strings.HasPrefix(a, "github:") {
			im.notef("%s: argument %d fetches from elsewhere than the registry, which the grant does not cover", table, i+1)
			break
		}
	}
	if launcher == "deno" {
		im.notef("%s: deno fetches jsr: packages from the JSR registry, which needs a grant of its own", table)
	}
}

// npmScope returns the scope ("@scope") of the package an npm launcher
// runs, or "".
func npmScope(argv []string) string {
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		if a == "-p" || a == "--package" {
			if i+1 < len(argv) {
				a = argv[i+1]
			}
		} else if v, ok := strings.CutPrefix(a, "--package="); ok {
			a = v
		} else if strings.HasPrefix(a, "-") || a == "exec" || a == "x" || a == "dlx" {
			continue
		}
		if strings.HasPrefix(a, "@") {
			if scope, _, ok := strings.Cut(a, "/"); ok && len(scope) > 1 {
				return scope
			}
		}
		return ""
	}
	return ""
}

// registry finds the grants of a registry kind from the person's
// configuration, once per Import.
func (im *importer) registry(kind string) registryGrant {
	if r, ok := im.registries[kind]; ok {
		return r
	}
	var r registryGrant
	switch {
	case kind == "npm":
		r = im.npmRegistry("")
	case strings.HasPrefix(kind, "npm:"):
		r = im.npmRegistry(kind[len("npm:"):])
	case kind == "uv":
		r = im.indexRegistry("no index is configured (UV_DEFAULT_INDEX, UV_INDEX_URL, uv.toml), so uv uses PyPI's, which is \"pypi.org\" and \"files.pythonhosted.org\"",
			[]string{"UV_DEFAULT_INDEX", "UV_INDEX_URL"}, []string{"UV_INDEX", "UV_EXTRA_INDEX_URL"}, im.uvConfigFiles(), readUVConfig)
	case kind == "pip":
		r = im.indexRegistry("no index is configured (PIP_INDEX_URL, pip.conf), so pip uses PyPI's, which is \"pypi.org\" and \"files.pythonhosted.org\"",
			[]string{"PIP_INDEX_URL"}, []string{"PIP_EXTRA_INDEX_URL"}, im.pipConfigFiles(), readPipConfig)
	}
	im.grantPrivate(&r)
	if im.registries == nil {
		im.registries = map[string]registryGrant{}
	}
	im.registries[kind] = r
	return r
}

// grantPrivate resolves the registry's names and grants each address
// that is not public: a granted name reaches public addresses only, and
// a registry mirror often sits on a private one. The addresses are the
// person's own resolver's answer for their own registry, never a name
// of the input's.
func (im *importer) grantPrivate(r *registryGrant) {
	for _, hp := range r.names {
		addrs, err := im.opts.LookupHost(im.ctx, hp.host)
		if err != nil {
			continue // the grant of the name stands; a refusal notice will say more
		}
		for _, a := range addrs {
			a = a.Unmap()
			if !a.IsValid() || publicAddr(a) {
				continue
			}
			g := net.JoinHostPort(a.String(), hp.port)
			if _, err := egress.ParseGrant(g); err != nil || slices.Contains(r.grants, g) {
				continue
			}
			r.grants = append(r.grants, g)
			r.private = append(r.private, g)
		}
	}
}

// nonPublic are special-purpose ranges a granted name may not reach beyond
// what netip's predicates say: shared address space, documentation,
// benchmarking, IETF protocol assignments. It errs towards listing more:
// an address granted needlessly is the registry's own.
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("100.64.0.0/10"), netip.MustParsePrefix("192.0.0.0/24"), netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"), netip.MustParsePrefix("198.51.100.0/24"), netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("240.0.0.0/4"), netip.MustParsePrefix("2001::/23"), netip.MustParsePrefix("2001:db8::/32"),
	netip.MustParsePrefix("fc00::/7"),
}

// publicAddr reports whether a looks like a public unicast address.
func publicAddr(a netip.Addr) bool {
	if !a.IsGlobalUnicast() || a.IsPrivate() || a.IsLoopback() || a.IsLinkLocalUnicast() {
		return false
	}
	if a.Is6() && !netip.MustParsePrefix("2000::/3").Contains(a) {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// npmRegistry asks npm for the registry (of scope, when not ""), and falls
// back on the environment and the user's .npmrc if npm cannot say.
func (im *importer) npmRegistry(scope string) registryGrant {
	key := "registry"
	if scope != "" {
		key = scope + ":registry"
	}
	out, err := im.opts.NpmConfig(im.ctx, key)
	out = strings.TrimSpace(out)
	if err == nil {
		if out == "" || out == "undefined" || out == "null" {
			return registryGrant{err: "npm config get " + key + " names none"}
		}
		return grantFromURL(out, "`npm config get "+key+"`")
	}
	npmErr := err
	// npm reads npm_config_* variables in any case.
	envKey := "npm_config_" + key
	for k, v := range im.env {
		if strings.EqualFold(k, envKey) && v != "" {
			return grantFromURL(v, k)
		}
	}
	rc := im.env["NPM_CONFIG_USERCONFIG"]
	if rc == "" {
		if home := im.home(); home != "" {
			rc = filepath.Join(home, ".npmrc")
		}
	}
	if rc != "" {
		if data, err := im.opts.ReadFile(rc); err == nil {
			for _, line := range strings.Split(string(data), "\n") {
				k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
				if ok && strings.TrimSpace(k) == key {
					return grantFromURL(strings.TrimSpace(v), rc)
				}
			}
		}
	}
	if scope != "" {
		return registryGrant{}
	}
	return registryGrant{err: fmt.Sprintf("npm could not say which (npm config get %s: %v), nor does the environment or .npmrc", key, shortErr(npmErr))}
}

func shortErr(err error) string {
	s := err.Error()
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// indexRegistry finds a Python index's grants: the first of the main
// variables set, else the first config file's index, plus every extra
// index. Its err says so when no main index is configured, even if extra
// ones are: the tool then uses its default index, which is configured
// nowhere Import can read.
func (im *importer) indexRegistry(none string, main, extra, files []string, read func([]byte) (string, []string)) registryGrant {
	var r registryGrant
	var bad []string
	add := func(u, from string) {
		g := grantFromURL(u, from)
		if len(g.grants) == 0 {
			bad = append(bad, g.err)
			return
		}
		if r.from == "" {
			r.from = g.from
		}
		r.names = append(r.names, g.names...)
		for _, x := range g.grants {
			if !slices.Contains(r.grants, x) {
				r.grants = append(r.grants, x)
			}
		}
	}
	index := ""
	for _, k := range main {
		if v := strings.TrimSpace(im.env[k]); v != "" {
			add(v, k)
			index = k
			break
		}
	}
	for _, k := range extra {
		for _, v := range strings.Fields(im.env[k]) {
			// A UV_INDEX entry may be NAME=URL.
			if name, u, ok := strings.Cut(v, "="); ok && !strings.Contains(name, "/") {
				v = u
			}
			add(v, k)
		}
	}
	for _, path := range files {
		data, err := im.opts.ReadFile(path)
		if err != nil {
			continue
		}
		ix, extras := read(data)
		if ix != "" && index == "" {
			add(ix, path)
			index = path
		}
		for _, u := range extras {
			add(u, path)
		}
		break // the first file found is the one the tool reads
	}
	switch {
	case index == "":
		r.err = none
	case len(bad) > 0:
		r.err = bad[0]
	}
	return r
}

// readUVConfig reads index-url, extra-index-url and [[index]] urls of a
// uv.toml.
func readUVConfig(data []byte) (string, []string) {
	var doc struct {
		IndexURL      string   `toml:"index-url"`
		ExtraIndexURL []string `toml:"extra-index-url"`
		Index         []struct {
			URL     string `toml:"url"`
			Default bool   `toml:"default"`
		} `toml:"index"`
	}
	if _, err := toml.Decode(string(data), &doc); err != nil {
		return "", nil
	}
	index, extras := doc.IndexURL, doc.ExtraIndexURL
	for _, ix := range doc.Index {
		if ix.Default && index == "" {
			index = ix.URL
		} else if ix.URL != "" {
			extras = append(extras, ix.URL)
		}
	}
	return index, extras
}

// readPipConfig reads index-url and extra-index-url of a pip.conf's
// [global] (or [install]) section.
func readPipConfig(data []byte) (string, []string) {
	var index string
	var extras []string
	section := ""
	lastKey := ""
	for _, line := range strings.Split(string(data), "\n") {
		raw := line
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			section = strings.ToLower(strings.Trim(line, "[] "))
			lastKey = ""
			continue
		}
		if section != "global" && section != "install" {
			continue
		}
		if raw[0] == ' ' || raw[0] == '\t' {
			// A continuation line of a multi-line value.
			if lastKey == "extra-index-url" {
				extras = append(extras, strings.Fields(line)...)
			}
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			k, v, ok = strings.Cut(line, ":")
		}
		if !ok {
			continue
		}
		k = strings.ToLower(strings.TrimSpace(k))
		lastKey = k
		switch k {
		case "index-url", "index_url":
			index = strings.TrimSpace(v)
		case "extra-index-url", "extra_index_url":
			extras = append(extras, strings.Fields(v)...)
		}
	}
	return index, extras
}

func (im *importer) home() string {
	if runtime.GOOS == "windows" && im.env["USERPROFILE"] != "" {
		return im.env["USERPROFILE"]
	}
	return im.env["HOME"]
}

// configDir is XDG_CONFIG_HOME, or ~/.config.
func (im *importer) configDir() string {
	if d := im.env["XDG_CONFIG_HOME"]; d != "" {
		return d
	}
	if h := im.home(); h != "" {
		return filepath.Join(h, ".config")
	}
	return ""
}

// uvConfigFiles are where uv looks for its user config, in its order.
func (im *importer) uvConfigFiles() []string {
	var out []string
	if f := im.env["UV_CONFIG_FILE"]; f != "" {
		return []string{f}
	}
	if d := im.env["APPDATA"]; runtime.GOOS == "windows" && d != "" {
		out = append(out, filepath.Join(d, "uv", "uv.toml"))
	}
	if d := im.configDir(); d != "" {
		out = append(out, filepath.Join(d, "uv", "uv.toml"))
	}
	return out
}

// pipConfigFiles are where pip looks for its user config, in its order.
func (im *importer) pipConfigFiles() []string {
	if f := im.env["PIP_CONFIG_FILE"]; f != "" {
		return []string{f}
	}
	var out []string
	if d := im.env["APPDATA"]; runtime.GOOS == "windows" && d != "" {
		out = append(out, filepath.Join(d, "pip", "pip.ini"))
	}
	if d := im.configDir(); d != "" {
		out = append(out, filepath.Join(d, "pip", "pip.conf"))
	}
	if h := im.home(); h != "" {
		if runtime.GOOS == "darwin" {
			out = append(out, filepath.Join(h, "Library", "Application Support", "pip", "pip.conf"))
		}
		out = append(out, filepath.Join(h, ".pip", "pip.conf"))
	}
	return out
}

// grantFromURL turns a registry's URL into the grant of its host and port.
func grantFromURL(raw, from string) registryGrant {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Hostname() == "" {
		return registryGrant{err: fmt.Sprintf("%s names %q, which is not an http(s) URL", from, raw)}
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	def := "443"
	if u.Scheme == "http" {
		def = "80"
	}
	ip := net.ParseIP(host) != nil
	if port == def && !ip && host != "localhost" {
		port = "" // a name's grant has ports 443 and 80
	}
	if port == "" && (ip || host == "localhost") {
		port = def
	}
	grant := host
	if strings.Contains(host, ":") {
		grant = "[" + host + "]"
	}
	if port != "" {
		grant += ":" + port
	}
	if _, err := egress.ParseGrant(grant); err != nil {
		return registryGrant{err: fmt.Sprintf("%s names %q, whose host cannot be granted: %v", from, raw, err)}
	}
	r := registryGrant{grants: []string{grant}, from: from}
	if !ip && host != "localhost" {
		if port == "" {
			port = def
		}
		r.names = []hostPort{{host, port}}
	}
	return r
}

// runNpmConfig runs `npm config get KEY`, for at most npmConfigTimeout.
// npm is the person's own program, run in their own directory: its output
// is a line.
func runNpmConfig(ctx context.Context, key string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, npmConfigTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "config", "get", key)
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	if err != nil {
		return "", err
	}
	return string(out), nil
}

func envMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, e := range env {
		if k, v, ok := strings.Cut(e, "="); ok && k != "" {
			m[k] = v
		}
	}
	return m
}

// render writes the server's table.
func (s *importServer) render() string {
	var b strings.Builder
	fmt.Fprintf(&b, "[mcp.%s]\n", s.name)
	fmt.Fprintf(&b, "command = %s\n", tomlStrings(s.argv))
	if len(s.env) > 0 {
		keys := make([]string, 0, len(s.env))
		for k := range s.env {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteString("env = { ")
		for i, k := range keys {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s = %s", k, tomlString(s.env[k]))
		}
		b.WriteString(" }\n")
	}
	if len(s.envPass) > 0 {
		p := slices.Clone(s.envPass)
		sort.Strings(p)
		fmt.Fprintf(&b, "env_pass = %s\n", tomlStrings(p))
	}
	if len(s.network) > 0 {
		fmt.Fprintf(&b, "network = %s\n", tomlStrings(s.network))
	}
	if len(s.deny) > 0 {
		fmt.Fprintf(&b, "deny = %s\n", tomlStrings(s.deny))
	}
	if s.startup > 0 {
		fmt.Fprintf(&b, "startup_timeout = %q\n", formatDuration(s.startup))
	}
	if s.call > 0 {
		fmt.Fprintf(&b, "call_timeout = %q\n", formatDuration(s.call))
	}
	return b.String()
}

func tomlStrings(list []string) string {
	parts := make([]string, len(list))
	for i, s := range list {
		parts[i] = tomlString(s)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// tomlString quotes s as a TOML basic string that shows on a terminal as
// it is: every control character, and every character pin.Visible would
// escape (invisible, bidi, format, private use...), is written as an
// escape, so the TOML means exactly s and hides nothing. Invalid UTF-8
// becomes U+FFFD.
func tomlString(s string) string {
	b := make([]byte, 0, len(s)+2)
	b = append(b, '"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b = append(b, '\\', byte(r))
		case r == '\n':
			b = append(b, '\\', 'n')
		case r == '\t':
			b = append(b, '\\', 't')
		case r < 0x20 || r == 0x7f:
			b = fmt.Appendf(b, "\\u%04X", r)
		case r < utf8.RuneSelf:
			b = append(b, byte(r))
		case pin.Visible(string(r)) == string(r):
			b = utf8.AppendRune(b, r)
		case r <= 0xffff:
			b = fmt.Appendf(b, "\\u%04X", r)
		default:
			b = fmt.Appendf(b, "\\U%08X", r)
		}
	}
	return string(append(b, '"'))
}

// decodeJSONC decodes a JSON object that may have comments, trailing
// commas, and lack its outer braces (a pasted "mcpServers": {...}).
func decodeJSONC(data []byte) (map[string]any, error) {
	data = bytes.TrimRight(stripJSONC(data), " \t\r\n")
	// The leading blanks stay, so that an error's offset gives its line.
	body := bytes.TrimLeft(data, " \t\r\n")
	if len(body) > 0 && body[0] == '"' {
		lead := data[:len(data)-len(body)]
		body = bytes.TrimSuffix(body, []byte(","))
		data = slices.Concat(lead, []byte("{"), body, []byte("}"))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var top map[string]any
	if err := dec.Decode(&top); err != nil {
		var serr *json.SyntaxError
		if errors.As(err, &serr) && serr.Offset <= int64(len(data)) {
			// Where, as a person finds it: the line of the input (the
			// braces added to a fragment hold no line break).
			line := 1 + bytes.Count(data[:serr.Offset], []byte("\n"))
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("more follows the JSON object")
	}
	if top == nil {
		return nil, errors.New("not an object")
	}
	return top, nil
}

// stripJSONC blanks out // and /* */ comments, and commas before a closing
// bracket, outside strings. Line breaks are kept, so an error's offset
// still points into the input.
func stripJSONC(data []byte) []byte {
	out := slices.Clone(data)
	inString := false
	for i := 0; i < len(out); i++ {
		c := out[i]
		switch {
		case inString:
			if c == '\\' {
				i++
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == '/' && i+1 < len(out) && out[i+1] == '/':
			for ; i < len(out) && out[i] != '\n'; i++ {
				out[i] = ' '
			}
		case c == '/' && i+1 < len(out) && out[i+1] == '*':
			out[i], out[i+1] = ' ', ' '
			for i += 2; i < len(out); i++ {
				if out[i] == '*' && i+1 < len(out) && out[i+1] == '/' {
					out[i], out[i+1] = ' ', ' '
					i++
					break
				}
				if out[i] != '\n' {
					out[i] = ' '
				}
			}
		}
	}
	// Trailing commas: a second pass, now that comments are blanks.
	inString = false
	for i := 0; i < len(out); i++ {
		c := out[i]
		switch {
		case inString:
			if c == '\\' {
				i++
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == ',':
			j := i + 1
			for j < len(out) && (out[j] == ' ' || out[j] == '\t' || out[j] == '\n' || out[j] == '\r') {
				j++
			}
			if j < len(out) && (out[j] == '}' || out[j] == ']') {
				out[i] = ' '
			}
		}
	}
	return out
}
