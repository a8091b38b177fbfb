package mcphost

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcphost/mcphost/pin"
)

// pinTool applies the reviewed-tools state to a tool that is not denied:
// every such tool is pinned, allowed or not, since the model reads its
// definition on every turn. It sets e's Pin, Changed, Decision, Withheld,
// unreviewed (new on a server reviewed before it) and reviewed, and returns
// the first sight to record (nil if none) and a notice ("" if none).
//
// The rules, in order:
//   - the state cannot be read: nothing is trusted (Approval, PinUnpinned),
//     and with HoldNewTools nothing is offered either, since no tool can be
//     shown to have been reviewed;
//   - a pin whose digest differs: PinChanged and Approval, with a notice;
//   - a tool the server did not offer at its last review (unreviewed: not
//     listed then, or denied then):
//     PinNew and Approval until a person reviews it; withheld with
//     HoldNewTools, otherwise offered and its first sight recorded so that a
//     later change is caught;
//   - a matching pin: PinSame (an allowed tool stays allowed);
//   - no pin, on a server never reviewed: PinNew, recorded as its first
//     sight (trust on first use: an allowed tool is allowed).
func (srv *server) pinTool(e *toolEntry, ls loadedState, now time.Time) (rec *pinRecord, notice string) {
	cfg, t := &srv.cfg, &e.Tool
	if ls.err != nil || ls.state == nil {
		t.Decision, t.Pin, t.Withheld = Approval, PinUnpinned, cfg.HoldNewTools
		return nil, ""
	}
	var unreviewed bool
	key := pin.Key(cfg.Name, t.Tool)
	firstSight := func() *pinRecord {
		return &pinRecord{kindTool, key, pin.Entry{Digest: t.Digest, Definition: t.Definition, ReviewedAt: now}}
	}
	if sp, ok := ls.state.Servers[cfg.Name]; ok {
		unreviewed = !slices.Contains(sp.Tools, t.Tool)
	}
	prev, pinned := ls.state.Tools[key]
	switch {
	case pinned && prev.Digest != t.Digest:
		t.Pin, t.Decision = PinChanged, Approval
		e.reviewed = prev.Definition
		if changes, err := pin.Diff(prev.Definition, t.Definition); err == nil {
			for _, c := range changes {
				t.Changed = append(t.Changed, c.Field)
			}
		}
		if cfg.policy(t.Tool) == Allow {
			notice = fmt.Sprintf("tool %s changed since its review (%s): it needs approval until re-reviewed (mcphost approve %s)", t.Name, describe(t.Changed), t.Name)
		} else {
			notice = fmt.Sprintf("tool %s changed since its review (%s): the model reads the new definition; each approval request shows the diff until it is re-reviewed (mcphost approve %s)", t.Name, describe(t.Changed), t.Name)
		}
	case unreviewed:
		t.Pin, t.Decision = PinNew, Approval
		if !pinned && !cfg.HoldNewTools {
			rec = firstSight()
		}
	case pinned:
		t.Pin = PinSame
	default:
		t.Pin = PinNew
		rec = firstSight()
	}
	t.Withheld = unreviewed && cfg.HoldNewTools
	e.unreviewed = unreviewed
	return rec, notice
}

// newToolsNotice names the offered or withheld tools of a server that it did
// not offer at its last review, and what happens to them.
func (srv *server) newToolsNotice(entries []*toolEntry, ls loadedState) string {
	if _, ok := ls.state.Servers[srv.cfg.Name]; !ok {
		return ""
	}
	var fresh []string
	for _, e := range entries {
		if e.unreviewed {
			fresh = append(fresh, e.Name)
		}
	}
	if len(fresh) == 0 {
		return ""
	}
	what := "they are offered to the model, each call asking for approval, until reviewed (mcphost approve TOOL)"
	if srv.cfg.HoldNewTools {
		what = "they are not offered to the model until reviewed (new_tools = \"hold\"; mcphost approve TOOL)"
	}
	return fmt.Sprintf("server %s offers %d tool(s) it did not offer at its last review: %s; %s",
		srv.cfg.Name, len(fresh), strings.Join(fresh, ", "), what)
}

// reviewText returns what a person needs to decide about a tool: its changes
// since its review (PinChanged) and, rendered by pin.Format, those changes
// or, for a tool with no review on record, its whole definition. A tool
// unchanged since its review has neither. The changes are against the
// review e was decided against, not the state file's latest, so that they
// agree with e.Pin even while another call records a review. An error means
// nothing trustworthy can be shown.
func (s *Session) reviewText(e *toolEntry) (changes []pin.Change, diff string, err error) {
	var shown []pin.Change
	switch e.Pin {
	case PinSame:
		return nil, "", nil
	case PinChanged:
		if changes, err = pin.Diff(e.reviewed, e.Definition); err != nil {
			return nil, "", err
		}
		shown = changes
	default:
		if shown, err = pin.Diff(json.RawMessage(`{}`), e.Definition); err != nil {
			return nil, "", err
		}
	}
	var b strings.Builder
	if err := pin.Format(&b, shown); err != nil {
		return nil, "", err
	}
	return changes, b.String(), nil
}
