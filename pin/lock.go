package pin

import (
	"github.com/mcphost/mcphost/internal/canonical"
	"github.com/mcphost/mcphost/internal/hostfile"
	"github.com/mcphost/mcphost/internal/jsontree"

	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/zeebo/blake3"
)

// LockFileName is the default name of a lock file: a team's reviews,
// committed with the project beside its config.
const LockFileName = "mcphost.lock"

// LockVersion is the version of the lock file format this package writes.
// It reads this one and every earlier one (version 1 had no instructions
// and prompts); a lock with a higher version is refused (ErrFutureVersion).
const LockVersion = 2

// errLockCorrupt is ErrCorrupt, said of a lock file: every refusal of a
// lock's content wraps it.
var errLockCorrupt = fmt.Errorf("%w (a lock file)", ErrCorrupt)

// Lock is the content of a lock file: per server, what it runs and what a
// person reviewed of it. Its JSON form (Marshal) is deterministic: keys
// sorted, two-space indentation, one tool per block, every invisible or
// control character in a string written as a \u escape, so that a change
// reads well, and hides nothing, in code review.
type Lock struct {
	// Version is LockVersion for a Lock from ParseLock; Marshal writes
	// LockVersion whatever it holds.
	Version int `json:"version"`
	// Servers is keyed by server name.
	Servers map[string]LockServer `json:"servers"`
}

// LockServer is one server's entry in a lock.
type LockServer struct {
	// Table is the reviewed server table (mcphost.ServerConfig.Definition),
	// nil if none was recorded.
	Table *LockEntry `json:"table,omitempty"`
	// Program identifies what the server runs, in the order it is started:
	// the program, the interpreters that lie in the worktree, the script,
	// then the packages its code is loaded from, each followed by its
	// files when it holds few.
	Program []ProgramFile `json:"program"`
	// Tools are the reviewed tools, keyed by the tool's name as the server
	// sends it. A tool not here is not reviewed.
	Tools map[string]LockEntry `json:"tools"`
	// Instructions are the reviewed instructions (their Definition is
	// InstructionsDefinition of the text), nil if none were reviewed.
	Instructions *LockEntry `json:"instructions,omitempty"`
	// Prompts are the reviewed prompts, each as prompts/list sent it,
	// keyed by the prompt's name. A prompt not here is not reviewed.
	Prompts map[string]LockEntry `json:"prompts,omitempty"`
}

// LockEntry is one reviewed definition: a tool's, a prompt's, a server's
// instructions or its table.
type LockEntry struct {
	// Digest is Digest(Definition).
	Digest string `json:"digest"`
	// Definition is the reviewed definition in canonical form (Canonical),
	// kept so that a change can be shown as a diff.
	Definition json.RawMessage `json:"definition"`
}

// ProgramFile is one file of a server's program identity.
type ProgramFile struct {
	// Role is "program" (the command's first word), "interpreter" (one of
	// the "#!" chain), "script" (the file an interpreter runs), "package"
	// (a tree the server's code is loaded from, RolePackage) or
	// "package-file" (one file of a small package, RolePackageFile).
	Role string `json:"role"`
	// Path is the file as the config names it (the command, the script
	// argument), or, for an interpreter or a package, relative to the
	// worktree ("/"-separated; a directory ends in "/"), absolute outside
	// it.
	Path string `json:"path"`
	// Digest is DigestFile of the file; "" for an interpreter outside the
	// worktree (a system program, whose build differs between machines).
	Digest string `json:"digest,omitempty"`
	// Package is "name@version" of the npm package the file belongs to,
	// where a package-lock.json shows it; "" otherwise. It is for a person
	// to read, not identity: a package-lock.json in the worktree is a
	// file a server could write. What identifies a package's code is the
	// digest of its tree (RolePackage).
	Package string `json:"package,omitempty"`
	// Files is, for RolePackage, how many files the tree's digest covers.
	Files int `json:"files,omitempty"`
	// Truncated reports, for RolePackage, a tree larger than the bound of
	// what is digested: Digest covers its first Files files only.
	Truncated bool `json:"truncated,omitempty"`
}

// Program roles of ProgramFile.Role.
const (
	RoleProgram     = "program"
	RoleInterpreter = "interpreter"
	RoleScript      = "script"
	// RolePackage is a directory tree (Path ends in "/") or a module file
	// that the server's runtime loads code from: the package its script
	// belongs to, a virtual environment, the module python -m runs. Its
	// Digest is over the whole tree: every path, file content, executable
	// bit and symbolic link target.
	RolePackage = "package"
	// RolePackageFile is one regular file of a small RolePackage tree,
	// listed after it with its DigestFile, so that a change names the
	// file. Path is the file's, as RolePackage paths are written.
	RolePackageFile = "package-file"
)

// NewLockEntry returns the lock entry of a definition: its digest and its
// canonical form. It returns an error wrapping ErrInvalid if Canonical does.
func NewLockEntry(def json.RawMessage) (LockEntry, error) {
	c, err := Canonical(def)
	if err != nil {
		return LockEntry{}, err
	}
	d, err := Digest(c)
	if err != nil {
		return LockEntry{}, err
	}
	return LockEntry{Digest: d, Definition: c}, nil
}

// DigestBytes returns DigestPrefix and the 64 lower case hex digits of the
// BLAKE3-256 hash of b's exact bytes: the digest of a whole file.
func DigestBytes(b []byte) string {
	return canonical.Format(blake3.Sum256(b))
}

// DigestFile returns DigestBytes of the file at path's content, reading it
// as a stream. It reads only a regular file (or a symbolic link to one),
// never waiting to open it: a FIFO, device or directory a server put in
// place of a program is refused, with an error saying what it is. It
// returns the error of opening or reading it.
func DigestFile(path string) (string, error) {
	f, err := hostfile.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := blake3.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return canonical.Format(sum), nil
}

// ParseLock decodes and checks a lock file's content. Errors wrap
// ErrFutureVersion for a newer format and ErrCorrupt otherwise, and
// say what is wrong. The maps of the returned Lock are never nil.
func ParseLock(data []byte) (*Lock, error) {
	// A tool's definition starts at the sixth level (root, "servers",
	// server, "tools", tool, definition).
	root, err := canonical.ParseObject(data, canonical.MaxDepth+5)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", errLockCorrupt, errString(err))
	}
	if i := root.Index("version"); i >= 0 {
		if v, err := parseVersion(root.Obj[i].Val); err == nil && v > LockVersion {
			return nil, fmt.Errorf("%w: lock format version %d, this mcphost reads up to %d", ErrFutureVersion, v, LockVersion)
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var l Lock
	if err := dec.Decode(&l); err != nil {
		return nil, fmt.Errorf("%w: %v", errLockCorrupt, err)
	}
	if l.Version < 1 || l.Version > LockVersion {
		return nil, fmt.Errorf("%w: \"version\" is %d, want 1 to %d", errLockCorrupt, l.Version, LockVersion)
	}
	if l.Servers == nil {
		l.Servers = map[string]LockServer{}
	}
	if err := l.check(l.Version); err != nil {
		return nil, fmt.Errorf("%w: %w", errLockCorrupt, err)
	}
	// encoding/json matches keys regardless of case and keeps the last of
	// repeated ones (parseObject refused those): the file must read as
	// exactly what it says, so its canonical form must be that of the Lock
	// decoded from it.
	again, err := l.marshal(l.Version)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errLockCorrupt, err)
	}
	back, err := canonical.ParseObject(again, canonical.MaxDepth+5)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errLockCorrupt, err)
	}
	if !bytes.Equal(jsontree.AppendMinimal(nil, root), jsontree.AppendMinimal(nil, back)) {
		return nil, fmt.Errorf("%w: it is not in the form mcphost writes it (a key in the wrong case, or an empty or null field written out)", errLockCorrupt)
	}
	for name, s := range l.Servers {
		if s.Tools == nil {
			s.Tools = map[string]LockEntry{}
			l.Servers[name] = s
		}
	}
	return &l, nil
}

// check checks what the types cannot: names, roles, digest formats, that
// each digest is the digest of its definition, and that a lock of an older
// version holds only what that version had.
func (l *Lock) check(version int) error {
	for _, name := range sortedKeys(l.Servers) {
		s := l.Servers[name]
		where := "servers[" + jsontree.QuoteName(name) + "]"
		if name == "" || strings.ContainsAny(name, "/@") {
			return fmt.Errorf("%s: not a server name", where)
		}
		if s.Table != nil {
			if err := checkLockEntry(where+".table", *s.Table); err != nil {
				return err
			}
		}
		if version < 2 && (s.Instructions != nil || s.Prompts != nil) {
			// A version 1 lock was written before either existed: one
			// that holds them is not what it says it is.
			return fmt.Errorf("%s: instructions and prompts are of version 2, the lock says version %d", where, version)
		}
		for i, p := range s.Program {
			w := fmt.Sprintf("%s.program[%d]", where, i)
			if version < 2 && (p.Role == RolePackage || p.Role == RolePackageFile) {
				return fmt.Errorf("%s: role %q is of version 2, the lock says version %d", w, p.Role, version)
			}
			switch p.Role {
			case RoleProgram, RoleInterpreter, RoleScript, RolePackage, RolePackageFile:
			default:
				return fmt.Errorf("%s: role %s, want %q, %q, %q, %q or %q", w, jsontree.QuoteName(p.Role), RoleProgram, RoleInterpreter, RoleScript, RolePackage, RolePackageFile)
			}
			if p.Role != RolePackage && (p.Files != 0 || p.Truncated) {
				return fmt.Errorf("%s: files and truncated are for role %q only", w, RolePackage)
			}
			if p.Files < 0 {
				return fmt.Errorf("%s: files is negative", w)
			}
			if p.Path == "" {
				return fmt.Errorf("%s: empty path", w)
			}
			if p.Digest != "" && !validDigest(p.Digest) {
				return fmt.Errorf("%s: digest %s has an unknown format", w, jsontree.QuoteName(p.Digest))
			}
		}
		for _, tool := range sortedKeys(s.Tools) {
			if tool == "" {
				return fmt.Errorf("%s.tools: empty tool name", where)
			}
			if err := checkLockEntry(where+".tools["+jsontree.QuoteName(tool)+"]", s.Tools[tool]); err != nil {
				return err
			}
		}
		if s.Instructions != nil {
			if err := checkLockEntry(where+".instructions", *s.Instructions); err != nil {
				return err
			}
			if _, ok := InstructionsText(s.Instructions.Definition); !ok {
				return fmt.Errorf("%s.instructions: definition is not an instructions object", where)
			}
		}
		for _, p := range sortedKeys(s.Prompts) {
			if p == "" {
				return fmt.Errorf("%s.prompts: empty prompt name", where)
			}
			if err := checkLockEntry(where+".prompts["+jsontree.QuoteName(p)+"]", s.Prompts[p]); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkLockEntry(where string, e LockEntry) error {
	if !validDigest(e.Digest) {
		return fmt.Errorf("%s: digest %s has an unknown format, want %q and 64 lower case hex digits", where, jsontree.QuoteName(e.Digest), DigestPrefix)
	}
	d, err := Digest(e.Definition)
	if err != nil {
		return fmt.Errorf("%s: definition is not an acceptable JSON object: %s", where, errString(err))
	}
	if d != e.Digest {
		return fmt.Errorf("%s: digest does not match the definition (the definition's digest is %s)", where, d)
	}
	return nil
}

// Marshal returns the lock's deterministic JSON form, or an error saying why
// the lock is invalid (what ParseLock would refuse). Definitions are written
// in canonical form whatever form they are given in.
func (l *Lock) Marshal() ([]byte, error) {
	if err := l.check(LockVersion); err != nil {
		return nil, fmt.Errorf("pin: invalid lock: %w", err)
	}
	return l.marshal(LockVersion)
}

// marshal writes the lock as format version (ParseLock checks an older
// file's form by its own version).
func (l *Lock) marshal(version int) ([]byte, error) {
	out := Lock{Version: version, Servers: make(map[string]LockServer, len(l.Servers))}
	for name, s := range l.Servers {
		c := LockServer{Program: s.Program, Tools: make(map[string]LockEntry, len(s.Tools))}
		if c.Program == nil {
			c.Program = []ProgramFile{}
		}
		for _, p := range []struct{ from, to **LockEntry }{{&s.Table, &c.Table}, {&s.Instructions, &c.Instructions}} {
			if *p.from != nil {
				e, err := canonicalEntry(**p.from)
				if err != nil {
					return nil, err
				}
				*p.to = &e
			}
		}
		if len(s.Prompts) > 0 {
			c.Prompts = make(map[string]LockEntry, len(s.Prompts))
			for name, e := range s.Prompts {
				ce, err := canonicalEntry(e)
				if err != nil {
					return nil, err
				}
				c.Prompts[name] = ce
			}
		}
		for tool, e := range s.Tools {
			ce, err := canonicalEntry(e)
			if err != nil {
				return nil, err
			}
			c.Tools[tool] = ce
		}
		out.Servers[name] = c
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return nil, err
	}
	return EscapeJSON(buf.Bytes()), nil
}

func canonicalEntry(e LockEntry) (LockEntry, error) {
	c, err := Canonical(e.Definition)
	if err != nil {
		return LockEntry{}, err
	}
	return LockEntry{Digest: e.Digest, Definition: c}, nil
}

// LockStore is a lock file at Path. Create it as &LockStore{Path: p}. Its
// methods may be called from many goroutines and processes at once; Update
// serializes writers with a flock on the directory holding the file (no
// lock file of its own beside it in the project).
type LockStore struct {
	// Path is the lock file.
	Path string
	// LockTimeout bounds Update's wait for the directory's flock; zero
	// means DefaultLockTimeout.
	LockTimeout time.Duration
}

// Load reads the lock file and returns it with the exact bytes read. A
// missing file is an empty Lock and nil bytes, no error. Other failures
// name the file and wrap ErrCorrupt or ErrFutureVersion.
func (s *LockStore) Load() (*Lock, []byte, error) {
	data, err := hostfile.Read(s.Path, hostfile.MaxLock)
	if errors.Is(err, fs.ErrNotExist) {
		return &Lock{Version: LockVersion, Servers: map[string]LockServer{}}, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %w", errLockCorrupt, s.Path, err)
	}
	l, err := ParseLock(data)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w; fix the file (git diff, git checkout) or move it aside", s.Path, err)
	}
	return l, data, nil
}

// Update runs fn on the current lock and, if fn returns nil, writes the
// lock fn leaves and returns the bytes written. Before fn, it passes the
// file's current bytes (nil if it does not exist) to trust, and stops with
// trust's error if there is one: the caller decides whether a file it did
// not write may be built upon. It holds the directory's flock from before
// the read until after the write (at most LockTimeout waiting, then an
// error wrapping ErrLocked) and writes atomically, as Store.Update does
// (a temporary "."+name+".tmp-*" beside it, synced, renamed, the directory
// synced), with mode 0644: the file is meant to be committed.
func (s *LockStore) Update(trust func(current []byte) error, fn func(*Lock) error) ([]byte, error) {
	if s.Path == "" {
		return nil, errors.New("pin: LockStore.Path is empty")
	}
	dir := filepath.Dir(s.Path)
	timeout := s.LockTimeout
	if timeout <= 0 {
		timeout = DefaultLockTimeout
	}
	unlock, err := lockDir(dir, timeout)
	if errors.Is(err, ErrLocked) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("pin: locking %s: %w", dir, err)
	}
	defer unlock()
	l, data, err := s.Load()
	if err != nil {
		return nil, err
	}
	if err := trust(data); err != nil {
		return nil, err
	}
	if err := fn(l); err != nil {
		return nil, err
	}
	out, err := l.Marshal()
	if err != nil {
		return nil, fmt.Errorf("pin: not writing %s: %w", s.Path, err)
	}
	pattern := "." + filepath.Base(s.Path) + ".tmp-*"
	if matches, _ := filepath.Glob(filepath.Join(dir, pattern)); matches != nil {
		for _, m := range matches {
			os.Remove(m)
		}
	}
	if err := writeAtomicMode(s.Path, pattern, out, 0o644, nil); err != nil {
		return nil, fmt.Errorf("pin: writing %s: %w", s.Path, err)
	}
	return out, nil
}
