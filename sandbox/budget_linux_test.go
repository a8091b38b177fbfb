package sandbox

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hostInt reads an integer from a file of /proc/sys.
func hostInt(t *testing.T, path string) int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("%s: %v", path, err)
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestKernelBudgetsNonRoot: a non-root host's server (the full tier, in a
// user namespace of its own) cannot take the person's own per-user kernel
// budgets. It opens inotify instances until the kernel refuses and keeps
// them: it gets a quarter of the person's, and the person (nobody, outside
// the sandbox, as their editor would) can still open some. It queues real-
// time signals to a stopped child of its own until the kernel refuses: it
// gets its RLIMIT_SIGPENDING, not the person's. Its descriptor, locked
// memory and message queue limits are capped, and Lacks names what the
// kernel cannot cap per server.
func TestKernelBudgetsNonRoot(t *testing.T) {
	requireConfinement(t)
	if os.Getuid() != 0 {
		t.Skip("needs root to run the host fixture as nobody")
	}
	const nobody = 65534
	instances := hostInt(t, "/proc/sys/user/max_inotify_instances")
	if instances < 8 || instances >= 1<<31-1 {
		t.Skipf("max_inotify_instances is %d here", instances)
	}
	wantInotify := instances / 4
	wt := nobodyDir(t, "mcphost-budget-wt-")
	home := nobodyDir(t, "mcphost-budget-home-")
	// Bounded: past these the hole is open.
	inotifyTry := instances + 8
	const sigTry = 4 * serverSigPending
	ops := fmt.Sprintf(`[
		{"op":"inotify-hold","args":["%d"]},
		{"op":"sigqueue","args":["%d"]},
		{"op":"read","args":["/proc/self/limits"]},
		{"op":"read","args":["/proc/sys/user/max_inotify_watches"]}]`, inotifyTry, sigTry)
	cmd := exec.Command(hostPath(), "-hostile", hostilePath(), "-worktree", wt, "-home", home, "-lacks", "-wait", "-ops", ops)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin"}
	cmd.Dir = wt
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The host holds the server (and its inotify instances) until killed.
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	lines := make(chan []string, 1)
	go func() {
		var l []string
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			l = append(l, sc.Text())
			if sc.Text() == "ready" {
				break
			}
		}
		lines <- l
	}()
	var out []string
	select {
	case out = <-lines:
	case <-time.After(60 * time.Second):
		t.Fatalf("no answer from the host fixture; stderr: %s", stderr.String())
	}
	if len(out) == 0 || out[len(out)-1] != "ready" {
		if strings.Contains(stderr.String(), ErrUnsupported.Error()) {
			t.Skipf("this kernel cannot confine for an ordinary user: %s", stderr.String())
		}
		t.Fatalf("host fixture output:\n%s\nstderr: %s", strings.Join(out, "\n"), stderr.String())
	}
	var replies, lacks []string
	for _, l := range out[:len(out)-1] {
		switch {
		case strings.HasPrefix(l, "lacks: "):
			lacks = append(lacks, l)
		case strings.HasPrefix(l, "{"):
			replies = append(replies, l)
		}
	}
	if !strings.Contains(out[0], "+userns+") || len(replies) != 4 {
		t.Fatalf("host fixture output:\n%s", strings.Join(out, "\n"))
	}

	// The person, beside the server that holds all it could get.
	person := exec.Command(hostilePath(), "inotify-count", "8")
	person.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	got, err := person.Output()
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(got)) != "8 <nil>" {
		t.Errorf("the person's own inotify instances, beside the server: %q, want all 8", got)
	}
	if want := fmt.Sprintf(`{"ok":false,"err":"inotify_init1 after %d: too many open files"`, wantInotify); !strings.HasPrefix(replies[0], want) {
		t.Errorf("the server's inotify instances: %s, want %s (a quarter of the person's %d)", replies[0], want, instances)
	}
	// The stopped child's queue: the server's RLIMIT_SIGPENDING counts
	// every pending signal of its user namespace (a few of the process's
	// own may be among them).
	if !strings.Contains(replies[1], `"errno":"EAGAIN"`) {
		t.Errorf("queued signals: %s, want EAGAIN within %d", replies[1], serverSigPending)
	} else {
		var n int
		fmt.Sscanf(replies[1][strings.Index(replies[1], "after ")+len("after "):], "%d", &n)
		if n < serverSigPending-16 || n > serverSigPending {
			t.Errorf("queued signals: %d, want about %d", n, serverSigPending)
		}
	}
	for _, want := range []struct {
		name  string
		limit int64
	}{
		{"Max pending signals", serverSigPending},
		{"Max msgqueue size", serverMsgQueue},
		{"Max locked memory", serverMemLock},
		{"Max open files", serverNoFile},
	} {
		hard := limitsField(t, replies[2], want.name)
		if hard == "unlimited" {
			t.Errorf("%s: unlimited, want at most %d", want.name, want.limit)
		} else if v, _ := strconv.ParseInt(hard, 10, 64); v > want.limit || v <= 0 {
			t.Errorf("%s: %s, want at most %d", want.name, hard, want.limit)
		}
	}
	watches := hostInt(t, "/proc/sys/user/max_inotify_watches")
	if want := fmt.Sprintf(`{"ok":true,"out":"%d\n"}`, watches/4); replies[3] != want {
		t.Errorf("max_inotify_watches in the server's namespace: %s, want %s", replies[3], want)
	}
	joined := strings.Join(lacks, "\n")
	for _, want := range []string{"SCM_RIGHTS", "pipe pages", "process limit"} {
		if !strings.Contains(joined, want) {
			t.Errorf("Lacks does not name %q:\n%s", want, joined)
		}
	}
}

// limitsField returns the hard limit of the line name of a reply that
// holds /proc/self/limits.
func limitsField(t *testing.T, reply, name string) string {
	t.Helper()
	text := strings.ReplaceAll(reply, `\n`, "\n")
	for _, l := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(l, name); ok {
			if f := strings.Fields(rest); len(f) >= 2 {
				return f[1]
			}
		}
	}
	t.Errorf("no %q in %s", name, reply)
	return ""
}
