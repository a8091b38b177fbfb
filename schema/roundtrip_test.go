package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/mcphost/mcphost/internal/jsontree"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// asModel writes args the way a model decoding the strict form sends
// them: every optional property it leaves out is present as null.
func asModel(v *jsontree.Value, m *nullMap) {
	if m == nil {
		return
	}
	switch v.Kind {
	case jsontree.Object:
		for _, name := range m.optional {
			if v.Get(name) == nil {
				v.Obj = append(v.Obj, jsontree.Member{Name: name, Val: nullValue()})
			}
		}
		for _, mem := range v.Obj {
			asModel(mem.Val, m.props[mem.Name])
		}
	case jsontree.Array:
		for _, e := range v.Arr {
			asModel(e, m.items)
		}
	}
}

// resolvedForms caches validStrict's resolved schemas by their text: the
// property tests validate many arguments against each form.
var resolvedForms sync.Map // string -> *jsonschema.Resolved

// validStrict validates args against a strict form with the validator
// (its patterns, written for providers in ECMA-262 syntax, rewritten for
// RE2).
func validStrict(t testing.TB, form json.RawMessage, args []byte) error {
	t.Helper()
	rs, ok := resolvedForms.Load(string(form))
	if !ok {
		p, err := parse(form)
		if err != nil {
			t.Fatal(err)
		}
		re2Patterns(p)
		var s jsonschema.Schema
		if err := json.Unmarshal(encode(p), &s); err != nil {
			t.Fatalf("the strict form does not unmarshal: %v", err)
		}
		r, err := s.Resolve(nil)
		if err != nil {
			t.Fatalf("the strict form does not resolve: %v", err)
		}
		rs, _ = resolvedForms.LoadOrStore(string(form), r)
	}
	var inst any
	if err := json.Unmarshal(args, &inst); err != nil {
		t.Fatal(err)
	}
	return rs.(*jsonschema.Resolved).Validate(inst)
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return reflect.DeepEqual(x, y)
}

// exactForm returns the strict form for p of schema before relax moves
// anything out of it: the form that holds every constraint of the
// original, against which the offered form is compared. It is nil where
// there is no strict form for p.
func exactForm(t testing.TB, schema json.RawMessage, p Profile) json.RawMessage {
	t.Helper()
	pv, err := parse(schema)
	if err != nil {
		t.Fatal(err)
	}
	a := analyze(pv)
	if a.uncheckable != nil || a.malformed != nil {
		return nil
	}
	v, _, prob := strictForm(a, p)
	if prob != nil {
		return nil
	}
	return encode(v)
}

// modelArgs writes args the way a model decoding p's strict form sends
// them: with a null for every optional property left out where the form
// requires every property (OpenAI), as they are where it keeps them
// optional (Anthropic).
func modelArgs(t testing.TB, p Profile, args []byte, m *nullMap) []byte {
	t.Helper()
	if p.optionalProperties() {
		return args
	}
	pv, err := parse(args)
	if err != nil {
		t.Fatal(err)
	}
	asModel(pv, m)
	return encode(pv)
}

// roundTrip proves, for arguments valid under the original schema and
// every profile with a strict form, that the model's version of them is
// valid under the form offered to that profile and under its exact form
// (every constraint kept), and that FromModel turns it back into exactly
// them, which Check passes.
func roundTrip(t *testing.T, id string, c *Closed, args []byte) {
	t.Helper()
	if err := c.Check(args); err != nil {
		t.Errorf("%s: valid arguments %s refused: %v", id, args, err)
		return
	}
	for _, p := range Profiles() {
		if c.strict[p] == nil {
			continue
		}
		model := modelArgs(t, p, args, c.nulls)
		// A strict form offered to no profile may use what the
		// validator cannot read either (a lookahead pattern, say);
		// FromModel is still tested below.
		if form, offered := c.For(p); offered {
			if err := validStrict(t, form, model); err != nil {
				t.Errorf("%s: the %s strict form refuses the model's version %s of valid arguments: %v", id, p, model, err)
				return
			}
			if err := validStrict(t, exactForm(t, c.Original, p), model); err != nil {
				t.Errorf("%s: the exact %s strict form refuses the model's version %s of valid arguments: %v", id, p, model, err)
				return
			}
		}
		back, err := c.FromModel(model)
		if err != nil {
			t.Errorf("%s: FromModel(%s): %v", id, model, err)
			return
		}
		if !jsonEqual(t, back, args) {
			t.Errorf("%s: %s: FromModel(%s) = %s, want %s", id, p, model, back, args)
		}
		if err := c.Check(back); err != nil {
			t.Errorf("%s: Check(FromModel(%s)): %v", id, model, err)
		}
	}
}

// TestCorpusArguments checks, for every corpus schema, the hand-written
// arguments in testdata/corpus_args.json: the valid ones pass Check and,
// where there is a strict form, survive the null round trip; the invalid
// ones are refused at the expected place.
func TestCorpusArguments(t *testing.T) {
	var cases map[string]struct {
		Valid   []json.RawMessage `json:"valid"`
		Invalid []struct {
			Args    json.RawMessage `json:"args"`
			Pointer string          `json:"pointer"`
		} `json:"invalid"`
	}
	readJSON(t, "corpus_args.json", &cases)
	for _, s := range corpus(t) {
		t.Run(s.ID, func(t *testing.T) {
			tc, ok := cases[s.ID]
			if !ok || len(tc.Valid) == 0 {
				t.Fatalf("testdata/corpus_args.json has no valid arguments for %s", s.ID)
			}
			c, err := Close(s.Schema)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range tc.Valid {
				roundTrip(t, s.ID, c, a)
			}
			if c.strict != nil {
				for _, a := range generate(t, s.Schema) {
					roundTrip(t, s.ID+" (generated)", c, a)
				}
			}
			for _, bad := range tc.Invalid {
				err := c.Check(bad.Args)
				var ae *ArgumentError
				if !errors.As(err, &ae) {
					t.Errorf("Check(%s) = %v, want an *ArgumentError", bad.Args, err)
					continue
				}
				if ae.Pointer != bad.Pointer {
					t.Errorf("Check(%s): pointer %q, want %q (%v)", bad.Args, ae.Pointer, bad.Pointer, err)
				}
			}
		})
	}
}

// generate makes two argument sets valid under a simple schema: one with
// only the required properties and one with all of them. It knows types,
// enum, const, bounds, lengths, minItems, formats and local $refs, which
// is all the reference servers and the strict-ready corpus schemas use.
func generate(t *testing.T, schema json.RawMessage) [][]byte {
	t.Helper()
	p, err := parse(schema)
	if errors.Is(err, jsontree.ErrDuplicateKey) {
		return nil // a random schema repeated a name: Close made it uncheckable
	}
	if err != nil {
		t.Fatal(err)
	}
	a := analyze(p)
	g := generator{a: a}
	var out [][]byte
	for _, all := range []bool{false, true} {
		g.all = all
		v := g.value(p, 0)
		if v.Kind != jsontree.Object {
			v = &jsontree.Value{Kind: jsontree.Object}
		}
		out = append(out, encode(v))
	}
	return out
}

type generator struct {
	a   *doc
	all bool
}

func (g generator) value(s *jsontree.Value, depth int) *jsontree.Value {
	if r, ok := g.a.refs[s]; ok {
		s = r.target
	}
	if depth > 8 || s.Kind == jsontree.Bool {
		return nullValue()
	}
	if c := s.Get("const"); c != nil {
		return c
	}
	if e := s.Get("enum"); e != nil && len(e.Arr) > 0 {
		for _, v := range e.Arr {
			if v.Kind != jsontree.Null {
				return v
			}
		}
		return e.Arr[0]
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		if l := s.Get(kw).Elements(); len(l) > 0 {
			return g.value(l[0], depth+1)
		}
	}
	types, ok := typesOf(s)
	if !ok {
		types = []string{"object"}
	}
	switch types[0] {
	case "string":
		if f := s.Get("format"); f != nil {
			switch f.Str {
			case "uri":
				return strValue("https://example.com/x")
			case "date-time":
				return strValue("2026-01-02T03:04:05Z")
			case "email":
				return strValue("a@example.com")
			}
		}
		n := 1
		if m := s.Get("minLength"); m != nil {
			fmt.Sscan(m.Raw, &n)
		}
		return strValue(strings.Repeat("x", max(n, 1)))
	case "integer", "number":
		if m := s.Get("minimum"); m != nil {
			return numValue(m.Raw)
		}
		if m := s.Get("maximum"); m != nil {
			return numValue(m.Raw)
		}
		return numValue("1")
	case "boolean":
		return boolValue(true)
	case "null":
		return nullValue()
	case "array":
		out := &jsontree.Value{Kind: jsontree.Array, Arr: []*jsontree.Value{}}
		n := 0
		if m := s.Get("minItems"); m != nil {
			fmt.Sscan(m.Raw, &n)
		}
		if g.all {
			n = max(n, 1)
		}
		for range n {
			if items := s.Get("items"); items != nil {
				out.Arr = append(out.Arr, g.value(items, depth+1))
			}
		}
		return out
	default:
		out := &jsontree.Value{Kind: jsontree.Object, Obj: []jsontree.Member{}}
		required := map[string]bool{}
		for _, n := range s.Get("required").Elements() {
			required[n.Str] = true
		}
		for _, m := range s.Get("properties").Members() {
			if g.all || required[m.Name] {
				out.Obj = append(out.Obj, jsontree.Member{Name: m.Name, Val: g.value(m.Val, depth+1)})
			}
		}
		return out
	}
}
