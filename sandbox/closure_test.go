package sandbox

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestPythonMode(t *testing.T) {
	for _, tt := range []struct {
		args            string
		mode, module    string
		safe, ignoreEnv bool
	}{
		{"-m shsrv", "-m", "shsrv", false, false},
		{"-mshsrv.main", "-m", "shsrv.main", false, false},
		{"-u -B -m x", "-m", "x", false, false},
		{"-Im x", "-m", "x", true, true},
		{"-E -m x", "-m", "x", false, true},
		{"-uEm x", "-m", "x", false, true},
		{"-P -m x", "-m", "x", true, false},
		{"-X utf8 -m x", "-m", "x", false, false},
		{"-Xutf8 -m x", "-m", "x", false, false},
		{"-W ignore tools/srv.py", "", "", false, false},
		{"tools/srv.py -m x", "", "", false, false},
		{"-c print(1)", "-c", "", false, false},
		{"-", "-", "", false, false},
		{"", "-", "", false, false},
		{"-- srv.py", "", "", false, false},
	} {
		mode, module, safe, ignoreEnv := pythonMode(strings.Fields(tt.args))
		if mode != tt.mode || module != tt.module || safe != tt.safe || ignoreEnv != tt.ignoreEnv {
			t.Errorf("pythonMode(%q) = %q, %q, %v, %v; want %q, %q, %v, %v", tt.args, mode, module, safe, ignoreEnv, tt.mode, tt.module, tt.safe, tt.ignoreEnv)
		}
	}
}

// TestProgramClosure: the packages a server's code is loaded from, for
// Python and Node.js scripts, python -m, a "#!" script and a virtual
// environment.
func TestProgramClosure(t *testing.T) {
	python := "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		t.Skip("no system python3")
	}
	wt, _ := filepath.EvalSymlinks(t.TempDir())
	mk := func(rel, content string, mode os.FileMode) {
		t.Helper()
		p := filepath.Join(wt, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	mk("tools/srv.py", "import helper\n", 0o644)
	mk("shsrv/__init__.py", "", 0o644)
	mk("bin/tool", "#!"+python+"\n", 0o755)
	mk("app/package.json", "{}", 0o644)
	mk("app/lib/srv.js", "", 0o644)
	mk("nm/node_modules/@a/b/dist/index.js", "", 0o644)
	mk("venv/pyvenv.cfg", "home = /usr/bin\n", 0o644)
	mk("hook.js", "", 0o644)
	real, _ := filepath.EvalSymlinks(python)
	pyBytes, _ := os.ReadFile(real)
	mk("venv/bin/python3", string(pyBytes), 0o755)
	env := []string{"PATH=/usr/bin:/bin"}
	paths := func(c Closure) []string {
		var out []string
		for _, p := range c.Paths {
			rel, _ := filepath.Rel(wt, p.Path)
			out = append(out, rel)
		}
		return out
	}
	for _, tt := range []struct {
		argv      []string
		runtime   string
		paths     []string
		workdir   bool
		env       map[string]string
		uncovered string
	}{
		{argv: []string{python, "tools/srv.py"}, runtime: "python", paths: []string{"tools"}},
		{argv: []string{python, "-m", "shsrv"}, runtime: "python", paths: []string{"shsrv"}, workdir: true},
		{argv: []string{python, "-m", "shsrv"}, runtime: "python", env: map[string]string{"PYTHONSAFEPATH": "1"}},
		// -E: Python ignores PYTHONSAFEPATH, and imports from the worktree.
		{argv: []string{python, "-E", "-m", "shsrv"}, runtime: "python", paths: []string{"shsrv"}, workdir: true, env: map[string]string{"PYTHONSAFEPATH": "1"}},
		{argv: []string{python, "-m", "elsewhere"}, runtime: "python", workdir: true},
		{argv: []string{"bin/tool"}, runtime: "python", paths: []string{"bin"}},
		{argv: []string{"node", "app/lib/srv.js"}, runtime: "node", paths: []string{"app"}},
		{argv: []string{"node", "nm/node_modules/@a/b/dist/index.js"}, runtime: "node", paths: []string{"nm/node_modules"}},
		{argv: []string{"venv/bin/python3", "tools/srv.py"}, runtime: "python", paths: []string{"venv", "tools"}},
		{argv: []string{"node", "-r", "./hook.js", "--title", "x", "app/lib/srv.js"}, runtime: "node", paths: []string{"hook.js", "app"}},
		{argv: []string{"/bin/sh", "-c", "true"}, uncovered: "what the sh command runs"},
	} {
		c, err := ProgramClosure(Config{Name: "s", Argv: tt.argv, Worktree: wt, HostEnv: env, Env: tt.env})
		if err != nil {
			t.Errorf("%v: %v", tt.argv, err)
			continue
		}
		if tt.uncovered != "" && !slices.Contains(c.Uncovered, tt.uncovered) {
			t.Errorf("%v: uncovered %q, want %q among them", tt.argv, c.Uncovered, tt.uncovered)
		}
		if c.Runtime != tt.runtime || !slices.Equal(paths(c), tt.paths) || c.WorkdirImports != tt.workdir {
			t.Errorf("%v: runtime %q, paths %q, workdir %v; want %q, %q, %v", tt.argv, c.Runtime, paths(c), c.WorkdirImports, tt.runtime, tt.paths, tt.workdir)
		}
	}
}

// TestPythonNames: the interpreter-name matchers (functions, so that the
// helper's init compiles no regexp) agree with the patterns they replace.
func TestPythonNames(t *testing.T) {
	name := regexp.MustCompile(`^python[0-9.]*$`)
	minor := regexp.MustCompile(`^python3\.([0-9]+)$`)
	for _, s := range []string{"python", "python3", "python3.12", "python3.", "python2.7", "python3.1x", "pythonw", "ipython3", "python3.12.1", "python3..1", "Python3", "", "python 3", "python3.99999999999999999999999"} {
		if got, want := isPythonName(s), name.MatchString(s); got != want {
			t.Errorf("isPythonName(%q) = %v, want %v", s, got, want)
		}
		n, ok := python3Minor(s)
		m := minor.FindStringSubmatch(s)
		wantN, err := 0, error(nil)
		if m != nil {
			wantN, err = strconv.Atoi(m[1])
		}
		if want := m != nil && err == nil; ok != want || n != wantN {
			t.Errorf("python3Minor(%q) = %d, %v, want %d, %v", s, n, ok, wantN, want)
		}
	}
}
