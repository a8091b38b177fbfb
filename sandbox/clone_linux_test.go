package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestNetnsOwn: every server without the network is in a new, empty
// network namespace of its own, never the host's nor another server's,
// even when several start at once (a root host starts the helper before
// its spec is ready; the namespace is made at the helper's clone),
// whichever helper starts it: the embedded program's entry (a plan), its
// Go helper (a spec), the host program. It fails with CLONE_NEWNET left
// out of spawn.
func TestNetnsOwn(t *testing.T) {
	requireConfinement(t)
	host, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	// More variables than a plan holds (planMaxPtrs): the embedded
	// program's Go helper starts the server.
	big := map[string]string{}
	for i := range planMaxPtrs {
		big[fmt.Sprintf("E%d", i)] = "x"
	}
	cases := []struct {
		name string
		env  map[string]string
		opts startOptions
	}{
		{"entry", nil, startOptions{}},
		{"go-helper", big, startOptions{}},
		{"host-program", nil, startOptions{selfHelper: true}},
	}
	const n = 3
	type started struct {
		name string
		s    *session
	}
	all := make([]started, len(cases)*n)
	var wg sync.WaitGroup
	for c, tc := range cases {
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cfg := Config{Name: fmt.Sprintf("net-%s%d", tc.name, i), Worktree: t.TempDir(), Env: tc.env}
				all[c*n+i] = started{tc.name, startHostileOpts(t, cfg, tc.opts)}
			}()
		}
	}
	wg.Wait()
	seen := map[string]string{}
	for i, st := range all {
		if st.s == nil {
			t.FailNow()
		}
		what := fmt.Sprintf("server %d (%s)", i, st.name)
		ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", st.s.p.helper.Pid))
		if err != nil {
			t.Fatal(err)
		}
		if ns == host {
			t.Errorf("%s is in the host's network namespace %s", what, ns)
		}
		if other, ok := seen[ns]; ok {
			t.Errorf("%s and %s share the network namespace %s", other, what, ns)
		}
		seen[ns] = what
		if got := st.s.must("interfaces").Out; got != "lo up=false addrs=0" {
			t.Errorf("%s sees interfaces %q, want only lo, down", what, got)
		}
		if st.name == "go-helper" {
			last := fmt.Sprintf("E%d=x", planMaxPtrs-1)
			if got := st.s.must("env").Out; !slices.Contains(strings.Split(got, "\n"), last) {
				t.Errorf("%s: its environment lacks %s", what, last)
			}
		}
	}
}

// TestCloneAgrees: deliver refuses a spec that needs another start of the
// helper than the one it had (a root host starts the helper before its
// spec is ready): every field of clone counts.
func TestCloneAgrees(t *testing.T) {
	lease := &serverIDLease{}
	base := func() *spec {
		return &spec{FileSize: 1 << 20, Cgroups: []string{"/sys/fs/cgroup/pids/x"}, lease: lease}
	}
	if !cloneOf(base()).agrees(base()) {
		t.Fatal("a spec disagrees with its own clone")
	}
	for name, change := range map[string]func(*spec){
		"off":          func(s *spec) { s.Off = true },
		"reduced":      func(s *spec) { s.Reduced = true },
		"network":      func(s *spec) { s.Network = true },
		"proxy":        func(s *spec) { s.Proxy = ProxyPort },
		"direct":       func(s *spec) { s.Direct = &directSpec{} },
		"userNSLimits": func(s *spec) { s.UserNSLimits = map[string]int64{"max_inotify_instances": 1} },
		"fileSize":     func(s *spec) { s.FileSize++ },
		"cgroups":      func(s *spec) { s.Cgroups = append(s.Cgroups, "/sys/fs/cgroup/memory/x") },
		"CgroupsSelf":  func(s *spec) { s.CgroupsSelf = true },
		"lease":        func(s *spec) { s.lease = &serverIDLease{} },
	} {
		sp := base()
		change(sp)
		if cloneOf(base()).agrees(sp) {
			t.Errorf("a spec with another %s agrees", name)
		}
	}
}

// TestTooManyIdmaps: a root host's server with more granted paths to
// idmap than one start can pass to the helper (maxIdmap) is refused as a
// config error that says what to do, and leaves nothing behind.
func TestTooManyIdmaps(t *testing.T) {
	requireConfinement(t)
	if !dropsRoot() {
		t.Skip("only a root host idmaps grants")
	}
	base := t.TempDir()
	var read []string
	for i := 0; i < maxIdmap; i++ {
		d := filepath.Join(base, strconv.Itoa(i))
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		read = append(read, d)
	}
	// With the worktree, one more than the bound.
	before, _ := filepath.Glob(filepath.Join(os.TempDir(), "mcphost-many-*"))
	_, err := Start(context.Background(), Config{Name: "many", Argv: []string{"/bin/true"}, Worktree: t.TempDir(), Read: read, HostEnv: []string{"PATH=/usr/bin:/bin"}})
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "grant fewer, broader directories") {
		t.Fatalf("Start: %v, want a config error about the number of grants", err)
	}
	if after, _ := filepath.Glob(filepath.Join(os.TempDir(), "mcphost-many-*")); len(after) != len(before) {
		t.Errorf("temporary directories left: %v (before: %v)", after, before)
	}
}
