package mcphost

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/mcphost/mcphost/pin"
)

// loadedState is one reading of the session's store: its view, or why it
// cannot be read or trusted.
type loadedState struct {
	v   view
	err error
}

// prior is what the reading holds for a subject; nothing is reviewed when
// the store could not be read.
func (ls loadedState) prior(k kind, server, name string) prior {
	if ls.err != nil || ls.v == nil {
		return prior{unreadable: true}
	}
	return ls.v.prior(k, server, name)
}

// serverReviewed reports whether the reading holds a review of server.
func (ls loadedState) serverReviewed(server string) bool {
	return ls.err == nil && ls.v != nil && ls.v.serverReviewed(server)
}

// pinTool judges a tool that is not denied against its review and decides
// it (judge, decideTool): every such tool is pinned, allowed or not, since
// the model reads its definition on every turn. It sets e's Pin, Changed,
// Decision, Withheld, unreviewed and reviewed, and returns the first sight
// to record (nil if none) and a notice ("" if none).
func (srv *server) pinTool(e *toolEntry, ls loadedState) (rec *subject, notice string) {
	cfg, t := &srv.cfg, &e.Tool
	v := judge(ls.prior(kindTool, cfg.Name, t.Tool), t.Digest)
	d, held, record := decideTool(v, toolRules{
		policy:         cfg.policy(t.Tool),
		offerNew:       !cfg.HoldNewTools && srv.sess.reviews.trustsFirstSight(),
		programChanged: len(srv.drift()) > 0,
	})
	t.Pin, t.Decision, t.Withheld = v.pin, d, held
	e.unreviewed, e.reviewed = v.unreviewed, v.reviewed
	if v.pin == PinChanged {
		if changes, err := pin.Diff(v.reviewed, t.Definition); err == nil {
			for _, c := range changes {
				t.Changed = append(t.Changed, c.Field)
			}
		}
		notice = fmt.Sprintf("tool %s changed since its review (%s): it is not offered to the model until a person re-reviews it (%s)",
			t.Name, describe(t.Changed), srv.sess.approveHint(t.Name))
	}
	if record {
		rec = &subject{kind: kindTool, server: cfg.Name, name: t.Tool, def: t.Definition, digest: t.Digest}
	}
	return rec, notice
}

// newToolsNotice names the offered or held tools of a server that no
// review covers although the server was reviewed (or, with a lock, is in
// it), and what happens to them.
func (srv *server) newToolsNotice(entries []*toolEntry, ls loadedState) string {
	if !ls.serverReviewed(srv.cfg.Name) {
		return ""
	}
	var fresh []string
	held := false
	for _, e := range entries {
		if e.unreviewed && e.Decision != Deny {
			fresh = append(fresh, e.Name)
			held = held || e.Withheld
		}
	}
	if len(fresh) == 0 {
		return ""
	}
	what := "they are offered to the model, each call asking for approval, until reviewed (" + srv.sess.approveHint("TOOL") + ")"
	switch {
	case held && srv.sess.lock != nil:
		what = "they are not offered to the model until a person records them in the lock (" + srv.sess.approveHint(srv.cfg.Name) + ")"
	case held:
		what = "they are not offered to the model until reviewed (new_tools = \"hold\"; " + srv.sess.approveHint(srv.cfg.Name) + ")"
	}
	since := "it did not offer at its last review"
	if srv.sess.lock != nil {
		since = "the lock does not hold"
	}
	return fmt.Sprintf("server %s offers %d tool(s) %s: %s; %s",
		srv.cfg.Name, len(fresh), since, strings.Join(fresh, ", "), what)
}

// reviewText returns what a person needs to decide about a tool: its changes
// since its review (PinChanged) and, rendered by pin.Format, those changes
// or, for a tool with no review on record, its whole definition. A tool
// unchanged since its review has neither. The changes are against the
// review e was decided against, not the store's latest, so that they agree
// with e.Pin even while another call records a review. An error means
// nothing trustworthy can be shown.
func reviewText(pinned PinStatus, reviewed, current json.RawMessage) (changes []pin.Change, diff string, err error) {
	var shown []pin.Change
	switch pinned {
	case PinSame:
		return nil, "", nil
	case PinChanged:
		if changes, err = pin.Diff(reviewed, current); err != nil {
			return nil, "", err
		}
		shown = changes
	default:
		if shown, err = pin.Diff(json.RawMessage(`{}`), current); err != nil {
			return nil, "", err
		}
	}
	var b strings.Builder
	if err := pin.Format(&b, shown); err != nil {
		return nil, "", err
	}
	return changes, b.String(), nil
}

// loadPins reads the session's reviews.
func (s *Session) loadPins(ctx context.Context) loadedState {
	v, err := s.reviews.load(ctx)
	return loadedState{v: v, err: err}
}

// recordFirstSight records first-seen subjects (trust on first use) in
// one update, so parallel starts do not queue on the state file's lock. A
// server seen for the first time also gets its set of tool names
// recorded. A first sight that cannot be recorded, or that loses to a
// review recorded meanwhile, is not trusted this session.
func (s *Session) recordFirstSight(recs []subject) {
	if len(recs) == 0 || s.opts.ReadOnlyState || !s.reviews.trustsFirstSight() {
		return
	}
	names := map[string][]string{}
	for _, r := range recs {
		if _, ok := names[r.server]; !ok {
			names[r.server] = s.toolNames(r.server)
		}
	}
	conflicts, err := s.reviews.record(context.Background(), recs, true, names)
	if err != nil {
		// Fail closed: a first sight that is not recorded cannot catch a
		// later change, so these are not trusted this session.
		s.addNotice(fmt.Sprintf("could not record first-seen tools as reviewed, so they are held from the model: %v", err))
		conflicts = recs
	}
	var tools []subject
	for _, r := range conflicts {
		switch r.kind {
		case kindTool:
			tools = append(tools, r)
		case kindInstructions:
			// Not recorded, so a later change could not be caught:
			// withheld this session.
			srv := s.servers[r.server]
			srv.mu.Lock()
			if srv.ins.digest == r.digest {
				srv.ins.pin = PinUnpinned
			}
			srv.mu.Unlock()
		case kindPrompt:
			s.distrustPrompt(r)
		}
	}
	s.distrust(tools)
}

// distrust holds first-seen tools whose first sight was not recorded.
func (s *Session) distrust(recs []subject) {
	if len(recs) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, e := range s.tools {
		if e.Pin != PinNew {
			continue
		}
		for _, r := range recs {
			if r.server == e.Server && r.name == e.Tool.Tool && r.digest == e.Digest {
				upd := *e
				upd.Decision, upd.Pin, upd.Withheld = Approval, PinUnpinned, true
				s.tools[name] = &upd
			}
		}
	}
}

// publish turns a server's listed tools into the session's tools, applying
// policy and pins, and returns the first-seen allowed tools to record.
func (s *Session) publish(srv *server, raws []json.RawMessage, ls loadedState) []subject {
	srv.pubMu.Lock()
	srv.mu.Lock()
	srv.lastList = raws
	srv.mu.Unlock()
	entries, recs, notices := srv.build(raws, ls)
	s.swapTools(srv, entries)
	srv.pubMu.Unlock()
	for _, n := range notices {
		s.addNotice(n)
	}
	return recs
}

// swapTools makes entries the session's tools of srv.
func (s *Session) swapTools(srv *server, entries []*toolEntry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, e := range s.tools {
		if e.srv == srv {
			delete(s.tools, name)
		}
	}
	for _, e := range entries {
		s.tools[e.Name] = e
	}
}

// toolNames lists the names (as the server sent them) of a server's
// published tools that are not denied, sorted: the tools a first review of
// the server covers. A denied tool never reaches the model, so nobody
// reviewed it: once the config stops denying it, it is new.
func (s *Session) toolNames(server string) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	names := []string{}
	for _, e := range s.tools {
		if e.Server == server && e.srv.cfg.policy(e.Tool.Tool) != Deny {
			names = append(names, e.Tool.Tool)
		}
	}
	sort.Strings(names)
	return names
}

// describe makes a short description of changed fields for a notice or an
// approval request, which a person reads. The names are the server's (any
// top-level key of its definition), so each is made visible and bounded:
// nothing invisible or controlling reaches a terminal or an agent through
// them.
func describe(fields []string) string {
	if len(fields) == 0 {
		return "definition"
	}
	const most = 8
	shown := make([]string, 0, min(len(fields), most+1))
	for i, f := range fields {
		if i == most {
			shown = append(shown, fmt.Sprintf("and %d more", len(fields)-most))
			break
		}
		shown = append(shown, strconvQuoteVisible(f))
	}
	return strings.Join(shown, ", ")
}

// strconvQuoteVisible is a field name as describe shows it: visible, at most
// 64 characters, quoted when it is not a plain word.
func strconvQuoteVisible(name string) string {
	v := pin.Visible(printable(name, 64))
	if v != "" && strings.Trim(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == "" {
		return v
	}
	return fmt.Sprintf("%q", v)
}
