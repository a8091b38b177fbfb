package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Closure is what starting a server loads as its code, as far as the
// sandbox can tell from its command and the files that command names: the
// program files (Programs), and the directories and files that the
// server's runtime resolves its code from. It names what a host must keep
// out of other servers' reach, and identify, for what runs to be what a
// person reviewed; Uncovered says what it cannot name.
type Closure struct {
	// Files are the program files, resolved, as Programs returns them.
	Files []string
	// Runtime is "python" or "node" when the server's code runs in one of
	// them and the sandbox knows how it resolves modules; "" otherwise.
	Runtime string
	// Entry is the file of the server's code, resolved: the script an
	// interpreter runs, or the program itself when its "#!" chain ends in
	// python or node. "" when there is none (python -m, a binary).
	Entry string
	// Module is the module that python -m runs, "" if none.
	Module string
	// Paths are the directories (and, for python -m, the module files)
	// whose every file the runtime may load as the server's code, resolved.
	Paths []ClosurePath
	// WorkdirImports reports that Python puts the working directory (the
	// worktree) first on its import path: for -m, -c or a program read
	// from stdin, unless PYTHONSAFEPATH is set in the server's environment
	// or -I or -P given. Anything a server puts in the worktree could then
	// be imported.
	WorkdirImports bool
	// PythonMinor is the minor version of Python 3 that runs the server
	// when its resolved interpreter's name tells it (11 for python3.11),
	// and 0 when it does not.
	PythonMinor int
	// Uncovered are phrases, for a person, naming what the runtime may
	// load that Files and Paths do not: each reads after "not covered: ".
	// WorkdirImports is not among them: a host may set PYTHONSAFEPATH.
	Uncovered []string
}

// ClosurePath is one directory or file of a Closure.
type ClosurePath struct {
	// Path is absolute and resolved through symbolic links.
	Path string
	// Dir reports whether Path is a directory (its whole tree counts).
	Dir bool
	// Why says, for a person, what makes it part of the server's code:
	// "the script's directory", "the nearest package.json's directory",
	// "node_modules", "the virtual environment", "module M in the
	// working directory".
	Why string
}

// isNode reports whether base is the name of a Node.js interpreter.
func isNode(base string) bool { return base == "node" || base == "nodejs" }

// python3Minor reads the minor version from the name of a Python 3
// interpreter that has it, such as python3.11.
func python3Minor(name string) (int, bool) {
	digits, ok := strings.CutPrefix(name, "python3.")
	if !ok || digits == "" || strings.Trim(digits, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	return n, err == nil
}

// ProgramClosure returns what starting cfg loads as the server's code, as
// Programs finds its program files, plus:
//
//   - for a Python script, the script's directory (Python puts it first on
//     its import path);
//   - for python -m M, M's top-level module or package as found in the
//     working directory (the worktree), which Python searches first unless
//     PYTHONSAFEPATH is set;
//   - for a Node.js script, the outermost node_modules directory it lies in
//     (a package's dependencies are hoisted there), or else the directory
//     of the nearest package.json above it (its node_modules included), or
//     else the script's directory;
//   - for a Python interpreter in a virtual environment (a pyvenv.cfg one
//     level above its directory), the environment, whose site-packages
//     (and any .pth file there) Python loads; and the user's
//     site-packages under HOME, where it exists;
//   - for node, each file its -r, --require, --import or --loader options
//     name by path.
//
// What it cannot tell (what a shell command runs, what Python imports from
// its installation, what ruby or perl load beyond the script) is named in
// Uncovered.
//
// A "#!" script whose chain ends in python or node counts as that
// interpreter's script. It reads the files' first bytes and looks up
// names; it touches nothing. Errors are those of Programs.
func ProgramClosure(cfg Config) (Closure, error) {
	if len(cfg.Argv) == 0 || cfg.Argv[0] == "" {
		return Closure{}, invalidConfig(cfg.Name, errors.New("empty command"))
	}
	if err := checkAbsPath("worktree", cfg.Worktree); err != nil {
		return Closure{}, invalidConfig(cfg.Name, err)
	}
	worktree, err := filepath.EvalSymlinks(filepath.Clean(cfg.Worktree))
	if err != nil {
		return Closure{}, invalidConfig(cfg.Name, fmt.Errorf("worktree: %w", err))
	}
	hostEnv := cfg.HostEnv
	if hostEnv == nil {
		hostEnv = os.Environ()
	}
	env, err := buildEnv(hostEnv, cfg.EnvPass, cfg.Env, "")
	if err != nil {
		return Closure{}, invalidConfig(cfg.Name, err)
	}
	pathEnv, _ := envValue(env, "PATH")
	untrusted := untrustedDirs(worktree, cfg.Write, cfg.PeerWrite)
	exe, err := lookPath(cfg.Argv[0], pathEnv, worktree, untrusted)
	if err != nil {
		return Closure{}, fmt.Errorf("sandbox: server %q: finding its program: %w", cfg.Name, err)
	}
	files, err := programFiles(cfg.Argv, exe, pathEnv, worktree, untrusted)
	if err != nil {
		return Closure{}, fmt.Errorf("sandbox: server %q: %w", cfg.Name, err)
	}
	var c Closure
	for _, f := range files {
		c.Files = append(c.Files, f.canon)
	}
	// Which runtime runs the server's code, and from which file: the
	// interpreter argv names, or the last one of a "#!" chain.
	interp, entry := "", ""
	lexical := []string{exe} // the interpreter as named, before links
	switch base := filepath.Base(cfg.Argv[0]); {
	case isNode(base), isPythonName(base):
		interp = base
		if len(files) > 0 && files[len(files)-1].script {
			entry = files[len(files)-1].canon
		}
	default:
		var chain []programFile
		for _, f := range files {
			if !f.script {
				chain = append(chain, f)
			}
		}
		if len(chain) > 1 {
			last := filepath.Base(chain[len(chain)-1].path)
			if isNode(last) || isPythonName(last) {
				interp, entry = last, chain[0].canon
				lexical = []string{chain[len(chain)-1].path}
			} else {
				c.Uncovered = append(c.Uncovered, fmt.Sprintf("what the %s script runs beyond its own file", last))
			}
		} else if isShell(base) {
			c.Uncovered = append(c.Uncovered, fmt.Sprintf("what the %s command runs", base))
		}
	}
	for _, f := range files {
		if n, ok := python3Minor(filepath.Base(f.canon)); ok && !f.script {
			c.PythonMinor = n
		}
	}
	switch {
	case isPythonName(interp):
		c.Runtime = "python"
		for _, l := range lexical {
			// Python finds pyvenv.cfg beside its executable as invoked, or
			// one directory up, before resolving links.
			root := filepath.Dir(filepath.Dir(l))
			if st, err := os.Stat(filepath.Join(root, "pyvenv.cfg")); err == nil && st.Mode().IsRegular() {
				if r, err := filepath.EvalSymlinks(root); err == nil {
					c.Paths = append(c.Paths, ClosurePath{Path: r, Dir: true, Why: "the virtual environment"})
				}
			}
		}
		// The user's site-packages, where a .pth file runs code at every
		// start: a write grant could reach it.
		if home, ok := envValue(env, "HOME"); ok && filepath.IsAbs(home) && c.PythonMinor > 0 {
			site := filepath.Join(home, ".local", "lib", fmt.Sprintf("python3.%d", c.PythonMinor), "site-packages")
			if r, err := filepath.EvalSymlinks(site); err == nil {
				c.Paths = append(c.Paths, ClosurePath{Path: r, Dir: true, Why: "the user's site-packages"})
			}
		}
		if entry != "" {
			c.Paths = append(c.Paths, ClosurePath{Path: filepath.Dir(entry), Dir: true, Why: "the script's directory"})
			break
		}
		mode, mod, safe, ignoreEnv := pythonMode(cfg.Argv[1:])
		if mode == "" {
			break
		}
		c.Module = mod
		if v, ok := envValue(env, "PYTHONSAFEPATH"); safe || !ignoreEnv && ok && v != "" {
			break
		}
		c.WorkdirImports = true
		if mod != "" {
			c.Paths = append(c.Paths, moduleIn(worktree, mod)...)
		}
	case isNode(interp):
		c.Runtime = "node"
		if entry == "" {
			break
		}
		// Files it loads before the script (-r ./hook.js); a bare name
		// resolves in node_modules, as the script's packages do.
		for _, f := range nodePreloads(cfg.Argv[1:]) {
			p := f
			if !filepath.IsAbs(p) {
				p = filepath.Join(worktree, p)
			}
			if r, err := filepath.EvalSymlinks(p); err == nil {
				if st, err := os.Stat(r); err == nil && st.Mode().IsRegular() {
					c.Paths = append(c.Paths, ClosurePath{Path: r, Why: "loaded before the script (" + f + ")"})
				}
			}
		}
		dir := nodePackageDir(entry)
		c.Paths = append(c.Paths, dir)
		c.Uncovered = append(c.Uncovered, fmt.Sprintf("packages node resolves from node_modules directories above %s", dir.Path))
	case interp == "" && interpreterScript(cfg.Argv) != "":
		c.Uncovered = append(c.Uncovered, fmt.Sprintf("what %s loads beyond its script", filepath.Base(cfg.Argv[0])))
	}
	if c.Runtime == "python" {
		c.Uncovered = append(c.Uncovered, "what it imports from the Python installation (the standard library, site-packages outside the worktree)")
	}
	return c, nil
}

// pythonMode returns, for a python command's arguments, "-m" and the
// module name, "-c" or "-" (a program read from stdin) when it runs no
// script file, or "" when it runs a script. safe reports an option that
// keeps the working directory off the import path (-I, -P).
func pythonMode(args []string) (mode, module string, safe, ignoreEnv bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "-" {
			return "-", "", safe, ignoreEnv
		}
		if a == "--" || !strings.HasPrefix(a, "-") {
			return "", "", safe, ignoreEnv // a script (after "--", the next argument)
		}
		if strings.HasPrefix(a, "--") {
			continue // --help, --version and the like run nothing
		}
		// A cluster of one-letter options, the last of which may take the
		// rest of the argument, or the next one, as its value.
		for j := 1; j < len(a); j++ {
			rest := a[j+1:]
			switch a[j] {
			case 'I':
				safe, ignoreEnv = true, true
			case 'P':
				safe = true
			case 'E':
				ignoreEnv = true // PYTHONSAFEPATH too
			case 'm':
				if rest == "" && i+1 < len(args) {
					rest = args[i+1]
				}
				return "-m", rest, safe, ignoreEnv
			case 'c':
				return "-c", "", safe, ignoreEnv
			case 'W', 'X', 'Q':
				if rest == "" {
					i++
				}
				j = len(a)
			}
		}
	}
	return "-", "", safe, ignoreEnv // no script: it reads its program from stdin
}

// isShell reports whether base is the name of a shell, whose command line
// can run anything.
func isShell(base string) bool {
	switch base {
	case "sh", "bash", "dash", "zsh", "ksh", "fish":
		return true
	}
	return false
}

// nodePreloads returns the files that node's options load before its
// script (-r, --require, --import, --loader, --experimental-loader) when
// given as paths (starting with "." or "/", or file: URLs made paths).
func nodePreloads(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || !strings.HasPrefix(a, "-") {
			break
		}
		name, val, glued := strings.Cut(a, "=")
		switch name {
		case "-r", "--require", "--import", "--loader", "--experimental-loader":
			if !glued {
				if i+1 >= len(args) {
					return out
				}
				i++
				val = args[i]
			}
			val = strings.TrimPrefix(val, "file://")
			if strings.HasPrefix(val, ".") || strings.HasPrefix(val, "/") {
				out = append(out, val)
			}
		default:
			o, _ := interpreterOptions("node")
			if !glued && hasString(o.value, a) {
				i++
			}
		}
	}
	return out
}

// moduleIn returns what dir holds of the top-level package of module,
// resolved: a directory of that name (a package, or a namespace package)
// and the files Python would import it from.
func moduleIn(dir, module string) []ClosurePath {
	top, _, _ := strings.Cut(module, ".")
	if top == "" || strings.ContainsAny(top, `/\`) {
		return nil
	}
	var out []ClosurePath
	why := "module " + top + " in the working directory"
	if st, err := os.Lstat(filepath.Join(dir, top)); err == nil && st.IsDir() {
		out = append(out, ClosurePath{Path: filepath.Join(dir, top), Dir: true, Why: why})
	}
	matches, _ := filepath.Glob(filepath.Join(dir, top+".*"))
	for _, m := range matches {
		switch ext := filepath.Ext(m); {
		case ext == ".py", ext == ".pyc", ext == ".pyw", ext == ".so":
			if st, err := os.Lstat(m); err == nil && st.Mode().IsRegular() {
				out = append(out, ClosurePath{Path: m, Why: why})
			}
		}
	}
	return out
}

// nodePackageDir returns the directory whose tree holds what a Node.js
// script resolves: the outermost node_modules the script lies in, else the
// nearest directory above it with a package.json, else its own directory.
func nodePackageDir(entry string) ClosurePath {
	parts := strings.Split(filepath.ToSlash(entry), "/")
	for i, p := range parts[:len(parts)-1] {
		if p == "node_modules" {
			return ClosurePath{Path: filepath.FromSlash(strings.Join(parts[:i+1], "/")), Dir: true, Why: "node_modules"}
		}
	}
	for d := filepath.Dir(entry); ; d = filepath.Dir(d) {
		if st, err := os.Stat(filepath.Join(d, "package.json")); err == nil && st.Mode().IsRegular() {
			return ClosurePath{Path: d, Dir: true, Why: "the nearest package.json's directory"}
		}
		if d == filepath.Dir(d) {
			break
		}
	}
	return ClosurePath{Path: filepath.Dir(entry), Dir: true, Why: "the script's directory"}
}
