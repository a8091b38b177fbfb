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
	return &value{kind: kindString, str: s, raw: string(appendQuoted(nil, s))}
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
	v.obj = append(v.obj, member{name: name, rawName: string(appendQuoted(nil, name)), val: val})
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
	if !json.Valid(data) {
		// Let encoding/json say where and why.
		var x any
		err := json.Unmarshal(data, &x)
		if err == nil {
			err = errors.New("invalid JSON")
		}
		return parsed{}, fmt.Errorf("%w: %v", errSyntax, err)
	}
	b := builder{data: data, text: string(data)}
	v := b.value()
	out := parsed{v: v, lone: b.lone}
	if b.dup {
		out.dup, out.hasDup = findDup(v, "")
	}
	return out, nil
}

// builder turns syntactically valid JSON into a tree. It trusts
// json.Valid's verdict and never fails; on anything unexpected it returns
// null rather than panic.
type builder struct {
	data []byte
	text string // data, once, so that literals are substrings of it
	pos  int
	lone bool
	dup  bool
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

func (b *builder) value() *value {
	b.skip()
	if b.pos >= len(b.data) {
		return nullValue()
	}
	switch c := b.data[b.pos]; {
	case c == '{':
		b.pos++
		v := &value{kind: kindObject, obj: []member{}}
		var seen map[string]bool
		for {
			b.skip()
			if b.pos >= len(b.data) {
				return v
			}
			if b.data[b.pos] == '}' {
				b.pos++
				return v
			}
			if b.data[b.pos] == ',' {
				b.pos++
				continue
			}
			raw, name := b.str()
			b.skip()
			if b.pos < len(b.data) && b.data[b.pos] == ':' {
				b.pos++
			}
			val := b.value()
			// Objects are small as a rule; a map pays off only for big ones.
			if seen != nil {
				if seen[name] {
					b.dup = true
				}
				seen[name] = true
			} else {
				for i := range v.obj {
					if v.obj[i].name == name {
						b.dup = true
						break
					}
				}
				if len(v.obj) == 16 {
					seen = make(map[string]bool, 32)
					for i := range v.obj {
						seen[v.obj[i].name] = true
					}
					seen[name] = true
				}
			}
			v.obj = append(v.obj, member{name: name, rawName: raw, val: val})
		}
	case c == '[':
		b.pos++
		v := &value{kind: kindArray, arr: []*value{}}
		for {
			b.skip()
			if b.pos >= len(b.data) {
				return v
			}
			if b.data[b.pos] == ']' {
				b.pos++
				return v
			}
			if b.data[b.pos] == ',' {
				b.pos++
				continue
			}
			v.arr = append(v.arr, b.value())
		}
	case c == '"':
		raw, s := b.str()
		return &value{kind: kindString, str: s, raw: raw}
	case c == 't':
		b.pos += 4
		return boolValue(true)
	case c == 'f':
		b.pos += 5
		return boolValue(false)
	case c == 'n':
		b.pos += 4
		return nullValue()
	default:
		start := b.pos
		for b.pos < len(b.data) {
			switch b.data[b.pos] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return numValue(b.text[start:b.pos])
			}
			b.pos++
		}
		return numValue(b.text[start:b.pos])
	}
}

// str reads a string literal and returns it as written and decoded.
func (b *builder) str() (raw, s string) {
	start := b.pos
	b.pos++ // opening quote
	escaped := false
	for b.pos < len(b.data) {
		c := b.data[b.pos]
		if c == '\\' {
			escaped = true
			b.pos += 2
			continue
		}
		b.pos++
		if c == '"' {
			break
		}
	}
	end := min(b.pos, len(b.data))
	raw = b.text[start:end]
	if len(raw) < 2 {
		return `""`, ""
	}
	if !escaped {
		return raw, raw[1 : len(raw)-1]
	}
	s, lone := unescape(raw[1 : len(raw)-1])
	if lone {
		b.lone = true
	}
	return raw, s
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

// encode returns the compact JSON text of v.
func encode(v *value) []byte { return v.appendTo(make([]byte, 0, 256)) }

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
