package schema

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/mcphost/mcphost/internal/jsontree"
	"github.com/mcphost/mcphost/internal/strictlimit"
)

// Profile names a model provider's strict-decoding subset of JSON Schema.
// A strict form that uses anything outside a provider's subset makes the
// provider refuse the whole request (every tool in it), so a tool is
// strict-ready for a profile only when its strict form fits entirely.
type Profile string

const (
	// OpenAI is OpenAI function calling and Structured Outputs with
	// strict: true. It is the default profile: Closed.Strict and
	// Closed.Problem are about it.
	OpenAI Profile = "openai"
	// Anthropic is Anthropic's strict tool use (strict: true on a tool).
	Anthropic Profile = "anthropic"
)

// Profiles returns every profile this package knows, the default first.
func Profiles() []Profile { return []Profile{OpenAI, Anthropic} }

func (p Profile) title() string {
	if p == Anthropic {
		return "Anthropic"
	}
	return "OpenAI"
}

// The rules below come from the providers' documentation as read in 2026:
//
// OpenAI, "Structured Outputs", section "Supported schemas"
// (platform.openai.com/docs/guides/structured-outputs): types string,
// number, boolean, integer, object, array, enum, anyOf; string "pattern"
// and "format" (date-time, time, date, duration, email, hostname, ipv4,
// ipv6, uuid); number "multipleOf", "maximum", "exclusiveMaximum",
// "minimum", "exclusiveMinimum"; array "minItems", "maxItems"; the root
// must be an object and not anyOf; "additionalProperties": false on every
// object; every property required (an optional one is emulated with a
// union with null, as the page advises); at most 5000 object properties
// and 10 levels of nesting; at most 120,000 characters of property names,
// enum values and const values together; at most 1000 enum values, and an
// enum of more than 250 strings at most 15,000 characters; composition
// keywords (allOf, not, if/then/else, dependentRequired, dependentSchemas)
// and the object and array keywords patternProperties,
// unevaluatedProperties, propertyNames, minProperties, maxProperties,
// unevaluatedItems, contains, minContains, maxContains, uniqueItems are
// not supported. A format outside the list is refused with "'uri' is not
// a valid format" (as servers using format "uri" reported, e.g.
// cyanheads/git-mcp-server#47), and OpenAI's own SDK documents that
// "minLength", "maxLength" and "default" can be rejected in strict mode
// (openai/openai-node#1988), so this package treats minLength and
// maxLength as outside the subset and leaves "default" out of strict
// forms. Assumed where the page is silent: "title" is accepted (the
// official SDKs send pydantic's titles in strict schemas); nesting counts
// objects and arrays alike; characters are Unicode code points; a pattern
// must at least compile as RE2.
//
// Anthropic, "Structured outputs", section "JSON Schema limitations"
// (platform.claude.com/docs/en/build-with-claude/structured-outputs) and
// "Strict tool use"
// (platform.claude.com/docs/en/agents-and-tools/tool-use/strict-tool-use):
// types object, array, string, integer, number, boolean, null; "enum" of
// strings, numbers, booleans and nulls; "const"; "anyOf"; "allOf" with
// limits; local "$ref"; "default"; "required" and "additionalProperties":
// false (no other value); "items" and "minItems" of 0 or 1 only; "format"
// date-time, time, date, duration, email, hostname, uri, ipv4, ipv6, uuid;
// "pattern" without backreferences, lookaround or word boundaries. Not
// supported: recursive schemas, numeric constraints (minimum, maximum,
// multipleOf, ...), minLength and maxLength, other array constraints.
// Properties left out of "required" are optional properties, which strict
// tool use accepts: the page counts them against a per-request limit, so
// the Anthropic form keeps an optional property optional instead of making
// it a required, nullable one. Per request: at most 20 strict tools, 24
// optional parameters and 16 parameters that use anyOf or type lists
// across all strict tools; a tool whose own strict form has more than 24
// optional properties or 16 such parameters can never be sent strict.
// Anthropic's SDK helpers for that page are described as removing the
// constraints strict mode does not support and adding them to the
// description, which is what relaxer does here (and the host enforces
// them; see below). Assumed: "title" is accepted.
//
// Moved constraints. A constraint a profile does not accept but that only
// narrows the values of a type the strict form already fixes (lengths,
// ranges, item counts, uniqueItems, a pattern RE2 can check, a format) is
// left out of that profile's strict form and said in the description of
// the schema it was on, e.g. "Search terms. (at least 3 characters)".
// Nothing is lost: Check validates every call against the original
// schema, refusing with a message for the model ("/query: must be at
// least 3 characters long; got 2") what the strict form let through; and
// format is an annotation to the validator, so only the provider's
// grammar ever enforced it. Keywords that change the shape of valid
// values (prefixItems, patternProperties, contains, not, if/then/else,
// dependent*, allOf, minProperties and maxProperties, whose count a strict
// form's nulls would blur) stay strict problems, and so do a pattern RE2
// cannot compile (the host could not enforce it) and a constraint whose
// text is longer than maxNoted.

// allowed reports whether profile p accepts keyword name in a strict form.
func (p Profile) allowed(name string) bool {
	switch name {
	case "type", "title", "description", "enum", "const", "anyOf",
		"properties", "required", "additionalProperties", "items", "minItems", "pattern", "format":
		return true
	case "maxItems", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf":
		return p == OpenAI
	}
	return false
}

// format reports whether profile p accepts string format f.
func (p Profile) format(f string) bool {
	switch f {
	case "date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid":
		return true
	case "uri":
		return p == Anthropic
	}
	return false
}

func (p Profile) formats() string {
	if p == Anthropic {
		return "date-time, time, date, duration, email, hostname, uri, ipv4, ipv6, uuid"
	}
	return "date-time, time, date, duration, email, hostname, ipv4, ipv6, uuid"
}

// OpenAI's documented size limits.
const (
	openAIMaxDepth      = 10
	openAIMaxProperties = 5000
	openAIMaxEnumValues = 1000
	openAIMaxChars      = 120000
	openAIBigEnum       = 250   // an enum of more strings than this ...
	openAIBigEnumChars  = 15000 // ... may hold at most this many characters
)

// optionalProperties reports whether profile p's strict mode accepts
// optional properties (properties left out of "required").
func (p Profile) optionalProperties() bool { return p == Anthropic }

// A profileCheck walks a strict form and stops at the first thing profile
// p does not accept.
type profileCheck struct {
	p                       Profile
	a                       *doc // for its cache of compiled patterns
	props, enums, chars, un int
	optional                int // properties not in their object's "required"
	prob                    *finding
}

func (c *profileCheck) fail(ptr, format string, args ...any) {
	if c.prob == nil {
		c.prob = &finding{ptr, fmt.Sprintf(format, args...)}
	}
}

// checkProfile returns why the strict form v of the document a is not
// ready for p, or "".
func checkProfile(p Profile, a *doc, v *jsontree.Value) string {
	c := profileCheck{p: p, a: a}
	c.walk(v, 0)
	if c.prob == nil && p == OpenAI {
		switch {
		case c.props > openAIMaxProperties:
			c.fail("", "%d object properties, more than the %d OpenAI strict mode allows", c.props, openAIMaxProperties)
		case c.enums > openAIMaxEnumValues:
			c.fail("", "%d enum values, more than the %d OpenAI strict mode allows", c.enums, openAIMaxEnumValues)
		case c.chars > openAIMaxChars:
			c.fail("", "%d characters of property names, enum and const values, more than the %d OpenAI strict mode allows", c.chars, openAIMaxChars)
		}
	}
	if c.prob == nil && p == Anthropic && c.optional > strictlimit.AnthropicOptional {
		c.fail("", "%d optional properties, more than the %d Anthropic strict mode allows in a request", c.optional, strictlimit.AnthropicOptional)
	}
	if c.prob == nil {
		return ""
	}
	return c.prob.String()
}

func (c *profileCheck) walk(s *jsontree.Value, depth int) {
	if c.prob != nil {
		return
	}
	if hasType(s, "object") || hasType(s, "array") {
		depth++
		if c.p == OpenAI && depth > openAIMaxDepth {
			c.fail(s.Src, "more than %d levels of nesting, which OpenAI strict mode does not allow", openAIMaxDepth)
			return
		}
	}
	for _, m := range s.Obj {
		// The keyword's pointer, written out only for a problem.
		kp := keywordPointer{s.Src, m.Name}
		if !c.p.allowed(m.Name) {
			c.fail(kp.String(), "keyword %s is not supported by %s strict mode", quote(m.Name), c.p.title())
			return
		}
		v := m.Val
		switch m.Name {
		case "type":
			if v.Kind == jsontree.Array && len(v.Arr) > 1 {
				c.union(s)
			}
		case "anyOf":
			c.union(s)
			for _, b := range v.Arr {
				c.walk(b, depth)
			}
		case "properties":
			req := s.Get("required").Elements()
			for _, p := range v.Obj {
				if !slices.ContainsFunc(req, func(r *jsontree.Value) bool { return r.Str == p.Name }) {
					c.optional++
				}
				c.props++
				c.chars += utf8.RuneCountInString(p.Name)
				c.walk(p.Val, depth)
			}
		case "items":
			c.walk(v, depth)
		case "format":
			if !c.p.format(v.Str) {
				c.fail(kp.String(), "format %s is not one %s strict mode accepts (it accepts %s)", quote(v.Str), c.p.title(), c.p.formats())
			}
		case "pattern":
			if !c.a.compiles(v.Str) {
				c.fail(kp.String(), "pattern %s uses regular expression features (such as lookaround or backreferences) that strict decoding does not support", quote(v.Str))
			} else if c.p == Anthropic && wordBoundary(v.Str) {
				c.fail(kp.String(), "pattern %s uses a word boundary (\\b or \\B), which Anthropic strict mode does not support", quote(v.Str))
			}
		case "minItems":
			if c.p == Anthropic {
				if n, ok := number(v); !ok || !n.IsInt() || n.Num().Int64() > 1 || n.Num().Sign() < 0 {
					c.fail(kp.String(), "minItems %s: Anthropic strict mode supports only 0 and 1", v.Raw)
				}
			}
		case "enum":
			c.enumValues(kp, v.Arr, true)
		case "const":
			c.enumValues(kp, []*jsontree.Value{v}, false)
		}
		if c.prob != nil {
			return
		}
	}
}

// union counts a parameter that uses anyOf or a type list.
func (c *profileCheck) union(s *jsontree.Value) {
	c.un++
	if c.p == Anthropic && c.un > strictlimit.AnthropicUnions {
		c.fail(s.Src, "more than %d parameters use anyOf or a type list, more than Anthropic strict mode allows in a request", strictlimit.AnthropicUnions)
	}
}

// A keywordPointer is the JSON pointer of a keyword of a strict-form
// schema, written out only when a problem needs it.
type keywordPointer struct{ Src, Name string }

func (k keywordPointer) String() string { return k.Src + "/" + jsontree.EscapeToken(k.Name) }

// enumValues checks the values of an enum (or, with isEnum false, a
// const) and counts them towards the limits.
func (c *profileCheck) enumValues(ptr keywordPointer, vals []*jsontree.Value, isEnum bool) {
	strs, chars := 0, 0
	for _, v := range vals {
		switch v.Kind {
		case jsontree.Object, jsontree.Array:
			c.fail(ptr.String(), "enum and const values must be strings, numbers, booleans or null in %s strict mode", c.p.title())
			return
		case jsontree.String:
			strs++
			chars += utf8.RuneCountInString(v.Str)
		}
	}
	if isEnum {
		c.enums += len(vals)
	}
	c.chars += chars
	if c.p == OpenAI && strs > openAIBigEnum && chars > openAIBigEnumChars {
		c.fail(ptr.String(), "an enum of %d strings holding %d characters; OpenAI strict mode allows at most %d characters in an enum of more than %d strings", strs, chars, openAIBigEnumChars, openAIBigEnum)
	}
}

// wordBoundary reports whether a pattern uses \b or \B outside a
// character class (inside one, \b is a backspace).
func wordBoundary(p string) bool {
	inClass := false
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			if i+1 < len(p) && !inClass && strings.IndexByte("bB", p[i+1]) >= 0 {
				return true
			}
			i++
		case '[':
			inClass = true
		case ']':
			inClass = false
		}
	}
	return false
}

// maxNoted bounds the text of one constraint said in a description (a
// number's literal, a pattern, a format name), in bytes; a longer one is
// not moved and stays a strict problem, so that a server cannot make the
// description it is offered grow by more than what it wrote itself, in
// pieces of at most this size.
const maxNoted = 256

// A relaxer moves, out of a strict form for profile p, the constraints p
// does not accept but that only narrow values, into the descriptions of
// the schemas they were on (see "Moved constraints" above). With inPlace
// it changes the form (one no one else holds: every schema node of a
// strict form is made afresh by its walk); without, it changes nothing,
// copying what changes and sharing the rest. moved counts the
// constraints it moved.
type relaxer struct {
	p       Profile
	a       *doc
	inPlace bool
	moved   int
}

// relax returns strict form s relaxed. It follows only what the strict
// form combines by union or descent (properties, items, anyOf); a
// constraint under anything else (not, contains, ...) stays, and with it
// the profile's problem with that keyword.
func (r *relaxer) relax(s *jsontree.Value) *jsontree.Value {
	p, a, inPlace := r.p, r.a, r.inPlace
	if s.Kind != jsontree.Object {
		return s
	}
	var obj []jsontree.Member // nil until something changes (in place: s's own)
	if inPlace {
		obj = s.Obj[:0]
	}
	var buf [6]string
	notes := buf[:0]
	for i, m := range s.Obj {
		val, keep := m.Val, true
		switch m.Name {
		case "properties":
			val = r.relaxEach(m.Val)
		case "items":
			val = r.relax(m.Val)
		case "anyOf":
			val = r.relaxEach(m.Val)
		default:
			note, repl, moved := p.move(a, m.Name, m.Val)
			if moved {
				r.moved++
				if note != "" {
					notes = append(notes, note)
				}
				val, keep = repl, repl != nil
			}
		}
		if obj == nil && (val != m.Val || !keep) {
			obj = append(make([]jsontree.Member, 0, len(s.Obj)+1), s.Obj[:i]...)
		}
		if obj != nil && keep {
			// In place, this writes at or before the member read.
			obj = append(obj, jsontree.Member{Name: m.Name, RawName: m.RawName, Val: val})
		}
	}
	out := s
	switch {
	case inPlace:
		s.Obj = obj
	case obj == nil:
		return s
	default:
		out = &jsontree.Value{Kind: jsontree.Object, Src: s.Src, Obj: obj}
	}
	if len(notes) > 0 {
		var b strings.Builder
		d := out.Get("description")
		text := ""
		if d != nil && d.Kind == jsontree.String {
			text = strings.TrimRight(d.Str, " \t\n")
		}
		n := len(text) + 3
		for _, note := range notes {
			n += len(note) + 2
		}
		b.Grow(n)
		if text != "" {
			b.WriteString(text)
			b.WriteString(" (")
		}
		for i, note := range notes {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(note)
		}
		if text != "" {
			b.WriteByte(')')
		}
		desc := strValue(b.String())
		if d != nil {
			out.Set("description", desc)
		} else {
			out.Obj = append(out.Obj, jsontree.Member{Name: "description", RawName: `"description"`, Val: desc})
		}
	}
	return out
}

// relaxEach relaxes the schemas of an array (anyOf) or object
// (properties), copying the container only if one of them is copied.
func (r *relaxer) relaxEach(v *jsontree.Value) *jsontree.Value {
	switch v.Kind {
	case jsontree.Array:
		var arr []*jsontree.Value
		for i, e := range v.Arr {
			x := r.relax(e)
			if x != e && arr == nil {
				arr = append(make([]*jsontree.Value, 0, len(v.Arr)), v.Arr[:i]...)
			}
			if arr != nil {
				arr = append(arr, x)
			}
		}
		if arr != nil {
			return &jsontree.Value{Kind: jsontree.Array, Src: v.Src, Arr: arr}
		}
	case jsontree.Object:
		var obj []jsontree.Member
		for i, m := range v.Obj {
			x := r.relax(m.Val)
			if x != m.Val && obj == nil {
				obj = append(make([]jsontree.Member, 0, len(v.Obj)), v.Obj[:i]...)
			}
			if obj != nil {
				obj = append(obj, jsontree.Member{Name: m.Name, RawName: m.RawName, Val: x})
			}
		}
		if obj != nil {
			return &jsontree.Value{Kind: jsontree.Object, Src: v.Src, Obj: obj}
		}
	}
	return v
}

// move reports whether keyword name with value v moves out of profile p's
// strict form, the note that says it in the description ("" for a keyword
// that constrains nothing), and what to keep in its place (nil: nothing).
func (p Profile) move(a *doc, name string, v *jsontree.Value) (note string, repl *jsontree.Value, moved bool) {
	count := func() (string, bool) {
		if !isCount(v) {
			return "", false
		}
		return countLiteral(v), true
	}
	plural := func(n, one, many string) string {
		if n == "1" {
			return n + " " + one
		}
		return n + " " + many
	}
	switch name {
	case "minLength", "maxLength":
		n, ok := count()
		if !ok {
			return "", nil, false
		}
		if name == "minLength" {
			return "at least " + plural(n, "character", "characters"), nil, true
		}
		return "at most " + plural(n, "character", "characters"), nil, true
	case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf":
		if p.allowed(name) || v.Kind != jsontree.Number || len(v.Raw) > maxNoted {
			return "", nil, false
		}
		var say string
		switch name {
		case "minimum":
			say = "at least "
		case "maximum":
			say = "at most "
		case "exclusiveMinimum":
			say = "greater than "
		case "exclusiveMaximum":
			say = "less than "
		default:
			say = "a multiple of "
		}
		return say + v.Raw, nil, true
	case "maxItems":
		n, ok := count()
		if p.allowed(name) || !ok {
			return "", nil, false
		}
		return "at most " + plural(n, "item", "items"), nil, true
	case "minItems":
		n, ok := count()
		if p != Anthropic || !ok || n == "0" || n == "1" {
			return "", nil, false
		}
		// At least one item the grammar can still require.
		return "at least " + n + " items", numValue("1"), true
	case "uniqueItems":
		if v.Kind != jsontree.Bool {
			return "", nil, false
		}
		if !v.Bool {
			return "", nil, true // constrains nothing
		}
		return "no item repeated", nil, true
	case "pattern":
		// Only a pattern the host checks moves; one RE2 cannot compile
		// is not checked by the host, so it stays a problem.
		if p != Anthropic || v.Kind != jsontree.String || len(v.Str) > maxNoted || !a.compiles(v.Str) || !wordBoundary(v.Str) {
			return "", nil, false
		}
		return "matching the pattern " + quote(v.Str), nil, true
	case "format":
		if v.Kind != jsontree.String || p.format(v.Str) || len(v.Str) > maxNoted {
			return "", nil, false
		}
		return "format " + quote(v.Str), nil, true
	}
	return "", nil, false
}
