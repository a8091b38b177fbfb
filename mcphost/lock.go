package mcphost

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcphost/mcphost/internal/hostfile"
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
	// worktree is the session's worktree: its repository is the only one
	// that can vouch for the lock.
	worktree string
	mu       sync.Mutex
	seen     map[string]bool // content digests found trusted already
}

func newLockFile(path string, servers []ServerConfig, opts Options) (*lockFile, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("mcphost: lock file: %w", err)
	}
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
	stateDir := opts.StateDir
	if stateDir == "" {
		if stateDir, err = DefaultStateDir(wt); err != nil {
			return nil, fmt.Errorf("mcphost: %w", err)
		}
	}
	lf := &lockFile{path: abs, worktree: wt, store: &pin.LockStore{Path: abs, LockTimeout: opts.LockTimeout},
		state: &pin.Store{Dir: stateDir, LockTimeout: opts.LockTimeout}, seen: map[string]bool{}}
	roots, err := writablePaths(servers, opts)
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
		committed, err := committedBlob(ctx, lf.worktree, lf.path)
		switch {
		case err != nil:
			why = err.Error()
		case bytes.Equal(committed, data):
			lf.remember(d)
			return nil
		default:
			why = "it differs from the version committed in the worktree's repository (HEAD)"
		}
	}
	return fmt.Errorf("mcphost: %w: %s lies in %s, where servers can write, and is neither the version committed in the worktree's repository (%s) nor one you recorded: "+
		"review it whole, or as a diff against its committed version, and trust it as it is with: mcphost approve -lock %s (then commit it)",
		ErrLockUntrusted, lf.path, lf.writable, why, shellQuote(lf.path))
}

func (lf *lockFile) remember(d string) {
	lf.mu.Lock()
	lf.seen[d] = true
	lf.mu.Unlock()
}

// committedBlob returns the content of the lock at path in the commit HEAD
// of the worktree's own repository: the one git finds from the worktree,
// whose git directory the sandbox keeps read-only to every server. A
// repository a server made (git init in a directory of the worktree) is
// not asked: the lock must be committed at its path relative to the top
// of the worktree's repository. git runs without the environment's GIT_
// variables, through commands that run no hook, filter or fsmonitor,
// bounded in time (gitTimeout) and size.
func committedBlob(ctx context.Context, worktree, path string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	out, err := runGit(ctx, worktree, 4096, "rev-parse", "--path-format=absolute", "--git-dir", "--show-toplevel")
	if err != nil {
		return nil, fmt.Errorf("the worktree %s is in no git repository git can read (%v)", worktree, err)
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) != 2 {
		return nil, fmt.Errorf("the worktree %s is in no git repository with a work tree", worktree)
	}
	gitDir, top := lines[0], lines[1]
	canon := path
	if d, err := filepath.EvalSymlinks(filepath.Dir(path)); err == nil {
		canon = filepath.Join(d, filepath.Base(path))
	}
	rel, err := filepath.Rel(top, canon)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return nil, fmt.Errorf("it lies outside the worktree's repository %s", top)
	}
	return runGit(ctx, top, 256<<20, "--git-dir="+gitDir, "--work-tree="+top, "cat-file", "blob", "HEAD:"+filepath.ToSlash(rel))
}

// runGit runs git in dir and returns at most limit bytes of its output.
func runGit(ctx context.Context, dir string, limit int64, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"--no-optional-locks", "-c", "core.fsmonitor=false"}, args...)...)
	cmd.Dir = dir
	// GIT_DIR and its kin in the person's environment would name another
	// repository than the one the sandbox protects.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "GIT_TERMINAL_PROMPT=0")
	var stderr bytes.Buffer
	cmd.Stderr = &limitedWriter{w: &stderr, n: 4096}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("git cannot run: %v", err)
	}
	data, rerr := io.ReadAll(io.LimitReader(out, limit))
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

// LockReview is a lock file's content as a person reviews it before
// trusting it as it is (ReviewLock): everything in it that differs from
// the version committed in the worktree's repository, or, with nothing
// committed, all of it.
type LockReview struct {
	// Path is the lock file's absolute path; Digest the digest of the
	// content shown (pin.DigestBytes), which Accept records.
	Path   string
	Digest string
	// Against says what Text compares the content with: "the version
	// committed in the worktree's repository (HEAD)", or why there is none
	// to compare with (then Text shows everything).
	Against string
	// Text is every server of the lock with its table, program, tools,
	// instructions and prompts, each whole or as a line diff from the
	// committed version ("unchanged" lines name what is the same), ready
	// to print: every invisible or control character is a visible escape.
	Text string

	data []byte
	lf   *lockFile
}

// ReviewLock reads the lock file at path, for a session of servers under
// opts, as a person reviews it before trusting it as it is (for a lock they
// cannot or will not commit, or one a server could have written). The file
// is read as hostile input: a regular file, bounded. Its error wraps
// pin.ErrCorrupt or pin.ErrFutureVersion for content that is not a lock.
func ReviewLock(ctx context.Context, path string, servers []ServerConfig, opts Options) (*LockReview, error) {
	lf, err := newLockFile(path, servers, opts)
	if err != nil {
		return nil, err
	}
	l, data, err := lf.store.Load()
	if err != nil {
		return nil, fmt.Errorf("mcphost: %w", err)
	}
	if data == nil {
		return nil, fmt.Errorf("mcphost: %s: %w", lf.path, fs.ErrNotExist)
	}
	r := &LockReview{Path: lf.path, Digest: pin.DigestBytes(data), data: data, lf: lf}
	base := &pin.Lock{Servers: map[string]pin.LockServer{}}
	committed, err := committedBlob(ctx, lf.worktree, lf.path)
	switch {
	case err != nil:
		r.Against = "nothing: there is no committed version to compare with (" + err.Error() + "), so all of it is shown"
	default:
		if cl, err := pin.ParseLock(committed); err != nil {
			r.Against = "nothing: the committed version is not a lock this mcphost reads (" + err.Error() + "), so all of it is shown"
		} else {
			base = cl
			r.Against = "the version committed in the worktree's repository (HEAD)"
		}
	}
	var b strings.Builder
	names := slices.Sorted(maps.Keys(l.Servers))
	for name := range base.Servers {
		if _, ok := l.Servers[name]; !ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		writeLockServer(&b, name, base.Servers[name], l.Servers[name], hasKey(base.Servers, name), hasKey(l.Servers, name))
	}
	if len(names) == 0 {
		b.WriteString("(the lock holds no server)\n")
	}
	r.Text = b.String()
	return r, nil
}

func hasKey[V any](m map[string]V, k string) bool {
	_, ok := m[k]
	return ok
}

// writeLockServer writes one server of a lock as it differs from before.
func writeLockServer(b *strings.Builder, name string, before, now pin.LockServer, was, is bool) {
	fmt.Fprintf(b, "server %s:", pin.Visible(name))
	switch {
	case !is:
		b.WriteString(" removed from the lock\n")
		return
	case !was:
		b.WriteString(" new in the lock\n")
	default:
		b.WriteString("\n")
	}
	entry := func(what string, old, cur *pin.LockEntry) {
		switch {
		case cur == nil && old == nil:
		case cur == nil:
			fmt.Fprintf(b, "  %s: removed\n", what)
		case old != nil && old.Digest == cur.Digest:
			fmt.Fprintf(b, "  %s: unchanged\n", what)
		default:
			from := json.RawMessage(`{}`)
			how := "new, whole"
			if old != nil {
				from, how = old.Definition, "changed"
			}
			fmt.Fprintf(b, "  %s: %s\n", what, how)
			changes, err := pin.Diff(from, cur.Definition)
			if err == nil {
				var sb strings.Builder
				if err = pin.Format(&sb, changes); err == nil {
					for _, line := range strings.SplitAfter(sb.String(), "\n") {
						if line != "" {
							b.WriteString("    " + line)
						}
					}
				}
			}
			if err != nil {
				fmt.Fprintf(b, "    (it cannot be shown: %s)\n", pin.Visible(err.Error()))
			}
		}
	}
	entry("table", before.Table, now.Table)
	if changes := programChanges(before.Program, now.Program); len(changes) > 0 || !was {
		b.WriteString("  program:\n")
		for _, f := range now.Program {
			fmt.Fprintf(b, "    %s %s %s\n", f.Role, pin.Visible(f.Path), fileID(f))
		}
		for _, c := range changes {
			if was {
				fmt.Fprintf(b, "    changed: %s\n", c)
			}
		}
	} else {
		b.WriteString("  program: unchanged\n")
	}
	ptr := func(m map[string]pin.LockEntry, k string) *pin.LockEntry {
		if e, ok := m[k]; ok {
			return &e
		}
		return nil
	}
	tools := slices.Sorted(maps.Keys(now.Tools))
	for t := range before.Tools {
		if _, ok := now.Tools[t]; !ok {
			tools = append(tools, t)
		}
	}
	slices.Sort(tools)
	for _, t := range tools {
		entry("tool "+pin.Visible(t), ptr(before.Tools, t), ptr(now.Tools, t))
	}
	entry("instructions", before.Instructions, now.Instructions)
	prompts := slices.Sorted(maps.Keys(now.Prompts))
	for p := range before.Prompts {
		if _, ok := now.Prompts[p]; !ok {
			prompts = append(prompts, p)
		}
	}
	slices.Sort(prompts)
	for _, p := range prompts {
		entry("prompt "+pin.Visible(p), ptr(before.Prompts, p), ptr(now.Prompts, p))
	}
}

// Accept records the content the review showed as trusted by this person
// (its digest, in the state directory), whatever its provenance. The file
// itself is not read again: if it changed after the review, the changed
// content is not trusted.
func (r *LockReview) Accept() error {
	if err := r.lf.accept(r.Digest); err != nil {
		return fmt.Errorf("mcphost: %w", err)
	}
	return nil
}

// programIdentity returns what identifies the program a server's table
// runs, as a lock records it: the program (the command's first word as
// the config gives it) with the digest of its file; the "#!" interpreters
// that lie in the worktree, by path relative to it, with their digests; the
// script a known interpreter runs (as the config gives it) with its digest;
// and, for the file that holds the server's code (the script, else the
// program), the npm package and version a package-lock.json beside the
// node_modules it lies in shows. A program that is a known interpreter
// running a script, and lies outside the worktree, gets no digest: it is a
// system program whose build differs between machines, and the script is
// the server. Errors are those of sandbox.Programs; worktree is absolute and resolved.
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
	// A server could have written it: a FIFO or a device there gives no
	// version, as an unreadable file does, instead of a stalled read.
	data, err := hostfile.Read(filepath.FromSlash(strings.Join(parts[:first], "/")+"/package-lock.json"), maxPackageLock)
	if err != nil {
		return ""
	}
	var pl struct {
		Packages map[string]struct {
			Version string `json:"version"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(data, &pl); err != nil {
		return ""
	}
	p, ok := pl.Packages[strings.Join(parts[first:end], "/")]
	if !ok || p.Version == "" {
		return ""
	}
	return strings.Join(parts[last+1:end], "/") + "@" + p.Version
}

// programChanges describes, for a person, how a program identity differs
// from the one a lock recorded: one line per file added, removed or
// changed. It returns nil when they are the same.
func programChanges(locked, current []pin.ProgramFile) []string {
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
