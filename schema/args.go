package schema

import (
	"github.com/mcphost/mcphost/internal/jsontree"

	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ArgumentError is the error for arguments that do not fit a tool's input
// schema. Its Error text is written for the model that sent them, to
// correct its call: where (a JSON pointer into the arguments), what was
// expected and what came.
type ArgumentError struct {
	// Pointer locates the offending value in the arguments (RFC 6901);
	// "" is the arguments as a whole.
	Pointer string
	// Reason says what was expected and what was given.
	Reason string
	// Suggestion, for an unknown field, is the declared field whose name
	// is closest to it, if one is close; "" otherwise.
	Suggestion string
	// Err is the validator's own error, when there was one.
	Err error
}

// Error returns the message for the model, e.g.
//
//	invalid arguments: /qeury: unknown field; did you mean "query"?
func (e *ArgumentError) Error() string {
	var b strings.Builder
	b.WriteString("invalid arguments: ")
	if e.Pointer != "" {
		b.WriteString(showPointer(e.Pointer))
		b.WriteString(": ")
	}
	b.WriteString(e.Reason)
	if e.Suggestion != "" {
		fmt.Fprintf(&b, "; did you mean %s?", quote(e.Suggestion))
	}
	return b.String()
}

// Unwrap returns the validator's error, if any.
func (e *ArgumentError) Unwrap() error { return e.Err }

func argError(ptr, format string, args ...any) *ArgumentError {
	return &ArgumentError{Pointer: ptr, Reason: fmt.Sprintf(format, args...)}
}

// readArgs parses arguments a model or a caller sent. Nothing, white space
// and null mean no arguments, {}. Anything that is not one JSON object is
// refused, and so is what different JSON parsers would read differently
// (a field given twice, an unpaired surrogate escape): the server must see
// what was checked. The tree is built in p's memory: the caller is done
// with it before p parses again.
func readArgs(p *jsontree.Parser, args []byte) (*jsontree.Value, error) {
	if trimmedEmpty(args) {
		return &jsontree.Value{Kind: jsontree.Object, Obj: []jsontree.Member{}}, nil
	}
	v, err := p.Parse(args, maxNesting)
	soft := softRefusal(err)
	switch {
	case soft == nil && err != nil:
		return nil, &ArgumentError{Reason: "the arguments are " + err.Error() + "; send one JSON object", Err: err}
	case soft != nil && rootKind(args) != jsontree.Object:
		// The whole text is JSON (Parse read it all): the first thing
		// to fix is that it is not an object.
		return nil, argError("", "the arguments must be a JSON object, not %s", article(rootKind(args)))
	case soft != nil && soft.Err == jsontree.ErrDuplicateKey:
		return nil, argError(soft.Pointer, "this field is given more than once; give each field once")
	case soft != nil:
		return nil, argError("", "a string holds an unpaired UTF-16 surrogate escape (a lone \\uD800-\\uDFFF), which is not a character")
	case v.Kind != jsontree.Object:
		return nil, argError("", "the arguments must be a JSON object, not %s", article(v.Kind))
	}
	return v, nil
}

// FromModel maps arguments the model sent back to what the server
// expects. A null for a property that was optional in the original schema
// (and which that schema therefore refuses) is removed, at any depth the
// strict form reaches, so the server sees exactly what it would have seen
// had the field been omitted: that is how the strict form, in which every
// property is required, says "omitted". Nulls the original admits for a
// required property stay. The removal is the same whichever form was
// offered: under the closed form a null there could only fail Check.
//
// Empty arguments ("", white space, null) are {}. Everything else is
// returned as the model wrote it, byte for byte where nothing was
// removed. Arguments that are not one JSON object give an *ArgumentError.
func (c *Closed) FromModel(args json.RawMessage) (json.RawMessage, error) {
	p := parsers.Get().(*jsontree.Parser)
	defer parsers.Put(p)
	v, err := readArgs(p, args)
	if err != nil {
		return nil, err
	}
	return c.fromModel(args, v), nil
}

// fromModel is FromModel on arguments readArgs parsed into v; it removes
// the nulls from v itself.
func (c *Closed) fromModel(args json.RawMessage, v *jsontree.Value) json.RawMessage {
	if c.nulls.apply(v) || trimmedEmpty(args) {
		return encode(v)
	}
	return bytes.Clone(bytes.TrimSpace(args))
}

// ForServer is FromModel followed by Check of what it returned, with the
// same results and errors, parsing the arguments once instead of twice: a
// call does both, and the parse is a good part of the host's work on it.
// The tree checked is the one the returned text encodes: that text is
// either the arguments as parsed or the tree's encoding, which repeats
// every literal as written and so parses back to the same tree.
func (c *Closed) ForServer(args json.RawMessage) (json.RawMessage, error) {
	p := parsers.Get().(*jsontree.Parser)
	defer parsers.Put(p)
	v, err := readArgs(p, args)
	if err != nil {
		return nil, err
	}
	out := c.fromModel(args, v)
	if err := c.checkTree(v); err != nil {
		return nil, err
	}
	return out, nil
}

// Check validates server-bound arguments (what FromModel returned) against
// the tool's original schema as closed: objects the closed form closed
// refuse unknown properties. It uses github.com/google/jsonschema-go.
//
// It returns nil; an *ArgumentError whose text tells the model what to
// correct (which field, what was expected, what came, and for an unknown
// field the nearest declared name); or, for a tool whose schema could not
// be interpreted (CheckProblem), an error wrapping ErrUncheckable.
func (c *Closed) Check(args json.RawMessage) error {
	p := parsers.Get().(*jsontree.Parser)
	defer parsers.Put(p)
	v, err := readArgs(p, args)
	if err != nil {
		return err
	}
	return c.checkTree(v)
}

// checkTree is Check on arguments readArgs parsed into v.
func (c *Closed) checkTree(v *jsontree.Value) error {
	if c.CheckProblem != "" {
		return fmt.Errorf("%w: %s; mcphost does not send a call it cannot check", ErrUncheckable, c.CheckProblem)
	}
	ck, err := c.prepare()
	if err != nil {
		return fmt.Errorf("%w: the validator refused it: %v", ErrUncheckable, err)
	}
	inst, ok := instance(v)
	if !ok {
		// A number float64 cannot hold: let encoding/json say so, as
		// the validator would have read it.
		if err := json.Unmarshal(encode(v), &inst); err != nil {
			if ae := outOfRange(v, ""); ae != nil {
				ae.Err = err
				return ae
			}
			return &ArgumentError{Reason: "the arguments cannot be read: " + clip(err.Error()), Err: err}
		}
	}
	verr := ck.rs.Validate(inst)
	if verr == nil {
		return nil
	}
	g := &diagnoser{a: ck.diag, res: map[string]*regexp.Regexp{}}
	if ae := g.check(v, ck.diag.root, "", 0); ae != nil {
		ae.Err = verr
		return ae
	}
	return &ArgumentError{Reason: "the arguments do not fit the tool's input schema: " + clip(verr.Error()), Err: verr}
}

// instance returns the arguments as encoding/json decodes them into an
// any, which is what the validator takes: objects as map[string]any,
// arrays as []any, numbers as float64. It is that decoding done from the
// tree readArgs already built. It reports false for a number outside
// float64's range, which encoding/json refuses; the tree has no repeated
// names, lone surrogates or invalid UTF-8 (readArgs refuses them), so
// nothing else can differ.
func instance(v *jsontree.Value) (any, bool) {
	switch v.Kind {
	case jsontree.Null:
		return nil, true
	case jsontree.Bool:
		return v.Bool, true
	case jsontree.Number:
		f, err := strconv.ParseFloat(v.Raw, 64)
		return f, err == nil
	case jsontree.String:
		return v.Str, true
	case jsontree.Array:
		out := make([]any, len(v.Arr))
		for i, e := range v.Arr {
			x, ok := instance(e)
			if !ok {
				return nil, false
			}
			out[i] = x
		}
		return out, true
	default:
		out := make(map[string]any, len(v.Obj))
		for _, m := range v.Obj {
			x, ok := instance(m.Val)
			if !ok {
				return nil, false
			}
			out[m.Name] = x
		}
		return out, true
	}
}

// clip cuts a validator message to a readable length and escapes what
// does not print (it quotes argument values).
func clip(s string) string {
	const max = 400
	var b strings.Builder
	n := 0
	for _, r := range s {
		if n == max {
			b.WriteString("…")
			break
		}
		n++
		if unicode.IsPrint(r) || r == '\n' {
			b.WriteRune(r)
		} else {
			fmt.Fprintf(&b, "\\u%04x", r)
		}
	}
	return b.String()
}

// outOfRange finds a number too large for a float64, which is how the
// validator reads numbers.
func outOfRange(v *jsontree.Value, ptr string) *ArgumentError {
	switch v.Kind {
	case jsontree.Number:
		if _, ok := finite(v); !ok {
			return argError(ptr, "the number %s is out of range", short(v))
		}
	case jsontree.Array:
		for i, e := range v.Arr {
			if ae := outOfRange(e, ptr+"/"+strconv.Itoa(i)); ae != nil {
				return ae
			}
		}
	case jsontree.Object:
		for _, m := range v.Obj {
			if ae := outOfRange(m.Val, ptr+"/"+jsontree.EscapeToken(m.Name)); ae != nil {
				return ae
			}
		}
	}
	return nil
}

// A diagnoser finds, for arguments the validator refused, the first place
// and reason to tell the model. It mirrors the common keywords of the
// validator; the validator alone decides whether arguments pass.
type diagnoser struct {
	a     *doc
	steps int
	res   map[string]*regexp.Regexp
}

// diagnoseBudget bounds the work of one diagnosis (nested anyOf can
// multiply it); past it the validator's own message is used.
const diagnoseBudget = 100000

func (g *diagnoser) check(v, s *jsontree.Value, ptr string, depth int) *ArgumentError {
	if g.steps++; g.steps > diagnoseBudget || depth > 256 {
		return nil
	}
	if s.Kind == jsontree.Bool {
		if s.Bool {
			return nil
		}
		return argError(ptr, "no value is allowed here")
	}
	if r, ok := g.a.refs[s]; ok {
		if ae := g.check(v, r.target, ptr, depth+1); ae != nil {
			return ae
		}
		if g.a.d == draft07 || g.a.d == draft06 {
			return nil
		}
	}
	if types, ok := typesOf(s); ok && !matches(v, types) {
		return argError(ptr, "expected %s, got %s", typeList(types), describe(v))
	}
	if e := s.Get("enum"); e != nil {
		if !isOneOf(v, e.Arr) {
			return argError(ptr, "expected one of %s; got %s", listValues(e.Arr), describe(v))
		}
	}
	if c := s.Get("const"); c != nil && !equal(v, c) {
		return argError(ptr, "expected %s; got %s", short(c), describe(v))
	}
	var ae *ArgumentError
	switch v.Kind {
	case jsontree.Number:
		ae = g.number(v, s, ptr)
	case jsontree.String:
		ae = g.string(v, s, ptr)
	case jsontree.Array:
		ae = g.array(v, s, ptr, depth)
	case jsontree.Object:
		ae = g.object(v, s, ptr, depth)
	}
	if ae != nil {
		return ae
	}
	return g.composition(v, s, ptr, depth)
}

func (g *diagnoser) number(v, s *jsontree.Value, ptr string) *ArgumentError {
	n, ok := number(v)
	if !ok {
		return nil
	}
	bound := func(kw string) (*big.Rat, string) {
		b := s.Get(kw)
		if b == nil {
			return nil, ""
		}
		r, ok := number(b)
		if !ok {
			return nil, ""
		}
		return r, b.Raw
	}
	if r, lit := bound("minimum"); r != nil && n.Cmp(r) < 0 {
		return argError(ptr, "must be at least %s; got %s", lit, v.Raw)
	}
	if r, lit := bound("maximum"); r != nil && n.Cmp(r) > 0 {
		return argError(ptr, "must be at most %s; got %s", lit, v.Raw)
	}
	if r, lit := bound("exclusiveMinimum"); r != nil && n.Cmp(r) <= 0 {
		return argError(ptr, "must be greater than %s; got %s", lit, v.Raw)
	}
	if r, lit := bound("exclusiveMaximum"); r != nil && n.Cmp(r) >= 0 {
		return argError(ptr, "must be less than %s; got %s", lit, v.Raw)
	}
	if r, lit := bound("multipleOf"); r != nil && r.Sign() > 0 {
		if q := new(big.Rat).Quo(n, r); !q.IsInt() {
			return argError(ptr, "must be a multiple of %s; got %s", lit, v.Raw)
		}
	}
	return nil
}

func (g *diagnoser) string(v, s *jsontree.Value, ptr string) *ArgumentError {
	n := utf8.RuneCountInString(v.Str)
	if c := s.Get("minLength"); c != nil {
		if m, err := strconv.Atoi(c.Raw); err == nil && n < m {
			return argError(ptr, "must be at least %s long; got %d", plural(m, "character"), n)
		}
	}
	if c := s.Get("maxLength"); c != nil {
		if m, err := strconv.Atoi(c.Raw); err == nil && n > m {
			return argError(ptr, "must be at most %s long; got %d", plural(m, "character"), n)
		}
	}
	if p := s.Get("pattern"); p != nil && p.Kind == jsontree.String {
		if re := g.re(p.Str); re != nil && !re.MatchString(v.Str) {
			return argError(ptr, "must match the pattern %s; got %s", quote(p.Str), describe(v))
		}
	}
	return nil
}

// plural writes a count of things: "1 item", "2 items".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return strconv.Itoa(n) + " " + thing + "s"
}

func (g *diagnoser) re(p string) *regexp.Regexp {
	re, ok := g.res[p]
	if !ok {
		re, _ = regexp.Compile(p)
		g.res[p] = re
	}
	return re
}

func (g *diagnoser) array(v, s *jsontree.Value, ptr string, depth int) *ArgumentError {
	at := func(i int) string { return ptr + "/" + strconv.Itoa(i) }
	items := s.Get("items")
	rest := 0 // the first index that items (or additionalItems) applies to
	if g.a.d == draft07 || g.a.d == draft06 {
		if items != nil && items.Kind == jsontree.Array {
			for i, is := range items.Arr {
				if i < len(v.Arr) {
					if ae := g.check(v.Arr[i], is, at(i), depth+1); ae != nil {
						return ae
					}
				}
			}
			rest = len(items.Arr)
			items = s.Get("additionalItems")
		}
	} else if pre := s.Get("prefixItems"); pre != nil {
		for i, is := range pre.Arr {
			if i < len(v.Arr) {
				if ae := g.check(v.Arr[i], is, at(i), depth+1); ae != nil {
					return ae
				}
			}
		}
		rest = len(pre.Arr)
	}
	if items != nil && items.Kind != jsontree.Array {
		for i := rest; i < len(v.Arr); i++ {
			if ae := g.check(v.Arr[i], items, at(i), depth+1); ae != nil {
				return ae
			}
		}
	}
	if c := s.Get("minItems"); c != nil {
		if m, err := strconv.Atoi(c.Raw); err == nil && len(v.Arr) < m {
			return argError(ptr, "must have at least %s; got %d", plural(m, "item"), len(v.Arr))
		}
	}
	if c := s.Get("maxItems"); c != nil {
		if m, err := strconv.Atoi(c.Raw); err == nil && len(v.Arr) > m {
			return argError(ptr, "must have at most %s; got %d", plural(m, "item"), len(v.Arr))
		}
	}
	// Pairwise comparison is quadratic; the validator hashes, and its
	// message stands for long arrays.
	if u := s.Get("uniqueItems"); u != nil && u.Bool && len(v.Arr) <= 1000 {
		for i := range v.Arr {
			for j := i + 1; j < len(v.Arr); j++ {
				if equal(v.Arr[i], v.Arr[j]) {
					return argError(at(j), "repeats item %d; the items must be unique", i)
				}
			}
		}
	}
	if c := s.Get("contains"); c != nil {
		found := false
		for _, e := range v.Arr {
			if g.check(e, c, "", depth+1) == nil {
				found = true
				break
			}
		}
		if !found {
			return argError(ptr, "must contain an item that matches what the schema asks (contains)")
		}
	}
	return nil
}

func (g *diagnoser) object(v, s *jsontree.Value, ptr string, depth int) *ArgumentError {
	at := func(name string) string { return ptr + "/" + jsontree.EscapeToken(name) }
	props := s.Get("properties")
	pats := s.Get("patternProperties")
	matchesPattern := func(name string) []*jsontree.Value {
		var out []*jsontree.Value
		for _, p := range pats.Members() {
			if re := g.re(p.Name); re != nil && re.MatchString(name) {
				out = append(out, p.Val)
			}
		}
		return out
	}
	ap := s.Get("additionalProperties")
	if ap != nil && ap.Kind == jsontree.Bool && !ap.Bool {
		for _, m := range v.Obj {
			if props.Get(m.Name) != nil || len(matchesPattern(m.Name)) > 0 {
				continue
			}
			ae := argError(at(m.Name), "unknown field")
			var names []string
			for _, p := range props.Members() {
				if v.Get(p.Name) == nil {
					names = append(names, p.Name)
				}
			}
			ae.Suggestion = suggest(m.Name, names)
			if ae.Suggestion == "" {
				ae.Reason += "; " + fieldList(props)
			}
			return ae
		}
	}
	// Required fields after unknown ones: a misspelled field ("qeury")
	// explains the missing one, and "did you mean" is the better help.
	for _, n := range s.Get("required").Elements() {
		if v.Get(n.Str) == nil {
			hint := ""
			if ps := props.Get(n.Str); ps != nil {
				if t, ok := typesOf(ps); ok {
					hint = " (" + typeList(t) + ")"
				}
			}
			return argError(at(n.Str), "missing required field%s", hint)
		}
	}
	for _, m := range v.Obj {
		known := false
		if ps := props.Get(m.Name); ps != nil {
			known = true
			if ae := g.check(m.Val, ps, at(m.Name), depth+1); ae != nil {
				return ae
			}
		}
		for _, ps := range matchesPattern(m.Name) {
			known = true
			if ae := g.check(m.Val, ps, at(m.Name), depth+1); ae != nil {
				return ae
			}
		}
		if !known && ap != nil {
			if ae := g.check(m.Val, ap, at(m.Name), depth+1); ae != nil {
				return ae
			}
		}
	}
	if pn := s.Get("propertyNames"); pn != nil {
		for _, m := range v.Obj {
			if ae := g.check(strValue(m.Name), pn, at(m.Name), depth+1); ae != nil {
				ae.Reason = "the field name does not fit: " + ae.Reason
				return ae
			}
		}
	}
	if c := s.Get("minProperties"); c != nil {
		if m, err := strconv.Atoi(c.Raw); err == nil && len(v.Obj) < m {
			return argError(ptr, "must have at least %d fields; got %d", m, len(v.Obj))
		}
	}
	if c := s.Get("maxProperties"); c != nil {
		if m, err := strconv.Atoi(c.Raw); err == nil && len(v.Obj) > m {
			return argError(ptr, "must have at most %d fields; got %d", m, len(v.Obj))
		}
	}
	if ds := s.Get("dependentSchemas"); ds != nil && g.a.d != draft07 && g.a.d != draft06 {
		for _, d := range ds.Obj {
			if v.Get(d.Name) != nil {
				if ae := g.check(v, d.Val, ptr, depth+1); ae != nil {
					return ae
				}
			}
		}
	}
	if up := s.Get("unevaluatedProperties"); up != nil && ap == nil {
		// Roughly: the properties this schema itself does not declare (the
		// validator also counts what in-place subschemas evaluated).
		for _, m := range v.Obj {
			if props.Get(m.Name) == nil && len(matchesPattern(m.Name)) == 0 {
				if ae := g.check(m.Val, up, at(m.Name), depth+1); ae != nil {
					return ae
				}
			}
		}
	}
	deps := s.Get("dependentRequired")
	if g.a.d == draft07 || g.a.d == draft06 {
		deps = s.Get("dependencies")
	}
	for _, d := range deps.Members() {
		if v.Get(d.Name) == nil || d.Val.Kind != jsontree.Array {
			continue
		}
		for _, n := range d.Val.Arr {
			if v.Get(n.Str) == nil {
				return argError(at(n.Str), "missing field, required when %s is given", quote(d.Name))
			}
		}
	}
	return nil
}

func (g *diagnoser) composition(v, s *jsontree.Value, ptr string, depth int) *ArgumentError {
	for _, b := range s.Get("allOf").Elements() {
		if ae := g.check(v, b, ptr, depth+1); ae != nil {
			return ae
		}
	}
	if l := s.Get("anyOf").Elements(); l != nil {
		if ae := g.oneOfMany(v, l, ptr, depth, false); ae != nil {
			return ae
		}
	}
	if l := s.Get("oneOf").Elements(); l != nil {
		if ae := g.oneOfMany(v, l, ptr, depth, true); ae != nil {
			return ae
		}
	}
	if n := s.Get("not"); n != nil && g.check(v, n, ptr, depth+1) == nil {
		return argError(ptr, "must not match what the schema excludes (not); got %s", describe(v))
	}
	if c := s.Get("if"); c != nil && g.a.d != draft06 {
		branch := s.Get("else")
		if g.check(v, c, ptr, depth+1) == nil {
			branch = s.Get("then")
		}
		if branch != nil {
			return g.check(v, branch, ptr, depth+1)
		}
	}
	return nil
}

// oneOfMany diagnoses anyOf (exactly false) and oneOf (exactly true).
func (g *diagnoser) oneOfMany(v *jsontree.Value, list []*jsontree.Value, ptr string, depth int, exactly bool) *ArgumentError {
	var errs []*ArgumentError
	ok := 0
	for _, b := range list {
		if ae := g.check(v, b, ptr, depth+1); ae != nil {
			errs = append(errs, ae)
		} else {
			ok++
		}
	}
	switch {
	case ok == 1 || ok > 1 && !exactly:
		return nil
	case ok > 1:
		return argError(ptr, "matches more than one of the allowed forms, and must match exactly one (oneOf)")
	}
	// The branches of the value's own type say the most.
	var typed []*ArgumentError
	var forms []string
	for i, b := range list {
		t, known := typesOf(b)
		if !known {
			t, known = typesFromValues(b)
		}
		if known {
			forms = append(forms, typeList(t))
		}
		if !known || matches(v, t) {
			typed = append(typed, errs[i])
		}
	}
	if len(typed) == 1 {
		return typed[0]
	}
	// Among object branches, the one that declares most of the fields
	// given is the one the sender meant.
	if v.Kind == jsontree.Object && len(typed) > 1 {
		best, bestScore, tie := -1, -1, false
		for i, b := range list {
			if errs[i] == nil {
				continue
			}
			score := 0
			props := g.deref(b).Get("properties")
			for _, m := range v.Obj {
				if props.Get(m.Name) != nil {
					score++
				}
			}
			switch {
			case score > bestScore:
				best, bestScore, tie = i, score, false
			case score == bestScore:
				tie = true
			}
		}
		if best >= 0 && !tie && bestScore > 0 {
			return errs[best]
		}
	}
	ae := argError(ptr, "does not match any of the %d allowed forms", len(list))
	if len(forms) == len(list) {
		ae.Reason += " (" + strings.Join(forms, "; ") + ")"
	}
	ae.Reason += "; got " + describe(v)
	return ae
}

// deref follows a schema's $ref chain.
func (g *diagnoser) deref(s *jsontree.Value) *jsontree.Value {
	for range 64 {
		r, ok := g.a.refs[s]
		if !ok {
			break
		}
		s = r.target
	}
	return s
}

func matches(v *jsontree.Value, types []string) bool {
	for _, t := range types {
		if ofType(v, t) {
			return true
		}
	}
	return false
}

func isOneOf(v *jsontree.Value, list []*jsontree.Value) bool {
	for _, e := range list {
		if equal(v, e) {
			return true
		}
	}
	return false
}

// typeList writes ["string", "null"] as "string or null".
func typeList(types []string) string {
	switch len(types) {
	case 0:
		return "nothing"
	case 1:
		return types[0]
	}
	return strings.Join(types[:len(types)-1], ", ") + " or " + types[len(types)-1]
}

// describe writes a value's type and (short) value for a message.
func describe(v *jsontree.Value) string {
	switch v.Kind {
	case jsontree.Null:
		return "null"
	case jsontree.Object:
		return "an object"
	case jsontree.Array:
		return "an array"
	case jsontree.Number:
		if isInteger(v) {
			return "integer " + v.Raw
		}
		return "number " + v.Raw
	case jsontree.String:
		return "string " + short(v)
	default:
		return "boolean " + short(v)
	}
}

func listValues(vals []*jsontree.Value) string {
	const max = 20
	var parts []string
	for i, v := range vals {
		if i == max {
			parts = append(parts, fmt.Sprintf("… (%d more)", len(vals)-max))
			break
		}
		parts = append(parts, short(v))
	}
	return strings.Join(parts, ", ")
}

func fieldList(props *jsontree.Value) string {
	const max = 30
	if len(props.Members()) == 0 {
		return "this object takes no fields"
	}
	var parts []string
	for i, p := range props.Obj {
		if i == max {
			parts = append(parts, fmt.Sprintf("… (%d more)", len(props.Obj)-max))
			break
		}
		parts = append(parts, quote(p.Name))
	}
	return "the fields here are " + strings.Join(parts, ", ")
}

// suggest returns the candidate nearest to name, if one is near enough to
// be a likely slip: the same but for case and separators ("file_path",
// "filePath"), or at most two edits (a typo, a swap, a missing or extra
// letter) away, and no more than a third of the longer name. Ties go to
// the first candidate, which is in declared order.
func suggest(name string, candidates []string) string {
	const long = 64 // longer names are not compared: the distance is quadratic
	norm := func(s string) string {
		s = strings.ToLower(s)
		return strings.NewReplacer("_", "", "-", "", " ", "").Replace(s)
	}
	if utf8.RuneCountInString(name) > long {
		return ""
	}
	best, bestD := "", 3
	for _, c := range candidates {
		if utf8.RuneCountInString(c) > long {
			continue
		}
		if norm(c) == norm(name) {
			return c
		}
		d := distance(strings.ToLower(name), strings.ToLower(c))
		if d < bestD && d*3 <= max(utf8.RuneCountInString(c), utf8.RuneCountInString(name)) {
			best, bestD = c, d
		}
	}
	return best
}

// distance is the optimal string alignment distance: insertions,
// deletions, substitutions and swaps of neighbours each count one.
func distance(a, b string) int {
	x, y := []rune(a), []rune(b)
	d := make([][]int, len(x)+1)
	for i := range d {
		d[i] = make([]int, len(y)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(x); i++ {
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(x)][len(y)]
}
