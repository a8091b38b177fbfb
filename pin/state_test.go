package pin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/mcphost/mcphost/internal/canonical"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// installState copies a fixture into a fresh state directory and returns the
// store and the file's bytes.
func installState(t *testing.T, fixture string) (*Store, []byte) {
	t.Helper()
	data := readFixture(t, fixture)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, FileName), data, 0o600); err != nil {
		t.Fatal(err)
	}
	return &Store{Dir: dir}, data
}

func TestLoadMissing(t *testing.T) {
	for _, dir := range []string{t.TempDir(), filepath.Join(t.TempDir(), "not", "there")} {
		st, err := (&Store{Dir: dir}).Load()
		if err != nil {
			t.Fatalf("Load(%s): %v", dir, err)
		}
		if st.Version != FormatVersion || st.Tools == nil || st.Servers == nil || len(st.Tools)+len(st.Servers) != 0 {
			t.Errorf("Load(%s) = %+v, want an empty state with non-nil maps", dir, st)
		}
	}
}

func TestLoadFixture(t *testing.T) {
	s, _ := installState(t, "state/valid.json")
	st, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Tools) != 2 || len(st.Servers) != 1 {
		t.Fatalf("Load = %+v, want 2 tools and 1 server", st)
	}
	e := st.Tools["notes/delete_note"]
	want := time.Date(2025, 6, 1, 10, 0, 0, 5e8, time.UTC)
	if !e.ReviewedAt.Equal(want) {
		t.Errorf("ReviewedAt = %v, want %v", e.ReviewedAt, want)
	}
	if d, err := Digest(e.Definition); err != nil || d != e.Digest {
		t.Errorf("Digest(Definition) = %s, %v; want %s", d, err, e.Digest)
	}
	srv := st.Servers["notes"]
	if !slices.Equal(srv.Tools, []string{"delete_note", "list_notes"}) {
		t.Errorf("Servers[notes] = %+v", srv)
	}
}

// TestServerInstructionsDropped: a server entry's "instructions" digest,
// which earlier versions wrote and none read, is read (its format still
// checked: see the corrupt fixture server_instructions_raw) and not
// written back.
func TestServerInstructionsDropped(t *testing.T) {
	s, data := installState(t, "state/valid.json")
	if !bytes.Contains(data, []byte(`"instructions": "b3v1:`)) {
		t.Fatal("the fixture no longer has a server entry's instructions digest")
	}
	if err := s.Update(func(*State) error { return nil }); err != nil {
		t.Fatal(err)
	}
	after, err := os.ReadFile(filepath.Join(s.Dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(after, []byte(`"instructions"`)) {
		t.Errorf("Update wrote a server entry's instructions back:\n%s", after)
	}
	if st, err := s.Load(); err != nil || !slices.Equal(st.Servers["notes"].Tools, []string{"delete_note", "list_notes"}) {
		t.Errorf("Load after Update: %+v, %v", st, err)
	}
}

func TestStoreRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	s := &Store{Dir: dir}
	def := readFixture(t, "tools/search_notes.json")
	at := time.Date(2025, 6, 1, 12, 30, 0, 123456789, time.FixedZone("CEST", 2*3600))
	entry, err := NewEntry(def, at)
	if err != nil {
		t.Fatal(err)
	}
	err = s.Update(func(st *State) error {
		st.Tools[Key("notes", "search_notes")] = entry
		st.Tools[Key("notes", "a/b")] = testEntry("a/b") // a tool name may hold a slash
		st.Servers["notes"] = ServerEntry{Tools: []string{"search_notes", "a/b"}}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	got := st.Tools["notes/search_notes"]
	if got.Digest != entry.Digest || !got.ReviewedAt.Equal(at) {
		t.Errorf("entry = %s %v, want %s %v", got.Digest, got.ReviewedAt, entry.Digest, at)
	}
	if changes, err := Diff(got.Definition, def); err != nil || len(changes) != 0 {
		t.Errorf("stored definition differs from the reviewed one: %v, %v", changes, err)
	}
	if _, ok := st.Tools["notes/a/b"]; !ok {
		t.Errorf("tool with a slash in its name lost: %v", st.Tools)
	}
	if srv := st.Servers["notes"]; !slices.Equal(srv.Tools, []string{"a/b", "search_notes"}) {
		t.Errorf("server entry = %+v, want sorted tools", srv)
	}

	// Modes: the directory Update created, the state file and the lock file.
	for _, c := range []struct {
		path string
		mode fs.FileMode
	}{
		{dir, fs.ModeDir | 0o700},
		{filepath.Join(dir, FileName), 0o600},
		{filepath.Join(dir, FileName+".lock"), 0o600},
	} {
		fi, err := os.Stat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != c.mode {
			t.Errorf("%s: mode %v, want %v", c.path, fi.Mode(), c.mode)
		}
	}
	assertNoTemps(t, dir)

	// A second round trip of an unchanged state writes the same bytes.
	before, _ := os.ReadFile(filepath.Join(dir, FileName))
	if err := s.Update(func(*State) error { return nil }); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, FileName))
	if !bytes.Equal(before, after) {
		t.Errorf("rewriting an unchanged state changed the file:\n%s\n%s", before, after)
	}
}

func TestUpdateKeepsModeOfWiderFile(t *testing.T) {
	// A state file someone made world-readable is replaced by a 0600 one.
	s, _ := installState(t, "state/valid.json")
	path := filepath.Join(s.Dir, FileName)
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Update(func(*State) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode() != 0o600 {
		t.Errorf("mode after Update = %v, %v; want 0600", fi.Mode(), err)
	}
}

func TestStoreDeepDefinition(t *testing.T) {
	// A definition at the nesting limit is accepted by Digest, so its pin
	// must load, although the state file nests it a few levels deeper.
	def := `{"a":` + strings.Repeat("[", canonical.MaxDepth-1) + strings.Repeat("]", canonical.MaxDepth-1) + `}`
	e, err := NewEntry(json.RawMessage(def), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	s := &Store{Dir: t.TempDir()}
	if err := s.Update(func(st *State) error { st.Tools["s/deep"] = e; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(); err != nil {
		t.Errorf("Load: %v", err)
	}
}

func TestLoadCorrupt(t *testing.T) {
	// Each fixture is testdata/state/valid.json with one thing wrong; the
	// error must say that thing.
	tests := map[string]string{
		"array":                    "want a JSON object",
		"definition_duplicate_key": "duplicate object key",
		"definition_missing":       `has no "definition"`,
		"definition_string":        "definition is not an object",
		"digest_future_format":     "unknown format",
		"digest_mismatch":          "digest does not match the definition",
		"digest_missing":           `has no "digest"`,
		"digest_unknown_format":    "unknown format",
		"digest_upper_case":        "unknown format",
		"duplicate_field":          "duplicate object key",
		"duplicate_tool":           "duplicate object key",
		"empty":                    "end of the text, want a value",
		"entry_null":               "is not an object",
		"field_case":               `unknown field "Digest"`,
		"invalid_utf8":             "invalid UTF-8",
		"lone_surrogate":           "surrogate",
		"no_version":               `no "version"`,
		"reviewed_at_bad":          "reviewed_at",
		"reviewed_at_missing":      `has no "reviewed_at"`,
		"reviewed_at_number":       "reviewed_at is not a string",
		"server_instructions_raw":  "instructions digest",
		"server_name_slash":        "not a server name",
		"server_tools_duplicate":   "listed twice",
		"server_tools_empty_name":  "empty tool name",
		"server_tools_not_strings": "not a string",
		"server_unknown_field":     `unknown field "trusted"`,
		"tool_key_empty_tool":      `not "server/tool"`,
		"tool_key_no_server":       `not "server/tool"`,
		"tools_array":              `"tools" is not an object`,
		"tables_bad_key":           `key is not "server@/absolute/config/path"`,
		"tables_digest_mismatch":   "digest does not match the definition",
		"prompts_digest_mismatch":  "digest does not match the definition",
		"locks_bad_key":            "key is not an absolute path",
		"locks_bad_digest":         "unknown format",
		"trailing_data":            "after the value",
		"truncated":                "end of the text in a string",
		"unknown_entry_field":      `unknown field "approved"`,
		"unknown_field":            `unknown field "trust_everything"`,
		"version_exponent":         `"version" is 1e1`,
		"version_fraction":         `"version" is 1.0`,
		"version_negative":         `"version" is -1`,
		"version_string":           `"version" is not a number`,
		"version_zero":             `"version" is 0`,
	}
	files, err := filepath.Glob("testdata/state/corrupt/*.json")
	if err != nil || len(files) != len(tests) {
		t.Fatalf("%d fixtures, %d cases (%v): every fixture needs a case", len(files), len(tests), err)
	}
	for name, want := range tests {
		t.Run(name, func(t *testing.T) {
			s, data := installState(t, "state/corrupt/"+name+".json")
			path := filepath.Join(s.Dir, FileName)
			_, err := s.Load()
			if !errors.Is(err, ErrCorrupt) || errors.Is(err, ErrFutureVersion) {
				t.Fatalf("Load error = %v, want ErrCorrupt", err)
			}
			msg := err.Error()
			for _, w := range []string{want, path, "move it aside", "never resets"} {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not contain %q", msg, w)
				}
			}
			assertUpdateRefused(t, s, data, ErrCorrupt)
		})
	}
}

// assertUpdateRefused checks that Update fails with want without calling
// its function, and leaves the state file as it was.
func assertUpdateRefused(t *testing.T, s *Store, data []byte, want error) {
	t.Helper()
	called := false
	err := s.Update(func(st *State) error {
		called = true
		st.Tools = map[string]Entry{}
		return nil
	})
	if !errors.Is(err, want) {
		t.Errorf("Update error = %v, want %v", err, want)
	}
	if called {
		t.Error("Update called its function on a state it could not load")
	}
	after, rerr := os.ReadFile(filepath.Join(s.Dir, FileName))
	if rerr != nil || !bytes.Equal(after, data) {
		t.Errorf("Update changed the state file (%v)", rerr)
	}
	assertNoTemps(t, s.Dir)
}

func TestLoadFutureVersion(t *testing.T) {
	for _, name := range []string{"v5", "v99_other_types"} {
		t.Run(name, func(t *testing.T) {
			s, data := installState(t, "state/future/"+name+".json")
			_, err := s.Load()
			if !errors.Is(err, ErrFutureVersion) || errors.Is(err, ErrCorrupt) {
				t.Fatalf("Load error = %v, want ErrFutureVersion only", err)
			}
			for _, w := range []string{filepath.Join(s.Dir, FileName), "reads up to 4", "upgrade"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			assertUpdateRefused(t, s, data, ErrFutureVersion)
		})
	}
}

func TestLoadUnreadable(t *testing.T) {
	// A directory where the file should be: it exists and cannot be read.
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, FileName), 0o700); err != nil {
		t.Fatal(err)
	}
	s := &Store{Dir: dir}
	_, err := s.Load()
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Load error = %v, want ErrCorrupt", err)
	}
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		t.Errorf("error %v does not wrap the underlying *fs.PathError", err)
	}
	if err := s.Update(func(*State) error { return nil }); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Update error = %v, want ErrCorrupt", err)
	}
	if fi, err := os.Stat(filepath.Join(dir, FileName)); err != nil || !fi.IsDir() {
		t.Errorf("Update replaced the unreadable path")
	}
}

func TestStoreNeedsDir(t *testing.T) {
	s := &Store{}
	if _, err := s.Load(); err == nil || !strings.Contains(err.Error(), "Dir is empty") {
		t.Errorf("Load error = %v, want one about the empty Dir", err)
	}
	if err := s.Update(func(*State) error { return nil }); err == nil || !strings.Contains(err.Error(), "Dir is empty") {
		t.Errorf("Update error = %v, want one about the empty Dir", err)
	}
	if _, err := os.Stat(FileName); err == nil {
		t.Errorf("a state file appeared in the working directory")
	}
}

func TestUpdateFnError(t *testing.T) {
	errStop := errors.New("person said no")
	for _, fixture := range []string{"", "state/valid.json"} {
		t.Run("fixture="+fixture, func(t *testing.T) {
			s := &Store{Dir: t.TempDir()}
			var data []byte
			if fixture != "" {
				s, data = installState(t, fixture)
			}
			err := s.Update(func(st *State) error {
				st.Tools = nil
				return errStop
			})
			if err != errStop {
				t.Errorf("Update error = %v, want the function's error unchanged", err)
			}
			after, err := os.ReadFile(filepath.Join(s.Dir, FileName))
			if fixture == "" && !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("Update created a state file (%v)", err)
			}
			if fixture != "" && !bytes.Equal(after, data) {
				t.Errorf("Update changed the state file")
			}
		})
	}
}

func TestUpdateRefusesInvalidState(t *testing.T) {
	good := testEntry("t")
	tests := []struct {
		name string
		fn   func(*State)
		want string
	}{
		{"key without server", func(st *State) { st.Tools["t"] = good }, `not "server/tool"`},
		{"key without tool", func(st *State) { st.Tools["s/"] = good }, `not "server/tool"`},
		{"empty digest", func(st *State) { e := good; e.Digest = ""; st.Tools["s/t"] = e }, "unknown format"},
		{"digest of another definition", func(st *State) { e := good; e.Digest = testEntry("u").Digest; st.Tools["s/t"] = e }, "does not match"},
		{"definition not JSON", func(st *State) { e := good; e.Definition = json.RawMessage(`{`); st.Tools["s/t"] = e }, "definition is not an acceptable JSON object"},
		{"no definition", func(st *State) { e := good; e.Definition = nil; st.Tools["s/t"] = e }, "definition is not an acceptable JSON object"},
		{"zero review time", func(st *State) { e := good; e.ReviewedAt = time.Time{}; st.Tools["s/t"] = e }, "reviewed_at is missing"},
		{"server name with slash", func(st *State) { st.Servers["a/b"] = ServerEntry{} }, "not a server name"},
		{"empty server name", func(st *State) { st.Servers[""] = ServerEntry{} }, "not a server name"},
		{"tool listed twice", func(st *State) { st.Servers["s"] = ServerEntry{Tools: []string{"x", "x"}} }, "listed twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, data := installState(t, "state/valid.json")
			err := s.Update(func(st *State) error { tt.fn(st); return nil })
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "not writing") {
				t.Errorf("Update error = %v, want one refusing to write because %q", err, tt.want)
			}
			if after, _ := os.ReadFile(filepath.Join(s.Dir, FileName)); !bytes.Equal(after, data) {
				t.Errorf("Update changed the state file")
			}
		})
	}
}

func TestUpdateNilMaps(t *testing.T) {
	s, _ := installState(t, "state/valid.json")
	if err := s.Update(func(st *State) error { st.Tools, st.Servers, st.Version = nil, nil, 42; return nil }); err != nil {
		t.Fatal(err)
	}
	st, err := s.Load()
	if err != nil || len(st.Tools) != 0 || len(st.Servers) != 0 || st.Version != FormatVersion {
		t.Errorf("Load = %+v, %v; want an empty state at FormatVersion", st, err)
	}
}

// TestUpdateFailedBeforeRename: when the write fails between the temporary
// file and the rename, the old state stays and the temporary file goes.
func TestUpdateFailedBeforeRename(t *testing.T) {
	s, data := installState(t, "state/valid.json")
	var tmpSeen []byte
	s.beforeRename = func(tmp string) error {
		var err error
		tmpSeen, err = os.ReadFile(tmp)
		if err != nil {
			return err
		}
		return errors.New("simulated failure")
	}
	err := s.Update(func(st *State) error { st.Tools["new/tool"] = testEntry("tool"); return nil })
	if err == nil || !strings.Contains(err.Error(), "simulated failure") {
		t.Fatalf("Update error = %v, want the simulated failure", err)
	}
	if !bytes.Contains(tmpSeen, []byte(`"new/tool"`)) {
		t.Errorf("the temporary file did not hold the new state before the rename:\n%s", tmpSeen)
	}
	if after, _ := os.ReadFile(filepath.Join(s.Dir, FileName)); !bytes.Equal(after, data) {
		t.Errorf("the state file changed")
	}
	assertNoTemps(t, s.Dir)
}

// TestUpdateCrashBeforeRename runs Update in another process that dies
// between writing the temporary file and renaming it, then checks that the
// old state is what Load reads, and that the next Update succeeds and
// removes the leftover.
func TestUpdateCrashBeforeRename(t *testing.T) {
	s, data := installState(t, "state/valid.json")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=crash", helperDirEnv+"="+s.Dir)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != crashExit {
		t.Fatalf("helper: %v, want exit status %d\n%s", err, crashExit, out)
	}
	temps, _ := filepath.Glob(filepath.Join(s.Dir, tempPattern))
	if len(temps) != 1 {
		t.Fatalf("leftover temporary files: %v, want exactly one", temps)
	}
	if tmp, _ := os.ReadFile(temps[0]); !bytes.Contains(tmp, []byte(`"new/tool"`)) {
		t.Fatalf("the leftover does not hold the half-written state")
	}
	if after, _ := os.ReadFile(filepath.Join(s.Dir, FileName)); !bytes.Equal(after, data) {
		t.Errorf("the crash changed the state file")
	}
	st, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.Tools["new/tool"]; ok || len(st.Tools) != 2 {
		t.Errorf("Load read the leftover: %v", st.Tools)
	}
	if err := s.Update(func(st *State) error { st.Tools["other/tool"] = testEntry("tool"); return nil }); err != nil {
		t.Fatal(err)
	}
	assertNoTemps(t, s.Dir)
	if st, err := s.Load(); err != nil || len(st.Tools) != 3 {
		t.Errorf("after the next Update: %v, %v", st, err)
	}
}

// TestUpdateConcurrentProcesses starts several processes at once, each
// adding its own tools one Update at a time; with the lock held across
// read-modify-write, every tool of every process is in the final state.
func TestUpdateConcurrentProcesses(t *testing.T) {
	const procs, perProc = 6, 8
	dir := filepath.Join(t.TempDir(), "state")
	var cmds []*exec.Cmd
	var starts []interface{ Close() error }
	var outs []*bytes.Buffer
	for i := range procs {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), helperEnv+"=add", helperDirEnv+"="+dir,
			fmt.Sprintf("%s=%d", helperIDEnv, i), fmt.Sprintf("%s=%d", helperNEnv, perProc))
		out := new(bytes.Buffer)
		cmd.Stdout, cmd.Stderr = out, out
		start, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, starts, outs = append(cmds, cmd), append(starts, start), append(outs, out)
	}
	for _, s := range starts {
		s.Close() // go
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("process %d: %v\n%s", i, err, outs[i])
		}
	}
	assertAllAdded(t, &Store{Dir: dir}, procs, perProc)
}

func TestUpdateConcurrentGoroutines(t *testing.T) {
	const workers, perWorker = 16, 5
	s := &Store{Dir: t.TempDir()}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				tool := fmt.Sprintf("tool%d", i)
				server := fmt.Sprintf("proc%d", w)
				err := s.Update(func(st *State) error {
					st.Tools[Key(server, tool)] = testEntry(tool)
					srv := st.Servers[server]
					srv.Tools = append(srv.Tools, tool)
					st.Servers[server] = srv
					return nil
				})
				if err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	assertAllAdded(t, s, workers, perWorker)
}

func assertAllAdded(t *testing.T, s *Store, writers, each int) {
	t.Helper()
	st, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Tools) != writers*each || len(st.Servers) != writers {
		t.Errorf("%d tools and %d servers, want %d and %d: updates were lost", len(st.Tools), len(st.Servers), writers*each, writers)
	}
	for w := range writers {
		server := fmt.Sprintf("proc%d", w)
		if got := st.Servers[server].Tools; len(got) != each {
			t.Errorf("server %s lists %v, want %d tools", server, got, each)
		}
		for i := range each {
			if _, ok := st.Tools[Key(server, fmt.Sprintf("tool%d", i))]; !ok {
				t.Errorf("lost %s/tool%d", server, i)
			}
		}
	}
	assertNoTemps(t, s.Dir)
}

func assertNoTemps(t *testing.T, dir string) {
	t.Helper()
	if temps, _ := filepath.Glob(filepath.Join(dir, tempPattern)); len(temps) != 0 {
		t.Errorf("temporary files left: %v", temps)
	}
}

func TestNewEntry(t *testing.T) {
	def := json.RawMessage(`{"name":"x"}`)
	at := time.Now()
	e, err := NewEntry(def, at)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := Digest(def); e.Digest != d || string(e.Definition) != string(def) || !e.ReviewedAt.Equal(at) {
		t.Errorf("NewEntry = %+v", e)
	}
	def[2] = 'X'
	if e.Definition[2] == 'X' {
		t.Error("NewEntry kept the caller's slice instead of a copy")
	}
	if _, err := NewEntry(json.RawMessage(`{"a":1,"a":1}`), at); !errors.Is(err, ErrDuplicateKey) {
		t.Errorf("NewEntry of a duplicate key: %v, want ErrDuplicateKey", err)
	}
}

func TestKey(t *testing.T) {
	if got := Key("notes", "a/b"); got != "notes/a/b" {
		t.Errorf("Key = %q", got)
	}
}

// BenchmarkLoad reads a state of 1000 tools the size of the fixture; Load
// re-digests every definition to check it against its pin.
func BenchmarkLoad(b *testing.B) {
	def := readFixture(b, "tools/search_notes.json")
	e, err := NewEntry(def, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	s := &Store{Dir: b.TempDir()}
	err = s.Update(func(st *State) error {
		for i := range 1000 {
			st.Tools[Key("notes", fmt.Sprint("tool", i))] = e
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Load(); err != nil {
			b.Fatal(err)
		}
	}
}

func TestTablesRoundTrip(t *testing.T) {
	s := &Store{Dir: t.TempDir()}
	def := json.RawMessage(`{"name":"notes","command":["bin/notes"]}`)
	e, err := NewEntry(def, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	key := TableKey("/w/mcphost.toml", "notes")
	if err := s.Update(func(st *State) error { st.Tables[key] = e; return nil }); err != nil {
		t.Fatal(err)
	}
	st, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Tables[key]; got.Digest != e.Digest || !json.Valid(got.Definition) {
		t.Errorf("Tables[%q] = %+v; want %+v", key, got, e)
	}
	// A forged digest is refused like a tool's.
	err = s.Update(func(st *State) error {
		bad := st.Tables[key]
		bad.Definition = json.RawMessage(`{"name":"notes","command":["evil"]}`)
		st.Tables[key] = bad
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "digest does not match") {
		t.Errorf("Update with a forged table: %v", err)
	}
}

// TestInstructionsAndPrompts: the version 2 maps round-trip, and what does
// not match its digest or is not of its form is refused by Update and Load.
func TestInstructionsAndPrompts(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	text := "Use \u200b the notes.\n\"quoted\" <b>"
	ins, err := NewEntry(InstructionsDefinition(text), now)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := InstructionsText(ins.Definition); !ok || got != text {
		t.Fatalf("InstructionsText = %q, %v; want %q", got, ok, text)
	}
	prompt, err := NewEntry(json.RawMessage(`{"name":"p","description":"Say hi.","arguments":[{"name":"who"}]}`), now)
	if err != nil {
		t.Fatal(err)
	}
	s := &Store{Dir: t.TempDir()}
	if err := s.Update(func(st *State) error {
		st.Instructions["notes"] = ins
		st.Prompts[Key("notes", "p")] = prompt
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	st, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	if st.Instructions["notes"].Digest != ins.Digest || st.Prompts["notes/p"].Digest != prompt.Digest {
		t.Fatalf("Load = %+v, want the entries written", st)
	}
	data, _ := os.ReadFile(filepath.Join(s.Dir, FileName))
	if !bytes.Contains(data, []byte(`"version": 4`)) {
		t.Errorf("written file is not version 4:\n%s", data)
	}

	wrongDigest := prompt
	wrongDigest.Digest = ins.Digest
	notInstructions := prompt // a digest-valid object of another form
	for _, tt := range []struct {
		name string
		fn   func(*State)
		want string
	}{
		{"prompt digest", func(st *State) { st.Prompts["notes/p"] = wrongDigest }, "digest does not match"},
		{"prompt key", func(st *State) { st.Prompts["p"] = prompt }, "key is not"},
		{"instructions form", func(st *State) { st.Instructions["notes"] = notInstructions }, "is not {\"instructions\": text}"},
		{"instructions key", func(st *State) { st.Instructions["a/b"] = ins }, "not a server name"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Update(func(st *State) error { tt.fn(st); return nil })
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Update error = %v, want one containing %q", err, tt.want)
			}
		})
	}

	// A version 3 file has neither map: one that claims to is not trusted.
	v1 := bytes.Replace(data, []byte(`"version": 4`), []byte(`"version": 3`), 1)
	os.WriteFile(filepath.Join(s.Dir, FileName), v1, 0o600)
	if _, err := s.Load(); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Load of a version 3 file with instructions = %v, want ErrCorrupt", err)
	}
	// A changed byte of the pinned text is caught.
	tampered := bytes.Replace(data, []byte("the notes"), []byte("the keys!"), 1)
	os.WriteFile(filepath.Join(s.Dir, FileName), tampered, 0o600)
	if _, err := s.Load(); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "instructions[") {
		t.Errorf("Load of tampered instructions = %v, want ErrCorrupt naming instructions", err)
	}
}
