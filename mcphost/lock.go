package mcphost

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcphost/mcphost/pin"
	"github.com/mcphost/mcphost/sandbox"
)

// ErrLockUntrusted means a lock file lies where a server could have written
// it (the worktree, a write grant, anywhere for an unconfined server) and
// nothing vouches for its content: it is not the version committed in git,
// and its digest is not the one this person's mcphost last wrote or
// accepted. Nothing in it is trusted, and nothing is recorded into it.
var ErrLockUntrusted = errors.New("lock file not trusted")

// gitTimeout bounds the git command that reads a lock's committed version.
const gitTimeout = 10 * time.Second

// maxPackageLock bounds how much of a package-lock.json is read to find a
// package's version.
const maxPackageLock = 64 << 20

// lockFile is a lock file with what decides whether its content is trusted.
type lockFile struct {
	path  string // absolute
	store *pin.LockStore
	state *pin.Store
	// writable is the path a server could write that holds the lock, ""
	// if none: then its content is trusted as it is.
	writable string
	// noGit says why the committed version proves nothing ("" if it does):
	// a server could write the git directory.
	noGit string
	mu    sync.Mutex
	seen  map[string]bool // content digests found trusted already
}

func newLockFile(path string, servers []ServerConfig, opts Options) (*lockFile, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("mcphost: lock file: %w", err)
	}
	stateDir := opts.StateDir
	if stateDir == "" {
		wt := opts.Worktree
		if wt == "" {
			wt = "."
		}
		if wt, err = filepath.Abs(wt); err == nil {
			wt, err = filepath.EvalSymlinks(wt)
		}
		if err != nil {
			return nil, fmt.Errorf("mcphost: worktree: %w", err)
		}
		if stateDir, err = DefaultStateDir(wt); err != nil {
			return nil, fmt.Errorf("mcphost: %w", err)
		}
	}
	lf := &lockFile{path: abs, store: &pin.LockStore{Path: abs, LockTimeout: opts.LockTimeout},
		state: &pin.Store{Dir: stateDir, LockTimeout: opts.LockTimeout}, seen: map[string]bool{}}
	roots, err := WritablePaths(servers, opts)
	if err != nil {
		return nil, err
	}
	canon := abs
	if d, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		canon = filepath.Join(d, filepath.Base(abs))
	}
	for _, r := range roots {
		if under(abs, r) || under(canon, r) {
			lf.writable = r
			break
		}
	}
	for _, sc := range servers {
		switch {
		case sc.Unconfined:
			lf.writable = "every path you can write ([mcp." + sc.Name + "] sandbox = \"off\")"
			lf.noGit = "[mcp." + sc.Name + "] runs unconfined (sandbox = \"off\") and could have written the git directory"
		case sc.WritableGit && lf.noGit == "":
			lf.noGit = "[mcp." + sc.Name + "] has git = \"write\" and could have committed it"
		}
	}
	return lf, nil
}

// trust returns nil if data, the lock's current content (nil: no file), may
// be built upon, and otherwise an error wrapping ErrLockUntrusted that says
// why and what to do.
func (lf *lockFile) trust(ctx context.Context, data []byte) error {
	if data == nil || lf.writable == "" {
		return nil
	}
	d := pin.DigestBytes(data)
	lf.mu.Lock()
	ok := lf.seen[d]
	lf.mu.Unlock()
	if ok {
		return nil
	}
	st, err := lf.state.Load()
	if err != nil {
		return fmt.Errorf("mcphost: %w: %s lies in %s, where servers can write, and the record of the locks you trust cannot be read: %w", ErrLockUntrusted, lf.path, lf.writable, err)
	}
	if st.Locks[lf.path] == d {
		lf.remember(d)
		return nil
	}
	why := lf.noGit
	if why == "" {
		committed, err := committedBlob(ctx, lf.path)
		switch {
		case err != nil:
			why = err.Error()
		case bytes.Equal(committed, data):
			lf.remember(d)
			return nil
		default:
			why = "it differs from the version committed in git (HEAD)"
		}
	}
	return fmt.Errorf("mcphost: %w: %s lies in %s, where servers can write, and is neither the version committed in git (%s) nor one you recorded: "+
		"review it (git diff -- %s), then commit it, or accept it as it is with: mcphost approve -lock %s",
		ErrLockUntrusted, lf.path, lf.writable, why, lf.path, lf.path)
}

func (lf *lockFile) remember(d string) {
	lf.mu.Lock()
	lf.seen[d] = true
	lf.mu.Unlock()
}

// committedBlob returns the content of path in the git commit HEAD of the
// repository holding it, through `git cat-file blob`, which runs no hook,
// filter or fsmonitor. It is bounded in time (gitTimeout) and size.
func committedBlob(ctx context.Context, path string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "--no-optional-locks", "-c", "core.fsmonitor=false",
		"cat-file", "blob", "HEAD:./"+filepath.Base(path))
	cmd.Dir = filepath.Dir(path)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
	var stderr bytes.Buffer
	cmd.Stderr = &limitedWriter{w: &stderr, n: 4096}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("git cannot run: %v", err)
	}
	data, rerr := io.ReadAll(io.LimitReader(out, 256<<20))
	werr := cmd.Wait()
	if rerr != nil {
		return nil, fmt.Errorf("reading it from git: %v", rerr)
	}
	if werr != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = werr.Error()
		}
		return nil, fmt.Errorf("git: %s", pin.Visible(msg))
	}
	return data, nil
}

type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(len(p), l.n)
		l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}

// load reads the lock and checks that its content is trusted.
func (lf *lockFile) load(ctx context.Context) (*pin.Lock, error) {
	l, data, err := lf.store.Load()
	if err != nil {
		return nil, fmt.Errorf("mcphost: %w", err)
	}
	if err := lf.trust(ctx, data); err != nil {
		return nil, err
	}
	return l, nil
}

// update changes the lock under its flock, if its current content is
// trusted, and records the digest of what it wrote in the person's state,
// so that their next session trusts it before it is committed.
func (lf *lockFile) update(ctx context.Context, fn func(*pin.Lock) error) error {
	out, err := lf.store.Update(func(cur []byte) error { return lf.trust(ctx, cur) }, fn)
	if err != nil {
		return err
	}
	d := pin.DigestBytes(out)
	lf.remember(d)
	if err := lf.accept(d); err != nil {
		return fmt.Errorf("mcphost: %s was written, but recording it as yours failed, so it is not trusted until it is committed or accepted (mcphost approve -lock %s): %w", lf.path, lf.path, err)
	}
	return nil
}

// accept records digest d as the trusted content of the lock.
func (lf *lockFile) accept(d string) error {
	if lf.writable == "" {
		return nil
	}
	return lf.state.Update(func(st *pin.State) error {
		st.Locks[lf.path] = d
		return nil
	})
}

// LoadLock reads the lock file at path for a session of servers under opts
// (Connect creates a missing one, empty, before its servers start) and
// returns it if its content is trusted: it lies outside every path a
// server could write, or it is the version committed in git (unless a
// server could write the git directory), or it is the content this
// person's mcphost last wrote or accepted (recorded in the state
// directory). A missing file is an empty lock. Otherwise the error wraps
// ErrLockUntrusted, or pin.ErrCorrupt or pin.ErrFutureVersion, and
// says what to do.
func LoadLock(ctx context.Context, path string, servers []ServerConfig, opts Options) (*pin.Lock, error) {
	lf, err := newLockFile(path, servers, opts)
	if err != nil {
		return nil, err
	}
	return lf.load(ctx)
}

// UpdateLock changes the lock file at path with fn, as Session.Approve
// does for tools: under the lock's flock (at most opts.LockTimeout), only if
// its current content is trusted (see LoadLock; else an error wrapping
// ErrLockUntrusted and nothing written), atomically, and recording the
// digest of the new content in the state directory so that it is trusted
// before it is committed. fn sees the lock as it is on disk.
func UpdateLock(ctx context.Context, path string, servers []ServerConfig, opts Options, fn func(*pin.Lock) error) error {
	lf, err := newLockFile(path, servers, opts)
	if err != nil {
		return err
	}
	return lf.update(ctx, fn)
}

// AcceptLock records data, the content of the lock file at path that a
// person reviewed, as trusted by them (its digest, in the state directory)
// whatever its provenance: for a lock they cannot or will not commit. The
// file itself is not read: if it changes after the person saw it, the
// changed content is not trusted. data must parse as a lock.
func AcceptLock(path string, data []byte, servers []ServerConfig, opts Options) error {
	if _, err := pin.ParseLock(data); err != nil {
		return fmt.Errorf("mcphost: %s: %w", path, err)
	}
	lf, err := newLockFile(path, servers, opts)
	if err != nil {
		return err
	}
	if err := lf.accept(pin.DigestBytes(data)); err != nil {
		return fmt.Errorf("mcphost: %w", err)
	}
	return nil
}

// ProgramIdentity returns what identifies the program a server's table
// runs, as a lock records it: the program (the command's first word as
// the config gives it) with the digest of its file; the "#!" interpreters
// that lie in the worktree, by path relative to it, with their digests; the
// script a known interpreter runs (as the config gives it) with its digest;
// and, for the file that holds the server's code (the script, else the
// program), the npm package and version a package-lock.json beside the
// node_modules it lies in shows. A program that is a known interpreter
// running a script, and lies outside the worktree, gets no digest: it is a
// system program whose build differs between machines, and the script is
// the server. Errors are those of sandbox.Programs.
func ProgramIdentity(sc ServerConfig, opts Options) ([]pin.ProgramFile, error) {
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
	return programIdentity(sc, wt, opts.HostEnv)
}

func programIdentity(sc ServerConfig, worktree string, hostEnv []string) ([]pin.ProgramFile, error) {
	sc = sc.withDefaults()
	if len(sc.Command) == 0 {
		return nil, fmt.Errorf("mcphost: [mcp.%s] command is empty", sc.Name)
	}
	argv := sc.Command
	if strings.ContainsRune(argv[0], '/') && !filepath.IsAbs(argv[0]) {
		argv = append([]string{filepath.Join(worktree, argv[0])}, argv[1:]...)
	}
	progs, err := sandbox.Programs(sandbox.Config{Name: sc.Name, Argv: argv, Worktree: worktree, Env: sc.Env, HostEnv: hostEnv})
	if err != nil {
		return nil, err
	}
	script := -1
	if len(progs) > 1 {
		last := progs[len(progs)-1]
		for i := 1; i < len(argv); i++ {
			p := argv[i]
			if !filepath.IsAbs(p) {
				p = filepath.Join(worktree, p)
			}
			if c, err := filepath.EvalSymlinks(p); err == nil && c == last {
				script = i
				break
			}
		}
	}
	prog := pin.ProgramFile{Role: pin.RoleProgram, Path: sc.Command[0]}
	if script < 0 || under(progs[0], worktree) {
		if prog.Digest, err = pin.DigestFile(progs[0]); err != nil {
			return nil, fmt.Errorf("mcphost: [mcp.%s] command: %w", sc.Name, err)
		}
	}
	if script < 0 {
		prog.Package = npmPackage(progs[0])
	}
	out := []pin.ProgramFile{prog}
	chain := progs[1:]
	if script >= 0 {
		chain = progs[1 : len(progs)-1]
	}
	for _, p := range chain {
		if !under(p, worktree) {
			continue
		}
		rel, _ := filepath.Rel(worktree, p)
		d, err := pin.DigestFile(p)
		if err != nil {
			return nil, fmt.Errorf("mcphost: [mcp.%s] interpreter %s: %w", sc.Name, p, err)
		}
		out = append(out, pin.ProgramFile{Role: pin.RoleInterpreter, Path: filepath.ToSlash(rel), Digest: d})
	}
	if script >= 0 {
		p := progs[len(progs)-1]
		d, err := pin.DigestFile(p)
		if err != nil {
			return nil, fmt.Errorf("mcphost: [mcp.%s] script %s: %w", sc.Name, p, err)
		}
		out = append(out, pin.ProgramFile{Role: pin.RoleScript, Path: sc.Command[script], Digest: d, Package: npmPackage(p)})
	}
	return out, nil
}

// npmPackage returns "name@version" of the npm package file lies in (below
// a node_modules directory), as the package-lock.json beside the first
// node_modules on its path records it, or "" if that cannot be told.
func npmPackage(file string) string {
	parts := strings.Split(filepath.ToSlash(file), "/")
	first := slices.Index(parts, "node_modules")
	if first < 0 {
		return ""
	}
	last := first
	for i := first; i < len(parts); i++ {
		if parts[i] == "node_modules" {
			last = i
		}
	}
	end := last + 2
	if last+1 < len(parts) && strings.HasPrefix(parts[last+1], "@") {
		end++
	}
	if end >= len(parts) { // the package's directory must hold file
		return ""
	}
	f, err := os.Open(filepath.FromSlash(strings.Join(parts[:first], "/") + "/package-lock.json"))
	if err != nil {
		return ""
	}
	defer f.Close()
	var pl struct {
		Packages map[string]struct {
			Version string `json:"version"`
		} `json:"packages"`
	}
	if err := json.NewDecoder(io.LimitReader(f, maxPackageLock)).Decode(&pl); err != nil {
		return ""
	}
	p, ok := pl.Packages[strings.Join(parts[first:end], "/")]
	if !ok || p.Version == "" {
		return ""
	}
	return strings.Join(parts[last+1:end], "/") + "@" + p.Version
}

// ProgramChanges describes, for a person, how a program identity differs
// from the one a lock recorded: one line per file added, removed or
// changed. It returns nil when they are the same.
func ProgramChanges(locked, current []pin.ProgramFile) []string {
	var out []string
	for i := 0; i < max(len(locked), len(current)); i++ {
		switch {
		case i >= len(locked):
			c := current[i]
			out = append(out, fmt.Sprintf("%s %s is new (%s)", c.Role, pin.Visible(c.Path), fileID(c)))
		case i >= len(current):
			o := locked[i]
			out = append(out, fmt.Sprintf("%s %s is gone (was %s)", o.Role, pin.Visible(o.Path), fileID(o)))
		case locked[i] != current[i]:
			o, c := locked[i], current[i]
			name := c.Role + " " + pin.Visible(c.Path)
			if o.Role != c.Role || o.Path != c.Path {
				name = fmt.Sprintf("%s %s (was %s %s)", c.Role, pin.Visible(c.Path), o.Role, pin.Visible(o.Path))
			}
			out = append(out, fmt.Sprintf("%s: %s, was %s", name, fileID(c), fileID(o)))
		}
	}
	return out
}

func fileID(f pin.ProgramFile) string {
	id := f.Digest
	if id == "" {
		id = "no digest"
	}
	if f.Package != "" {
		id = pin.Visible(f.Package) + " " + id
	}
	return id
}

// lockView is the lock as the pins of the servers named: a tool is
// reviewed only if the lock holds it, so every server has a ServerEntry
// (a server not in the lock has an empty one: nothing of it is reviewed).
func lockView(l *pin.Lock, servers []string) *pin.State {
	st := &pin.State{Version: pin.FormatVersion, Tools: map[string]pin.Entry{}, Servers: map[string]pin.ServerEntry{}, Tables: map[string]pin.Entry{}}
	for _, name := range servers {
		ls := l.Servers[name]
		names := make([]string, 0, len(ls.Tools))
		for tool, e := range ls.Tools {
			names = append(names, tool)
			st.Tools[pin.Key(name, tool)] = pin.Entry{Digest: e.Digest, Definition: e.Definition}
		}
		slices.Sort(names)
		st.Servers[name] = pin.ServerEntry{Tools: names}
	}
	return st
}
