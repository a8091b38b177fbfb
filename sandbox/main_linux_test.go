package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fixtureDir holds the fixture programs TestMain builds from testdata.
var fixtureDir string

func hostilePath() string { return filepath.Join(fixtureDir, "hostile") }
func hostPath() string    { return filepath.Join(fixtureDir, "host") }

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

// goHelper runs every start through the Go helper's steps, where the
// helper's entry would start the server (prestart_linux.go): make test
// runs the package both ways.
var goHelper = flag.Bool("go-helper", false, "start every server through the Go helper, never the prestart")

func testMain(m *testing.M) int {
	if v := os.Getenv(offHostEnv); v != "" {
		return offHostMain(v)
	}
	if dir := os.Getenv(helperCacheEnv); dir != "" {
		return helperCacheHost(dir)
	}
	flag.Parse()
	if *goHelper {
		prestartWanted = func() bool { return false }
	}
	dir, err := os.MkdirTemp("", "sandbox-fixtures-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	// Other users (the non-root test) must be able to run the fixtures.
	if err := os.Chmod(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cmd := exec.Command("go", "build", "-o", dir+"/", "./testdata/hostile", "./testdata/host")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the fixtures: %v\n%s", err, out)
		return 1
	}
	fixtureDir = dir
	return m.Run()
}

// requireConfinement skips the test, saying why, when this kernel cannot
// confine; on the CI kernel it never skips.
func requireConfinement(t *testing.T) string {
	t.Helper()
	conf, err := Probe()
	if errors.Is(err, ErrUnsupported) {
		t.Skipf("this kernel cannot confine: %v", err)
	}
	if err != nil {
		t.Fatalf("Probe: %v", err)
	}
	return conf
}

// kernelABI returns the Landlock ABI of this kernel.
func kernelABI(t *testing.T) int {
	t.Helper()
	abi, err := landlockABI()
	if err != nil {
		t.Skipf("no Landlock: %v", err)
	}
	return abi
}

// reply is the hostile fixture's answer to one request.
type reply struct {
	OK    bool   `json:"ok"`
	Out   string `json:"out"`
	Err   string `json:"err"`
	Errno string `json:"errno"`
}

// session talks to a running hostile fixture.
type session struct {
	t  *testing.T
	p  *Process
	in *json.Encoder
	sc *bufio.Scanner
}

// startHostile starts the hostile fixture (unless cfg.Argv says otherwise)
// and closes it when the test ends.
func startHostile(t *testing.T, cfg Config) *session {
	return startHostileOpts(t, cfg, startOptions{})
}

func startHostileOpts(t *testing.T, cfg Config, opts startOptions) *session {
	t.Helper()
	if cfg.Argv == nil {
		cfg.Argv = []string{hostilePath()}
	}
	if cfg.HostEnv == nil {
		cfg.HostEnv = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}
	}
	if cfg.Name == "" {
		cfg.Name = "hostile"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := start(ctx, cfg, opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := p.Close(time.Second); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	sc := bufio.NewScanner(p.Stdout())
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	return &session{t: t, p: p, in: json.NewEncoder(p.Stdin()), sc: sc}
}

// do sends one request and returns the reply.
func (s *session) do(op string, args ...string) reply {
	s.t.Helper()
	if err := s.in.Encode(map[string]any{"op": op, "args": args}); err != nil {
		s.t.Fatalf("%s %q: writing the request: %v (server: %q)", op, args, err, s.p.ExitStatus())
	}
	if !s.sc.Scan() {
		s.t.Fatalf("%s %q: no reply: %v", op, args, s.sc.Err())
	}
	var r reply
	if err := json.Unmarshal(s.sc.Bytes(), &r); err != nil {
		s.t.Fatalf("%s %q: bad reply %q: %v", op, args, s.sc.Bytes(), err)
	}
	return r
}

// must sends a request that must succeed.
func (s *session) must(op string, args ...string) reply {
	s.t.Helper()
	r := s.do(op, args...)
	if !r.OK {
		s.t.Fatalf("%s %q failed: %s", op, args, r.Err)
	}
	return r
}

// op is one request to the hostile fixture and what must come of it.
type op struct {
	name   string
	op     string
	args   []string
	ok     bool
	errnos []string // when failing: one of these, if any are given
	errHas string   // when failing: what the error must say, if given
	// errIs, when given, judges the error of a failing op.
	errIs func(string) bool
}

// check runs ops, each as a subtest.
func (s *session) check(t *testing.T, ops []op) {
	t.Helper()
	for _, o := range ops {
		r := s.do(o.op, o.args...)
		t.Run(o.name, func(t *testing.T) {
			switch {
			case o.ok && !r.OK:
				t.Errorf("%s %q failed, want success: %s", o.op, o.args, r.Err)
			case !o.ok && r.OK:
				t.Errorf("%s %q succeeded (output %q), want failure", o.op, o.args, r.Out)
			case !o.ok && len(o.errnos) > 0 && !contains(o.errnos, r.Errno):
				t.Errorf("%s %q failed with %s (%s), want one of %v", o.op, o.args, r.Errno, r.Err, o.errnos)
			case !o.ok && !strings.Contains(r.Err, o.errHas):
				t.Errorf("%s %q failed with %q, want an error saying %q", o.op, o.args, r.Err, o.errHas)
			case !o.ok && o.errIs != nil && !o.errIs(r.Err):
				t.Errorf("%s %q failed with %q", o.op, o.args, r.Err)
			}
		})
	}
}

// goAllocFailed reports whether err is how a Go child ends when its
// allocations fail under RLIMIT_DATA. Go's runtime words it by where the
// allocation failed: "runtime: out of memory", "out of memory allocating
// heap arena metadata", or "runtime: cannot allocate memory".
func goAllocFailed(err string) bool {
	return strings.Contains(err, "exit status 2: fatal error: ") &&
		(strings.Contains(err, "out of memory") || strings.Contains(err, "cannot allocate memory"))
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// statusField returns a field of /proc/self/status text.
func statusField(status, name string) string {
	for _, line := range strings.Split(status, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k == name {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// waitGrowing waits until the file at p exists and grows, proving that
// whatever writes it is running.
func waitGrowing(t *testing.T, p string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var first int64 = -1
	for time.Now().Before(deadline) {
		if st, err := os.Stat(p); err == nil {
			if first < 0 {
				first = st.Size()
			} else if st.Size() > first {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s is not growing: the writer never ran", p)
}

// stillNow fails unless each file at paths stays as it is now (absent or
// of its size) for half a second: whatever wrote it, every 10ms, is gone
// already. It is the check after Close or Done, which promise that.
func stillNow(t *testing.T, paths ...string) {
	t.Helper()
	size := func(p string) int64 {
		st, err := os.Stat(p)
		if err != nil {
			return -1
		}
		return st.Size()
	}
	before := make([]int64, len(paths))
	for i, p := range paths {
		before[i] = size(p)
	}
	time.Sleep(500 * time.Millisecond)
	for i, p := range paths {
		if now := size(p); now != before[i] {
			t.Errorf("%s changed after the server was done (%d -> %d bytes): a process outlived it", p, before[i], now)
		}
	}
}

// waitStill waits until the file at p has stopped growing for a while and
// fails if it has not within 10s: for a process that dies at some moment
// after the check begins (the host's death, seen through a pipe).
func waitStill(t *testing.T, p string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	last, since := int64(-1), time.Now()
	for time.Now().Before(deadline) {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() != last {
			last, since = st.Size(), time.Now()
		} else if time.Since(since) > 300*time.Millisecond {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s still grows 10s later: a process outlived its server", p)
}

// mkfile writes a file, creating its directory.
func mkfile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
