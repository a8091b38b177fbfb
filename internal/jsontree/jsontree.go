// Package jsontree is the one JSON layer of mcphost: it parses JSON text
// into a tree that keeps every literal as it was written, and writes trees
// back out.
//
// Two packages read what servers and models send and must never be shown
// two readings of one text: pin digests tool definitions and reads its own
// files, schema closes input schemas and checks arguments. Both parse with
// Parse, so both refuse the same texts, the same way:
//
//   - anything that is not one JSON text (RFC 8259), including invalid
//     UTF-8 anywhere in it (§8.1);
//   - a name that repeats an earlier name of the same object, compared
//     after decoding escapes ("a" and "\u0061" are one name): parsers
//     disagree on which one counts, so a reviewer and a model could read
//     different values;
//   - an escaped lone UTF-16 surrogate (\ud800 alone): it is no code point,
//     and decoders disagree on what to make of it (U+FFFD, an error, raw
//     bytes);
//   - more nested arrays and objects than the caller's depth bound: the
//     parser recurses once per level.
//
// Each refusal is an *Error that wraps exactly one of ErrSyntax,
// ErrDuplicateKey, ErrLoneSurrogate and ErrTooDeep. A text with more than
// one is refused for a syntax error or excess depth first (the parser
// reads the whole text before it refuses a repeat or a lone surrogate),
// and otherwise for the first of the others it meets (a repeat at the end
// of the repeated member's value).
//
// A tree keeps numbers as their literal (converting through float64 would
// merge distinct integers above 2^53), strings both decoded and as
// written, and object members in document order. Append writes a tree back
// with every literal as it was read, so what mcphost forwards repeats the
// sender's bytes; AppendMinimal writes every string with the minimal
// escaping, which on a tree with sorted members is pin's canonical form
// (internal/canonical sorts); AppendQuoted is the one way this module
// writes a string it made itself.
//
// A Parser reuses its memory from one text to the next; a caller that
// drops each tree before the next parse (a digest, a check of arguments)
// pools Parsers, and one that keeps trees uses the function Parse.
package jsontree

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A Kind is the JSON type of a value.
type Kind uint8

// The kinds of JSON values.
const (
	Null Kind = iota
	Bool
	Number
	String
	Array
	Object
)

// String returns the kind's name as JSON Schema spells the type: "null",
// "boolean", "number", "string", "array" or "object".
func (k Kind) String() string {
	switch k {
	case Null:
		return "null"
	case Bool:
		return "boolean"
	case Number:
		return "number"
	case String:
		return "string"
	case Array:
		return "array"
	default:
		return "object"
	}
}

// A Value is one JSON value. Parse fills in every field but Src; a program
// may build and change trees by setting the fields (a value it makes needs
// only Kind and the field of its kind: Append quotes Str when Raw is
// empty).
type Value struct {
	Kind Kind
	Bool bool // a boolean's value
	// Off is the byte offset in the parsed text where the value starts.
	// (Parse takes texts of less than 2 GiB, so that it fits the room
	// the two fields above leave.)
	Off int32
	// Str is a string's decoded text (valid UTF-8, no lone surrogates).
	Str string
	// Raw is the value's text exactly as written: a number's literal, a
	// string's literal with its quotes and escapes, true, false or null,
	// and for arrays and objects everything from the opening to the
	// closing bracket. For arrays and objects it records the input only:
	// Append writes them from Arr and Obj, which a program may have
	// changed since.
	Raw string
	Arr []*Value // an array's elements
	Obj []Member // an object's members, in document order, names unique
	// Src is the caller's: the parser leaves it empty and no writer reads
	// it. (Package schema keeps there the JSON pointer of the schema a
	// node of a strict form was made from.)
	Src string
}

// A Member is one name/value pair of an object.
type Member struct {
	Name    string // decoded
	RawName string // the name's literal, quotes included; "" for a member a program added
	Val     *Value
}

// Get returns the value of the member named name, or nil if v is not an
// object or has no such member.
func (v *Value) Get(name string) *Value {
	if v == nil || v.Kind != Object {
		return nil
	}
	for i := range v.Obj {
		if v.Obj[i].Name == name {
			return v.Obj[i].Val
		}
	}
	return nil
}

// Members returns v.Obj if v is an object, and nil otherwise (v may be
// nil).
func (v *Value) Members() []Member {
	if v == nil || v.Kind != Object {
		return nil
	}
	return v.Obj
}

// Elements returns v.Arr if v is an array, and nil otherwise (v may be
// nil).
func (v *Value) Elements() []*Value {
	if v == nil || v.Kind != Array {
		return nil
	}
	return v.Arr
}

// Has reports whether v is an object with a member named name.
func (v *Value) Has(name string) bool { return v.Get(name) != nil }

// Index returns the index in v.Obj of the member named name, or -1.
func (v *Value) Index(name string) int {
	for i := range v.Obj {
		if v.Obj[i].Name == name {
			return i
		}
	}
	return -1
}

// Set replaces the value of the member named name, or appends a member.
func (v *Value) Set(name string, val *Value) {
	if i := v.Index(name); i >= 0 {
		v.Obj[i].Val = val
		return
	}
	v.Obj = append(v.Obj, Member{Name: name, Val: val})
}

// Del removes the member named name, if there is one. It never writes
// into the array that v.Obj shares with another tree.
func (v *Value) Del(name string) {
	if i := v.Index(name); i >= 0 {
		v.Obj = append(v.Obj[:i:i], v.Obj[i+1:]...)
	}
}

// The kinds of refusal. Every error Parse returns is an *Error wrapping
// exactly one of them.
var (
	// ErrSyntax: the text is not one JSON text (RFC 8259), or not UTF-8.
	ErrSyntax = errors.New("not valid JSON")
	// ErrDuplicateKey: an object has a name twice, after decoding escapes.
	ErrDuplicateKey = errors.New("duplicate object key")
	// ErrLoneSurrogate: a \u escape is half of a UTF-16 surrogate pair.
	ErrLoneSurrogate = errors.New("lone surrogate escape")
	// ErrTooDeep: arrays and objects nest deeper than the bound.
	ErrTooDeep = errors.New("JSON nested too deeply")
)

// An Error says where and why Parse refused a text. Its message never
// echoes the text: a name in it is quoted with Go escapes and cut short,
// so what a hostile sender wrote cannot reach a terminal as it is.
type Error struct {
	// Offset is the byte offset in the text where the problem was found.
	Offset int
	// Pointer is the JSON pointer (RFC 6901) of the member whose name
	// repeats an earlier one, for ErrDuplicateKey; "" otherwise.
	Pointer string
	// Err is the kind: ErrSyntax, ErrDuplicateKey, ErrLoneSurrogate or
	// ErrTooDeep.
	Err error
	msg string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%v at byte offset %d: %s", e.Err, e.Offset, e.msg)
}

// Unwrap returns the kind.
func (e *Error) Unwrap() error { return e.Err }

// Parse parses data as one JSON text, optionally surrounded by white
// space, with at most maxDepth arrays and objects nested in each other (a
// bare scalar is depth 0, [] is 1). The tree's strings are substrings of
// one copy of data, made once. It returns an *Error for every text it
// refuses (see the package documentation).
func Parse(data []byte, maxDepth int) (*Value, error) {
	var p Parser
	return p.Parse(data, maxDepth)
}

// A Parser is Parse with memory that outlives one text: the tree it
// returns is built in blocks the Parser keeps, and the next call of Parse
// builds over them. A caller that parses many texts and drops each tree
// before the next (a digest, say) reuses one Parser; one that keeps trees
// uses a new Parser, or the function Parse, for each. The zero Parser is
// ready to use; a Parser is not safe for concurrent use.
type Parser struct {
	data  []byte
	text  string // data, once, so that literals are substrings of it
	pos   int
	max   int
	err   *Error
	soft  *Error                          // the first repeated name or lone surrogate, found on the way
	left  int                             // at most this many values are still to come
	slab  []Value                         // values handed out by alloc
	mslab []Member                        // room for the members of finished objects
	eslab []*Value                        // room for the elements of finished arrays
	mems  []Member                        // members of the objects being built, innermost last
	elems []*Value                        // elements of the arrays being built, innermost last
	used  struct{ vals, mems, elems int } // how many the last text had
}

// Parse parses data as the function Parse does, building over the memory
// of the tree it returned last, which must no longer be used.
func (p *Parser) Parse(data []byte, maxDepth int) (*Value, error) {
	if len(data) > math.MaxInt32 {
		return nil, &Error{Offset: math.MaxInt32, Err: ErrSyntax, msg: "a text of 2 GiB or more"}
	}
	if !utf8.Valid(data) {
		i := 0
		for i < len(data) {
			r, size := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && size == 1 {
				break
			}
			i += size
		}
		return nil, &Error{Offset: i, Err: ErrSyntax, msg: "invalid UTF-8 (JSON text must be UTF-8)"}
	}
	// Every value but the root follows a colon, a comma or an opening
	// bracket, so counting those bounds the values to allocate (strings
	// that hold them make it an overestimate, never an under one).
	// Every value but the root follows a colon, a comma or an opening
	// bracket, so counting those bounds the values to allocate; colons
	// bound the members, brackets and commas the elements (strings that
	// hold them make each an overestimate, never an under one).
	colons, commas, brackets := bytes.Count(data, []byte{':'}), bytes.Count(data, []byte{','}), bytes.Count(data, []byte{'['})
	left := 1 + colons + commas + brackets
	// Schemas and definitions run at about a value per dozen bytes: the
	// first slab is sized for that, later ones (rarely needed) for what
	// may be left. A Parser used before starts with room for as many
	// values, members and elements as its last text had.
	used := p.used // at most maxKept each (see below)
	*p = Parser{
		data: data, text: string(data), max: maxDepth, left: left,
		slab:  reuse(p.slab, max(used.vals, min(max(min(len(data)/12, left), 4), 256))),
		mslab: reuse(p.mslab, max(used.mems, min(colons, 256))),
		eslab: reuse(p.eslab, max(used.elems, min(commas+brackets, 256, 8*brackets))),
		mems:  p.mems[:0], elems: p.elems[:0],
	}
	v := p.value(0)
	if v != nil {
		p.skip()
		if p.pos != len(data) {
			v = nil
			p.fail("found %s after the value, want the end of the text", p.describe())
		}
	}
	// Nothing may keep the text alive from the Parser: the tree holds
	// what it needs of it. And what a huge text needed is not kept, nor
	// asked for again, for the next one.
	p.data, p.text = nil, ""
	p.mems, p.elems = trim(p.mems), trim(p.elems)
	if p.used.vals > maxKept {
		p.slab, p.used.vals = nil, 0
	}
	if p.used.mems > maxKept {
		p.mslab, p.used.mems = nil, 0
	}
	if p.used.elems > maxKept {
		p.eslab, p.used.elems = nil, 0
	}
	switch {
	case v == nil:
		return nil, p.err
	case p.soft != nil && p.soft.Err == ErrDuplicateKey:
		// The first repeat in document order, and the object it is in.
		var path []string
		obj, name := firstRepeat(v, &path)
		if obj != nil {
			var ptr strings.Builder
			for i := len(path) - 1; i >= 0; i-- {
				ptr.WriteByte('/')
				ptr.WriteString(EscapeToken(path[i]))
			}
			p.soft.Offset, p.soft.Pointer = int(obj.Off), ptr.String()
		}
		p.soft.msg = fmt.Sprintf("the object starting here has the name %s more than once", QuoteName(name))
		return nil, p.soft
	case p.soft != nil:
		return nil, p.soft
	}
	return v, nil
}

// trim empties a build stack, clearing what it still holds (carve cleared
// what it took; a refusal leaves the rest), and drops it if it grew past
// maxKept.
func trim[T any](s []T) []T {
	if cap(s) > maxKept {
		return nil
	}
	clear(s)
	return s[:0]
}

// firstRepeat finds, in document order, the first member under v whose
// name repeats an earlier one of its object, and returns that object and
// the name; *path gets the reference tokens of the member's pointer,
// innermost first. It builds no pointer on the way: a hostile text may
// nest long names deeply above a wide object, and a pointer per member
// visited would cost depth times width. v has a repeat.
func firstRepeat(v *Value, path *[]string) (*Value, string) {
	switch v.Kind {
	case Object:
		seen := make(map[string]bool, len(v.Obj))
		for _, m := range v.Obj {
			if seen[m.Name] {
				*path = append(*path, m.Name)
				return v, m.Name
			}
			seen[m.Name] = true
			if obj, name := firstRepeat(m.Val, path); obj != nil {
				*path = append(*path, m.Name)
				return obj, name
			}
		}
	case Array:
		for i, e := range v.Arr {
			if obj, name := firstRepeat(e, path); obj != nil {
				*path = append(*path, strconv.Itoa(i))
				return obj, name
			}
		}
	}
	return nil, ""
}

// maxKept bounds the values, members and elements a Parser keeps room for
// after a text, so that one huge text does not pin its memory.
const maxKept = 4096

// reuse returns s emptied, with what it held cleared so that it keeps no
// earlier tree alive, or a new slice if s has room for fewer than n.
func reuse[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, 0, n)
	}
	clear(s)
	return s[:0]
}

func (p *Parser) fail(format string, args ...any) {
	p.failKind(ErrSyntax, format, args...)
}

func (p *Parser) failKind(kind error, format string, args ...any) {
	if p.err == nil {
		p.err = &Error{Offset: p.pos, Err: kind, msg: fmt.Sprintf(format, args...)}
	}
}

// describe names the byte at the current position for an error message
// without echoing the text.
func (p *Parser) describe() string {
	if p.pos >= len(p.data) {
		return "the end of the text"
	}
	c := p.data[p.pos]
	if c >= 0x20 && c < 0x7f {
		return fmt.Sprintf("%q", c)
	}
	return fmt.Sprintf("byte 0x%02x", c)
}

// alloc returns a new value of kind k, starting at off, from the current
// slab.
func (p *Parser) alloc(k Kind, off int) *Value {
	if len(p.slab) == cap(p.slab) {
		// Capped so that a large text does not hold one huge block: a
		// tree is often garbage soon, and small slabs go with it sooner.
		p.slab = make([]Value, 0, min(max(p.left, 1), 256))
	}
	p.left--
	p.used.vals++
	p.slab = p.slab[:len(p.slab)+1]
	v := &p.slab[len(p.slab)-1]
	v.Kind, v.Off = k, int32(off)
	return v
}

// carve moves what *stack gathered since base (the members of an object,
// or the elements of an array, just read) into room of exactly their
// length, cut from *slab (a new one when it has too little left), and
// returns it: appending to the result never writes over another object's
// members or array's elements.
func carve[T any](slab *[]T, used *int, stack *[]T, base int) []T {
	xs := (*stack)[base:]
	n := len(xs)
	if n == 0 {
		return nil
	}
	*used += n
	if cap(*slab)-len(*slab) < n {
		*slab = make([]T, 0, max(min(2*cap(*slab), 1024), n))
	}
	end := len(*slab) + n
	out := (*slab)[len(*slab):end:end]
	*slab = (*slab)[:end]
	copy(out, xs)
	clear(xs)
	*stack = (*stack)[:base]
	return out
}

func (p *Parser) skip() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// next skips white space and returns the byte there, or 0 at the end (a
// NUL byte, never valid where next is asked, reads the same).
func (p *Parser) next() byte {
	p.skip()
	if p.pos >= len(p.data) {
		return 0
	}
	return p.data[p.pos]
}

// value parses the value at p.pos, inside depth arrays and objects. It
// returns nil, with p.err set, if the text there is refused.
func (p *Parser) value(depth int) *Value {
	switch c := p.next(); c {
	case '{':
		return p.object(depth)
	case '[':
		return p.array(depth)
	case '"':
		start := p.pos
		raw, s, ok := p.str()
		if !ok {
			return nil
		}
		v := p.alloc(String, start)
		v.Str, v.Raw = s, raw
		return v
	case 't':
		return p.literal("true", Bool, true)
	case 'f':
		return p.literal("false", Bool, false)
	case 'n':
		return p.literal("null", Null, false)
	default:
		return p.number()
	}
}

func (p *Parser) literal(lit string, k Kind, b bool) *Value {
	if !strings.HasPrefix(p.text[p.pos:], lit) {
		p.fail("found %s, want a value", p.describe())
		return nil
	}
	v := p.alloc(k, p.pos)
	v.Bool, v.Raw = b, p.text[p.pos:p.pos+len(lit)]
	p.pos += len(lit)
	return v
}

func (p *Parser) object(depth int) *Value {
	start, empty, ok := p.open(depth, '}')
	if !ok {
		return nil
	}
	base := len(p.mems)
	var seen map[string]bool
	for more := !empty; more; {
		if p.next() != '"' {
			p.fail("found %s, want a member name", p.describe())
			return nil
		}
		raw, name, ok := p.str()
		if !ok {
			return nil
		}
		if p.next() != ':' {
			p.fail("found %s, want ':' after a member name", p.describe())
			return nil
		}
		p.pos++
		val := p.value(depth + 1)
		if val == nil {
			return nil
		}
		// Objects are small as a rule; a map pays off only for big
		// ones.
		dup := false
		if seen != nil {
			dup = seen[name]
			seen[name] = true
		} else {
			mine := p.mems[base:]
			for i := range mine {
				if mine[i].Name == name {
					dup = true
					break
				}
			}
			if len(mine) == 16 {
				seen = make(map[string]bool, 32)
				for i := range mine {
					seen[mine[i].Name] = true
				}
				seen[name] = true
			}
		}
		if dup && p.soft == nil {
			// Not refused yet: the rest of the text may not even be
			// JSON, which is the refusal to report then.
			p.soft = &Error{Err: ErrDuplicateKey}
		}
		p.mems = append(p.mems, Member{Name: name, RawName: raw, Val: val})
		if more, ok = p.more('}', "an object"); !ok {
			return nil
		}
	}
	v := p.alloc(Object, start)
	v.Raw = p.text[start:p.pos]
	v.Obj = carve(&p.mslab, &p.used.mems, &p.mems, base)
	return v
}

func (p *Parser) array(depth int) *Value {
	start, empty, ok := p.open(depth, ']')
	if !ok {
		return nil
	}
	base := len(p.elems)
	for more := !empty; more; {
		e := p.value(depth + 1)
		if e == nil {
			return nil
		}
		p.elems = append(p.elems, e)
		if more, ok = p.more(']', "an array"); !ok {
			return nil
		}
	}
	v := p.alloc(Array, start)
	v.Raw = p.text[start:p.pos]
	v.Arr = carve(&p.eslab, &p.used.elems, &p.elems, base)
	return v
}

// open enters the array or object whose opening bracket is at p.pos, at
// depth, and reports whether its closing bracket close follows at once.
// ok is false, with p.err set, when that is deeper than the bound.
func (p *Parser) open(depth int, close byte) (start int, empty, ok bool) {
	start = p.pos
	if depth == p.max {
		p.failKind(ErrTooDeep, "more than %d nested arrays and objects", p.max)
		return start, false, false
	}
	p.pos++
	if p.next() == close {
		p.pos++
		return start, true, true
	}
	return start, false, true
}

// more reads what follows a member or an element: a comma (more is true)
// or the closing bracket close (more is false). ok is false, with p.err
// set, for anything else.
func (p *Parser) more(close byte, in string) (more, ok bool) {
	switch p.next() {
	case ',':
		p.pos++
		return true, true
	case close:
		p.pos++
		return false, true
	}
	p.fail("found %s, want ',' or '%c' in %s", p.describe(), close, in)
	return false, false
}

// QuoteName quotes a name a sender chose for a message: Go quoting
// escapes control and format characters, and more than 64 bytes are cut
// (at a character boundary) and marked with "...".
func QuoteName(name string) string {
	const limit = 64
	if len(name) > limit {
		cut := limit
		for cut > 0 && !utf8.RuneStart(name[cut]) {
			cut--
		}
		return fmt.Sprintf("%+q...", name[:cut])
	}
	return fmt.Sprintf("%+q", name)
}

// number reads a number literal at p.pos (RFC 8259 §6).
func (p *Parser) number() *Value {
	d, i := p.data, p.pos
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
		p.pos = i
		p.fail("found %s, want a value", p.describe())
		return nil
	}
	if i < len(d) && d[i] == '.' {
		i++
		if !digits() {
			p.pos = i
			p.fail("found %s, want a digit after '.'", p.describe())
			return nil
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if !digits() {
			p.pos = i
			p.fail("found %s, want a digit in the exponent", p.describe())
			return nil
		}
	}
	v := p.alloc(Number, p.pos)
	v.Raw = p.text[p.pos:i]
	p.pos = i
	return v
}

// str reads a string literal at p.pos (its opening quote) and returns it
// as written and decoded; ok is false, with p.err set, if it is refused.
// The text is valid UTF-8 (Parse checked it), so only escapes and control
// characters need a look.
func (p *Parser) str() (raw, s string, ok bool) {
	d := p.data
	start, i := p.pos, p.pos+1
	escaped := false
	for {
		// Most of a string is bytes that stand for themselves.
		for i < len(d) && d[i] >= 0x20 && d[i] != '"' && d[i] != '\\' {
			i++
		}
		if i >= len(d) {
			p.pos = i
			p.fail("found the end of the text in a string")
			return "", "", false
		}
		if d[i] < 0x20 {
			p.pos = i
			p.fail("found the control character 0x%02x in a string, want it escaped", d[i])
			return "", "", false
		}
		if d[i] == '"' {
			i++
			break
		}
		escaped = true
		if i+1 >= len(d) {
			p.pos = i + 1
			p.fail("found the end of the text in an escape")
			return "", "", false
		}
		switch d[i+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i += 2
		case 'u':
			if i+6 > len(d) || !isHex4(d[i+2:i+6]) {
				p.pos = i
				p.fail("found a \\u escape without four hex digits")
				return "", "", false
			}
			i += 6
		default:
			p.pos = i + 1
			p.fail("found the escape character %s, want one of \"\\/bfnrtu", p.describe())
			return "", "", false
		}
	}
	raw = p.text[start:i]
	if !escaped {
		p.pos = i
		return raw, raw[1 : len(raw)-1], true
	}
	s, bad := unescape(raw[1 : len(raw)-1])
	if bad >= 0 && p.soft == nil {
		p.soft = &Error{Offset: start + 1 + bad, Err: ErrLoneSurrogate,
			msg: fmt.Sprintf("the escape %s is half of a UTF-16 surrogate pair, not a character", raw[1+bad:1+bad+6])}
	}
	p.pos = i
	return raw, s, true
}

func isHex4(b []byte) bool {
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// unescape decodes the body of a JSON string literal whose escapes are
// well formed. It returns the offset in s of the first escape that is a
// lone surrogate half, or -1; such a half is decoded as U+FFFD.
func unescape(s string) (string, int) {
	var sb strings.Builder
	sb.Grow(len(s))
	bad := -1
	lone := func(i int) {
		if bad < 0 {
			bad = i
		}
		sb.WriteRune(utf8.RuneError)
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c != '\\' {
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
			r := hex4(s[i+2 : i+6])
			if 0xD800 <= r && r <= 0xDBFF && i+12 <= len(s) && s[i+6] == '\\' && s[i+7] == 'u' {
				if lo := hex4(s[i+8 : i+12]); 0xDC00 <= lo && lo <= 0xDFFF {
					sb.WriteRune(0x10000 + (r-0xD800)<<10 + (lo - 0xDC00))
					i += 12
					continue
				}
			}
			if 0xD800 <= r && r <= 0xDFFF {
				lone(i)
			} else {
				sb.WriteRune(r)
			}
			i += 6
			continue
		default: // '"', '\\', '/'
			sb.WriteByte(e)
		}
		i += 2
	}
	return sb.String(), bad
}

// hex4 decodes four hex digits, which the caller has checked.
func hex4(s string) rune {
	var r rune
	for i := range 4 {
		c := s[i]
		switch {
		case c <= '9':
			c -= '0'
		case c >= 'a':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}
