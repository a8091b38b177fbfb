package mcphost

import (
	"encoding/json"
	"fmt"
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
		programChanged: len(srv.programDrift) > 0,
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
