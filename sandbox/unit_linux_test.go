package sandbox

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func syscallErrno(n int) syscall.Errno { return syscall.Errno(n) }

func TestBuildEnv(t *testing.T) {
	tests := []struct {
		name    string
		host    []string
		pass    []string
		set     map[string]string
		want    []string
		wantErr string
	}{
		{
			name: "allowlist only",
			host: []string{"PATH=/bin", "HOME=/h", "LANG=C", "LC_ALL=C", "TERM=xterm", "TZ=UTC", "USER=u", "LOGNAME=u", "SHELL=/bin/sh", "SECRET=x", "LD_PRELOAD=/e.so"},
			want: []string{"HOME=/h", "LANG=C", "LC_ALL=C", "LOGNAME=u", "PATH=/bin", "SHELL=/bin/sh", "TEMP=/t", "TERM=xterm", "TMP=/t", "TMPDIR=/t", "TZ=UTC", "USER=u"},
		},
		{
			name: "pass present and absent",
			host: []string{"TOKEN=abc", "OTHER=no"},
			pass: []string{"TOKEN", "MISSING"},
			want: []string{"TEMP=/t", "TMP=/t", "TMPDIR=/t", "TOKEN=abc"},
		},
		{
			name: "set overrides host, not TMPDIR",
			host: []string{"PATH=/bin", "TMPDIR=/host"},
			set:  map[string]string{"PATH": "/opt/bin", "MODE": "ro", "TMPDIR": "/evil", "EMPTY": ""},
			want: []string{"EMPTY=", "MODE=ro", "PATH=/opt/bin", "TEMP=/t", "TMP=/t", "TMPDIR=/t"},
		},
		{
			name: "last duplicate wins, malformed entries ignored",
			host: []string{"PATH=/a", "garbage", "=x", "PATH=/b", "HOME=/h=with=equals"},
			want: []string{"HOME=/h=with=equals", "PATH=/b", "TEMP=/t", "TMP=/t", "TMPDIR=/t"},
		},
		{name: "bad set name", set: map[string]string{"A=B": "x"}, wantErr: "not a valid variable name"},
		{name: "empty set name", set: map[string]string{"": "x"}, wantErr: "not a valid variable name"},
		{name: "NUL in value", set: map[string]string{"A": "x\x00y"}, wantErr: "NUL"},
		{name: "bad pass name", pass: []string{"A\x00"}, wantErr: "not a valid variable name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := buildEnv(tt.host, tt.pass, tt.set, "/t")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestParseShebang(t *testing.T) {
	tests := []struct {
		head        string
		interp, arg string
		ok          bool
	}{
		{"#!/bin/sh\necho", "/bin/sh", "", true},
		{"#! /usr/bin/env node\n", "/usr/bin/env", "node", true},
		{"#!/usr/bin/env -S node --flag  \n", "/usr/bin/env", "-S node --flag", true},
		{"#!\t/bin/bash\t-e\t\n", "/bin/bash", "-e", true},
		{"#!/bin/sh", "/bin/sh", "", true},
		{"#!/bin/sh\x00junk", "/bin/sh", "", true},
		{"#!   \n/bin/sh", "", "", false},
		{"#!", "", "", false},
		{"\x7fELF...", "", "", false},
		{"echo hi", "", "", false},
		{"", "", "", false},
		// The kernel reads 256 bytes: a longer line is cut there.
		{"#!/i " + strings.Repeat("a", 300), "/i", strings.Repeat("a", maxShebangLen-5), true},
	}
	for _, tt := range tests {
		interp, arg, ok := parseShebang([]byte(tt.head))
		if interp != tt.interp || arg != tt.arg || ok != tt.ok {
			t.Errorf("parseShebang(%q) = %q, %q, %v; want %q, %q, %v", tt.head, interp, arg, ok, tt.interp, tt.arg, tt.ok)
		}
	}
}

func TestEnvProgram(t *testing.T) {
	tests := []struct {
		arg  string
		prog string
		ok   bool
	}{
		{"node", "node", true},
		{"-S node --experimental", "node", true},
		{"-Snode --x", "node", true},
		{"-i PATH=/x python3", "python3", true},
		{"-u HOME -C /tmp deno run", "deno", true},
		{"--split-string deno run", "deno", true},
		{"-S", "", false},
		{"", "", false},
		{"A=1 B=2", "", false},
	}
	for _, tt := range tests {
		prog, ok := envProgram(tt.arg)
		if prog != tt.prog || ok != tt.ok {
			t.Errorf("envProgram(%q) = %q, %v; want %q, %v", tt.arg, prog, ok, tt.prog, tt.ok)
		}
	}
}

func TestLookPath(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	mkfile(t, filepath.Join(bin, "tool"), "#!/bin/sh\n")
	os.Chmod(filepath.Join(bin, "tool"), 0o755)
	mkfile(t, filepath.Join(bin, "data"), "x")
	mkfile(t, filepath.Join(dir, "wt", "local"), "#!/bin/sh\n")
	os.Chmod(filepath.Join(dir, "wt", "local"), 0o755)
	if err := os.Mkdir(filepath.Join(bin, "adir"), 0o755); err != nil {
		t.Fatal(err)
	}
	wt := filepath.Join(dir, "wt")
	tests := []struct {
		file, path string
		want       string
		wantErr    string
	}{
		{"tool", bin, filepath.Join(bin, "tool"), ""},
		{"tool", "relative:" + bin, filepath.Join(bin, "tool"), ""},
		{"local", ":.:relative", "", "not found"}, // relative entries would search the worktree
		{"data", bin, "", "not found"},
		{"adir", bin, "", "not found"},
		{"tool", "", "", "no PATH"},
		{"./local", "", filepath.Join(wt, "local"), ""},
		{filepath.Join(bin, "tool"), "", filepath.Join(bin, "tool"), ""},
		{filepath.Join(bin, "data"), "", "", "permission denied"},
		{filepath.Join(bin, "adir"), "", "", "not a regular file"},
	}
	for _, tt := range tests {
		got, err := lookPath(tt.file, tt.path, wt, nil)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("lookPath(%q, %q) = %q, %v; want error %q", tt.file, tt.path, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("lookPath(%q, %q) = %q, %v; want %q", tt.file, tt.path, got, err, tt.want)
		}
	}
}

func TestExecChain(t *testing.T) {
	dir := t.TempDir()
	exe := func(name, content string) string {
		p := filepath.Join(dir, name)
		mkfile(t, p, content)
		os.Chmod(p, 0o755)
		return p
	}
	bin := exe("interp", "\x7fELF")
	viaInterp := exe("script", "#!"+bin+" -x\n")
	nested := exe("nested", "#!"+viaInterp+"\n")
	viaEnv := exe("envscript", "#!/usr/bin/env -S interp --flag\n")
	missing := exe("missing", "#!/nonexistent/interp\n")
	loop := filepath.Join(dir, "loop")
	mkfile(t, loop, "#!"+loop+"\n")
	os.Chmod(loop, 0o755)

	tests := []struct {
		exe  string
		want []execEntry
	}{
		{bin, []execEntry{{path: bin}}},
		{viaInterp, []execEntry{{path: viaInterp}, {path: bin, lexical: true}}},
		{nested, []execEntry{{path: nested}, {path: viaInterp, lexical: true}, {path: bin, lexical: true}}},
		{viaEnv, []execEntry{{path: viaEnv}, {path: "/usr/bin/env", lexical: true}, {path: bin, lexical: true}}},
		{missing, []execEntry{{path: missing}}},
		// The kernel gives up after a few levels; so does execChain.
		{loop, []execEntry{{path: loop}, {loop, true}, {loop, true}, {loop, true}, {loop, true}}},
	}
	for _, tt := range tests {
		if tt.exe == viaEnv {
			if _, err := os.Stat("/usr/bin/env"); err != nil {
				t.Logf("skipping the env(1) case: %v", err)
				continue
			}
		}
		got, err := execChain(tt.exe, dir+":/usr/bin:/bin", nil)
		if err != nil {
			t.Errorf("execChain(%s): %v", tt.exe, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("execChain(%s) = %+v, want %+v", tt.exe, got, tt.want)
		}
	}
}

func TestOutermost(t *testing.T) {
	tests := []struct{ in, want []string }{
		{nil, nil},
		{[]string{"/a/b", "/a", "/a-b", "/a/b/c", "/a-b/c", "/z", "/a"}, []string{"/a", "/a-b", "/z"}},
		{[]string{"/", "/x"}, []string{"/"}},
		{[]string{"/ab", "/a"}, []string{"/a", "/ab"}},
	}
	for _, tt := range tests {
		if got := outermost(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("outermost(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestIsUnder(t *testing.T) {
	tests := []struct {
		path, root string
		want       bool
	}{
		{"/a", "/a", true},
		{"/a/b", "/a", true},
		{"/ab", "/a", false},
		{"/a", "/a/b", false},
		{"/anything", "/", true},
		{"/", "/", true},
	}
	for _, tt := range tests {
		if got := isUnder(tt.path, tt.root); got != tt.want {
			t.Errorf("isUnder(%q, %q) = %v", tt.path, tt.root, got)
		}
	}
}

func TestSpecRoundTrip(t *testing.T) {
	s := &spec{
		Path: "/usr/bin/node", Argv: []string{"node", "server.js"}, Env: []string{"A=1", "TMPDIR=/tmp/x"},
		Dir: "/w", Network: true, MaxABI: 3,
		Hide: []string{"/tmp", "/home"}, Read: []string{"/usr", "/home/u/.cache"}, Write: []string{"/w", "/tmp/x"},
		Protect: []string{"/w/.state"}, Links: map[string]string{"/bin": "usr/bin"},
	}
	b, err := encodeSpec(s)
	if err != nil {
		t.Fatal(err)
	}
	// The decoder must stop at the end of the spec: the rest of the pipe
	// is the lifeline.
	r := bytes.NewReader(append(b, "after"...))
	got, err := decodeSpec(r)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, s) {
		t.Errorf("decoded %+v, want %+v", got, s)
	}
	if rest := r.Len(); rest != len("after") {
		t.Errorf("decodeSpec consumed %d bytes past the spec", len("after")-rest)
	}
}

func TestDecodeSpecErrors(t *testing.T) {
	frame := func(body string) []byte {
		var b bytes.Buffer
		b.WriteString(specMagic)
		n := len(body)
		b.Write([]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
		b.WriteString(body)
		return b.Bytes()
	}
	ok := `"path":"/bin/x","argv":["x"],"dir":"/w"`
	tests := []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, "reading header"},
		{"no magic", []byte("GET / HTTP/1.1\r\n\r\n.........."), "missing magic"},
		{"too long", append([]byte(specMagic), 0xff, 0xff, 0xff, 0xff), "exceeds"},
		{"short body", append([]byte(specMagic), 0, 0, 0, 10, '{'), "reading body"},
		{"not json", frame("nope"), "invalid character"},
		{"unknown field", frame(`{` + ok + `,"sandbox":"off"}`), "unknown field"},
		{"trailing", frame(`{` + ok + `}{}`), "trailing"},
		{"stray bracket", frame(`{` + ok + `}}`), "trailing"},
		{"relative path", frame(`{"path":"x","argv":["x"],"dir":"/w"}`), "not a clean absolute path"},
		{"unclean dir", frame(`{"path":"/x","argv":["x"],"dir":"/w/../etc"}`), "not a clean absolute path"},
		{"no argv", frame(`{"path":"/x","dir":"/w"}`), "empty argv"},
		{"bad env", frame(`{` + ok + `,"env":["NOEQUALS"]}`), "bad environment entry"},
		{"hide /", frame(`{` + ok + `,"hide":["/"]}`), "hide path is /"},
		{"write /", frame(`{` + ok + `,"write":["/"]}`), "write path is /"},
		{"relative read", frame(`{` + ok + `,"read":["usr"]}`), "not a clean absolute path"},
		{"probe and off", frame(`{"probe":true,"off":true}`), "probe and off"},
		{"negative abi", frame(`{` + ok + `,"max_abi":-1}`), "negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeSpec(bytes.NewReader(tt.in))
			if !errors.Is(err, errBadSpec) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("decodeSpec: %v, want errBadSpec saying %q", err, tt.want)
			}
		})
	}
}

func TestParseReport(t *testing.T) {
	tests := []struct {
		line    string
		want    report
		wantErr bool
	}{
		{`{"started":true,"confinement":"none"}`, report{Started: true, Confinement: "none"}, false},
		{`{"error":"landlock: EPERM","unsupported":true}`, report{Error: "landlock: EPERM", Unsupported: true}, false},
		{`{"exit":"exit status 3"}`, report{Exit: "exit status 3"}, false},
		{`{}`, report{}, true},
		{`{"started":true,"exit":"x"}`, report{}, true},
		{`{"unsupported":true,"started":true}`, report{}, true},
		{`{"started":true,"extra":1}`, report{}, true},
		{`{"started":true} {}`, report{}, true},
		{`{"started":true}}`, report{}, true},
		{`{"started":true}]`, report{}, true},
		{`not json`, report{}, true},
	}
	for _, tt := range tests {
		got, err := parseReport([]byte(tt.line))
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("parseReport(%s) = %+v, %v; want %+v, error %v", tt.line, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestPlanMounts(t *testing.T) {
	tests := []struct {
		name    string
		s       spec
		want    mountPlan
		wantErr string
	}{
		{
			name: "worktree and temp dir in /tmp, read path in home",
			s: spec{
				Hide:  []string{"/tmp", "/home", "/home/u", "/run"},
				Read:  []string{"/usr", "/home/u/.cache/notes", "/tmp/fixtures", "/proc"},
				Write: []string{"/tmp/w", "/tmp/mcphost-x"},
				Links: map[string]string{"/bin": "usr/bin", "/usr/lib/x": "y"},
			},
			want: mountPlan{
				NewRoot:  true,
				Binds:    []string{"/home/u/.cache/notes", "/tmp/fixtures", "/tmp/mcphost-x", "/tmp/w", "/usr"},
				Links:    map[string]string{"/bin": "usr/bin"},
				Empty:    []string{"/home", "/run", "/tmp"},
				Writable: []string{"/tmp/mcphost-x", "/tmp/w"},
			},
		},
		{
			name: "a granted directory is not made empty",
			s:    spec{Hide: []string{"/tmp", "/home"}, Read: []string{"/home"}, Write: []string{"/srv/w"}},
			want: mountPlan{NewRoot: true, Binds: []string{"/home", "/srv/w"}, Empty: []string{"/tmp"}, Writable: []string{"/srv/w"}},
		},
		{
			name: "nested grants are bound once",
			s:    spec{Hide: []string{"/home"}, Read: []string{"/home/u/proj/vendor"}, Write: []string{"/home/u/proj"}},
			want: mountPlan{NewRoot: true, Binds: []string{"/home/u/proj"}, Empty: []string{"/home"}, Writable: []string{"/home/u/proj"}},
		},
		{
			name: "granting / keeps the host's tree",
			s:    spec{Hide: []string{"/tmp"}, Read: []string{"/"}, Write: []string{"/w"}, Links: map[string]string{"/bin": "usr/bin"}},
			want: mountPlan{Writable: []string{"/w"}},
		},
		{
			name: "protected paths and the directories pinned above them",
			s: spec{
				Write:   []string{"/w", "/x"},
				Protect: []string{"/w/agent.toml", "/w/a/b/c", "/w/a/d", "/elsewhere", "/w/a/b/c/inner"},
			},
			want: mountPlan{
				NewRoot:  true,
				Binds:    []string{"/w", "/x"},
				Writable: []string{"/w", "/x"},
				Pin:      []string{"/w/a", "/w/a/b"},
				Protect:  []string{"/w/a/b/c", "/w/a/d", "/w/agent.toml"},
			},
		},
		{
			name:    "protect containing a writable path",
			s:       spec{Write: []string{"/w/sub"}, Protect: []string{"/w"}},
			wantErr: "contains the writable path",
		},
		{
			name:    "hiding /",
			s:       spec{Hide: []string{"/"}},
			wantErr: "cannot hide /",
		},
		{
			name: "a private home at HOME, the worktree and a dotfile beneath it",
			s: spec{
				Hide:  []string{"/home/u"},
				Read:  []string{"/usr", "/home/u/.gitconfig"},
				Write: []string{"/home/u/proj"},
				Home:  "/home/u", HomeSource: "/state/home/notes",
			},
			want: mountPlan{
				NewRoot: true,
				Binds:   []string{"/home/u/.gitconfig", "/home/u/proj", "/usr"},
				Home:    "/home/u", HomeSource: "/state/home/notes",
				Writable: []string{"/home/u/proj"},
			},
		},
		{
			name:    "a private home inside a granted path",
			s:       spec{Read: []string{"/home"}, Home: "/home/u", HomeSource: "/state/h"},
			wantErr: "lies in a granted",
		},
		{
			name:    "a private home with / granted",
			s:       spec{Read: []string{"/"}, Home: "/home/u", HomeSource: "/state/h"},
			wantErr: "needs a new root",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := planMounts(&tt.s)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestParseMountPoints(t *testing.T) {
	tests := []struct {
		file    string
		want    []string
		wantErr string
	}{
		{"host.txt", []string{"/proc", "/sys", "/dev", "/dev/pts", "/dev/shm", "/", "/run", "/run/user/1000", "/home", "/tmp", "/mnt/with space", "/mnt/tab\tand\\backslash"}, ""},
		{"relative.txt", nil, "not absolute"},
		{"short.txt", nil, "fewer than 5 fields"},
		{"badescape.txt", nil, "escape"},
	}
	for _, tt := range tests {
		f, err := os.Open(filepath.Join("testdata", "mountinfo", tt.file))
		if err != nil {
			t.Fatal(err)
		}
		got, err := parseMountPoints(f)
		f.Close()
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: err %v, want %q", tt.file, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %q, %v; want %q", tt.file, got, err, tt.want)
		}
	}
}

func TestParseStatPPid(t *testing.T) {
	tests := []struct {
		stat    string
		want    int
		wantErr bool
	}{
		{"42 (hostile) S 7 42 42 0 -1", 7, false},
		{"42 (a) b) (c) R 1 2 3", 1, false},
		{"42 (with space) Z 0 0", 0, false},
		{"42 (x) S", 0, true},
		{"42 no parens S 7", 0, true},
		{"42 (x) S -3", 0, true},
		{"42 (x) S nine", 0, true},
	}
	for _, tt := range tests {
		got, err := parseStatPPid([]byte(tt.stat))
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("parseStatPPid(%q) = %d, %v; want %d, error %v", tt.stat, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestTempPrefix(t *testing.T) {
	for in, want := range map[string]string{
		"notes": "notes", "": "server", "../../etc": "etc", "a b/c": "abc",
		strings.Repeat("x", 50): strings.Repeat("x", 32),
	} {
		if got := tempPrefix(in); got != want {
			t.Errorf("tempPrefix(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSeccompProgram checks the filter's structure: every jump lands
// inside the program and every path ends in a return, for both settings.
func TestSeccompProgram(t *testing.T) {
	if !seccompSupported {
		t.Skip("no seccomp filter on this architecture")
	}
	for _, network := range []netAccess{netNone, netProxy, netHost} {
		for _, reduced := range []bool{false, true} {
			prog := seccompProgram(filterOptions{net: network, pathUnix: !reduced, ownProcessOnly: reduced, ownNetNS: !reduced, noFSNotify: reduced, udp: network == netProxy && !reduced})
			if len(prog) == 0 || len(prog) > 4096 {
				t.Fatalf("network=%v: %d instructions", network, len(prog))
			}
			for pc, ins := range prog {
				switch ins.Code & 0x07 { // BPF instruction class
				case 0x05: // BPF_JMP
					for _, off := range []uint8{ins.Jt, ins.Jf} {
						if pc+1+int(off) >= len(prog) {
							t.Errorf("network=%v: jump at %d leaves the program", network, pc)
						}
					}
				}
			}
			if last := prog[len(prog)-1]; last.Code != bpfRetK || last.K != retAllow {
				t.Errorf("network=%v: the program does not end by allowing", network)
			}
		}
	}
	if len(seccompProgram(filterOptions{net: netNone, pathUnix: true})) <= len(seccompProgram(filterOptions{net: netHost, pathUnix: true})) ||
		len(seccompProgram(filterOptions{net: netProxy, pathUnix: true})) <= len(seccompProgram(filterOptions{net: netHost, pathUnix: true})) {
		t.Error("the network-off filter checks nothing more than the network-on one")
	}
}

// TestUnsupportedError: the error for a kernel that cannot confine says
// why and how to opt out, and wraps ErrUnsupported.
func TestUnsupportedError(t *testing.T) {
	err := unsupported("notes", "landlock: function not implemented")
	if !errors.Is(err, ErrUnsupported) {
		t.Errorf("%v does not wrap ErrUnsupported", err)
	}
	for _, want := range []string{`server "notes"`, "landlock: function not implemented", `sandbox = "off"`, "[mcp.notes]", "risk"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	// Refused namespaces are a kernel matter; a missing program is not.
	if err := startError("n", false, false, &os.SyscallError{Syscall: "clone", Err: syscallErrno(1)}); !errors.Is(err, ErrUnsupported) || errors.Is(err, errUserNSRefused) {
		t.Errorf("EPERM from clone: %v", err)
	}
	// With a user namespace asked for, the refusal sends the start to the
	// reduced tier.
	if err := startError("n", false, true, &os.SyscallError{Syscall: "clone", Err: syscallErrno(1)}); !errors.Is(err, ErrUnsupported) || !errors.Is(err, errUserNSRefused) {
		t.Errorf("EPERM from clone with a user namespace: %v", err)
	}
	if err := startError("n", true, false, &os.SyscallError{Syscall: "clone", Err: syscallErrno(1)}); errors.Is(err, ErrUnsupported) {
		t.Errorf("EPERM unconfined: %v", err)
	}
}

func TestInterpreterScript(t *testing.T) {
	for _, tt := range []struct {
		argv []string
		want string
	}{
		{[]string{"node", "server.js"}, "server.js"},
		{[]string{"/usr/bin/node", "--no-warnings", "-r", "ts-node/register", "dist/index.js", "--port", "1"}, "dist/index.js"},
		{[]string{"node", "--", "-weird.js"}, "-weird.js"},
		{[]string{"node", "-e", "code"}, ""},
		{[]string{"node"}, ""},
		{[]string{"python3", "-u", "srv.py"}, "srv.py"},
		{[]string{"python3.12", "-W", "ignore", "srv.py"}, "srv.py"},
		{[]string{"python", "-m", "mcp_server"}, ""},
		{[]string{"ruby", "-I", "lib", "srv.rb"}, "srv.rb"},
		{[]string{"perl", "-w", "srv.pl"}, "srv.pl"},
		{[]string{"deno", "run", "--allow-read", "main.ts"}, "main.ts"},
		{[]string{"deno", "-c", "deno.json", "run", "main.ts"}, "main.ts"},
		{[]string{"deno", "task", "start"}, ""},
		{[]string{"bun", "run", "index.ts"}, "index.ts"},
		{[]string{"bun", "./index.ts"}, "./index.ts"},
		{[]string{"bun", "install"}, ""},
		{[]string{"notes-server", "notes.db"}, ""},
		{[]string{"pythonista", "x.py"}, ""},
	} {
		if got := interpreterScript(tt.argv); got != tt.want {
			t.Errorf("interpreterScript(%q) = %q, want %q", tt.argv, got, tt.want)
		}
	}
}

// TestPlantedLookups: what a server could have left in its worktree does
// not steer the next start. A PATH directory there is skipped (its
// program might be a server's), and a FIFO planted as an interpreter is
// refused at once instead of hanging the start.
func TestPlantedLookups(t *testing.T) {
	wt := t.TempDir()
	bin := filepath.Join(wt, "node_modules", ".bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"true", "mcphost-planted"} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\necho planted\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	path := bin + ":/usr/bin:/bin"
	untrusted := untrustedDirs(wt)
	if got, err := lookPath("true", path, wt, untrusted); err != nil || filepath.Dir(got) == bin {
		t.Errorf("lookPath(true) = %q, %v; want the system's, not the worktree's", got, err)
	}
	_, err := lookPath("mcphost-planted", path, wt, untrusted)
	if err == nil || !strings.Contains(err.Error(), "servers may write") || !strings.Contains(err.Error(), bin) {
		t.Errorf("lookPath(mcphost-planted) = %v; want a refusal naming %s", err, bin)
	}
	// Without the worktree among the untrusted directories it would be
	// found: the refusal is the check's doing.
	if got, err := lookPath("mcphost-planted", path, wt, nil); err != nil || filepath.Dir(got) != bin {
		t.Fatalf("lookPath without the check = %q, %v", got, err)
	}

	fifo := filepath.Join(wt, "interp")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(wt, "server")
	if err := os.WriteFile(script, []byte("#!"+fifo+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := execChain(script, path, nil); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("execChain through a FIFO interpreter: %v; want a refusal", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("execChain blocks on a FIFO planted as the interpreter")
	}
}

// TestProtectHardLinks: a protected file with another name (a hard link a
// server made before the protection, to write it through later) is
// refused, in a protected directory too.
func TestProtectHardLinks(t *testing.T) {
	wt := t.TempDir()
	conf := filepath.Join(wt, "mcphost.toml")
	hook := filepath.Join(wt, ".git", "hooks", "pre-commit")
	for _, f := range []string{conf, hook} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{conf, filepath.Join(wt, ".git")} {
		if _, err := protectPath(p, []string{wt}); err != nil {
			t.Fatalf("protectPath(%s) with no extra link: %v", p, err)
		}
	}
	if err := os.Link(conf, filepath.Join(wt, ".cache-x")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(hook, filepath.Join(wt, ".hook-x")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{conf, filepath.Join(wt, ".git")} {
		if _, err := protectPath(p, []string{wt}); err == nil || !strings.Contains(err.Error(), "hard links") {
			t.Errorf("protectPath(%s) with a second name: %v; want a refusal", p, err)
		}
	}
}

func TestParseOwner(t *testing.T) {
	tests := []struct {
		name string
		want cgroupOwner
		ok   bool
	}{
		{"mcphost-git-1u80ehzt8i2i1.4026531836.4379.2090656", cgroupOwner{4026531836, 4379, 2090656}, true},
		{"mcphost-a-b_c-x.1.2.3", cgroupOwner{1, 2, 3}, true},
		{"mcphost-git-dn9tu1ms8hhh", cgroupOwner{}, false}, // before owners were named
		{"mcphost-git-x.1.2", cgroupOwner{}, false},
		{"mcphost-git-x.1.2.3.4", cgroupOwner{}, false},
		{"mcphost-git-x.1.0.3", cgroupOwner{}, false},
		{"mcphost-git-x.1.-2.3", cgroupOwner{}, false},
		{"mcphost-git-x.a.2.3", cgroupOwner{}, false},
		{"other-x.1.2.3", cgroupOwner{}, false},
	}
	for _, tt := range tests {
		got, ok := parseOwner(tt.name)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("parseOwner(%q) = %+v, %v; want %+v, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

func FuzzParseOwner(f *testing.F) {
	f.Add("mcphost-git-1u80ehzt8i2i1.4026531836.4379.2090656", "srv", uint64(1), 2, uint64(3))
	f.Add("mcphost-x.1.2", "", uint64(0), 0, uint64(0))
	f.Fuzz(func(t *testing.T, name, server string, ns uint64, pid int, start uint64) {
		if o, ok := parseOwner(name); ok && o.pid <= 0 {
			t.Fatalf("parseOwner(%q) = %+v: a PID that names no process", name, o)
		}
		// Whatever the server is called, the owner at the end of the
		// name newCgroup makes reads back.
		if pid <= 0 {
			return
		}
		o := cgroupOwner{ns, pid, start}
		leaf := "mcphost-" + tempPrefix(server) + "-x" + o.suffix()
		if got, ok := parseOwner(leaf); !ok || got != o {
			t.Fatalf("parseOwner(%q) = %+v, %v; want %+v", leaf, got, ok, o)
		}
	})
}

// runFilter runs the classic BPF program prog, as the kernel runs a
// seccomp filter, on a system call nr of the native architecture with the
// given arguments (low 32 bits), and returns what it returns. Only the
// instructions the filters use are known; another fails the test.
func runFilter(t *testing.T, prog []unix.SockFilter, nr uint32, args ...uint32) uint32 {
	t.Helper()
	data := make([]byte, 64)
	binary.NativeEndian.PutUint32(data[seccompNrOff:], nr)
	binary.NativeEndian.PutUint32(data[seccompArchOff:], nativeAuditArch)
	for i, a := range args {
		binary.NativeEndian.PutUint32(data[seccompArg0Off+i*seccompArgSize:], a)
	}
	var acc uint32
	for pc := 0; pc < len(prog); pc++ {
		ins := prog[pc]
		switch ins.Code {
		case bpfLdAbsW:
			acc = binary.NativeEndian.Uint32(data[ins.K:])
		case bpfAndK:
			acc &= ins.K
		case bpfJeqK, bpfJgeK:
			if ins.Code == bpfJeqK && acc == ins.K || ins.Code == bpfJgeK && acc >= ins.K {
				pc += int(ins.Jt)
			} else {
				pc += int(ins.Jf)
			}
		case bpfRetK:
			return ins.K
		default:
			t.Fatalf("instruction %#x at %d is not one runFilter knows", ins.Code, pc)
		}
	}
	t.Fatal("the program ran off its end")
	return 0
}

// TestSeccompSockets runs the filter's socket(2) rules for each network
// setting: what each family, type and protocol gets. A wrong jump offset
// (the rules are counted by hand) shows here as a wrong answer.
func TestSeccompSockets(t *testing.T) {
	if !seccompSupported {
		t.Skip("no seccomp filter on this architecture")
	}
	allow, refuse := uint32(retAllow), retErrno(unix.EAFNOSUPPORT)
	type sock struct{ family, typ, proto uint32 }
	stream, dgram := uint32(unix.SOCK_STREAM|unix.SOCK_CLOEXEC), uint32(unix.SOCK_DGRAM|unix.SOCK_NONBLOCK)
	socks := []sock{
		{unix.AF_UNIX, stream, 0}, {unix.AF_INET, stream, 0}, {unix.AF_INET6, stream, unix.IPPROTO_TCP},
		{unix.AF_INET, stream, unix.IPPROTO_MPTCP}, {unix.AF_INET, stream, unix.IPPROTO_UDP}, {unix.AF_INET, dgram, 0}, {unix.AF_INET6, dgram, unix.IPPROTO_UDP},
		{unix.AF_INET, dgram, unix.IPPROTO_ICMP}, {unix.AF_INET6, dgram, unix.IPPROTO_ICMPV6}, {unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_UDP},
		{unix.AF_PACKET, unix.SOCK_RAW, 0}, {unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE}, {unix.AF_INET, unix.SOCK_SEQPACKET, 0},
	}
	for _, tt := range []struct {
		name string
		o    filterOptions
		want []uint32 // per socks
	}{
		{"proxy", filterOptions{net: netProxy, pathUnix: true, ownNetNS: true},
			[]uint32{allow, allow, allow, refuse, refuse, refuse, refuse, refuse, refuse, refuse, refuse, refuse, refuse}},
		{"proxy and names", filterOptions{net: netProxy, pathUnix: true, ownNetNS: true, udp: true},
			[]uint32{allow, allow, allow, refuse, refuse, allow, allow, refuse, refuse, refuse, refuse, refuse, refuse}},
		{"none", filterOptions{net: netNone, pathUnix: true, ownNetNS: true},
			[]uint32{allow, refuse, refuse, refuse, refuse, refuse, refuse, refuse, refuse, refuse, refuse, allow, refuse}},
		{"host", filterOptions{net: netHost, pathUnix: true},
			[]uint32{allow, allow, allow, allow, allow, allow, allow, allow, allow, allow, allow, allow, allow}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			prog := seccompProgram(tt.o)
			for i, s := range socks {
				if got := runFilter(t, prog, unix.SYS_SOCKET, s.family, s.typ, s.proto); got != tt.want[i] {
					t.Errorf("socket(%d, %#x, %d) = %#x, want %#x", s.family, s.typ, s.proto, got, tt.want[i])
				}
			}
			// socketpair stays unix only wherever the network is not the host's.
			got := runFilter(t, prog, unix.SYS_SOCKETPAIR, unix.AF_INET, stream, 0)
			if want := map[bool]uint32{true: allow, false: refuse}[tt.o.net == netHost]; got != want {
				t.Errorf("socketpair(AF_INET) = %#x, want %#x", got, want)
			}
		})
	}
}

// TestSeccompRules runs the filter's other rules in the interpreter, in
// the full tier's settings and the reduced tier's: what the calls it
// names get, and that a call it does not name is allowed.
func TestSeccompRules(t *testing.T) {
	if !seccompSupported {
		t.Skip("no seccomp filter on this architecture")
	}
	allow := uint32(retAllow)
	full := filterOptions{net: netProxy, pathUnix: true, ownNetNS: true, udp: true}
	reduced := filterOptions{net: netNone, ownProcessOnly: true, noFSNotify: true}
	for _, tt := range []struct {
		name          string
		nr            uint32
		args          []uint32
		full, reduced uint32
	}{
		{"read", unix.SYS_READ, []uint32{0, 0, 0}, allow, allow},
		{"io_uring_setup", unix.SYS_IO_URING_SETUP, nil, retErrno(unix.ENOSYS), retErrno(unix.ENOSYS)},
		{"keyctl", unix.SYS_KEYCTL, nil, retErrno(unix.ENOSYS), retErrno(unix.ENOSYS)},
		{"add_key", unix.SYS_ADD_KEY, nil, retErrno(unix.ENOSYS), retErrno(unix.ENOSYS)},
		{"clone3", unix.SYS_CLONE3, nil, retErrno(unix.ENOSYS), retErrno(unix.ENOSYS)},
		{"unshare a user namespace", unix.SYS_UNSHARE, []uint32{unix.CLONE_NEWUSER | unix.CLONE_NEWNS}, retErrno(unix.EPERM), retErrno(unix.EPERM)},
		{"unshare files", unix.SYS_UNSHARE, []uint32{unix.CLONE_FILES}, allow, allow},
		{"clone a user namespace", unix.SYS_CLONE, []uint32{unix.CLONE_NEWUSER | uint32(unix.SIGCHLD)}, retErrno(unix.EPERM), retErrno(unix.EPERM)},
		{"clone a thread", unix.SYS_CLONE, []uint32{unix.CLONE_VM | unix.CLONE_THREAD | unix.CLONE_SIGHAND}, allow, allow},
		{"fchmod set-user-ID", unix.SYS_FCHMOD, []uint32{3, 0o4755}, retErrno(unix.EPERM), retErrno(unix.EPERM)},
		{"fchmod 0755", unix.SYS_FCHMOD, []uint32{3, 0o755}, allow, allow},
		{"openat set-group-ID", unix.SYS_OPENAT, []uint32{0, 0, unix.O_CREAT, 0o2755}, retErrno(unix.EPERM), retErrno(unix.EPERM)},
		{"openat 0644", unix.SYS_OPENAT, []uint32{0, 0, unix.O_CREAT, 0o644}, allow, allow},
		{"umask keeping world write off", unix.SYS_UMASK, []uint32{0o022}, allow, allow},
		{"umask clearing it", unix.SYS_UMASK, []uint32{0o020}, unix.SECCOMP_RET_USER_NOTIF, unix.SECCOMP_RET_USER_NOTIF},
		{"setxattr", unix.SYS_SETXATTR, nil, retErrno(unix.EOPNOTSUPP), retErrno(unix.EOPNOTSUPP)},
		{"inotify_init1", unix.SYS_INOTIFY_INIT1, nil, allow, retErrno(unix.ENOSYS)},
		{"prlimit64 of another process", unix.SYS_PRLIMIT64, []uint32{1234}, allow, retErrno(unix.EPERM)},
		{"prlimit64 of itself", unix.SYS_PRLIMIT64, []uint32{0}, allow, allow},
		{"setpriority of a user", unix.SYS_SETPRIORITY, []uint32{2, 0}, allow, retErrno(unix.EPERM)},
		{"setpriority of itself", unix.SYS_SETPRIORITY, []uint32{prioProcess, 0}, allow, allow},
	} {
		for _, tier := range []struct {
			name string
			o    filterOptions
			want uint32
		}{{"full", full, tt.full}, {"reduced", reduced, tt.reduced}} {
			if got := runFilter(t, seccompProgram(tier.o), tt.nr, tt.args...); got != tier.want {
				t.Errorf("%s, %s tier: %#x, want %#x", tt.name, tier.name, got, tier.want)
			}
		}
	}
	if foreignSyscallBit != 0 {
		if got := runFilter(t, seccompProgram(full), unix.SYS_READ|foreignSyscallBit); got != retErrno(unix.ENOSYS) {
			t.Errorf("a foreign-ABI read: %#x, want ENOSYS", got)
		}
	}
}

// TestLinkedReport: a helper that meets a granted path swapped for a link
// (ELOOP, opening it refusing links) says so in its report, and Start's
// error is then ErrLinkedPath, as where the host opens the grants itself;
// the server's own exec failing with ELOOP is not that.
func TestLinkedReport(t *testing.T) {
	loop := &os.PathError{Op: "open", Path: "/work/data", Err: unix.ELOOP}
	tests := []struct {
		name          string
		err           error
		linked, unsup bool
	}{
		{"a grant opened", failedStep("opening the paths of the Landlock rules", loop), true, false},
		{"a bind", unsupportedStep("binding /work/data", loop), true, true},
		{"the server's exec", failedStep(stepStartServer, fmt.Errorf("exec /work/x: %w", unix.ELOOP)), false, false},
		{"not a link", unsupportedStep("pivot_root", unix.EINVAL), false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			(&helper{rep: w}).fail(tt.err)
			w.Close()
			line, err := io.ReadAll(r)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := parseReport(bytes.TrimSuffix(line, []byte("\n")))
			if err != nil {
				t.Fatal(err)
			}
			if rep.Linked != tt.linked || rep.Unsupported != tt.unsup {
				t.Fatalf("report %+v: want linked %v, unsupported %v", rep, tt.linked, tt.unsup)
			}
			err = reportError("one", rep, false)
			if got := errors.Is(err, ErrLinkedPath) && errors.Is(err, ErrInvalidConfig); got != tt.linked {
				t.Errorf("Start's error %v: ErrLinkedPath and ErrInvalidConfig %v, want %v", err, got, tt.linked)
			}
			if got := errors.Is(err, ErrUnsupported); got != (tt.unsup && !tt.linked) {
				t.Errorf("Start's error %v: ErrUnsupported %v", err, got)
			}
		})
	}
}

// TestPlanLimits: the plan takes a hard limit at or below the host's own,
// and refuses one above it: the entry's child, which sets the limits while
// it still holds its capabilities, could raise it, where the Go helper,
// having dropped them, could not. It lowers the hard limit of a process
// of its own (this test binary again), since that cannot be undone.
func TestPlanLimits(t *testing.T) {
	const inChild = "MCPHOST_TEST_PLAN_LIMITS"
	if os.Getenv(inChild) == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPlanLimits$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), inChild+"=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return
	}
	var host unix.Rlimit
	if err := unix.Prlimit(0, unix.RLIMIT_NPROC, nil, &host); err != nil {
		t.Fatal(err)
	}
	const hard = 1000
	if host.Max > hard {
		if err := unix.Prlimit(0, unix.RLIMIT_NPROC, &unix.Rlimit{Cur: min(host.Cur, hard), Max: hard}, nil); err != nil {
			t.Fatal(err)
		}
		host.Max = hard
	}
	lims, err := planLimits(&spec{NProc: int(host.Max)})
	if err != nil || len(lims) != 1 || lims[0].Max != host.Max || lims[0].Resource != unix.RLIMIT_NPROC {
		t.Errorf("planLimits(NProc %d) = %+v, %v; want RLIMIT_NPROC %d", host.Max, lims, err, host.Max)
	}
	if lims, err := planLimits(&spec{NProc: int(host.Max) + 1}); err == nil || !strings.Contains(err.Error(), "above the host's hard limit") {
		t.Errorf("planLimits(NProc %d) = %+v, %v; want the refusal of a limit above the host's", host.Max+1, lims, err)
	}
}

// FuzzParseUmask: parseUmask, which the helper's entry runs with no
// runtime to catch a panic, never panics, and finds what a plain reading
// of the lines finds.
func FuzzParseUmask(f *testing.F) {
	f.Add([]byte("Name:\tnode\nUmask:\t0022\nState:\tS (sleeping)\n"))
	f.Add([]byte("Name:\tUmask:\t0777\nUmask:\t0002\n"))
	f.Add([]byte("\nUmask:"))
	f.Add([]byte("\nUmask:\t0099\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, ok := parseUmask(b)
		var want uint32
		found := false
		for _, line := range strings.Split(string(b), "\n")[1:] {
			if v, cut := strings.CutPrefix(line, "Umask:"); cut {
				v = strings.TrimLeft(v, " \t")
				if n, err := strconv.ParseUint(v, 8, 32); err == nil && len(v) <= 4 && v != "" && strings.Trim(v, "01234567") == "" {
					want, found = uint32(n), true
				}
				break
			}
		}
		if ok != found || m != want {
			t.Errorf("parseUmask(%q) = %o, %v; a reading of the lines finds %o, %v", b, m, ok, want, found)
		}
	})
}
