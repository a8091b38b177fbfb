package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// This file holds the JSON layer of the package: a parsed tree that keeps
// every string and number literal as it was written, so that what mcphost
// forwards (the strict form of a schema, the arguments for a server) repeats
// the sender's bytes instead of Go's re-encoding of them. encoding/json
// checks the syntax; the tree builder below only builds.

type kind uint8

const (
	kindNull kind = iota
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

func (k kind) String() string {
	switch k {
	case kindNull:
		return "null"
	case kindBool:
		return "boolean"
	case kindNumber:
		return "number"
	case kindString:
		return "string"
	case kindArray:
		return "array"
	default:
		return "object"
	}
}

// A value is one parsed JSON value.
type value struct {
	kind kind
	b    bool
	str  string // a string's decoded text
	raw  string // a string's or number's literal, as written (quotes included)
	arr  []*value
	obj  []member
	// src is the JSON pointer, into the original schema, of the schema a
	// strict-form node was made from; problems found in the strict form
	// name it so that a person can find the cause in what the server sent.
	src string
}

// A member is one name/value pair of an object, in document order.
type member struct {
	name    string // decoded
	rawName string // literal, quotes included
	val     *value
}

func nullValue() *value       { return &value{kind: kindNull} }
func boolValue(b bool) *value { return &value{kind: kindBool, b: b} }

// strValue returns a new string value.
func strValue(s string) *value {
	return &value{kind: kindString, str: s, raw: quoted(s)}
}

// numValue returns a new number value; lit must be a valid JSON number.
func numValue(lit string) *value { return &value{kind: kindNumber, raw: lit} }

// get returns the value of the member named name, or nil.
func (v *value) get(name string) *value {
	if v == nil || v.kind != kindObject {
		return nil
	}
	for i := range v.obj {
		if v.obj[i].name == name {
			return v.obj[i].val
		}
	}
	return nil
}

// has reports whether v is an object with a member named name.
func (v *value) has(name string) bool { return v.get(name) != nil }

// set replaces the value of the member named name, or appends a member.
func (v *value) set(name string, val *value) {
	for i := range v.obj {
		if v.obj[i].name == name {
			v.obj[i].val = val
			return
		}
	}
	v.obj = append(v.obj, member{name: name, rawName: quoted(name), val: val})
}

// del removes the member named name.
func (v *value) del(name string) {
	for i := range v.obj {
		if v.obj[i].name == name {
			v.obj = append(v.obj[:i:i], v.obj[i+1:]...)
			return
		}
	}
}

// errSyntax is what parse reports for input that is not one JSON text.
var errSyntax = errors.New("not valid JSON")

// parsed is the result of parse: the tree, and what a caller may refuse.
type parsed struct {
	v *value
	// dup is the JSON pointer of the first member whose name repeats an
	// earlier member of the same object ("" and hasDup false if none).
	dup    string
	hasDup bool
	// lone is set when a \u escape was an unpaired surrogate; like
	// encoding/json, the tree holds U+FFFD for it.
	lone bool
}

// parse parses one JSON text. The text must be valid UTF-8 (RFC 8259 §8.1
// requires it, and a tree that silently replaced bad bytes would not say
// what the sender sent).
func parse(data []byte) (parsed, error) {
	if !utf8.Valid(data) {
		return parsed{}, fmt.Errorf("%w: the text is not UTF-8", errSyntax)
	}
	// Every value but the root follows a colon, a comma or an opening
	// bracket, so counting those bounds the values to allocate (strings
	// that hold them, and commas between members, make it an
	// overestimate, never an under one).
	left := 1 + bytes.Count(data, []byte{':'}) + bytes.Count(data, []byte{','}) + bytes.Count(data, []byte{'['})
	n := min(left, 8) // the stacks' likely depth, grown on demand
	b := builder{data: data, text: string(data), left: left, mems: make([]member, 0, n), elems: make([]*value, 0, n)}
	// Schemas run at about a value per dozen bytes: the first slab is
	// sized for that, later ones (rarely needed) for what may be left.
	b.slab = make([]value, 0, min(max(min(len(data)/12, left), 4), 256))
	v := b.value(0)
	if v != nil {
		b.skip()
	}
	if v == nil || b.pos != len(data) {
		// Let encoding/json say where and why.
		var x any
		err := json.Unmarshal(data, &x)
		if err == nil {
			err = errors.New("invalid JSON")
		}
		return parsed{}, fmt.Errorf("%w: %v", errSyntax, err)
	}
	out := parsed{v: v, lone: b.lone}
	if b.dup {
		out.dup, out.hasDup = findDup(v, "")
	}
	return out, nil
}

// maxNesting is how deeply arrays and objects may nest: as deep as
// encoding/json's scanner allows, so that the validator, which reads the
// same text with encoding/json, never refuses what this package took.
const maxNesting = 10000

// builder parses JSON text into a tree. It accepts exactly what
// json.Valid accepts (RFC 8259, nesting up to maxNesting); on the first
// thing that is not JSON it stops, and value returns nil.
//
// Discovery parses every schema of every tool, so the builder allocates
// in bulk: values come from slabs, and the members of an object (the
// elements of an array) gather on one stack shared by every level and
// are copied out once, at their final size.
type builder struct {
	data []byte
	text string // data, once, so that literals are substrings of it
	pos  int
	lone bool
	dup  bool

	slab  []value  // values handed out by alloc
	left  int      // at most this many values are still to come
	mems  []member // members of the objects being built, innermost last
	elems []*value // elements of the arrays being built, innermost last
}

// alloc returns a new value of kind k from the current slab.
func (b *builder) alloc(k kind) *value {
	if len(b.slab) == cap(b.slab) {
		// Capped so that a large schema does not hold one huge block:
		// the tree is garbage once Close is done with it, and small
		// slabs go with it sooner.
		b.slab = make([]value, 0, min(max(b.left, 1), 256))
	}
	b.left--
	b.slab = b.slab[:len(b.slab)+1]
	v := &b.slab[len(b.slab)-1]
	v.kind = k
	return v
}

func (b *builder) skip() {
	for b.pos < len(b.data) {
		switch b.data[b.pos] {
		case ' ', '\t', '\n', '\r':
			b.pos++
		default:
			return
		}
	}
}

// next skips white space and returns the byte there, or 0 at the end (a
// NUL byte, never valid where next is asked, reads the same).
func (b *builder) next() byte {
	b.skip()
	if b.pos >= len(b.data) {
		return 0
	}
	return b.data[b.pos]
}

// value parses the value at b.pos, inside depth arrays and objects. It
// returns nil if the text there is not a JSON value.
func (b *builder) value(depth int) *value {
	switch c := b.next(); c {
	case '{':
		if depth == maxNesting {
			return nil
		}
		b.pos++
		base := len(b.mems)
		var seen map[string]bool
		if b.next() == '}' {
			b.pos++
		} else {
			for {
				if b.next() != '"' {
					return nil
				}
				raw, name, ok := b.str()
				if !ok || b.next() != ':' {
					return nil
				}
				b.pos++
				val := b.value(depth + 1)
				if val == nil {
					return nil
				}
				// Objects are small as a rule; a map pays off only for
				// big ones.
				if seen != nil {
					if seen[name] {
						b.dup = true
					}
					seen[name] = true
				} else {
					mine := b.mems[base:]
					for i := range mine {
						if mine[i].name == name {
							b.dup = true
							break
						}
					}
					if len(mine) == 16 {
						seen = make(map[string]bool, 32)
						for i := range mine {
							seen[mine[i].name] = true
						}
						seen[name] = true
					}
				}
				b.mems = append(b.mems, member{name: name, rawName: raw, val: val})
				c := b.next()
				b.pos++
				if c == '}' {
					break
				}
				if c != ',' {
					return nil
				}
			}
		}
		v := b.alloc(kindObject)
		v.obj = make([]member, len(b.mems)-base)
		copy(v.obj, b.mems[base:])
		b.mems = b.mems[:base]
		return v
	case '[':
		if depth == maxNesting {
			return nil
		}
		b.pos++
		base := len(b.elems)
		if b.next() == ']' {
			b.pos++
		} else {
			for {
				e := b.value(depth + 1)
				if e == nil {
					return nil
				}
				b.elems = append(b.elems, e)
				c := b.next()
				b.pos++
				if c == ']' {
					break
				}
				if c != ',' {
					return nil
				}
			}
		}
		v := b.alloc(kindArray)
		v.arr = make([]*value, len(b.elems)-base)
		copy(v.arr, b.elems[base:])
		b.elems = b.elems[:base]
		return v
	case '"':
		raw, s, ok := b.str()
		if !ok {
			return nil
		}
		v := b.alloc(kindString)
		v.str, v.raw = s, raw
		return v
	case 't':
		if !b.literal("true") {
			return nil
		}
		v := b.alloc(kindBool)
		v.b = true
		return v
	case 'f':
		if !b.literal("false") {
			return nil
		}
		return b.alloc(kindBool)
	case 'n':
		if !b.literal("null") {
			return nil
		}
		return b.alloc(kindNull)
	default:
		return b.number()
	}
}

// literal consumes lit at b.pos, if it is there.
func (b *builder) literal(lit string) bool {
	if !strings.HasPrefix(b.text[b.pos:], lit) {
		return false
	}
	b.pos += len(lit)
	return true
}

// number reads a number literal at b.pos (RFC 8259 §6), or returns nil.
func (b *builder) number() *value {
	d, i := b.data, b.pos
	digits := func() bool {
		start := i
		for i < len(d) && '0' <= d[i] && d[i] <= '9' {
			i++
		}
		return i > start
	}
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && '1' <= d[i] && d[i] <= '9':
		digits()
	default:
		return nil
	}
	if i < len(d) && d[i] == '.' {
		i++
		if !digits() {
			return nil
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if !digits() {
			return nil
		}
	}
	v := b.alloc(kindNumber)
	v.raw = b.text[b.pos:i]
	b.pos = i
	return v
}

// str reads a string literal at b.pos (its opening quote) and returns it
// as written and decoded; ok is false if it is not a valid literal.
func (b *builder) str() (raw, s string, ok bool) {
	d := b.data
	start, i := b.pos, b.pos+1
	escaped := false
	for {
		// Most of a string is bytes that stand for themselves.
		for i < len(d) && d[i] >= 0x20 && d[i] != '"' && d[i] != '\\' {
			i++
		}
		if i >= len(d) || d[i] < 0x20 {
			return "", "", false
		}
		if d[i] == '"' {
			i++
			break
		}
		escaped = true
		if i+1 >= len(d) {
			return "", "", false
		}
		switch d[i+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i += 2
		case 'u':
			if i+6 > len(d) || !isHex(b.text[i+2:i+6]) {
				return "", "", false
			}
			i += 6
		default:
			return "", "", false
		}
	}
	b.pos = i
	raw = b.text[start:i]
	if !escaped {
		return raw, raw[1 : len(raw)-1], true
	}
	s, lone := unescape(raw[1 : len(raw)-1])
	if lone {
		b.lone = true
	}
	return raw, s, true
}

// unescape decodes the body of a valid JSON string literal the way
// encoding/json does, so that this package and the validator (which reads
// with encoding/json) agree on every name and value. An unpaired surrogate
// becomes U+FFFD and is reported.
func unescape(s string) (string, bool) {
	var sb strings.Builder
	sb.Grow(len(s))
	lone := false
	for i := 0; i < len(s); {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			sb.WriteByte(c)
			i++
			continue
		}
		switch e := s[i+1]; e {
		case 'b':
			sb.WriteByte('\b')
		case 'f':
			sb.WriteByte('\f')
		case 'n':
			sb.WriteByte('\n')
		case 'r':
			sb.WriteByte('\r')
		case 't':
			sb.WriteByte('\t')
		case 'u':
			r, ok := hex4(s, i+2)
			if !ok {
				sb.WriteRune(unicode.ReplacementChar)
				i += 2
				continue
			}
			i += 6
			if utf16.IsSurrogate(r) {
				if i+1 < len(s) && s[i] == '\\' && s[i+1] == 'u' {
					if r2, ok := hex4(s, i+2); ok {
						if dec := utf16.DecodeRune(r, r2); dec != unicode.ReplacementChar {
							sb.WriteRune(dec)
							i += 6
							continue
						}
					}
				}
				lone = true
				r = unicode.ReplacementChar
			}
			sb.WriteRune(r)
			continue
		default: // '"', '\\', '/'
			sb.WriteByte(e)
		}
		i += 2
	}
	return sb.String(), lone
}

func hex4(s string, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	n, err := strconv.ParseUint(s[i:i+4], 16, 32)
	if err != nil {
		return 0, false
	}
	return rune(n), true
}

// findDup returns the pointer of the first repeated member name under v.
func findDup(v *value, ptr string) (string, bool) {
	switch v.kind {
	case kindObject:
		seen := make(map[string]bool, len(v.obj))
		for _, m := range v.obj {
			p := ptr + "/" + escapeToken(m.name)
			if seen[m.name] {
				return p, true
			}
			seen[m.name] = true
			if d, ok := findDup(m.val, p); ok {
				return d, true
			}
		}
	case kindArray:
		for i, e := range v.arr {
			if d, ok := findDup(e, ptr+"/"+strconv.Itoa(i)); ok {
				return d, true
			}
		}
	}
	return "", false
}

// encode returns the compact JSON text of v. It measures the text first:
// Closed keeps three encodings of every tool's schema for the session's
// life, and a buffer grown by doubling would keep up to half of its room
// unused.
func encode(v *value) []byte { return v.appendTo(make([]byte, 0, v.size())) }

// size returns the length of v's compact JSON text, as appendTo writes it.
func (v *value) size() int {
	switch v.kind {
	case kindNull:
		return len("null")
	case kindBool:
		if v.b {
			return len("true")
		}
		return len("false")
	case kindNumber:
		return len(v.raw)
	case kindString:
		if v.raw != "" {
			return len(v.raw)
		}
		return quotedSize(v.str)
	case kindArray:
		n := 2 + max(len(v.arr)-1, 0) // brackets and commas
		for _, e := range v.arr {
			n += e.size()
		}
		return n
	default:
		n := 2 + max(len(v.obj)-1, 0) // braces and commas
		for _, m := range v.obj {
			if m.rawName != "" {
				n += len(m.rawName)
			} else {
				n += quotedSize(m.name)
			}
			n += 1 + m.val.size() // the colon and the value
		}
		return n
	}
}

// quotedSize returns the length of appendQuoted's literal for s.
func quotedSize(s string) int {
	n := len(s) + 2
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t':
			n++
		case c < 0x20:
			n += 5
		}
	}
	return n
}

func (v *value) appendTo(b []byte) []byte {
	switch v.kind {
	case kindNull:
		return append(b, "null"...)
	case kindBool:
		if v.b {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	case kindNumber:
		return append(b, v.raw...)
	case kindString:
		if v.raw != "" {
			return append(b, v.raw...)
		}
		return appendQuoted(b, v.str)
	case kindArray:
		b = append(b, '[')
		for i, e := range v.arr {
			if i > 0 {
				b = append(b, ',')
			}
			b = e.appendTo(b)
		}
		return append(b, ']')
	default:
		b = append(b, '{')
		for i, m := range v.obj {
			if i > 0 {
				b = append(b, ',')
			}
			if m.rawName != "" {
				b = append(b, m.rawName...)
			} else {
				b = appendQuoted(b, m.name)
			}
			b = append(b, ':')
			b = m.val.appendTo(b)
		}
		return append(b, '}')
	}
}

// quoted returns s as a JSON string literal, as appendQuoted writes it.
// The names and values this package itself adds to schemas come out
// without allocating.
func quoted(s string) string {
	switch s {
	case "type":
		return `"type"`
	case "null":
		return `"null"`
	case "object":
		return `"object"`
	case "properties":
		return `"properties"`
	case "required":
		return `"required"`
	case "additionalProperties":
		return `"additionalProperties"`
	case "anyOf":
		return `"anyOf"`
	case "enum":
		return `"enum"`
	case "const":
		return `"const"`
	case "items":
		return `"items"`
	case "$schema":
		return `"$schema"`
	case uriDraft07:
		return `"` + uriDraft07 + `"`
	case uriDraft2020:
		return `"` + uriDraft2020 + `"`
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' {
			return string(appendQuoted(make([]byte, 0, len(s)+8), s))
		}
	}
	return `"` + s + `"`
}

// appendQuoted appends s as a JSON string literal. s is valid UTF-8 (it
// came from valid input or from this package).
func appendQuoted(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// escapeToken escapes one JSON pointer reference token (RFC 6901 §3).
func escapeToken(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

// unescapeToken undoes escapeToken.
func unescapeToken(s string) string {
	if !strings.Contains(s, "~") {
		return s
	}
	return strings.NewReplacer("~1", "/", "~0", "~").Replace(s)
}

// showPointer writes a JSON pointer for a person or a model to read. The
// root, whose pointer is empty, is written "(root)"; a pointer holding
// quotes, backslashes or characters that do not print (a hostile server's
// property names can hold anything) is written quoted, with those escaped.
func showPointer(p string) string {
	if p == "" {
		return "(root)"
	}
	for _, r := range p {
		if r == '"' || r == '\\' || !unicode.IsPrint(r) {
			return strconv.Quote(p)
		}
	}
	return p
}

// quote writes a name or a literal for a message, escaped like showPointer.
func quote(s string) string { return strconv.Quote(s) }

// number returns the exact value of a number literal. A literal longer
// than maxNumber bytes or with an exponent beyond ±maxExponent is not
// given one: exact arithmetic on it costs time a hostile schema could
// multiply (1e999999 takes math/big tens of milliseconds), and no tool
// means such a number.
func (v *value) number() (*big.Rat, bool) {
	if v.kind != kindNumber || len(v.raw) > maxNumber {
		return nil, false
	}
	if i := strings.IndexAny(v.raw, "eE"); i >= 0 {
		e, err := strconv.Atoi(strings.TrimPrefix(v.raw[i+1:], "+"))
		if err != nil || e > maxExponent || e < -maxExponent {
			return nil, false
		}
	}
	r, ok := new(big.Rat).SetString(v.raw)
	return r, ok
}

// Limits on the numbers this package computes with exactly.
const (
	maxNumber   = 400
	maxExponent = 400
)

// isInteger reports whether a number literal has an integral value (1.0
// and 1e2 are integers, as JSON Schema counts them).
func (v *value) isInteger() bool {
	r, ok := v.number()
	return ok && r.IsInt()
}

// equal reports whether two JSON values are equal as JSON Schema compares
// them: numbers by value, objects regardless of member order.
func equal(a, b *value) bool {
	if a.kind != b.kind {
		return false
	}
	switch a.kind {
	case kindNull:
		return true
	case kindBool:
		return a.b == b.b
	case kindNumber:
		x, ok1 := a.number()
		y, ok2 := b.number()
		if !ok1 || !ok2 {
			return a.raw == b.raw
		}
		return x.Cmp(y) == 0
	case kindString:
		return a.str == b.str
	case kindArray:
		if len(a.arr) != len(b.arr) {
			return false
		}
		for i := range a.arr {
			if !equal(a.arr[i], b.arr[i]) {
				return false
			}
		}
		return true
	default:
		if len(a.obj) != len(b.obj) {
			return false
		}
		for _, m := range a.obj {
			o := b.get(m.name)
			if o == nil || !equal(m.val, o) {
				return false
			}
		}
		return true
	}
}

// short writes a value for a message, cut to a readable length.
func short(v *value) string {
	const max = 60
	s := string(encode(v))
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	var sb strings.Builder
	for _, r := range s {
		if unicode.IsPrint(r) {
			sb.WriteRune(r)
		} else {
			fmt.Fprintf(&sb, "\\u%04x", r)
		}
	}
	return sb.String()
}

// trimmedEmpty reports whether args mean "no arguments": nothing, only
// white space, or null.
func trimmedEmpty(args []byte) bool {
	t := bytes.TrimSpace(args)
	return len(t) == 0 || string(t) == "null"
}
