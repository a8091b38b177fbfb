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
	"unicode/utf8"

	"github.com/mcphost/mcphost/pin"
)

// Version is mcphost's version, sent to servers in initialize.
const Version = "0.1.0"

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
	// programWritable are the paths programIdentity took as writable at
	// Connect (lock mode), for Restart's check of the program.
	programWritable []string
	// gitless are the writable roots in no repository where this session
	// runs servers from gitlessStart on, as recorded (recordGitless), and
	// gitlessHeld those the record held already at Connect, which Close
	// records if the record no longer holds them.
	gitless, gitlessHeld []string
	gitlessStart         int64
	// config is the resolved path of the config the servers' tables come
	// from ("" if unknown), and configWritable the path a server could
	// write that holds it ("" if none): then its tables start only as
	// reviewed.
	config, configWritable string
	// flags are the mcphost command's flags that find this session
	// (cliFlags), for the commands notices suggest.
	flags   string
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
// ServerConfig, a worktree or write grant in no git repository where it
// cannot record that servers run (gitless.go), or ctx ending. ctx bounds Connect
// itself, not the session's life; each server's start is also bounded by its
// StartupTimeout. The caller must Close the session.
func Connect(ctx context.Context, servers []ServerConfig, opts Options) (_ *Session, err error) {
	s := &Session{opts: opts, servers: map[string]*server{}, tools: map[string]*toolEntry{}}
	tr := newPhaseTrace("session connect", "")
	defer func() {
		result := "ok"
		if err != nil {
			result = "failed"
		}
		tr.print(result)
	}()
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
	wt, err = filepath.Abs(wt)
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
		if err := validServerName(sc.Name); err != nil {
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
		writable, err := writablePaths(configs, lo)
		if err != nil {
			return nil, err
		}
		s.programWritable = writable
		for _, name := range s.order {
			srv := s.servers[name]
			// A program that cannot be found fails its start, saying why.
			srv.program, _ = programIdentity(srv.cfg, wt, s.opts.HostEnv, writable, s.opts.StateDir)
		}
		s.reviews = &lockStore{lf: s.lock}
	} else {
		s.reviews = &stateStore{st: &pin.Store{Dir: s.opts.StateDir, LockTimeout: s.opts.LockTimeout}, config: s.config}
	}
	tr.mark("setup")
	s.flags = cliFlags(opts)
	if outer := nestedIn(wt, wt); outer != "" {
		// A worktree inside a repository has no .git of its own for the
		// sandbox to protect, so a server can make one; git run in the
		// worktree then uses it.
		s.addNotice(fmt.Sprintf("the worktree %s is a repository of its own (%s/.git) inside the repository at %s: a server may have made it with git init, and git run in the worktree uses it, its hooks and core.fsmonitor included; remove %s/.git unless you made it", wt, wt, outer, wt))
	}
	if s.protect, err = s.protectPaths(); err != nil {
		return nil, err
	}
	tr.mark("protect")

	// The writable roots in no repository (the worktree, write grants):
	// say, where no server can reach, that servers ran there from now (see
	// gitless.go). Without the record, a repository a server makes there
	// could later vouch for a lock committed in it: no server starts. A
	// root the record holds already (or a directory that holds it) adds
	// nothing: what it says is that a repository there vouches for
	// nothing, which a window more does not change, and the record stays
	// small however many sessions run there. (If the person removes the
	// record meanwhile, Close records this session's window.)
	start := time.Now().UnixNano()
	for _, root := range s.gitlessCandidates() {
		if !inNoRepository(root) {
			continue
		}
		if gitlessHeld(s.opts.StateDir, root) {
			s.gitlessHeld = append(s.gitlessHeld, root)
			continue
		}
		if err := recordGitless(s.opts.StateDir, gitlessEvent{Worktree: root, Start: start}); err != nil {
			return nil, fmt.Errorf("mcphost: %s, which servers can write, is in no git repository, and recording in %s that servers run there failed (%w), so that a repository one of them made there could later vouch for a lock; make that directory writable, or work in a repository", root, s.opts.StateDir, err)
		}
		s.gitless = append(s.gitless, root)
	}
	s.gitlessStart = start
	tr.mark("gitless")

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
			s.servers[name].setDrift(lv.l)
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
	tr.mark("servers")
	var pending []subject
	for _, name := range s.order {
		srv := s.servers[name]
		if srv.running() {
			pending = append(pending, s.publish(srv, srv.lastList, ls)...)
			pending = append(pending, s.publishTexts(srv, ls)...)
		}
	}
	s.recordFirstSight(pending)
	tr.mark("publish")
	return s, nil
}

// sameProgram, with a lock, says why srv may not be restarted when its
// program is not the one identified at Connect: the session's decisions
// (the lock's record compared with that identity) would otherwise stand
// for a program nobody compared. A new session compares the new one.
func (s *Session) sameProgram(srv *server) error {
	if s.lock == nil {
		return nil
	}
	now, err := programIdentity(srv.cfg, s.worktree, s.opts.HostEnv, s.programWritable, s.opts.StateDir)
	if err != nil {
		return fmt.Errorf("its program cannot be identified now (%w), so it cannot be shown to be the one this session compared with the lock; start a new session", err)
	}
	if changes := programChanges(srv.program, now); len(changes) > 0 {
		return fmt.Errorf("its program changed since the session started (%s); a new session compares it with the lock, and `mcphost approve` reviews it", strings.Join(changes, "; "))
	}
	return nil
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

func (s *Session) addNotice(n string) {
	if len(n) > maxNoticeLen {
		// Server text in a notice is cut where it comes in; this bounds
		// whatever was not, at a rune boundary.
		cut := maxNoticeLen
		for cut > 0 && !utf8.RuneStart(n[cut]) {
			cut--
		}
		n = n[:cut] + "…"
	}
	s.logger.Warn("mcphost notice", "notice", n)
	s.mu.Lock()
	kept := len(s.notices) < maxNotices
	if kept {
		s.notices = append(s.notices, n)
	} else if len(s.notices) == maxNotices {
		n = "more notices were dropped"
		s.notices = append(s.notices, n)
		kept = true // OnNotice hears of it too
	}
	s.mu.Unlock()
	if kept && s.opts.OnNotice != nil {
		s.opts.OnNotice(n)
	}
}

// maxNotices bounds the notices a session keeps, so a server that keeps
// changing cannot grow the host's memory through them, and maxNoticeLen
// each one's length in bytes (the longest mcphost writes, with a failed
// server's stderr, is about 5 KiB).
const (
	maxNotices   = 1000
	maxNoticeLen = 16 << 10
)

// Notices returns what a person should know about the session: servers that
// did not start, tools skipped or changed, an unreadable state file.
func (s *Session) Notices() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Clone(s.notices)
}

// StateError returns why the reviewed-tools state file (or, with
// Options.LockFile, the lock: unreadable, or ErrLockUntrusted) could not
// be read when the session connected, or nil. While it is non-nil no review
// is trusted: every tool is held from the model. The file is never reset;
// a person fixes it or moves it aside.
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
	tr := newPhaseTrace("session close", "")
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
	tr.mark("servers")
	// Its servers are gone: what is made there from now is not theirs.
	end := time.Now().UnixNano()
	for _, root := range s.gitless {
		if err := recordGitless(s.opts.StateDir, gitlessEvent{Worktree: root, Start: s.gitlessStart, End: end}); err != nil {
			errs = append(errs, fmt.Errorf("mcphost: recording the end of the servers' run in %s, which is in no repository: %w", root, err))
		}
	}
	for _, root := range s.gitlessHeld {
		// Removed while this session's servers ran (the person made a
		// repository there and re-trusted it): they could have changed
		// it, so the record says so again.
		if gitlessHeld(s.opts.StateDir, root) {
			continue
		}
		if err := recordGitless(s.opts.StateDir, gitlessEvent{Worktree: root, Start: s.gitlessStart, End: end}); err != nil {
			errs = append(errs, fmt.Errorf("mcphost: recording the servers' run in %s, which is in no repository: %w", root, err))
		}
	}
	tr.mark("records")
	err := errors.Join(errs...)
	if err != nil {
		tr.print("failed")
	} else {
		tr.print("closed")
	}
	return err
}

func (s *Session) isClosed() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.closed
}

// Restart stops a server (if it runs) and starts it again, with discovery
// and judging as at Connect (its table too: one that needs review keeps it
// from starting). A restarted server's changed tools are held like any
// other change. With a lock, it fails, saying so, when the server's
// program is not the one identified at Connect: a new session compares it.
// OnToolsChanged is called afterwards.
func (s *Session) Restart(ctx context.Context, server string) error {
	srv, ok := s.servers[server]
	if !ok {
		return fmt.Errorf("mcphost: restart: %w: no server named %q", ErrUnknownServer, printable(server, 80))
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
	ls := s.loadPins(ctx)
	if s.holdTable(srv, ls) {
		srv.mu.Lock()
		err := srv.err
		srv.mu.Unlock()
		return fmt.Errorf("mcphost: restart %s: %w", server, err)
	}
	if err := s.sameProgram(srv); err != nil {
		srv.fail(err)
		s.addNotice(srv.failureNotice())
		return fmt.Errorf("mcphost: restart %s: %w", server, err)
	}
	if err := srv.start(ctx); err != nil {
		srv.fail(err)
		s.addNotice(srv.failureNotice())
		return fmt.Errorf("mcphost: restart %s: %w", server, err)
	}
	recs := s.publish(srv, srv.lastList, ls)
	recs = append(recs, s.publishTexts(srv, ls)...)
	s.recordFirstSight(recs)
	if s.opts.OnToolsChanged != nil {
		s.opts.OnToolsChanged(server)
	}
	return nil
}
