package schema

import (
	"github.com/mcphost/mcphost/internal/jsontree"

	"fmt"
	"math"
	"math/big"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// A finding is a reason, tied to the place in the original schema it is
// about.
type finding struct {
	ptr    string // JSON pointer into the original schema
	reason string
}

func (f *finding) String() string { return showPointer(f.ptr) + ": " + f.reason }

// A ref is a resolved local reference.
type ref struct {
	target *jsontree.Value
	ptr    string // the target's JSON pointer
}

// A doc is an input schema and what analysis learned of it.
type doc struct {
	root *jsontree.Value
	d    dialect
	// refs maps each schema that has a $ref to what it refers to.
	refs map[*jsontree.Value]ref
	// uncheckable is the first reason the schema cannot be handed to the
	// validator as it means: Check then refuses every call, and no strict
	// form is made.
	uncheckable *finding
	// remote lists the schemas whose $ref refers outside the document
	// (a remote or relative URI, allowed since MCP 2026-07-28), with the
	// finding for each: mcphost fetches nothing a server names, so what
	// such a reference admits is unknown. It is checked as anything (the
	// rest of its schema still applies), said in Unchecked, and keeps the
	// schema from a strict form.
	remote      map[*jsontree.Value]*finding
	firstRemote *finding // the first of remote, in document order
	// malformed is the first annotation whose value has the wrong type:
	// harmless to checking (annotations are dropped there) but not to a
	// provider, so it blocks the strict form.
	malformed *finding
	// patterns caches whether each pattern compiles as RE2 (Go's regexp),
	// after \uXXXX escapes are rewritten to \x{XXXX}.
	patterns map[string]bool
	// edges lists the in-place subschemas of every schema that has any
	// ($ref targets included), to find loops that never consume input.
	edges map[*jsontree.Value][]*jsontree.Value
}

func (a *doc) failCheck(ptr path, format string, args ...any) {
	if a.uncheckable == nil {
		a.uncheckable = &finding{ptr.String(), fmt.Sprintf(format, args...)}
	}
}

func (a *doc) failAnnotation(ptr path, format string, args ...any) {
	if a.malformed == nil {
		a.malformed = &finding{ptr.String(), fmt.Sprintf(format, args...)}
	}
}

// A path is a JSON pointer as its reference tokens, unescaped. Walks
// extend it as they descend and write it out only for a finding: most
// schemas have none, and building every pointer as a string was most of
// what Close cost.
type path []string

func (p path) String() string {
	var b strings.Builder
	for _, t := range p {
		b.WriteByte('/')
		b.WriteString(jsontree.EscapeToken(t))
	}
	return b.String()
}

// analyze learns the dialect of root, checks the form of every keyword the
// dialect defines, resolves every $ref, compiles every pattern and looks
// for reference loops.
func analyze(root *jsontree.Value) *doc {
	// The maps are made on first use: most schemas have no $ref and no
	// in-place keyword, and discovery analyzes every tool's schema.
	a := &doc{root: root}
	if s := root.Get("$schema"); s != nil {
		if s.Kind != jsontree.String {
			a.failCheck(path{"$schema"}, "$schema must be a string naming a JSON Schema dialect")
			return a
		}
		d, ok := dialectOf(s.Str)
		if !ok {
			a.failCheck(path{"$schema"}, "$schema %s names a JSON Schema dialect mcphost does not know (it knows 2020-12, 2019-09, draft-07 and draft-06), so it cannot tell what the keywords mean", quote(s.Str))
			return a
		}
		a.d = d
	}
	// One path serves the whole walk: each level appends its token in
	// place of its previous sibling's.
	a.walk(root, make(path, 0, 16), true)
	if a.uncheckable == nil {
		a.findLoops()
	}
	return a
}

// walk checks one schema and everything under it.
func (a *doc) walk(s *jsontree.Value, ptr path, isRoot bool) {
	if s.Kind == jsontree.Bool {
		return
	}
	if s.Kind != jsontree.Object {
		a.failCheck(ptr, "a schema must be an object or a boolean, not %s", s.Kind)
		return
	}
	if s.Has("$defs") && s.Has("definitions") {
		a.failCheck(ptr, "both $defs and definitions are present; the validator accepts one of them")
	}
	for _, m := range s.Obj {
		p := append(ptr, m.Name)
		v := m.Val
		switch keyword(m.Name, a.d) {
		case clUnknown:
			// Ignored by the dialect, and so by this package.
		case clSchema:
			if a.isSchema(v, p) {
				a.walk(v, p, false)
				if inPlace(m.Name) {
					a.edge(s, v)
				}
			}
		case clSchemaList:
			if v.Kind != jsontree.Array {
				a.failCheck(p, "%s must be an array of schemas", m.Name)
				continue
			}
			for i, e := range v.Arr {
				ep := append(p, strconv.Itoa(i))
				if a.isSchema(e, ep) {
					a.walk(e, ep, false)
					if inPlace(m.Name) {
						a.edge(s, e)
					}
				}
			}
		case clSchemaMap, clContainer:
			if v.Kind != jsontree.Object {
				a.failCheck(p, "%s must be an object of schemas", m.Name)
				continue
			}
			for _, e := range v.Obj {
				ep := append(p, e.Name)
				if m.Name == "patternProperties" && !a.compiles(e.Name) {
					a.failCheck(ep, "the patternProperties pattern %s uses regular expression features Go's regexp (RE2) does not have, so which names it admits cannot be checked", quote(e.Name))
				}
				if a.isSchema(e.Val, ep) {
					a.walk(e.Val, ep, false)
					if inPlace(m.Name) {
						a.edge(s, e.Val)
					}
				}
			}
		case clItems:
			switch {
			case v.Kind == jsontree.Array && a.d != draft2020:
				for i, e := range v.Arr {
					ep := append(p, strconv.Itoa(i))
					if a.isSchema(e, ep) {
						a.walk(e, ep, false)
					}
				}
			case v.Kind == jsontree.Array:
				a.failCheck(p, "items must be a schema in 2020-12 (tuples are written prefixItems)")
			case a.isSchema(v, p):
				a.walk(v, p, false)
			}
		case clDeps:
			if v.Kind != jsontree.Object {
				a.failCheck(p, "dependencies must be an object")
				continue
			}
			for _, e := range v.Obj {
				ep := append(p, e.Name)
				if e.Val.Kind == jsontree.Array {
					a.checkNames(e.Val, ep, "dependencies")
				} else if a.isSchema(e.Val, ep) {
					a.walk(e.Val, ep, false)
					a.edge(s, e.Val)
				}
			}
		case clNumber:
			if _, ok := finite(v); !ok {
				a.failCheck(p, "%s must be a number (got %s)", m.Name, short(v))
			}
		case clPositive:
			if f, ok := finite(v); !ok || f <= 0 {
				a.failCheck(p, "%s must be a number greater than 0 (got %s)", m.Name, short(v))
			}
		case clCount:
			if !isCount(v) {
				a.failCheck(p, "%s must be a non-negative integer (got %s)", m.Name, short(v))
			}
		case clString:
			if v.Kind != jsontree.String {
				a.failCheck(p, "%s must be a string", m.Name)
			} else if m.Name == "pattern" {
				a.compiles(v.Str)
			}
		case clBool:
			if v.Kind != jsontree.Bool {
				a.failCheck(p, "%s must be true or false", m.Name)
			}
		case clNames:
			a.checkNames(v, p, m.Name)
		case clNamesMap:
			if v.Kind != jsontree.Object {
				a.failCheck(p, "%s must be an object of arrays of names", m.Name)
				continue
			}
			for _, e := range v.Obj {
				a.checkNames(e.Val, append(p, e.Name), m.Name)
			}
		case clType:
			a.checkType(v, p)
		case clArray:
			if v.Kind != jsontree.Array {
				a.failCheck(p, "%s must be an array", m.Name)
			}
		case clAny:
		case clRef:
			if v.Kind != jsontree.String {
				a.failCheck(p, "%s must be a string", m.Name)
				continue
			}
			if m.Name != "$ref" {
				a.failCheck(p, "%s is not supported: mcphost cannot tell statically what it refers to", m.Name)
				continue
			}
			r, reason := a.resolve(v.Str)
			if reason == remoteRef {
				if a.remote == nil {
					a.remote = map[*jsontree.Value]*finding{}
				}
				f := &finding{p.String(), fmt.Sprintf("$ref %s is not checked: it refers outside the schema, and mcphost fetches nothing a server names, so the value there is checked as anything", quote(v.Str))}
				a.remote[s] = f
				if a.firstRemote == nil {
					a.firstRemote = f
				}
				continue
			}
			if reason != "" {
				a.failCheck(p, "$ref %s %s", quote(v.Str), reason)
				continue
			}
			if a.refs == nil {
				a.refs = map[*jsontree.Value]ref{}
			}
			a.refs[s] = r
			a.edge(s, r.target)
		case clAnnotation:
			a.checkAnnotation(m.Name, v, p)
		case clIdentity:
			switch m.Name {
			case "$schema":
				if isRoot {
					continue
				}
				d, ok := dialectOf(v.Str)
				if v.Kind != jsontree.String || !ok || d != a.d {
					a.failCheck(p, "a nested $schema that changes the dialect is not supported")
				}
			case "$id":
				if v.Kind != jsontree.String {
					a.failCheck(p, "$id must be a string")
				} else if !isRoot {
					a.failCheck(p, "$id below the root (an embedded schema resource) is not supported: it changes what references inside it mean")
				}
			case "$recursiveAnchor":
				a.failCheck(p, "$recursiveAnchor is not supported")
			case "$vocabulary":
			default: // $anchor, $dynamicAnchor: harmless unless referred to, and "#name" references are refused.
				if v.Kind != jsontree.String {
					a.failCheck(p, "%s must be a string", m.Name)
				}
			}
		}
	}
}

// edge records that schema s applies v in place.
func (a *doc) edge(s, v *jsontree.Value) {
	if a.edges == nil {
		a.edges = map[*jsontree.Value][]*jsontree.Value{}
	}
	a.edges[s] = append(a.edges[s], v)
}

// isSchema reports whether v can be a schema, and records it if not.
func (a *doc) isSchema(v *jsontree.Value, ptr path) bool {
	if v.Kind == jsontree.Object || v.Kind == jsontree.Bool {
		return true
	}
	a.failCheck(ptr, "a schema must be an object or a boolean, not %s", v.Kind)
	return false
}

func (a *doc) checkNames(v *jsontree.Value, ptr path, kw string) {
	if v.Kind != jsontree.Array {
		a.failCheck(ptr, "%s must be an array of names", kw)
		return
	}
	for i, e := range v.Arr {
		if e.Kind != jsontree.String {
			a.failCheck(append(ptr, strconv.Itoa(i)), "%s must list names (strings)", kw)
			return
		}
	}
}

func (a *doc) checkType(v *jsontree.Value, ptr path) {
	switch v.Kind {
	case jsontree.String:
		if !isTypeName(v.Str) {
			a.failCheck(ptr, "type %s is not a JSON Schema type", quote(v.Str))
		}
	case jsontree.Array:
		for i, e := range v.Arr {
			if e.Kind != jsontree.String || !isTypeName(e.Str) {
				a.failCheck(append(ptr, strconv.Itoa(i)), "type must list JSON Schema type names")
				return
			}
		}
	default:
		a.failCheck(ptr, "type must be a type name or an array of them")
	}
}

func (a *doc) checkAnnotation(name string, v *jsontree.Value, ptr path) {
	switch name {
	case "default":
	case "examples":
		if v.Kind != jsontree.Array {
			a.failAnnotation(ptr, "examples must be an array")
		}
	case "deprecated", "readOnly", "writeOnly":
		if v.Kind != jsontree.Bool {
			a.failAnnotation(ptr, "%s must be true or false", name)
		}
	case "contentSchema":
		if v.Kind != jsontree.Object && v.Kind != jsontree.Bool {
			a.failAnnotation(ptr, "contentSchema must be a schema")
		}
	default: // title, description, $comment, format, contentEncoding, contentMediaType
		if v.Kind != jsontree.String {
			a.failAnnotation(ptr, "%s must be a string, not %s", name, v.Kind)
		}
	}
}

// remoteRef is resolve's reason for a reference outside the document.
const remoteRef = "refers outside the schema; remote references are not loaded"

// resolve finds what a $ref refers to. Only references into this document
// are followed ("#" and "#/json/pointer"): the validator is given no
// loader, so a remote one could not be checked, and mcphost fetches
// nothing a server names.
func (a *doc) resolve(s string) (ref, string) {
	u, err := url.Parse(s)
	if err != nil {
		return ref{}, fmt.Sprintf("is not a valid URI reference: %v", err)
	}
	if u.Scheme != "" || u.Opaque != "" || u.Host != "" || u.Path != "" || u.RawQuery != "" {
		return ref{}, remoteRef
	}
	frag := u.Fragment
	if frag != "" && frag[0] != '/' {
		return ref{}, "names an anchor; only JSON pointer references (#/...) are supported"
	}
	cur := a.root
	if frag == "" {
		return ref{cur, ""}, ""
	}
	segs := strings.Split(frag[1:], "/")
	for i := 0; i < len(segs); i++ {
		if cur.Kind != jsontree.Object {
			return ref{}, "does not resolve to a schema in this document"
		}
		kw := jsontree.UnescapeToken(segs[i])
		v := cur.Get(kw)
		if v == nil {
			return ref{}, "does not resolve to a schema in this document"
		}
		switch keyword(kw, a.d) {
		case clSchema:
			cur = v
			continue
		case clItems:
			if v.Kind != jsontree.Array {
				cur = v
				continue
			}
		case clSchemaList:
		case clSchemaMap, clContainer, clDeps:
			i++
			if i >= len(segs) || v.Kind != jsontree.Object {
				return ref{}, "does not resolve to a schema in this document"
			}
			e := v.Get(jsontree.UnescapeToken(segs[i]))
			if e == nil {
				return ref{}, "does not resolve to a schema in this document"
			}
			cur = e
			continue
		default:
			return ref{}, "does not resolve to a schema in this document"
		}
		// An array of schemas: the next token is an index.
		i++
		if i >= len(segs) || v.Kind != jsontree.Array {
			return ref{}, "does not resolve to a schema in this document"
		}
		n, err := strconv.Atoi(segs[i])
		if err != nil || n < 0 || n >= len(v.Arr) || (len(segs[i]) > 1 && segs[i][0] == '0') {
			return ref{}, "does not resolve to a schema in this document"
		}
		cur = v.Arr[n]
	}
	if cur.Kind != jsontree.Object && cur.Kind != jsontree.Bool {
		return ref{}, "does not resolve to a schema in this document"
	}
	return ref{cur, frag}, ""
}

// findLoops refuses a schema in which a chain of in-place keywords ($ref,
// allOf, anyOf, ...) comes back to where it started: validating it would
// recurse forever without consuming any input (the validator would
// overflow its stack, and a server could use that to crash the host).
func (a *doc) findLoops() {
	if len(a.edges) == 0 {
		return // nothing applies anything in place: no loop, no fan-out
	}
	const (
		white = iota
		grey
		black
	)
	color := make(map[*jsontree.Value]uint8, len(a.edges))
	var visit func(v *jsontree.Value) bool
	visit = func(v *jsontree.Value) bool {
		switch color[v] {
		case grey:
			return true
		case black:
			return false
		}
		color[v] = grey
		for _, w := range a.edges[v] {
			if visit(w) {
				return true
			}
		}
		color[v] = black
		return false
	}
	// Visit in a fixed order (the root first) so the report is stable.
	if visit(a.root) {
		a.failCheck(nil, "the schema refers to itself in place ($ref, allOf, anyOf, ...) without descending into the value, which no validator can finish")
		return
	}
	for v := range a.edges {
		if visit(v) {
			a.failCheck(nil, "the schema refers to itself in place ($ref, allOf, anyOf, ...) without descending into the value, which no validator can finish")
			return
		}
	}
	// Without loops the in-place keywords form a DAG, but shared
	// references can still multiply: a chain of anyOfs whose two branches
	// refer to the same next one doubles at every step. The validator
	// visits every path (anyOf visits all its branches), so bound them.
	cost := make(map[*jsontree.Value]int, len(a.edges))
	var paths func(v *jsontree.Value) int
	paths = func(v *jsontree.Value) int {
		if c, ok := cost[v]; ok {
			return c
		}
		n := 1
		for _, w := range a.edges[v] {
			n = min(n+paths(w), maxInPlace+1)
		}
		cost[v] = n
		return n
	}
	for v := range a.edges {
		if paths(v) > maxInPlace {
			a.failCheck(nil, "validating a value would apply more than %d schemas to it in place (nested anyOf/allOf/oneOf/$ref that share references multiply), which mcphost refuses rather than spend unbounded time on every call", maxInPlace)
			return
		}
	}
}

// maxInPlace bounds the schemas the validator may apply to one value.
const maxInPlace = 10000

// compiles reports (and caches) whether a pattern compiles as RE2 once
// its ECMA-262 \uXXXX escapes are written the RE2 way.
func (a *doc) compiles(p string) bool {
	ok, seen := a.patterns[p]
	if !seen {
		_, err := regexp.Compile(toRE2(p))
		ok = err == nil
		if a.patterns == nil {
			a.patterns = map[string]bool{}
		}
		a.patterns[p] = ok
	}
	return ok
}

// toRE2 rewrites the \uXXXX escapes of an ECMA-262 pattern (which JSON
// Schema patterns are) as \x{XXXX}, the same character in RE2 syntax.
// Everything else is left alone: a pattern that still does not compile
// uses a feature RE2 does not have (lookaround, backreferences).
func toRE2(p string) string {
	if !strings.Contains(p, `\u`) {
		return p
	}
	var sb strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] == '\\' && i+1 < len(p) {
			if p[i+1] == 'u' && i+6 <= len(p) && isHex(p[i+2:i+6]) {
				sb.WriteString(`\x{` + p[i+2:i+6] + `}`)
				i += 5
				continue
			}
			sb.WriteByte(p[i])
			sb.WriteByte(p[i+1])
			i++
			continue
		}
		sb.WriteByte(p[i])
	}
	return sb.String()
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// finite returns a number's value as a float64, if it is one.
func finite(v *jsontree.Value) (float64, bool) {
	if v.Kind != jsontree.Number {
		return 0, false
	}
	f, err := strconv.ParseFloat(v.Raw, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

// isCount reports whether v is a non-negative integer, however written
// (5, 5.0 and 5e0 all are).
func isCount(v *jsontree.Value) bool {
	r, ok := number(v)
	return ok && r.IsInt() && r.Sign() >= 0
}

// countLiteral writes a count for the validator, which reads counts as
// 32-bit integers: a larger bound is written as the largest such integer.
// That is exact for every instance mcphost can handle, since no argument
// text of 2 GiB reaches it: an array, string or object that large cannot
// be present, so a larger maximum admits the same and a larger minimum
// refuses the same.
func countLiteral(v *jsontree.Value) string {
	r, _ := number(v)
	n := r.Num()
	if n.Cmp(big.NewInt(math.MaxInt32)) > 0 {
		return strconv.Itoa(math.MaxInt32)
	}
	return n.String()
}
