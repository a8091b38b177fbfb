package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/mcphost/mcphost/internal/jsontree"
	"math/rand"
	"reflect"
	"strings"
	"testing"
)

func randSchema(r *rand.Rand, depth int) string {
	if depth > 4 || r.Intn(6) == 0 {
		leaves := []string{`{"type":"string"}`, `{"type":"integer","minimum":1}`, `true`, `false`, `{}`, `{"type":"string","pattern":"^a\\u0062"}`, `{"enum":[1,"a",null]}`, `{"const":null}`, `{"$ref":"#/$defs/d"}`, `{"$ref":"#"}`, `{"type":["string","null"]}`, `{"type":"number","maxLength":1e12}`, `{"pattern":"(?=x)"}`, `{"type":"array","items":[{"type":"string"}]}`, `{"format":"uri","type":"string"}`, `{"type":"string","minLength":2,"maxLength":3}`, `{"type":"integer","maximum":1,"exclusiveMinimum":-2}`, `{"type":"number","multipleOf":0.5,"minimum":0}`, `{"type":"array","items":{"type":"integer"},"minItems":2,"maxItems":3,"uniqueItems":true}`, `{"type":"string","pattern":"\\ba"}`, `{"type":["string","null"],"minLength":2}`}
		return leaves[r.Intn(len(leaves))]
	}
	var kv []string
	add := func(k, v string) { kv = append(kv, fmt.Sprintf("%q:%s", k, v)) }
	switch r.Intn(9) {
	case 0, 1, 2:
		add("type", `"object"`)
		var props []string
		var req []string
		for i := 0; i < r.Intn(4); i++ {
			n := []string{"a", "b", "c", "d"}[r.Intn(4)]
			props = append(props, fmt.Sprintf("%q:%s", n, randSchema(r, depth+1)))
			if r.Intn(2) == 0 {
				req = append(req, fmt.Sprintf("%q", n))
			}
		}
		add("properties", "{"+strings.Join(props, ",")+"}")
		if len(req) > 0 {
			add("required", "["+strings.Join(req, ",")+"]")
		}
		if r.Intn(4) == 0 {
			add("additionalProperties", randSchema(r, depth+1))
		}
		if r.Intn(6) == 0 {
			add("patternProperties", `{"^x":`+randSchema(r, depth+1)+`}`)
		}
	case 3:
		add("type", `"array"`)
		add("items", randSchema(r, depth+1))
		if r.Intn(3) == 0 {
			add("prefixItems", "["+randSchema(r, depth+1)+"]")
		}
	case 4:
		kw := []string{"anyOf", "oneOf", "allOf"}[r.Intn(3)]
		add(kw, "["+randSchema(r, depth+1)+","+randSchema(r, depth+1)+"]")
	case 5:
		add("$ref", `"#/$defs/d"`)
		if r.Intn(2) == 0 {
			add("description", `"x"`)
		}
		if r.Intn(3) == 0 {
			add("minimum", `3`)
		}
	case 6:
		add("not", randSchema(r, depth+1))
		add("if", randSchema(r, depth+1))
		add("then", randSchema(r, depth+1))
	case 7:
		add("type", `["string","integer","object","array"]`)
		add("properties", `{"z":`+randSchema(r, depth+1)+`}`)
		add("items", randSchema(r, depth+1))
		add("minLength", "2")
	case 8:
		add("dependentSchemas", `{"a":`+randSchema(r, depth+1)+`}`)
		add("unevaluatedProperties", randSchema(r, depth+1))
		add("contains", randSchema(r, depth+1))
	}
	return "{" + strings.Join(kv, ",") + "}"
}

func randValue(r *rand.Rand, depth int) string {
	switch r.Intn(8) {
	case 0:
		return "null"
	case 1:
		return []string{`"a"`, `"ab"`, `"abcd"`, `"a b"`}[r.Intn(4)]
	case 2:
		return []string{"1", "0", "-2", "3"}[r.Intn(4)]
	case 3:
		return "2.5"
	case 4:
		return "true"
	case 5:
		if depth > 3 {
			return "[]"
		}
		var items []string
		for range r.Intn(4) {
			items = append(items, randValue(r, depth+1))
		}
		return "[" + strings.Join(items, ",") + "]"
	default:
		if depth > 3 {
			return "{}"
		}
		var kv []string
		for i := 0; i < r.Intn(4); i++ {
			kv = append(kv, fmt.Sprintf("%q:%s", []string{"a", "b", "c", "d", "x1"}[r.Intn(5)], randValue(r, depth+1)))
		}
		return "{" + strings.Join(kv, ",") + "}"
	}
}

// sameMeaning checks, for a tool strict-ready for p and some arguments,
// that the host accepts from p's strict form exactly what the original
// admits: arguments the original admits, sent the model's way (for
// OpenAI, nulls for what is omitted), are admitted by the offered form and
// by the exact form (every constraint kept) and mapped back to
// themselves; whatever the exact form admits is, mapped back, admitted by
// the original; the offered form admits all the exact form does; and
// what the offered form admits beyond it (a moved constraint's values)
// Check refuses, mapped back, with an *ArgumentError for the model.
//
// It returns how many of these checks had arguments to check, and how
// many arguments were admitted beyond the exact form.
func sameMeaning(t *testing.T, c *Closed, p Profile, args json.RawMessage) (tried, beyond int) {
	t.Helper()
	pv, err := parse(args)
	if err != nil || pv.Kind != jsontree.Object {
		return 0, 0
	}
	form, _ := c.For(p)
	exact := exactForm(t, c.Original, p)
	if c.Check(args) == nil {
		tried++
		model := modelArgs(t, p, args, c.nulls)
		if err := validStrict(t, form, model); err != nil {
			t.Errorf("schema %s\n%s strict form %s\nrefuses %s, the model's version of %s, which the original admits: %v", c.Original, p, form, model, args, err)
		}
		if err := validStrict(t, exact, model); err != nil {
			t.Errorf("schema %s\nexact %s strict form %s\nrefuses %s, the model's version of %s, which the original admits: %v", c.Original, p, exact, model, args, err)
		}
		back, err := c.FromModel(model)
		if err != nil || !jsonEqual(t, back, args) {
			t.Errorf("schema %s: %s: FromModel(%s) = %s, %v; want %s", c.Original, p, model, back, err, args)
		}
	}
	inExact, inForm := validStrict(t, exact, args) == nil, validStrict(t, form, args) == nil
	if inExact && !inForm {
		t.Errorf("schema %s\n%s strict form %s\nrefuses %s, which its exact form %s admits", c.Original, p, form, args, exact)
	}
	if inForm {
		tried++
		back, err := c.FromModel(args)
		if err != nil {
			t.Fatal(err)
		}
		err = c.Check(back)
		var ae *ArgumentError
		switch {
		case inExact && err != nil:
			t.Errorf("schema %s\nexact %s strict form %s\nadmits %s, but the original refuses it mapped back (%s): %v", c.Original, p, exact, args, back, err)
		case !inExact && !errors.As(err, &ae):
			t.Errorf("schema %s\n%s strict form %s\nadmits %s beyond its exact form %s, and Check of it mapped back (%s) = %v, want an *ArgumentError", c.Original, p, form, args, exact, back, err)
		case !inExact:
			beyond++
		}
	}
	return tried, beyond
}

// TestRandomSchemas closes schemas made at random from the keywords that
// interact (objects, maps, compositions, references and their loops,
// dialects, tuples, type lists, patterns RE2 lacks, counts beyond 32
// bits) and checks random arguments against them: Close never fails on an
// object; Check answers nil, an *ArgumentError, or ErrUncheckable exactly
// when there is a CheckProblem; the validator can read every schema
// without one; FromModel fails only with an *ArgumentError and is
// idempotent; and for every strict-ready schema the strict form means what
// the original does, both ways (sameMeaning), for the random arguments and
// for generated valid ones.
func TestRandomSchemas(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	dialects := []string{``, `"$schema":"http://json-schema.org/draft-07/schema#",`, `"$schema":"https://json-schema.org/draft/2019-09/schema",`, `"$schema":"http://json-schema.org/draft-06/schema",`}
	n, strict, uncheckable, refused, hits, beyond := 0, 0, 0, 0, 0, 0
	for range 1000 {
		root := randSchema(r, 0)
		if !strings.HasPrefix(root, "{") || root == "{}" {
			continue
		}
		s := "{" + dialects[r.Intn(len(dialects))] + `"$defs":{"d":` + randSchema(r, 2) + `},` + root[1:]
		n++
		c, err := Close(json.RawMessage(s))
		if err != nil {
			t.Fatalf("Close(%s): %v", s, err)
		}
		if c.Strict {
			strict++
		}
		for range 4 {
			a := json.RawMessage(randValue(r, 0))
			err := c.Check(a)
			var ae *ArgumentError
			switch {
			case c.CheckProblem != "":
				if !errors.Is(err, ErrUncheckable) && !errors.As(err, &ae) {
					t.Fatalf("schema %s: Check(%s) = %v, want ErrUncheckable", s, a, err)
				}
			case err != nil && !errors.As(err, &ae):
				t.Fatalf("schema %s\nfor the validator %s\nCheck(%s) = %v", s, c.check, a, err)
			case ae != nil:
				refused++
			}
			out, err := c.FromModel(a)
			if err != nil {
				if !errors.As(err, &ae) {
					t.Fatalf("FromModel(%s) = %v", a, err)
				}
				continue
			}
			for _, p := range Profiles() {
				if _, ok := c.For(p); ok {
					h, b := sameMeaning(t, c, p, a)
					hits, beyond = hits+h, beyond+b
				}
			}
			if again, err := c.FromModel(out); err != nil || string(again) != string(out) {
				t.Fatalf("schema %s: FromModel not idempotent on %s: %s, %v", s, out, again, err)
			}
		}
		if c.CheckProblem != "" {
			uncheckable++
		}
		for _, p := range Profiles() {
			if _, ok := c.For(p); ok {
				for _, a := range generate(t, c.Original) {
					h, b := sameMeaning(t, c, p, a)
					hits, beyond = hits+h, beyond+b
				}
			}
		}
		sameNulls(t, c.Original)
	}
	t.Logf("%d schemas: %d strict-ready, %d uncheckable; %d argument sets refused; %d round trips, %d admitted by a strict form only for Check to refuse", n, strict, uncheckable, refused, hits, beyond)
	if strict == 0 || uncheckable == 0 || refused == 0 || hits == 0 || beyond == 0 {
		t.Error("the generator no longer reaches every outcome")
	}
}

// sameNulls checks that where both profiles have a strict form, their
// null maps are the same: FromModel has one, whichever form was offered.
func sameNulls(t *testing.T, schema json.RawMessage) {
	t.Helper()
	pv, err := parse(schema)
	if errors.Is(err, jsontree.ErrDuplicateKey) {
		return // uncheckable, as a repeated name makes a schema
	}
	if err != nil {
		t.Fatal(err)
	}
	a := analyze(pv)
	if a.uncheckable != nil {
		return
	}
	_, openai, p1 := strictForm(a, OpenAI)
	_, anthropic, p2 := strictForm(a, Anthropic)
	if p1 == nil && p2 == nil && !reflect.DeepEqual(openai, anthropic) {
		t.Errorf("schema %s: the null maps differ: OpenAI %+v, Anthropic %+v", schema, openai, anthropic)
	}
}

// randNarrowed makes a schema a strict form can keep, full of constraints
// that only narrow values (lengths, ranges, item counts, uniqueness, word
// boundaries, formats), which profiles move into descriptions.
func randNarrowed(r *rand.Rand, depth int) string {
	pick := func(opts ...string) string { return opts[r.Intn(len(opts))] }
	if depth > 3 || r.Intn(3) == 0 {
		switch r.Intn(5) {
		case 0:
			return `{"type":"string"` + pick(``, `,"minLength":2`, `,"maxLength":2`, `,"minLength":1,"maxLength":3`) + pick(``, `,"pattern":"\\ba"`, `,"format":"uri"`, `,"format":"email"`) + `}`
		case 1:
			return `{"type":"` + pick("integer", "number") + `"` + pick(``, `,"minimum":0`, `,"maximum":2`, `,"exclusiveMinimum":-2,"exclusiveMaximum":3`) + pick(``, `,"multipleOf":2`, `,"multipleOf":0.5`) + `}`
		case 2:
			return `{"type":["string","integer"]` + pick(``, `,"minLength":2,"minimum":1`, `,"maxLength":1,"maximum":0`) + `}`
		case 3:
			return `{"enum":["a","ab",1,3]` + pick(``, `,"minLength":2`, `,"maximum":1`) + `}`
		default:
			return `{"type":"boolean"}`
		}
	}
	switch r.Intn(3) {
	case 0:
		return `{"type":"array","items":` + randNarrowed(r, depth+1) + pick(``, `,"minItems":2`, `,"maxItems":1`, `,"minItems":1,"maxItems":2`) + pick(``, `,"uniqueItems":true`, `,"uniqueItems":false`) + `}`
	case 1:
		return `{"anyOf":[{"type":"string"` + pick(``, `,"minLength":2`) + `},{"type":"array","items":` + randNarrowed(r, depth+1) + pick(``, `,"maxItems":1`) + `}]}`
	default:
		var props, req []string
		for i := range 1 + r.Intn(3) {
			n := []string{"a", "b", "c"}[i]
			props = append(props, fmt.Sprintf("%q:%s", n, randNarrowed(r, depth+1)))
			if r.Intn(2) == 0 {
				req = append(req, fmt.Sprintf("%q", n))
			}
		}
		return `{"type":"object","properties":{` + strings.Join(props, ",") + `},"required":[` + strings.Join(req, ",") + `]}`
	}
}

// randArgs makes arguments shaped like what randNarrowed's schemas take,
// near their bounds.
func randArgs(r *rand.Rand, depth int) string {
	switch r.Intn(7) {
	case 0:
		return []string{`""`, `"a"`, `"ab"`, `"abc"`, `"b a"`, `"https://x"`}[r.Intn(6)]
	case 1:
		return []string{"-2", "0", "1", "2", "3", "0.5", "2.5"}[r.Intn(7)]
	case 2:
		return []string{"true", "null"}[r.Intn(2)]
	case 3, 4:
		if depth > 4 {
			return "[]"
		}
		var items []string
		for range r.Intn(4) {
			items = append(items, randArgs(r, depth+1))
		}
		return "[" + strings.Join(items, ",") + "]"
	default:
		if depth > 4 {
			return "{}"
		}
		var kv []string
		for _, n := range []string{"a", "b", "c"} {
			if r.Intn(3) > 0 {
				kv = append(kv, fmt.Sprintf("%q:%s", n, randArgs(r, depth+1)))
			}
		}
		return "{" + strings.Join(kv, ",") + "}"
	}
}

// TestRandomNarrowed checks, on random schemas full of constraints that
// only narrow values, for every profile, that the host accepts from the
// strict form offered exactly what the original admits (sameMeaning),
// for random arguments near the bounds and for generated valid ones.
func TestRandomNarrowed(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	ready := map[Profile]int{}
	hits, beyond := 0, 0
	const schemas = 500
	for range schemas {
		root := randNarrowed(r, 0)
		if !strings.HasPrefix(root, `{"type":"object"`) {
			root = `{"type":"object","properties":{"a":` + root + `},"required":["a"]}`
		}
		c, err := Close(json.RawMessage(root))
		if err != nil {
			t.Fatal(err)
		}
		if c.CheckProblem != "" {
			t.Fatalf("schema %s: %s", root, c.CheckProblem)
		}
		sameNulls(t, c.Original)
		for _, p := range Profiles() {
			if _, ok := c.For(p); !ok {
				continue
			}
			ready[p]++
			args := generate(t, c.Original)
			for range 6 {
				args = append(args, []byte(`{"a":`+randArgs(r, 1)+`}`), []byte(randArgs(r, 4)))
			}
			for _, a := range args {
				h, b := sameMeaning(t, c, p, a)
				hits, beyond = hits+h, beyond+b
			}
		}
	}
	t.Logf("%d schemas; strict-ready: OpenAI %d, Anthropic %d; %d round trips, %d admitted by a strict form only for Check to refuse", schemas, ready[OpenAI], ready[Anthropic], hits, beyond)
	if ready[OpenAI] < schemas/2 || ready[Anthropic] < schemas/2 || beyond < 50 {
		t.Error("the generator no longer reaches strict forms with moved constraints")
	}
}
