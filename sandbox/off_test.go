package sandbox

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestGroupTree(t *testing.T) {
	const self = 100
	tests := []struct {
		name  string
		table []procEntry
		pgid  int
		known map[int]uint64
		want  []int
	}{
		{"leader alone", []procEntry{{pid: 10, ppid: self, pgid: 10}}, 10, nil, []int{10}},
		{"gone", []procEntry{{pid: 11, ppid: 1, pgid: 11}}, 10, nil, nil},
		{"group members, whoever their parent",
			[]procEntry{{pid: 10, ppid: self, pgid: 10}, {pid: 12, ppid: 1, pgid: 10}, {pid: 13, ppid: 50, pgid: 50}}, 10, nil, []int{10, 12}},
		{"left the group, parent alive, and its children",
			[]procEntry{{pid: 10, ppid: self, pgid: 10}, {pid: 20, ppid: 10, pgid: 20}, {pid: 21, ppid: 20, pgid: 21}}, 10, nil, []int{10, 20, 21}},
		{"left the group, parent exited (the limit)",
			[]procEntry{{pid: 20, ppid: 1, pgid: 20}}, 10, nil, nil},
		{"zombies are skipped, their children are not",
			[]procEntry{{pid: 10, ppid: self, pgid: 10, zombie: true}, {pid: 20, ppid: 10, pgid: 20}}, 10, nil, []int{20}},
		{"known and still the same process, with its children",
			[]procEntry{{pid: 20, ppid: 1, pgid: 20, start: 7}, {pid: 21, ppid: 20, pgid: 20, start: 8}}, 10, map[int]uint64{20: 7}, []int{20, 21}},
		{"known pid now another process",
			[]procEntry{{pid: 20, ppid: 1, pgid: 20, start: 9}}, 10, map[int]uint64{20: 7}, nil},
		{"never the host, init or a loop",
			[]procEntry{{pid: self, ppid: 10, pgid: 10}, {pid: 1, ppid: 0, pgid: 10}, {pid: 10, ppid: 30, pgid: 10}, {pid: 30, ppid: 10, pgid: 30}}, 10, nil, []int{10, 30}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []int
			for _, e := range groupTree(tt.table, tt.pgid, tt.known, self) {
				got = append(got, e.pid)
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("groupTree = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParseStat(t *testing.T) {
	tests := []struct {
		stat    string
		want    procStat
		wantErr bool
	}{
		{"42 (sleep) S 7 42 42 0 -1 4194560 99 0 0 0 0 0 0 0 20 0 1 0 5017 1000 2", procStat{'S', 7, 42, 5017}, false},
		{"42 (a b) c) Z 1 9 9 0 -1 4194560 99 0 0 0 0 0 0 0 20 0 1 0 12 0 0", procStat{'Z', 1, 9, 12}, false},
		{"42 (x) S 7 42 42 0 -1 4194560 99 0 0 0 0 0 0 0 20 0 1 0 soon 1000 2", procStat{}, true},
		{"42 (x) S 7 42 42 0", procStat{}, true},
		{"42 (x) S 7", procStat{}, true},
		{"42 (x) S -1 3", procStat{}, true},
		{"42 (x) S 1 -3", procStat{}, true},
		{"42 (x) SS 1 3", procStat{}, true},
		{"42 x S 1 3", procStat{}, true},
	}
	for _, tt := range tests {
		got, err := parseStat([]byte(tt.stat))
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("parseStat(%q) = %+v, %v; want %+v, error %v", tt.stat, got, err, tt.want, tt.wantErr)
		}
	}
}

// TestUnavailable: without sandbox = "off", a server on a system without
// confinement gets the exact opt-out, and no advice that only Linux could
// follow.
func TestUnavailable(t *testing.T) {
	for _, goos := range []string{"darwin", "windows", "freebsd"} {
		err := unavailable("notes", goos)
		if !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s: %v does not wrap ErrUnsupported", goos, err)
		}
		msg := err.Error()
		for _, want := range []string{goos, `set sandbox = "off" in its [mcp.notes] table`, "a risk"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: %q lacks %q", goos, msg, want)
			}
		}
		for _, never := range []string{"sysctl", "apparmor", "user namespaces may", "/proc", "enable"} {
			if strings.Contains(strings.ToLower(msg), never) {
				t.Errorf("%s: %q gives Linux-only advice (%q)", goos, msg, never)
			}
		}
	}
}
