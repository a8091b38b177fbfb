package pin

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/zeebo/blake3"
)

// DigestPrefix starts every digest this package makes. It names the formula
// (BLAKE3-256 of the canonical form described at Canonical, or of the exact
// text for DigestInstructions), so a later
// formula can get a new prefix and old pins can be recomputed from the
// reviewed definitions kept in the state file instead of being re-trusted.
const DigestPrefix = "b3v1:"

// Errors about an input that is not an acceptable JSON object. Every such
// error from Canonical, Digest, Diff and NewEntry wraps ErrInvalid; those
// caused by a repeated key or by excessive nesting also wrap ErrDuplicateKey
// or ErrTooDeep.
var (
	ErrInvalid      = errors.New("pin: not an acceptable JSON object")
	ErrDuplicateKey = errors.New("pin: duplicate object key")
	ErrTooDeep      = errors.New("pin: JSON nested too deeply")
)

// Canonical returns the canonical form of a tool definition: the one
// encoding that every equivalent way of writing the same definition maps to,
// and that no definition of a different meaning shares.
//
// The input must be exactly one JSON object (RFC 8259), optionally surrounded
// by whitespace. It is refused, with an error wrapping ErrInvalid, if it has
// a syntax error, a key repeated in any object (compared after decoding
// escapes, so "a" and "\u0061" are the same key; an attacker could otherwise
// show a reviewer one value and a model another), invalid UTF-8, an escaped
// lone UTF-16 surrogate, or nesting deeper than 512 arrays and objects.
//
// The canonical form:
//   - has no insignificant whitespace;
//   - sorts object keys by the bytes of their UTF-8, which is Unicode code
//     point order (not the UTF-16 order of RFC 8785; the form is only ever
//     compared with itself);
//   - keeps every number exactly as written: 1, 1.0, 1e0 and -0 are all
//     different, and so are 9007199254740993 and 9007199254740992. What a
//     model reads is the text, and no conversion is safe for every reader;
//   - writes strings as their exact code points, escaping only the quote, the
//     backslash and U+0000..U+001F (as \b, \t, \n, \f, \r or \u00xx, in lower
//     case hex); there is no HTML escaping;
//   - drops the hints in a top-level "annotations" object that equal their
//     defaults in the MCP specification (readOnlyHint false, destructiveHint
//     true, idempotentHint false, openWorldHint true), then drops
//     "annotations" if it is null or left as an empty object. Such a
//     definition means the same as one that omits them, and SDKs differ on
//     whether they write them out: a server upgrade must not re-trigger
//     review. A hint with any other value, of any type, is kept.
//
// Canonical(c) returns c for every c that Canonical returns.
func Canonical(def json.RawMessage) ([]byte, error) {
	v, err := parseDefinition(def)
	if err != nil {
		return nil, err
	}
	return appendCanonical(make([]byte, 0, len(def)), &v), nil
}

// Digest returns the digest of a tool definition as the server sent it in
// tools/list (one JSON object): DigestPrefix followed by the 64 lower case hex
// digits of the BLAKE3-256 hash of Canonical(def). Two definitions have the
// same digest exactly when they have the same canonical form. It returns an
// error wrapping ErrInvalid when Canonical does.
func Digest(def json.RawMessage) (string, error) {
	d, _, err := digestFields(def, nil, nil)
	return d, err
}

// scratch is what digesting one definition needs and drops at once: the
// parse stack, the tree's members and the canonical form. Discovery
// digests every tool of every server, so it is reused instead of
// allocated per definition.
type scratch struct {
	stack, slab []member
	buf         []byte
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// maxScratch bounds, in members and bytes, what one scratch keeps for the
// next definition, so that one huge definition does not pin its memory.
const maxScratch = 4096

func digestFields(def json.RawMessage, dst []Field, paths [][]string) (string, []Field, error) {
	sc := scratchPool.Get().(*scratch)
	defer func() {
		// Nothing may keep pointers into the input alive from the pool.
		clear(sc.stack[:cap(sc.stack)])
		clear(sc.slab)
		if cap(sc.stack) > maxScratch || cap(sc.slab) > maxScratch || cap(sc.buf) > maxScratch*64 {
			return
		}
		sc.slab = sc.slab[:0]
		scratchPool.Put(sc)
	}()
	if sc.slab == nil {
		sc.slab = make([]member, 0, 32)
		sc.stack = make([]member, 0, 16)
	}
	p := parser{data: def, depthLimit: maxDepth, stack: sc.stack[:0], slab: sc.slab}
	v, err := p.parse()
	// Keep the grown stack and the latest slab; an earlier, full slab
	// goes with the tree.
	sc.stack, sc.slab = p.stack[:0], p.slab
	if err != nil {
		return "", dst, err
	}
	// Before normalize, which may drop annotations from the tree.
	for _, path := range paths {
		dst = append(dst, lookup(def, &v, path))
	}
	normalize(&v)
	sc.buf = appendCanonical(sc.buf[:0], &v)
	return formatDigest(blake3.Sum256(sc.buf)), dst, nil
}

// A Field is a member of a tool definition as DigestFields found it.
type Field struct {
	// Raw is the member's value exactly as written in the definition (a
	// sub-slice of it, without surrounding whitespace), or nil when the
	// definition has no such member.
	Raw json.RawMessage
	// Text is the decoded text of a string value (Raw starts with '"').
	Text string
}

// DigestFields is Digest that also reads def: it appends to dst, for each
// path, the member found by following path's keys from the top-level
// object through nested objects, and returns the extended slice (room in
// dst spares an allocation). Keys match exactly, after decoding escapes,
// never case by case; a definition Digest refuses (a repeated key among
// them) yields the same error and dst as it was. It spares a caller a
// second parse, and a second parser's different reading, of what it
// digests.
func DigestFields(def json.RawMessage, dst []Field, paths ...[]string) (string, []Field, error) {
	return digestFields(def, dst, paths)
}

// lookup follows path from the object v, parsed from def.
func lookup(def []byte, v *value, path []string) Field {
	var m *member
	for _, key := range path {
		if v.kind != kindObject {
			return Field{}
		}
		i := memberIndex(v, key)
		if i < 0 {
			return Field{}
		}
		m = &v.kids[i]
		v = &m.val
	}
	if m == nil {
		return Field{}
	}
	f := Field{Raw: def[m.start:m.end:m.end]}
	if v.kind == kindString {
		f.Text = string(v.text)
	}
	return f
}

// digestDefinition is Digest with the signature checkState wants.
func digestDefinition(_, _ string, def json.RawMessage) (string, error) {
	return Digest(def)
}

// digestTree returns the digest of a parsed, not yet normalized definition,
// using buf as scratch space for its canonical form, and the grown buf. It
// normalizes v in place.
func digestTree(buf []byte, v *value) ([]byte, string) {
	normalize(v)
	buf = appendCanonical(buf[:0], v)
	return buf, formatDigest(blake3.Sum256(buf))
}

// DigestInstructions returns the digest of a server's instructions text (the
// "instructions" of its initialize result), for ServerEntry.Instructions:
// DigestPrefix and the BLAKE3-256 of the text's exact bytes, or "" for empty
// text, which MCP treats the same as no instructions.
func DigestInstructions(text string) string {
	if text == "" {
		return ""
	}
	return formatDigest(blake3.Sum256([]byte(text)))
}

func formatDigest(sum [32]byte) string {
	var b [len(DigestPrefix) + 2*len(sum)]byte
	copy(b[:], DigestPrefix)
	hex.Encode(b[len(DigestPrefix):], sum[:])
	return string(b[:])
}

// validDigest reports whether d has the one digest format this package
// knows: DigestPrefix and 64 lower case hex digits.
func validDigest(d string) bool {
	hexPart, ok := strings.CutPrefix(d, DigestPrefix)
	if !ok || len(hexPart) != 64 {
		return false
	}
	for i := 0; i < len(hexPart); i++ {
		c := hexPart[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// parseDefinition parses a tool definition and normalizes it.
func parseDefinition(def []byte) (value, error) {
	v, err := parseObject(def, maxDepth)
	if err != nil {
		return value{}, err
	}
	normalize(&v)
	return v, nil
}

// isDefaultHint reports whether an annotation member is one of the MCP
// ToolAnnotations hints holding its default value, which says nothing that
// an absent hint does not.
func isDefaultHint(m *member) bool {
	switch string(m.key) {
	case "destructiveHint", "openWorldHint":
		return m.val.kind == kindTrue
	case "idempotentHint", "readOnlyHint":
		return m.val.kind == kindFalse
	}
	return false
}

// normalize removes from a parsed tool definition what does not change its
// meaning but varies between SDKs: default-valued annotation hints, and an
// annotations member that is null or ends up empty. Only the top-level
// "annotations" is touched: an object of that name inside a schema is data.
func normalize(def *value) {
	i := memberIndex(def, "annotations")
	if i < 0 {
		return
	}
	ann := &def.kids[i].val
	if ann.kind == kindObject {
		ann.kids = slices.DeleteFunc(ann.kids, func(m member) bool { return isDefaultHint(&m) })
	}
	if ann.kind == kindNull || (ann.kind == kindObject && len(ann.kids) == 0) {
		def.kids = append(def.kids[:i], def.kids[i+1:]...)
	}
}

// memberIndex returns the index of the member named key in object v, or -1.
func memberIndex(v *value, key string) int {
	for i := range v.kids {
		if string(v.kids[i].key) == key {
			return i
		}
	}
	return -1
}
