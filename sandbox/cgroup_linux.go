package sandbox

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// cgroupRoot is where cgroup file systems are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// cgroup is the cgroup (v2) or pair of cgroups (v1: pids and memory) the
// host made for one server. The helper joins them before it starts the
// server, so every process of the server is counted from its first.
type cgroup struct {
	dirs    []string // the directories the helper joins (cgroup.procs)
	memDir  string   // where the memory controller's files are
	version int      // 1 or 2
}

// newCgroup makes a cgroup for server name under the host process's own,
// with limits l, or reports why it cannot (then rlimits stand in). Only a
// root host tries: an ordinary user rarely has a delegated cgroup tree in
// which it may enable controllers.
func newCgroup(name string, l Limits) (*cgroup, error) {
	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	v1 := map[string]string{}
	var v2 string
	sc := bufio.NewScanner(bytes.NewReader(own))
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			v2 = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			v1[c] = parts[2]
		}
	}
	leaf := "mcphost-" + tempPrefix(name) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if pidsPath, ok := v1["pids"]; ok {
		memPath, ok := v1["memory"]
		if !ok {
			return nil, errors.New("cgroup v1 without the memory controller")
		}
		pids := filepath.Join(cgroupRoot, "pids", pidsPath, leaf)
		mem := filepath.Join(cgroupRoot, "memory", memPath, leaf)
		cg := &cgroup{dirs: []string{pids, mem}, memDir: mem, version: 1}
		// memsw (memory and swap) may not be set below memory, so it goes
		// second.
		if err := cg.make([][2]string{
			{filepath.Join(pids, "pids.max"), strconv.Itoa(l.Processes)},
			{filepath.Join(mem, "memory.limit_in_bytes"), strconv.FormatInt(l.Memory, 10)},
			{filepath.Join(mem, "memory.memsw.limit_in_bytes"), strconv.FormatInt(l.Memory, 10)},
		}, filepath.Join(mem, "memory.memsw.limit_in_bytes")); err != nil {
			return nil, err
		}
		return cg, nil
	}
	if v2 == "" {
		return nil, errors.New("no cgroup of this process found")
	}
	parent := filepath.Join(cgroupRoot, v2)
	ctl, err := os.ReadFile(filepath.Join(parent, "cgroup.subtree_control"))
	if err != nil {
		return nil, err
	}
	if f := strings.Fields(string(ctl)); !slices.Contains(f, "pids") || !slices.Contains(f, "memory") {
		return nil, fmt.Errorf("cgroup %s does not delegate the pids and memory controllers", parent)
	}
	dir := filepath.Join(parent, leaf)
	cg := &cgroup{dirs: []string{dir}, memDir: dir, version: 2}
	if err := cg.make([][2]string{
		{filepath.Join(dir, "pids.max"), strconv.Itoa(l.Processes)},
		{filepath.Join(dir, "memory.max"), strconv.FormatInt(l.Memory, 10)},
		{filepath.Join(dir, "memory.swap.max"), "0"},
	}, filepath.Join(dir, "memory.swap.max")); err != nil {
		return nil, err
	}
	return cg, nil
}

// make creates the directories and writes the limit files, file and value,
// in order; optional names a file that may be missing (swap accounting is
// a kernel option).
func (cg *cgroup) make(files [][2]string, optional string) error {
	for _, d := range cg.dirs {
		if err := os.Mkdir(d, 0o755); err != nil {
			cg.remove()
			return err
		}
	}
	for _, fv := range files {
		f, v := fv[0], fv[1]
		err := os.WriteFile(f, []byte(v), 0)
		if err != nil && !(f == optional && errors.Is(err, os.ErrNotExist)) {
			cg.remove()
			return fmt.Errorf("writing %s: %w", f, err)
		}
	}
	return nil
}

// oomKilled reports whether the memory limit made the kernel kill a
// process of the server.
func (cg *cgroup) oomKilled() bool {
	name := "memory.events"
	if cg.version == 1 {
		name = "memory.oom_control"
	}
	b, err := os.ReadFile(filepath.Join(cg.memDir, name))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == "oom_kill" && strings.TrimSpace(v) != "0" {
			return true
		}
	}
	return false
}

// remove removes the cgroups, which must be empty: the helper and every
// process of the server have exited.
func (cg *cgroup) remove() error {
	var errs []error
	for _, d := range cg.dirs {
		if err := os.Remove(d); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
