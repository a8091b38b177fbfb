package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The tests here run startOff, the Config.Off of systems without the
// Linux helper (macOS, the BSDs; Windows has its own tree), on this
// kernel: the environment, the private TMPDIR and the end of the process
// tree through its process group and the process table.

func startHostileOff(t *testing.T, cfg Config) *session {
	t.Helper()
	cfg.Off = true
	cfg.Argv = []string{hostilePath()}
	cfg.Name = "hostile"
	if cfg.HostEnv == nil {
		cfg.HostEnv = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := startOff(ctx, cfg)
	if err != nil {
		t.Fatalf("startOff: %v", err)
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

// TestOffTreeEndsAtClose: a server that stays after its stdin closed, a
// child in its group and one that left the group for a session of its own
// all die at Close.
func TestOffTreeEndsAtClose(t *testing.T) {
	wt := t.TempDir()
	inGroup, ownSession := filepath.Join(wt, "group"), filepath.Join(wt, "session")
	s := startHostileOff(t, Config{Worktree: wt})
	s.must("linger")
	s.must("ignore-signals")
	if got := s.p.Confinement(); got != "none" {
		t.Errorf("Confinement = %q, want none", got)
	}
	s.must("child", inGroup)
	s.must("child", ownSession, "setsid")
	waitGrowing(t, inGroup)
	waitGrowing(t, ownSession)
	if err := s.p.Close(100 * time.Millisecond); err != nil {
		t.Fatalf("Close: %v", err)
	}
	stillNow(t, inGroup, ownSession)
}

// TestOffTreeEndsAtGracefulClose: a server that exits as its stdin closes
// leaves a child in a session of its own; that child was noted as the
// tree's when Close began, so it dies too, though it lost its parent.
func TestOffTreeEndsAtGracefulClose(t *testing.T) {
	wt := t.TempDir()
	ownSession := filepath.Join(wt, "session")
	s := startHostileOff(t, Config{Worktree: wt})
	s.must("child", ownSession, "setsid")
	waitGrowing(t, ownSession)
	if err := s.p.Close(5 * time.Second); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got := s.p.ExitStatus(); got != "exit status 0" {
		t.Errorf("ExitStatus = %q, want exit status 0 (the server exited on its own)", got)
	}
	stillNow(t, ownSession)
}

// TestOffTreeEndsWithServer: when the server exits on its own, what it
// left in its group is ended before Done closes. (A child that left the
// group is reparented to init when the server exits, before anything can
// find it: that one survives; see DESIGN.md.)
func TestOffTreeEndsWithServer(t *testing.T) {
	wt := t.TempDir()
	inGroup := filepath.Join(wt, "group")
	s := startHostileOff(t, Config{Worktree: wt})
	s.must("child", inGroup)
	waitGrowing(t, inGroup)
	s.in.Encode(map[string]any{"op": "exit", "args": []string{"3"}})
	select {
	case <-s.p.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("Done not closed 20s after the server exited")
	}
	if got := s.p.ExitStatus(); got != "exit status 3" {
		t.Errorf("ExitStatus = %q, want exit status 3", got)
	}
	stillNow(t, inGroup)
}

// TestOffEnvironment: the host's secrets stay out, TMPDIR is the private
// directory, and Close removes it.
func TestOffEnvironment(t *testing.T) {
	wt := t.TempDir()
	home := t.TempDir()
	s := startHostileOff(t, Config{
		Worktree: wt,
		HostEnv:  []string{"PATH=/usr/bin:/bin", "HOME=" + home, "AWS_SECRET_ACCESS_KEY=hunter2", "PASSME=1"},
		EnvPass:  []string{"PASSME"},
		Env:      map[string]string{"SET": "2", "TMPDIR": "/elsewhere"},
	})
	tmp := s.p.TempDir()
	if tmp == "" {
		t.Fatal("no TempDir")
	}
	env := strings.Split(s.must("env").Out, "\n")
	for _, want := range []string{"PATH=/usr/bin:/bin", "HOME=" + home, "PASSME=1", "SET=2", "TMPDIR=" + tmp, "TMP=" + tmp, "TEMP=" + tmp} {
		if !slices.Contains(env, want) {
			t.Errorf("environment lacks %s: %q", want, env)
		}
	}
	for _, kv := range env {
		if strings.Contains(kv, "hunter2") {
			t.Errorf("the host's secret reached the server: %s", kv)
		}
	}
	s.must("write", filepath.Join(tmp, "scratch"), "x")
	if err := s.p.Close(time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("TempDir %s after Close: %v, want it removed", tmp, err)
	}
}

// TestOffInvalid: a bad Config is refused before anything starts.
func TestOffInvalid(t *testing.T) {
	for _, cfg := range []Config{
		{Name: "x", Off: true, Worktree: t.TempDir()},
		{Name: "x", Off: true, Argv: []string{hostilePath()}, Worktree: "relative"},
		{Name: "x", Off: true, Argv: []string{hostilePath()}, Worktree: filepath.Join(t.TempDir(), "missing")},
		{Name: "x", Off: true, Argv: []string{hostilePath()}, Worktree: t.TempDir(), EnvPass: []string{"A=B"}},
	} {
		_, err := startOff(context.Background(), cfg)
		if !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("startOff(%+v) = %v, want ErrInvalidConfig", cfg, err)
		}
	}
}

// TestOffConcurrent: servers started and closed from many goroutines at
// once, each Close racing the server's own exit and other Close calls,
// leave nothing behind.
func TestOffConcurrent(t *testing.T) {
	wt := t.TempDir()
	const n = 12
	var wg sync.WaitGroup
	beats := make([]string, n)
	for i := range n {
		beats[i] = filepath.Join(wt, fmt.Sprintf("beat%d", i))
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			p, err := startOff(ctx, Config{Name: "hostile", Off: true, Argv: []string{hostilePath()}, Worktree: wt,
				HostEnv: []string{"PATH=/usr/bin:/bin"}})
			if err != nil {
				t.Error(err)
				return
			}
			fmt.Fprintf(p.Stdin(), `{"op":"child","args":[%q,"setsid"]}`+"\n", beats[i])
			if reply, _ := bufio.NewReader(p.Stdout()).ReadString('\n'); !strings.HasPrefix(reply, `{"ok":true`) {
				t.Errorf("child %d: %q", i, reply)
			}
			var closers sync.WaitGroup
			for range 3 {
				closers.Go(func() {
					if err := p.Close(time.Duration(i%3) * 50 * time.Millisecond); err != nil {
						t.Error(err)
					}
				})
			}
			closers.Wait()
		})
	}
	wg.Wait()
	// Every Close has returned: a child that began (or begins) to write
	// would be one that outlived it.
	stillNow(t, beats...)
}

// offHostEnv, set to a JSON offHost, makes the test binary a host that
// starts the hostile fixture with startOff, sends it the requests, prints
// "ready" and waits to be killed (TestOffHostDeath).
const offHostEnv = "SANDBOX_TEST_OFF_HOST"

type offHost struct {
	Hostile, Worktree string
	Ops               []json.RawMessage
}

func offHostMain(arg string) int {
	var h offHost
	if err := json.Unmarshal([]byte(arg), &h); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := startOff(ctx, Config{Name: "hostile", Argv: []string{h.Hostile}, Worktree: h.Worktree, Off: true,
		HostEnv: []string{"PATH=/usr/bin:/bin"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("tempdir:", p.TempDir())
	fmt.Println("pgid:", p.helper.Pid) // the server leads its group
	sc := bufio.NewScanner(p.Stdout())
	for _, op := range h.Ops {
		p.Stdin().Write(append(op, '\n'))
		if !sc.Scan() {
			fmt.Fprintln(os.Stderr, "no reply")
			return 1
		}
	}
	fmt.Println("ready")
	select {}
}

// TestOffHostDeath: when a host that runs a server with startOff (macOS,
// the BSDs) is SIGKILLed, the server's guard ends its process group: the
// server, which ignores its closed stdin and SIGTERM, and its child in the
// group.
func TestOffHostDeath(t *testing.T) {
	wt := t.TempDir()
	inGroup := filepath.Join(wt, "group")
	ops, err := json.Marshal(offHost{Hostile: hostilePath(), Worktree: wt, Ops: []json.RawMessage{
		json.RawMessage(`{"op":"linger"}`), json.RawMessage(`{"op":"ignore-signals"}`),
		json.RawMessage(fmt.Sprintf(`{"op":"child","args":[%q]}`, inGroup)),
	}})
	if err != nil {
		t.Fatal(err)
	}
	host := exec.Command(os.Args[0], "-test.run=^$")
	host.Env = append(os.Environ(), offHostEnv+"="+string(ops))
	var stderr lockedBuffer
	host.Stderr = &stderr
	host.WaitDelay = time.Second
	out, err := host.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	defer host.Process.Kill()
	sc := bufio.NewScanner(out)
	ready := false
	for sc.Scan() {
		if tmp, ok := strings.CutPrefix(sc.Text(), "tempdir: "); ok && tmp != "" {
			t.Cleanup(func() { os.RemoveAll(tmp) })
		}
		if pg, ok := strings.CutPrefix(sc.Text(), "pgid: "); ok {
			// When the guard fails, the server and its child, which
			// ignore SIGTERM, would run on after the test.
			if pgid, err := strconv.Atoi(pg); err == nil && pgid > 1 {
				t.Cleanup(func() { syscall.Kill(-pgid, syscall.SIGKILL) })
			}
		}
		if sc.Text() == "ready" {
			ready = true
			break
		}
	}
	if !ready {
		host.Wait()
		t.Fatalf("the host never got ready: %s", stderr.String())
	}
	waitGrowing(t, inGroup)
	if err := host.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	host.Wait()
	waitStill(t, inGroup)
}

// TestOffGuardStopped: a server of the same user that stops its guard
// (SIGSTOP) cannot hold Close up: release kills the guard, stopped or not.
func TestOffGuardStopped(t *testing.T) {
	s := startHostileOff(t, Config{Worktree: t.TempDir()})
	guards := 0
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if strings.HasPrefix(string(cmdline), "sh\x00-c\x00"+guardScript) && strings.Contains(string(status), fmt.Sprintf("\nPPid:\t%d\n", os.Getpid())) {
			syscall.Kill(pid, syscall.SIGSTOP)
			guards++
		}
	}
	if guards == 0 {
		t.Fatal("no guard of this host found")
	}
	done := make(chan error, 1)
	go func() { done <- s.p.Close(100 * time.Millisecond) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return with the guard stopped")
	}
}
