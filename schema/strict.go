package schema

import (
	"github.com/mcphost/mcphost/internal/jsontree"

	"fmt"
	"slices"
	"strconv"
)

// maxOneOf bounds the branches of a oneOf whose disjointness is checked,
// pair by pair.
const maxOneOf = 64

// strictBudget bounds the schemas a strict form may hold. Inlining a $ref
// copies what it refers to, so a few hundred bytes of nested references
// could otherwise ask for exponential work; real tools need a few dozen.
const strictBudget = 20000

// A nullMap says, for one position of the arguments, which properties
// were optional in the original schema (a null the model sends for one is
// removed, so the server sees it omitted) and where to look deeper.
type nullMap struct {
	// optional holds the names, sorted: it is kept for the session's
	// life for every tool, where a slice is one small block and a map
	// several.
	optional []string
	props    map[string]*nullMap // for the properties of an object value
	items    *nullMap            // for every element of an array value
}

// isOptional reports whether name is one of m's optional properties.
func (m *nullMap) isOptional(name string) bool {
	_, found := slices.BinarySearch(m.optional, name)
	return found
}

// empty reports whether m removes nothing anywhere.
func (m *nullMap) empty() bool {
	return m == nil || len(m.optional) == 0 && len(m.props) == 0 && m.items == nil
}

// apply removes, in place, the nulls the model sent for optional
// properties, and reports whether it removed any.
func (m *nullMap) apply(v *jsontree.Value) bool {
	if m == nil {
		return false
	}
	changed := false
	switch v.Kind {
	case jsontree.Object:
		kept := v.Obj[:0:0]
		for _, mem := range v.Obj {
			if mem.Val.Kind == jsontree.Null && m.isOptional(mem.Name) {
				changed = true
				continue
			}
			if sub := m.props[mem.Name]; sub != nil && sub.apply(mem.Val) {
				changed = true
			}
			kept = append(kept, mem)
		}
		if changed {
			v.Obj = kept
		}
	case jsontree.Array:
		if m.items != nil {
			for _, e := range v.Arr {
				if m.items.apply(e) {
					changed = true
				}
			}
		}
	}
	return changed
}

// A stricter makes the strict form of a schema for one profile: every
// object closed and, for a profile that needs every property required
// (OpenAI), each property that was optional made nullable (a null for it
// is removed again by FromModel); for a profile that takes optional
// properties (Anthropic), they stay optional. It gives up, with the first
// reason, wherever that form could not keep the original's meaning.
type stricter struct {
	a *doc
	// keepOptional leaves optional properties optional instead of making
	// them required and nullable.
	keepOptional bool
	budget       int
	active       map[*jsontree.Value]bool // references being inlined, to refuse recursion; made on first use
	nulls        map[*jsontree.Value]bool // refusesNull's answers, which are asked again and again; made on first use
	// sawOptional is set once a property that is not required has been
	// met: until then the walks of every profile are the same.
	sawOptional bool
	prob        *finding
}

func (x *stricter) fail(ptr, format string, args ...any) {
	if x.prob == nil {
		x.prob = &finding{ptr, fmt.Sprintf(format, args...)}
	}
}

// strictForm returns the strict form for profile p of the document's root
// schema and the null map for FromModel, or the first reason there is
// none. The form holds every constraint of the original; relax then moves
// out those p does not accept. Where both profiles have a form, their null
// maps are the same: every optional property, all of which refuse null
// (outside compositions, where the OpenAI form has none).
func strictForm(a *doc, p Profile) (*jsontree.Value, *nullMap, *finding) {
	f := strictForms(a, []Profile{p})[0]
	return f.v, f.nulls, f.prob
}

// A profileForm is what strictForm returns for one profile.
type profileForm struct {
	v     *jsontree.Value
	nulls *nullMap
	prob  *finding
}

// strictForms returns strictForm for each of profiles. The walks differ
// only at properties that are not required, so for a schema without any
// the first walk answers for every profile (with the very same values);
// the walks share refusesNull's answers.
func strictForms(a *doc, profiles []Profile) []profileForm {
	out := make([]profileForm, len(profiles))
	var nulls map[*jsontree.Value]bool
	sawOptional := false
	for i, p := range profiles {
		if i > 0 && !sawOptional {
			out[i] = out[0]
			continue
		}
		x := &stricter{a: a, budget: strictBudget, keepOptional: p.optionalProperties(), nulls: nulls}
		v, nm := x.schema(a.root, "", true, false)
		nulls, sawOptional = x.nulls, sawOptional || x.sawOptional
		switch {
		case x.prob != nil:
			out[i] = profileForm{prob: x.prob}
		case nm.empty():
			out[i] = profileForm{v: v}
		default:
			out[i] = profileForm{v: v, nulls: nm}
		}
	}
	return out
}

// keep reports whether a keyword of the original goes into the strict form
// as written. What is dropped has no validation meaning (annotations other
// than the title and description the model reads; identifiers; the
// containers whose references are inlined; keywords the dialect does not
// define, which its validators ignore).
func (x *stricter) keep(name string) bool {
	switch keyword(name, x.a.d) {
	case clUnknown, clContainer, clIdentity, clRef:
		return false
	case clAnnotation:
		return name == "title" || name == "description" || name == "format"
	}
	return true
}

// schema returns the strict form of s, which sits at ptr in the original.
// inComp is set under anyOf and oneOf, where nothing may change: a branch
// must already be strict.
func (x *stricter) schema(s *jsontree.Value, ptr string, root, inComp bool) (*jsontree.Value, *nullMap) {
	if x.prob != nil {
		return nil, nil
	}
	if x.budget--; x.budget < 0 {
		x.fail("", "the strict form would hold more than %d schemas (its $refs are inlined), which is more than mcphost makes", strictBudget)
		return nil, nil
	}
	if s.Kind == jsontree.Bool {
		if s.Bool {
			x.fail(ptr, "untyped value (the schema true admits any JSON value), and strict mode needs a type")
		} else {
			x.fail(ptr, "the schema false admits nothing, which strict mode cannot express")
		}
		return nil, nil
	}
	if r, ok := x.a.refs[s]; ok {
		return x.ref(s, r, ptr, root, inComp)
	}
	if s.Has("allOf") && keyword("allOf", x.a.d) != clUnknown {
		x.fail(ptr+"/allOf", "allOf is left as written: closing its branches, or merging them, could change what they admit")
		return nil, nil
	}
	if s.Has("anyOf") || s.Has("oneOf") {
		if root {
			x.fail(ptr, "the root is a composition (anyOf/oneOf), not an object, and strict mode needs an object root")
			return nil, nil
		}
		return x.union(s, ptr, inComp)
	}
	types, typed := typesOf(s)
	if !typed {
		switch derived, ok := typesFromValues(s); {
		case root:
			// MCP arguments are always an object, so a root without a
			// type means one.
			types = []string{"object"}
		case ok:
			types = derived
		default:
			x.fail(ptr, "untyped value: it admits any JSON value, and strict mode needs a type")
			return nil, nil
		}
	}
	var nonNull []string
	for _, t := range types {
		if t != "null" {
			nonNull = append(nonNull, t)
		}
	}
	if root && (len(types) != 1 || types[0] != "object") {
		x.fail(ptr+"/type", "the root is not an object schema (type %s), and strict mode needs an object root", short(typeValue(types)))
		return nil, nil
	}
	if len(nonNull) > 1 {
		return x.split(s, ptr, types, inComp)
	}
	// Room for what the strict form adds to an object (properties,
	// required, additionalProperties), so that it is allocated once.
	out := &jsontree.Value{Kind: jsontree.Object, Src: ptr, Obj: make([]jsontree.Member, 0, len(s.Obj)+3)}
	var nm *nullMap
	t := "null"
	if len(nonNull) == 1 {
		t = nonNull[0]
	}
	switch t {
	case "object":
		nm = x.object(s, ptr, root, inComp, out)
	case "array":
		nm = x.array(s, ptr, inComp, out)
	default:
		x.copyKept(s, out, t)
	}
	if x.prob != nil {
		return nil, nil
	}
	if !typed {
		out.Obj = append([]jsontree.Member{{Name: "type", RawName: `"type"`, Val: typeValue(types)}}, out.Obj...)
	}
	return out, nm
}

// A replacement is a member that copyKept writes in place of the
// original's, or, with a nil val, drops.
type replacement struct {
	Name string
	Val  *jsontree.Value
}

// copyKept copies into out the members of s that keep, in order; override
// (a few entries; a map per schema cost more than the rest of the copy)
// supplies the members it rewrites (by name, the first of that name only),
// written in their place. With t set, keywords that constrain only other
// types than t are dropped too: they constrain nothing here.
func (x *stricter) copyKept(s, out *jsontree.Value, t string, override ...replacement) {
	var used uint64 // bit i: override[i] is spent; there are never 64
	for _, m := range s.Obj {
		i := 0
		for ; i < len(override); i++ {
			if used&(1<<i) == 0 && override[i].Name == m.Name {
				break
			}
		}
		if i < len(override) {
			used |= 1 << i
			if v := override[i].Val; v != nil {
				out.Obj = append(out.Obj, jsontree.Member{Name: m.Name, RawName: m.RawName, Val: v})
			}
			continue
		}
		if x.keep(m.Name) && (t == "" || !onlyForOthers(m.Name, t)) {
			out.Obj = append(out.Obj, m)
		}
	}
}

// onlyForOthers reports whether a keyword constrains only types other
// than t.
func onlyForOthers(name, t string) bool {
	if forType(name, t) || t == "integer" && forType(name, "number") {
		return false
	}
	for _, u := range []string{"string", "number", "array", "object"} {
		if forType(name, u) {
			return true
		}
	}
	return false
}

// ref inlines a reference: the strict form of what it refers to, with the
// title and description written beside the $ref (they describe this use).
func (x *stricter) ref(s *jsontree.Value, r ref, ptr string, root, inComp bool) (*jsontree.Value, *nullMap) {
	if x.a.d != draft07 && x.a.d != draft06 {
		// Since 2019-09, keywords beside $ref apply as well; draft-07
		// ignores them. Annotations can be folded into the inlined
		// schema; anything else would have to be merged with it.
		for _, m := range s.Obj {
			if m.Name != "$ref" && !annotationOnly(m.Name, x.a.d) && keyword(m.Name, x.a.d) != clUnknown {
				x.fail(ptr+"/"+jsontree.EscapeToken(m.Name), "%s beside $ref would have to be merged into the referenced schema, which could change its meaning", quote(m.Name))
				return nil, nil
			}
		}
	}
	if x.active[r.target] {
		x.fail(ptr+"/$ref", "recursive reference to %s: mcphost inlines references and cannot inline a recursive one", quote("#"+r.ptr))
		return nil, nil
	}
	if x.active == nil {
		x.active = map[*jsontree.Value]bool{}
	}
	x.active[r.target] = true
	// A root that is a reference (as some generators write a named
	// model) is the root still.
	v, nm := x.schema(r.target, r.ptr, root, inComp)
	delete(x.active, r.target)
	if v == nil {
		return nil, nil
	}
	for _, name := range []string{"title", "description"} {
		if d := s.Get(name); d != nil && d.Kind == jsontree.String {
			v.Set(name, d)
		}
	}
	return v, nm
}

// object makes the strict form of an object schema into out.
func (x *stricter) object(s *jsontree.Value, ptr string, root, inComp bool, out *jsontree.Value) *nullMap {
	props := s.Get("properties")
	ap := s.Get("additionalProperties")
	if s.Has("patternProperties") {
		x.fail(ptr+"/patternProperties", "free-form map (patternProperties): strict mode closes every object, which would refuse the names the patterns admit")
		return nil
	}
	if ap != nil && (ap.Kind != jsontree.Bool || ap.Bool) {
		x.fail(ptr+"/additionalProperties", "free-form map (additionalProperties is %s): closing it would refuse the entries it admits", describeSchema(ap))
		return nil
	}
	closed := ap != nil
	if !closed && (props == nil || len(props.Obj) == 0 && !root) {
		x.fail(ptr, "free-form object: it declares no properties and does not forbid others, so it may hold any; closing it would refuse them")
		return nil
	}
	if !closed && inComp {
		x.fail(ptr, "object inside anyOf/oneOf that is not closed: closing it there could change which branch a value matches, so the composition is left as written")
		return nil
	}
	req := s.Get("required").Elements()
	declared := props.Get
	if len(props.Members()) > 16 {
		// Linear lookups are cheaper for the small objects most are.
		names := make(map[string]*jsontree.Value, len(props.Obj))
		for _, m := range props.Obj {
			names[m.Name] = m.Val
		}
		declared = func(n string) *jsontree.Value { return names[n] }
	}
	for _, n := range req {
		if declared(n.Str) == nil {
			x.fail(ptr+"/required", "%s is required but not declared in properties, so a closed object would refuse it", quote(n.Str))
			return nil
		}
	}
	isRequired := func(name string) bool {
		for _, n := range req {
			if n.Str == name {
				return true
			}
		}
		return false
	}
	if len(req) > 16 {
		required := make(map[string]bool, len(req))
		for _, n := range req {
			required[n.Str] = true
		}
		isRequired = func(name string) bool { return required[name] }
	}
	var nm nullMap
	nprops := len(props.Members())
	// The new properties, the required list and its elements, allocated
	// at once.
	vals := make([]jsontree.Value, 2+nprops)
	newProps, names, nameVals := &vals[0], &vals[1], vals[2:]
	*newProps = jsontree.Value{Kind: jsontree.Object, Obj: make([]jsontree.Member, 0, nprops)}
	*names = jsontree.Value{Kind: jsontree.Array, Arr: make([]*jsontree.Value, 0, nprops)}
	if props != nil {
		for i, m := range props.Obj {
			pp := ptr + "/properties/" + jsontree.EscapeToken(m.Name)
			child, cnm := x.schema(m.Val, pp, false, inComp)
			if child == nil {
				return nil
			}
			required := isRequired(m.Name)
			if !required {
				x.sawOptional = true
			}
			switch {
			case required:
			case x.keepOptional:
				// Omitted stays omitted, and null stays null. A null
				// sent for a property whose schema refuses it is still
				// removed (as under the closed form): the model can
				// only have meant "omitted".
				if !inComp && x.refusesNull(m.Val, 0) {
					if nm.optional == nil {
						nm.optional = make([]string, 0, nprops-i)
					}
					nm.optional = append(nm.optional, m.Name)
				}
			default:
				if inComp {
					x.fail(pp, "optional property inside anyOf/oneOf: making it required and nullable there could change which branch a value matches")
					return nil
				}
				if !x.refusesNull(m.Val, 0) {
					x.fail(pp, "optional property that admits null: omitting it and sending null mean different things, and a strict form (where every property is sent, null standing for omitted) cannot tell them apart")
					return nil
				}
				child = nullable(child)
				if nm.optional == nil {
					nm.optional = make([]string, 0, nprops-i)
				}
				nm.optional = append(nm.optional, m.Name)
			}
			if !cnm.empty() {
				if nm.props == nil {
					nm.props = map[string]*nullMap{}
				}
				nm.props[m.Name] = cnm
			}
			newProps.Obj = append(newProps.Obj, jsontree.Member{Name: m.Name, RawName: m.RawName, Val: child})
			if required || !x.keepOptional {
				nameVals[i] = jsontree.Value{Kind: jsontree.String, Str: m.Name, Raw: m.RawName}
				names.Arr = append(names.Arr, &nameVals[i])
			}
		}
	}
	slices.Sort(nm.optional)
	x.copyKept(s, out, "object",
		replacement{"properties", newProps},
		replacement{"required", names},
		replacement{"additionalProperties", falseSchema})
	if props == nil {
		out.Set("properties", newProps)
	}
	if !s.Has("required") && (len(names.Arr) > 0 || nprops == 0 || !x.keepOptional) {
		// (An Anthropic form whose properties are all optional has no
		// "required"; one without properties says it, as OpenAI's.)
		out.Set("required", names)
	}
	if !s.Has("additionalProperties") {
		out.Set("additionalProperties", falseSchema)
	}
	if len(nm.optional) == 0 && len(nm.props) == 0 {
		return nil
	}
	found := nm
	return &found
}

// array makes the strict form of an array schema into out.
func (x *stricter) array(s *jsontree.Value, ptr string, inComp bool, out *jsontree.Value) *nullMap {
	items := s.Get("items")
	if s.Has("prefixItems") && keyword("prefixItems", x.a.d) != clUnknown || items != nil && items.Kind == jsontree.Array {
		x.fail(ptr, "tuple (a list of item schemas): strict mode has no tuples")
		return nil
	}
	if items == nil {
		x.fail(ptr, "array whose items are untyped: they may be any JSON value, and strict mode needs a type")
		return nil
	}
	child, cnm := x.schema(items, ptr+"/items", false, inComp)
	if child == nil {
		return nil
	}
	x.copyKept(s, out, "array", replacement{"items", child})
	if cnm.empty() {
		return nil
	}
	return &nullMap{items: cnm}
}

// union makes the strict form of an anyOf or oneOf. Its branches must
// already be strict (closed objects, nothing optional): closing or
// loosening a branch could change which branch a value matches. A oneOf
// is offered as anyOf, which strict mode has, when no value can match two
// of its branches: then the two admit the same values.
func (x *stricter) union(s *jsontree.Value, ptr string, inComp bool) (*jsontree.Value, *nullMap) {
	if s.Has("anyOf") && s.Has("oneOf") {
		x.fail(ptr, "anyOf and oneOf together are left as written")
		return nil, nil
	}
	kw := "anyOf"
	if s.Has("oneOf") {
		kw = "oneOf"
	}
	list := s.Get(kw)
	types, typed := typesOf(s)
	for _, m := range s.Obj {
		switch {
		case m.Name == kw || m.Name == "type" || m.Name == "title" || m.Name == "description" || !x.keep(m.Name):
		default:
			x.fail(ptr+"/"+jsontree.EscapeToken(m.Name), "%s beside %s would have to be merged into every branch, so the composition is left as written", quote(m.Name), kw)
			return nil, nil
		}
	}
	out := &jsontree.Value{Kind: jsontree.Object, Src: ptr}
	branches := &jsontree.Value{Kind: jsontree.Array}
	for i, b := range list.Arr {
		bp := ptr + "/" + kw + "/" + strconv.Itoa(i)
		child, _ := x.schema(b, bp, false, true)
		if child == nil {
			return nil, nil
		}
		if typed {
			bt, ok := x.branchTypes(b)
			if !ok || !subset(bt, types) {
				x.fail(ptr+"/type", "type beside %s would have to be merged into every branch, so the composition is left as written", kw)
				return nil, nil
			}
		}
		branches.Arr = append(branches.Arr, child)
	}
	if kw == "oneOf" {
		if len(list.Arr) > maxOneOf {
			x.fail(ptr+"/oneOf", "oneOf with %d branches: mcphost proves branches disjoint pairwise only for up to %d", len(list.Arr), maxOneOf)
			return nil, nil
		}
		for i := range list.Arr {
			for j := i + 1; j < len(list.Arr); j++ {
				if !x.disjoint(list.Arr[i], list.Arr[j]) {
					x.fail(ptr+"/oneOf", "oneOf whose branches %d and %d may overlap: offered as anyOf, a value matching both would be admitted, which oneOf refuses", i, j)
					return nil, nil
				}
			}
		}
	}
	// The type beside the composition is implied by every branch, so
	// dropping it admits the same values.
	x.copyKept(s, out, "", replacement{kw, nil}, replacement{"type", nil})
	out.Set("anyOf", branches)
	return out, nil
}

// split makes the strict form of a schema whose type lists several types:
// an anyOf with one branch per type, each holding the keywords that
// constrain that type (keywords for one type do not constrain others, so
// the union admits the same values). Strict mode documents type lists
// only for [T, "null"].
func (x *stricter) split(s *jsontree.Value, ptr string, types []string, inComp bool) (*jsontree.Value, *nullMap) {
	for _, m := range s.Obj {
		switch m.Name {
		case "type", "enum", "const", "title", "description":
			continue
		}
		if x.keep(m.Name) && !onlyForOthers(m.Name, "null") {
			// A keyword for every type (not, if, ...) would have to go
			// into every branch.
			x.fail(ptr+"/"+jsontree.EscapeToken(m.Name), "%s beside a list of types would have to be merged into a branch for each type, so the schema is left as written", quote(m.Name))
			return nil, nil
		}
	}
	out := &jsontree.Value{Kind: jsontree.Object, Src: ptr}
	branches := &jsontree.Value{Kind: jsontree.Array}
	nm := &nullMap{}
	enum, cnst := s.Get("enum"), s.Get("const")
	seen := map[string]bool{}
	for _, t := range types {
		if seen[t] {
			continue
		}
		seen[t] = true
		synth := &jsontree.Value{Kind: jsontree.Object, Obj: []jsontree.Member{{Name: "type", RawName: `"type"`, Val: strValue(t)}}}
		if enum != nil {
			vals := &jsontree.Value{Kind: jsontree.Array}
			for _, e := range enum.Arr {
				if ofType(e, t) {
					vals.Arr = append(vals.Arr, e)
				}
			}
			if len(vals.Arr) == 0 {
				continue
			}
			synth.Set("enum", vals)
		}
		if cnst != nil {
			if !ofType(cnst, t) {
				continue
			}
			synth.Set("const", cnst)
		}
		for _, m := range s.Obj {
			if forType(m.Name, t) {
				synth.Obj = append(synth.Obj, m)
			}
		}
		child, cnm := x.schema(synth, ptr, false, inComp)
		if child == nil {
			return nil, nil
		}
		child.Src = ptr
		switch {
		case cnm.empty():
		case t == "object":
			nm.optional, nm.props = cnm.optional, cnm.props
		case t == "array":
			nm.items = cnm.items
		}
		branches.Arr = append(branches.Arr, child)
	}
	for _, m := range s.Obj {
		if m.Name == "title" || m.Name == "description" {
			out.Obj = append(out.Obj, m)
		}
	}
	out.Set("anyOf", branches)
	if nm.empty() {
		return out, nil
	}
	return out, nm
}

// nullable makes a strict-form schema also admit null, the way the
// providers document it: a type list with "null" (and null added to an
// enum, which would refuse it otherwise), or an anyOf with a null branch.
func nullable(v *jsontree.Value) *jsontree.Value {
	onlyAnyOf := v.Has("anyOf")
	for _, m := range v.Obj {
		if m.Name != "anyOf" && m.Name != "title" && m.Name != "description" {
			onlyAnyOf = false
		}
	}
	if onlyAnyOf {
		list := v.Get("anyOf")
		v.Set("anyOf", &jsontree.Value{Kind: jsontree.Array, Arr: append(list.Arr[:len(list.Arr):len(list.Arr)], nullSchema())})
		return v
	}
	if t := v.Get("type"); t != nil && !v.Has("const") && !v.Has("anyOf") {
		switch t.Kind {
		case jsontree.String:
			v.Set("type", &jsontree.Value{Kind: jsontree.Array, Arr: []*jsontree.Value{t, nullTypeName}})
		case jsontree.Array:
			v.Set("type", &jsontree.Value{Kind: jsontree.Array, Arr: append(t.Arr[:len(t.Arr):len(t.Arr)], nullTypeName)})
		}
		if e := v.Get("enum"); e != nil {
			v.Set("enum", &jsontree.Value{Kind: jsontree.Array, Arr: append(e.Arr[:len(e.Arr):len(e.Arr)], nullLiteral)})
		}
		return v
	}
	return &jsontree.Value{Kind: jsontree.Object, Src: v.Src, Obj: []jsontree.Member{{Name: "anyOf", RawName: `"anyOf"`, Val: &jsontree.Value{Kind: jsontree.Array, Arr: []*jsontree.Value{v, nullSchema()}}}}}
}

func nullSchema() *jsontree.Value {
	return &jsontree.Value{Kind: jsontree.Object, Obj: []jsontree.Member{{Name: "type", RawName: `"type"`, Val: nullTypeName}}}
}

// Leaves every strict and closed form may share, made once: a leaf is never
// changed in place (set and del replace an object's members, and the
// rewrites of forValidator only touch objects), and every tool of every
// server gets them.
var (
	falseSchema  = boolValue(false)
	nullTypeName = strValue("null")
	nullLiteral  = nullValue()
)

// refusesNull reports whether schema s certainly refuses null. It errs
// towards "may admit", which only ever costs strictness.
func (x *stricter) refusesNull(s *jsontree.Value, depth int) bool {
	if depth > 64 {
		return false
	}
	known, seen := x.nulls[s]
	if seen {
		return known
	}
	if x.nulls == nil {
		x.nulls = map[*jsontree.Value]bool{}
	}
	x.nulls[s] = false // asked again while answering: may admit
	r := x.refuses(s, depth)
	x.nulls[s] = r
	return r
}

func (x *stricter) refuses(s *jsontree.Value, depth int) bool {
	if s.Kind == jsontree.Bool {
		return !s.Bool
	}
	if r, ok := x.a.refs[s]; ok {
		if x.refusesNull(r.target, depth+1) {
			return true
		}
		if x.a.d == draft07 || x.a.d == draft06 {
			return false // the siblings of $ref are ignored
		}
	}
	if types, ok := typesOf(s); ok && !contains(types, "null") {
		return true
	}
	if e := s.Get("enum"); e != nil && e.Kind == jsontree.Array {
		admits := false
		for _, v := range e.Arr {
			if v.Kind == jsontree.Null {
				admits = true
			}
		}
		if !admits {
			return true
		}
	}
	if c := s.Get("const"); c != nil && c.Kind != jsontree.Null {
		return true
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		if l := s.Get(kw); l != nil && l.Kind == jsontree.Array && len(l.Arr) > 0 {
			all := true
			for _, b := range l.Arr {
				if !x.refusesNull(b, depth+1) {
					all = false
				}
			}
			if all {
				return true
			}
		}
	}
	if l := s.Get("allOf"); l != nil && l.Kind == jsontree.Array {
		for _, b := range l.Arr {
			if x.refusesNull(b, depth+1) {
				return true
			}
		}
	}
	return false
}

// branchTypes returns the types a composition branch admits, following a
// reference.
func (x *stricter) branchTypes(b *jsontree.Value) ([]string, bool) {
	for range 64 {
		r, ok := x.a.refs[b]
		if !ok {
			break
		}
		b = r.target
	}
	if t, ok := typesOf(b); ok {
		return t, true
	}
	return typesFromValues(b)
}

// disjoint reports whether no value can match both a and b, as far as
// their types, closed properties and constant values show it.
func (x *stricter) disjoint(a, b *jsontree.Value) bool {
	for range 64 {
		r, ok := x.a.refs[a]
		if !ok {
			break
		}
		a = r.target
	}
	for range 64 {
		r, ok := x.a.refs[b]
		if !ok {
			break
		}
		b = r.target
	}
	ta, oka := x.branchTypes(a)
	tb, okb := x.branchTypes(b)
	if oka && okb && !overlap(ta, tb) {
		return true
	}
	// Two closed objects, one of which requires a property the other
	// cannot have.
	if x.requiresForeign(a, b) || x.requiresForeign(b, a) {
		return true
	}
	// Two sets of constant values with nothing in common.
	va, oka := constants(a)
	vb, okb := constants(b)
	if oka && okb {
		for _, u := range va {
			for _, w := range vb {
				if equal(u, w) {
					return false
				}
			}
		}
		return true
	}
	return false
}

// requiresForeign reports whether a requires a property that the closed
// object b does not declare.
func (x *stricter) requiresForeign(a, b *jsontree.Value) bool {
	ap := b.Get("additionalProperties")
	if ap == nil || ap.Kind != jsontree.Bool || ap.Bool || b.Has("patternProperties") {
		return false
	}
	if t, ok := typesOf(a); !ok || !contains(t, "object") || len(t) != 1 {
		return false
	}
	props := b.Get("properties")
	for _, n := range a.Get("required").Elements() {
		if n.Kind == jsontree.String && props.Get(n.Str) == nil {
			return true
		}
	}
	return false
}

// constants returns the values an enum or const allows.
func constants(s *jsontree.Value) ([]*jsontree.Value, bool) {
	if c := s.Get("const"); c != nil {
		return []*jsontree.Value{c}, true
	}
	if e := s.Get("enum"); e != nil && e.Kind == jsontree.Array {
		return e.Arr, true
	}
	return nil, false
}

// typesOf returns the types a schema's "type" lists.
func typesOf(s *jsontree.Value) ([]string, bool) {
	t := s.Get("type")
	if t == nil {
		return nil, false
	}
	if t.Kind == jsontree.String {
		return []string{t.Str}, true
	}
	var out []string
	for _, e := range t.Arr {
		out = append(out, e.Str)
	}
	return out, true
}

// hasType reports whether the "type" of schema s names t, as
// contains(typesOf(s)) would, without making the list.
func hasType(s *jsontree.Value, t string) bool {
	v := s.Get("type")
	switch {
	case v == nil:
		return false
	case v.Kind == jsontree.String:
		return v.Str == t
	}
	for _, e := range v.Arr {
		if e.Str == t {
			return true
		}
	}
	return false
}

// typesFromValues derives the types of a schema without "type" from its
// enum or const: naming the types the listed values already have admits
// the same values.
func typesFromValues(s *jsontree.Value) ([]string, bool) {
	vals, ok := constants(s)
	if !ok || len(vals) == 0 {
		return nil, false
	}
	var types []string
	add := func(t string) {
		if !contains(types, t) {
			types = append(types, t)
		}
	}
	allInt := true
	for _, v := range vals {
		if v.Kind == jsontree.Number && !isInteger(v) {
			allInt = false
		}
	}
	for _, v := range vals {
		switch v.Kind {
		case jsontree.Number:
			if allInt {
				add("integer")
			} else {
				add("number")
			}
		case jsontree.String:
			add("string")
		case jsontree.Bool:
			add("boolean")
		case jsontree.Null:
			add("null")
		default:
			return nil, false // objects and arrays: strict mode needs their shape
		}
	}
	return types, true
}

// ofType reports whether v is of JSON Schema type t.
func ofType(v *jsontree.Value, t string) bool {
	switch t {
	case "integer":
		return v.Kind == jsontree.Number && isInteger(v)
	case "number":
		return v.Kind == jsontree.Number
	case "string":
		return v.Kind == jsontree.String
	case "boolean":
		return v.Kind == jsontree.Bool
	case "null":
		return v.Kind == jsontree.Null
	case "array":
		return v.Kind == jsontree.Array
	case "object":
		return v.Kind == jsontree.Object
	}
	return false
}

func typeValue(types []string) *jsontree.Value {
	if len(types) == 1 {
		return strValue(types[0])
	}
	v := &jsontree.Value{Kind: jsontree.Array}
	for _, t := range types {
		v.Arr = append(v.Arr, strValue(t))
	}
	return v
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// subset reports whether every type in a is admitted by the types in b.
func subset(a, b []string) bool {
	for _, t := range a {
		if !contains(b, t) && !(t == "integer" && contains(b, "number")) {
			return false
		}
	}
	return true
}

// overlap reports whether a value can be of a type in a and in b.
func overlap(a, b []string) bool {
	for _, t := range a {
		for _, u := range b {
			if t == u || t == "integer" && u == "number" || t == "number" && u == "integer" {
				return true
			}
		}
	}
	return false
}

// describeSchema names a map's value schema for a message.
func describeSchema(v *jsontree.Value) string {
	switch {
	case v.Kind == jsontree.Bool && v.Bool:
		return "true"
	case v.Kind == jsontree.Object && len(v.Obj) == 0:
		return "{}, any value"
	default:
		return "a schema"
	}
}
