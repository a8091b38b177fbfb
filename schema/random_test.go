package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"
)

func randSchema(r *rand.Rand, depth int) string {
	if depth > 4 || r.Intn(6) == 0 {
		leaves := []string{`{"type":"string"}`, `{"type":"integer","minimum":1}`, `true`, `false`, `{}`, `{"type":"string","pattern":"^a\\u0062"}`, `{"enum":[1,"a",null]}`, `{"const":null}`, `{"$ref":"#/$defs/d"}`, `{"$ref":"#"}`, `{"type":["string","null"]}`, `{"type":"number","maxLength":1e12}`, `{"pattern":"(?=x)"}`, `{"type":"array","items":[{"type":"string"}]}`, `{"format":"uri","type":"string"}`}
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
		return `"a"`
	case 2:
		return "1"
	case 3:
		return "2.5"
	case 4:
		return "true"
	case 5:
		if depth > 3 {
			return "[]"
		}
		return "[" + randValue(r, depth+1) + "]"
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

// sameMeaning checks, for a strict-ready tool and some arguments, both
// directions of the strict form's promise: arguments the original admits,
// sent the model's way (nulls for what is omitted), are admitted by the
// strict form and mapped back to themselves; and whatever the strict form
// admits is, mapped back, admitted by the original.
func sameMeaning(t *testing.T, c *Closed, args json.RawMessage) (tried int) {
	t.Helper()
	p, err := parse(args)
	if err != nil || p.hasDup || p.v.kind != kindObject {
		return 0
	}
	if c.Check(args) == nil {
		tried++
		asModel(p.v, c.nulls)
		model := encode(p.v)
		if err := validStrict(t, c.strict, model); err != nil {
			t.Errorf("schema %s\nstrict form %s\nrefuses %s, the model's version of %s, which the original admits: %v", c.Original, c.strict, model, args, err)
		}
		back, err := c.FromModel(model)
		if err != nil || !jsonEqual(t, back, args) {
			t.Errorf("schema %s: FromModel(%s) = %s, %v; want %s", c.Original, model, back, err, args)
		}
	}
	if validStrict(t, c.strict, args) == nil {
		tried++
		back, err := c.FromModel(args)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Check(back); err != nil {
			t.Errorf("schema %s\nstrict form %s\nadmits %s, but the original refuses it mapped back (%s): %v", c.Original, c.strict, args, back, err)
		}
	}
	return tried
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
	n, strict, uncheckable, refused, hits := 0, 0, 0, 0, 0
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
			if _, ok := c.For(OpenAI); ok {
				hits += sameMeaning(t, c, a)
			}
			if again, err := c.FromModel(out); err != nil || string(again) != string(out) {
				t.Fatalf("schema %s: FromModel not idempotent on %s: %s, %v", s, out, again, err)
			}
		}
		if c.CheckProblem != "" {
			uncheckable++
		}
		if _, ok := c.For(OpenAI); ok {
			for _, a := range generate(t, c.Original) {
				hits += sameMeaning(t, c, a)
			}
		}
	}
	t.Logf("%d schemas: %d strict-ready, %d uncheckable; %d argument sets refused; %d round trips", n, strict, uncheckable, refused, hits)
	if strict == 0 || uncheckable == 0 || refused == 0 || hits == 0 {
		t.Error("the generator no longer reaches every outcome")
	}
}
