package mcphost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/mcphost/mcphost/internal/bytesize"
	"github.com/mcphost/mcphost/internal/hostfile"
	"github.com/mcphost/mcphost/internal/shellquote"
	"github.com/mcphost/mcphost/pin"
)

// A person reviews through references, one grammar for the library and
// the CLI:
//
//	SERVER                 the server whole: its table, its program (with
//	                       a lock), every tool it offers that the config
//	                       does not deny, its instructions and prompts
//	table:SERVER           its [mcp.SERVER] table
//	program:SERVER         its program (recorded in a lock only)
//	mcp__SERVER__TOOL      a tool, by the model's name for it
//	instructions:SERVER    its instructions
//	prompt:SERVER/NAME     a prompt

// Review is one thing a person reviews (a subject), as it is now, with what
// they read to decide: Session.Review makes it, Session.Approve records
// it. Approve records exactly what was shown: a subject that changed since
// its Review is not recorded.
type Review struct {
	// Ref names the subject in the grammar above (a SERVER reference
	// expands to one Review per subject).
	Ref string `json:"ref"`
	// Kind is "table", "program", "tool", "instructions" or "prompt".
	Kind string `json:"kind"`
	// Server is the server it belongs to.
	Server string `json:"server"`
	// Pin is how it compares with its review: PinSame, PinNew (no review
	// covers it), PinChanged, PinUnpinned (reviews unreadable) or PinGone
	// (reviewed, but no longer offered: approving forgets it).
	Pin PinStatus `json:"pin"`
	// Text is what the person reads, ready to print: for PinChanged a line
	// diff of each changed field, else the whole definition; "" for
	// PinSame. Every invisible or control character is a visible escape
	// (pin.Format), so it is safe to write to a terminal as it is.
	Text string `json:"text"`
	// Changed names the fields that changed since the review (PinChanged).
	Changed []string `json:"changed,omitempty"`
	// Digest is the digest of what Text shows, which Approve records.
	Digest string `json:"digest"`
	// Approve is the command that records it, as the session's notices
	// word it (`mcphost approve` with the session's config, worktree,
	// state and lock).
	Approve string `json:"approve"`

	sub subject
}

// PinGone says that a subject was reviewed but its server no longer
// offers it. Approving a gone review forgets it.
const PinGone PinStatus = "gone"

// Review returns what a person needs to review the subjects refs name
// (see the grammar above), one Review per subject, in the order given (a
// SERVER reference: table, program, tools by name, instructions, prompts
// by name). It fails, returning nothing, for a reference to no subject of
// the session (an error wrapping ErrUnknownTool), to a tool the config
// denies (nothing of it reaches the model), or to the tools of a server
// that is not running (only its table can be reviewed then).
func (s *Session) Review(ctx context.Context, refs ...string) ([]Review, error) {
	var out []Review
	for _, ref := range refs {
		rs, err := s.reviewsOf(ctx, ref)
		if err != nil {
			return nil, err
		}
		out = append(out, rs...)
	}
	return s.withHints(s.withFirstReview(ctx, out)), nil
}

// withFirstReview adds, before the reviews of a server that a lock does not
// hold yet, the review of its table and its program, unless rs has them: a
// lock's entry for a server always says what runs, so its first review
// shows (and Approve records) what runs, never only a tool of it.
func (s *Session) withFirstReview(ctx context.Context, rs []Review) []Review {
	if s.lock == nil || len(rs) == 0 {
		return rs
	}
	ls := s.loadPins(ctx)
	has := func(server string, k kind) bool {
		return slices.ContainsFunc(rs, func(r Review) bool { return r.sub.server == server && r.sub.kind == k })
	}
	var out []Review
	added := map[string]bool{}
	for _, r := range rs {
		server := r.sub.server
		if srv := s.servers[server]; srv != nil && !added[server] && !ls.serverReviewed(server) {
			added[server] = true
			if !has(server, kindTable) {
				out = append(out, s.tableReview(ctx, srv))
			}
			if !has(server, kindProgram) {
				out = append(out, s.programReview(ctx, srv))
			}
		}
		out = append(out, r)
	}
	return out
}

func (s *Session) withHints(rs []Review) []Review {
	for i := range rs {
		rs[i].Approve = s.approveHint(rs[i].Ref)
	}
	return rs
}

// Approve records reviews, as a person's: each subject as its Review
// showed it, in the session's store (the state file, or the lock with
// Options.LockFile), in one update. The session then judges the servers
// again: a reviewed tool is offered (allowed if the config allows it), a
// reviewed table may start (Restart starts it), reviewed instructions and
// prompts reach the model. It fails, recording nothing, when a subject
// changed since its Review (review it again), or when the store cannot be
// written (an untrusted lock: ErrLockUntrusted).
func (s *Session) Approve(ctx context.Context, reviews ...Review) error {
	if len(reviews) == 0 {
		return nil
	}
	subs := make([]subject, 0, len(reviews))
	for _, r := range reviews {
		cur, err := s.reviewsOf(ctx, r.Ref)
		if err != nil {
			return fmt.Errorf("mcphost: approve: %w", err)
		}
		if len(cur) != 1 || cur[0].Digest != r.Digest || cur[0].Pin == PinGone && r.Pin != PinGone {
			return fmt.Errorf("mcphost: approve %s: it changed since it was shown for review; review it again", pin.Visible(r.Ref))
		}
		if r.Digest == "" && r.Pin != PinGone {
			return fmt.Errorf("mcphost: approve %s: there is nothing to record (it is never given to the model)", pin.Visible(r.Ref))
		}
		subs = append(subs, cur[0].sub)
	}
	return s.recordReviews(ctx, subs)
}

// recordReviews records subjects as a person's review and judges their
// servers again.
func (s *Session) recordReviews(ctx context.Context, subs []subject) error {
	// A review of what a server offers marks the server reviewed, with
	// the tools it offers now as those its review covers; a review of its
	// table or program alone says nothing of its tools (a held server has
	// offered none yet).
	names := map[string][]string{}
	for _, sub := range subs {
		if _, ok := names[sub.server]; !ok && sub.kind != kindTable && sub.kind != kindProgram {
			names[sub.server] = s.toolNames(sub.server)
		}
	}
	if _, err := s.reviews.record(ctx, subs, false, names); err != nil {
		return fmt.Errorf("mcphost: record review: %w", err)
	}
	ls := s.loadPins(ctx)
	s.mu.Lock()
	if ls.err == nil {
		s.stateErr = nil
	}
	s.mu.Unlock()
	tables := map[string]bool{} // servers whose table was recorded
	for _, sub := range subs {
		if sub.kind == kindTable {
			tables[sub.server] = true
		}
	}
	done := map[string]bool{}
	for _, sub := range subs {
		srv := s.servers[sub.server]
		if done[sub.server] || srv == nil {
			continue
		}
		done[sub.server] = true
		srv.mu.Lock()
		if srv.hold != nil && tables[sub.server] {
			srv.hold = nil
			srv.err = errors.New("its table was reviewed since the session started; Restart starts it")
		}
		srv.mu.Unlock()
		if lv, ok := ls.v.(*lockView); ok {
			srv.setDrift(lv.l)
		}
		if srv.running() {
			s.rejudge(srv, ls)
		}
	}
	return nil
}

// rejudge applies a new reading of the reviews to a running server's
// tools, instructions and prompts, as they were last listed.
func (s *Session) rejudge(srv *server, ls loadedState) {
	// Not while a Restart replaces the server's texts and listing.
	srv.restartMu.Lock()
	defer srv.restartMu.Unlock()
	// Under pubMu, so that a re-list that publishes meanwhile is not
	// overwritten with the listing before it.
	srv.pubMu.Lock()
	srv.mu.Lock()
	raws := srv.lastList
	srv.mu.Unlock()
	// What the new reading trusts on first sight is recorded, as at a
	// listing, so that a later change of it is caught.
	entries, recs, _ := srv.build(raws, ls)
	s.swapTools(srv, entries)
	srv.pubMu.Unlock()
	if rec, _ := srv.pinInstructions(ls); rec != nil {
		recs = append(recs, *rec)
	}
	srv.mu.Lock()
	defs := make([]json.RawMessage, len(srv.prompts))
	for i, p := range srv.prompts {
		defs[i] = p.Definition
	}
	srv.mu.Unlock()
	prompts, precs, _ := srv.pinPrompts(defs, ls)
	srv.mu.Lock()
	srv.prompts = prompts
	srv.mu.Unlock()
	s.recordFirstSight(append(recs, precs...))
}

// Pending returns a Review of every subject of the session that is not as
// reviewed: tables held from starting, programs changed since the lock
// recorded them, tools, instructions and prompts that changed or that no
// review covers (first sights included: trusted, but not reviewed by a
// person), and reviewed tools a running server no longer offers. An empty
// result means everything the model can read is as a person reviewed it.
// It covers the servers that run: a server that did not start (Servers)
// and reviews that cannot be read (StateError) are not in it. Check, the
// gate `mcphost check` prints, fails on those too.
func (s *Session) Pending(ctx context.Context) []Review {
	var out []Review
	for _, name := range s.order {
		srv := s.servers[name]
		if srv.held() {
			out = append(out, s.tableReview(ctx, srv))
			continue
		}
		if !srv.running() || s.StateError() != nil {
			continue
		}
		rs, err := s.reviewsOf(ctx, name)
		if err != nil {
			continue
		}
		for _, r := range rs {
			switch {
			case r.Pin == PinSame:
			case r.Kind == "table" && s.lock == nil && s.configWritable == "":
				// The state file reviews a table only where a server
				// could have written its config.
			case r.Kind == "instructions" && srv.instructionsEmpty():
				// Nothing reaches the model, so there is nothing to review.
			default:
				out = append(out, r)
			}
		}
	}
	return s.withHints(out)
}

// Check returns nil when everything the session's servers offer the model
// is as a person reviewed it: every server runs or waits for its table's
// review, the reviews could be read (StateError), and nothing is Pending.
// Otherwise it returns a *CheckError, which matches ErrNotAsReviewed and
// says what failed. It is the gate of `mcphost check`, for an agent that
// must refuse to run unless a person reviewed all of it (a CI job, say).
// It reads the session's state as it is when called: a server that stops
// while Check runs is counted as failed, but tools a server re-lists or a
// Restart brings after it ran are judged by the next Check (after
// OnToolsChanged, say).
func (s *Session) Check(ctx context.Context) error {
	e := &CheckError{}
	if e.State = s.StateError(); e.State == nil {
		e.Pending = s.Pending(ctx)
	}
	// After Pending: a server that stops meanwhile, left out of it, is
	// counted here.
	for _, info := range s.Servers() {
		if info.State != ServerRunning && info.State != ServerUnreviewed {
			e.Failed = append(e.Failed, info)
		}
	}
	if len(e.Failed) == 0 && e.State == nil && len(e.Pending) == 0 {
		return nil
	}
	return e
}

// CheckError is Session.Check's error: what is not as reviewed, or could
// not be checked. errors.Is matches it with ErrNotAsReviewed (and with
// what State wraps).
type CheckError struct {
	// Failed are the servers that neither run nor wait for review (failed,
	// exited, closed): what they offer could not be checked.
	Failed []ServerInfo
	// State is StateError's error: the reviews (the state file or the
	// lock) could not be read or trusted, so none was checked and Pending
	// is empty.
	State error
	// Pending is what is not as reviewed, as Session.Pending returns it;
	// each Review's Approve is the command that reviews it.
	Pending []Review
}

// Error says in one line what failed: each server that is not running
// and its state, why the reviews cannot be trusted, and how many things
// are not as reviewed.
func (e *CheckError) Error() string {
	var parts []string
	for _, f := range e.Failed {
		parts = append(parts, fmt.Sprintf("server %s is %s", printable(f.Name, 80), f.State))
	}
	if e.State != nil {
		parts = append(parts, fmt.Sprintf("the reviews cannot be read or trusted: %s", printable(e.State.Error(), 300)))
	}
	if n := len(e.Pending); n > 0 {
		parts = append(parts, fmt.Sprintf("%d thing(s) not as reviewed", n))
	}
	return "mcphost: check: " + strings.Join(parts, "; ")
}

// Unwrap returns ErrNotAsReviewed and State.
func (e *CheckError) Unwrap() []error {
	if e.State != nil {
		return []error{ErrNotAsReviewed, e.State}
	}
	return []error{ErrNotAsReviewed}
}

// reviewsOf expands one reference.
func (s *Session) reviewsOf(ctx context.Context, ref string) ([]Review, error) {
	kindName, rest, hasKind := strings.Cut(ref, ":")
	if !hasKind {
		if server, tool, ok := SplitModelName(ref); ok {
			return s.toolReview(ctx, ref, server, tool)
		}
		srv, err := s.server(ref)
		if err != nil {
			return nil, err
		}
		return s.serverReviews(ctx, srv)
	}
	switch kindName {
	case "table":
		srv, err := s.server(rest)
		if err != nil {
			return nil, err
		}
		return []Review{s.tableReview(ctx, srv)}, nil
	case "program":
		srv, err := s.server(rest)
		if err != nil {
			return nil, err
		}
		if s.lock == nil {
			return nil, fmt.Errorf("mcphost: %s: programs are reviewed into a lock file only (Options.LockFile, -lock)", pin.Visible(ref))
		}
		return []Review{s.programReview(ctx, srv)}, nil
	case "instructions":
		srv, err := s.runningServer(rest)
		if err != nil {
			return nil, err
		}
		return []Review{s.instructionsReview(srv)}, nil
	case "prompt":
		server, name, _ := strings.Cut(rest, "/")
		srv, err := s.runningServer(server)
		if err != nil {
			return nil, err
		}
		p, ok := srv.prompt(name)
		if !ok {
			return nil, fmt.Errorf("mcphost: %w: server %s offers no prompt %q", ErrUnknownTool, server, printable(name, 80))
		}
		return []Review{promptReview(p)}, nil
	}
	return nil, fmt.Errorf("mcphost: %w: %q is not a reference (SERVER, a tool's model name, table:SERVER, program:SERVER, instructions:SERVER or prompt:SERVER/NAME)", ErrUnknownTool, printable(ref, 100))
}

func (s *Session) server(name string) (*server, error) {
	srv, ok := s.servers[name]
	if !ok {
		return nil, fmt.Errorf("mcphost: %w: no server named %q", ErrUnknownServer, printable(name, 80))
	}
	return srv, nil
}

func (s *Session) runningServer(name string) (*server, error) {
	srv, err := s.server(name)
	if err != nil {
		return nil, err
	}
	if _, err := srv.session(); err != nil {
		if srv.held() {
			return nil, fmt.Errorf("mcphost: server %s did not start: its table needs review first (%s)", name, s.approveHint(name))
		}
		return nil, fmt.Errorf("mcphost: %w", err)
	}
	return srv, nil
}

// serverReviews is the review of a server whole. A server held for its
// table has only that to review: nothing else of it was seen.
func (s *Session) serverReviews(ctx context.Context, srv *server) ([]Review, error) {
	var out []Review
	if s.lock != nil || s.config != "" {
		// A table is reviewed into a lock, or per config file.
		out = append(out, s.tableReview(ctx, srv))
	}
	if s.lock != nil {
		out = append(out, s.programReview(ctx, srv))
	}
	if srv.held() || !srv.running() {
		// Nothing else of it has been seen.
		return out, nil
	}
	s.mu.RLock()
	var tools []*toolEntry
	for _, e := range s.tools {
		if e.srv == srv && e.Decision != Deny {
			tools = append(tools, e)
		}
	}
	s.mu.RUnlock()
	sort.Slice(tools, func(i, j int) bool { return tools[i].Name < tools[j].Name })
	for _, e := range tools {
		out = append(out, toolReview(e))
	}
	out = append(out, s.goneReviews(ctx, srv)...)
	if r := s.instructionsReview(srv); r.Digest != "" {
		// Instructions too long to pass on are never given to the model:
		// there is nothing of them to review (their notice says so).
		out = append(out, r)
	}
	srv.mu.Lock()
	prompts := slices.Clone(srv.prompts)
	srv.mu.Unlock()
	for _, p := range prompts {
		out = append(out, promptReview(p))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("mcphost: %w: server %s is not running, and it has no table to review (no lock, no config file): nothing of it can be reviewed", ErrServerGone, srv.cfg.Name)
	}
	return out, nil
}

// toolReview is the review of one tool by its model name: a tool the
// server offers, or one reviewed that a running server no longer offers.
func (s *Session) toolReview(ctx context.Context, ref, server, tool string) ([]Review, error) {
	s.mu.RLock()
	e, ok := s.tools[ref]
	s.mu.RUnlock()
	if ok {
		if e.Decision == Deny {
			return nil, fmt.Errorf("mcphost: approve %s: the config of [mcp.%s] denies it, so it is never offered nor called and there is nothing to review", ref, e.Server)
		}
		return []Review{toolReview(e)}, nil
	}
	srv, err := s.runningServer(server)
	if err != nil {
		return nil, err
	}
	for _, r := range s.goneReviews(ctx, srv) {
		if r.sub.name == tool {
			return []Review{r}, nil
		}
	}
	return nil, fmt.Errorf("mcphost: %w: no tool named %q", ErrUnknownTool, printable(ref, 100))
}

func toolReview(e *toolEntry) Review {
	r := Review{Ref: e.Name, Kind: kindTool.String(), Server: e.Server, Pin: e.Pin, Digest: e.Digest,
		sub: subject{kind: kindTool, server: e.Server, name: e.Tool.Tool, def: e.Definition, digest: e.Digest}}
	r.Text, r.Changed = render(e.Pin, e.reviewed, e.Definition)
	return r
}

// goneReviews are the tools a running server's reviews hold that it no
// longer offers.
func (s *Session) goneReviews(ctx context.Context, srv *server) []Review {
	ls := s.loadPins(ctx)
	if ls.err != nil {
		return nil
	}
	var out []Review
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, tool := range ls.v.recordedTools(srv.cfg.Name) {
		model, err := ModelName(srv.cfg.Name, tool)
		if err != nil {
			continue
		}
		if _, offered := s.tools[model]; offered {
			continue
		}
		out = append(out, Review{Ref: model, Kind: kindTool.String(), Server: srv.cfg.Name, Pin: PinGone,
			Text: "reviewed, but the server no longer offers it: approving forgets its review\n",
			sub:  subject{kind: kindTool, server: srv.cfg.Name, name: tool}})
	}
	return out
}

// tableReview is the review of a server's table.
func (s *Session) tableReview(ctx context.Context, srv *server) Review {
	def, digest := srv.tableSubject()
	ls := s.loadPins(ctx)
	v := judge(ls.prior(kindTable, srv.cfg.Name, ""), digest)
	r := Review{Ref: "table:" + srv.cfg.Name, Kind: kindTable.String(), Server: srv.cfg.Name, Pin: v.pin, Digest: digest,
		sub: subject{kind: kindTable, server: srv.cfg.Name, def: def, digest: digest}}
	r.Text, r.Changed = render(v.pin, tableShown(v.reviewed), tableShown(def))
	return r
}

// sizeKeys are the keys of a table's definition that hold a byte size.
var sizeKeys = []string{"max_file_size", "max_memory", "max_output", "max_tmp"}

// tableShown is a table's definition as a person reads it: sizes spelled
// as the config spells them ("2GiB", not 2147483648). It is for the text of
// a review only; the digest is of the definition itself.
func tableShown(def json.RawMessage) json.RawMessage {
	if def == nil {
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(def, &m); err != nil {
		return def
	}
	for _, k := range sizeKeys {
		var n int64
		if v, ok := m[k]; ok && json.Unmarshal(v, &n) == nil {
			m[k], _ = json.Marshal(bytesize.Format(n))
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return def
	}
	return b
}

// programReview is the review of a server's program, as a lock records it.
func (s *Session) programReview(ctx context.Context, srv *server) Review {
	def, _ := programDefinition(srv.program)
	digest := mustDigest(def)
	ls := s.loadPins(ctx)
	v := judge(ls.prior(kindProgram, srv.cfg.Name, ""), digest)
	r := Review{Ref: "program:" + srv.cfg.Name, Kind: kindProgram.String(), Server: srv.cfg.Name, Pin: v.pin, Digest: digest,
		sub: subject{kind: kindProgram, server: srv.cfg.Name, def: def, digest: digest, program: srv.program}}
	var b strings.Builder
	switch v.pin {
	case PinSame:
	case PinChanged:
		for _, c := range srv.drift() {
			fmt.Fprintf(&b, "  %s\n", c)
		}
	default:
		for _, f := range srv.program {
			fmt.Fprintf(&b, "  %s %s %s\n", f.Role, pin.Visible(f.Path), fileID(f))
		}
		if len(srv.program) == 0 {
			b.WriteString("  (its program cannot be found)\n")
		}
	}
	r.Text = b.String()
	return r
}

func (s *Session) instructionsReview(srv *server) Review {
	srv.mu.Lock()
	text, p := srv.instructions, srv.ins
	srv.mu.Unlock()
	def := pin.InstructionsDefinition(text)
	digest := mustDigest(def)
	r := Review{Ref: "instructions:" + srv.cfg.Name, Kind: kindInstructions.String(), Server: srv.cfg.Name, Pin: p.pin, Digest: digest,
		sub: subject{kind: kindInstructions, server: srv.cfg.Name, def: def, digest: digest}}
	if len(text) > maxInstructions {
		// Never passed on, so never recorded: a review would say
		// nothing of what reaches the model.
		r.Pin, r.Digest, r.sub.digest = PinUnpinned, "", ""
		r.Text = fmt.Sprintf("%d bytes, more than the %d mcphost passes on: they are never given to the model\n", len(text), maxInstructions)
		return r
	}
	r.Text, r.Changed = render(p.pin, pin.InstructionsDefinition(p.reviewed), def)
	return r
}

func promptReview(p *Prompt) Review {
	r := Review{Ref: "prompt:" + p.Server + "/" + p.Name, Kind: kindPrompt.String(), Server: p.Server, Pin: p.Pin, Digest: p.Digest,
		sub: subject{kind: kindPrompt, server: p.Server, name: p.Name, def: p.Definition, digest: p.Digest}}
	r.Text, r.Changed = render(p.Pin, p.reviewed, p.Definition)
	return r
}

// render is the text of a review: a diff from the reviewed definition, or
// the whole definition, "" when as reviewed; and the fields that changed.
func render(st PinStatus, reviewed, current json.RawMessage) (string, []string) {
	changes, text, err := reviewText(st, reviewed, current)
	if err != nil {
		return fmt.Sprintf("(it cannot be shown: %s)\n", pin.Visible(err.Error())), nil
	}
	var fields []string
	for _, c := range changes {
		fields = append(fields, c.Field)
	}
	return text, fields
}

// tableSubject returns the server's table as a review records it.
func (srv *server) tableSubject() (json.RawMessage, string) {
	def, err := srv.cfg.Definition()
	if err != nil {
		return nil, ""
	}
	d, err := pin.Digest(def)
	if err != nil {
		return nil, ""
	}
	return def, d
}

func (srv *server) instructionsEmpty() bool {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return srv.instructions == ""
}

// tableHold is why a server did not start: its table lies in a config a
// server could have written and is not as a person reviewed it.
type tableHold struct {
	pin PinStatus
}

func (srv *server) held() bool {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return srv.hold != nil
}

// holdTable keeps a server from starting when its table comes from a
// config that a server could have written and is not as reviewed: such a
// table could have been planted or changed by a server (sandbox = "off",
// a write grant outside the worktree, ...). Tables are never trusted on
// first sight.
func (s *Session) holdTable(srv *server, ls loadedState) bool {
	if s.configWritable == "" {
		return false
	}
	_, digest := srv.tableSubject()
	v := judge(ls.prior(kindTable, srv.cfg.Name, ""), digest)
	if v.pin == PinSame {
		// Reviewed, maybe by another process since this session held it.
		srv.mu.Lock()
		srv.hold = nil
		srv.mu.Unlock()
		return false
	}
	status := map[PinStatus]string{PinNew: "new since its review", PinChanged: "changed since its review", PinUnpinned: "not known reviewed (the reviews cannot be read)"}[v.pin]
	err := fmt.Errorf("server table [mcp.%s] is %s and did not start: %s lies in %s, where servers can write, so its tables start only as a person reviewed them; review it with: %s",
		srv.cfg.Name, status, s.config, s.configWritable, s.approveHint(srv.cfg.Name))
	srv.mu.Lock()
	srv.hold = &tableHold{pin: v.pin}
	srv.state, srv.err = ServerUnreviewed, err
	srv.mu.Unlock()
	s.addNotice(err.Error())
	return true
}

// placeConfig finds the config file the servers' tables come from (a
// table's source from Load, else Options.ConfigFile) and whether a server
// could write it.
func (s *Session) placeConfig(configs []ServerConfig) error {
	config := s.opts.ConfigFile
	for _, sc := range configs {
		switch {
		case sc.source == "":
		case config == "":
			config = sc.source
		case sc.source != config:
			return fmt.Errorf("mcphost: the servers come from two config files, %s and %s: connect one config per session", config, sc.source)
		}
	}
	if config == "" {
		return nil
	}
	s.opts.ConfigFile = config
	canon := config
	if c, err := filepath.EvalSymlinks(config); err == nil {
		canon = c
	}
	s.config = canon
	roots, err := writablePaths(configs, Options{Worktree: s.worktree, HostEnv: s.opts.HostEnv})
	if err != nil {
		return err
	}
	for _, r := range roots {
		// The link a person named, or the file it leads to: either could
		// have been put there by a server.
		if under(config, r) || under(canon, r) {
			s.configWritable = r
			break
		}
	}
	return nil
}

// cliFlags are the flags of the mcphost command that finds a session
// started with opts (as given, before Connect made its paths absolute):
// every command a notice or error suggests carries them, so that it works
// as printed.
func cliFlags(opts Options) string {
	var args []string
	if opts.ConfigFile != "" {
		args = append(args, "-config", shellquote.Quote(opts.ConfigFile))
	}
	if opts.Worktree != "" && opts.Worktree != "." {
		args = append(args, "-worktree", shellquote.Quote(opts.Worktree))
	}
	if opts.StateDir != "" {
		args = append(args, "-state", shellquote.Quote(opts.StateDir))
	}
	if opts.LockFile != "" {
		args = append(args, "-lock", shellquote.Quote(opts.LockFile))
	}
	if len(args) == 0 {
		return ""
	}
	return " " + strings.Join(args, " ")
}

// approveHint is the command that reviews ref in this session, as every
// notice words it: it works as printed, in lock mode too.
func (s *Session) approveHint(ref string) string {
	return s.command("approve", ref)
}

// command is the mcphost command line of verb with arg for this session.
func (s *Session) command(verb, arg string) string {
	flags := s.flags
	if !strings.Contains(flags, " -config ") && s.opts.ConfigFile != "" {
		// A config Load read, not named in Options.
		flags = " -config " + shellquote.Quote(s.opts.ConfigFile) + flags
	}
	return "mcphost " + verb + flags + " " + shellquote.Quote(arg)
}

// Load reads a config file as hostile input (a regular file, bounded) and
// parses it as Parse does, remembering where each table came from:
// Connect then starts a table of a config that a server could have
// written (one in the worktree, or in a write grant) only as a person
// reviewed it (see Session.Review). Use it, not Parse, for a config file:
// Parse has no path to check.
func Load(path string) ([]ServerConfig, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("mcphost: config: %w", err)
	}
	data, err := readConfig(abs)
	if err != nil {
		return nil, err
	}
	servers, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for i := range servers {
		servers[i].source = abs
	}
	return servers, nil
}

// readConfig reads a config file as one a server could have planted: a
// regular file (never a FIFO or device, which would hang or flood the
// host), at most hostfile.MaxConfig bytes.
func readConfig(path string) ([]byte, error) {
	b, err := hostfile.Read(path, hostfile.MaxConfig)
	if err != nil {
		return nil, fmt.Errorf("mcphost: config: %w", err)
	}
	return b, nil
}
