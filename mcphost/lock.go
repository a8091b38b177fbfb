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
	// that can vouch for the lock. roots are the paths servers may write.
	worktree string
	roots    []string
	// acceptCmd is the command that accepts the lock after reading it.
	acceptCmd string
	mu        sync.Mutex
	seen      map[string]bool // content digests found trusted already
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
	ao := opts
	ao.LockFile = path
	lf := &lockFile{path: abs, worktree: wt, acceptCmd: "mcphost approve" + cliFlags(ao), store: &pin.LockStore{Path: abs, LockTimeout: opts.LockTimeout},
		state: &pin.Store{Dir: stateDir, LockTimeout: opts.LockTimeout}, seen: map[string]bool{}}
	roots, err := writablePaths(servers, opts)
	if err != nil {
		return nil, err
	}
	lf.roots = roots
	// Where the lock really is: a path through a symbolic link (the
	// file's own, or a directory's) that ends in a writable path is as
	// writable as the file there.
	canon := abs
	if c, err := filepath.EvalSymlinks(abs); err == nil {
		canon = c
	} else if d, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
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
		committed, err := committedBlob(ctx, lf.worktree, lf.roots, lf.path, lf.state.Dir)
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
		"review it whole, or as a diff against its committed version, and trust it as it is with: %s (then commit it)",
		ErrLockUntrusted, lf.path, lf.writable, why, lf.acceptCmd)
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
// of the worktree's repository, and a git directory that lies where a
// server can write (roots) vouches only as the top's own ".git" directory,
// the one the sandbox keeps read-only; one a ".git" file points to there
// could have been made by a server, and so could one made at or within the
// worktree while servers ran there with no repository (madeWhileGitless,
// from the record in stateDir). git runs without the environment's GIT_
// variables, through commands that run no hook, filter or fsmonitor,
// bounded in time (gitTimeout) and size.
func committedBlob(ctx context.Context, worktree string, roots []string, path, stateDir string) ([]byte, error) {
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
	if outer := nestedIn(worktree, top); outer != "" {
		return nil, fmt.Errorf("the worktree's repository %s lies inside the repository at %s, within the worktree, where a server could have made it with git init; such a repository vouches for nothing (commit the lock in %s, or accept it)", top, outer, outer)
	}
	if real, err := filepath.EvalSymlinks(gitDir); err == nil {
		gitDir = real
	}
	own := filepath.Join(top, ".git")
	if fi, err := os.Lstat(own); err != nil || !fi.IsDir() || gitDir != own {
		for _, r := range roots {
			if under(gitDir, r) {
				return nil, fmt.Errorf("the worktree's repository %s keeps its git directory at %s, where servers can write, and not in its own .git directory; a server could have made it, so it vouches for nothing (accept the lock)", top, gitDir)
			}
			if under(top, r) && !linkedWorktree(gitDir, own) && !submoduleOf(ctx, gitDir, top) {
				// A .git file where servers can write, naming a git
				// directory elsewhere: a server could have written it, to
				// borrow another repository's commits.
				return nil, fmt.Errorf("the worktree's repository %s is a .git file that names the git directory %s, and lies where servers can write, and that git directory does not name it back (as a linked worktree's or a submodule's does); a server could have written it, so it vouches for nothing (accept the lock)", top, gitDir)
			}
		}
	}
	// Made by a person, or by a server while a worktree that holds it was
	// in no repository (gitless.go)?
	why, err := madeWhileGitless(stateDir, top)
	if err != nil {
		why = fmt.Sprintf("whether a server made it cannot be told (%v)", err)
	}
	if why != "" {
		return nil, fmt.Errorf("the worktree's repository %s vouches for nothing: %s (accept the lock; if you made that repository, remove that record)", top, why)
	}
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

// linkedWorktree reports whether gitDir, which the .git file dotGit names,
// is the administrative directory git made for a linked worktree there
// (git worktree add): its "gitdir" file names dotGit back. A server, which
// cannot write that git directory, cannot make one name its .git file.
func linkedWorktree(gitDir, dotGit string) bool {
	b, err := os.ReadFile(filepath.Join(gitDir, "gitdir"))
	if err != nil || len(b) > 4096 {
		return false
	}
	named := strings.TrimSpace(string(b))
	if c, err := filepath.EvalSymlinks(named); err == nil {
		named = c
	}
	if c, err := filepath.EvalSymlinks(dotGit); err == nil {
		dotGit = c
	}
	return named == dotGit
}

// submoduleOf reports whether gitDir is a submodule's git directory whose
// core.worktree (which its parent repository's git set, and a server
// cannot write) is top.
func submoduleOf(ctx context.Context, gitDir, top string) bool {
	out, err := runGit(ctx, gitDir, 4096, "config", "--file", filepath.Join(gitDir, "config"), "core.worktree")
	if err != nil {
		return false
	}
	wt := strings.TrimSpace(string(out))
	if !filepath.IsAbs(wt) {
		wt = filepath.Join(gitDir, wt)
	}
	if c, err := filepath.EvalSymlinks(wt); err == nil {
		wt = c
	}
	return wt == top
}

// nestedIn returns the top of the repository that holds top, the top of
// the repository git finds from the worktree, when top is the worktree or
// lies within it and has a ".git" directory of its own while a directory
// above it is in a repository too: the worktree's own repository is then
// one a server could have made (the sandbox protects the ".git" git found
// when the session started, and a worktree inside a repository has none of
// its own to protect). A ".git" file (a submodule's, a linked worktree's)
// names a git directory elsewhere and is not counted. "" otherwise.
func nestedIn(worktree, top string) string {
	if !under(top, worktree) {
		return ""
	}
	if fi, err := os.Lstat(filepath.Join(top, ".git")); err != nil || !fi.IsDir() {
		return ""
	}
	for d := filepath.Dir(top); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		if d == filepath.Dir(d) {
			return ""
		}
	}
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
		return fmt.Errorf("mcphost: %s was written, but recording it as yours failed, so it is not trusted until it is committed or accepted (%s): %w", lf.path, lf.acceptCmd, err)
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
	committed, err := committedBlob(ctx, lf.worktree, lf.roots, lf.path, lf.state.Dir)
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
	// Every name of either version, each entry as it was and as it is.
	each := func(what string, before, now map[string]pin.LockEntry) {
		names := slices.Sorted(maps.Keys(now))
		for n := range before {
			if _, ok := now[n]; !ok {
				names = append(names, n)
			}
		}
		slices.Sort(names)
		for _, n := range names {
			var old, cur *pin.LockEntry
			if e, ok := before[n]; ok {
				old = &e
			}
			if e, ok := now[n]; ok {
				cur = &e
			}
			entry(what+" "+pin.Visible(n), old, cur)
		}
	}
	each("tool", before.Tools, now.Tools)
	entry("instructions", before.Instructions, now.Instructions)
	each("prompt", before.Prompts, now.Prompts)
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
// node_modules it lies in shows (for a person to read: that file may lie
// where a server can write, so it is no part of the identity); then, for
// each package the server's code is loaded from (sandbox.ProgramClosure)
// that lies in one of writable and is kept read-only to every server, the
// digest of its whole tree (pin.RolePackage, see digestTree). A program
// that is a known interpreter running a script, and lies outside the
// worktree, gets no digest: it is a system program whose build differs
// between machines, and the script is the server. Errors are those of
// sandbox.Programs; worktree is absolute and resolved; writable are the
// paths some server may write (writablePaths); cacheDir, the state
// directory or "", keeps the file digests of package trees between calls.
func programIdentity(sc ServerConfig, worktree string, hostEnv []string, writable []string, cacheDir string) ([]pin.ProgramFile, error) {
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
	cl, err := sandbox.ProgramClosure(closureConfig(sc, argv, worktree, hostEnv))
	if err != nil {
		return nil, err
	}
	pkgs, err := packageIdentity(cl, worktree, writable, cacheDir)
	if err != nil {
		return nil, fmt.Errorf("mcphost: [mcp.%s] %w", sc.Name, err)
	}
	return append(out, pkgs...), nil
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
// changed. Its program, interpreters and script are compared in order;
// packages and their files by path, naming each file of a package that
// changed, was added or is gone when the lock lists its files, else the
// package. Package (an npm version read from a package-lock.json, which
// a server may write) is for display: the digests are the identity, and a
// line whose version alone differs says so.
// It returns nil when they are the same.
func programChanges(locked, current []pin.ProgramFile) []string {
	lockedHead, lockedPkgs := splitPackages(locked)
	head, pkgs := splitPackages(current)
	var out []string
	for i := 0; i < max(len(lockedHead), len(head)); i++ {
		switch {
		case i >= len(lockedHead):
			c := head[i]
			out = append(out, fmt.Sprintf("%s %s is new (%s)", c.Role, pin.Visible(c.Path), fileID(c)))
		case i >= len(head):
			o := lockedHead[i]
			out = append(out, fmt.Sprintf("%s %s is gone (was %s)", o.Role, pin.Visible(o.Path), fileID(o)))
		case !sameProgramFile(lockedHead[i], head[i]) || lockedHead[i].Package != head[i].Package:
			o, c := lockedHead[i], head[i]
			name := c.Role + " " + pin.Visible(c.Path)
			if o.Role != c.Role || o.Path != c.Path {
				name = fmt.Sprintf("%s %s (was %s %s)", c.Role, pin.Visible(c.Path), o.Role, pin.Visible(o.Path))
			}
			line := fmt.Sprintf("%s: %s, was %s", name, fileID(c), fileID(o))
			if o.Package != c.Package && sameProgramFile(o, c) {
				line += " (only the version a package-lock.json shows differs, which is for display: the digests are the same)"
			}
			out = append(out, line)
		}
	}
	return append(out, packageChanges(lockedPkgs, pkgs)...)
}

// splitPackages splits a program identity into its program files and its
// packages with their files.
func splitPackages(files []pin.ProgramFile) (head, pkgs []pin.ProgramFile) {
	for i, f := range files {
		if f.Role == pin.RolePackage || f.Role == pin.RolePackageFile {
			return files[:i], files[i:]
		}
	}
	return files, nil
}

// sameProgramFile reports whether two entries identify the same code:
// Package, a version read from a file a server may write, is left out
// (programChanges shows it).
func sameProgramFile(a, b pin.ProgramFile) bool {
	return a.Role == b.Role && a.Path == b.Path && a.Digest == b.Digest && a.Files == b.Files && a.Truncated == b.Truncated
}

// packageChanges compares packages and their files by path: a changed
// package whose files both lists name is described by its files alone;
// one without them says how to see which file changed.
func packageChanges(locked, current []pin.ProgramFile) []string {
	type key struct{ role, path string }
	was := map[key]pin.ProgramFile{}
	for _, f := range locked {
		was[key{f.Role, f.Path}] = f
	}
	now := map[key]bool{}
	var out []string
	fileChanged := map[string]bool{} // packages with a named file change
	var trees []string
	treeLine := map[string]string{}
	listed := func(list []pin.ProgramFile, pkg string) bool {
		for _, f := range list {
			if f.Role == pin.RolePackageFile && strings.HasPrefix(f.Path, pkg) {
				return true
			}
		}
		return false
	}
	owner := func(path string, list []pin.ProgramFile) string {
		for _, f := range list {
			if f.Role == pin.RolePackage && strings.HasSuffix(f.Path, "/") && strings.HasPrefix(path, f.Path) {
				return f.Path
			}
		}
		return ""
	}
	for _, c := range current {
		k := key{c.Role, c.Path}
		now[k] = true
		o, ok := was[k]
		switch {
		case !ok && c.Role == pin.RolePackageFile:
			fileChanged[owner(c.Path, current)] = true
			out = append(out, fmt.Sprintf("%s %s is new (%s)", c.Role, pin.Visible(c.Path), fileID(c)))
		case !ok:
			out = append(out, fmt.Sprintf("%s %s is new (%s)", c.Role, pin.Visible(c.Path), fileID(c)))
		case sameProgramFile(o, c):
		case c.Role == pin.RolePackageFile:
			fileChanged[owner(c.Path, current)] = true
			out = append(out, fmt.Sprintf("%s %s: %s, was %s", c.Role, pin.Visible(c.Path), fileID(c), fileID(o)))
		default:
			line := fmt.Sprintf("%s %s: %s, was %s", c.Role, pin.Visible(c.Path), fileID(c), fileID(o))
			if listed(locked, c.Path) && listed(current, c.Path) {
				line += ": a directory, symbolic link or executable bit in it changed"
			} else {
				line += fmt.Sprintf(": a file in it changed, was added or removed (the lock lists the files of a package of at most %d only; see which with git status and git diff on it, or reinstall it from pinned versions)", maxTreeContents)
			}
			trees = append(trees, c.Path)
			treeLine[c.Path] = line
		}
	}
	for _, o := range locked {
		if !now[key{o.Role, o.Path}] {
			if o.Role == pin.RolePackageFile {
				fileChanged[owner(o.Path, locked)] = true
			}
			out = append(out, fmt.Sprintf("%s %s is gone (was %s)", o.Role, pin.Visible(o.Path), fileID(o)))
		}
	}
	for _, t := range trees {
		if !fileChanged[t] {
			// Same files, or none listed: the tree line is what says it.
			out = append(out, treeLine[t])
		}
	}
	return out
}

func fileID(f pin.ProgramFile) string {
	id := f.Digest
	if id == "" {
		id = "no digest"
	}
	if f.Role == pin.RolePackage && (f.Files != 1 || strings.HasSuffix(f.Path, "/")) {
		id += fmt.Sprintf(" (%d files", f.Files)
		if f.Truncated {
			id += ", the digest cut at " + treeBounds
		}
		id += ")"
	}
	if f.Package != "" {
		id = pin.Visible(f.Package) + " " + id
	}
	return id
}
