package mcphost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost/mcphost/internal/egress"
	"github.com/mcphost/mcphost/pin"
	"github.com/mcphost/mcphost/sandbox"
)

// server is one configured server and its running process, if any.
type server struct {
	cfg    ServerConfig
	sess   *Session
	stderr *stderrLog

	// program is the server's program identity (programIdentity), decided
	// at Connect and not changed after.
	program []pin.ProgramFile
	// closure is what its program loads (sandbox.ProgramClosure) and
	// covers how protectPaths keeps it, decided before any server starts
	// and not changed after; closure is nil when its program cannot be
	// found.
	closure *sandbox.Closure
	covers  []string

	restartMu sync.Mutex // serializes Restart

	proxyOnce sync.Once
	proxy     *egress.Proxy // the network proxy of a NetworkGrant, made once for every start
	proxyErr  error
	// refusals counts the Refusals its proxy reported (refusedNotice),
	// over the proxy's life, which is the server's: a refusal is reported
	// once per destination, so "none since its first start" is what can
	// be told truthfully.
	refusals atomic.Int64
	// installing is set while a package launcher starts, from before its
	// process until it answers initialize: what its proxy refuses then is
	// probably the launcher fetching its package.
	installing atomic.Bool
	listMu     sync.Mutex // serializes discovery (the tap relies on it)
	pubMu      sync.Mutex // serializes publishing its tools (publish, rejudge)

	mu           sync.Mutex
	state        ServerState
	err          error // why it failed or exited
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
	programDrift []string      // how its program differs from the lock's record (setDrift)

	inflight atomic.Int32 // calls of its tools in flight
	prompts  []*Prompt    // its prompts as pinned; under mu
	// promptsRelisting is non-nil while a prompts/list_changed re-list
	// runs (closed when done), promptsDirty whether another came meanwhile;
	// under mu.
	promptsRelisting chan struct{}
	promptsDirty     bool
	// promptsHalted: its prompts did not settle and are withdrawn until
	// it starts again; under mu.
	promptsHalted bool
}

// startError is a failure to start, with the phase it happened in.
type startError struct {
	phase string
	err   error
}

func (e *startError) Error() string { return e.phase + ": " + e.err.Error() }
func (e *startError) Unwrap() error { return e.err }

// setDrift compares the server's program with the lock's record of it, if
// the lock has one; a review of the program changes the record, so it is
// set again after one.
func (srv *server) setDrift(l *pin.Lock) {
	entry, ok := l.Servers[srv.cfg.Name]
	if !ok {
		return
	}
	drift := []string{"its program cannot be identified now, so it cannot be shown to be the one recorded"}
	if srv.program != nil {
		drift = programChanges(entry.Program, srv.program)
	}
	srv.mu.Lock()
	srv.programDrift = drift
	srv.mu.Unlock()
}

// drift returns how the server's program differs from the lock's record.
func (srv *server) drift() []string {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return slices.Clone(srv.programDrift)
}

func (srv *server) running() bool {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return srv.state == ServerRunning
}

// afterSandboxStart, when set by a test, runs after each server's sandbox
// start, before its initialize (TestLauncherRefusalEarly).
var afterSandboxStart func(srv *server)

// start starts the process, initializes and lists all tools, all within the
// startup timeout. On success the server is running and lastList holds its
// raw tools.
func (srv *server) start(ctx context.Context) error {
	s := srv.sess
	cfg := srv.cfg
	timeout, launcherDefault := cfg.startupTimeout()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	begin := time.Now()
	tr := newPhaseTrace("start", cfg.Name)
	result := "failed"
	defer func() { tr.print(result) }()

	sbx, err := srv.sandboxConfig()
	tr.mark("config")
	if err != nil {
		return &startError{"config", err}
	}
	// A package launcher fetches its package from its first moment, so a
	// refusal of its network is the launcher's until the server answers
	// initialize: marked so from before its process exists (a refusal
	// could otherwise come before the mark, on a loaded machine).
	launcher, registry, isLauncher := packageLauncher(cfg.Command)
	srv.installing.Store(isLauncher)
	defer srv.installing.Store(false)
	proc, err := sandbox.Start(ctx, sbx)
	tr.mark("sandbox")
	if afterSandboxStart != nil {
		afterSandboxStart(srv)
	}
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
	srv.promptsHalted = false
	srv.proc = proc
	srv.confinement = proc.Confinement()
	srv.limits = proc.Limits()
	srv.lacks = proc.Lacks()
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
	tap.promptsChanged = func() { srv.promptsChanged(gen) }
	tap.resourcesChanged = func() {
		s.logger.Debug("server resources changed", "server", cfg.Name) // data: nothing pinned to re-judge; debug, as a server may send any number
	}
	tap.stray = func(start []byte, n, row int) { srv.strayLine(gen, start, n) }
	// Roots and logging are deprecated from protocol 2026-07-28 on, but
	// servers of the 2025-11-25 era (the filesystem reference server among
	// them) use roots to learn their directory; a 2026 server asks for them
	// in an input request, which the go-sdk answers from the same list.
	// Advertise roots, and only the worktree, and elicitation in each mode
	// the agent has a hook for (form: Elicit, URL: ElicitURL); no sampling. The go-sdk answers
	// requests for anything else with a JSON-RPC error.
	//lint:ignore SA1019 see above: roots are current in the version mcphost speaks
	caps := &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{}}
	var elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)
	if s.opts.Elicit != nil || s.opts.ElicitURL != nil {
		caps.Elicitation = &mcp.ElicitationCapabilities{}
		elicit = srv.elicit
	}
	if s.opts.Elicit != nil {
		caps.Elicitation.Form = &mcp.FormElicitationCapabilities{}
	}
	if s.opts.ElicitURL != nil {
		caps.Elicitation.URL = &mcp.URLElicitationCapabilities{}
	}
	// The tap sees notifications/tools/list_changed and
	// prompts/list_changed in stream order and re-lists (toolsChanged,
	// promptsChanged); the handlers are here because a server of the
	// 2026-07-28 era sends them only on a subscriptions/listen stream,
	// which the go-sdk opens only for a client with a handler (resources
	// too, so the go-sdk's cache of their list is dropped on a change).
	client := mcp.NewClient(&mcp.Implementation{Name: "mcphost", Version: Version}, &mcp.ClientOptions{
		Capabilities:               caps,
		ElicitationHandler:         elicit,
		ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) {},
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) {},
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {},
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
	if isLauncher && !cfg.Network && len(cfg.NetworkGrant) == 0 && !cfg.Unconfined && cfg.StartupTimeout > launcherWait {
		var cancelInit context.CancelFunc
		initCtx, cancelInit = context.WithTimeout(ctx, launcherWait)
		defer cancelInit()
	}
	// No revision is asked for: the go-sdk tries the newest era's
	// server/discover and falls back to initialize, so servers of either
	// era start; ServerInfo.Protocol says which one was negotiated.
	cs, err := client.Connect(initCtx, transport, nil)
	tr.mark("initialize")
	srv.installing.Store(false)
	if err != nil && isLauncher && initCtx != ctx && initCtx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
		_ = proc.Close(0)
		return &startError{"initialize", fmt.Errorf("%w: %s fetches the package it runs from %s unless it finds it installed, which needs the network, and the network is off for this server: mcphost stopped it after %v without an answer. Install the package beforehand and run it directly (for npm: npm install --prefix DIR PACKAGE, then command = [\"node\", \"DIR/node_modules/PACKAGE/<its main script>\"] and read = [\"DIR\"]; see \"Running real servers\" in mcphost's README), or grant the server its registry alone: network = [\"%s\"]",
			ErrLauncherOffline, launcher, registry, launcherWait, registryHost(launcher))}
	}
	if err != nil {
		err = srv.explain(ctx, proc, fromServer(err), timeout)
		if isLauncher && cfg.network() != "none" && ctx.Err() == context.DeadlineExceeded && srv.stopped() == nil {
			err = fmt.Errorf("%w: %s", err, srv.launcherTimeout(launcher, timeout, launcherDefault))
		}
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
			err = srv.explain(ctx, proc, fromServer(err), timeout)
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
	tr.mark("list")
	result = "ok"
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

// fail records a start failure.
func (srv *server) fail(err error) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	srv.state = ServerFailed
	srv.err = err
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
// stderr: the excerpt of stderrLog.Excerpt, and what it suggests: a path
// to grant (readHint), an unfinished npx install to remove (npxHint), the
// network destinations to grant or why a granted one failed
// (networkHints).
func (srv *server) stderrNotice() string {
	ex := srv.stderr.Excerpt()
	if ex == "" {
		return ""
	}
	n := "\n  stderr: " + strings.ReplaceAll(ex, "\n", "\n  stderr: ")
	if hint := srv.readHint(); hint != "" {
		n += "\n  (" + hint + ")"
	}
	if hint := srv.npxHint(); hint != "" {
		n += "\n  (" + hint + ")"
	}
	for _, hint := range srv.networkHints() {
		n += "\n  (" + hint + ")"
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

// exited runs when the server's process ends on its own (or is closed):
// from its watcher, and from a call that saw it gone (goneError), which
// ever comes first; the later does nothing but close the session again.
func (srv *server) exited(gen uint64) {
	srv.mu.Lock()
	if srv.gen != gen {
		srv.mu.Unlock()
		return
	}
	status := srv.proc.ExitStatus()
	wasRunning := srv.state == ServerRunning
	if wasRunning {
		srv.state = ServerExited
		srv.prompts = nil // pinned for this process, as in close
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
	if srv.promptsRelisting != nil {
		close(srv.promptsRelisting)
		srv.promptsRelisting = nil
	}
	// The prompts were pinned for this process: a Restart's new one
	// lists and pins its own (publishPrompts), and until then no prompt
	// of the new process may be got under this one's pin.
	srv.prompts = nil
	srv.mu.Unlock()
	var err error
	tr := newPhaseTrace("close", srv.cfg.Name)
	// The process first: proc.Close closes stdin (the stdio shutdown the
	// spec asks for), gives the server the grace period and then kills
	// everything it started. Closing the go-sdk session first would wait
	// for calls in flight, up to their call_timeout.
	if proc != nil {
		err = proc.Close(grace)
		tr.mark("process")
	}
	if cs != nil {
		cs.Close() // fails the calls in flight: the server is gone
		tr.mark("client")
	}
	if proc != nil || cs != nil {
		tr.print(fmt.Sprint(state))
	}
	return err
}

func (srv *server) info() ServerInfo {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	info := ServerInfo{Name: srv.cfg.Name, State: srv.state, Confinement: srv.confinement, Network: srv.cfg.network(), Limits: srv.limits, Lacks: srv.lacks, Widens: srv.widens(),
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

// ServerState is the lifecycle state of one server.
type ServerState string

// ServerInfo describes one server of a session.
type ServerInfo struct {
	Name        string      `json:"name"`
	State       ServerState `json:"state"`
	Confinement string      `json:"confinement"`
	// Network is what the server may reach: "none", "all" (network =
	// true, or unconfined) or its grant, the destinations joined by ", ".
	Network string `json:"network"`
	// Limits says how the server's max_processes, max_memory and max_tmp
	// are enforced (a cgroup or rlimits, with the numbers); "" when it is
	// unconfined or not running.
	Limits string `json:"limits,omitempty"`
	// Lacks lists what the server's confinement lacks: compared with the
	// full tier (the reduced tier, on a host without user namespaces), and
	// the kernel budgets a non-root host's servers still share with the
	// person (descriptors in flight, pipe pages, their process count).
	Lacks []string `json:"lacks,omitempty"`
	Tools int      `json:"tools"`
	// Error says why the server is not running, for a person: its text
	// may carry the server's own words (printable and bounded where they
	// come from a request).
	Error string `json:"error,omitempty"`
	// Widens lists what the server's table grants beyond the default
	// confinement, in words for a person to weigh: "sandbox = off
	// (unconfined)", "network", "network NAME, ... (through a proxy of
	// the host's)", "git = write (writable git directory)", "write PATH
	// (outside the worktree)", and the read grants mcphost added for what
	// the command named, "read PATH (why; added by mcphost)". Never nil.
	Widens []string `json:"widens"`
	// ProgramChanged says, with a lock, how the server's program differs
	// from the one the lock recorded (one line per file), decided at
	// Connect; while it is not empty every allowed tool needs approval.
	ProgramChanged []string `json:"program_changed,omitempty"`
	// ProgramCovers says, one line per item, what the server's program
	// identity and protection cover: its program files, each package its
	// code is loaded from and how it is kept, and, starting "not covered"
	// (or "NOT COVERED" for what a server could change), what they do not.
	ProgramCovers []string `json:"program_covers,omitempty"`
	// Protocol is the MCP revision the server negotiated, in
	// server/discover ("2026-07-28") or initialize (such as "2025-11-25");
	// "" when it is not running.
	Protocol string `json:"protocol,omitempty"`
	// Instructions is the text the server sent as its instructions, for a
	// person to read (print it through pin.Visible): server text. The
	// model may be given it only through Session.Instructions, which
	// returns it only as reviewed.
	Instructions string `json:"instructions,omitempty"`
	// InstructionsPin is what the reviews say of Instructions: PinSame,
	// PinNew (first sight; or, on a server reviewed before, instructions
	// no review covers), PinChanged or PinUnpinned. "" when the server is
	// not running.
	InstructionsPin PinStatus `json:"instructions_pin,omitempty"`
}

// Servers describes every configured server, sorted by name.
func (s *Session) Servers() []ServerInfo {
	out := make([]ServerInfo, 0, len(s.order))
	s.mu.RLock()
	count := map[*server]int{}
	for _, e := range s.tools {
		count[e.srv]++
	}
	s.mu.RUnlock()
	for _, name := range s.order {
		srv := s.servers[name]
		info := srv.info()
		info.Tools = count[srv]
		info.ProgramChanged = srv.drift()
		info.ProgramCovers = slices.Clone(srv.covers)
		out = append(out, info)
	}
	return out
}

const (
	ServerRunning ServerState = "running"
	ServerFailed  ServerState = "failed" // it did not start, initialize or list
	ServerExited  ServerState = "exited" // it died after starting
	ServerClosed  ServerState = "closed"
	// ServerUnreviewed: its table comes from a config a server could
	// have written and is not as a person reviewed it, so it did not
	// start (see Load and Session.Review).
	ServerUnreviewed ServerState = "unreviewed"
)

// readHint says, when the server's stderr names a file it could not find
// that exists on the host outside its view, what read entry would let it
// see it: the package holding the file (the nearest directory above it
// with a package.json, pyproject.toml, setup.py or go.mod), else the
// file's directory. "" when there is none to suggest.
func (srv *server) readHint() string {
	if srv.cfg.Unconfined {
		return ""
	}
	home := ""
	for _, kv := range srv.sess.hostEnv() {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = v
		}
	}
	read, write, _ := srv.grants()
	visible := append(append([]string{srv.sess.worktree}, read...), write...)
	var hints []string
	for _, p := range srv.stderr.missingPaths() {
		if _, err := os.Stat(p); err != nil {
			continue // missing on the host too: no grant helps
		}
		seen := false
		for _, v := range visible {
			seen = seen || under(p, v)
		}
		if seen {
			continue
		}
		entry := packageRoot(p)
		if entry == "/" || home != "" && (entry == home || under(home, entry)) {
			continue // never suggest the whole home, or what holds it
		}
		shown := entry
		if home != "" && under(entry, home) {
			shown = "~/" + strings.TrimPrefix(entry, home+"/")
		}
		hints = append(hints, fmt.Sprintf("%s exists but is outside the server's view; to let it read it, add read = [\"%s\"] to [mcp.%s]", printable(p, 200), printable(shown, 200), srv.cfg.Name))
	}
	return strings.Join(hints, "; ")
}

// packageRoot returns the nearest directory above p (p's own, if it is
// one) that holds a package manifest, else p's directory.
func packageRoot(p string) string {
	dir := p
	if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
		dir = filepath.Dir(p)
	}
	for d := dir; ; d = filepath.Dir(d) {
		for _, m := range []string{"package.json", "pyproject.toml", "setup.py", "go.mod"} {
			if _, err := os.Stat(filepath.Join(d, m)); err == nil {
				return d
			}
		}
		if d == filepath.Dir(d) {
			return dir
		}
	}
}

// widens is ServerInfo.Widens: what its table grants beyond the default
// confinement, and the read grants mcphost added (autoGrants), each with
// why. srv.mu is held.
func (srv *server) widens() []string {
	out := srv.sess.widens(srv.cfg)
	read, _ := srv.sess.expand(srv.cfg.Name, "read", srv.cfg.Read)
	write, _ := srv.sess.expand(srv.cfg.Name, "write", srv.cfg.Write)
	for _, g := range srv.autoGrants(read, write) {
		out = append(out, fmt.Sprintf("read %s (%s; added by mcphost)", g.path, g.why))
	}
	return out
}
