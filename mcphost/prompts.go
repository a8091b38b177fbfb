package mcphost

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

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

// pinPrompts turns a server's raw prompts into Prompts under the reviewed
// state, with the rules of tools: unreadable state, PinUnpinned; a pin
// whose digest differs, PinChanged; no pin on a server whose prompts were
// reviewed (its instructions entry says so), PinNew and Unreviewed; no pin
// otherwise, PinNew and recorded as its first sight. Only trusted prompts
// can be got.
func (srv *server) pinPrompts(raws []json.RawMessage, ls loadedState, now time.Time) (prompts []*Prompt, recs []pinRecord, notices []string) {
	name := srv.cfg.Name
	seen := map[string]bool{}
	var fresh []string
	for i, raw := range raws {
		var d struct {
			Name        *string         `json:"name"`
			Title       string          `json:"title"`
			Description string          `json:"description"`
			Arguments   json.RawMessage `json:"arguments"`
		}
		digest, err := pin.Digest(raw)
		if err == nil {
			err = json.Unmarshal(raw, &d)
		}
		if err != nil || d.Name == nil || *d.Name == "" {
			notices = append(notices, fmt.Sprintf("server %s: skipped prompt #%d of its list: it cannot be read or pinned", name, i+1))
			continue
		}
		if seen[*d.Name] {
			notices = append(notices, fmt.Sprintf("server %s lists prompt %q more than once; skipped it", name, printable(*d.Name, 80)))
			prompts = slices.DeleteFunc(prompts, func(p *Prompt) bool { return p.Name == *d.Name })
			continue
		}
		seen[*d.Name] = true
		p := &Prompt{Server: name, Name: *d.Name, Title: d.Title, Description: d.Description,
			Arguments: nonNull(d.Arguments), Definition: raw, Digest: digest}
		switch {
		case ls.err != nil || ls.state == nil || ls.lock != nil:
			// A lock does not record prompts (yet): with one, nothing
			// is trusted on first sight.
			p.Pin = PinUnpinned
		default:
			key := pin.Key(name, p.Name)
			prev, pinned := ls.state.Prompts[key]
			_, reviewed := ls.state.Instructions[name]
			switch {
			case pinned && prev.Digest == digest:
				p.Pin = PinSame
			case pinned:
				p.Pin, p.reviewed = PinChanged, prev.Definition
				if changes, err := pin.Diff(prev.Definition, raw); err == nil {
					for _, c := range changes {
						p.Changed = append(p.Changed, c.Field)
					}
				}
				notices = append(notices, fmt.Sprintf("server %s changed prompt %q since its review (%s): it cannot be got until re-reviewed (mcphost approve prompt:%s/%s)",
					name, printable(p.Name, 80), describe(p.Changed), name, printable(p.Name, 80)))
			case reviewed:
				p.Pin, p.Unreviewed = PinNew, true
				fresh = append(fresh, printable(p.Name, 80))
			default:
				p.Pin = PinNew
				recs = append(recs, pinRecord{kind: kindPrompt, key: key, entry: pin.Entry{Digest: digest, Definition: raw, ReviewedAt: now}})
			}
		}
		prompts = append(prompts, p)
	}
	if ls.lock != nil && len(prompts) > 0 {
		notices = append(notices, fmt.Sprintf("server %s: its prompts cannot be got: a lock file does not record prompts, and with a lock nothing is trusted on first sight", name))
	}
	if len(fresh) > 0 {
		notices = append(notices, fmt.Sprintf("server %s offers %d prompt(s) no review on record covers: %s; they cannot be got until reviewed (mcphost approve prompt:%s/NAME)",
			name, len(fresh), strings.Join(fresh, ", "), name))
	}
	return prompts, recs, notices
}

// publishPrompts lists and pins a running server's prompts, if it offers
// any, within its startup_timeout. A server whose prompts cannot be read
// keeps its tools: the failure is a notice.
func (s *Session) publishPrompts(srv *server, ls loadedState) []pinRecord {
	srv.mu.Lock()
	cs, tap := srv.cs, srv.tap
	srv.prompts = nil
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
	if err != nil {
		s.addNotice(fmt.Sprintf("server %s: its prompts could not be listed: %v", srv.cfg.Name, err))
		return nil
	}
	prompts, recs, notices := srv.pinPrompts(raws, ls, time.Now().UTC())
	srv.mu.Lock()
	srv.prompts = prompts
	srv.mu.Unlock()
	for _, n := range notices {
		s.addNotice(n)
	}
	return recs
}

// distrustPrompt makes a first-seen prompt that could not be recorded
// PinUnpinned: without a record, a later change could not be caught.
func (s *Session) distrustPrompt(r pinRecord) {
	srv := s.servers[r.server()]
	srv.mu.Lock()
	defer srv.mu.Unlock()
	for i, p := range srv.prompts {
		if pin.Key(p.Server, p.Name) == r.key && p.Digest == r.entry.Digest && p.Pin == PinNew {
			upd := *p
			upd.Pin = PinUnpinned
			srv.prompts[i] = &upd
		}
	}
}

// Prompts returns the prompts of every running server, sorted by server
// and name, each with its pin: a copy the caller owns. Their definitions
// are server text: show them through pin.Visible.
func (s *Session) Prompts() []Prompt {
	var out []Prompt
	for _, name := range s.order {
		srv := s.servers[name]
		srv.mu.Lock()
		for _, p := range srv.prompts {
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
		return nil, fmt.Errorf("mcphost: get prompt: %w: no server named %q", ErrUnknownTool, printable(server, 80))
	}
	cs, err := srv.session()
	if err != nil {
		return nil, fmt.Errorf("mcphost: get prompt: %w", err)
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
		return nil, fmt.Errorf("mcphost: get prompt %q of server %s: %w", printable(name, 80), server, err)
	}
	return cutPrompt(res, srv.cfg.MaxOutput, server), nil
}

// cutPrompt bounds a prompt's messages as cut bounds a tool's result:
// each message's content goes through cut on its own share of what is
// left, and from the first message cut on, the rest are dropped and a
// last user message says so.
func cutPrompt(res *mcp.GetPromptResult, limit int64, server string) *mcp.GetPromptResult {
	if res == nil {
		return &mcp.GetPromptResult{}
	}
	left := limit
	for i, m := range res.Messages {
		if m == nil || m.Content == nil {
			continue
		}
		one := &mcp.CallToolResult{Content: []mcp.Content{m.Content}}
		size := contentSize(m.Content)
		if size <= left {
			left -= size
			continue
		}
		kept := cut(one, left, server)
		msgs := slices.Clone(res.Messages[:i])
		if len(kept.Content) > 1 { // the cut part, then cut's note
			msgs = append(msgs, &mcp.PromptMessage{Role: m.Role, Content: kept.Content[0]})
		}
		msgs = append(msgs, &mcp.PromptMessage{Role: "user", Content: &mcp.TextContent{Text: fmt.Sprintf(
			"[mcphost: this prompt was cut: its messages are larger than the %d-byte max_output of [mcp.%s]; %d message(s) were not shown]",
			limit, server, len(res.Messages)-i-1)}})
		res.Messages = msgs
		return res
	}
	return res
}

// contentSize is what cut counts of one content item: a text's bytes,
// another item's JSON.
func contentSize(c mcp.Content) int64 {
	if t, ok := c.(*mcp.TextContent); ok {
		return int64(len(t.Text))
	}
	b, err := json.Marshal(c)
	if err != nil {
		return 1 << 62
	}
	return int64(len(b))
}

// PromptReview returns what a person needs to review a prompt: its changes
// since its review, or its whole definition, rendered by pin.Format with
// every invisible character visible; "" when it is as reviewed.
func (s *Session) PromptReview(server, name string) (string, PinStatus, error) {
	srv, ok := s.servers[server]
	if !ok {
		return "", "", fmt.Errorf("mcphost: %w: no server named %q", ErrUnknownTool, printable(server, 80))
	}
	p, ok := srv.prompt(name)
	if !ok {
		return "", "", fmt.Errorf("mcphost: %w: server %s offers no prompt %q", ErrUnknownTool, server, printable(name, 80))
	}
	if p.Pin == PinSame {
		return "", p.Pin, nil
	}
	from := json.RawMessage(`{}`)
	if p.Pin == PinChanged {
		from = p.reviewed
	}
	changes, err := pin.Diff(from, p.Definition)
	if err != nil {
		return "", p.Pin, err
	}
	var b strings.Builder
	if err := pin.Format(&b, changes); err != nil {
		return "", p.Pin, err
	}
	return b.String(), p.Pin, nil
}

// ApprovePrompt records a running server's prompt, as it is now, as
// reviewed: GetPrompt gets it from then on.
func (s *Session) ApprovePrompt(server, name string) error {
	srv, ok := s.servers[server]
	if !ok {
		return fmt.Errorf("mcphost: approve prompt: %w: no server named %q", ErrUnknownTool, printable(server, 80))
	}
	p, ok := srv.prompt(name)
	if !ok {
		return fmt.Errorf("mcphost: approve prompt: %w: server %s offers no prompt %q", ErrUnknownTool, server, printable(name, 80))
	}
	if s.lock != nil {
		return fmt.Errorf("mcphost: approve prompt %q of [mcp.%s]: a lock file does not record prompts; run without -lock (Options.LockFile)", printable(name, 80), server)
	}
	now := time.Now().UTC()
	names := s.toolNames(server)
	srv.mu.Lock()
	text := srv.instructions
	srv.mu.Unlock()
	err := s.store.Update(func(st *pin.State) error {
		st.Prompts[pin.Key(server, name)] = pin.Entry{Digest: p.Digest, Definition: p.Definition, ReviewedAt: now}
		if _, ok := st.Servers[server]; !ok {
			st.Servers[server] = pin.ServerEntry{Tools: names}
		}
		if _, ok := st.Instructions[server]; !ok && text == "" {
			// The server's prompts are now reviewed one by one: its
			// (empty) instructions are recorded with them, which marks
			// it so.
			st.Instructions[server] = pin.Entry{Digest: mustDigest(pin.InstructionsDefinition("")), Definition: pin.InstructionsDefinition(""), ReviewedAt: now}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("mcphost: record review: %w", err)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	for i, cur := range srv.prompts {
		if cur.Name == name && cur.Digest == p.Digest {
			upd := *cur
			upd.Pin, upd.Unreviewed, upd.Changed, upd.reviewed = PinSame, false, nil, nil
			srv.prompts[i] = &upd
		}
	}
	return nil
}

func mustDigest(def json.RawMessage) string {
	d, err := pin.Digest(def)
	if err != nil {
		panic(err)
	}
	return d
}
