package schema

import (
	"github.com/mcphost/mcphost/internal/jsontree"

	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
)

// ErrInvalidSchema is wrapped by the error Close returns for an input that
// is not a JSON object: not JSON at all, not UTF-8, or another JSON value.
// Such a tool cannot be offered to a model.
var ErrInvalidSchema = errors.New("input schema is not a JSON object")

// ErrUncheckable is wrapped by the error Check returns for every call of a
// tool whose input schema mcphost could not interpret (an unknown dialect,
// a reference it cannot follow, a malformed keyword, a name given twice).
// Checking against a schema read wrongly could pass what the tool refuses
// or refuse what it accepts, so the call is refused; Closed.CheckProblem
// says why, from the moment the tool is listed.
var ErrUncheckable = errors.New("the tool's input schema cannot be checked")

// Closed is an input schema prepared for a model: the form to offer it,
// whether and why not that form is strict, and what Check and FromModel
// need. Close makes it; nothing changes it afterwards (callers must not
// modify its fields either), and it is safe for concurrent use.
type Closed struct {
	// Original is the schema as the server sent it.
	Original json.RawMessage
	// Schema is what to offer the model: the OpenAI strict form when
	// Strict, else the closed form (the original with its objects closed where
	// that keeps their meaning, optional properties still optional).
	Schema json.RawMessage
	// Strict reports that Schema is the strict form and that it is ready
	// for the default profile (OpenAI).
	Strict bool
	// Problem says why the schema is not strict-ready for the default
	// profile, as "<json pointer>: <reason>" with the pointer into
	// Original ("(root)" for the root); "" when it is ready.
	Problem string
	// Problems holds the same for every profile ("" when ready); every
	// profile of Profiles is present.
	Problems map[Profile]string
	// Fields lists the argument fields the model authors: a JSON pointer
	// "/<name>" (RFC 6901 escaped) for each property of the root, sorted.
	// It is never nil.
	Fields []string
	// Unchecked lists constraints of the original that Check cannot
	// enforce, as "<json pointer>: <reason>": patterns that Go's regexp
	// (RE2) cannot compile, and $refs outside the schema (never fetched:
	// the value there is checked as anything). The server still receives its own schema's
	// meaning and may enforce them; everything else is checked.
	Unchecked []string
	// CheckProblem, when not "", says why Check refuses every call: the
	// schema could not be interpreted (see ErrUncheckable).
	CheckProblem string

	closed json.RawMessage             // the closed form
	strict map[Profile]json.RawMessage // each profile's strict form; absent where meaning could not be kept
	nulls  *nullMap                    // where FromModel removes nulls; nil when nowhere
	check  []byte                      // the closed form, written for the validator

	once    sync.Once
	checker *checker
	ckErr   error
}

// Close prepares an input schema. It fails, with an error wrapping
// ErrInvalidSchema, only when the input is not a JSON object; every other
// difficulty is a Problem (the tool stays non-strict) or a CheckProblem
// (its calls are refused), never an error.
//
// Close does the same work for every tool of every server at discovery,
// so it does not validate anything against the schema itself: the
// validator is prepared on a tool's first Check.
func Close(input json.RawMessage) (*Closed, error) {
	return closeSchema(input, false)
}

// Open prepares a schema to check values against as written: a tool's
// output schema, which its structuredContent must fit. Nothing is closed
// (an object admits what its schema admits) and no strict form is made,
// so Schema is Original and Problems is empty; Check, Unchecked and
// CheckProblem are as for Close, remote references included (checked as
// anything, and listed in Unchecked). Check's ArgumentError names the
// place in the value that does not fit, as for arguments.
func Open(schema json.RawMessage) (*Closed, error) {
	return closeSchema(schema, true)
}

func closeSchema(input json.RawMessage, open bool) (*Closed, error) {
	// Nothing of the tree outlives Close (what it keeps is encoded text
	// and strings), so the tree is built in a pooled Parser's memory:
	// discovery closes every tool of every server.
	p := parsers.Get().(*jsontree.Parser)
	defer parsers.Put(p)
	root, err := p.Parse(input, maxNesting)
	// A repeated name or a lone surrogate makes the schema uncheckable,
	// not invalid: Parse refuses those only once it has read the whole
	// text as JSON.
	soft := softRefusal(err)
	var kind jsontree.Kind
	switch {
	case soft != nil:
		kind = rootKind(input)
	case err != nil:
		return nil, fmt.Errorf("%w: %w", ErrInvalidSchema, err)
	default:
		kind = root.Kind
	}
	if kind != jsontree.Object {
		return nil, fmt.Errorf("%w: it is %s", ErrInvalidSchema, article(kind))
	}
	c := &Closed{
		Original: bytes.Clone(input),
		Problems: make(map[Profile]string, 2),
	}
	var a *doc
	switch {
	case soft != nil && soft.Err == jsontree.ErrDuplicateKey:
		a = &doc{root: &jsontree.Value{Kind: jsontree.Object}, uncheckable: &finding{soft.Pointer, "this name repeats an earlier member of the same object, and JSON parsers disagree on which one counts"}}
	case soft != nil:
		a = &doc{root: &jsontree.Value{Kind: jsontree.Object}, uncheckable: &finding{"", "a string holds an unpaired UTF-16 surrogate escape (a lone \\uD800-\\uDFFF), which is not a character, and JSON parsers disagree on what to make of it"}}
	default:
		a = analyze(root)
	}
	c.Fields = fields(a)
	if f := a.uncheckable; f != nil {
		// What cannot be read surely is offered as it is, non-strict,
		// and Check refuses its calls.
		c.CheckProblem = f.String()
		for _, pr := range Profiles() {
			c.Problems[pr] = c.CheckProblem
		}
		c.Problem = c.CheckProblem
		c.closed = c.Original
		c.Schema = c.Original
		return c, nil
	}

	if open {
		c.Schema = c.Original
		c.Unchecked = forValidator(a)
		c.check = encode(root)
		c.closed = c.Original
		return c, nil
	}

	// The strict forms and their profile checks read the original tree,
	// so they come before closeObjects and forValidator change it in
	// place.
	var forms []profileForm
	if a.malformed == nil && a.firstRemote == nil {
		forms = strictForms(a, Profiles())
	}
	var lastForm *jsontree.Value
	var lastText json.RawMessage
	for i, pr := range Profiles() {
		if a.malformed != nil {
			c.Problems[pr] = a.malformed.String()
			continue
		}
		if a.firstRemote != nil {
			// What a remote reference admits is unknown, so no form can
			// say it strictly.
			c.Problems[pr] = a.firstRemote.String()
			continue
		}
		f := forms[i]
		if f.prob != nil {
			c.Problems[pr] = f.prob.String()
			continue
		}
		// A form shared with a later profile is relaxed as a copy; the
		// last holder relaxes it in place.
		shared := false
		for _, g := range forms[i+1:] {
			shared = shared || g.v == f.v
		}
		r := relaxer{p: pr, a: a, inPlace: !shared}
		form := r.relax(f.v)
		c.Problems[pr] = checkProfile(pr, a, form)
		if c.strict == nil {
			c.strict = make(map[Profile]json.RawMessage, len(forms))
		}
		if form != lastForm || r.inPlace && r.moved > 0 {
			// Profiles whose forms are the same, unchanged value share
			// the text.
			lastForm, lastText = form, encode(form)
		}
		c.strict[pr] = lastText
		if c.nulls == nil {
			// The profiles' maps are the same where both have one.
			c.nulls = f.nulls
		}
	}
	c.Problem = c.Problems[OpenAI]
	c.Strict = c.strict[OpenAI] != nil && c.Problem == ""

	closeObjects(a)
	c.closed = encode(root)
	c.Unchecked = forValidator(a)
	c.check = encode(root)

	c.Schema = c.closed
	if c.Strict {
		c.Schema = c.strict[OpenAI]
	}
	return c, nil
}

// For returns the schema to offer a model of profile p, and whether it is
// p's strict form (then send the tool with strict: true). For a profile
// with a problem, or one this package does not know, it is the closed
// form. FromModel maps the model's arguments back either way, and Check
// enforces, whichever form was offered, every constraint of the original,
// including those p's strict form says only in descriptions.
func (c *Closed) For(p Profile) (schema json.RawMessage, strict bool) {
	if problem, ok := c.Problems[p]; ok && problem == "" && c.strict[p] != nil {
		return c.strict[p], true
	}
	return c.closed, false
}

// argsRoot returns the schema of the arguments object: the root, or what
// a root that is a reference refers to (as some generators write a named
// model).
func (a *doc) argsRoot() *jsontree.Value {
	root := a.root
	for range 64 {
		r, ok := a.refs[root]
		if !ok {
			break
		}
		root = r.target
	}
	return root
}

// fields lists the root's properties as JSON pointers, sorted.
func fields(a *doc) []string {
	root := a.root
	if !root.Has("properties") {
		root = a.argsRoot()
	}
	props := root.Get("properties")
	if props == nil || props.Kind != jsontree.Object {
		return []string{}
	}
	// The pointers are cut from one string: one allocation, not one each.
	n := 0
	for _, m := range props.Obj {
		n += 1 + len(jsontree.EscapeToken(m.Name))
	}
	var b strings.Builder
	b.Grow(n)
	for _, m := range props.Obj {
		b.WriteByte('/')
		b.WriteString(jsontree.EscapeToken(m.Name))
	}
	all := b.String()
	out := make([]string, 0, len(props.Obj))
	for _, m := range props.Obj {
		k := 1 + len(jsontree.EscapeToken(m.Name))
		out = append(out, all[:k])
		all = all[k:]
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func article(k jsontree.Kind) string {
	switch k {
	case jsontree.Array, jsontree.Object:
		return "an " + k.String()
	case jsontree.Null:
		return "null"
	default:
		return "a " + k.String()
	}
}

// Reach marks, for closeObjects.
const (
	reachFree   = 1 // reached where closing an object keeps its meaning
	reachInside = 2 // reached under a composition, left as written
)

// closeObjects closes, in place, every object schema that can be closed
// without changing its meaning beyond refusing undeclared properties:
// one that declares its properties, requires only declared ones, is not a
// map, and is neither under nor beside a composition (anyOf, oneOf, allOf,
// not, if/then/else, a $ref with siblings), where closing could refuse
// what another branch declares or, under oneOf and not, admit what was
// refused. A schema reached by $ref is closed only if every reference to
// it is in such a place. The root also gets "type": "object" and
// "properties": {} when it lacks them: MCP arguments are always an object,
// and providers want an object schema with properties.
func closeObjects(a *doc) {
	reach := map[*jsontree.Value]uint8{}
	var visit func(s *jsontree.Value, free bool)
	visit = func(s *jsontree.Value, free bool) {
		if s.Kind != jsontree.Object {
			return
		}
		bit := uint8(reachInside)
		if free {
			bit = reachFree
		}
		if reach[s]&bit != 0 {
			return
		}
		reach[s] |= bit
		childFree := free && !composed(a, s)
		for _, m := range s.Obj {
			v := m.Val
			switch keyword(m.Name, a.d) {
			case clSchemaMap:
				for _, e := range v.Obj {
					visit(e.Val, childFree && !inPlace(m.Name))
				}
			case clSchema:
				visit(v, childFree && (m.Name == "additionalProperties" || m.Name == "additionalItems"))
			case clSchemaList:
				for _, e := range v.Arr {
					visit(e, childFree && m.Name == "prefixItems")
				}
			case clItems:
				if v.Kind == jsontree.Array {
					for _, e := range v.Arr {
						visit(e, childFree)
					}
				} else {
					visit(v, childFree)
				}
			case clDeps:
				for _, e := range v.Obj {
					visit(e.Val, false)
				}
			}
		}
		if r, ok := a.refs[s]; ok {
			visit(r.target, free && pureRef(a, s))
		}
	}
	visit(a.root, true)
	argsRoot := a.argsRoot()
	for s, r := range reach {
		if r == reachFree && closable(a, s, s == argsRoot) {
			s.Set("additionalProperties", falseSchema)
		}
	}
	root := a.root
	if !root.Has("type") && !composed(a, root) {
		root.Obj = append([]jsontree.Member{{Name: "type", RawName: `"type"`, Val: strValue("object")}}, root.Obj...)
	}
	if t := root.Get("type"); t != nil && t.Kind == jsontree.String && t.Str == "object" && !root.Has("properties") && !composed(a, root) {
		root.Set("properties", &jsontree.Value{Kind: jsontree.Object, Obj: []jsontree.Member{}})
	}
}

// composed reports whether s applies other schemas to its own value: then
// its properties are not all that decides which names it admits.
func composed(a *doc, s *jsontree.Value) bool {
	for _, m := range s.Obj {
		if keyword(m.Name, a.d) == clUnknown {
			continue
		}
		if m.Name == "$ref" {
			if a.remote[s] != nil || !pureRef(a, s) {
				return true
			}
			continue
		}
		if inPlace(m.Name) || m.Name == "unevaluatedProperties" || m.Name == "unevaluatedItems" {
			return true
		}
	}
	return false
}

// pureRef reports whether the schema s, which has a $ref, means just what
// it refers to: its other keywords are annotations, or (draft-07 and
// earlier) ignored beside $ref.
func pureRef(a *doc, s *jsontree.Value) bool {
	if a.d == draft07 || a.d == draft06 {
		return true
	}
	for _, m := range s.Obj {
		if m.Name != "$ref" && !annotationOnly(m.Name, a.d) && keyword(m.Name, a.d) != clUnknown {
			return false
		}
	}
	return true
}

// closable reports whether the object schema s declares all it admits;
// isRoot tells whether it is the schema of the arguments object.
func closable(a *doc, s *jsontree.Value, isRoot bool) bool {
	if a.refs[s].target != nil || a.remote[s] != nil || composed(a, s) {
		return false
	}
	if s.Has("additionalProperties") || s.Has("patternProperties") || s.Has("unevaluatedProperties") {
		return false
	}
	props := s.Get("properties")
	if types, ok := typesOf(s); ok {
		if !contains(types, "object") {
			return false
		}
	} else if props == nil && !isRoot {
		return false
	}
	// An object that declares no properties is a free-form one, except
	// at the root, where "properties": {} is how SDKs spell a tool that
	// takes no arguments.
	if props == nil || len(props.Obj) == 0 && !isRoot {
		return false
	}
	for _, n := range s.Get("required").Elements() {
		if props.Get(n.Str) == nil {
			return false
		}
	}
	return true
}

// forValidator rewrites, in place, the closed form for
// github.com/google/jsonschema-go: the dialect named the way the validator
// knows it, annotations and keywords the dialect does not define removed
// (they mean nothing to a validator of the dialect, and the validator
// would read some of them regardless), counts in 32-bit range, patterns
// in RE2 syntax, 2019-09 tuples in 2020-12 terms. It returns the
// constraints it had to leave out.
func forValidator(a *doc) []string {
	var notes []string
	var walk func(s *jsontree.Value, ptr path, isRoot bool)
	walk = func(s *jsontree.Value, ptr path, isRoot bool) {
		if s.Kind != jsontree.Object {
			return
		}
		if f := a.remote[s]; f != nil {
			// The reference is left out: the value there is checked as
			// anything, and the rest of the schema still applies (before
			// 2019-09 nothing beside a $ref applies, so nothing does).
			notes = append(notes, f.String())
			if a.d == draft07 || a.d == draft06 {
				s.Obj = []jsontree.Member{} // the root gets its $schema back below
				return
			}
			s.Del("$ref")
		}
		kept := s.Obj[:0]
		tupleItems := false
		for _, m := range s.Obj {
			p := append(ptr, m.Name)
			v := m.Val
			switch keyword(m.Name, a.d) {
			case clUnknown, clAnnotation:
				continue
			case clIdentity:
				if !(isRoot && m.Name == "$schema") {
					continue
				}
				v = a.d.checkURIValue()
			case clCount:
				v = numValue(countLiteral(v))
			case clString:
				if m.Name == "pattern" {
					if !a.compiles(v.Str) {
						notes = append(notes, (&finding{p.String(), fmt.Sprintf("pattern %s is not checked: it uses regular expression features Go's regexp (RE2) does not have, such as lookaround or backreferences", quote(v.Str))}).String())
						continue
					}
					v = strValue(toRE2(v.Str))
				}
			case clSchema:
				walk(v, p, false)
			case clSchemaList:
				for i, e := range v.Arr {
					walk(e, append(p, strconv.Itoa(i)), false)
				}
			case clSchemaMap, clContainer:
				if m.Name == "patternProperties" {
					renamed := &jsontree.Value{Kind: jsontree.Object}
					for _, e := range v.Obj {
						renamed.Obj = append(renamed.Obj, jsontree.Member{Name: toRE2(e.Name), RawName: string(jsontree.AppendQuoted(nil, toRE2(e.Name))), Val: e.Val})
					}
					v = renamed
				}
				for _, e := range v.Obj {
					walk(e.Val, append(p, e.Name), false)
				}
			case clItems:
				if v.Kind == jsontree.Array {
					for i, e := range v.Arr {
						walk(e, append(p, strconv.Itoa(i)), false)
					}
					if a.d == draft2019 {
						tupleItems = true
						m = jsontree.Member{Name: "prefixItems", RawName: `"prefixItems"`, Val: v}
					}
				} else {
					walk(v, p, false)
				}
			case clDeps:
				for _, e := range v.Obj {
					walk(e.Val, append(p, e.Name), false)
				}
			}
			kept = append(kept, jsontree.Member{Name: m.Name, RawName: m.RawName, Val: v})
		}
		s.Obj = kept
		if a.d == draft2019 {
			// additionalItems applies after a tuple (as 2020-12's items
			// does) and is ignored otherwise.
			ai := s.Get("additionalItems")
			s.Del("additionalItems")
			if tupleItems && ai != nil {
				s.Set("items", ai)
			}
		}
	}
	walk(a.root, make(path, 0, 16), true) // one path for the whole walk, as in analyze
	if !a.root.Has("$schema") {
		a.root.Set("$schema", a.d.checkURIValue())
	}
	return notes
}

// A checker is what Check needs, made on a tool's first Check.
type checker struct {
	rs   *jsonschema.Resolved
	diag *doc // the validator's schema, parsed, for error messages
}

func (c *Closed) prepare() (*checker, error) {
	c.once.Do(func() {
		var s jsonschema.Schema
		if err := json.Unmarshal(c.check, &s); err != nil {
			c.ckErr = err
			return
		}
		rs, err := s.Resolve(nil)
		if err != nil {
			c.ckErr = err
			return
		}
		p, err := parse(c.check)
		if err != nil {
			c.ckErr = err
			return
		}
		c.checker = &checker{rs: rs, diag: analyze(p)}
	})
	return c.checker, c.ckErr
}
