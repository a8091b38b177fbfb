package mcphost

import (
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/mcphost/mcphost/internal/egress"
	"github.com/mcphost/mcphost/sandbox"
)

// grants returns the server's read and write grants as absolute paths.
func (srv *server) grants() (read, write []string, err error) {
	s := srv.sess
	cfg := srv.cfg
	if read, err = s.expand(cfg.Name, "read", cfg.Read); err != nil {
		return nil, nil, err
	}
	if write, err = s.expand(cfg.Name, "write", cfg.Write); err != nil {
		return nil, nil, err
	}
	for _, g := range srv.autoGrants(read, write) {
		read = append(read, g.path)
	}
	return read, write, nil
}

// autoGrant is a read grant mcphost adds to a server's table, and why;
// env names the variable that tells a runtime manager where it lives ("" if
// none).
type autoGrant struct{ path, why, env string }

// runtimeHomes are the directories under HOME where runtime managers
// install interpreters, each with the part of it a server of one of its
// runtimes may read: the manager's whole tree for those whose shims run the
// manager (pyenv, asdf, mise, volta), one installed version for the others;
// never a directory that also keeps credentials (~/.cargo, ~/.config).
var runtimeHomes = []struct {
	dir   string // under HOME
	depth int    // path components below dir that name what is granted (0: dir whole)
	what  string
	// root is the variable that tells the manager where it lives, set to
	// the granted tree when the table does not set it: its shims find it
	// through HOME, which is the server's own.
	root string
}{
	{".pyenv", 0, "pyenv", "PYENV_ROOT"},
	{".asdf", 0, "asdf", "ASDF_DATA_DIR"},
	{".local/share/mise", 0, "mise", "MISE_DATA_DIR"},
	{".volta", 0, "volta", "VOLTA_HOME"},
	{".nvm/versions/node", 1, "nvm", ""},
	{".local/share/fnm/node-versions", 1, "fnm", ""},
	{".local/share/uv/python", 1, "uv", ""},
	{".local/share/pipx/venvs", 1, "pipx", ""},
	{".bun", 0, "bun", ""},
	{".deno", 0, "deno", ""},
}

// autoGrants are the read grants mcphost adds so that what the person
// named in command can run confined, without opening the rest of HOME:
//   - the install tree of a runtime manager under HOME that the program
//     resolves into (a pyenv shim and the pyenv it runs, an nvm node);
//   - a package the server's code is loaded from (the script's package
//     root, a node_modules, a virtual environment) that lies outside the
//     worktree, since the person named the script in command.
//
// Never HOME itself or what holds it, a directory that holds the state or
// homes directory, nor what the table's read and write grants cover
// already. ServerInfo.Widens names each, and why.
func (srv *server) autoGrants(read, write []string) []autoGrant {
	cl := srv.closure
	if cl == nil || srv.cfg.Unconfined {
		return nil
	}
	s := srv.sess
	home := ""
	for _, kv := range s.hostEnv() {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok && filepath.IsAbs(v) {
			home = filepath.Clean(v)
		}
	}
	if home != "" {
		if c, err := filepath.EvalSymlinks(home); err == nil {
			home = c
		}
	}
	var out []autoGrant
	add := func(p, why, env string) {
		covered := under(p, s.worktree) || p == "/" || home != "" && (p == home || under(home, p)) ||
			under(s.opts.StateDir, p) || under(s.opts.HomeDir, p)
		for _, g := range append(append(slices.Clone(read), write...), func() []string {
			var ps []string
			for _, g := range out {
				ps = append(ps, g.path)
			}
			return ps
		}()...) {
			covered = covered || under(p, g)
		}
		if !covered {
			out = append(out, autoGrant{p, why, env})
		}
	}
	if home != "" {
		for _, f := range cl.Files {
			if !under(f, home) {
				continue
			}
			for _, r := range runtimeHomes {
				root := filepath.Join(home, r.dir)
				rel, err := filepath.Rel(root, f)
				if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
					continue
				}
				parts := strings.Split(rel, string(filepath.Separator))
				if len(parts) <= r.depth {
					continue
				}
				add(filepath.Join(append([]string{root}, parts[:r.depth]...)...), "the "+r.what+" install its program runs from", r.root)
			}
		}
	}
	for _, cp := range cl.Paths {
		add(cp.Path, "the package its code is loaded from", "")
	}
	return out
}

// reaches reports whether a confined server could open the directory dir:
// the key of its config that grants it ("worktree" for the worktree), or
// "". Opening for reading is enough to flock a file, so read grants count.
func (srv *server) reaches(dir string) (string, error) {
	if srv.cfg.Unconfined {
		return "", nil // it reaches everything; the person chose that
	}
	read, write, err := srv.grants()
	if err != nil {
		return "", err
	}
	for _, g := range []struct {
		key   string
		paths []string
	}{{"worktree", []string{srv.sess.worktree}}, {"write", write}, {"read", read}} {
		for _, p := range g.paths {
			if real, err := filepath.EvalSymlinks(p); err == nil {
				p = real
			}
			if p == dir || strings.HasPrefix(dir, strings.TrimSuffix(p, "/")+"/") {
				return g.key, nil
			}
		}
	}
	return "", nil
}

// sandboxConfig builds the process description from the server's config.
func (srv *server) sandboxConfig() (sandbox.Config, error) {
	s := srv.sess
	cfg := srv.cfg
	read, write, err := srv.grants()
	if err != nil {
		return sandbox.Config{}, err
	}
	// What the other servers may write: a link there is as replaceable as
	// one in the worktree.
	var peers []string
	for _, name := range s.order {
		if other := s.servers[name]; other != srv {
			w, err := s.expand(name, "write", other.cfg.Write)
			if err == nil {
				peers = append(peers, w...)
			}
		}
	}
	var proxy sandbox.Proxy
	if len(cfg.NetworkGrant) > 0 && !cfg.Network && !cfg.Unconfined {
		p, err := srv.networkProxy()
		if err != nil {
			return sandbox.Config{}, err
		}
		proxy = p
	}
	env, err := s.programEnv(srv)
	if err != nil {
		return sandbox.Config{}, err
	}
	tableRead, _ := s.expand(cfg.Name, "read", cfg.Read)
	for _, g := range srv.autoGrants(tableRead, write) {
		if _, set := env[g.env]; g.env != "" && !set {
			env = maps.Clone(env)
			if env == nil {
				env = map[string]string{}
			}
			env[g.env] = g.path
		}
	}
	var home string
	if !cfg.Unconfined && cfg.Home != HomeTemp {
		home = filepath.Join(s.opts.HomeDir, cfg.Name)
		if err := os.MkdirAll(home, 0o700); err != nil {
			return sandbox.Config{}, fmt.Errorf("[mcp.%s] home: creating the server's private home: %w", cfg.Name, err)
		}
	}
	return sandbox.Config{
		Name:        cfg.Name,
		Home:        home,
		TempHome:    cfg.Home == HomeTemp,
		Argv:        s.argv(cfg),
		Worktree:    s.worktree,
		Env:         env,
		EnvPass:     cfg.EnvPass,
		HostEnv:     s.opts.HostEnv,
		Read:        read,
		Write:       write,
		Protect:     s.protect,
		WritableGit: cfg.WritableGit,
		PeerWrite:   peers,
		Network:     cfg.Network,
		Proxy:       proxy,
		Off:         cfg.Unconfined,
		RequireFull: cfg.RequireFullSandbox,
		Limits:      sandbox.Limits{Processes: cfg.MaxProcesses, Memory: cfg.MaxMemory, Tmp: cfg.MaxTmp, FileSize: cfg.MaxFileSize},
		Stderr:      srv.stderr,
	}, nil
}

// networkProxy returns the server's network proxy, made at its first
// start and kept for every restart, so that a refused destination is a
// notice once per server and destination.
func (srv *server) networkProxy() (*egress.Proxy, error) {
	srv.proxyOnce.Do(func() {
		cfg := srv.cfg
		grants := make([]egress.Grant, 0, len(cfg.NetworkGrant))
		for _, d := range cfg.NetworkGrant {
			g, err := egress.ParseGrant(d)
			if err != nil {
				srv.proxyErr = fmt.Errorf("[mcp.%s] network: %w", cfg.Name, err)
				return
			}
			grants = append(grants, g)
		}
		srv.proxy, srv.proxyErr = egress.New(egress.Config{Grants: grants, Refused: srv.refusedNotice})
	})
	return srv.proxy, srv.proxyErr
}

// refusedNotice turns a destination the proxy refused into a notice that
// says what to grant. A refusal with a Host and no Port is a name the
// server looked up through mcphost's resolver (network by name) that was
// not granted, so it did not resolve. One that comes while a package
// launcher waits for initialize says so: it is probably the launcher
// fetching its package, not the server.
func (srv *server) refusedNotice(r egress.Refusal) {
	srv.refusals.Add(1)
	name := srv.cfg.Name
	srv.sess.logger.Warn("network destination refused", "server", name, "host", r.Host, "port", r.Port, "reason", r.Reason)
	var n string
	switch {
	case r.Host == "":
		n = fmt.Sprintf("server %s: %s", name, printable(r.Reason, 400))
	case r.Port == 0:
		// A name the stub resolver refused: Port 0 says so (egress.Refusal).
		n = fmt.Sprintf("server %s looked up %s, which is not in its network grant, so the name did not resolve", name, printable(r.Host, 260))
	default:
		dest := net.JoinHostPort(r.Host, strconv.Itoa(int(r.Port)))
		n = fmt.Sprintf("server %s tried to reach %s, which was refused: %s", name, printable(dest, 260), printable(r.Reason, 400))
	}
	if r.Host != "" && r.Grant != "" {
		n += fmt.Sprintf("; to allow it, add %q to network in [mcp.%s]", printable(r.Grant, 260), name)
	}
	if launcher, _, ok := packageLauncher(srv.cfg.Command); ok && srv.installing.Load() {
		n += fmt.Sprintf(" (this came before the server answered initialize, so probably from %s fetching its package)", launcher)
	}
	srv.sess.addNotice(n)
}

func (s *Session) hostEnv() []string {
	if s.opts.HostEnv != nil {
		return s.opts.HostEnv
	}
	return os.Environ()
}
