package pin

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

const lockTool = `{"name":"list_notes","description":"List notes.\u200b","inputSchema":{"type":"object"}}`

func sampleLock(t *testing.T) *Lock {
	t.Helper()
	tool, err := NewLockEntry(json.RawMessage(lockTool))
	if err != nil {
		t.Fatal(err)
	}
	table, err := NewLockEntry(json.RawMessage(`{"command":["bin/notes"],"allow":["list_notes"]}`))
	if err != nil {
		t.Fatal(err)
	}
	ins, err := NewLockEntry(InstructionsDefinition("Be brief.\u200b"))
	if err != nil {
		t.Fatal(err)
	}
	prompt, err := NewLockEntry(json.RawMessage(`{"name":"summarize","description":"Summarize."}`))
	if err != nil {
		t.Fatal(err)
	}
	return &Lock{Servers: map[string]LockServer{
		"notes": {Table: &table, Program: []ProgramFile{{Role: RoleProgram, Path: "bin/notes", Digest: DigestBytes([]byte("x"))}},
			Tools: map[string]LockEntry{"list_notes": tool, "add": tool}, Instructions: &ins, Prompts: map[string]LockEntry{"summarize": prompt}},
		"api": {Program: []ProgramFile{{Role: RoleProgram, Path: "node"}, {Role: RoleScript, Path: "s.js", Digest: DigestBytes(nil), Package: "@x/y@1.0.0"}}},
	}}
}

// TestLockRoundTrip: Marshal is deterministic, escapes invisible characters,
// writes one tool per block, and ParseLock reads back the same lock.
func TestLockRoundTrip(t *testing.T) {
	l := sampleLock(t)
	a, err := l.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		if b, _ := l.Marshal(); !bytes.Equal(a, b) {
			t.Fatal("Marshal is not deterministic")
		}
	}
	if bytes.ContainsRune(a, '\u200b') || !bytes.Contains(a, []byte(`\u200b`)) {
		t.Errorf("an invisible character is written raw:\n%s", a)
	}
	if !bytes.Contains(a, []byte("\n        \"add\": {\n")) || bytes.Index(a, []byte(`"add": {`)) > bytes.Index(a, []byte(`"list_notes": {`)) {
		t.Errorf("tools are not one sorted block each:\n%s", a)
	}
	back, err := ParseLock(a)
	if err != nil {
		t.Fatalf("ParseLock(Marshal): %v\n%s", err, a)
	}
	again, err := back.Marshal()
	if err != nil || !bytes.Equal(again, a) {
		t.Errorf("round trip changed the lock (%v):\n%s\n---\n%s", err, a, again)
	}
}

func TestParseLockRefuses(t *testing.T) {
	good, err := sampleLock(t).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	digest := func(s string) string { d, _ := Digest(json.RawMessage(s)); return d }
	for _, tt := range []struct {
		name, in, want string
		future         bool
	}{
		{"not JSON", `{"version":1,`, "not valid JSON", false},
		{"repeated key", `{"version":1,"servers":{},"servers":{"x":{"program":[],"tools":{}}}}`, "more than once", false},
		{"key in the wrong case", `{"version":1,"Servers":{}}`, "not in the form mcphost writes", false},
		{"unknown field", `{"version":1,"servers":{},"signed":true}`, "unknown field", false},
		{"newer", `{"version":3,"servers":{},"more":1}`, "reads up to 2", true},
		{"wrong digest", `{"version":1,"servers":{"x":{"program":[],"tools":{"t":{"digest":"` + digest(`{"a":1}`) + `","definition":{"a":2}}}}}}`, "does not match", false},
		{"bad role", `{"version":1,"servers":{"x":{"program":[{"role":"lib","path":"p"}],"tools":{}}}}`, "role", false},
		{"bad server name", `{"version":1,"servers":{"a/b":{"program":[],"tools":{}}}}`, "not a server name", false},
		{"null written out", `{"version":1,"servers":{"x":{"table":null,"program":[],"tools":{}}}}`, "not in the form", false},
		// A table whose digest is the planted table's, shown as a harmless
		// one: review of the lock would pass what it does not see.
		{"table digest of another definition", `{"version":1,"servers":{"x":{"table":{"digest":"` + digest(`{"a":1}`) + `","definition":{"a":2}},"program":[],"tools":{}}}}`, "does not match", false},
		{"program digest in no known format", `{"version":1,"servers":{"x":{"program":[{"role":"program","path":"p","digest":"md5:00"}],"tools":{}}}}`, "unknown format", false},
		{"server name with @", `{"version":1,"servers":{"a@b":{"program":[],"tools":{}}}}`, "not a server name", false},
		{"empty program path", `{"version":1,"servers":{"x":{"program":[{"role":"program","path":""}],"tools":{}}}}`, "empty path", false},
		{"empty tool name", `{"version":1,"servers":{"x":{"program":[],"tools":{"":{"digest":"` + digest(`{"a":1}`) + `","definition":{"a":1}}}}}}`, "empty tool name", false},
		{"instructions not an instructions object", `{"version":2,"servers":{"x":{"instructions":{"digest":"` + digest(`{"a":1}`) + `","definition":{"a":1}},"program":[],"tools":{}}}}`, "not an instructions object", false},
		{"instructions digest of another text", `{"version":2,"servers":{"x":{"instructions":{"digest":"` + digest(`{"instructions":"a"}`) + `","definition":{"instructions":"b"}},"program":[],"tools":{}}}}`, "does not match", false},
		{"empty prompt name", `{"version":2,"servers":{"x":{"program":[],"prompts":{"":{"digest":"` + digest(`{"a":1}`) + `","definition":{"a":1}}},"tools":{}}}}`, "empty prompt name", false},
		{"prompts written out empty", `{"version":2,"servers":{"x":{"program":[],"prompts":{},"tools":{}}}}`, "not in the form", false},
		{"version 0", `{"version":0,"servers":{}}`, "want 1 to 2", false},
		{"version 1 with instructions", `{"version":1,"servers":{"x":{"instructions":{"digest":"` + digest(`{"instructions":"a"}`) + `","definition":{"instructions":"a"}},"program":[],"tools":{}}}}`, "of version 2", false},
		{"version 1 with prompts", `{"version":1,"servers":{"x":{"program":[],"prompts":{"p":{"digest":"` + digest(`{"a":1}`) + `","definition":{"a":1}}},"tools":{}}}}`, "of version 2", false},
		{"version 1 with a package", `{"version":1,"servers":{"x":{"program":[{"role":"package","path":"node_modules/a","digest":"` + digest(`{"a":1}`) + `"}],"tools":{}}}}`, "of version 2", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseLock([]byte(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ParseLock: %v, want an error with %q", err, tt.want)
			}
			if errors.Is(err, ErrFutureVersion) != tt.future || errors.Is(err, ErrCorrupt) == tt.future {
				t.Errorf("error kind: %v", err)
			}
		})
	}
	if _, err := ParseLock(good); err != nil {
		t.Errorf("the good lock: %v", err)
	}
}

// TestLockVersion1: a lock of format version 1 (no instructions, no
// prompts) is read as it is, and written again as version 2.
func TestLockVersion1(t *testing.T) {
	tool, _ := NewLockEntry(json.RawMessage(lockTool))
	v1 := &Lock{Servers: map[string]LockServer{"notes": {Tools: map[string]LockEntry{"list_notes": tool}}}}
	data, err := v1.marshal(1)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(`"version": 1`)) {
		t.Fatalf("not version 1:\n%s", data)
	}
	l, err := ParseLock(data)
	if err != nil {
		t.Fatalf("a version 1 lock: %v", err)
	}
	if l.Version != 1 || l.Servers["notes"].Tools["list_notes"].Digest != tool.Digest {
		t.Errorf("read back: %+v", l)
	}
	again, err := l.Marshal()
	if err != nil || !bytes.Contains(again, []byte(`"version": 2`)) {
		t.Errorf("written again: %v\n%s", err, again)
	}
}

// TestLockStoreUpdate: trust is asked about the current content before fn
// runs, a refusal writes nothing, concurrent updates lose nothing, and no
// file but the lock is left in its directory.
func TestLockStoreUpdate(t *testing.T) {
	dir := t.TempDir()
	s := &LockStore{Path: filepath.Join(dir, LockFileName)}
	var seen [][]byte
	trust := func(cur []byte) error { seen = append(seen, cur); return nil }
	if _, err := s.Update(trust, func(*Lock) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || seen[0] != nil {
		t.Errorf("trust saw %q for a missing file", seen)
	}
	refused := errors.New("not yours")
	before, _ := os.ReadFile(s.Path)
	_, err := s.Update(func([]byte) error { return refused }, func(l *Lock) error {
		t.Error("fn ran on an untrusted lock")
		return nil
	})
	if !errors.Is(err, refused) {
		t.Errorf("Update: %v", err)
	}
	if after, _ := os.ReadFile(s.Path); !bytes.Equal(after, before) {
		t.Error("a refused Update wrote")
	}
	entry, _ := NewLockEntry(json.RawMessage(lockTool))
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := string(rune('a' + i))
			_, err := s.Update(func([]byte) error { return nil }, func(l *Lock) error {
				l.Servers[name] = LockServer{Tools: map[string]LockEntry{"t": entry}}
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	l, _, err := s.Load()
	if err != nil || len(l.Servers) != 16 {
		t.Errorf("after 16 concurrent updates: %d servers, %v", len(l.Servers), err)
	}
	if fi, err := os.Stat(s.Path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("mode: %v %v", fi.Mode(), err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("the directory holds more than the lock: %v", entries)
	}
}

// FuzzParseLock: ParseLock never panics, and what it accepts marshals to a
// lock it accepts again, unchanged.
func FuzzParseLock(f *testing.F) {
	f.Add([]byte(`{"version":1,"servers":{}}`))
	f.Add([]byte(`{"version":1,"servers":{"x":{"program":[{"role":"program","path":"p"}],"tools":{}}}}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		l, err := ParseLock(in)
		if err != nil {
			return
		}
		out, err := l.Marshal()
		if err != nil {
			t.Fatalf("accepted %q but cannot marshal it: %v", in, err)
		}
		back, err := ParseLock(out)
		if err != nil {
			t.Fatalf("Marshal wrote what ParseLock refuses: %v\n%s", err, out)
		}
		again, _ := back.Marshal()
		if !bytes.Equal(again, out) {
			t.Fatalf("not stable:\n%s\n---\n%s", out, again)
		}
	})
}
