package sandbox

import (
	"fmt"
	"path/filepath"
	"sort"
)

// mountPlan is what the helper does in its mount namespace, in this order.
// It is computed from a spec by planMounts, a pure function, so that the
// decisions can be tested without mounting anything.
type mountPlan struct {
	// Hide are directories covered with an empty tmpfs, which is made
	// read-only once the Reveal mount points have been made in it. They
	// hide what a path-based rule cannot: listening unix sockets (an SSH
	// agent, a Docker daemon) that Landlock ABI 7 does not mediate.
	Hide []string
	// Reveal are granted paths beneath a Hide directory, bound back from
	// the original tree at the same place.
	Reveal []string
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
}

// planMounts computes the mount plan for s.
func planMounts(s *spec) (mountPlan, error) {
	var p mountPlan
	granted := append(append([]string(nil), s.Read...), s.Write...)

	// A directory that is itself granted (or lies in a granted directory)
	// is not hidden: granting it means the server may see it.
	for _, h := range outermost(s.Hide) {
		if h == "/" {
			return mountPlan{}, fmt.Errorf("cannot hide /")
		}
		if underAny(h, granted) {
			continue
		}
		p.Hide = append(p.Hide, h)
	}
	var reveal []string
	for _, g := range granted {
		if underAny(g, p.Hide) {
			reveal = append(reveal, g)
		}
	}
	p.Reveal = outermost(reveal)
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
		if underAny(q, p.Hide) && !underAny(q, p.Reveal) {
			continue // invisible to the server
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
