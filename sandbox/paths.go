package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// isUnder reports whether path is root or lies beneath it. Both must be
// clean absolute paths; the comparison is lexical.
func isUnder(path, root string) bool {
	if root == "/" {
		return strings.HasPrefix(path, "/")
	}
	return path == root || strings.HasPrefix(path, root+"/")
}

// underAny reports whether path is at or beneath one of roots.
func underAny(path string, roots []string) bool {
	for _, r := range roots {
		if isUnder(path, r) {
			return true
		}
	}
	return false
}

// outermost returns paths sorted and without duplicates and without any
// path that lies beneath another one of them.
func outermost(paths []string) []string {
	s := append([]string(nil), paths...)
	sort.Strings(s)
	var out []string
	for _, p := range s {
		if len(out) > 0 && isUnder(p, out[len(out)-1]) {
			continue
		}
		// Sorting puts "/a" before "/a/b" but "/a-b" between them, so the
		// last kept path is not always the only possible ancestor.
		if underAny(p, out) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// checkAbsPath reports an error unless p is a usable absolute path.
func checkAbsPath(what, p string) error {
	switch {
	case p == "":
		return fmt.Errorf("%s is empty", what)
	case strings.ContainsRune(p, 0):
		return fmt.Errorf("%s %q contains a NUL byte", what, p)
	case !filepath.IsAbs(p):
		return fmt.Errorf("%s %q is not an absolute path", what, p)
	}
	return nil
}

// linkIn returns the first symbolic link along the clean absolute path p
// whose own location (its parent directory, resolved, and its name) lies at
// or beneath one of roots, and that root; "" when there is none. Such a link
// could be replaced by whoever may write that root, whatever it points to
// now. The walk stops at the first component that does not exist.
func linkIn(p string, roots []string) (link, root string, err error) {
	cur := "/"
	for _, part := range splitPath(p) {
		cur = filepath.Join(cur, part)
		st, err := os.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			return "", "", nil
		}
		if err != nil {
			return "", "", err
		}
		if st.Mode()&fs.ModeSymlink == 0 {
			continue
		}
		d, err := filepath.EvalSymlinks(filepath.Dir(cur))
		if err != nil {
			return "", "", err
		}
		loc := filepath.Join(d, part)
		for _, r := range roots {
			if isUnder(loc, r) {
				return cur, r, nil
			}
		}
	}
	return "", "", nil
}

// splitPath returns the components of a clean absolute path.
func splitPath(p string) []string {
	var parts []string
	for p != "/" && p != "." {
		parts = append([]string{filepath.Base(p)}, parts...)
		p = filepath.Dir(p)
	}
	return parts
}

// isCanonical reports whether p is absolute and clean, the form every path
// in a spec must have.
func isCanonical(p string) bool {
	return filepath.IsAbs(p) && filepath.Clean(p) == p && !strings.ContainsRune(p, 0)
}

// maxShebangLen is how much of a file the kernel reads to find a "#!" line
// (BINPRM_BUF_SIZE); a longer line is cut there by the kernel too.
const maxShebangLen = 256

// maxInterpreterDepth is how many "#!" interpreters the kernel follows
// before it gives up with ELOOP.
const maxInterpreterDepth = 4

// parseShebang parses the start of an executable file the way the Linux
// kernel does: a "#!" followed by optional blanks, the interpreter path up
// to the next blank, then at most one argument (the rest of the line with
// surrounding blanks removed). It reports ok false when head has no "#!"
// line or names no interpreter.
func parseShebang(head []byte) (interp, arg string, ok bool) {
	if !bytes.HasPrefix(head, []byte("#!")) {
		return "", "", false
	}
	line := head[2:]
	if len(head) > maxShebangLen {
		line = head[2:maxShebangLen]
	}
	if i := bytes.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	// The kernel stops at a NUL as well as at the end of the line.
	if i := bytes.IndexByte(line, 0); i >= 0 {
		line = line[:i]
	}
	line = bytes.Trim(line, " \t")
	if len(line) == 0 {
		return "", "", false
	}
	i := bytes.IndexAny(line, " \t")
	if i < 0 {
		return string(line), "", true
	}
	return string(line[:i]), string(bytes.Trim(line[i:], " \t")), true
}

// envProgram returns the program that "#!/usr/bin/env ARG" runs: the first
// word of ARG that is not an option and not a variable assignment. It
// understands "-S" (split the rest into words) and reports ok false when
// no program is named.
func envProgram(arg string) (string, bool) {
	fields := strings.Fields(arg)
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		switch {
		case f == "-S" || f == "--split-string":
			continue
		case strings.HasPrefix(f, "-S"):
			// "-Snode --flag": the program is glued to the option.
			return strings.TrimPrefix(f, "-S"), len(f) > 2
		case f == "-u" || f == "--unset" || f == "-C" || f == "--chdir":
			i++ // these take a value
		case strings.HasPrefix(f, "-"):
			continue
		case strings.Contains(f, "="):
			continue
		default:
			return f, true
		}
	}
	return "", false
}

// errNotFound is wrapped by lookPath when no executable file matches.
var errNotFound = errors.New("executable file not found")

// lookPath resolves file the way execvp would with the given PATH value,
// but only through absolute PATH entries: a relative entry (or an empty one,
// which means ".") would resolve against the server's working directory,
// which the server itself may write. A file containing a slash is taken
// relative to dir. The result is absolute and clean but not resolved
// through symbolic links.
func lookPath(file, pathEnv, dir string, untrusted []string) (string, error) {
	if strings.Contains(file, "/") {
		p := file
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		p = filepath.Clean(p)
		if err := checkExecutable(p); err != nil {
			return "", err
		}
		return p, nil
	}
	if pathEnv == "" {
		return "", fmt.Errorf("%q: %w: the server's environment has no PATH", file, errNotFound)
	}
	var skipped string
	for _, d := range filepath.SplitList(pathEnv) {
		if !filepath.IsAbs(d) {
			continue
		}
		p := filepath.Join(d, file)
		if checkExecutable(p) != nil {
			continue
		}
		// A PATH directory a server may write lets it put a program of its
		// own ahead of the real one, for this server or the next.
		if real, err := filepath.EvalSymlinks(d); err != nil || underAny(real, untrusted) {
			if skipped == "" {
				skipped = p
			}
			continue
		}
		return p, nil
	}
	if skipped != "" {
		return "", fmt.Errorf("%q: %w in PATH but in %s, a directory that servers may write (one could have put it there); name the program by its path in command (e.g. \"./%s\" relative to the worktree, or an absolute path) so that mcphost protects it", file, errNotFound, filepath.Dir(skipped), file)
	}
	return "", fmt.Errorf("%q: %w in PATH %q", file, errNotFound, pathEnv)
}

// checkExecutable reports an error unless p is a regular file with an
// execute bit set.
func checkExecutable(p string) error {
	st, err := os.Stat(p)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file", p)
	}
	if st.Mode().Perm()&0o111 == 0 {
		return &fs.PathError{Op: "exec", Path: p, Err: fs.ErrPermission}
	}
	return nil
}

// execChain returns the programs the kernel and env(1) will load to run the
// executable at exe: exe itself and, for a script, its "#!" interpreter, the
// interpreter's interpreter and so on, plus the program an env(1)
// interpreter runs, looked up in pathEnv. Each entry says whether the
// program is reached by its own path (lexical) or only through its
// resolved form. Errors reading a script are returned; an interpreter that
// does not exist is skipped, because the exec will fail with a clear error.
func execChain(exe, pathEnv string, untrusted []string) ([]execEntry, error) {
	chain := []execEntry{{path: exe}}
	cur := exe
	for depth := 0; depth < maxInterpreterDepth; depth++ {
		head, err := readHead(cur, maxShebangLen)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", cur, err)
		}
		interp, arg, ok := parseShebang(head)
		if !ok || !filepath.IsAbs(interp) {
			return chain, nil
		}
		interp = filepath.Clean(interp)
		if _, err := os.Stat(interp); err != nil {
			return chain, nil
		}
		// The kernel opens the interpreter by the path written in the
		// script, so that path must stay reachable as written.
		chain = append(chain, execEntry{path: interp, lexical: true})
		if filepath.Base(interp) == "env" {
			prog, ok := envProgram(arg)
			if !ok {
				return chain, nil
			}
			p, err := lookPath(prog, pathEnv, "/", untrusted)
			if err != nil {
				return chain, nil
			}
			chain = append(chain, execEntry{path: p, lexical: true})
			cur = p
			continue
		}
		cur = interp
	}
	return chain, nil
}

// execEntry is one program of an execChain.
type execEntry struct {
	path    string
	lexical bool // reached through path as written, not only its resolved form
}
