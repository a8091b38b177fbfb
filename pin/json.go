package pin

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"
)

// maxDepth bounds the nesting of arrays and objects in a tool definition.
// The parser recurses once per level, so the bound keeps a hostile server
// from exhausting the stack; no real schema comes near it.
const maxDepth = 512

// kind is the JSON type of a value.
type kind uint8

const (
	kindNull kind = iota
	kindFalse
	kindTrue
	kindNumber
	kindString
	kindArray
	kindObject
)

// value is one parsed JSON value. The parser keeps exactly what canonical
// form needs and nothing that could differ between two encodings of the same
// meaning: numbers as their literal text, strings as their decoded code
// points, object members sorted by key.
type value struct {
	kind kind
	// text is the literal of a number, exactly as written, or the decoded
	// UTF-8 of a string. Either may alias the input.
	text []byte
	// kids are the elements of an array (with nil keys) or the members of
	// an object (sorted by key, keys unique).
	kids []member
}

// member is one name/value pair of an object.
type member struct {
	key []byte // decoded UTF-8; may alias the input
	val value
	// start and end delimit the value's text in the input, as written.
	start, end int
}

// parser is a strict JSON (RFC 8259) parser. Beyond the grammar it refuses,
// so that a reviewer and a model can never be shown two different readings
// of one document: duplicate object keys, invalid UTF-8, escaped lone
// surrogates, and nesting deeper than depthLimit.
type parser struct {
	data       []byte
	pos        int
	depth      int
	depthLimit int
	// Members and elements are collected on this stack, shared by all
	// levels, and copied out once per object or array at their final size:
	// one allocation each instead of one per growth step.
	stack []member
	// slab, when not nil, is where the copies go instead, one after the
	// other: a tree that is dropped as soon as it is digested needs no
	// allocation of its own (see scratch).
	slab []member
}

// parseObject parses data as exactly one JSON object, optionally surrounded
// by whitespace.
func parseObject(data []byte, depthLimit int) (value, error) {
	// The stack holds the members of the objects being parsed, innermost
	// last; a tool definition rarely needs more than a few dozen at once.
	p := parser{data: data, depthLimit: depthLimit, stack: make([]member, 0, min(max(len(data)/32, 4), 32))}
	return p.parse()
}

func (p *parser) parse() (value, error) {
	p.skipSpace()
	if p.pos >= len(p.data) {
		return value{}, p.errorf("empty input, want a JSON object")
	}
	if p.data[p.pos] != '{' {
		return value{}, p.errorf("found %s, want a JSON object", p.describe())
	}
	v, err := p.parseValue()
	if err != nil {
		return value{}, err
	}
	p.skipSpace()
	if p.pos != len(p.data) {
		return value{}, p.errorf("found %s after the object, want end of input", p.describe())
	}
	return v, nil
}

// syntaxError describes where and why the input is not acceptable JSON. It
// wraps ErrInvalid, and ErrDuplicateKey or ErrTooDeep where they apply.
type syntaxError struct {
	offset int
	msg    string
	kind   error // nil, ErrDuplicateKey or ErrTooDeep
}

func (e *syntaxError) Error() string {
	return fmt.Sprintf("%v: at byte offset %d: %s", ErrInvalid, e.offset, e.msg)
}

func (e *syntaxError) Unwrap() []error {
	if e.kind == nil {
		return []error{ErrInvalid}
	}
	return []error{ErrInvalid, e.kind}
}

func (p *parser) errorf(format string, args ...any) error {
	return &syntaxError{offset: p.pos, msg: fmt.Sprintf(format, args...)}
}

// describe names the byte at the current position for an error message
// without echoing attacker-controlled text to a terminal.
func (p *parser) describe() string {
	if p.pos >= len(p.data) {
		return "end of input"
	}
	c := p.data[p.pos]
	if c >= 0x20 && c < 0x7f {
		return fmt.Sprintf("%q", c)
	}
	return fmt.Sprintf("byte 0x%02x", c)
}

func (p *parser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) parseValue() (value, error) {
	p.skipSpace()
	if p.pos >= len(p.data) {
		return value{}, p.errorf("unexpected end of input, want a value")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.parseObjectBody()
	case c == '[':
		return p.parseArray()
	case c == '"':
		s, err := p.parseString()
		return value{kind: kindString, text: s}, err
	case c == '-' || (c >= '0' && c <= '9'):
		return p.parseNumber()
	case c == 't':
		return p.parseLiteral("true", kindTrue)
	case c == 'f':
		return p.parseLiteral("false", kindFalse)
	case c == 'n':
		return p.parseLiteral("null", kindNull)
	default:
		return value{}, p.errorf("found %s, want a value", p.describe())
	}
}

func (p *parser) parseLiteral(lit string, k kind) (value, error) {
	if !bytes.HasPrefix(p.data[p.pos:], []byte(lit)) {
		return value{}, p.errorf("invalid literal, want %s", lit)
	}
	p.pos += len(lit)
	return value{kind: k}, nil
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > p.depthLimit {
		return &syntaxError{offset: p.pos, msg: fmt.Sprintf("nesting deeper than %d levels", p.depthLimit), kind: ErrTooDeep}
	}
	return nil
}

func (p *parser) parseObjectBody() (value, error) {
	if err := p.enter(); err != nil {
		return value{}, err
	}
	start := p.pos
	p.pos++ // '{'
	base := len(p.stack)
	defer func() { p.stack = p.stack[:base] }()
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		p.depth--
		return value{kind: kindObject}, nil
	}
	for {
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return value{}, p.errorf("found %s, want an object key", p.describe())
		}
		key, err := p.parseString()
		if err != nil {
			return value{}, err
		}
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return value{}, p.errorf("found %s, want ':' after an object key", p.describe())
		}
		p.pos++
		p.skipSpace()
		valStart := p.pos
		val, err := p.parseValue()
		if err != nil {
			return value{}, err
		}
		p.stack = append(p.stack, member{key: key, val: val, start: valStart, end: p.pos})
		p.skipSpace()
		if p.pos >= len(p.data) {
			return value{}, p.errorf("unexpected end of input in an object")
		}
		if p.data[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.data[p.pos] == '}' {
			p.pos++
			break
		}
		return value{}, p.errorf("found %s, want ',' or '}' in an object", p.describe())
	}
	// Keys are compared as decoded code points, so "a" and "\u0061" are the
	// same key: sorting puts duplicates next to each other.
	members := sortedMembers(p.alloc(len(p.stack)-base), p.stack[base:])
	for i := 1; i < len(members); i++ {
		if bytes.Equal(members[i-1].key, members[i].key) {
			return value{}, &syntaxError{
				offset: start,
				msg:    fmt.Sprintf("the object starting here has the key %s more than once", quoteKey(members[i].key)),
				kind:   ErrDuplicateKey,
			}
		}
	}
	p.depth--
	return value{kind: kindObject, kids: members}, nil
}

// alloc returns room for n members of a finished object or array.
func (p *parser) alloc(n int) []member {
	if p.slab == nil {
		return make([]member, n)
	}
	if cap(p.slab)-len(p.slab) < n {
		// The full slab stays with the tree that uses it.
		p.slab = make([]member, 0, max(2*cap(p.slab), n))
	}
	end := len(p.slab) + n
	out := p.slab[len(p.slab):end:end]
	p.slab = p.slab[:end]
	return out
}

// sortedMembers copies an object's members into out sorted by key and
// returns out. The members are large, so it sorts their indexes and copies
// each member once, into place; objects that arrive sorted (as maps
// marshal) are copied as they are.
func sortedMembers(out, ms []member) []member {
	sorted := true
	for i := 1; i < len(ms); i++ {
		if bytes.Compare(ms[i-1].key, ms[i].key) > 0 {
			sorted = false
			break
		}
	}
	if sorted {
		copy(out, ms)
		return out
	}
	var small [32]int
	idx := small[:0]
	if len(ms) > len(small) {
		idx = make([]int, 0, len(ms))
	}
	for i := range ms {
		idx = append(idx, i)
	}
	slices.SortFunc(idx, func(a, b int) int { return bytes.Compare(ms[a].key, ms[b].key) })
	for i, j := range idx {
		out[i] = ms[j]
	}
	return out
}

// quoteKey quotes an attacker-controlled key for an error message: Go
// quoting escapes control and format characters, and the length is bounded.
func quoteKey(key []byte) string {
	const limit = 64
	if len(key) > limit {
		cut := limit
		for cut > 0 && !utf8.RuneStart(key[cut]) {
			cut--
		}
		return fmt.Sprintf("%+q...", key[:cut])
	}
	return fmt.Sprintf("%+q", key)
}

func (p *parser) parseArray() (value, error) {
	if err := p.enter(); err != nil {
		return value{}, err
	}
	p.pos++ // '['
	base := len(p.stack)
	defer func() { p.stack = p.stack[:base] }()
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		p.depth--
		return value{kind: kindArray}, nil
	}
	for {
		p.skipSpace()
		start := p.pos
		v, err := p.parseValue()
		if err != nil {
			return value{}, err
		}
		p.stack = append(p.stack, member{val: v, start: start, end: p.pos})
		p.skipSpace()
		if p.pos >= len(p.data) {
			return value{}, p.errorf("unexpected end of input in an array")
		}
		if p.data[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.data[p.pos] == ']' {
			p.pos++
			break
		}
		return value{}, p.errorf("found %s, want ',' or ']' in an array", p.describe())
	}
	p.depth--
	kids := p.alloc(len(p.stack) - base)
	copy(kids, p.stack[base:])
	return value{kind: kindArray, kids: kids}, nil
}

// parseNumber checks the RFC 8259 number grammar and keeps the literal as
// written: converting through float64 would merge distinct integers above
// 2^53, and any other conversion would make "what the server sent" and
// "what was digested" differ.
func (p *parser) parseNumber() (value, error) {
	start := p.pos
	d := p.data
	if d[p.pos] == '-' {
		p.pos++
	}
	switch {
	case p.pos < len(d) && d[p.pos] == '0':
		p.pos++
	case p.pos < len(d) && d[p.pos] >= '1' && d[p.pos] <= '9':
		p.skipDigits()
	default:
		return value{}, p.errorf("invalid number: found %s, want a digit", p.describe())
	}
	if p.pos < len(d) && d[p.pos] == '.' {
		p.pos++
		if p.skipDigits() == 0 {
			return value{}, p.errorf("invalid number: found %s, want a digit after '.'", p.describe())
		}
	}
	if p.pos < len(d) && (d[p.pos] == 'e' || d[p.pos] == 'E') {
		p.pos++
		if p.pos < len(d) && (d[p.pos] == '+' || d[p.pos] == '-') {
			p.pos++
		}
		if p.skipDigits() == 0 {
			return value{}, p.errorf("invalid number: found %s, want a digit in the exponent", p.describe())
		}
	}
	return value{kind: kindNumber, text: d[start:p.pos]}, nil
}

func (p *parser) skipDigits() int {
	start := p.pos
	for p.pos < len(p.data) && p.data[p.pos] >= '0' && p.data[p.pos] <= '9' {
		p.pos++
	}
	return p.pos - start
}

// parseString parses a string at p.pos (which holds the opening quote) and
// returns its decoded UTF-8. A string without escapes is returned as a
// sub-slice of the input, so the common case allocates nothing.
func (p *parser) parseString() ([]byte, error) {
	p.pos++ // opening quote
	start := p.pos
	d := p.data
	// Fast path: scan to the closing quote while nothing needs decoding.
	for p.pos < len(d) {
		// Printable ASCII other than the quote and the backslash, the bulk
		// of every definition, needs no decision below.
		for p.pos < len(d) {
			if c := d[p.pos]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' {
				break
			}
			p.pos++
		}
		if p.pos >= len(d) {
			break
		}
		c := d[p.pos]
		switch {
		case c == '"':
			s := d[start:p.pos]
			p.pos++
			return s, nil
		case c == '\\':
			return p.parseStringSlow(start)
		case c < 0x20:
			return nil, p.errorf("unescaped control character 0x%02x in a string", c)
		case c < utf8.RuneSelf:
			p.pos++
		default:
			r, size := utf8.DecodeRune(d[p.pos:])
			if r == utf8.RuneError && size == 1 {
				return nil, p.errorf("invalid UTF-8 in a string")
			}
			p.pos += size
		}
	}
	return nil, p.errorf("unexpected end of input in a string")
}

// parseStringSlow decodes a string that contains escapes; start is the
// offset just after the opening quote, p.pos is at the first backslash.
func (p *parser) parseStringSlow(start int) ([]byte, error) {
	d := p.data
	out := make([]byte, 0, p.pos-start+16)
	out = append(out, d[start:p.pos]...)
	for p.pos < len(d) {
		c := d[p.pos]
		switch {
		case c == '"':
			p.pos++
			return out, nil
		case c == '\\':
			r, err := p.parseEscape()
			if err != nil {
				return nil, err
			}
			out = utf8.AppendRune(out, r)
		case c < 0x20:
			return nil, p.errorf("unescaped control character 0x%02x in a string", c)
		case c < utf8.RuneSelf:
			out = append(out, c)
			p.pos++
		default:
			r, size := utf8.DecodeRune(d[p.pos:])
			if r == utf8.RuneError && size == 1 {
				return nil, p.errorf("invalid UTF-8 in a string")
			}
			out = append(out, d[p.pos:p.pos+size]...)
			p.pos += size
		}
	}
	return nil, p.errorf("unexpected end of input in a string")
}

// parseEscape decodes one escape sequence at p.pos (the backslash). A \u
// escape of a UTF-16 surrogate must be a high surrogate followed at once by
// an escaped low surrogate: a lone half is not a code point, and decoders
// disagree on what to make of it (U+FFFD, an error, or raw bytes), which is
// exactly the kind of disagreement an attacker uses.
func (p *parser) parseEscape() (rune, error) {
	d := p.data
	if p.pos+1 >= len(d) {
		p.pos++
		return 0, p.errorf("unexpected end of input in an escape")
	}
	c := d[p.pos+1]
	p.pos += 2
	switch c {
	case '"', '\\', '/':
		return rune(c), nil
	case 'b':
		return '\b', nil
	case 'f':
		return '\f', nil
	case 'n':
		return '\n', nil
	case 'r':
		return '\r', nil
	case 't':
		return '\t', nil
	case 'u':
	default:
		p.pos--
		return 0, p.errorf("invalid escape character %s", p.describe())
	}
	r, err := p.hex4()
	if err != nil {
		return 0, err
	}
	switch {
	case r >= 0xDC00 && r <= 0xDFFF:
		return 0, p.errorf("escaped lone low surrogate \\u%04X", r)
	case r >= 0xD800 && r <= 0xDBFF:
		if p.pos+1 >= len(d) || d[p.pos] != '\\' || d[p.pos+1] != 'u' {
			return 0, p.errorf("escaped high surrogate \\u%04X not followed by a low surrogate", r)
		}
		p.pos += 2
		lo, err := p.hex4()
		if err != nil {
			return 0, err
		}
		if lo < 0xDC00 || lo > 0xDFFF {
			return 0, p.errorf("escaped high surrogate \\u%04X followed by \\u%04X, not a low surrogate", r, lo)
		}
		return 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00), nil
	}
	return r, nil
}

func (p *parser) hex4() (rune, error) {
	if p.pos+4 > len(p.data) {
		return 0, p.errorf("unexpected end of input in a \\u escape")
	}
	var r rune
	for i := range 4 {
		c := p.data[p.pos+i]
		var n byte
		switch {
		case c >= '0' && c <= '9':
			n = c - '0'
		case c >= 'a' && c <= 'f':
			n = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			n = c - 'A' + 10
		default:
			p.pos += i
			return 0, p.errorf("invalid hex digit %s in a \\u escape", p.describe())
		}
		r = r<<4 | rune(n)
	}
	p.pos += 4
	return r, nil
}

// appendCanonical appends the canonical encoding of v: no insignificant
// whitespace, object keys in byte order of their UTF-8 (which is code point
// order), numbers as written, strings escaped by appendCanonicalString.
func appendCanonical(b []byte, v *value) []byte {
	switch v.kind {
	case kindNull:
		return append(b, "null"...)
	case kindFalse:
		return append(b, "false"...)
	case kindTrue:
		return append(b, "true"...)
	case kindNumber:
		return append(b, v.text...)
	case kindString:
		return appendCanonicalString(b, v.text)
	case kindArray:
		b = append(b, '[')
		for i := range v.kids {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendCanonical(b, &v.kids[i].val)
		}
		return append(b, ']')
	case kindObject:
		b = append(b, '{')
		for i := range v.kids {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendCanonicalString(b, v.kids[i].key)
			b = append(b, ':')
			b = appendCanonical(b, &v.kids[i].val)
		}
		return append(b, '}')
	}
	panic("pin: unknown JSON kind") // unreachable: the parser makes only the kinds above
}

const hexDigits = "0123456789abcdef"

// appendCanonicalString escapes only what JSON requires: the quote, the
// backslash, and U+0000..U+001F (as \b \t \n \f \r or \u00xx). Everything
// else, including '<', '>', '&', U+2028 and U+2029, is written as its own
// UTF-8, so one sequence of code points has exactly one encoding.
func appendCanonicalString(b []byte, s []byte) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendDisplay appends v pretty-printed for a person: two-space indents,
// keys sorted, numbers as written, strings by appendDisplayString. The text
// keeps the real code points of strings (control characters included); it
// must go through the display escaping of Format before it reaches a
// terminal.
func appendDisplay(b []byte, v *value, indent int) []byte {
	switch v.kind {
	case kindArray:
		if len(v.kids) == 0 {
			return append(b, "[]"...)
		}
		b = append(b, '[')
		for i := range v.kids {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendNewline(b, indent+1)
			b = appendDisplay(b, &v.kids[i].val, indent+1)
		}
		b = appendNewline(b, indent)
		return append(b, ']')
	case kindObject:
		if len(v.kids) == 0 {
			return append(b, "{}"...)
		}
		b = append(b, '{')
		for i := range v.kids {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendNewline(b, indent+1)
			b = appendDisplayString(b, v.kids[i].key, true)
			b = append(b, ':', ' ')
			b = appendDisplay(b, &v.kids[i].val, indent+1)
		}
		b = appendNewline(b, indent)
		return append(b, '}')
	case kindString:
		return appendDisplayString(b, v.text, true)
	default:
		return appendCanonical(b, v)
	}
}

func appendNewline(b []byte, indent int) []byte {
	b = append(b, '\n')
	for range indent {
		b = append(b, ' ', ' ')
	}
	return b
}

// appendDisplayString quotes s for the diff display. Only the quote and the
// backslash are escaped here, so that every backslash in display text starts
// an escape and a quote inside a string cannot pass for the end of it. A
// newline is written as the two characters \n and, if breakLines, followed
// by a real line break, so that the line diff follows the lines of a long
// description; a line ending in \n is therefore always inside a string.
// Every other code point is kept as is, for Format's escaping to show.
func appendDisplayString(b []byte, s []byte, breakLines bool) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '"' && c != '\\' && c != '\n' {
			continue
		}
		b = append(b, s[start:i]...)
		b = append(b, '\\')
		if c == '\n' {
			b = append(b, 'n')
			if breakLines {
				b = append(b, '\n')
			}
		} else {
			b = append(b, c)
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// errString is a value's error text with the ErrInvalid prefix removed, for
// contexts that add their own prefix.
func errString(err error) string {
	var se *syntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("at byte offset %d: %s", se.offset, se.msg)
	}
	return err.Error()
}
