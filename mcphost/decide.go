package mcphost

import (
	"encoding/json"
)

// The trust pipeline. Everything a person reviews is a subject of one of
// five kinds (a server table, its program, a tool, its instructions, a
// prompt). Every subject is compared with its review by one rule (judge),
// its review is kept as one record (pin.Entry, or pin.LockEntry in a lock),
// and what may reach the model or start follows from that comparison by
// one decision per use (decideTool for tools; a table, instructions or a
// prompt is used only when trusted). The reviews come from one of two
// stores, the personal state file or a lock file (see store.go): the rules
// here do not know which, beyond whether first sight is trusted.

// kind is the kind of a reviewed subject.
type kind int

const (
	kindTool kind = iota
	kindInstructions
	kindPrompt
	kindTable
	kindProgram
)

func (k kind) String() string {
	switch k {
	case kindTool:
		return "tool"
	case kindInstructions:
		return "instructions"
	case kindPrompt:
		return "prompt"
	case kindTable:
		return "table"
	case kindProgram:
		return "program"
	}
	return "unknown"
}

// prior is what the reviews hold for one subject, as judge needs it.
type prior struct {
	// unreadable: the reviews could not be read, or are not trusted (a
	// lock nothing vouches for). Nothing can be shown to be reviewed.
	unreadable bool
	// trustFirstSight: a subject no review covers is recorded when it is
	// seen, so that a later change is caught, and one seen on a server
	// never reviewed is trusted (trust on first use). False with a lock: a
	// team's lock trusts only what it holds, and nothing is recorded
	// into it unasked.
	trustFirstSight bool
	// covered: a person's review of the server covers this subject (it
	// was offered then), or the server was never reviewed (first sight).
	// With a lock, only what the lock holds is covered.
	covered bool
	// pinned: the reviews hold this subject's definition; digest and
	// definition are then what was recorded.
	pinned     bool
	digest     string
	definition json.RawMessage
}

// verdict is what judge says of one subject.
type verdict struct {
	pin PinStatus
	// unreviewed: no review covers it: the server offers it since its
	// last review (or, with a lock, the lock does not hold it).
	unreviewed bool
	// record: its definition is to be recorded as first seen, so that a
	// later change is caught.
	record bool
	// reviewed is the recorded definition when pin is PinChanged.
	reviewed json.RawMessage
}

// trusted reports whether the subject's text may reach the model, or its
// table start: as reviewed, or first seen on a server never reviewed
// (without a lock).
func (v verdict) trusted() bool {
	return v.pin == PinSame || (v.pin == PinNew && !v.unreviewed)
}

// judge compares a subject's current digest with its record. It is the
// one rule for every kind of subject and both stores, in this order:
//   - the reviews cannot be read (or trusted): PinUnpinned;
//   - a record with another digest: PinChanged;
//   - no review covers it: PinNew and unreviewed (its first sight is
//     recorded, without a lock, so that a later change is caught);
//   - a record with this digest: PinSame;
//   - no record, on a server never reviewed: PinNew, recorded as its first
//     sight (without a lock; with one, nothing is covered that the lock
//     does not hold).
func judge(p prior, digest string) verdict {
	switch {
	case p.unreadable:
		return verdict{pin: PinUnpinned}
	case p.pinned && p.digest != digest:
		return verdict{pin: PinChanged, reviewed: p.definition}
	case !p.covered:
		return verdict{pin: PinNew, unreviewed: true, record: !p.pinned && p.trustFirstSight}
	case p.pinned:
		return verdict{pin: PinSame}
	case p.trustFirstSight:
		return verdict{pin: PinNew, record: true}
	default:
		return verdict{pin: PinNew, unreviewed: true}
	}
}

// toolRules are the inputs of decideTool besides the verdict: what the
// config and the server's program say.
type toolRules struct {
	// policy is the config's word: Allow, Approval or Deny.
	policy Decision
	// offerNew: the config offers tools new since a review
	// (new_tools = "offer", without a lock) rather than holding them.
	offerNew bool
	// programChanged: the server's program differs from the one its
	// review (the lock) recorded.
	programChanged bool
}

// decideTool is the one decision of what happens to a tool: whether it
// is offered to the model (held: not offered, and its calls refused until
// a person reviews it) and whether its calls are allowed or each asks.
//   - Denied by the config: Deny (never offered, nothing of it pinned).
//   - Changed since its review: held. The model reads a tool's
//     description on every turn, called or not, so new text must not
//     reach it before a person has read it.
//   - Reviews unreadable: held, as nothing can be shown reviewed.
//   - New since the server's review: held, unless the config offers new
//     tools (without a lock): then offered, each call asking, and its
//     first sight recorded so that a later change is caught.
//   - As reviewed, or first seen on a server never reviewed: offered,
//     with the config's decision, except that an allowed tool of a server
//     whose program changed since the lock recorded it asks.
//
// record is true when the tool's first sight is to be recorded.
func decideTool(v verdict, r toolRules) (d Decision, held, record bool) {
	switch {
	case r.policy == Deny:
		return Deny, false, false
	case v.pin == PinChanged, v.pin == PinUnpinned:
		return Approval, true, false
	case v.unreviewed && !r.offerNew:
		return Approval, true, false
	case v.unreviewed:
		return Approval, false, v.record
	}
	d = r.policy
	if d == Allow && r.programChanged {
		d = Approval
	}
	return d, false, v.record
}
