package pin

import (
	"github.com/mcphost/mcphost/internal/canonical"
	"github.com/mcphost/mcphost/internal/hostfile"
	"github.com/mcphost/mcphost/internal/jsontree"

	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// FileName is the name of the reviewed-tools state file in a state
// directory. Update also keeps FileName+".lock" there (never removed: the
// lock is on that file) and, only while it writes, a temporary file named
// "." + FileName + ".tmp-*".
const FileName = "mcp-reviewed.json"

// FormatVersion is the version of the state file format this package reads
// and writes. A file with a higher version is refused, never misread.
// Version 2 added Tables, version 3 Locks, version 4 Instructions and
// Prompts; an older file is read as one without them.
const FormatVersion = 4

// maxStateSize bounds how much of a state file is read, so that a runaway
// file cannot exhaust memory. It is far above any real use: ten thousand
// tools of 10 KiB each are 100 MiB.
const maxStateSize = 256 << 20

// Errors about the two files of this package, the reviewed-tools state
// file (Store) and the lock file (LockStore, ParseLock), that a caller
// acts on. The error text names the file; none is ever resolved by
// resetting the file: that would re-trust every tool.
var (
	// ErrCorrupt means the file exists but cannot be read or trusted:
	// unreadable, not valid JSON, a key repeated or in the wrong case,
	// wrong types, unknown fields, a digest of an unknown format or one
	// that does not match its definition. The error says what is wrong;
	// a person must fix the file or move it aside (after which every tool
	// is reviewed again).
	ErrCorrupt = errors.New("pin: file is unreadable or corrupt")
	// ErrFutureVersion means the file was written by a newer version of
	// this package, in a format this one does not know.
	ErrFutureVersion = errors.New("pin: file has a newer format")
	// ErrLocked means Update could not take the file's lock within the
	// store's LockTimeout: another process holds it. An honest holder (an
	// Update in another mcphost) holds it for milliseconds.
	ErrLocked = errors.New("pin: file is locked by another process")
)

// DefaultLockTimeout is how long Update waits for the state file's lock
// when Store.LockTimeout is zero.
const DefaultLockTimeout = 10 * time.Second

// lockedError is ErrLocked for one lock file.
type lockedError struct {
	path   string
	waited time.Duration
}

func (e *lockedError) Error() string {
	return fmt.Sprintf("pin: the lock %s is held by another process: waited %v. Another mcphost may be recording a review; if this persists, see which process has it open (lsof %s, or fuser) and end it", e.path, e.waited, e.path)
}

func (e *lockedError) Is(target error) bool { return target == ErrLocked }

// State is the content of the state file.
type State struct {
	// Version is the format version, FormatVersion for a State from Load.
	// Update writes FormatVersion whatever it holds.
	Version int `json:"version"`
	// Tools holds the reviewed tools, keyed by Key(server, tool).
	Tools map[string]Entry `json:"tools"`
	// Servers holds server-level pins, keyed by the server's name.
	Servers map[string]ServerEntry `json:"servers"`
	// Tables holds reviewed server tables of config files that a server
	// could have written, keyed by TableKey(config, server): the table's
	// definition (mcphost.ServerConfig.Definition) and its digest.
	Tables map[string]Entry `json:"tables"`
	// Locks holds, keyed by a lock file's absolute path, DigestBytes of the
	// content this person's mcphost last wrote to it or that they
	// accepted as it is: a lock that lies where a server could write it is
	// trusted only as committed, or with this digest.
	Locks map[string]string `json:"locks"`
	// Instructions holds the reviewed instructions of each server (the
	// "instructions" of its initialize result), keyed by the server's
	// name. The entry's Definition is InstructionsDefinition of the text;
	// a server reviewed with no instructions has an entry with empty text.
	// An entry also says that the server's prompts were reviewed then: a
	// prompt of such a server that is not in Prompts is new.
	Instructions map[string]Entry `json:"instructions,omitempty"`
	// Prompts holds the reviewed prompts (each as prompts/list sent it),
	// keyed by Key(server, prompt name).
	Prompts map[string]Entry `json:"prompts,omitempty"`
}

// InstructionsDefinition returns the JSON object a server's instructions
// are pinned as: {"instructions": text}. Digest and Diff take it like a
// tool definition, so a change is shown as a line diff of the text.
func InstructionsDefinition(text string) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(map[string]string{"instructions": text}); err != nil {
		panic(err) // a map of strings always encodes
	}
	return bytes.TrimSpace(b.Bytes())
}

// InstructionsText returns the text of an InstructionsDefinition, and
// false if def is not one.
func InstructionsText(def json.RawMessage) (string, bool) {
	v, err := canonical.ParseObject(def, canonical.MaxDepth)
	if err != nil || len(v.Obj) != 1 || v.Obj[0].Name != "instructions" || v.Obj[0].Val.Kind != jsontree.String {
		return "", false
	}
	return v.Obj[0].Val.Str, true
}

// TableKey returns the key of a reviewed server table in State.Tables: the
// server's name, "@", and the config file's absolute path. Server names
// cannot contain "@", so the key splits unambiguously at its first one.
func TableKey(config, server string) string {
	return server + "@" + config
}

// Entry is the pin of one reviewed tool.
type Entry struct {
	// Digest is Digest(Definition).
	Digest string `json:"digest"`
	// Definition is the tool definition the person reviewed, kept so that a
	// later change can be shown as a diff. The file keeps its tokens as
	// given to Update; only the whitespace between them may change.
	Definition json.RawMessage `json:"definition"`
	// ReviewedAt is when the person reviewed it; it must not be zero.
	ReviewedAt time.Time `json:"reviewed_at"`
}

// ServerEntry pins server-level facts: the set of tool names seen at review,
// so that a tool appearing later is shown as new. (A server's instructions
// are pinned in State.Instructions. Files written before that may hold an
// "instructions" digest in a server's entry: Load checks its format and
// drops it, and Update no longer writes it.)
type ServerEntry struct {
	// Tools are the names of the server's tools at review, each once;
	// Update writes them sorted.
	Tools []string `json:"tools"`
}

// Key returns the key of a tool in State.Tools: the server's name, a slash,
// and the tool's name as the server sent it. Server names cannot contain a
// slash, so the key splits unambiguously at its first one.
func Key(server, tool string) string {
	return server + "/" + tool
}

// NewEntry returns the pin of a definition reviewed at reviewedAt: its digest
// and a copy of it. It returns an error wrapping ErrInvalid if Digest does.
func NewEntry(def json.RawMessage, reviewedAt time.Time) (Entry, error) {
	d, err := Digest(def)
	if err != nil {
		return Entry{}, err
	}
	return Entry{Digest: d, Definition: slices.Clone(def), ReviewedAt: reviewedAt}, nil
}

// Store is the reviewed-tools state file, FileName in the directory Dir. A
// Store is a plain value: create it as &Store{Dir: dir}. Dir must not be
// empty. Its methods may be called from many goroutines and processes at
// once; Update serializes writers with a lock file.
//
// Keep Dir outside any directory a server can write: a server able to write
// the state file could approve its own tools. Keep it outside what a server
// can read, too: flock needs only a descriptor opened for reading, so such
// a server could hold the lock (Update then fails with ErrLocked).
type Store struct {
	// Dir is the state directory. Update creates it (mode 0700) if missing.
	Dir string
	// LockTimeout bounds Update's wait for the state file's lock; zero
	// means DefaultLockTimeout.
	LockTimeout time.Duration

	// beforeRename, if set, runs after the new state is written and synced
	// to its temporary file and before that file is renamed over the state
	// file: tests use it to simulate a crash at the worst moment.
	beforeRename func(tmp string) error
}

func (s *Store) path() (string, error) {
	if s.Dir == "" {
		return "", errors.New("pin: Store.Dir is empty; set it to the state directory")
	}
	return filepath.Join(s.Dir, FileName), nil
}

// Load reads the state file. A missing file or directory is an empty State
// (FormatVersion, empty maps) and no error. Every other failure is an error
// that names the file: one wrapping ErrFutureVersion for a newer format,
// else one wrapping ErrCorrupt (and the underlying error, if any). Load never
// changes the file. The maps of the returned State are never nil.
func (s *Store) Load() (*State, error) {
	path, err := s.path()
	if err != nil {
		return nil, err
	}
	data, err := readLimited(path)
	if errors.Is(err, fs.ErrNotExist) {
		return newState(), nil
	}
	if err != nil {
		return nil, corruptError(path, err)
	}
	st, err := parseState(data)
	if errors.Is(err, ErrFutureVersion) {
		return nil, fmt.Errorf("%w: %s: %w; upgrade mcphost to use it (the file is left as it is)", ErrFutureVersion, path, err)
	}
	if err != nil {
		return nil, corruptError(path, err)
	}
	return st, nil
}

func corruptError(path string, err error) error {
	return fmt.Errorf("%w: %s: %w; fix the file or move it aside (mcphost never resets it; "+
		"without it, every tool must be reviewed again)", ErrCorrupt, path, err)
}

// readLimited reads a state file as hostfile.Read does, at most
// maxStateSize bytes of it. No server can write the state directory
// (mcphost refuses one it could), but the file is read as one that could
// have been planted all the same: it costs nothing.
func readLimited(path string) ([]byte, error) {
	return hostfile.Read(path, maxStateSize)
}

func newState() *State {
	return &State{Version: FormatVersion, Tools: map[string]Entry{}, Servers: map[string]ServerEntry{}, Tables: map[string]Entry{}, Locks: map[string]string{},
		Instructions: map[string]Entry{}, Prompts: map[string]Entry{}}
}

// futureVersionError is returned by parseState for a newer format.
type futureVersionError struct{ version int64 }

func (e *futureVersionError) Error() string {
	return fmt.Sprintf("format version %d, this mcphost reads up to %d", e.version, FormatVersion)
}

func (e *futureVersionError) Is(target error) bool { return target == ErrFutureVersion }

// parseState decodes and checks a state file. It reads the parsed tree
// itself instead of using encoding/json, whose field matching ignores case
// and whose handling of duplicate keys keeps the last: a state file has one
// reading or none.
func parseState(data []byte) (*State, error) {
	// A definition starts at the fourth level of the file (root, "tools",
	// entry, definition), so this bound is exactly Digest's for it.
	root, err := canonical.ParseObject(data, canonical.MaxDepth+3)
	if err != nil {
		return nil, errors.New(errString(err))
	}
	// The version decides how to read the rest, so it is read first: a
	// newer format is reported as such even if the rest looks wrong.
	i := root.Index("version")
	if i < 0 {
		return nil, errors.New("no \"version\" field")
	}
	version, err := parseVersion(root.Obj[i].Val)
	if err != nil {
		return nil, err
	}
	if version > FormatVersion {
		return nil, &futureVersionError{version}
	}
	st := newState()
	// The digest of each definition, computed from the tree already parsed
	// rather than by parsing each definition again.
	var digests, tableDigests, insDigests, promptDigests map[string]string
	for _, m := range root.Obj {
		switch m.Name {
		case "version":
		case "tools":
			if digests, err = decodeEntries(st.Tools, "tools", data, m.Val, digests); err != nil {
				return nil, err
			}
		case "tables":
			if tableDigests, err = decodeEntries(st.Tables, "tables", data, m.Val, tableDigests); err != nil {
				return nil, err
			}
		case "instructions":
			if insDigests, err = decodeEntries(st.Instructions, "instructions", data, m.Val, insDigests); err != nil {
				return nil, err
			}
		case "prompts":
			if promptDigests, err = decodeEntries(st.Prompts, "prompts", data, m.Val, promptDigests); err != nil {
				return nil, err
			}
		case "servers":
			if err := decodeServers(st, m.Val); err != nil {
				return nil, err
			}
		case "locks":
			if err := decodeLocks(st, m.Val); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("unknown field %s", jsontree.QuoteName(m.Name))
		}
	}
	byField := map[string]map[string]string{"tools": digests, "tables": tableDigests, "instructions": insDigests, "prompts": promptDigests}
	err = checkState(st, func(field, key string, _ json.RawMessage) (string, error) { return byField[field][key], nil })
	if err == nil && version < 4 && (len(st.Instructions) > 0 || len(st.Prompts) > 0) {
		err = fmt.Errorf("format version %d has no \"instructions\" nor \"prompts\"", version)
	}
	if err != nil {
		return nil, err
	}
	return st, nil
}

func parseVersion(v *jsontree.Value) (int64, error) {
	if v.Kind != jsontree.Number {
		return 0, errors.New("\"version\" is not a number")
	}
	n, err := strconv.ParseInt(string(v.Raw), 10, 32)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("\"version\" is %s, want a positive integer", v.Raw)
	}
	return n, nil
}

// decodeEntries decodes the object of entries named field ("tools" or
// "tables"), parsed from data, into into and returns the digest of each
// entry's definition, in digests (made if nil).
func decodeEntries(into map[string]Entry, field string, data []byte, v *jsontree.Value, digests map[string]string) (map[string]string, error) {
	if v.Kind == jsontree.Null {
		return digests, nil
	}
	if v.Kind != jsontree.Object {
		return nil, fmt.Errorf("%q is not an object", field)
	}
	if digests == nil {
		digests = make(map[string]string, len(v.Obj))
	}
	var buf []byte
	for _, m := range v.Obj {
		where := field + "[" + jsontree.QuoteName(m.Name) + "]"
		if m.Val.Kind != jsontree.Object {
			return nil, fmt.Errorf("%s is not an object", where)
		}
		var e Entry
		var seen [3]bool
		for _, f := range m.Val.Obj {
			switch f.Name {
			case "digest":
				if f.Val.Kind != jsontree.String {
					return nil, fmt.Errorf("%s.digest is not a string", where)
				}
				e.Digest = f.Val.Str
				seen[0] = true
			case "definition":
				if f.Val.Kind != jsontree.Object {
					return nil, fmt.Errorf("%s.definition is not an object", where)
				}
				e.Definition = json.RawMessage(f.Val.Raw)
				buf, digests[m.Name] = canonical.DigestTree(buf, f.Val)
				seen[1] = true
			case "reviewed_at":
				if f.Val.Kind != jsontree.String {
					return nil, fmt.Errorf("%s.reviewed_at is not a string", where)
				}
				t, err := time.Parse(time.RFC3339Nano, f.Val.Str)
				if err != nil {
					return nil, fmt.Errorf("%s.reviewed_at: %w", where, err)
				}
				e.ReviewedAt = t
				seen[2] = true
			default:
				return nil, fmt.Errorf("%s has an unknown field %s", where, jsontree.QuoteName(f.Name))
			}
		}
		for i, name := range [...]string{"digest", "definition", "reviewed_at"} {
			if !seen[i] {
				return nil, fmt.Errorf("%s has no %q", where, name)
			}
		}
		into[m.Name] = e
	}
	return digests, nil
}

func decodeLocks(st *State, v *jsontree.Value) error {
	if v.Kind == jsontree.Null {
		return nil
	}
	if v.Kind != jsontree.Object {
		return errors.New("\"locks\" is not an object")
	}
	for _, m := range v.Obj {
		if m.Val.Kind != jsontree.String {
			return fmt.Errorf("locks[%s] is not a string", jsontree.QuoteName(m.Name))
		}
		st.Locks[m.Name] = m.Val.Str
	}
	return nil
}

func decodeServers(st *State, v *jsontree.Value) error {
	if v.Kind == jsontree.Null {
		return nil
	}
	if v.Kind != jsontree.Object {
		return errors.New("\"servers\" is not an object")
	}
	for _, m := range v.Obj {
		where := "servers[" + jsontree.QuoteName(m.Name) + "]"
		if m.Val.Kind != jsontree.Object {
			return fmt.Errorf("%s is not an object", where)
		}
		var e ServerEntry
		for _, f := range m.Val.Obj {
			switch f.Name {
			case "tools":
				if f.Val.Kind == jsontree.Null {
					continue
				}
				if f.Val.Kind != jsontree.Array {
					return fmt.Errorf("%s.tools is not an array", where)
				}
				e.Tools = make([]string, 0, len(f.Val.Arr))
				for _, t := range f.Val.Arr {
					if t.Kind != jsontree.String {
						return fmt.Errorf("%s.tools has an element that is not a string", where)
					}
					e.Tools = append(e.Tools, t.Str)
				}
			case "instructions":
				// Written by earlier versions, read by none: checked,
				// so that a corrupt file is still refused, and dropped.
				if f.Val.Kind != jsontree.String {
					return fmt.Errorf("%s.instructions is not a string", where)
				}
				if f.Val.Str != "" && !validDigest(f.Val.Str) {
					return fmt.Errorf("%s: instructions digest %s has an unknown format, want %q and 64 lower case hex digits",
						where, jsontree.QuoteName(f.Val.Str), DigestPrefix)
				}
			default:
				return fmt.Errorf("%s has an unknown field %s", where, jsontree.QuoteName(f.Name))
			}
		}
		st.Servers[m.Name] = e
	}
	return nil
}

// checkState checks what the types cannot: keys, digest formats, and that
// each digest is the digest of its definition, so the diff a person is shown
// is of the definition that was actually pinned. Load and Update both use
// it: Update never writes a file that Load would refuse. digestOf returns
// the digest of the definition of the entry with the given key.
func checkState(st *State, digestOf func(field, key string, def json.RawMessage) (string, error)) error {
	if err := checkEntries(st.Tools, "tools", digestOf, func(k string) error {
		server, tool, ok := strings.Cut(k, "/")
		if !ok || server == "" || tool == "" {
			return errors.New("key is not \"server/tool\"")
		}
		return nil
	}); err != nil {
		return err
	}
	if err := checkEntries(st.Tables, "tables", digestOf, func(k string) error {
		server, config, ok := strings.Cut(k, "@")
		if !ok || server == "" || strings.Contains(server, "/") || !strings.HasPrefix(config, "/") {
			return errors.New("key is not \"server@/absolute/config/path\"")
		}
		return nil
	}); err != nil {
		return err
	}
	for _, k := range sortedKeys(st.Locks) {
		if !strings.HasPrefix(k, "/") {
			return fmt.Errorf("locks[%s]: key is not an absolute path", jsontree.QuoteName(k))
		}
		if !validDigest(st.Locks[k]) {
			return fmt.Errorf("locks[%s]: digest %s has an unknown format", jsontree.QuoteName(k), jsontree.QuoteName(st.Locks[k]))
		}
	}
	if err := checkEntries(st.Instructions, "instructions", digestOf, func(k string) error {
		if k == "" || strings.Contains(k, "/") {
			return errors.New("not a server name")
		}
		return nil
	}); err != nil {
		return err
	}
	for _, k := range sortedKeys(st.Instructions) {
		if _, ok := InstructionsText(st.Instructions[k].Definition); !ok {
			return fmt.Errorf("instructions[%s]: definition is not {\"instructions\": text}", jsontree.QuoteName(k))
		}
	}
	if err := checkEntries(st.Prompts, "prompts", digestOf, func(k string) error {
		server, prompt, ok := strings.Cut(k, "/")
		if !ok || server == "" || prompt == "" {
			return errors.New("key is not \"server/prompt\"")
		}
		return nil
	}); err != nil {
		return err
	}
	return checkServers(st)
}

// checkEntries checks the entries of one field of the state.
func checkEntries(entries map[string]Entry, field string, digestOf func(field, key string, def json.RawMessage) (string, error), checkKey func(string) error) error {
	for _, k := range sortedKeys(entries) {
		e := entries[k]
		where := field + "[" + jsontree.QuoteName(k) + "]"
		if err := checkKey(k); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		if !validDigest(e.Digest) {
			return fmt.Errorf("%s: digest %s has an unknown format, want %q and 64 lower case hex digits",
				where, jsontree.QuoteName(e.Digest), DigestPrefix)
		}
		d, err := digestOf(field, k, e.Definition)
		if err != nil {
			return fmt.Errorf("%s: definition is not an acceptable JSON object: %s", where, errString(err))
		}
		if d != e.Digest {
			return fmt.Errorf("%s: digest does not match the definition (the definition's digest is %s)", where, d)
		}
		if e.ReviewedAt.IsZero() {
			return fmt.Errorf("%s: reviewed_at is missing", where)
		}
	}
	return nil
}

func checkServers(st *State) error {
	for _, k := range sortedKeys(st.Servers) {
		e := st.Servers[k]
		where := "servers[" + jsontree.QuoteName(k) + "]"
		if k == "" || strings.Contains(k, "/") {
			return fmt.Errorf("%s: not a server name", where)
		}
		seen := make(map[string]bool, len(e.Tools))
		for _, t := range e.Tools {
			if t == "" {
				return fmt.Errorf("%s: empty tool name", where)
			}
			if seen[t] {
				return fmt.Errorf("%s: tool %s listed twice", where, jsontree.QuoteName(t))
			}
			seen[t] = true
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Update runs fn on the current state and, if fn returns nil, writes the
// state fn leaves. It holds an exclusive lock (flock on FileName+".lock" in
// Dir) from before the read until after the write, so concurrent Updates, in
// this process or others, apply one after another and none is lost. It
// waits while another Update holds the lock, at most LockTimeout, then
// fails with an error wrapping ErrLocked and writes nothing: fn should be
// quick and must not wait for a person.
//
// Update creates Dir (mode 0700) if it is missing. The write is atomic: the
// new state goes to a temporary file in Dir (mode 0600), which is synced,
// renamed over the state file, and the directory synced. A crash at any
// point leaves either the old state or the new one, and at worst a leftover
// temporary file, which Load ignores and the next Update removes.
//
// If the state cannot be loaded (ErrCorrupt, ErrFutureVersion), Update
// returns that error without calling fn and writes nothing. If fn returns an
// error, Update returns it unchanged and writes nothing. If the state fn
// leaves is not valid (a key not "server/tool", a digest that is not the
// digest of its definition, a zero ReviewedAt, a server's tool listed twice),
// Update writes nothing and says why. ServerEntry.Tools are written sorted.
func (s *Store) Update(fn func(*State) error) error {
	path, err := s.path()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return fmt.Errorf("pin: creating the state directory: %w", err)
	}
	timeout := s.LockTimeout
	if timeout <= 0 {
		timeout = DefaultLockTimeout
	}
	unlock, err := lock(path+".lock", timeout)
	if errors.Is(err, ErrLocked) {
		return err
	}
	if err != nil {
		return fmt.Errorf("pin: locking %s: %w", path, err)
	}
	defer unlock()

	st, err := s.Load()
	if err != nil {
		return err
	}
	if err := fn(st); err != nil {
		return err
	}
	st.Version = FormatVersion
	if st.Tools == nil {
		st.Tools = map[string]Entry{}
	}
	if st.Servers == nil {
		st.Servers = map[string]ServerEntry{}
	}
	if st.Tables == nil {
		st.Tables = map[string]Entry{}
	}
	if st.Locks == nil {
		st.Locks = map[string]string{}
	}
	if st.Instructions == nil {
		st.Instructions = map[string]Entry{}
	}
	if st.Prompts == nil {
		st.Prompts = map[string]Entry{}
	}
	if err := checkState(st, digestDefinition); err != nil {
		return fmt.Errorf("pin: not writing %s: the new state is invalid: %w", path, err)
	}
	for k, e := range st.Servers {
		if !slices.IsSorted(e.Tools) {
			e.Tools = slices.Sorted(slices.Values(e.Tools))
			st.Servers[k] = e
		}
	}
	data, err := marshalState(st)
	if err != nil {
		return fmt.Errorf("pin: encoding the state: %w", err)
	}
	removeStaleTemps(s.Dir)
	if err := s.writeAtomic(path, data); err != nil {
		return fmt.Errorf("pin: writing %s: %w", path, err)
	}
	return nil
}

func marshalState(st *State) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(st); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

const tempPattern = "." + FileName + ".tmp-*"

// removeStaleTemps removes temporary files left by an Update that crashed
// before its rename. It runs under the lock, so no other writer's temporary
// file is in use; a failure only leaves litter behind.
func removeStaleTemps(dir string) {
	matches, _ := filepath.Glob(filepath.Join(dir, tempPattern))
	for _, m := range matches {
		os.Remove(m)
	}
}

func (s *Store) writeAtomic(path string, data []byte) error {
	return writeAtomicMode(path, tempPattern, data, 0o600, s.beforeRename)
}

// writeAtomicMode writes data to path through a temporary file named by
// pattern in the same directory, with the given mode: synced, renamed over
// path, and the directory synced. beforeRename, if not nil, runs just
// before the rename.
func writeAtomicMode(path, pattern string, data []byte, mode os.FileMode, beforeRename func(tmp string) error) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return err
	}
	tmp := f.Name()
	if err := writeSync(f, data, mode); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if beforeRename != nil {
		if err := beforeRename(tmp); err != nil {
			os.Remove(tmp)
			return err
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	// The rename is durable only once the directory is synced.
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("renamed into place but not synced: %w", err)
	}
	return nil
}

func writeSync(f *os.File, data []byte, mode os.FileMode) error {
	// CreateTemp uses 0600; say the mode explicitly, whatever it does.
	if err := f.Chmod(mode); err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	return f.Sync()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
