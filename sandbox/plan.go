package sandbox

import (
	"fmt"
	"path/filepath"
	"sort"
)

// mountPlan is what the helper does in its mount namespace, in this order.
// It is computed from a spec by planMounts, a pure function, so that the
// decisions can be tested without mounting anything.
//
// The server's view is a new root: an empty tmpfs into which only what the
// server may use is bound, at the same paths as on the host. Whatever is
// not granted does not exist for it: stat(2) and connect(2) to a unix
// socket find nothing, and /proc/self/mountinfo lists only these mounts.
type mountPlan struct {
	// NewRoot is false only when / itself is granted: then the host's
	// tree is the view, as granted.
	NewRoot bool
	// Binds are the granted paths (the outermost of Read and Write, /proc
	// aside, which is mounted fresh) bound from the host's tree into the
	// new root, outer paths first.
	Binds []string
	// Links are symbolic links made in the new root, path to target, for
	// the system paths that are links on the host (/bin -> usr/bin).
	Links map[string]string
	// Empty are directories made, empty and read-only, in the new root
	// where nothing granted puts them (the home directory): they exist,
	// as a program expects, and show nothing.
	Empty []string
	// Tmp is the server's TMPDIR, mounted as a tmpfs of TmpSize bytes
	// owned by TmpOwner (0: the helper's own ID) rather than bound; /dev/shm
	// gets the same size.
	Tmp      string
	TmpSize  int64
	TmpOwner uint32
	// Home, when not empty, is the server's private home directory in the
	// view, bound from HomeSource on the host before any bind beneath it
	// (whose mount points the host made in HomeSource), writable. Mounts
	// beneath it are made read-only unless they lie in Writable: a read
	// grant such as ~/.gitconfig stays read-only in a writable home.
	Home, HomeSource string
	// HomeSize, when positive, makes Home a tmpfs of at most this many
	// bytes, owned by TmpOwner, instead of HomeSource bound there.
	HomeSize int64
	// Writable are the writable roots, each bound onto itself so that it
	// stays writable when every other mount is made read-only.
	Writable []string
	// Pin are directories between a writable root and a protected path,
	// bound onto themselves: a mount point cannot be renamed or removed,
	// so the server cannot move a protected path's parent away and put a
	// forgery in its place.
	Pin []string
	// Protect are bound read-only onto themselves: the server can neither
	// write them (EROFS) nor rename, remove or replace them (EBUSY).
	Protect []string
	// StubResolvConf binds stubResolvConf, read-only, onto the file
	// /etc/resolv.conf leads to in the new root, if it leads to one (a
	// server with a DirectProxy: its nameserver is in its namespace).
	StubResolvConf bool
}

// planMounts computes the mount plan for s.
func planMounts(s *spec) (mountPlan, error) {
	p := mountPlan{NewRoot: true}
	var granted []string
	for _, g := range append(append([]string(nil), s.Read...), s.Write...) {
		if g == "/" {
			p.NewRoot = false
		}
		if isUnder(g, "/proc") {
			continue // a fresh /proc is mounted; nothing of the host's
		}
		if g == s.Tmp {
			continue // a tmpfs of its own
		}
		granted = append(granted, g)
	}
	if p.NewRoot && s.Tmp != "" {
		p.Tmp, p.TmpSize, p.TmpOwner = s.Tmp, s.TmpSize, s.RunAs
	}
	if p.NewRoot {
		p.Binds = outermost(granted)
		sort.Strings(p.Binds)
		for l, target := range s.Links {
			if underAny(l, p.Binds) {
				continue // the bound tree has it as the host does
			}
			if p.Links == nil {
				p.Links = make(map[string]string)
			}
			p.Links[l] = target
		}
		if s.Home != "" {
			if underAny(s.Home, p.Binds) || underAny(s.Home, []string{"/proc", "/dev"}) {
				return mountPlan{}, fmt.Errorf("home %s lies in a granted or system path", s.Home)
			}
			p.Home, p.HomeSource, p.HomeSize = s.Home, s.HomeSource, s.HomeSize
			if s.HomeSize > 0 {
				p.TmpOwner = s.RunAs
			}
		}
		for _, h := range outermost(s.Hide) {
			if h == "/" {
				return mountPlan{}, fmt.Errorf("cannot hide /")
			}
			if underAny(h, p.Binds) || p.Links[h] != "" || (p.Home != "" && isUnder(h, p.Home)) {
				continue
			}
			p.Empty = append(p.Empty, h)
		}
		sort.Strings(p.Empty)
	}
	p.StubResolvConf = p.NewRoot && s.Direct != nil
	if s.Home != "" && !p.NewRoot {
		return mountPlan{}, fmt.Errorf("home %s needs a new root, but / is granted", s.Home)
	}
	p.Writable = outermost(s.Write)

	pins := make(map[string]bool)
	for _, q := range outermost(s.Protect) {
		var root string
		for _, w := range p.Writable {
			if isUnder(w, q) {
				return mountPlan{}, fmt.Errorf("protected path %s contains the writable path %s", q, w)
			}
			if isUnder(q, w) {
				root = w
			}
		}
		if root == "" {
			// Nothing writable lies above q, so the server cannot write,
			// rename or replace it anyway.
			continue
		}
		for d := filepath.Dir(q); d != root && isUnder(d, root); d = filepath.Dir(d) {
			pins[d] = true
		}
		p.Protect = append(p.Protect, q)
	}
	for d := range pins {
		p.Pin = append(p.Pin, d)
	}
	// Outer directories first: each bind must stack on the mounts of the
	// directories above it, not be hidden by them.
	sort.Strings(p.Pin)
	return p, nil
}
