package sandbox

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
)

func FuzzParseShebang(f *testing.F) {
	for _, s := range []string{
		"#!/bin/sh\n", "#! /usr/bin/env -S node --x\n", "#!\t/a\tb c\t\n", "#!", "#!\n", "ELF",
		"#!/i\x00j", "#!/i " + strings.Repeat("a", 400),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, head []byte) {
		interp, arg, ok := parseShebang(head)
		if !ok {
			if interp != "" || arg != "" {
				t.Fatalf("not ok but %q, %q", interp, arg)
			}
			return
		}
		if !bytes.HasPrefix(head, []byte("#!")) {
			t.Fatalf("ok without #!: %q", head)
		}
		if interp == "" || strings.ContainsAny(interp, " \t\n\x00") {
			t.Fatalf("interpreter %q", interp)
		}
		if strings.ContainsAny(arg, "\n\x00") || strings.Trim(arg, " \t") != arg {
			t.Fatalf("argument %q", arg)
		}
		if len(interp)+len(arg) > maxShebangLen {
			t.Fatalf("longer than the kernel reads: %q %q", interp, arg)
		}
	})
}

func FuzzEnvProgram(f *testing.F) {
	for _, s := range []string{"node", "-S node --x", "-Snode", "-u X -C /d deno", "A=1 prog", "-S", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, arg string) {
		prog, ok := envProgram(arg)
		if !ok {
			return
		}
		if prog == "" || strings.ContainsAny(prog, " \t\n") {
			t.Fatalf("envProgram(%q) = %q", arg, prog)
		}
		if !strings.Contains(arg, prog) {
			t.Fatalf("envProgram(%q) = %q, not part of the argument", arg, prog)
		}
	})
}

func FuzzDecodeSpec(f *testing.F) {
	for _, s := range []*spec{
		{Path: "/bin/x", Argv: []string{"x"}, Dir: "/w"},
		{Probe: true, Hide: []string{"/tmp"}, Read: []string{"/usr"}},
		{Off: true, Path: "/bin/x", Argv: []string{"x", "y"}, Env: []string{"A=1"}, Dir: "/"},
		{Path: "/x", Argv: []string{"x"}, Dir: "/w", Write: []string{"/w"}, Protect: []string{"/w/s"}, Network: true, MaxABI: 2},
	} {
		b, err := encodeSpec(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(specMagic + "\x00\x00\x00\x02{}"))
	f.Add([]byte("garbage"))
	f.Fuzz(func(t *testing.T, in []byte) {
		s, err := decodeSpec(bytes.NewReader(in))
		if err != nil {
			return
		}
		if body := in[len(specMagic)+4:]; !json.Valid(body) {
			t.Fatalf("accepted the body %q, which is not one JSON text", body)
		}
		if err := s.check(); err != nil {
			t.Fatalf("decoded a spec that fails its check: %v", err)
		}
		b, err := encodeSpec(s)
		if err != nil {
			t.Fatal(err)
		}
		s2, err := decodeSpec(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("re-decoding: %v", err)
		}
		if !reflect.DeepEqual(s, s2) {
			t.Fatalf("round trip changed %+v into %+v", s, s2)
		}
	})
}

func FuzzParseReport(f *testing.F) {
	for _, s := range []string{
		`{"started":true,"confinement":"landlock-v7+seccomp"}`, `{"error":"x","unsupported":true}`,
		`{"exit":"signal: killed"}`, `{}`, `{"started":true,"exit":"x"}`, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := parseReport(line)
		if err != nil {
			return
		}
		if !json.Valid(line) {
			t.Fatalf("accepted %q, which is not one JSON text", line)
		}
		kinds := 0
		for _, b := range []bool{r.Started, r.Error != "", r.Exit != ""} {
			if b {
				kinds++
			}
		}
		if kinds != 1 {
			t.Fatalf("accepted %+v", r)
		}
		r2, err := readReport(bufio.NewReader(bytes.NewReader(encodeReport(r))))
		if err != nil || r2 != r {
			t.Fatalf("round trip: %+v, %v; want %+v", r2, err, r)
		}
	})
}

func FuzzParseMountPoints(f *testing.F) {
	f.Add([]byte("22 27 0:21 / /proc rw - proc proc rw\n27 1 254:1 / / rw - ext4 /dev/vda1 rw\n"))
	f.Add([]byte("101 27 0:50 / /mnt/with\\040space rw - tmpfs tmpfs rw\n"))
	f.Add([]byte("1 2 3 4\n"))
	f.Add([]byte("1 2 3 / /a\\0\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		mps, err := parseMountPoints(bytes.NewReader(in))
		if err != nil {
			return
		}
		seen := make(map[string]bool)
		for _, mp := range mps {
			if !strings.HasPrefix(mp, "/") || seen[mp] {
				t.Fatalf("mount point %q (seen before: %v)", mp, seen[mp])
			}
			seen[mp] = true
		}
	})
}

func FuzzParseStatPPid(f *testing.F) {
	f.Add([]byte("42 (hostile) S 7 42 42 0"), "x) y", 9)
	f.Add([]byte("1 (init) S 0"), "", 0)
	f.Fuzz(func(t *testing.T, stat []byte, comm string, ppid int) {
		if p, err := parseStatPPid(stat); err == nil && p < 0 {
			t.Fatalf("negative parent pid %d from %q", p, stat)
		}
		// Whatever the command name holds, the parent pid after it is
		// found (the kernel cuts names at 15 bytes but does not escape).
		if ppid < 0 || strings.ContainsAny(comm, "\n\x00") {
			return
		}
		line := "42 (" + comm + ") S " + strconv.Itoa(ppid) + " 42 42 0 -1"
		if p, err := parseStatPPid([]byte(line)); err != nil || p != ppid {
			t.Fatalf("parseStatPPid(%q) = %d, %v; want %d", line, p, err, ppid)
		}
	})
}

func FuzzParseStat(f *testing.F) {
	f.Add([]byte("42 (hostile) S 7 42 42 0 -1 4194560 99 0 0 0 0 0 0 0 20 0 1 0 5017 1000 2"), "x) y", 9, 11)
	f.Add([]byte("1 (init) Z 0 1"), "", 0, 0)
	f.Fuzz(func(t *testing.T, stat []byte, comm string, ppid, pgrp int) {
		if st, err := parseStat(stat); err == nil && (st.ppid < 0 || st.pgrp < 0) {
			t.Fatalf("negative id in %+v from %q", st, stat)
		}
		if ppid < 0 || pgrp < 0 || strings.ContainsAny(comm, "\n\x00") {
			return
		}
		line := "42 (" + comm + ") S " + strconv.Itoa(ppid) + " " + strconv.Itoa(pgrp) + " 42 0 -1 4194560 99 0 0 0 0 0 0 0 20 0 1 0 " + strconv.Itoa(ppid+pgrp) + " 1000 2"
		if st, err := parseStat([]byte(line)); err != nil || st != (procStat{'S', ppid, pgrp, uint64(ppid + pgrp)}) {
			t.Fatalf("parseStat(%q) = %+v, %v; want S %d %d", line, st, err, ppid, pgrp)
		}
	})
}

func FuzzBuildEnv(f *testing.F) {
	f.Add("PATH=/bin\x00HOME=/h\x00SECRET=x", "TOKEN", "MODE", "ro")
	f.Add("=x\x00TMPDIR=/host\x00A=B=C", "A", "TMPDIR", "/evil")
	f.Fuzz(func(t *testing.T, host, pass, setK, setV string) {
		hostEnv := strings.Split(host, "\x00")
		env, err := buildEnv(hostEnv, []string{pass}, map[string]string{setK: setV}, "/private/tmp")
		if err != nil {
			return
		}
		if !sort.StringsAreSorted(env) {
			t.Fatalf("not sorted: %q", env)
		}
		names := make(map[string]bool)
		for _, kv := range env {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || names[k] {
				t.Fatalf("bad or duplicate entry %q in %q", kv, env)
			}
			names[k] = true
			switch {
			case k == "TMPDIR" || k == "TMP" || k == "TEMP":
				if v != "/private/tmp" {
					t.Fatalf("%s=%q", k, v)
				}
			case k == setK:
				if v != setV {
					t.Fatalf("%s=%q, want the set value %q", k, v, setV)
				}
			case k == pass || passedByDefault(k):
			default:
				t.Fatalf("%s reached the server", k)
			}
		}
	})
}

func FuzzParseGitFile(f *testing.F) {
	for _, s := range []string{
		"gitdir: ../main/.git/worktrees/wt\n", "gitdir: /abs/path\r\n", "gitdir: \n", "gitdir:x", "",
		"gitdir: a\x00b", "gitdir: a\nb\n", "../..\n", "gitdir: " + strings.Repeat("a/", 3000),
	} {
		f.Add([]byte(s), s != "../..\n")
	}
	f.Fuzz(func(t *testing.T, content []byte, gitfile bool) {
		prefix := ""
		if gitfile {
			prefix = "gitdir: "
		}
		p, err := parseGitFile(content, prefix, "/wt")
		if err != nil {
			if !errors.Is(err, errBadGitFile) {
				t.Fatalf("error %v does not wrap errBadGitFile", err)
			}
			return
		}
		if !isCanonical(p) {
			t.Fatalf("path %q is not clean and absolute", p)
		}
		if len(content) > maxGitFileLen || strings.ContainsAny(p, "\x00\r\n") {
			t.Fatalf("accepted %q as %q", content, p)
		}
	})
}
