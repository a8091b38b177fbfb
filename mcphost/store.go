package mcphost

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/mcphost/mcphost/pin"
)

// subject is one thing a person reviews, as it is now: a server's table,
// its program, a tool, its instructions or a prompt.
type subject struct {
	kind   kind
	server string
	// name is the tool's or the prompt's name as the server sent it; ""
	// for the other kinds.
	name string
	// def is the definition a review records (for a program, its files as
	// JSON), and digest its pin.Digest.
	def    json.RawMessage
	digest string
	// program is the program's identity, for kindProgram.
	program []pin.ProgramFile
}

// store is where reviews are kept: the personal state file (stateStore)
// or a team's lock file (lockStore). Both hold every kind of subject with
// the same record, a digest and the definition it is of.
type store interface {
	// load reads the reviews. Its error says why they cannot be read or
	// trusted; then nothing is reviewed.
	load(ctx context.Context) (view, error)
	// record records subjects. As a person's review (firstSight false) it
	// replaces any record of them and marks their servers reviewed, with
	// names (a server's tools as it offers them now, by server) as what a
	// first review of a server covers. As first sights it keeps an
	// existing record and returns the subjects recorded meanwhile with
	// another digest (conflicts: not trusted). A lock records no first
	// sight.
	record(ctx context.Context, subs []subject, firstSight bool, names map[string][]string) (conflicts []subject, err error)
	// trustsFirstSight reports whether a first sight is trusted and
	// recorded (the state file) or nothing is that the store does not
	// hold (a lock).
	trustsFirstSight() bool
}

// view is one reading of a store.
type view interface {
	// prior is what the reviews hold for a subject.
	prior(k kind, server, name string) prior
	// serverReviewed reports whether a person's review (or a first sight)
	// of the server is on record at all.
	serverReviewed(server string) bool
	// recordedTools lists the tools recorded for a server, reviewed or
	// first seen: those a server no longer lists get a notice.
	recordedTools(server string) []string
}

// stateStore keeps reviews in the personal state file.
type stateStore struct {
	st *pin.Store
	// config is the absolute path of the config the servers' tables come
	// from, for the key of a table's review.
	config string
}

func (s *stateStore) trustsFirstSight() bool { return true }

func (s *stateStore) load(context.Context) (view, error) {
	st, err := s.st.Load()
	if err != nil {
		return nil, err
	}
	return &stateView{st: st, config: s.config}, nil
}

type stateView struct {
	st     *pin.State
	config string
}

func (v *stateView) serverReviewed(server string) bool {
	_, ok := v.st.Servers[server]
	return ok
}

func (v *stateView) recordedTools(server string) []string {
	var out []string
	for key := range v.st.Tools {
		s, tool, _ := strings.Cut(key, "/")
		if s == server {
			out = append(out, tool)
		}
	}
	slices.Sort(out)
	return out
}

func (v *stateView) prior(k kind, server, name string) prior {
	p := prior{trustFirstSight: true}
	var e pin.Entry
	switch k {
	case kindTool:
		e, p.pinned = v.st.Tools[pin.Key(server, name)]
		sp, reviewed := v.st.Servers[server]
		p.covered = !reviewed || slices.Contains(sp.Tools, name)
	case kindInstructions:
		e, p.pinned = v.st.Instructions[server]
		_, reviewed := v.st.Servers[server]
		p.covered = p.pinned || !reviewed
	case kindPrompt:
		// A server's prompts are reviewed with its instructions: an
		// entry for them says the prompts then offered were reviewed.
		e, p.pinned = v.st.Prompts[pin.Key(server, name)]
		_, insReviewed := v.st.Instructions[server]
		_, reviewed := v.st.Servers[server]
		p.covered = p.pinned || !insReviewed && !reviewed
	case kindTable:
		// A table is never trusted on first sight: it decides what runs
		// and how it is confined.
		e, p.pinned = v.st.Tables[pin.TableKey(v.config, server)]
		p.covered, p.trustFirstSight = p.pinned, false
	case kindProgram:
		// The state file does not record programs: a person's own
		// machine is where the program was installed.
		p.pinned, p.covered = false, true
		return p
	}
	p.digest, p.definition = e.Digest, e.Definition
	return p
}

func (s *stateStore) record(_ context.Context, subs []subject, firstSight bool, names map[string][]string) ([]subject, error) {
	now := time.Now().UTC()
	var conflicts []subject
	err := s.st.Update(func(st *pin.State) error {
		conflicts = conflicts[:0]
		for _, sub := range subs {
			var m map[string]pin.Entry
			key := pin.Key(sub.server, sub.name)
			switch sub.kind {
			case kindTool:
				m = st.Tools
			case kindPrompt:
				m = st.Prompts
			case kindInstructions:
				m, key = st.Instructions, sub.server
			case kindTable:
				if s.config == "" {
					continue // no config file to key it by: nothing to gate
				}
				m, key = st.Tables, pin.TableKey(s.config, sub.server)
			default:
				continue // programs are not kept here
			}
			if sub.def == nil {
				// A gone subject: its review is forgotten.
				delete(m, key)
				if sp, ok := st.Servers[sub.server]; ok && sub.kind == kindTool {
					sp.Tools = slices.DeleteFunc(slices.Clone(sp.Tools), func(n string) bool { return n == sub.name })
					st.Servers[sub.server] = sp
				}
				continue
			}
			e := pin.Entry{Digest: sub.digest, Definition: sub.def, ReviewedAt: now}
			if prev, ok := m[key]; firstSight && ok {
				// Another process may have recorded a review meanwhile:
				// keep it, and do not trust this sight if it differs.
				if prev.Digest != sub.digest {
					conflicts = append(conflicts, sub)
				}
				continue
			}
			m[key] = e
		}
		for server, ns := range names {
			sp, ok := st.Servers[server]
			if !ok && firstSight {
				st.Servers[server] = pin.ServerEntry{Tools: slices.Clone(ns)}
				continue
			}
			if !ok {
				// A person's first review of the server covers what it
				// reviewed and what is pinned already, not every tool it
				// offers now: one it held (a first sight not recorded)
				// stays held.
				for _, n := range ns {
					if _, pinned := st.Tools[pin.Key(server, n)]; pinned {
						sp.Tools = append(sp.Tools, n)
					}
				}
			}
			if firstSight {
				continue
			}
			// A server reviewed before keeps its reviewed names plus
			// the tools reviewed now: reviewing one tool says nothing of
			// the others a server added.
			sp.Tools = slices.Clone(sp.Tools)
			for _, sub := range subs {
				if sub.server == server && sub.kind == kindTool && !slices.Contains(sp.Tools, sub.name) {
					sp.Tools = append(sp.Tools, sub.name)
				}
			}
			slices.Sort(sp.Tools)
			st.Servers[server] = sp
		}
		if !firstSight {
			for _, sub := range subs {
				if sub.kind != kindPrompt {
					continue
				}
				// A server's prompts are marked reviewed by an entry for
				// its instructions; one reviewed without instructions gets
				// an empty one.
				if _, ok := st.Instructions[sub.server]; !ok {
					def := pin.InstructionsDefinition("")
					st.Instructions[sub.server] = pin.Entry{Digest: mustDigest(def), Definition: def, ReviewedAt: now}
				}
			}
		}
		return nil
	})
	return conflicts, err
}

// lockStore keeps reviews in a team's lock file.
type lockStore struct {
	lf *lockFile
}

func (s *lockStore) trustsFirstSight() bool { return false }

func (s *lockStore) load(ctx context.Context) (view, error) {
	l, err := s.lf.load(ctx)
	if err != nil {
		return nil, err
	}
	return &lockView{l: l}, nil
}

type lockView struct{ l *pin.Lock }

func (v *lockView) serverReviewed(server string) bool {
	_, ok := v.l.Servers[server]
	return ok
}

func (v *lockView) recordedTools(server string) []string {
	return slices.Sorted(maps.Keys(v.l.Servers[server].Tools))
}

func (v *lockView) prior(k kind, server, name string) prior {
	ls, ok := v.l.Servers[server]
	if !ok {
		return prior{}
	}
	var e *pin.LockEntry
	switch k {
	case kindTool:
		if t, ok := ls.Tools[name]; ok {
			e = &t
		}
	case kindPrompt:
		if t, ok := ls.Prompts[name]; ok {
			e = &t
		}
	case kindInstructions:
		e = ls.Instructions
	case kindTable:
		e = ls.Table
	case kindProgram:
		def, err := programDefinition(ls.Program)
		if err != nil {
			return prior{}
		}
		return prior{pinned: true, covered: true, digest: mustDigest(def), definition: def}
	}
	if e == nil {
		return prior{}
	}
	return prior{pinned: true, covered: true, digest: e.Digest, definition: e.Definition}
}

func (s *lockStore) record(ctx context.Context, subs []subject, firstSight bool, _ map[string][]string) ([]subject, error) {
	if firstSight {
		return nil, nil // a lock trusts only what a person recorded
	}
	entries := make([]pin.LockEntry, len(subs))
	for i, sub := range subs {
		if sub.kind == kindProgram || sub.def == nil {
			continue
		}
		e, err := pin.NewLockEntry(sub.def)
		if err != nil {
			return nil, err
		}
		entries[i] = e
	}
	return nil, s.lf.update(ctx, func(l *pin.Lock) error {
		for i, sub := range subs {
			ls := l.Servers[sub.server]
			ls.Tools = maps.Clone(ls.Tools)
			if ls.Tools == nil {
				ls.Tools = map[string]pin.LockEntry{}
			}
			ls.Prompts = maps.Clone(ls.Prompts)
			e := entries[i]
			switch {
			case sub.def == nil && sub.kind == kindTool:
				delete(ls.Tools, sub.name) // gone: its review is forgotten
			case sub.def == nil:
			case sub.kind == kindTool:
				ls.Tools[sub.name] = e
			case sub.kind == kindPrompt:
				if ls.Prompts == nil {
					ls.Prompts = map[string]pin.LockEntry{}
				}
				ls.Prompts[sub.name] = e
			case sub.kind == kindInstructions:
				ls.Instructions = &e
			case sub.kind == kindTable:
				ls.Table = &e
			case sub.kind == kindProgram:
				ls.Program = slices.Clone(sub.program)
			}
			l.Servers[sub.server] = ls
		}
		return nil
	})
}

// programDefinition is a program identity as a reviewed definition: its
// files, in order, as a lock records them.
func programDefinition(files []pin.ProgramFile) (json.RawMessage, error) {
	if files == nil {
		files = []pin.ProgramFile{}
	}
	b, err := json.Marshal(map[string]any{"program": files})
	if err != nil {
		return nil, err
	}
	return b, nil
}
