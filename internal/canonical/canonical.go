// Package canonical is the canonical form and the digest of a tool
// definition, as package pin documents them at pin.Canonical and
// pin.Digest. It is a package of its own so that package mcphost can read
// the fields of a definition from the very tree its digest is made of, in
// one pass of the module's one JSON parser (internal/jsontree).
//
// The canonical form is a definition parsed with ParseDefinition (every
// object's members sorted by name, default annotation hints dropped) and
// written by jsontree.AppendMinimal (strings re-quoted with the minimal
// escaping, numbers as written). The digest is Prefix and the BLAKE3-256
// of that text.
package canonical

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/mcphost/mcphost/internal/jsontree"
	"github.com/zeebo/blake3"
)

// Prefix starts every digest: it names the formula (BLAKE3-256 of the
// canonical form, or of the exact text for instructions).
// pin.DigestPrefix is this constant.
const Prefix = "b3v1:"

// ErrInvalid is wrapped by every refusal of a definition; pin.ErrInvalid
// is this sentinel.
var ErrInvalid = errors.New("pin: not an acceptable JSON object")

// MaxDepth bounds the nesting of arrays and objects in a tool definition.
// The parser recurses once per level, so the bound keeps a hostile server
// from exhausting the stack; no real schema comes near it.
const MaxDepth = 512

// ParseObject parses data as exactly one JSON object, optionally surrounded
// by whitespace, with at most depthLimit levels of nesting, and sorts the
// members of every object in it by name: the order canonical form and
// pin.Diff need. A refusal wraps ErrInvalid and the parser's kind
// (jsontree.ErrDuplicateKey, jsontree.ErrTooDeep, ...).
func ParseObject(data []byte, depthLimit int) (*jsontree.Value, error) {
	v, err := jsontree.Parse(data, depthLimit)
	return sortedObject(v, err)
}

// sortedObject is ParseObject's check and sort of what a parser returned.
func sortedObject(v *jsontree.Value, err error) (*jsontree.Value, error) {
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if v.Kind != jsontree.Object {
		return nil, fmt.Errorf("%w: the text is %s, want a JSON object", ErrInvalid, articled(v.Kind))
	}
	sortMembers(v)
	return v, nil
}

func articled(k jsontree.Kind) string {
	switch k {
	case jsontree.Array, jsontree.Object:
		return "an " + k.String()
	}
	return "a " + k.String()
}

// sortMembers sorts the members of every object under v by the bytes of
// their decoded names, which is Unicode code point order. Names are
// unique (the parser refused repeats), so the order is total. Objects
// that arrive sorted (as maps marshal) are left as they are.
func sortMembers(v *jsontree.Value) {
	switch v.Kind {
	case jsontree.Array:
		for _, e := range v.Arr {
			sortMembers(e)
		}
	case jsontree.Object:
		for i := 1; i < len(v.Obj); i++ {
			if v.Obj[i-1].Name > v.Obj[i].Name {
				slices.SortFunc(v.Obj, func(a, b jsontree.Member) int { return strings.Compare(a.Name, b.Name) })
				break
			}
		}
		for i := range v.Obj {
			sortMembers(v.Obj[i].Val)
		}
	}
}

// parsers are the parsers of definitions that are dropped as soon as they
// are digested. Discovery digests every tool of every server, so their
// memory is reused instead of allocated per definition.
var parsers = sync.Pool{New: func() any { return new(jsontree.Parser) }}

// Fields returns the digest of def, as pin.Digest does, and also reads
// def: it appends to dst, for each path, the member found by following
// path's keys from the top-level object through nested objects, and
// returns the extended slice (room in dst spares an allocation). Keys
// match exactly, after decoding escapes, never case by case; a definition
// pin.Digest refuses (a repeated key among them) yields the same error and
// dst as it was. It spares a caller a second parse of what it digests.
func Fields(def json.RawMessage, dst []Field, paths ...[]string) (string, []Field, error) {
	p := parsers.Get().(*jsontree.Parser)
	defer parsers.Put(p)
	v, err := sortedObject(p.Parse(def, MaxDepth))
	if err != nil {
		return "", dst, err
	}
	// Before normalize, which may drop annotations from the tree.
	for _, path := range paths {
		dst = append(dst, lookup(def, v, path))
	}
	buf := bufs.Get().(*[]byte)
	var digest string
	*buf, digest = DigestTree((*buf)[:0], v)
	if cap(*buf) <= maxBuf {
		bufs.Put(buf)
	}
	return digest, dst, nil
}

// bufs hold the canonical forms Fields hashes; one that grew past maxBuf
// bytes (a huge definition) is not kept.
var bufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

const maxBuf = 256 << 10

// A Field is a member of a tool definition as Fields found it.
type Field struct {
	// Raw is the member's value exactly as written in the definition (a
	// sub-slice of it, without surrounding whitespace), or nil when the
	// definition has no such member.
	Raw json.RawMessage
	// Text is the decoded text of a string value (Raw starts with '"').
	Text string
}

// lookup follows path from the object v, parsed from def.
func lookup(def []byte, v *jsontree.Value, path []string) Field {
	for _, key := range path {
		v = v.Get(key)
		if v == nil {
			return Field{}
		}
	}
	off := int(v.Off)
	end := off + len(v.Raw)
	return Field{Raw: def[off:end:end], Text: v.Str}
}

// DigestTree returns the digest of a parsed, not yet normalized definition,
// using buf as scratch space for its canonical form, and the grown buf. It
// normalizes v in place.
func DigestTree(buf []byte, v *jsontree.Value) ([]byte, string) {
	normalize(v)
	buf = jsontree.AppendMinimal(buf[:0], v)
	return buf, Format(blake3.Sum256(buf))
}

// Format writes a BLAKE3-256 sum as a digest: Prefix and 64 lower case
// hex digits.
func Format(sum [32]byte) string {
	var b [len(Prefix) + 2*len(sum)]byte
	copy(b[:], Prefix)
	hex.Encode(b[len(Prefix):], sum[:])
	return string(b[:])
}

// ParseDefinition parses a tool definition (ParseObject) and normalizes
// it (see pin.Canonical).
func ParseDefinition(def []byte) (*jsontree.Value, error) {
	v, err := ParseObject(def, MaxDepth)
	if err != nil {
		return nil, err
	}
	normalize(v)
	return v, nil
}

// isDefaultHint reports whether an annotation jsontree.Member is one of the MCP
// ToolAnnotations hints holding its default value, which says nothing that
// an absent hint does not.
func isDefaultHint(m jsontree.Member) bool {
	switch m.Name {
	case "destructiveHint", "openWorldHint":
		return m.Val.Kind == jsontree.Bool && m.Val.Bool
	case "idempotentHint", "readOnlyHint":
		return m.Val.Kind == jsontree.Bool && !m.Val.Bool
	}
	return false
}

// normalize removes from a parsed tool definition what does not change its
// meaning but varies between SDKs: default-valued annotation hints, and an
// annotations jsontree.Member that is null or ends up empty. Only the top-level
// "annotations" is touched: an object of that name inside a schema is data.
func normalize(def *jsontree.Value) {
	i := def.Index("annotations")
	if i < 0 {
		return
	}
	ann := def.Obj[i].Val
	if ann.Kind == jsontree.Object {
		ann.Obj = slices.DeleteFunc(ann.Obj, isDefaultHint)
	}
	if ann.Kind == jsontree.Null || (ann.Kind == jsontree.Object && len(ann.Obj) == 0) {
		def.Obj = slices.Delete(def.Obj, i, i+1)
	}
}
