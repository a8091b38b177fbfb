package mcphost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphost/mcphost/internal/canonical"
	"github.com/mcphost/mcphost/pin"
)

// maxPrompts bounds the prompts mcphost reads from one server.
const maxPrompts = 1000

// Prompt is one prompt a server offers (prompts/list), with what the
// reviews say of it. The text it produces (prompts/get) goes to the model,
// so its definition is pinned like a tool's: name, title, description,
// arguments and any other field, as the server sent it.
type Prompt struct {
	Server      string          `json:"server"`
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	Arguments   json.RawMessage `json:"arguments,omitempty"`
	// Definition is the prompt as prompts/list sent it; Digest its digest.
	Definition json.RawMessage `json:"definition"`
	Digest     string          `json:"digest"`
	// Pin is PinSame, PinNew (first sight, or new on a server reviewed
	// before: see Unreviewed), PinChanged or PinUnpinned.
	Pin PinStatus `json:"pin"`
	// Unreviewed: the server did not offer it at its last review.
	Unreviewed bool `json:"unreviewed,omitempty"`
	// Changed names the fields that changed since its review (PinChanged).
	Changed []string `json:"changed,omitempty"`

	reviewed json.RawMessage // the reviewed definition, when PinChanged
}

// trusted reports whether the prompt's text may be got for the model.
func (p *Prompt) trusted() bool {
	return p.Pin == PinSame || (p.Pin == PinNew && !p.Unreviewed)
}

// listPrompts reads every page of prompts/list and returns the raw
// definitions, as listAll does for tools.
func (srv *server) listPrompts(ctx context.Context, cs *mcp.ClientSession, tap *listTap) ([]json.RawMessage, error) {
	return srv.listPaged("prompts/list", "prompts", maxPrompts, tap, func(cursor string) error {
		_, err := cs.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: cursor})
		return err
	})
}

// promptDef is the part of a raw prompt definition mcphost reads; the
// digest covers the whole definition.
type promptDef struct {
	Name               *string
	Title, Description string
	Arguments          json.RawMessage
}

// promptPaths are the members readPromptDef reads, in promptDef's order.
var promptPaths = [][]string{{"name"}, {"title"}, {"description"}, {"arguments"}}

// readPromptDef digests raw and reads its members by their exact keys,
// from the tree the digest is made of, as toolDef.read does for a tool:
// encoding/json would match "DESCRIPTION" to Description too, and forward
// a text a reviewer saw under another key. A member of the wrong JSON
// type, or a definition pin refuses, is an error.
func readPromptDef(raw json.RawMessage) (promptDef, string, error) {
	var d promptDef
	var buf [4]canonical.Field // len(promptPaths)
	digest, f, err := canonical.Fields(raw, buf[:0], promptPaths...)
	if err != nil {
		return d, "", err
	}
	var name string
	if !stringField(f[0], &name) || !stringField(f[1], &d.Title) || !stringField(f[2], &d.Description) {
		return d, "", errors.New("a member mcphost reads is not a string")
	}
	if f[0].Raw != nil && string(f[0].Raw) != "null" {
		d.Name = &name
	}
	d.Arguments = f[3].Raw
	return d, digest, nil
}

// pinPrompts turns a server's raw prompts into Prompts judged against
// their reviews (judge): a prompt's text reaches the model only as
// reviewed, or as first seen on a server never reviewed (trusted), as
// GetPrompt checks. It returns the first sights to record and notices.
func (srv *server) pinPrompts(raws []json.RawMessage, ls loadedState) (prompts []*Prompt, recs []subject, notices []string) {
	name := srv.cfg.Name
	seen := map[string]bool{}
	var fresh []string
	for i, raw := range raws {
		d, digest, err := readPromptDef(raw)
		if err != nil || d.Name == nil || *d.Name == "" {
			notices = append(notices, fmt.Sprintf("server %s: skipped prompt #%d of its list: it cannot be read or pinned", name, i+1))
			continue
		}
		if seen[*d.Name] {
			notices = append(notices, fmt.Sprintf("server %s lists prompt %q more than once; skipped it", name, printable(*d.Name, 80)))
			prompts = slices.DeleteFunc(prompts, func(p *Prompt) bool { return p.Name == *d.Name })
			recs = slices.DeleteFunc(recs, func(r subject) bool { return r.name == *d.Name })
			continue
		}
		seen[*d.Name] = true
		p := &Prompt{Server: name, Name: *d.Name, Title: d.Title, Description: d.Description,
			Arguments: nonNull(d.Arguments), Definition: raw, Digest: digest}
		v := judge(ls.prior(kindPrompt, name, p.Name), digest)
		p.Pin, p.Unreviewed, p.reviewed = v.pin, v.unreviewed, v.reviewed
		switch {
		case v.pin == PinChanged:
			if changes, err := pin.Diff(v.reviewed, raw); err == nil {
				for _, c := range changes {
					p.Changed = append(p.Changed, c.Field)
				}
			}
			notices = append(notices, fmt.Sprintf("server %s changed prompt %q since its review (%s): it cannot be got until re-reviewed (%s)",
				name, printable(p.Name, 80), describe(p.Changed), srv.sess.approveHint("prompt:"+name+"/"+printable(p.Name, 80))))
		case v.unreviewed && ls.err == nil:
			fresh = append(fresh, printable(p.Name, 80))
		}
		// Only a trusted first sight is recorded: one no review covers
		// waits for a person, as the prompt cannot be got before.
		if v.record && !v.unreviewed {
			recs = append(recs, subject{kind: kindPrompt, server: name, name: p.Name, def: raw, digest: digest})
		}
		prompts = append(prompts, p)
	}
	if len(fresh) > 0 {
		notices = append(notices, fmt.Sprintf("server %s offers %d prompt(s) no review on record covers: %s; they cannot be got until reviewed (%s)",
			name, len(fresh), strings.Join(fresh, ", "), srv.sess.approveHint(name)))
	}
	return prompts, recs, notices
}

// publishPrompts lists and pins a running server's prompts, if it offers
// any, within its startup_timeout. A server whose prompts cannot be read
// keeps its tools: the failure is a notice, and it has no prompts. Until
// the new list is stored the previous one stays (GetPrompt waits for a
// re-list; Prompts lists what was judged before, the reviewed text). A
// list made for a process that has since been closed (srv.gen moved on)
// or has exited is dropped, with its first sights, so that no process is
// judged by another's pins.
func (s *Session) publishPrompts(srv *server, ls loadedState) []subject {
	srv.mu.Lock()
	cs, tap, gen := srv.cs, srv.tap, srv.gen
	srv.mu.Unlock()
	if cs == nil {
		return nil
	}
	if init := cs.InitializeResult(); init == nil || init.Capabilities == nil || init.Capabilities.Prompts == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), srv.cfg.StartupTimeout)
	defer cancel()
	raws, err := srv.listPrompts(ctx, cs, tap)
	var prompts []*Prompt
	var recs []subject
	var notices []string
	if err != nil {
		notices = []string{fmt.Sprintf("server %s: its prompts could not be listed: %v", srv.cfg.Name, err)}
	} else {
		prompts, recs, notices = srv.pinPrompts(raws, ls)
	}
	srv.mu.Lock()
	if srv.gen != gen || srv.state != ServerRunning {
		srv.mu.Unlock()
		return nil
	}
	srv.prompts = prompts
	srv.mu.Unlock()
	for _, n := range notices {
		s.addNotice(n)
	}
	return recs
}

// promptsChanged handles notifications/prompts/list_changed: it marks the
// server's prompts as re-listing at once (GetPrompt waits), then re-lists
// and re-pins them in the background with the session's reviews, as
// Connect does: first sights are recorded where trusted, and a prompt
// that changed since its review is a notice and cannot be got until a
// person re-reviews it. Notifications during a re-list make one more, at
// most maxRelistRounds in a row; past that the server's prompts are
// withdrawn until Restart.
func (srv *server) promptsChanged(gen uint64) {
	s := srv.sess
	srv.mu.Lock()
	if srv.gen != gen || srv.stopErr != nil || srv.state != ServerRunning || srv.promptsHalted {
		srv.mu.Unlock()
		return
	}
	if srv.promptsRelisting != nil {
		srv.promptsDirty = true
		srv.mu.Unlock()
		return
	}
	done := make(chan struct{})
	srv.promptsRelisting = done
	srv.mu.Unlock()
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		for round := 1; ; round++ {
			t := time.NewTimer(relistInterval) // as for tools: coalesce a burst
			select {
			case <-t.C:
			case <-done: // closed by close: the server is going
			}
			t.Stop()
			srv.mu.Lock()
			stale := srv.gen != gen || srv.promptsRelisting != done
			srv.mu.Unlock()
			if !stale {
				s.recordFirstSight(s.publishPrompts(srv, s.loadPins(context.Background())))
				s.logger.Info("server prompts changed", "server", srv.cfg.Name)
			}
			srv.mu.Lock()
			// As for tools, a notification since this round began (its
			// wait included) makes another round.
			again := !stale && srv.promptsDirty && srv.promptsRelisting == done
			srv.promptsDirty = false
			unsettled := again && round >= maxRelistRounds
			if unsettled {
				srv.prompts, srv.promptsHalted = nil, true
			}
			if !again || unsettled {
				if srv.promptsRelisting == done {
					srv.promptsRelisting = nil
					close(done)
				}
				srv.mu.Unlock()
				if unsettled {
					s.addNotice(fmt.Sprintf("server %s: its prompts did not settle (it sent notifications/prompts/list_changed during each of %d re-lists in a row); they are withdrawn until Restart", srv.cfg.Name, maxRelistRounds))
				}
				return
			}
			srv.mu.Unlock()
		}
	}()
}

// promptsListed waits, no longer than ctx, until no re-list of the
// server's prompts is pending.
func (srv *server) promptsListed(ctx context.Context) error {
	return srv.await(ctx, func() chan struct{} { return srv.promptsRelisting })
}

// distrustPrompt makes a first-seen prompt that could not be recorded
// PinUnpinned: without a record, a later change could not be caught.
func (s *Session) distrustPrompt(r subject) {
	srv := s.servers[r.server]
	srv.mu.Lock()
	defer srv.mu.Unlock()
	for i, p := range srv.prompts {
		if p.Name == r.name && p.Digest == r.digest && p.Pin == PinNew {
			upd := *p
			upd.Pin = PinUnpinned
			srv.prompts[i] = &upd
		}
	}
}

// Prompts returns the prompts to offer the model: those of every running
// server that GetPrompt would get (as reviewed, or first seen on a server
// never reviewed), sorted by server and name: a copy the caller owns. A
// prompt that changed since its review, is new on a reviewed server or
// could not be pinned is left out until a person reviews it (Pending,
// Review, Approve): its title, description and arguments are the
// server's text, which the model reads only as reviewed. AllPrompts
// returns them all.
func (s *Session) Prompts() []Prompt {
	return s.collectPrompts((*Prompt).trusted)
}

// AllPrompts returns every prompt of every running server with its pin,
// trusted or not, sorted by server and name: what `mcphost list` shows a
// person, and a copy the caller owns. Their definitions are server text:
// show them through pin.Visible.
func (s *Session) AllPrompts() []Prompt {
	return s.collectPrompts(func(*Prompt) bool { return true })
}

func (s *Session) collectPrompts(keep func(*Prompt) bool) []Prompt {
	var out []Prompt
	for _, name := range s.order {
		srv := s.servers[name]
		srv.mu.Lock()
		if srv.state != ServerRunning {
			srv.mu.Unlock()
			continue
		}
		for _, p := range srv.prompts {
			if !keep(p) {
				continue
			}
			c := *p
			c.Arguments, c.Definition, c.Changed = slices.Clone(p.Arguments), slices.Clone(p.Definition), slices.Clone(p.Changed)
			out = append(out, c)
		}
		srv.mu.Unlock()
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Server != out[j].Server {
			return out[i].Server < out[j].Server
		}
		return out[i].Name < out[j].Name
	})
	return out
}

func (srv *server) prompt(name string) (*Prompt, bool) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	for _, p := range srv.prompts {
		if p.Name == name {
			return p, true
		}
	}
	return nil, false
}

// GetPrompt gets a prompt's messages (prompts/get) with the given
// arguments, for the model. Only a prompt as reviewed (PinSame, or the
// first sight of a server never reviewed) can be got: any other's error
// wraps ErrNeedsApproval. The call is bounded by ctx and the server's
// call_timeout (ErrTimeout), and the text of its messages is cut to
// max_output, with a note in the last message. An unknown prompt's error
// wraps ErrUnknownTool; a server that is not running, ErrServerGone. Safe
// for concurrent use.
func (s *Session) GetPrompt(ctx context.Context, server, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	srv, ok := s.servers[server]
	if !ok {
		return nil, fmt.Errorf("mcphost: get prompt: %w: no server named %q", ErrUnknownServer, printable(server, 80))
	}
	cs, err := srv.session()
	if err != nil {
		return nil, fmt.Errorf("mcphost: get prompt: %w", err)
	}
	// After prompts/list_changed, the prompt is judged as re-listed.
	wctx, wcancel := context.WithTimeout(ctx, srv.cfg.CallTimeout)
	err = srv.promptsListed(wctx)
	wcancel()
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return nil, ctx.Err()
	default:
		return nil, fmt.Errorf("mcphost: get prompt %q: %w: the prompts of [mcp.%s] were being re-listed after notifications/prompts/list_changed and did not settle within its call_timeout %v", printable(name, 80), ErrTimeout, server, srv.cfg.CallTimeout)
	}
	p, ok := srv.prompt(name)
	if !ok {
		return nil, fmt.Errorf("mcphost: get prompt: %w: server %s offers no prompt %q", ErrUnknownTool, server, printable(name, 80))
	}
	if !p.trusted() {
		why := map[PinStatus]string{PinChanged: "it changed since its review", PinNew: "no review on record covers it",
			PinUnpinned: "its review could not be read or recorded"}[p.Pin]
		return nil, fmt.Errorf("mcphost: prompt %q of [mcp.%s]: %w: %s; a person reviews it with `mcphost approve prompt:%s/%s`",
			printable(name, 80), server, ErrNeedsApproval, why, server, printable(name, 80))
	}
	cctx, cancel := context.WithTimeout(ctx, srv.cfg.CallTimeout)
	defer cancel()
	res, err := cs.GetPrompt(cctx, &mcp.GetPromptParams{Name: name, Arguments: args})
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case cctx.Err() != nil:
			return nil, fmt.Errorf("mcphost: get prompt %q: %w: no result within call_timeout %v of [mcp.%s]", printable(name, 80), ErrTimeout, srv.cfg.CallTimeout, server)
		}
		return nil, fmt.Errorf("mcphost: get prompt %q of server %s: %w", printable(name, 80), server, fromServer(err))
	}
	return cutPrompt(res, srv.cfg.MaxOutput, server), nil
}

// cutPrompt bounds a prompt's messages as cut bounds a tool's result:
// each message's content counts as cut counts it, its _meta and
// annotations too, and so does its frame (its role, the braces, the
// comma): a prompt of many empty messages is bounded too. A role other
// than user and assistant is given as user (the note says so), so that no
// role text of the server's reaches the model. A message whose content fits but for those keeps its
// content without them; otherwise it goes through cut on what is left,
// and from that message on the rest are dropped and a last user message
// says so. The prompt's description, _meta, requestState and
// inputRequests get what the messages leave (see cutPromptExtras). The
// note names what metadata was dropped.
func cutPrompt(res *mcp.GetPromptResult, limit int64, server string) *mcp.GetPromptResult {
	if res == nil {
		return &mcp.GetPromptResult{}
	}
	left := limit
	var gone removed
	for i, m := range res.Messages {
		if m == nil {
			m = &mcp.PromptMessage{Role: "user"}
		}
		if m.Role != "user" && m.Role != "assistant" {
			gone.add("the role of message %d (neither user nor assistant: it is given as user)", i+1)
			m = &mcp.PromptMessage{Role: "user", Content: m.Content}
		}
		res.Messages[i] = m
		frame := int64(len(`{"content":,"role":""}`) + len(m.Role))
		if i > 0 {
			frame++ // the comma
		}
		bare, size, meta, ann := mcp.Content(nil), int64(len("null")), int64(0), int64(0)
		if m.Content != nil {
			// Counted as an item after the first, with its own frame
			// (a text item's {"type":"text"...}): one byte too many
			// for the comma it does not have.
			bare, size, meta, ann = measure(m.Content, false)
		}
		if frame+size+meta+ann <= left {
			left -= frame + size + meta + ann
			continue
		}
		if frame+size <= left {
			// They are for the client: they go, not the message.
			left -= frame + size
			res.Messages[i] = &mcp.PromptMessage{Role: m.Role, Content: bare}
			gone.add("the _meta and annotations of message %d", i+1)
			continue
		}
		left = max(left-frame, 0)
		var kept *mcp.CallToolResult
		if m.Content != nil {
			kept = cut(&mcp.CallToolResult{Content: []mcp.Content{m.Content}}, left, server)
		} else {
			kept = &mcp.CallToolResult{}
		}
		msgs := slices.Clone(res.Messages[:i])
		hidden := len(res.Messages) - i // message i on
		// Kept: the cut part, then cut's note.
		if len(kept.Content) > 1 {
			msgs = append(msgs, &mcp.PromptMessage{Role: m.Role, Content: kept.Content[0]})
			hidden--
		}
		cutPromptExtras(res, 0, &gone)
		extras := ""
		if s := gone.String(); s != "" {
			extras = ", nor " + s
		}
		msgs = append(msgs, &mcp.PromptMessage{Role: "user", Content: &mcp.TextContent{Text: fmt.Sprintf(
			"[mcphost: this prompt was cut: its messages are larger than the %d-byte max_output of [mcp.%s]; %d message(s) were not shown%s]",
			limit, server, hidden, extras)}})
		res.Messages = msgs
		return res
	}
	cutPromptExtras(res, left, &gone)
	if s := gone.String(); s != "" {
		res.Messages = append(res.Messages, &mcp.PromptMessage{Role: "user", Content: &mcp.TextContent{Text: fmt.Sprintf(
			"[mcphost: this prompt was cut: it is larger than the %d-byte max_output of [mcp.%s]; not shown: %s]",
			limit, server, s)}})
	}
	return res
}

func mustDigest(def json.RawMessage) string {
	d, err := pin.Digest(def)
	if err != nil {
		panic(err)
	}
	return d
}
