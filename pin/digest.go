package pin

import (
	"encoding/json"
	"strings"

	"github.com/mcphost/mcphost/internal/canonical"
	"github.com/mcphost/mcphost/internal/jsontree"
)

// DigestPrefix starts every digest this package makes. It names the formula
// (BLAKE3-256 of the canonical form described at Canonical), so a later
// formula can get a new prefix and old pins can be recomputed from the
// reviewed definitions kept in the state file instead of being re-trusted.
const DigestPrefix = canonical.Prefix

// Errors about an input that is not an acceptable JSON object. Every such
// error from Canonical, Digest, Diff and NewEntry wraps ErrInvalid; those
// caused by a repeated key or by excessive nesting also wrap ErrDuplicateKey
// or ErrTooDeep, which are the kinds of the module's one JSON parser (the
// same sentinels that package schema's refusals of such texts wrap).
var (
	ErrInvalid      = canonical.ErrInvalid
	ErrDuplicateKey = jsontree.ErrDuplicateKey
	ErrTooDeep      = jsontree.ErrTooDeep
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
	v, err := canonical.ParseDefinition(def)
	if err != nil {
		return nil, err
	}
	return jsontree.AppendMinimal(make([]byte, 0, len(def)), v), nil
}

// Digest returns the digest of a tool definition as the server sent it in
// tools/list (one JSON object): DigestPrefix followed by the 64 lower case hex
// digits of the BLAKE3-256 hash of Canonical(def). Two definitions have the
// same digest exactly when they have the same canonical form. It returns an
// error wrapping ErrInvalid when Canonical does.
func Digest(def json.RawMessage) (string, error) {
	d, _, err := canonical.Fields(def, nil)
	return d, err
}

// digestDefinition is Digest with the signature checkState wants.
func digestDefinition(_, _ string, def json.RawMessage) (string, error) {
	return Digest(def)
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
