package mcphost

import (
	"fmt"

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

// pinInstructions judges the server's instructions against their review
// (judge), as pinTool does a tool, and returns the first sight to record
// (nil if none) and a notice ("" if none). Instructions longer than
// maxInstructions are never passed on (PinUnpinned). Empty instructions
// are covered by any review: nothing of them reaches the model.
func (srv *server) pinInstructions(ls loadedState) (rec *subject, notice string) {
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
	default:
		p.digest = digest
		pr := ls.prior(kindInstructions, name, "")
		if text == "" && !pr.unreadable {
			pr.covered = true
		}
		v := judge(pr, digest)
		p.pin, p.unreviewed = v.pin, v.unreviewed
		if v.pin == PinChanged {
			p.reviewed, _ = pin.InstructionsText(v.reviewed)
		}
		switch {
		case v.pin == PinChanged:
			notice = fmt.Sprintf("server %s changed its instructions since their review: they are not given to the model until re-reviewed (%s)", name, srv.sess.approveHint("instructions:"+name))
		case v.unreviewed && ls.err == nil && text != "":
			notice = fmt.Sprintf("server %s gives instructions that no review covers: they are not given to the model until reviewed (%s)", name, srv.sess.approveHint("instructions:"+name))
		}
		if v.record && (!v.unreviewed || text == "") {
			rec = &subject{kind: kindInstructions, server: name, def: def, digest: digest}
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
// error wraps ErrUnknownServer, a server that is not running's ErrServerGone.
func (s *Session) Instructions(server string) (string, error) {
	srv, ok := s.servers[server]
	if !ok {
		return "", fmt.Errorf("mcphost: instructions: %w: no server named %q", ErrUnknownServer, printable(server, 80))
	}
	if _, err := srv.session(); err != nil {
		return "", fmt.Errorf("mcphost: instructions: %w", err)
	}
	srv.mu.Lock()
	text, p := srv.instructions, srv.ins
	srv.mu.Unlock()
	// The pin must be of this text: a restart may have brought new text
	// that is not judged yet.
	if text == "" || p.trusted() && p.digest == mustDigest(pin.InstructionsDefinition(text)) {
		return text, nil
	}
	why := map[PinStatus]string{
		PinChanged:  "they changed since their review",
		PinNew:      "no review on record covers them",
		PinUnpinned: "their review could not be read or recorded, or they are too long (see the notices)",
	}[p.pin]
	return "", fmt.Errorf("mcphost: instructions of [mcp.%s]: %w: %s; a person reviews them (%s)",
		server, ErrNeedsApproval, why, s.approveHint("instructions:"+server))
}

// publishTexts pins what a server gives the model besides its tools (its
// instructions and prompts) and returns the first sights to record.
func (s *Session) publishTexts(srv *server, ls loadedState) []subject {
	var recs []subject
	rec, notice := srv.pinInstructions(ls)
	if rec != nil {
		recs = append(recs, *rec)
	}
	if notice != "" {
		s.addNotice(notice)
	}
	return append(recs, s.publishPrompts(srv, ls)...)
}
