package sandbox

import (
	"fmt"
	"os"
	"sync"
	"testing"
)

// TestNetnsOwn: every server without the network is born in a new, empty
// network namespace of its own, never the host's nor another server's,
// whether the root host made it beforehand (netns_linux.go) or the
// helper's clone made it (where the host's thread could not enter the one
// made beforehand); and no thread of the host is left in one.
func TestNetnsOwn(t *testing.T) {
	requireConfinement(t)
	host, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []bool{false, true} {
		t.Run(fmt.Sprintf("badNetns=%v", bad), func(t *testing.T) {
			const n = 6
			sessions := make([]*session, n)
			var wg sync.WaitGroup
			for i := range sessions {
				wg.Add(1)
				go func() {
					defer wg.Done()
					sessions[i] = startHostileOpts(t, Config{Name: fmt.Sprintf("net%d", i), Worktree: t.TempDir()}, startOptions{badNetns: bad})
				}()
			}
			wg.Wait()
			seen := map[string]int{}
			for i, s := range sessions {
				if s == nil {
					t.FailNow()
				}
				ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", s.p.helper.Pid))
				if err != nil {
					t.Fatal(err)
				}
				if ns == host {
					t.Errorf("server %d is in the host's network namespace %s", i, ns)
				}
				if j, ok := seen[ns]; ok {
					t.Errorf("servers %d and %d share the network namespace %s", j, i, ns)
				}
				seen[ns] = i
				if got := s.must("interfaces").Out; got != "lo up=false addrs=0" {
					t.Errorf("server %d sees interfaces %q, want only lo, down", i, got)
				}
			}
			tasks, err := os.ReadDir("/proc/self/task")
			if err != nil {
				t.Fatal(err)
			}
			for _, task := range tasks {
				ns, err := os.Readlink("/proc/self/task/" + task.Name() + "/ns/net")
				if err == nil && ns != host {
					if _, ok := seen[ns]; ok {
						t.Errorf("thread %s of the host is in a server's network namespace %s", task.Name(), ns)
					}
				}
			}
		})
	}
}

// TestCloneAgrees: deliver refuses a spec that needs another start of the
// helper than the one it had (a root host starts the helper before its
// spec is ready): every field of clone counts.
func TestCloneAgrees(t *testing.T) {
	lease := &serverIDLease{}
	base := func() *spec {
		return &spec{FileSize: 1 << 20, Cgroups: []string{"/sys/fs/cgroup/pids/x"}, cgroupV1: true, lease: lease}
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
		"cgroupV1":     func(s *spec) { s.cgroupV1 = false },
		"lease":        func(s *spec) { s.lease = &serverIDLease{} },
	} {
		sp := base()
		change(sp)
		if cloneOf(base()).agrees(sp) {
			t.Errorf("a spec with another %s agrees", name)
		}
	}
}
