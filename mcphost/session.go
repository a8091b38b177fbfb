package mcphost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcphost/mcphost/pin"
	"github.com/mcphost/mcphost/schema"
)

// Version is mcphost's version, sent to servers in initialize.
const Version = "0.1.0"

// DefaultCloseGrace is how long Close lets a server exit on its own after
// closing its stdin, before it kills every process the server started.
const DefaultCloseGrace = 2 * time.Second

// Options configures a Session. The zero value is usable: the worktree is
// the current directory and the state directory is DefaultStateDir of it.
type Options struct {
	// Worktree is the directory servers run in and may write. Default ".".
	Worktree string
	// StateDir holds the reviewed-tools state file. Default:
	// DefaultStateDir(Worktree), outside the worktree. Connect refuses, with
	// ErrStateReachable, a StateDir inside the worktree or inside a read or
	// write grant of a confined server: a server that can open the state's
	// lock file can hold the lock.
	StateDir string
	// HomeDir holds the private home directories of the servers whose
	// home is HomePersist, one subdirectory per server name, each made
	// (mode 0700) when its server starts. Default: "home" in the state
	// directory. No server may be granted it or any directory above it
	// (Connect refuses, as for the state directory); each server sees only
	// its own, as its HOME.
	HomeDir string
	// ConfigFile is the path of the agent's config file, if it has one.
	// Servers cannot write it even when it lies inside the worktree.
	ConfigFile string
	// Protect names further paths that no server may write, rename or
	// replace, as a server table's protect key does: absolute or relative
	// to the worktree; an entry ending in "/" is a directory, created empty
	// if missing. The worktree's mcphost.toml and mcphost.lock, every
	// server's program and the git directory are protected without being
	// named here.
	Protect []string
	// Approver is asked before each call of a tool whose decision is
	// Approval. Nil: such calls fail with ErrNeedsApproval.
	Approver Approver
	// ApproveHeld lets the Approver approve a call of a held tool (one
	// changed or new since its review, never offered to the model), its
	// ApprovalRequest showing what no person reviewed: for a person who
	// calls a tool by hand, as `mcphost call` does. Without it such a call
	// is refused with ErrNeedsApproval. Either way a held tool is never
	// offered to the model.
	ApproveHeld bool
	// Logger receives server lifecycle events, notices, calls (tool,
	// decision, duration, outcome; never argument values) and, at debug
	// level, the servers' stderr lines. Nil: nothing is logged.
	Logger *slog.Logger
	// ReadOnlyState keeps the session from writing the state file on its
	// own: first-seen tools show as PinNew (an allowed one is allowed) but
	// are not recorded, and an Approver's ApproveAndReview approves the one
	// call without recording a review. Session.Approve still records.
	// mcphost list, check and call use it.
	ReadOnlyState bool
	// OnToolsChanged is called after a server's tools changed mid-session,
	// with that server's name: from a goroutine of the session's after
	// notifications/tools/list_changed, from Restart's caller after a
	// Restart. Read the new tools with Tools. It must not call Close.
	OnToolsChanged func(server string)
	// OnCall is called after every Session.Call with a record of it.
	OnCall func(CallRecord)
	// OnNotice is called with each notice as the session adds it (the
	// same text Notices returns, dropped ones aside), so an agent need not
	// poll: a server that did not start, a tool held because it changed,
	// a table that needs review. It is called from the goroutine that
	// found it, possibly from several at once, and during Connect; it
	// must return quickly and must not call Close. Notices are server
	// text in part: print them through pin.Visible.
	OnNotice func(notice string)
	// OnProgress receives the progress notifications of calls in flight
	// (every call carries a progress token). It is called from the
	// goroutine that reads the server's messages, one notification at a
	// time per server: it must return quickly and must not call the
	// session. Progress never extends a call: call_timeout still bounds
	// it. Nil: progress notifications are dropped.
	OnProgress func(Progress)
	// Elicit, if set, is asked when a server asks the person something
	// (elicitation/create, form mode; mcphost advertises the elicitation
	// capability only then, and never URL mode). Nil: servers are told
	// mcphost does not support elicitation, and a server that asks anyway
	// gets an error.
	Elicit Elicitor
	// ElicitOutsideCalls lets a server elicit while no call of its tools
	// is in flight. Without it such a request is declined at once: a
	// server should not ask the person things unbidden.
	ElicitOutsideCalls bool
	// CloseGrace is how long Close waits for a server to exit on its own.
	// Default DefaultCloseGrace.
	CloseGrace time.Duration
	// HostEnv is the environment the servers' environments are scrubbed
	// from. Nil: os.Environ().
	HostEnv []string
	// LockFile is a lock file (pin.Lock; conventionally mcphost.lock
	// beside the config) holding a team's reviews. With one, reviews are
	// read from and recorded into it instead of the state file, and first
	// sight trusts nothing: a tool the lock does not hold needs approval
	// (with HoldNewTools it is withheld), and a server whose program
	// (ProgramIdentity) differs from the one the lock recorded has every
	// allowed tool need approval, with a notice. A lock that lies where a
	// server could have written it is trusted only as committed in git or
	// as this person's mcphost last wrote or accepted it (see LoadLock);
	// otherwise nothing is trusted, StateError says why, and nothing is
	// recorded into it. Connect creates a missing lock (empty, and
	// recorded as this person's) before any server starts, so that no
	// server of the session can write, replace or create it. "": no lock.
	LockFile string
	// LockTimeout bounds each wait for the state file's lock (recording a
	// first sight or a review); past it the recording fails with an error
	// wrapping pin.ErrLocked. Default pin.DefaultLockTimeout.
	LockTimeout time.Duration
}

// Approver decides whether a call of a tool that needs approval may go
// ahead, and whether the person reviewed the tool as it is now. It is
// called from the goroutine of Session.Call, possibly from many at once,
// and should show the person ApprovalRequest.Diff. Its Verdict says what
// was decided; Decline (the zero value) or an error fails the call, an
// error with that error wrapped.
type Approver func(ctx context.Context, req ApprovalRequest) (Verdict, error)

// Verdict is an Approver's answer.
type Verdict int

const (
	// Decline: the call does not go ahead (ErrDeclined). The zero value,
	// so that an Approver that says nothing says no.
	Decline Verdict = iota
	// ApproveOnce: this one call goes ahead. Nothing is recorded: a tool
	// that changed or was never reviewed asks, with its diff, next time.
	ApproveOnce
	// ApproveAndReview: this call goes ahead, and the tool is recorded as
	// reviewed as it is now (ApprovalRequest.Tool.Definition), as
	// `mcphost approve` does: a changed allowed tool is allowed again, a
	// changed or new tool stops being flagged, a withheld one is offered.
	// In a session with ReadOnlyState it is ApproveOnce.
	ApproveAndReview
)

// String returns "decline", "approve once" or "approve and review".
func (v Verdict) String() string {
	switch v {
	case Decline:
		return "decline"
	case ApproveOnce:
		return "approve once"
	case ApproveAndReview:
		return "approve and review"
	}
	return fmt.Sprintf("Verdict(%d)", int(v))
}

// ApprovalRequest is what an Approver is asked about.
type ApprovalRequest struct {
	Tool Tool
	// Arguments are the arguments as the server will receive them.
	Arguments json.RawMessage
	// Reason says why approval is needed, for a person to read. It may name
	// fields of the server's definition: print it through pin.Visible.
	Reason string
	// Changes lists what changed since the tool's review, when Tool.Pin is
	// PinChanged.
	Changes []pin.Change
	// Diff is what `mcphost approve` shows, ready to print: for a tool that
	// changed since its review (Tool.Pin PinChanged), a line diff of each
	// changed field; for a tool with no review on record (PinNew,
	// PinUnpinned), its whole definition; "" for a tool unchanged since its
	// review. It is pin.Format's output: every invisible or control
	// character is a visible escape (a zero-width space is <U+200B>), so it
	// is safe to write to a terminal as it is.
	Diff string
}

// CallRecord describes one finished Session.Call, for a journal.
type CallRecord struct {
	Tool     string        // model name
	Server   string        // "" when the tool is unknown
	Decision Decision      // the decision the call went through
	Duration time.Duration // the whole call, approval included
	Err      error         // nil on success (a result with isError is a success here)
	IsError  bool          // the server's result had isError set
}

// ServerState is the lifecycle state of one server.
type ServerState string

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
	// Lacks lists what the server's confinement lacks compared with the
	// full one (the reduced tier, on a host without user namespaces).
	Lacks []string `json:"lacks,omitempty"`
	Tools int      `json:"tools"`
	Error string   `json:"error,omitempty"`
	// Widens lists what the server's table grants beyond the default
	// confinement, in words for a person to weigh: "sandbox = off
	// (unconfined)", "network", "git = write (writable git directory)",
	// "write PATH (outside the worktree)". Never nil.
	Widens []string `json:"widens"`
	// ProgramChanged says, with a lock, how the server's program differs
	// from the one the lock recorded (see ProgramChanges), decided at
	// Connect; while it is not empty every allowed tool needs approval.
	ProgramChanged []string `json:"program_changed,omitempty"`
	// Protocol is the MCP revision the server negotiated in initialize
	// (such as "2025-11-25"); "" when it is not running.
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

// Session is a set of running servers and their tools. Its methods are safe
// for concurrent use.
type Session struct {
	opts     Options
	worktree string
	// protect are the paths every server's sandbox protects, decided at
	// Connect: the state directory, the config file, the default config
	// and lock names, the protect entries that exist and every server's
	// program files.
	protect []string
	// reviews is where reviews are read and recorded: the state file, or
	// the lock (then lock is it too).
	reviews store
	// lock is Options.LockFile, nil without one.
	lock *lockFile
	// config is the resolved path of the config the servers' tables come
	// from ("" if unknown), and configWritable the path a server could
	// write that holds it ("" if none): then its tables start only as
	// reviewed.
	config, configWritable string
	// hint is the command line, up to the reference, that reviews
	// something of this session (approveHint).
	hint    string
	logger  *slog.Logger
	servers map[string]*server
	order   []string

	mu      sync.RWMutex
	tools   map[string]*toolEntry // by model name
	notices []string
	closed  bool
	// stateErr is why the state file could not be read at Connect.
	stateErr error

	bg sync.WaitGroup // goroutines that Close waits for

	progressSeq atomic.Uint64
	progress    sync.Map // progress token → progressCall, for calls in flight
}

// toolEntry is one tool with what a call needs. Immutable once published.
type toolEntry struct {
	Tool
	closed *schema.Closed
	srv    *server
	// unreviewed: the server did not offer the tool at its last review and
	// no person has reviewed it since.
	unreviewed bool
	// reviewed is the definition last reviewed, when Pin is PinChanged.
	reviewed json.RawMessage
	// task: the tool can only be called as a task (taskSupport required).
	task bool
}

// DefaultStateDir returns the state directory for a worktree:
// $XDG_STATE_HOME (or ~/.local/state) /mcphost/<base>-<hash of the path>.
// It is outside the worktree, so a server that writes the worktree cannot
// approve its own tools.
func DefaultStateDir(worktree string) (string, error) {
	abs, err := filepath.Abs(worktree)
	if err != nil {
		return "", err
	}
	base := os.Getenv("XDG_STATE_HOME")
	if base == "" || !filepath.IsAbs(base) {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("no state directory: %w (set -state or XDG_STATE_HOME)", err)
		}
		base = filepath.Join(home, ".local", "state")
	}
	d, err := pin.Digest(mustJSON(map[string]string{"worktree": abs}))
	if err != nil {
		return "", err
	}
	name := filepath.Base(abs)
	if name == "/" || name == "." {
		name = "root"
	}
	return filepath.Join(base, "mcphost", name+"-"+d[len(d)-12:]), nil
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// Connect starts every server in parallel, confined to the worktree, and
// discovers their tools. One server's failure does not fail Connect: it is
// in Notices and Servers. Connect fails only for a bad worktree or state
// directory (one a server could reach: ErrStateReachable), an invalid
// ServerConfig, or ctx ending. ctx bounds Connect
// itself, not the session's life; each server's start is also bounded by its
// StartupTimeout. The caller must Close the session.
func Connect(ctx context.Context, servers []ServerConfig, opts Options) (*Session, error) {
	s := &Session{opts: opts, servers: map[string]*server{}, tools: map[string]*toolEntry{}}
	s.logger = opts.Logger
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	if s.opts.CloseGrace <= 0 {
		s.opts.CloseGrace = DefaultCloseGrace
	}
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
	if fi, err := os.Stat(wt); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("mcphost: worktree %s is not a directory", wt)
	}
	s.worktree = wt
	if s.opts.StateDir == "" {
		if s.opts.StateDir, err = DefaultStateDir(wt); err != nil {
			return nil, fmt.Errorf("mcphost: %w", err)
		}
	}
	if s.opts.StateDir, err = filepath.Abs(s.opts.StateDir); err != nil {
		return nil, fmt.Errorf("mcphost: state dir: %w", err)
	}
	// Create it before any server starts: the sandbox can only protect a
	// path that exists, and a server must not be able to create it first.
	if err := os.MkdirAll(s.opts.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("mcphost: state dir: %w", err)
	}
	if s.opts.HomeDir == "" {
		s.opts.HomeDir = filepath.Join(s.opts.StateDir, "home")
	}
	if s.opts.HomeDir, err = filepath.Abs(s.opts.HomeDir); err != nil {
		return nil, fmt.Errorf("mcphost: home dir: %w", err)
	}
	if s.opts.ConfigFile != "" {
		if s.opts.ConfigFile, err = filepath.Abs(s.opts.ConfigFile); err != nil {
			return nil, fmt.Errorf("mcphost: config file: %w", err)
		}
	}

	var errs []error
	for _, sc := range servers {
		sc = sc.withDefaults()
		if err := ValidServerName(sc.Name); err != nil {
			errs = append(errs, &ConfigError{Table: "mcp." + sc.Name, Msg: err.Error()})
			continue
		}
		for _, p := range sc.validate() {
			errs = append(errs, &ConfigError{Table: "mcp." + sc.Name, Key: p.key, Msg: p.msg})
		}
		if _, dup := s.servers[sc.Name]; dup {
			errs = append(errs, &ConfigError{Table: "mcp." + sc.Name, Msg: "defined twice"})
			continue
		}
		s.servers[sc.Name] = &server{cfg: sc, sess: s, stderr: newStderrLog(sc.Name, s.logger), state: ServerFailed}
		s.order = append(s.order, sc.Name)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	sort.Strings(s.order)
	if err := s.checkStateReach(); err != nil {
		return nil, err
	}
	configs := make([]ServerConfig, 0, len(s.order))
	for _, name := range s.order {
		configs = append(configs, s.servers[name].cfg)
	}
	if err := s.placeConfig(configs); err != nil {
		return nil, err
	}
	if opts.LockFile != "" {
		lo := s.opts
		lo.Worktree = wt
		if s.lock, err = newLockFile(opts.LockFile, configs, lo); err != nil {
			return nil, err
		}
		s.opts.LockFile = s.lock.path
		// A missing lock is created (empty) before any server starts, so
		// that it is protected like an existing one and no server of this
		// session can create it.
		if _, err := os.Lstat(s.lock.path); errors.Is(err, fs.ErrNotExist) {
			if err := s.lock.update(ctx, func(*pin.Lock) error { return nil }); err != nil {
				return nil, fmt.Errorf("mcphost: creating the lock file %s before the servers start: %w", s.lock.path, err)
			}
		}
		for _, name := range s.order {
			srv := s.servers[name]
			// A program that cannot be found fails its start, saying why.
			srv.program, _ = programIdentity(srv.cfg, wt, s.opts.HostEnv)
		}
		s.reviews = &lockStore{lf: s.lock}
	} else {
		s.reviews = &stateStore{st: &pin.Store{Dir: s.opts.StateDir, LockTimeout: s.opts.LockTimeout}, config: s.config}
	}
	s.hint = approveCommand(opts)
	s.protect = s.protectPaths()

	// Read the reviews while the servers start, unless a table must be
	// found reviewed before its server may start.
	stateCh := make(chan loadedState, 1)
	if s.configWritable != "" {
		stateCh <- s.loadPins(ctx)
	} else {
		go func() { stateCh <- s.loadPins(ctx) }()
	}
	var ls loadedState
	if s.configWritable != "" {
		ls = <-stateCh
		for _, name := range s.order {
			s.holdTable(s.servers[name], ls)
		}
	}

	type started struct {
		srv *server
		err error
	}
	results := make(chan started, len(s.order))
	starting := 0
	for _, name := range s.order {
		srv := s.servers[name]
		if srv.held() {
			continue
		}
		starting++
		go func() { results <- started{srv, srv.start(ctx)} }()
	}
	if s.configWritable == "" {
		ls = <-stateCh
	}
	s.stateErr = ls.err
	switch {
	case ls.err != nil && s.lock != nil:
		s.addNotice(fmt.Sprintf("the lock file cannot be used, so nothing of it is trusted (every tool is held from the model): %v", ls.err))
	case ls.err != nil:
		s.addNotice(fmt.Sprintf("reviewed-tools state unreadable, so no review is trusted (every tool is held from the model): %v", ls.err))
	}
	if lv, ok := ls.v.(*lockView); ok {
		for _, name := range s.order {
			srv := s.servers[name]
			if entry, ok := lv.l.Servers[name]; ok && srv.program != nil {
				srv.programDrift = programChanges(entry.Program, srv.program)
			}
		}
	}
	var startErrs []*server
	for range starting {
		r := <-results
		if r.err != nil {
			r.srv.fail(r.err)
			startErrs = append(startErrs, r.srv)
		}
	}
	for _, srv := range startErrs {
		s.addNotice(srv.failureNotice())
	}
	if err := ctx.Err(); err != nil {
		s.Close()
		return nil, fmt.Errorf("mcphost: connect: %w", err)
	}
	var pending []subject
	for _, name := range s.order {
		srv := s.servers[name]
		if srv.running() {
			pending = append(pending, s.publish(srv, srv.lastList, ls)...)
			pending = append(pending, s.publishTexts(srv, ls)...)
		}
	}
	s.recordFirstSight(pending)
	return s, nil
}

// checkStateReach refuses a state directory that a server could open. A
// server that can only read it could still flock its lock file and so hang
// every review (flock needs no write access), and read the reviewed
// definitions; one that can write it could approve itself.
func (s *Session) checkStateReach() error {
	var errs []error
	for _, d := range []struct{ what, dir, harm, option string }{
		{"state directory", s.opts.StateDir, "the server could hold the state's lock, or read or change the reviews", "DefaultStateDir"},
		{"directory of the servers' private homes", s.opts.HomeDir, "the server could read or change what other servers keep in their homes", "Options.HomeDir"},
	} {
		dir := d.dir
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			dir = real
		}
		for _, name := range s.order {
			srv := s.servers[name]
			// A grant that cannot be expanded fails that server's start.
			key, _ := srv.reaches(dir)
			switch {
			case key == "worktree":
				return fmt.Errorf("mcphost: %w: the %s %s is inside the worktree %s, which servers can read and write; use a directory outside it (the default of %s is)",
					ErrStateReachable, d.what, dir, s.worktree, d.option)
			case key != "":
				errs = append(errs, fmt.Errorf("mcphost: %w: %w", ErrStateReachable, &ConfigError{Table: "mcp." + name, Key: key, Msg: fmt.Sprintf(
					"it grants the server the %s %s: %s; narrow the grant or use a directory outside it", d.what, dir, d.harm)}))
			}
		}
	}
	return errors.Join(errs...)
}

// loadPins reads the session's reviews.
func (s *Session) loadPins(ctx context.Context) loadedState {
	v, err := s.reviews.load(ctx)
	return loadedState{v: v, err: err}
}

// recordFirstSight records first-seen subjects (trust on first use) in
// one update, so parallel starts do not queue on the state file's lock. A
// server seen for the first time also gets its set of tool names
// recorded. A first sight that cannot be recorded, or that loses to a
// review recorded meanwhile, is not trusted this session.
func (s *Session) recordFirstSight(recs []subject) {
	if len(recs) == 0 || s.opts.ReadOnlyState || !s.reviews.trustsFirstSight() {
		return
	}
	names := map[string][]string{}
	for _, r := range recs {
		if _, ok := names[r.server]; !ok {
			names[r.server] = s.toolNames(r.server)
		}
	}
	conflicts, err := s.reviews.record(context.Background(), recs, true, names)
	if err != nil {
		// Fail closed: a first sight that is not recorded cannot catch a
		// later change, so these are not trusted this session.
		s.addNotice(fmt.Sprintf("could not record first-seen tools as reviewed, so they are held from the model: %v", err))
		conflicts = recs
	}
	var tools []subject
	for _, r := range conflicts {
		switch r.kind {
		case kindTool:
			tools = append(tools, r)
		case kindInstructions:
			// Not recorded, so a later change could not be caught:
			// withheld this session.
			srv := s.servers[r.server]
			srv.mu.Lock()
			if srv.ins.digest == r.digest {
				srv.ins.pin = PinUnpinned
			}
			srv.mu.Unlock()
		case kindPrompt:
			s.distrustPrompt(r)
		}
	}
	s.distrust(tools)
}

// distrust holds first-seen tools whose first sight was not recorded.
func (s *Session) distrust(recs []subject) {
	if len(recs) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, e := range s.tools {
		if e.Pin != PinNew {
			continue
		}
		for _, r := range recs {
			if r.server == e.Server && r.name == e.Tool.Tool && r.digest == e.Digest {
				upd := *e
				upd.Decision, upd.Pin, upd.Withheld = Approval, PinUnpinned, true
				s.tools[name] = &upd
			}
		}
	}
}

// publish turns a server's listed tools into the session's tools, applying
// policy and pins, and returns the first-seen allowed tools to record.
func (s *Session) publish(srv *server, raws []json.RawMessage, ls loadedState) []subject {
	srv.pubMu.Lock()
	srv.mu.Lock()
	srv.lastList = raws
	srv.mu.Unlock()
	entries, recs, notices := srv.build(raws, ls)
	s.swapTools(srv, entries)
	srv.pubMu.Unlock()
	for _, n := range notices {
		s.addNotice(n)
	}
	return recs
}

// swapTools makes entries the session's tools of srv.
func (s *Session) swapTools(srv *server, entries []*toolEntry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, e := range s.tools {
		if e.srv == srv {
			delete(s.tools, name)
		}
	}
	for _, e := range entries {
		s.tools[e.Name] = e
	}
}

func (s *Session) addNotice(n string) {
	s.logger.Warn("mcphost notice", "notice", n)
	s.mu.Lock()
	kept := len(s.notices) < maxNotices
	if kept {
		s.notices = append(s.notices, n)
	} else if len(s.notices) == maxNotices {
		s.notices = append(s.notices, "more notices were dropped")
	}
	s.mu.Unlock()
	if kept && s.opts.OnNotice != nil {
		s.opts.OnNotice(n)
	}
}

// maxNotices bounds the notices a session keeps, so a server that keeps
// changing cannot grow the host's memory through them.
const maxNotices = 1000

// Notices returns what a person should know about the session: servers that
// did not start, tools skipped or changed, an unreadable state file.
func (s *Session) Notices() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Clone(s.notices)
}

// Tools returns the tools to offer the model: every tool whose decision is
// Allow or Approval and that is not Withheld, sorted by name. Denied and
// withheld tools are left out (see AllTools). The result is a copy the
// caller owns.
func (s *Session) Tools() []Tool {
	return s.collect((*Tool).Offered)
}

// AllTools returns every tool of every running server, denied and withheld
// ones included,
// sorted by name: what `mcphost list` shows a person.
func (s *Session) AllTools() []Tool {
	return s.collect(func(*Tool) bool { return true })
}

func (s *Session) collect(keep func(*Tool) bool) []Tool {
	s.mu.RLock()
	out := make([]Tool, 0, len(s.tools))
	for _, e := range s.tools {
		if keep(&e.Tool) {
			out = append(out, e.Tool.clone())
		}
	}
	s.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (t Tool) clone() Tool {
	t.Schema = slices.Clone(t.Schema)
	t.Unchecked = slices.Clone(t.Unchecked)
	if t.Schemas != nil {
		m := make(map[string]json.RawMessage, len(t.Schemas))
		for k, v := range t.Schemas {
			m[k] = slices.Clone(v)
		}
		t.Schemas = m
	}
	t.Fields = slices.Clone(t.Fields)
	t.Changed = slices.Clone(t.Changed)
	t.Annotations = slices.Clone(t.Annotations)
	t.OutputSchema = slices.Clone(t.OutputSchema)
	t.Definition = slices.Clone(t.Definition)
	if t.StrictProblems != nil {
		m := make(map[string]string, len(t.StrictProblems))
		for k, v := range t.StrictProblems {
			m[k] = v
		}
		t.StrictProblems = m
	}
	return t
}

// Tool returns one tool by model name, denied tools included.
func (s *Session) Tool(name string) (Tool, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, ok := s.tools[name]
	if !ok {
		return Tool{}, false
	}
	return e.Tool.clone(), true
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
		info.ProgramChanged = slices.Clone(srv.programDrift)
		out = append(out, info)
	}
	return out
}

// StateError returns why the reviewed-tools state file (or, with
// Options.LockFile, the lock: unreadable, or ErrLockUntrusted) could not
// be read when the session connected, or nil. While it is non-nil no allowed tool is
// trusted: each needs approval. The file is never reset; a person fixes it
// or moves it aside.
func (s *Session) StateError() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.stateErr
}

// Worktree returns the session's worktree as an absolute path.
func (s *Session) Worktree() string { return s.worktree }

// StateDir returns the directory of the session's state file.
func (s *Session) StateDir() string { return s.opts.StateDir }

// Close ends every server and every process it started, in parallel, and
// removes their private temporary directories. It waits at most about
// CloseGrace plus the time to kill. Calls in flight fail with ErrServerGone
// or ErrClosed. Close is idempotent.
func (s *Session) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	var wg sync.WaitGroup
	errs := make([]error, len(s.order))
	for i, name := range s.order {
		srv := s.servers[name]
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A Restart in progress finishes first, so its new process
			// is closed here rather than left running.
			srv.restartMu.Lock()
			defer srv.restartMu.Unlock()
			errs[i] = srv.close(ServerClosed)
		}()
	}
	wg.Wait()
	s.bg.Wait()
	return errors.Join(errs...)
}

func (s *Session) isClosed() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.closed
}

// Restart stops a server (if it runs) and starts it again, with discovery
// and pinning as at Connect. A restarted server's changed tools need
// approval like any other change. OnToolsChanged is called afterwards.
func (s *Session) Restart(ctx context.Context, server string) error {
	srv, ok := s.servers[server]
	if !ok {
		return fmt.Errorf("mcphost: restart: %w: no server named %q", ErrUnknownTool, printable(server, 80))
	}
	srv.restartMu.Lock()
	defer srv.restartMu.Unlock()
	if s.isClosed() {
		return fmt.Errorf("mcphost: restart %s: %w", server, ErrClosed)
	}
	_ = srv.close(ServerClosed)
	s.mu.Lock()
	for name, e := range s.tools {
		if e.srv == srv {
			delete(s.tools, name)
		}
	}
	s.mu.Unlock()
	if err := srv.start(ctx); err != nil {
		srv.fail(err)
		s.addNotice(srv.failureNotice())
		return fmt.Errorf("mcphost: restart %s: %w", server, err)
	}
	ls := s.loadPins(ctx)
	recs := s.publish(srv, srv.lastList, ls)
	recs = append(recs, s.publishTexts(srv, ls)...)
	s.recordFirstSight(recs)
	if s.opts.OnToolsChanged != nil {
		s.opts.OnToolsChanged(server)
	}
	return nil
}

// toolNames lists the names (as the server sent them) of a server's
// published tools that are not denied, sorted: the tools a first review of
// the server covers. A denied tool never reaches the model, so nobody
// reviewed it: once the config stops denying it, it is new.
func (s *Session) toolNames(server string) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	names := []string{}
	for _, e := range s.tools {
		if e.Server == server && e.srv.cfg.policy(e.Tool.Tool) != Deny {
			names = append(names, e.Tool.Tool)
		}
	}
	sort.Strings(names)
	return names
}

// describe makes a short human description of changed fields.
func describe(fields []string) string {
	if len(fields) == 0 {
		return "definition"
	}
	return strings.Join(fields, ", ")
}
