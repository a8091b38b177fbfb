package mcphost

import (
	"fmt"
	"strings"
	"time"

	"github.com/mcphost/mcphost/pin"
)

// maxInstructions bounds the instructions text of one server that mcphost
// passes on. Longer instructions are withheld, with a notice: no review
// can be expected of them, and they would crowd the model's context.
const maxInstructions = 64 << 10

// insPin is what the reviews say of a server's instructions.
type insPin struct {
	pin        PinStatus
	unreviewed bool   // the server was reviewed, but not its instructions
	reviewed   string // the reviewed text, when pin is PinChanged
	digest     string // the digest of the instructions as they are now
}

// trusted reports whether the instructions may reach the model: as
// reviewed, or seen for the first time on a server never reviewed.
func (p insPin) trusted() bool {
	return p.pin == PinSame || (p.pin == PinNew && !p.unreviewed)
}

// pinInstructions applies the reviewed state to the server's instructions,
// as pinTool does to a tool, and returns the first sight to record (nil if
// none) and a notice ("" if none). The rules: the state cannot be read,
// or the text is longer than maxInstructions: PinUnpinned (withheld); a
// pin whose digest differs: PinChanged (withheld until re-reviewed); no
// pin on a server whose tools were reviewed (a review made before
// instructions were pinned, or instructions the server added): PinNew and
// withheld until reviewed, unless there is no text, which is recorded; no
// pin on a server never reviewed: PinNew, recorded as its first sight.
func (srv *server) pinInstructions(ls loadedState, now time.Time) (rec *pinRecord, notice string) {
	name := srv.cfg.Name
	srv.mu.Lock()
	text := srv.instructions
	srv.mu.Unlock()
	def := pin.InstructionsDefinition(text)
	digest, err := pin.Digest(def)
	var p insPin
	switch {
	case err != nil:
		// Text pin refuses (invalid UTF-8 reads as U+FFFD, so this is
		// not expected): it is not passed on.
		p.pin = PinUnpinned
		notice = fmt.Sprintf("server %s: its instructions cannot be pinned (%v), so they are not given to the model", name, err)
	case len(text) > maxInstructions:
		p.pin = PinUnpinned
		notice = fmt.Sprintf("server %s: its instructions are %d bytes, more than the %d mcphost passes on; they are not given to the model", name, len(text), maxInstructions)
	case ls.err != nil || ls.state == nil:
		p.pin = PinUnpinned
	case ls.lock != nil:
		// A lock does not record instructions (yet), and with a lock
		// first sight trusts nothing: fail closed.
		p.pin = PinUnpinned
		if text != "" {
			notice = fmt.Sprintf("server %s: its instructions are not given to the model: a lock file does not record instructions, and with a lock nothing is trusted on first sight", name)
		}
	default:
		p.digest = digest
		prev, pinned := ls.state.Instructions[name]
		_, reviewed := ls.state.Servers[name]
		switch {
		case pinned && prev.Digest == digest:
			p.pin = PinSame
		case pinned:
			p.pin = PinChanged
			p.reviewed, _ = pin.InstructionsText(prev.Definition)
			notice = fmt.Sprintf("server %s changed its instructions since their review: they are not given to the model until re-reviewed (mcphost approve instructions:%s)", name, name)
		case reviewed && text != "":
			p.pin, p.unreviewed = PinNew, true
			notice = fmt.Sprintf("server %s gives instructions that no review on record covers: they are not given to the model until reviewed (mcphost approve instructions:%s)", name, name)
		default:
			p.pin = PinNew
			rec = &pinRecord{kind: kindInstructions, key: name, entry: pin.Entry{Digest: digest, Definition: def, ReviewedAt: now}}
		}
	}
	srv.mu.Lock()
	srv.ins = p
	srv.mu.Unlock()
	return rec, notice
}

// Instructions returns a running server's instructions (the text of its
// initialize result, for the agent's system prompt) only as reviewed: the
// same text a person reviewed, or the first sight of a server never
// reviewed. It returns "" and no error for a server without instructions.
// Instructions that changed since their review, that no review covers, or
// whose review cannot be read or recorded are not returned: the error
// wraps ErrNeedsApproval and says what a person runs. An unknown server's
// error wraps ErrUnknownTool, a server that is not running's ErrServerGone.
func (s *Session) Instructions(server string) (string, error) {
	srv, ok := s.servers[server]
	if !ok {
		return "", fmt.Errorf("mcphost: instructions: %w: no server named %q", ErrUnknownTool, printable(server, 80))
	}
	if _, err := srv.session(); err != nil {
		return "", fmt.Errorf("mcphost: instructions: %w", err)
	}
	srv.mu.Lock()
	text, p := srv.instructions, srv.ins
	srv.mu.Unlock()
	if text == "" || p.trusted() {
		return text, nil
	}
	why := map[PinStatus]string{
		PinChanged:  "they changed since their review",
		PinNew:      "no review on record covers them",
		PinUnpinned: "their review could not be read or recorded, or they are too long (see the notices)",
	}[p.pin]
	return "", fmt.Errorf("mcphost: instructions of [mcp.%s]: %w: %s; a person reviews them with `mcphost approve instructions:%s`",
		server, ErrNeedsApproval, why, server)
}

// InstructionsReview returns what a person needs to review a server's
// instructions: changes since their review (a line diff, PinChanged), or
// the whole text as a change from nothing (PinNew, PinUnpinned), rendered
// by pin.Format with every invisible character visible; "" when they are
// as reviewed.
func (s *Session) InstructionsReview(server string) (string, PinStatus, error) {
	srv, ok := s.servers[server]
	if !ok {
		return "", "", fmt.Errorf("mcphost: %w: no server named %q", ErrUnknownTool, printable(server, 80))
	}
	srv.mu.Lock()
	text, p := srv.instructions, srv.ins
	srv.mu.Unlock()
	if p.pin == PinSame {
		return "", p.pin, nil
	}
	changes, err := pin.Diff(pin.InstructionsDefinition(p.reviewed), pin.InstructionsDefinition(text))
	if err != nil {
		return "", p.pin, err
	}
	var b strings.Builder
	if err := pin.Format(&b, changes); err != nil {
		return "", p.pin, err
	}
	return b.String(), p.pin, nil
}

// ApproveInstructions records a running server's instructions, as they are
// now, as reviewed: Instructions returns them from then on. It fails,
// recording nothing, for a server that is not running, or instructions
// longer than maxInstructions.
func (s *Session) ApproveInstructions(server string) error {
	srv, ok := s.servers[server]
	if !ok {
		return fmt.Errorf("mcphost: approve instructions: %w: no server named %q", ErrUnknownTool, printable(server, 80))
	}
	if _, err := srv.session(); err != nil {
		return fmt.Errorf("mcphost: approve instructions: %w", err)
	}
	if s.lock != nil {
		return fmt.Errorf("mcphost: approve instructions of [mcp.%s]: a lock file does not record instructions; run without -lock (Options.LockFile)", server)
	}
	srv.mu.Lock()
	text := srv.instructions
	srv.mu.Unlock()
	if len(text) > maxInstructions {
		return fmt.Errorf("mcphost: approve instructions of [mcp.%s]: %d bytes, more than the %d mcphost passes on", server, len(text), maxInstructions)
	}
	entry, err := pin.NewEntry(pin.InstructionsDefinition(text), time.Now().UTC())
	if err != nil {
		return fmt.Errorf("mcphost: approve instructions of [mcp.%s]: %w", server, err)
	}
	names := s.toolNames(server)
	err = s.store.Update(func(st *pin.State) error {
		st.Instructions[server] = entry
		if _, ok := st.Servers[server]; !ok {
			st.Servers[server] = pin.ServerEntry{Tools: names}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("mcphost: record review: %w", err)
	}
	srv.mu.Lock()
	if srv.instructions == text {
		srv.ins = insPin{pin: PinSame, digest: entry.Digest}
	}
	srv.mu.Unlock()
	return nil
}

// publishTexts pins what a server gives the model besides its tools (its
// instructions and prompts) and returns the first sights to record.
func (s *Session) publishTexts(srv *server, ls loadedState) []pinRecord {
	var recs []pinRecord
	rec, notice := srv.pinInstructions(ls, time.Now().UTC())
	if rec != nil {
		recs = append(recs, *rec)
	}
	if notice != "" {
		s.addNotice(notice)
	}
	return append(recs, s.publishPrompts(srv, ls)...)
}
