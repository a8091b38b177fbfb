package sandbox

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// parseMountPoints returns the mount points listed in a
// /proc/self/mountinfo text, in order, without duplicates.
func parseMountPoints(r io.Reader) ([]string, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	seen := make(map[string]bool)
	var out []string
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		// "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw"
		// The fifth field is the mount point, with space, tab, newline and
		// backslash written as octal escapes.
		f := strings.Fields(line)
		if len(f) < 5 {
			return nil, fmt.Errorf("mountinfo line %q has fewer than 5 fields", line)
		}
		mp, err := unescapeOctal(f[4])
		if err != nil {
			return nil, fmt.Errorf("mountinfo line %q: %v", line, err)
		}
		if !strings.HasPrefix(mp, "/") {
			return nil, fmt.Errorf("mountinfo line %q: mount point is not absolute", line)
		}
		if !seen[mp] {
			seen[mp] = true
			out = append(out, mp)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// unescapeOctal undoes the kernel's "\ooo" escaping in /proc text fields.
func unescapeOctal(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		if i+4 > len(s) {
			return "", fmt.Errorf("truncated escape in %q", s)
		}
		v, err := strconv.ParseUint(s[i+1:i+4], 8, 8)
		if err != nil {
			return "", fmt.Errorf("bad escape in %q", s)
		}
		b.WriteByte(byte(v))
		i += 3
	}
	return b.String(), nil
}

// parseStatPPid returns the parent pid from the text of /proc/PID/stat.
// The second field is the command name in parentheses and may itself
// contain spaces and parentheses, so the fields after it are found from
// the last ')'.
func parseStatPPid(stat []byte) (int, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("stat %q: no command name", stat)
	}
	// After ") " come the state and then the parent pid.
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 2 {
		return 0, fmt.Errorf("stat %q: too few fields", stat)
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil || ppid < 0 {
		return 0, fmt.Errorf("stat %q: bad parent pid %q", stat, f[1])
	}
	return ppid, nil
}

// procStat is what parseStat reads from /proc/PID/stat.
type procStat struct {
	state      byte
	ppid, pgrp int
	start      uint64 // in clock ticks since boot
}

// parseStat returns the state, parent pid, process group and start time
// from the text of /proc/PID/stat, found from the last ')' as in
// parseStatPPid.
func parseStat(stat []byte) (procStat, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("stat %q: no command name", stat)
	}
	// After ") " come the state (field 3), the parent pid, the process
	// group, ..., and the start time (field 22).
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, fmt.Errorf("stat %q: too few fields", stat)
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil || ppid < 0 {
		return procStat{}, fmt.Errorf("stat %q: bad parent pid %q", stat, f[1])
	}
	pgrp, err := strconv.Atoi(f[2])
	if err != nil || pgrp < 0 {
		return procStat{}, fmt.Errorf("stat %q: bad process group %q", stat, f[2])
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("stat %q: bad start time %q", stat, f[19])
	}
	return procStat{state: f[0][0], ppid: ppid, pgrp: pgrp, start: start}, nil
}
