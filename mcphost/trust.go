package mcphost

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcphost/mcphost/sandbox"
)

// DefaultConfigNames are the file names in the worktree that mcphost reads
// by default (the CLI's -config, a lock file): protected for every server
// when they exist, so that no server can plant a config or lock there.
var defaultConfigNames = []string{"mcphost.toml", "mcphost.lock"}

// expand makes the paths of one key of a table absolute: "~/..." is the
// user's home, a relative path is relative to the worktree.
func (s *Session) expand(server, key string, paths []string) ([]string, error) {
	return expandPaths(server, key, paths, s.worktree, s.hostEnv())
}

func expandPaths(server, key string, paths []string, worktree string, hostEnv []string) ([]string, error) {
	home := ""
	for _, kv := range hostEnv {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = v
		}
	}
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		dir := strings.HasSuffix(p, "/") && p != "/"
		switch {
		case p == "~" || strings.HasPrefix(p, "~/"):
			if home == "" {
				return nil, fmt.Errorf("[mcp.%s] %s: %q: HOME is not set", server, key, p)
			}
			p = filepath.Join(home, strings.TrimPrefix(p, "~"))
		case !filepath.IsAbs(p):
			p = filepath.Join(worktree, p)
		}
		p = filepath.Clean(p)
		if dir && key == "protect" {
			p += "/" // kept for protectPaths: a directory to create
		}
		out = append(out, p)
	}
	return out, nil
}

// argv is the command as the sandbox runs it: a relative path with a '/'
// names a program in the worktree, wherever the host itself runs from.
func (s *Session) argv(cfg ServerConfig) []string {
	argv := cfg.Command
	if strings.ContainsRune(argv[0], '/') && !filepath.IsAbs(argv[0]) {
		argv = append([]string{filepath.Join(s.worktree, argv[0])}, argv[1:]...)
	}
	return argv
}

// protectPaths decides, before any server starts, what every server's
// sandbox protects: the state directory and config file; the worktree's
// mcphost.toml and mcphost.lock; the protect entries of Options and of
// every table (directories created if missing); and every server's program
// files and the packages its code is loaded from (sandbox.ProgramClosure:
// the script's directory, a node_modules, a virtual environment), each
// whole, where a server could write them. A package that is or holds a
// writable path cannot be kept read-only whole: list says so for its
// server (programCovers), and such a server with more rights than its
// peers does not start (programEnv). A file that does not exist, or is a
// symbolic link, cannot be protected in place: it gets a notice instead.
// What Options.Protect names is recorded for later sessions
// (recordProtect), and an error says why that failed: no server may start
// then.
func (s *Session) protectPaths() ([]string, error) {
	out := []string{s.opts.StateDir}
	if s.opts.ConfigFile != "" {
		out = append(out, s.opts.ConfigFile)
	}
	type entry struct{ path, from string }
	var entries []entry
	for _, n := range defaultConfigNames {
		entries = append(entries, entry{filepath.Join(s.worktree, n), ""})
	}
	if s.lock != nil {
		// A lock that does not exist yet is not protected: one a server
		// creates is not trusted (see lockFile.trust).
		entries = append(entries, entry{s.lock.path, ""})
	}
	opt, err := expandPaths("", "protect", s.opts.Protect, s.worktree, s.hostEnv())
	if err != nil {
		s.addNotice("Options.Protect: " + strings.TrimPrefix(err.Error(), "[mcp.] protect: "))
		opt = nil
	}
	for _, p := range opt {
		entries = append(entries, entry{p, "Options.Protect"})
	}
	// And what earlier sessions' Options.Protect named.
	recorded, err := recordProtect(s.opts.StateDir, opt)
	if err != nil {
		return nil, err
	}
	for _, p := range recorded {
		entries = append(entries, entry{p, "Options.Protect (recorded in " + filepath.Join(s.opts.StateDir, protectRecord) + ")"})
	}
	for _, name := range s.order {
		ps, err := s.expand(name, "protect", s.servers[name].cfg.Protect)
		if err != nil {
			s.addNotice(err.Error())
			continue
		}
		for _, p := range ps {
			entries = append(entries, entry{p, "[mcp." + name + "] protect"})
		}
	}
	seen := map[string]bool{}
	for _, e := range entries {
		p, isDir := strings.CutSuffix(e.path, "/")
		if seen[p] {
			continue
		}
		seen[p] = true
		if isDir {
			if err := s.makeDir(p); err != nil {
				s.addNotice(fmt.Sprintf("%s: directory %s could not be created, so it is not protected: %v", e.from, p, err))
				continue
			}
		}
		st, err := os.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if e.from != "" {
				s.addNotice(fmt.Sprintf("%s: %s does not exist, so it is not protected and a server could create it: create it (a directory: end the entry with /) before the servers start", e.from, p))
			}
			continue
		case err != nil:
			s.addNotice(fmt.Sprintf("%s: %s is not protected: %v", e.from, p, err))
			continue
		case st.Mode()&fs.ModeSymlink != 0:
			s.addNotice(fmt.Sprintf("%s is a symbolic link, which cannot be protected in place (a server may have planted it): it is not protected; replace it by the file it names", p))
			continue
		}
		out = append(out, p)
	}
	// Only programs some server could write need protecting; the rest
	// would cost every start a check for nothing.
	writable := []string{s.worktree}
	for _, name := range s.order {
		if w, err := s.expand(name, "write", s.servers[name].cfg.Write); err == nil {
			for _, p := range w {
				writable = append(writable, p)
				if c, err := filepath.EvalSymlinks(p); err == nil {
					writable = append(writable, c)
				}
			}
		}
	}
	for _, name := range s.order {
		srv := s.servers[name]
		cl, err := sandbox.ProgramClosure(closureConfig(srv.cfg, s.argv(srv.cfg), s.worktree, s.opts.HostEnv))
		if err != nil {
			continue // that server will not start either, and says why
		}
		srv.closure = &cl
		safe := len(rightsBeyondPeers(srv.cfg, s.worktree, s.hostEnv())) > 0
		srv.covers = programCovers(srv.cfg, cl, srv.program, s.worktree, writable, safe)
		for _, p := range cl.Files {
			for _, w := range writable {
				if under(p, w) {
					out = append(out, p)
					break
				}
			}
		}
		for _, cp := range cl.Paths {
			if _, ok := protectable(cp.Path, writable); ok {
				out = append(out, cp.Path)
			}
		}
	}
	return out, nil
}

// pathVars are the environment variables that name where a runtime or the
// dynamic linker loads code from, as lists of paths.
var pathVars = []string{"PYTHONPATH", "PYTHONHOME", "PYTHONUSERBASE", "PYTHONPYCACHEPREFIX", "NODE_PATH", "RUBYLIB", "PERL5LIB", "LD_PRELOAD", "LD_LIBRARY_PATH"}

// optionVars are the environment variables that carry a runtime's options,
// among which a file it loads first (node --require ./x.js).
var optionVars = []string{"NODE_OPTIONS", "RUBYOPT", "PERL5OPT"}

// rightsBeyondPeers lists what a table grants that a server confined by
// default does not have: what widening lists, a network grant by name and
// env_pass. A server with any of these must not run code that another
// server could have written.
func rightsBeyondPeers(cfg ServerConfig, worktree string, hostEnv []string) []string {
	out := widening(cfg, worktree, hostEnv) // a network grant by name included
	if len(cfg.EnvPass) > 0 {
		out = append(out, "env_pass = ["+strings.Join(cfg.EnvPass, ", ")+"]")
	}
	return out
}

// programEnv returns the env a server starts with (sandbox.Config.Env), or
// why it does not start. A server with rights beyond its peers'
// (rightsBeyondPeers) does not load code from where another server could
// have written it:
//
//   - a variable of pathVars or optionVars (from env, or passed by
//     env_pass) that names a path in the worktree or a write grant (a
//     relative one is in the worktree, its working directory) stops it;
//   - so does a package of its closure that is or holds a writable path
//     (the script's directory is the worktree), which cannot be kept
//     read-only whole;
//   - python -m, -c or reading stdin would put the worktree first on its
//     import path: it runs with PYTHONSAFEPATH=1, which keeps it off
//     (Python 3.11 and later; an older Python named by version stops it),
//     and a module that Python would find only there stops it, since it
//     would not be found.
//
// Setting PYTHONSAFEPATH rather than another working directory keeps the
// server's relative paths meaning what its table says (its files are in
// the worktree), and keeps a script's own directory, which is protected,
// on its import path.
func (s *Session) programEnv(srv *server) (map[string]string, error) {
	cfg := srv.cfg
	rights := rightsBeyondPeers(cfg, s.worktree, s.hostEnv())
	if len(rights) == 0 {
		return cfg.Env, nil
	}
	writable, err := writablePaths(s.configs(), Options{Worktree: s.worktree, HostEnv: s.opts.HostEnv})
	if err != nil {
		return nil, err
	}
	refuse := func(key, what string) error {
		return &ConfigError{Table: "mcp." + cfg.Name, Key: key, Msg: fmt.Sprintf("%s, where servers can write: this server has rights its peers lack (%s), so it does not load code another server could have put there; %s",
			what, strings.Join(rights, "; "), "move that code where no server can write (or into a directory of its own in the worktree, which mcphost keeps read-only), or take those rights away")}
	}
	inWritable := func(p string) (string, bool) {
		if !filepath.IsAbs(p) {
			p = filepath.Join(s.worktree, p)
		}
		p = filepath.Clean(p)
		if c, err := filepath.EvalSymlinks(p); err == nil {
			p = c
		}
		for _, w := range writable {
			if under(p, w) {
				return w, true
			}
		}
		return "", false
	}
	hostEnv := s.hostEnv()
	for _, name := range append(slices.Clone(pathVars), optionVars...) {
		key, val, ok := "env", "", false
		if v, set := cfg.Env[name]; set {
			val, ok = v, true
		} else if slices.Contains(cfg.EnvPass, name) {
			key = "env_pass"
			for _, kv := range hostEnv {
				if v, found := strings.CutPrefix(kv, name+"="); found {
					val, ok = v, true
				}
			}
		}
		if !ok {
			continue
		}
		var paths []string
		if slices.Contains(pathVars, name) {
			paths = strings.FieldsFunc(val, func(r rune) bool { return r == ':' || r == ' ' && strings.HasPrefix(name, "LD_PRELOAD") })
			if val != "" && strings.Contains(":"+val+":", "::") {
				paths = append(paths, ".") // an empty entry is the working directory
			}
		} else {
			for _, f := range strings.Fields(val) {
				if _, v, eq := strings.Cut(f, "="); eq && strings.HasPrefix(f, "-") {
					f = v
				}
				if strings.HasPrefix(f, ".") || strings.ContainsRune(f, '/') {
					paths = append(paths, f)
				}
			}
		}
		for _, p := range paths {
			if w, bad := inWritable(p); bad {
				return nil, refuse(key, fmt.Sprintf("%s names %s, which lies in %s", name, p, w))
			}
		}
	}
	cl := srv.closure
	if cl == nil {
		return cfg.Env, nil // its program cannot be found: the start says why
	}
	for _, cp := range cl.Paths {
		if in, ok := protectable(cp.Path, writable); in && !ok {
			return nil, refuse("command", fmt.Sprintf("its code is loaded from %s (%s), which %s", cp.Path, cp.Why, holding(cp.Path, writable, s.worktree)))
		}
	}
	if !cl.WorkdirImports {
		return cfg.Env, nil
	}
	for _, cp := range cl.Paths {
		if strings.HasPrefix(cp.Why, "module ") {
			return nil, refuse("command", fmt.Sprintf("python -m %s would import %s from the worktree", cl.Module, cp.Path))
		}
	}
	if cl.PythonMinor > 0 && cl.PythonMinor < 11 {
		return nil, refuse("command", fmt.Sprintf("Python 3.%d puts the working directory (the worktree) first on its import path and, before 3.11, has no PYTHONSAFEPATH to keep it off", cl.PythonMinor))
	}
	env := maps.Clone(cfg.Env)
	if env == nil {
		env = map[string]string{}
	}
	env["PYTHONSAFEPATH"] = "1"
	return env, nil
}

// configs returns the session's server tables, in order.
func (s *Session) configs() []ServerConfig {
	out := make([]ServerConfig, 0, len(s.order))
	for _, name := range s.order {
		out = append(out, s.servers[name].cfg)
	}
	return out
}

// under reports whether p is root or lies beneath it, lexically.
func under(p, root string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// makeDir creates the directory p and its parents. Inside the worktree it
// does so through an os.Root, so that a symbolic link a server planted on
// the way cannot make the host create directories outside it.
func (s *Session) makeDir(p string) error {
	rel, err := filepath.Rel(s.worktree, p)
	if err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
		root, err := os.OpenRoot(s.worktree)
		if err != nil {
			return err
		}
		defer root.Close()
		return root.MkdirAll(rel, 0o755)
	}
	return os.MkdirAll(p, 0o755)
}

// widens lists what cfg grants beyond the default confinement.
func (s *Session) widens(cfg ServerConfig) []string {
	return widening(cfg, s.worktree, s.hostEnv())
}

// widening lists what a server's table grants beyond the default
// confinement, in words for a person: "sandbox = off (unconfined)",
// "network", "git = write (writable git directory)" and "write PATH
// (outside the worktree)" for each write path outside worktree. It returns
// an empty, non-nil slice for a table that widens nothing.
func widening(cfg ServerConfig, worktree string, hostEnv []string) []string {
	out := []string{}
	if cfg.Unconfined {
		out = append(out, "sandbox = off (unconfined)")
	}
	if cfg.Network {
		out = append(out, "network")
	} else if len(cfg.NetworkGrant) > 0 && !cfg.Unconfined {
		out = append(out, "network "+strings.Join(cfg.NetworkGrant, ", ")+" (those destinations only, through the host's checks)")
	}
	if cfg.WritableGit {
		out = append(out, "git = write (writable git directory)")
	}
	write, _ := expandPaths(cfg.Name, "write", cfg.Write, worktree, hostEnv)
	for _, w := range write {
		if rel, err := filepath.Rel(worktree, w); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			out = append(out, "write "+w+" (outside the worktree)")
		}
	}
	return out
}

// Definition returns the whole table as JSON, defaults filled in: what a
// person reviews before a config that a server could have written may
// start the server (every key decides what runs and how it is confined).
// Its pin.Digest is what the review records.
//
// It is ServerConfig's JSON form, with the two timeouts written as Go
// durations ("30s") rather than nanoseconds, for the person reading it.
func (sc ServerConfig) Definition() (json.RawMessage, error) {
	sc = sc.withDefaults()
	b, err := json.Marshal(sc)
	if err != nil {
		return nil, fmt.Errorf("mcphost: server %s: %w", sc.Name, err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("mcphost: server %s: %w", sc.Name, err)
	}
	m["startup_timeout"] = sc.StartupTimeout.String()
	m["call_timeout"] = sc.CallTimeout.String()
	return json.Marshal(m)
}

// writablePaths returns the paths some server of servers may write under
// opts: the worktree and every write path, absolute and, where they exist,
// resolved through symbolic links (both forms are returned then). A file
// at or beneath one of them could have been written by a server.
func writablePaths(servers []ServerConfig, opts Options) ([]string, error) {
	wt := opts.Worktree
	if wt == "" {
		wt = "."
	}
	wt, err := filepath.Abs(wt)
	if err == nil {
		wt, err = filepath.EvalSymlinks(wt)
	}
	if err != nil {
		return nil, fmt.Errorf("mcphost: worktree: %w", err)
	}
	hostEnv := opts.HostEnv
	if hostEnv == nil {
		hostEnv = os.Environ()
	}
	out := []string{wt}
	for _, sc := range servers {
		w, err := expandPaths(sc.Name, "write", sc.Write, wt, hostEnv)
		if err != nil {
			return nil, err
		}
		for _, p := range w {
			out = append(out, p)
			if c, err := filepath.EvalSymlinks(p); err == nil && c != p {
				out = append(out, c)
			}
		}
	}
	return out, nil
}
