package mcphost

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zeebo/blake3"

	"github.com/mcphost/mcphost/internal/canonical"
	"github.com/mcphost/mcphost/internal/hostfile"
	"github.com/mcphost/mcphost/pin"
	"github.com/mcphost/mcphost/sandbox"
)

// Bounds of a package tree's digest (pin.RolePackage). Past any, the
// digest covers the files before the one that crossed it, the lock says
// so (Truncated), and so does list. The node_modules that the reference
// servers of testdata/realservers share, each one's package, holds 33,105
// files and 270 MB: 50,000 files and 1 GiB leave room for a larger
// project while bounding a first reading to a few seconds (see treeCache).
const (
	maxTreeFiles = 50_000
	maxTreeBytes = 1 << 30
	// maxTreeEntries bounds the walk itself: directories, links and other
	// entries count too (that node_modules has 36,704 in all), so that a
	// tree of empty directories cannot stall a Connect either.
	maxTreeEntries = 200_000
	// maxTreeContents is the most files a tree may hold for the lock to
	// list each one with its digest (pin.RolePackageFile), so that a
	// change names the file: a package of a few modules is reviewed file
	// by file, while a node_modules of thousands would swamp the lock.
	maxTreeContents = 64
)

// treeBounds says the bounds of a tree's digest, for a person.
var treeBounds = fmt.Sprintf("%d files, %d bytes or %d entries", maxTreeFiles, maxTreeBytes, maxTreeEntries)

// skippedInTree are directory names a tree's digest leaves out: what a
// runtime writes beside its sources as it runs (Python's bytecode cache,
// which differs between machines and Python builds) or no runtime loads (a
// git directory). Inside a protected tree no server can write them either.
var skippedInTree = []string{"__pycache__", ".git"}

// treeSum is the digest of a directory tree or of one file.
type treeSum struct {
	digest    string
	files     int
	bytes     int64
	truncated bool
	// contents is each regular file's digest by "/"-separated path in the
	// tree, for a tree of at most maxTreeContents files; nil otherwise.
	contents map[string]string
}

// fileStamp is what tells a file's content unchanged without reading it:
// its device and inode, size, modification and change times, and mode. A
// program can set a file's modification time back, but not its change
// time, which the kernel sets on every write, chmod or rename into place.
type fileStamp struct {
	Dev   uint64 `json:"dev"`
	Ino   uint64 `json:"ino"`
	Size  int64  `json:"size"`
	Mtime int64  `json:"mtime"`
	Ctime int64  `json:"ctime"`
	Mode  uint32 `json:"mode"`
}

// treeCache is the file digests of a tree as digestTree last read them,
// kept in the state directory (which no server can reach) so that the next
// Connect reads only the files whose stamp changed: the node_modules of the
// reference servers (33,105 files, 270 MB) takes about 2.7 s to read and
// digest on a shared two-core machine, and 0.5 s from the cache.
type treeCache struct {
	Root  string                `json:"root"`
	Files map[string]cachedFile `json:"files"`
}

type cachedFile struct {
	Stamp  fileStamp `json:"stamp"`
	Digest string    `json:"digest"`
}

// maxTreeCache bounds the read of one tree's cache: about 270 bytes per
// file, so room for maxTreeFiles files of long paths. A larger cache is
// not read (the tree is read whole).
const maxTreeCache = 32 << 20

// racyWindow: a file whose change time is this close to the moment its
// digest is taken could change again within the same tick of a coarse
// clock without its stamp showing it: its digest is not cached. Two
// seconds covers the coarsest clock of a common file system (FAT's).
// A variable for tests.
var racyWindow = 2 * time.Second

// treeCachePath is where the cache of the tree at root lies under
// cacheDir.
func treeCachePath(cacheDir, root string) string {
	sum := blake3.Sum256([]byte(root))
	return filepath.Join(cacheDir, "trees", hex.EncodeToString(sum[:16])+".json")
}

func loadTreeCache(cacheDir, root string) map[string]cachedFile {
	if cacheDir == "" {
		return nil
	}
	data, err := hostfile.Read(treeCachePath(cacheDir, root), maxTreeCache)
	if err != nil {
		return nil
	}
	var c treeCache
	if json.Unmarshal(data, &c) != nil || c.Root != root {
		return nil
	}
	return c.Files
}

// saveTreeCache writes the cache atomically; a cache that cannot be
// written only costs the next Connect a full read.
func saveTreeCache(cacheDir, root string, files map[string]cachedFile) {
	if cacheDir == "" {
		return
	}
	p := treeCachePath(cacheDir, root)
	data, err := json.Marshal(treeCache{Root: root, Files: files})
	if err != nil || os.MkdirAll(filepath.Dir(p), 0o700) != nil {
		return
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".tree-*")
	if err != nil {
		return
	}
	_, werr := f.Write(data)
	if cerr := f.Close(); werr != nil || cerr != nil || os.Rename(f.Name(), p) != nil {
		os.Remove(f.Name())
	}
}

// digestTree digests the tree at root (a directory, or a single regular
// file): every entry's path in lexical order with its type, and a regular
// file's executable bit and content digest (pin.DigestFile) or a symbolic
// link's target, without following links. A FIFO, device or socket counts
// by its path and type, never opened; a file that cannot be read counts as
// unreadable. It stops at maxTreeFiles files, maxTreeBytes bytes or
// maxTreeEntries entries. With
// cacheDir (the state directory; "" for none) it takes a file's digest
// from the cache of its last reading while the file's stamp is the same
// (treeCache), and records the new readings there.
func digestTree(root, cacheDir string) (treeSum, error) {
	h := blake3.New()
	var t treeSum
	all := map[string]string{}
	cached := loadTreeCache(cacheDir, root)
	fresh := map[string]cachedFile{}
	now := time.Now()
	line := func(kind, rel string, rest ...string) {
		fmt.Fprintf(h, "%s %s", kind, strconv.Quote(rel))
		for _, r := range rest {
			fmt.Fprintf(h, " %s", strconv.Quote(r))
		}
		h.Write([]byte{'\n'})
	}
	stop := errors.New("bound reached")
	entries := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if entries++; entries > maxTreeEntries {
			t.truncated = true
			return stop
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if err != nil {
			line("?", rel)
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		switch typ := d.Type(); {
		case d.IsDir():
			if p != root && slices.Contains(skippedInTree, d.Name()) {
				return fs.SkipDir
			}
			line("d", rel)
		case typ&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				line("?", rel)
				return nil
			}
			line("l", rel, target)
		case typ.IsRegular():
			info, err := d.Info()
			if err != nil {
				line("?", rel)
				return nil
			}
			if t.files+1 > maxTreeFiles || t.bytes+info.Size() > maxTreeBytes {
				t.truncated = true
				return stop
			}
			stamp, stamped := fileStampOf(info)
			var sum string
			if c, ok := cached[rel]; ok && stamped && c.Stamp == stamp {
				sum = c.Digest
			} else if sum, err = pin.DigestFile(p); err != nil {
				line("?", rel)
				return nil
			}
			if stamped && now.Sub(time.Unix(0, stamp.Ctime)) > racyWindow {
				fresh[rel] = cachedFile{Stamp: stamp, Digest: sum}
			}
			x := "-"
			if info.Mode().Perm()&0o111 != 0 {
				x = "x"
			}
			line("f", rel, x, sum)
			t.files++
			t.bytes += info.Size()
			if len(all) < maxTreeContents+1 {
				all[rel] = sum
			}
		default:
			line("o", rel, typ.String())
		}
		return nil
	})
	if err != nil && err != stop {
		return treeSum{}, err
	}
	if !maps.Equal(cached, fresh) {
		saveTreeCache(cacheDir, root, fresh)
	}
	var sum [32]byte
	h.Sum(sum[:0])
	t.digest = canonical.Format(sum)
	if t.files <= maxTreeContents && !t.truncated {
		t.contents = all
	}
	return t, nil
}

// closureConfig is the sandbox.Config that ProgramClosure needs for sc.
func closureConfig(sc ServerConfig, argv []string, worktree string, hostEnv []string) sandbox.Config {
	return sandbox.Config{Name: sc.Name, Argv: argv, Worktree: worktree, Env: sc.Env, EnvPass: sc.EnvPass, HostEnv: hostEnv}
}

// protectable reports whether p lies in one of the writable paths (so a
// server could change it), and whether it can be made read-only to every
// server: it must not be, or hold, a writable path itself.
func protectable(p string, writable []string) (inWritable, ok bool) {
	for _, w := range writable {
		if under(p, w) {
			inWritable = true
		}
	}
	if !inWritable {
		return false, false
	}
	for _, w := range writable {
		if under(w, p) {
			return true, false
		}
	}
	return true, true
}

// holding names, for a person, the writable path that p is or holds.
func holding(p string, writable []string, worktree string) string {
	for _, w := range writable {
		if w == p && p == worktree {
			return "is the worktree"
		}
	}
	for _, w := range writable {
		if under(w, p) {
			if w == p {
				return "is the write path " + w
			}
			if w == worktree {
				return "holds the worktree"
			}
			return "holds the write path " + w
		}
	}
	return ""
}

// nested reports whether p lies strictly beneath one of the directories
// of paths, or, with same, is one of them: a digest of theirs covers p.
func nested(p string, paths []sandbox.ClosurePath, same bool) bool {
	for _, o := range paths {
		if p == o.Path && same || o.Dir && under(p, o.Path) && p != o.Path {
			return true
		}
	}
	return false
}

// packagePath is how the lock and list name a closure path: relative to
// the worktree when it lies there ("/"-separated, a directory ending in
// "/"), absolute otherwise.
func packagePath(cp sandbox.ClosurePath, worktree string) string {
	p := cp.Path
	if under(p, worktree) && p != worktree {
		rel, _ := filepath.Rel(worktree, p)
		p = filepath.ToSlash(rel)
	}
	if cp.Dir {
		p += "/"
	}
	return p
}

// packageIdentity returns the RolePackage entries of a server's program
// identity: one per closure path that a server could write and that is
// protected (see protectable), with its tree's digest (digestTree, cached
// under cacheDir), each followed by its files when it holds at most
// maxTreeContents. A path no server can write is left out: no server can
// change it, and a system package's build differs between machines.
func packageIdentity(cl sandbox.Closure, worktree string, writable []string, cacheDir string) ([]pin.ProgramFile, error) {
	var out []pin.ProgramFile
	for i, cp := range cl.Paths {
		if _, ok := protectable(cp.Path, writable); !ok || nested(cp.Path, cl.Paths[:i], true) || nested(cp.Path, cl.Paths[i+1:], false) {
			continue
		}
		t, err := digestTree(cp.Path, cacheDir)
		if err != nil {
			return nil, fmt.Errorf("package %s: %w", cp.Path, err)
		}
		p := packagePath(cp, worktree)
		out = append(out, pin.ProgramFile{Role: pin.RolePackage, Path: p, Digest: t.digest, Files: t.files, Truncated: t.truncated})
		if !cp.Dir {
			continue // the tree is the one file
		}
		for _, f := range slices.Sorted(maps.Keys(t.contents)) {
			out = append(out, pin.ProgramFile{Role: pin.RolePackageFile, Path: p + f, Digest: t.contents[f]})
		}
	}
	return out, nil
}

// programCovers describes, for a person (list), what a server's program
// identity and protection cover: its program files, each package it loads
// code from and how it is kept, and what is not covered. program is its
// identity with a lock (nil without), for the packages' file counts;
// safePath reports that it runs with PYTHONSAFEPATH=1 (programEnv).
func programCovers(sc ServerConfig, cl sandbox.Closure, program []pin.ProgramFile, worktree string, writable []string, safePath bool) []string {
	name := func(p string) string {
		if under(p, worktree) && p != worktree {
			rel, _ := filepath.Rel(worktree, p)
			return filepath.ToSlash(rel)
		}
		return p
	}
	var out []string
	var files []string
	for _, f := range cl.Files {
		files = append(files, name(f))
	}
	if len(files) > 0 {
		out = append(out, strings.Join(files, ", "))
	}
	for _, cp := range cl.Paths {
		inW, ok := protectable(cp.Path, writable)
		p := packagePath(cp, worktree)
		switch {
		case !inW:
			out = append(out, fmt.Sprintf("package %s (%s; no server can write it, so the lock does not digest it)", p, cp.Why))
		case !ok:
			out = append(out, fmt.Sprintf("NOT COVERED: package %s (%s) %s, where servers can write, and cannot be kept read-only as a whole", p, cp.Why, holding(cp.Path, writable, worktree)))
		default:
			desc := fmt.Sprintf("package %s (%s; read-only to every server", p, cp.Why)
			for _, f := range program {
				if f.Role == pin.RolePackage && f.Path == p {
					desc += fmt.Sprintf("; %d files", f.Files)
					if f.Truncated {
						desc += ", digest cut at " + treeBounds
					}
				}
			}
			out = append(out, desc+")")
		}
	}
	switch {
	case cl.WorkdirImports && safePath:
		out = append(out, "python runs with PYTHONSAFEPATH=1 (this server has rights its peers lack): nothing is imported from the working directory")
	case cl.WorkdirImports:
		mod := "-c or stdin"
		if cl.Module != "" {
			mod = "-m " + cl.Module
		}
		out = append(out, fmt.Sprintf("NOT COVERED: what python %s imports from the working directory (the worktree), which it puts first on its import path, beyond what is named here", mod))
	}
	if l, _, ok := packageLauncher(sc.Command); ok {
		out = append(out, fmt.Sprintf("NOT COVERED: what %s runs (a package from its cache, or one it finds installed)", l))
	}
	for _, u := range cl.Uncovered {
		out = append(out, "not covered: "+u)
	}
	return out
}
