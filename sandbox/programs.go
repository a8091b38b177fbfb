package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrLinkedPath is wrapped by the error of Start (and Programs) when a Read
// or Write path, the program or the script it runs goes through a symbolic
// link whose own location lies in a writable path: a server could replace
// that link between sessions and have the next start grant or run whatever
// it points to. The error is a *LinkError.
var ErrLinkedPath = errors.New("sandbox: a path goes through a symbolic link a server could replace")

// LinkError says which path goes through which replaceable link.
type LinkError struct {
	// Field is "read", "write" or "command": the part of the config.
	Field string
	// Path is the path as the config gives it (made absolute).
	Path string
	// Link is the symbolic link along Path.
	Link string
	// Root is the writable path the link lies in.
	Root string
}

func (e *LinkError) Error() string {
	return fmt.Sprintf("%s path %s goes through the symbolic link %s, which lies in the writable path %s where a server could replace it: name the link's target instead",
		e.Field, e.Path, e.Link, e.Root)
}

// Is makes a *LinkError match ErrLinkedPath.
func (e *LinkError) Is(target error) bool { return target == ErrLinkedPath }

// isPythonName reports whether name is python, python3, python3.12 or the
// like ("python" and digits and dots). A function, not a regexp: package
// init runs in every sandbox helper, whose start this is part of.
func isPythonName(name string) bool {
	rest, ok := strings.CutPrefix(name, "python")
	return ok && strings.Trim(rest, "0123456789.") == ""
}

// scriptOptions says, for an interpreter, which options take the next
// argument as their value and which ones mean the program is not a script
// file (code on the command line, a module by name).
type scriptOptions struct {
	value    []string
	noScript []string
	// subcommand: the first plain argument is a subcommand, and only
	// these run a script named by the next one.
	runs []string
}

func interpreterOptions(base string) (scriptOptions, bool) {
	switch {
	case base == "node" || base == "nodejs":
		return scriptOptions{
			value:    []string{"-r", "--require", "--import", "--loader", "--experimental-loader", "-C", "--conditions", "--env-file", "--title"},
			noScript: []string{"-e", "--eval", "-p", "--print", "-i", "--interactive", "--test", "-c", "--check"},
		}, true
	case isPythonName(base):
		return scriptOptions{value: []string{"-W", "-X", "-Q"}, noScript: []string{"-c", "-m", "-"}}, true
	case base == "ruby":
		return scriptOptions{value: []string{"-r", "-I", "-C", "-E", "--encoding"}, noScript: []string{"-e"}}, true
	case base == "perl":
		return scriptOptions{value: []string{"-I"}, noScript: []string{"-e", "-E"}}, true
	case base == "deno":
		return scriptOptions{value: []string{"-c", "--config", "--import-map", "--lock", "--cert", "--location", "--seed"}, runs: []string{"run", "serve"}}, true
	case base == "bun":
		return scriptOptions{value: []string{"-r", "--preload", "--cwd"}, runs: []string{"run"}}, true
	}
	return scriptOptions{}, false
}

// interpreterScript returns the script that argv runs when argv[0] is an
// interpreter the sandbox knows (node, nodejs, deno, bun, python*, ruby,
// perl): its first argument that is not an option or an option's value
// (for deno and bun, the one after "run"). It returns "" when it cannot
// tell: another program, code given on the command line, a module named
// rather than a file, a subcommand that runs no file.
func interpreterScript(argv []string) string {
	if len(argv) < 2 {
		return ""
	}
	o, ok := interpreterOptions(filepath.Base(argv[0]))
	if !ok {
		return ""
	}
	wantSub := len(o.runs) > 0
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "--":
			if i+1 < len(argv) && !wantSub {
				return argv[i+1]
			}
			return ""
		case hasString(o.noScript, a):
			return ""
		case hasString(o.value, a):
			i++
		case strings.HasPrefix(a, "-") && a != "-":
			// an option without a value, or with it glued on
		case wantSub:
			if !hasString(o.runs, a) {
				// "bun server.ts" runs the file; deno has no such form.
				if filepath.Base(argv[0]) == "bun" && strings.ContainsAny(a, "./") {
					return a
				}
				return ""
			}
			wantSub = false
		default:
			return a
		}
	}
	return ""
}

func hasString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// untrustedDirs are the directories, resolved, that servers may write: a
// program found through PATH there could be a server's.
func untrustedDirs(worktree string, write ...[]string) []string {
	out := []string{worktree}
	for _, list := range write {
		out = append(out, canonicalExisting(list)...)
	}
	return out
}

// programFile is one file that starting a server loads and runs.
type programFile struct {
	path    string // as reached: found in PATH, written in a "#!" line, given in argv
	canon   string // resolved through symbolic links
	lexical bool   // opened by path as written (an interpreter), see execEntry
	script  bool   // the script an interpreter runs, not an executable
}

// programFiles returns the files that running argv in worktree loads: the
// program exe (argv[0] as lookPath found it), its "#!" interpreters (and
// the program env(1) runs, found through pathEnv), and the script a known
// interpreter runs, when that script exists as a regular file.
func programFiles(argv []string, exe, pathEnv, worktree string, untrusted []string) ([]programFile, error) {
	chain, err := execChain(exe, pathEnv, untrusted)
	if err != nil {
		return nil, err
	}
	var out []programFile
	for _, e := range chain {
		c, err := filepath.EvalSymlinks(e.path)
		if err != nil {
			continue // an interpreter that is gone: the exec will say so
		}
		out = append(out, programFile{path: e.path, canon: c, lexical: e.lexical})
	}
	if script := interpreterScript(argv); script != "" {
		p := script
		if !filepath.IsAbs(p) {
			p = filepath.Join(worktree, p)
		}
		p = filepath.Clean(p)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			if c, err := filepath.EvalSymlinks(p); err == nil {
				out = append(out, programFile{path: p, canon: c, script: true})
			}
		}
	}
	return out, nil
}

// Programs returns the files that starting cfg would run, each resolved
// through symbolic links: its program (found as Start finds it, through the
// PATH of its scrubbed environment), the "#!" interpreters of a script and
// the program an env(1) interpreter runs, and the script a known
// interpreter (node, nodejs, deno, bun, python*, ruby, perl) is given as its
// first argument that is not an option. It is what a host protects, in
// every other server's Config.Protect, so that no server can replace
// another's program; ProgramClosure adds the directories the program's
// runtime loads code from, which a host protects the same way. It reads
// the files' first bytes and touches nothing.
//
// A program that cannot be found gives an error wrapping the reason (such
// as fs.ErrNotExist); an invalid cfg one wrapping ErrInvalidConfig.
func Programs(cfg Config) ([]string, error) {
	if len(cfg.Argv) == 0 || cfg.Argv[0] == "" {
		return nil, invalidConfig(cfg.Name, errors.New("empty command"))
	}
	if err := checkAbsPath("worktree", cfg.Worktree); err != nil {
		return nil, invalidConfig(cfg.Name, err)
	}
	worktree, err := filepath.EvalSymlinks(filepath.Clean(cfg.Worktree))
	if err != nil {
		return nil, invalidConfig(cfg.Name, fmt.Errorf("worktree: %w", err))
	}
	hostEnv := cfg.HostEnv
	if hostEnv == nil {
		hostEnv = os.Environ()
	}
	pathEnv, _ := envValue(hostEnv, "PATH")
	if v, ok := cfg.Env["PATH"]; ok {
		pathEnv = v
	}
	untrusted := untrustedDirs(worktree, cfg.Write, cfg.PeerWrite)
	exe, err := lookPath(cfg.Argv[0], pathEnv, worktree, untrusted)
	if err != nil {
		return nil, fmt.Errorf("sandbox: server %q: finding its program: %w", cfg.Name, err)
	}
	files, err := programFiles(cfg.Argv, exe, pathEnv, worktree, untrusted)
	if err != nil {
		return nil, fmt.Errorf("sandbox: server %q: %w", cfg.Name, err)
	}
	out := make([]string, 0, len(files))
	for _, f := range files {
		out = append(out, f.canon)
	}
	return out, nil
}
