package mcphost

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/mcphost/mcphost/internal/canonical"
	"hash/maphash"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost/mcphost/internal/egress"
	"github.com/mcphost/mcphost/pin"
	"github.com/mcphost/mcphost/sandbox"
	"github.com/mcphost/mcphost/schema"
)

// Discovery bounds: a server that keeps paginating or lists absurdly many
// tools is cut off, not followed forever.
const (
	maxPages = 1000
	maxTools = 20000
)

// protocolVersion is the MCP version mcphost asks for: the newest one whose
// stateful initialize every current server speaks.
const protocolVersion = "2025-11-25"

// server is one configured server and its running process, if any.
type server struct {
	cfg    ServerConfig
	sess   *Session
	stderr *stderrLog

	// program is the server's ProgramIdentity and programDrift how it
	// differs from the lock's record, both decided at Connect (with a lock
	// only) and not changed after.
	program      []pin.ProgramFile
	programDrift []string

	restartMu sync.Mutex // serializes Restart

	proxyOnce sync.Once
	proxy     *egress.Proxy // the network proxy of a NetworkGrant, made once for every start
	proxyErr  error
	listMu    sync.Mutex // serializes discovery (the tap relies on it)
	pubMu     sync.Mutex // serializes publishing its tools (publish, rejudge)

	mu           sync.Mutex
	state        ServerState
	err          error  // why it failed or exited
	phase        string // the phase it failed in
	exitStatus   string
	confinement  string
	limits       string   // how the limits are enforced (sandbox.Process.Limits)
	lacks        []string // what its confinement lacks (sandbox.Process.Lacks)
	proc         *sandbox.Process
	cs           *mcp.ClientSession
	tap          *listTap
	lastList     []json.RawMessage
	prepCache    *prepCache    // the latest listing's per-tool work, by raw definition
	stopErr      error         // why mcphost stopped the server, if it did
	strays       int           // lines of its stdout skipped, not being JSON-RPC
	relisting    chan struct{} // non-nil while a list_changed re-list runs; closed when done
	dirty        bool          // another list_changed came during the re-list
	relists      int           // re-lists in a row, each disturbed by a list_changed
	lastRelist   time.Time     // when the latest re-list began
	gen          uint64        // bumped on every start, so stale goroutines stand down
	protocol     string        // the protocol revision the server negotiated
	instructions string        // the instructions of its initialize result
	ins          insPin        // what the pins say of them
	hold         *tableHold    // non-nil while its table needs review: it does not start

	inflight atomic.Int32 // calls of its tools in flight
	prompts  []*Prompt    // its prompts as pinned; under mu
}

// startError is a failure to start, with the phase it happened in.
type startError struct {
	phase string
	err   error
}

func (e *startError) Error() string { return e.phase + ": " + e.err.Error() }
func (e *startError) Unwrap() error { return e.err }

func (srv *server) running() bool {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return srv.state == ServerRunning
}

// start starts the process, initializes and lists all tools, all within the
// startup timeout. On success the server is running and lastList holds its
// raw tools.
func (srv *server) start(ctx context.Context) error {
	s := srv.sess
	cfg := srv.cfg
	ctx, cancel := context.WithTimeout(ctx, cfg.StartupTimeout)
	defer cancel()
	begin := time.Now()

	sbx, err := srv.sandboxConfig()
	if err != nil {
		return &startError{"config", err}
	}
	proc, err := sandbox.Start(ctx, sbx)
	if err != nil {
		var le *sandbox.LinkError
		switch {
		case errors.As(err, &le):
			return &startError{"config", &ConfigError{Table: "mcp." + cfg.Name, Key: le.Field, Msg: le.Error(), Err: err}}
		case errors.Is(err, sandbox.ErrLinkedPath):
			// A grant swapped for a link while the server started: the
			// sandbox cannot say which key, but it is the config's.
			return &startError{"config", err}
		}
		return &startError{"start", err}
	}
	srv.mu.Lock()
	srv.gen++
	gen := srv.gen
	srv.proc = proc
	srv.confinement = proc.Confinement()
	srv.limits = proc.Limits()
	srv.lacks = proc.Lacks()
	srv.exitStatus = ""
	srv.err = nil
	srv.stopErr = nil
	srv.strays = 0
	srv.dirty = false
	srv.relists = 0
	srv.mu.Unlock()
	tap := newListTap(func() { srv.toolsChanged(gen) },
		func(err error) { srv.stop(gen, fmt.Errorf("it sent a message mcphost cannot read: %w", err)) },
		func(err error) { srv.stop(gen, err) })
	tap.progress = srv.onProgress
	tap.stray = func(start []byte, n, row int) { srv.strayLine(gen, start, n) }
	// Roots and logging are deprecated from protocol 2026-07-28 on, but
	// mcphost speaks 2025-11-25, where servers (the filesystem reference
	// server among them) use roots to learn their directory.
	// Advertise roots, and only the worktree, and elicitation (form mode)
	// when the agent can ask a person; no sampling. The go-sdk answers
	// requests for anything else with a JSON-RPC error.
	//lint:ignore SA1019 see above: roots are current in the version mcphost speaks
	caps := &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{}}
	var elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)
	if s.opts.Elicit != nil {
		caps.Elicitation = &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}
		elicit = srv.elicit
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "mcphost", Version: Version}, &mcp.ClientOptions{
		Capabilities:       caps,
		ElicitationHandler: elicit,
		//lint:ignore SA1019 see above: server log messages go to the host's logger
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			s.logger.Debug("server log", "server", cfg.Name, "level", req.Params.Level, "logger", req.Params.Logger)
		},
		Logger: s.logger,
	})
	//lint:ignore SA1019 see above: the worktree is the one root
	client.AddRoots(&mcp.Root{URI: (&url.URL{Scheme: "file", Path: s.worktree}).String(), Name: "worktree"})
	transport, err := newTapTransport(proc.Stdin(), proc.Stdout(), lineLimit(cfg.MaxOutput), tap)
	if err != nil {
		_ = proc.Close(0)
		return &startError{"start", err}
	}
	initCtx := ctx
	launcher, registry, isLauncher := packageLauncher(cfg.Command)
	if isLauncher && !cfg.Network && len(cfg.NetworkGrant) == 0 && !cfg.Unconfined && cfg.StartupTimeout > launcherWait {
		var cancelInit context.CancelFunc
		initCtx, cancelInit = context.WithTimeout(ctx, launcherWait)
		defer cancelInit()
	}
	cs, err := client.Connect(initCtx, transport, &mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
	if err != nil && isLauncher && initCtx != ctx && initCtx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
		_ = proc.Close(0)
		return &startError{"initialize", fmt.Errorf("%w: %s fetches the package it runs from %s unless it finds it installed, which needs the network, and the network is off for this server: mcphost stopped it after %v without an answer. Install the package beforehand and run it directly (for npm: npm install --prefix DIR PACKAGE, then command = [\"node\", \"DIR/node_modules/PACKAGE/<its main script>\"] and read = [\"DIR\"]; see \"Running real servers\" in mcphost's README), or grant the server its registry alone: network = [\"%s\"]",
			ErrLauncherOffline, launcher, registry, launcherWait, registryHost(launcher))}
	}
	if err != nil {
		err = srv.explain(ctx, proc, err, cfg.StartupTimeout)
		_ = proc.Close(0)
		return &startError{"initialize", err}
	}
	init := cs.InitializeResult()
	srv.mu.Lock()
	srv.cs, srv.tap = cs, tap
	srv.protocol, srv.instructions = "", ""
	srv.ins = insPin{}
	if init != nil {
		srv.protocol, srv.instructions = init.ProtocolVersion, init.Instructions
	}
	srv.mu.Unlock()
	var raws []json.RawMessage
	for round := 0; ; round++ {
		raws, err = srv.listAll(ctx, cs, tap)
		if err != nil {
			err = srv.explain(ctx, proc, err, cfg.StartupTimeout)
			_ = cs.Close()
			_ = proc.Close(0)
			return &startError{"tools/list", err}
		}
		srv.mu.Lock()
		// A list_changed during the first listing (servers that add
		// tools as they start send one) means the list may be stale.
		again := srv.dirty && round < 3
		stale := srv.dirty && !again
		srv.dirty = false
		if !again {
			srv.lastList = raws
			srv.state = ServerRunning
		}
		srv.mu.Unlock()
		if stale {
			// Still changing: re-list in the background, with the
			// bounds of any re-list, once this list is published.
			defer srv.toolsChanged(gen)
		}
		if !again {
			break
		}
	}
	s.logger.Info("server started", "server", cfg.Name, "confinement", proc.Confinement(),
		"tools", len(raws), "duration", time.Since(begin))

	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		<-proc.Done()
		srv.exited(gen)
	}()
	return nil
}

// lineLimit bounds one inbound JSON-RPC message, and so the host memory one
// server can claim at once. A result larger than max_output is cut, but it
// must first be read whole; past this limit the server is dropped instead.
func lineLimit(maxOutput int64) int {
	return int(max(16<<20, 4*maxOutput+(1<<20)))
}

// explain turns a start failure into something a person can act on: the
// deadline, or the process's exit and its last stderr lines.
func (srv *server) explain(ctx context.Context, proc *sandbox.Process, err error, timeout time.Duration) error {
	srv.mu.Lock()
	stopErr := srv.stopErr
	srv.mu.Unlock()
	if stopErr != nil {
		return fmt.Errorf("mcphost stopped the server: %w", stopErr)
	}
	if ctx.Err() == context.DeadlineExceeded {
		err = fmt.Errorf("no answer within startup_timeout %v", timeout)
	} else {
		// The server probably exited: give it a moment to be reaped so
		// the notice can say how it ended.
		select {
		case <-proc.Done():
			srv.mu.Lock()
			stopped := srv.stopErr
			srv.mu.Unlock()
			if stopped != nil {
				// The server did not exit: mcphost stopped it, for a reason
				// that is also why initialize or the listing failed.
				err = fmt.Errorf("mcphost stopped it: %w", stopped)
			} else {
				err = fmt.Errorf("server exited (%s): %w", proc.ExitStatus(), err)
			}
		case <-time.After(500 * time.Millisecond):
		}
	}
	return err
}

// listAll reads every page of tools/list and returns the raw definitions.
func (srv *server) listAll(ctx context.Context, cs *mcp.ClientSession, tap *listTap) ([]json.RawMessage, error) {
	return srv.listPaged("tools/list", "tools", maxTools, tap, func(cursor string) error {
		_, err := cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
		return err
	})
}

// listPaged reads every page of the paginated list method (tools/list,
// prompts/list), whose result holds its items in the array field, and
// returns the items as the server sent them (a tap on the connection sees
// each result's bytes). call sends one page's request with its cursor. It
// stops at maxPages pages, at limit items and at a cursor seen before.
func (srv *server) listPaged(method, field string, limit int, tap *listTap, call func(cursor string) error) ([]json.RawMessage, error) {
	srv.listMu.Lock()
	defer srv.listMu.Unlock()
	var (
		all     []json.RawMessage
		cursor  string
		cursors = map[string]bool{}
	)
	for page := 0; ; page++ {
		if page == maxPages {
			return nil, fmt.Errorf("more than %d pages of %s; stopped reading", maxPages, field)
		}
		tap.take()
		if err := call(cursor); err != nil {
			return nil, err
		}
		raw := tap.take()
		if raw == nil {
			return nil, fmt.Errorf("%s result not seen on the wire", method)
		}
		var res map[string]json.RawMessage
		var items []json.RawMessage
		var next *string
		err := json.Unmarshal(raw, &res)
		if err == nil && res[field] != nil {
			err = json.Unmarshal(res[field], &items)
		}
		if err == nil && res["nextCursor"] != nil {
			err = json.Unmarshal(res["nextCursor"], &next)
		}
		if err != nil {
			return nil, fmt.Errorf("%s result is not valid: %w", method, err)
		}
		all = append(all, items...)
		if len(all) > limit {
			return nil, fmt.Errorf("more than %d %s; stopped reading", limit, field)
		}
		if next == nil || *next == "" {
			return all, nil
		}
		cursor = *next
		if cursors[cursor] {
			return nil, fmt.Errorf("%s repeated cursor %q: the server paginates in a loop", method, printable(cursor, 40))
		}
		cursors[cursor] = true
	}
}

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
		Env:         cfg.Env,
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
		Limits:      sandbox.Limits{Processes: cfg.MaxProcesses, Memory: cfg.MaxMemory, Tmp: cfg.MaxTmp},
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

// fail records a start failure.
func (srv *server) fail(err error) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	srv.state = ServerFailed
	srv.err = err
	var se *startError
	if errors.As(err, &se) {
		srv.phase = se.phase
	}
	srv.sess.logger.Warn("server failed", "server", srv.cfg.Name, "error", err)
}

func (srv *server) failureNotice() string {
	srv.mu.Lock()
	err := srv.err
	srv.mu.Unlock()
	n := fmt.Sprintf("server %s did not start: %v", srv.cfg.Name, err)
	if errors.Is(err, sandbox.ErrUnsupported) && !strings.Contains(n, `sandbox = "off"`) {
		// The sandbox's errors name the opt-out already; say it once.
		n += fmt.Sprintf(" (to run it unconfined, a risk, set sandbox = \"off\" in [mcp.%s])", srv.cfg.Name)
	}
	return n + srv.stderrNotice()
}

// stderrNotice is what a notice about the server's failure adds from its
// stderr: the excerpt of stderrLog.Excerpt, and, when the network is off
// and stderr shows the server tried to resolve or reach a host, that the
// network is off and how to grant it.
func (srv *server) stderrNotice() string {
	ex := srv.stderr.Excerpt()
	if ex == "" {
		return ""
	}
	n := "\n  stderr: " + strings.ReplaceAll(ex, "\n", "\n  stderr: ")
	if !srv.cfg.Network && len(srv.cfg.NetworkGrant) == 0 && !srv.cfg.Unconfined {
		if mark := srv.stderr.networkFailure(); mark != "" {
			n += fmt.Sprintf("\n  (%s: the server tried to reach a host, but its network is off; if it needs one, grant it by name in [mcp.%s]: network = [\"api.example.com\"] (or network = true, the host's whole network))", mark, srv.cfg.Name)
		}
	}
	return n
}

// strayLine reports a line of the server's stdout that is not JSON-RPC and
// was skipped: in a notice for the first maxStrayNotices of a process, then
// once that the rest go to the debug log; every one is logged.
func (srv *server) strayLine(gen uint64, start []byte, n int) {
	srv.mu.Lock()
	if srv.gen != gen {
		srv.mu.Unlock()
		return
	}
	srv.strays++
	count := srv.strays
	srv.mu.Unlock()
	name := srv.cfg.Name
	shown := strayText(start, n)
	switch {
	case count <= maxStrayNotices:
		srv.sess.logger.Warn("server stdout line skipped", "server", name, "line", shown)
		srv.sess.addNotice(fmt.Sprintf("server %s wrote a line to stdout that is not JSON-RPC; mcphost skipped it: %s", name, shown))
	case count == maxStrayNotices+1:
		srv.sess.logger.Debug("server stdout line skipped", "server", name, "line", shown)
		srv.sess.addNotice(fmt.Sprintf("server %s writes more lines to stdout that are not JSON-RPC; mcphost skips them and logs them at debug level (it stops the server after %d such lines, or %d bytes, in a row)", name, maxStrayLines, maxStrayBytes))
	default:
		srv.sess.logger.Debug("server stdout line skipped", "server", name, "line", shown)
	}
}

// stop ends a running server that broke one of mcphost's bounds, or sent
// something that cannot be read (the go-sdk has then dropped the
// connection, so the process is of no more use; a server that ignores its
// broken pipe would linger). why says what it did; the notice of its exit
// says that mcphost stopped it, and why. The first reason is kept.
func (srv *server) stop(gen uint64, why error) {
	srv.mu.Lock()
	var proc *sandbox.Process
	if srv.gen == gen {
		proc = srv.stopLocked(why)
	}
	srv.mu.Unlock()
	srv.halted(proc, why)
}

// stopLocked records why the server is stopped and returns the process to
// close (nil if it was stopped already). srv.mu is held.
func (srv *server) stopLocked(why error) *sandbox.Process {
	if srv.stopErr != nil || srv.proc == nil {
		return nil
	}
	srv.stopErr = why
	return srv.proc
}

// halted logs a stop and closes the process stopLocked returned.
func (srv *server) halted(proc *sandbox.Process, why error) {
	if proc == nil {
		return
	}
	srv.sess.logger.Warn("mcphost stopped the server", "server", srv.cfg.Name, "reason", why)
	go proc.Close(0)
}

// exited runs when the server's process ends on its own (or is closed).
func (srv *server) exited(gen uint64) {
	srv.mu.Lock()
	if srv.gen != gen {
		srv.mu.Unlock()
		return
	}
	status := srv.proc.ExitStatus()
	srv.exitStatus = status
	wasRunning := srv.state == ServerRunning
	if wasRunning {
		srv.state = ServerExited
		srv.err = fmt.Errorf("server exited (%s)", status)
		if srv.stopErr != nil {
			status = fmt.Sprintf("mcphost stopped it: %v", srv.stopErr)
			srv.err = fmt.Errorf("server %s", status)
		}
	}
	cs := srv.cs
	srv.mu.Unlock()
	if cs != nil {
		_ = cs.Close() // fail calls in flight now, not at their timeout
	}
	if wasRunning {
		n := fmt.Sprintf("server %s exited (%s); its tools fail until Restart", srv.cfg.Name, printable(status, 300))
		srv.sess.addNotice(n + srv.stderrNotice())
	}
}

// close ends the server's processes and leaves it in state.
func (srv *server) close(state ServerState) error {
	srv.mu.Lock()
	cs, proc := srv.cs, srv.proc
	grace := srv.sess.opts.CloseGrace
	if srv.stopErr != nil {
		grace = 0 // mcphost stopped it: no grace to wait out
	}
	srv.cs, srv.proc = nil, nil
	srv.gen++ // the exit watcher of this process stands down
	if srv.state == ServerRunning || srv.state == ServerExited {
		srv.state = state
	}
	if srv.relisting != nil {
		close(srv.relisting)
		srv.relisting = nil
	}
	srv.mu.Unlock()
	var err error
	// The process first: proc.Close closes stdin (the stdio shutdown the
	// spec asks for), gives the server the grace period and then kills
	// everything it started. Closing the go-sdk session first would wait
	// for calls in flight, up to their call_timeout.
	if proc != nil {
		err = proc.Close(grace)
	}
	if cs != nil {
		cs.Close() // fails the calls in flight: the server is gone
	}
	return err
}

func (srv *server) info() ServerInfo {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	info := ServerInfo{Name: srv.cfg.Name, State: srv.state, Confinement: srv.confinement, Network: srv.cfg.network(), Limits: srv.limits, Lacks: srv.lacks, Widens: srv.sess.widens(srv.cfg),
		Protocol: srv.protocol, Instructions: srv.instructions, InstructionsPin: srv.ins.pin}
	if info.Confinement == "" {
		info.Confinement = "none"
	}
	if srv.err != nil && srv.state != ServerRunning {
		info.Error = srv.err.Error()
	}
	return info
}

// session returns the live client session, or why there is none.
func (srv *server) session() (*mcp.ClientSession, error) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.stopErr != nil {
		// Its process may take a moment to die: no new call meanwhile.
		return nil, fmt.Errorf("%w: mcphost stopped server %s: %v", ErrServerGone, srv.cfg.Name, srv.stopErr)
	}
	if srv.state != ServerRunning || srv.cs == nil {
		why := string(srv.state)
		if srv.err != nil {
			why = srv.err.Error()
		}
		return nil, fmt.Errorf("%w: server %s: %s", ErrServerGone, srv.cfg.Name, why)
	}
	return srv.cs, nil
}

// Bounds on re-listing after notifications/tools/list_changed. Re-lists of
// one server are coalesced: one runs at a time, and any number of
// notifications during it make one more. A server that sends a
// notification during each of maxRelistRounds re-lists in a row does not
// settle, and is stopped.
const (
	relistInterval  = 250 * time.Millisecond // from the start of one re-list of a server to the next
	maxRelistRounds = 10
)

// toolsChanged handles notifications/tools/list_changed: it marks the server
// as re-listing at once, so calls wait for the new definitions instead of
// going through under the old decision, and re-lists in the background
// (again, if more notifications came meanwhile, at most once per
// relistInterval).
func (srv *server) toolsChanged(gen uint64) {
	s := srv.sess
	srv.mu.Lock()
	if srv.gen != gen || srv.stopErr != nil {
		srv.mu.Unlock()
		return
	}
	if srv.state != ServerRunning || srv.relisting != nil {
		srv.dirty = true
		srv.mu.Unlock()
		return
	}
	done := make(chan struct{})
	srv.relisting = done
	cs, tap := srv.cs, srv.tap
	srv.mu.Unlock()
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		for {
			srv.mu.Lock()
			wait := relistInterval - time.Since(srv.lastRelist)
			srv.mu.Unlock()
			if wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-t.C:
				case <-done: // closed by close: the server is going
				}
				t.Stop()
			}
			srv.mu.Lock()
			srv.lastRelist = time.Now()
			srv.mu.Unlock()
			ok := srv.relist(gen, cs, tap)
			srv.mu.Lock()
			again := ok && srv.dirty && srv.relisting == done
			srv.dirty = false
			if again {
				srv.relists++
			} else {
				srv.relists = 0
			}
			unsettled := srv.relists >= maxRelistRounds
			if !again || unsettled {
				var proc *sandbox.Process
				var why error
				if unsettled {
					// Stopped before the waiting calls are released:
					// they see the stop, not a list that is already
					// stale.
					why = fmt.Errorf("its tools did not settle: it sent notifications/tools/list_changed during each of %d re-lists in a row", maxRelistRounds)
					proc = srv.stopLocked(why)
				}
				// Publish before releasing waiting calls, so that none
				// of them goes through under the old definitions.
				if srv.relisting == done {
					srv.relisting = nil
					close(done)
				}
				srv.mu.Unlock()
				if unsettled {
					srv.halted(proc, why)
					return
				}
				break
			}
			srv.mu.Unlock()
		}
		if s.opts.OnToolsChanged != nil && !s.isClosed() {
			s.opts.OnToolsChanged(srv.cfg.Name)
		}
	}()
}

// relist re-reads a running server's tools and publishes them. It reports
// whether the server is still the one it was asked about.
func (srv *server) relist(gen uint64, cs *mcp.ClientSession, tap *listTap) bool {
	s := srv.sess
	ctx, cancel := context.WithTimeout(context.Background(), srv.cfg.StartupTimeout)
	defer cancel()
	raws, err := srv.listAll(ctx, cs, tap)
	srv.mu.Lock()
	stale := srv.gen != gen
	srv.mu.Unlock()
	if stale {
		return false
	}
	if err != nil {
		// Fail closed: the tools we have may no longer be what the server
		// serves, so none of them is called until it lists again.
		s.addNotice(fmt.Sprintf("server %s: re-listing tools after list_changed failed: %v; its tools are withdrawn until Restart", srv.cfg.Name, err))
		s.publish(srv, nil, loadedState{})
		return true
	}
	s.recordFirstSight(s.publish(srv, raws, s.loadPins(context.Background())))
	s.logger.Info("server tools changed", "server", srv.cfg.Name, "tools", len(raws))
	return true
}

// relistPending reports whether a re-list of the server is under way.
func (srv *server) relistPending() bool {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return srv.relisting != nil
}

// listed waits until no re-list is pending for the server.
func (srv *server) listed(ctx context.Context) error {
	for {
		srv.mu.Lock()
		ch := srv.relisting
		srv.mu.Unlock()
		if ch == nil {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// toolDef is the part of a raw tool definition mcphost reads. Everything
// else the server sent stays in the raw definition the digest covers.
type toolDef struct {
	Name         *string         `json:"name"`
	Title        string          `json:"title"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema"`
	Annotations  json.RawMessage `json:"annotations"`
	Execution    struct {
		TaskSupport string `json:"taskSupport"`
	} `json:"execution"`
}

// decode reads the fields mcphost uses by their exact keys. encoding/json
// matches struct fields case-insensitively: a definition with both
// "description" and "DESCRIPTION" (different keys to the digest and to a
// person reading the diff) would forward whichever came last. Keys are
// matched exactly instead, so what is forwarded is the field a reviewer
// sees under its own name.
func (d *toolDef) decode(raw json.RawMessage) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return err
	}
	field := func(key string, v any) error {
		if b, ok := m[key]; ok && string(b) != "null" {
			return json.Unmarshal(b, v)
		}
		return nil
	}
	var exec map[string]json.RawMessage
	err := errors.Join(field("name", &d.Name), field("title", &d.Title), field("description", &d.Description),
		field("execution", &exec))
	d.InputSchema, d.OutputSchema, d.Annotations = m["inputSchema"], m["outputSchema"], m["annotations"]
	if b, ok := exec["taskSupport"]; ok {
		err = errors.Join(err, json.Unmarshal(b, &d.Execution.TaskSupport))
	}
	return err
}

// defPaths are the members of a definition read reads, in the order of the
// fields it returns.
var defPaths = [][]string{
	{"name"}, {"title"}, {"description"},
	{"inputSchema"}, {"outputSchema"}, {"annotations"},
	{"execution"}, {"execution", "taskSupport"},
}

// read decodes raw as decode does and digests it, in one pass of the
// module's one JSON parser: the fields come from the very tree the digest
// (pin's, made by internal/canonical) is made of, and
// encoding/json's reflection and maps are not needed. A definition pin
// refuses (a repeated key, invalid UTF-8, a lone surrogate) cannot be
// pinned; decode still reads it, so that the notice can name the tool.
func (d *toolDef) read(raw json.RawMessage) (digest string, digestErr, err error) {
	var buf [8]canonical.Field // len(defPaths)
	digest, f, digestErr := canonical.Fields(raw, buf[:0], defPaths...)
	if digestErr != nil {
		// decode's reflection would take d, and with it every prepared
		// value, to the heap: it gets a copy.
		var err error
		*d, err = decoded(raw)
		return "", digestErr, err
	}
	// What json.Unmarshal would refuse for each field decode reads: a
	// value of another JSON type (null reads as absent).
	str := func(f canonical.Field, dst *string) bool {
		switch {
		case f.Raw == nil || string(f.Raw) == "null":
		case f.Raw[0] == '"':
			*dst = f.Text
		default:
			return false
		}
		return true
	}
	var name string
	ok := str(f[0], &name) && str(f[1], &d.Title) && str(f[2], &d.Description)
	if f[0].Raw != nil && string(f[0].Raw) != "null" {
		d.Name = &name
	}
	d.InputSchema, d.OutputSchema, d.Annotations = f[3].Raw, f[4].Raw, f[5].Raw
	if exec := f[6].Raw; exec != nil && string(exec) != "null" {
		ok = ok && exec[0] == '{' && str(f[7], &d.Execution.TaskSupport)
	}
	if !ok {
		return digest, nil, errors.New("a member mcphost reads has the wrong JSON type")
	}
	return digest, nil, nil
}

func decoded(raw json.RawMessage) (toolDef, error) {
	var d toolDef
	err := d.decode(raw)
	return d, err
}

// prepared is the per-tool work of discovery that depends only on the raw
// definition: parsing, digest, schema closing.
type prepared struct {
	def       toolDef
	digest    string
	digestErr error
	closed    *schema.Closed
	closeErr  error
	// Tool.StrictProblems and Tool.Schemas, made here, where the work is
	// spread over the cores, and shared by every listing's Tool that
	// reuses this: nothing changes them (callers get copies).
	problems map[string]string
	schemas  map[string]json.RawMessage
}

// parallelPrepare is the list size from which discovery spreads the
// per-tool work over the cores (the server is idle meanwhile).
const parallelPrepare = 256

// prepCache finds a listing's prepared work by the exact bytes of a
// definition. It holds the listing's own slices instead of a string copy
// of every definition: the raw definitions of a listing are never changed
// (they are what the digests cover and what is forwarded, and callers get
// copies), and a hash table of integers is nothing for the collector to
// scan. Equal hashes are only a hint; the bytes are compared.
type prepCache struct {
	seed  maphash.Seed
	raws  []json.RawMessage
	preps []prepared
	first map[uint64]int32 // hash → 1 + index of the latest definition with it
	next  []int32          // 1 + index of an earlier definition with the same hash, or 0
}

func newPrepCache(raws []json.RawMessage, preps []prepared) *prepCache {
	c := &prepCache{
		seed:  maphash.MakeSeed(),
		raws:  raws,
		preps: preps,
		first: make(map[uint64]int32, len(raws)),
		next:  make([]int32, len(raws)),
	}
	for i, raw := range raws {
		h := maphash.Bytes(c.seed, raw)
		c.next[i] = c.first[h]
		c.first[h] = int32(i + 1)
	}
	return c
}

func (c *prepCache) get(raw json.RawMessage) (prepared, bool) {
	if c == nil {
		return prepared{}, false
	}
	for i := c.first[maphash.Bytes(c.seed, raw)]; i != 0; i = c.next[i-1] {
		if bytes.Equal(c.raws[i-1], raw) {
			return c.preps[i-1], true
		}
	}
	return prepared{}, false
}

// prepare does the per-tool work for a listing. A definition identical to
// one of the server's previous listing reuses that result (a list_changed
// usually changes one tool of many); only the latest listing is kept.
func (srv *server) prepare(raws []json.RawMessage) []prepared {
	srv.mu.Lock()
	prev := srv.prepCache
	srv.mu.Unlock()
	out := make([]prepared, len(raws))
	one := func(i int) {
		if p, ok := prev.get(raws[i]); ok {
			out[i] = p
			return
		}
		out[i] = prepareOne(raws[i])
	}
	workers := min(runtime.GOMAXPROCS(0), len(raws)/parallelPrepare+1)
	if workers <= 1 {
		for i := range raws {
			one(i)
		}
	} else {
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < len(raws); i += workers {
					one(i)
				}
			}()
		}
		wg.Wait()
	}
	cache := newPrepCache(raws, out)
	srv.mu.Lock()
	srv.prepCache = cache
	srv.mu.Unlock()
	return out
}

func prepareOne(raw json.RawMessage) prepared {
	var p prepared
	digest, digestErr, err := p.def.read(raw)
	if err != nil {
		p.def = toolDef{} // a definition that cannot be read has no name
		return p
	}
	if p.digest, p.digestErr = digest, digestErr; p.digestErr != nil {
		return p
	}
	input := p.def.InputSchema
	if len(input) == 0 || string(input) == "null" {
		p.closeErr = errors.New("it has no inputSchema")
		return p
	}
	if p.closed, p.closeErr = schema.Close(input); p.closeErr != nil {
		return p
	}
	profiles := schema.Profiles()
	p.problems = make(map[string]string, len(profiles))
	p.schemas = make(map[string]json.RawMessage, len(profiles))
	for _, pr := range profiles {
		p.problems[string(pr)] = p.closed.Problems[pr]
		p.schemas[string(pr)], _ = p.closed.For(pr)
	}
	return p
}

// build applies naming, schema closing, policy and pins to a server's raw
// tools. It returns the tools to publish, the first-seen tools to record,
// and notices.
func (srv *server) build(raws []json.RawMessage, ls loadedState) (entries []*toolEntry, recs []subject, notices []string) {
	cfg := srv.cfg
	preps := srv.prepare(raws)
	counts := make(map[string]int, len(preps))
	for _, p := range preps {
		if p.def.Name != nil {
			counts[*p.def.Name]++
		}
	}
	seen := make(map[string]bool, len(preps))
	for i, p := range preps {
		raw, d := raws[i], p.def
		if d.Name == nil {
			notices = append(notices, fmt.Sprintf("server %s: skipped a tool with no name (tool #%d of its list)", cfg.Name, i+1))
			continue
		}
		name := *d.Name
		shown := func() string { return printable(name, 80) } // for notices only
		if counts[name] > 1 {
			if !seen[name] {
				notices = append(notices, fmt.Sprintf("server %s lists tool %q %d times; skipped it (which one would be called?)", cfg.Name, shown(), counts[name]))
			}
			seen[name] = true
			continue
		}
		seen[name] = true
		model, err := ModelName(cfg.Name, name)
		if err != nil {
			notices = append(notices, fmt.Sprintf("server %s: skipped tool %q: %s", cfg.Name, shown(), nameProblem(err)))
			continue
		}
		digest := p.digest
		if p.digestErr != nil {
			notices = append(notices, fmt.Sprintf("server %s: skipped tool %q: its definition cannot be pinned: %v", cfg.Name, shown(), p.digestErr))
			continue
		}
		asTask := d.Execution.TaskSupport == "required"
		if asTask && !tasksIn(srv.negotiated()) {
			notices = append(notices, fmt.Sprintf("server %s: skipped tool %q: it can only be called as a task (execution.taskSupport \"required\"), and the protocol revision the server negotiated (%s) has no tasks", cfg.Name, shown(), srv.negotiated()))
			continue
		}
		if p.closeErr != nil {
			notices = append(notices, fmt.Sprintf("server %s: skipped tool %q: %v", cfg.Name, shown(), p.closeErr))
			continue
		}
		closed := p.closed
		t := Tool{
			Name:           model,
			Server:         cfg.Name,
			Tool:           name,
			Title:          d.Title,
			Description:    d.Description,
			Schema:         closed.Schema,
			Strict:         closed.Strict,
			StrictProblem:  closed.Problem,
			StrictProblems: p.problems,
			Schemas:        p.schemas,
			Fields:         closed.Fields,
			Digest:         digest,
			Annotations:    nonNull(d.Annotations),
			OutputSchema:   nonNull(d.OutputSchema),
			Definition:     raw,
			Decision:       cfg.policy(name),
			Pin:            PinUnpinned,
		}
		t.Unchecked, t.CheckProblem = closed.Unchecked, closed.CheckProblem
		if t.CheckProblem != "" && t.Decision != Deny {
			notices = append(notices, fmt.Sprintf("tool %s: its input schema cannot be checked (%s), so every call is refused", model, printable(t.CheckProblem, 200)))
		}
		if t.Fields == nil {
			t.Fields = []string{}
		}
		e := &toolEntry{Tool: t, closed: closed, srv: srv, task: asTask}
		if t.Decision != Deny {
			rec, notice := srv.pinTool(e, ls)
			if rec != nil {
				recs = append(recs, *rec)
			}
			if notice != "" {
				notices = append(notices, notice)
			}
		}
		entries = append(entries, e)
	}
	for _, list := range []struct {
		key   string
		names []string
	}{{"allow", cfg.Allow}, {"deny", cfg.Deny}} {
		for _, n := range list.names {
			if !seen[n] {
				notices = append(notices, fmt.Sprintf("[mcp.%s] %s names %q, which the server does not offer", cfg.Name, list.key, printable(n, 80)))
			}
		}
	}
	if lock := srv.sess.lock; lock != nil && ls.err == nil {
		switch {
		case !ls.serverReviewed(cfg.Name):
			notices = append(notices, fmt.Sprintf("server %s is not in the lock %s: nothing of it is reviewed, so its tools are held from the model until a person records it (%s)", cfg.Name, lock.path, srv.sess.approveHint(cfg.Name)))
		case len(srv.programDrift) > 0:
			notices = append(notices, fmt.Sprintf("server %s: its program changed since the lock %s recorded it (%s): its allowed tools need approval until it is re-reviewed (%s)",
				cfg.Name, lock.path, strings.Join(srv.programDrift, "; "), srv.sess.approveHint("program:"+cfg.Name)))
		}
	}
	if ls.err == nil && ls.v != nil && (srv.sess.lock == nil || ls.serverReviewed(cfg.Name)) {
		if n := srv.newToolsNotice(entries, ls); n != "" {
			notices = append(notices, n)
		}
		for _, tool := range ls.v.recordedTools(cfg.Name) {
			if !seen[tool] {
				notices = append(notices, fmt.Sprintf("server %s no longer lists tool %q, which was reviewed", cfg.Name, printable(tool, 80)))
			}
		}
	}
	return entries, recs, notices
}

func nameProblem(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, "cannot be named"); i >= 0 {
		return msg[i:]
	}
	return msg
}

func nonNull(r json.RawMessage) json.RawMessage {
	if len(r) == 0 || string(r) == "null" {
		return nil
	}
	return r
}
