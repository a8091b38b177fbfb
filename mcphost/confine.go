package mcphost

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
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
	return read, write, nil
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
// says what to grant.
func (srv *server) refusedNotice(r egress.Refusal) {
	name := srv.cfg.Name
	srv.sess.logger.Warn("network destination refused", "server", name, "host", r.Host, "port", r.Port, "reason", r.Reason)
	if r.Host == "" {
		srv.sess.addNotice(fmt.Sprintf("server %s: %s", name, r.Reason))
		return
	}
	dest := net.JoinHostPort(r.Host, strconv.Itoa(int(r.Port)))
	n := fmt.Sprintf("server %s tried to reach %s, which was refused: %s", name, printable(dest, 260), printable(r.Reason, 400))
	if r.Grant != "" {
		n += fmt.Sprintf("; to allow it, add %q to network in [mcp.%s]", printable(r.Grant, 260), name)
	}
	srv.sess.addNotice(n)
}

func (s *Session) hostEnv() []string {
	if s.opts.HostEnv != nil {
		return s.opts.HostEnv
	}
	return os.Environ()
}
