package schema

import (
	"github.com/mcphost/mcphost/internal/jsontree"

	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// FuzzClose: Close never panics and fails only for input that is not a
// JSON object; what it returns keeps its promises: each profile's strict
// form, when there is one, is JSON in which every object is closed (and,
// for OpenAI, requires all its properties); a strict-ready form is a
// schema the validator can read; a schema without a CheckProblem can be
// checked. The seed corpus is testdata/fuzz/FuzzClose (the corpus schemas
// and some hostile ones).
func FuzzClose(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Close(data)
		isObject := utf8.Valid(data) && json.Valid(data) && bytes.HasPrefix(bytes.TrimLeft(data, " \t\r\n"), []byte("{"))
		if err != nil {
			if !errors.Is(err, ErrInvalidSchema) {
				t.Fatalf("Close error %v does not wrap ErrInvalidSchema", err)
			}
			if isObject {
				t.Fatalf("Close refused a JSON object: %v", err)
			}
			return
		}
		if !isObject {
			t.Fatalf("Close accepted %q, which is not a JSON object", data)
		}
		for _, p := range Profiles() {
			if _, ok := c.Problems[p]; !ok {
				t.Fatalf("Problems lacks %s", p)
			}
		}
		if c.Problem != c.Problems[OpenAI] || c.Strict != (c.strict[OpenAI] != nil && c.Problem == "") {
			t.Fatalf("Problem %q / Strict %v disagree with Problems %q", c.Problem, c.Strict, c.Problems)
		}
		if !json.Valid(c.Schema) {
			t.Fatalf("Schema is not JSON: %s", c.Schema)
		}
		if !slices.IsSorted(c.Fields) || c.Fields == nil {
			t.Fatalf("Fields %q not sorted or nil", c.Fields)
		}
		for p, strict := range c.strict {
			var form any
			if err := json.Unmarshal(strict, &form); err != nil {
				t.Fatalf("the %s strict form is not JSON: %v\n%s", p, err, strict)
			}
			if why := notClosed(form, "", !p.optionalProperties()); why != "" {
				t.Fatalf("%s strict form: %s\n%s", p, why, strict)
			}
		}
		for _, p := range Profiles() {
			if _, ok := c.For(p); !ok {
				continue
			}
			// A strict form keeps patterns in ECMA-262 syntax, which is
			// what providers read; the validator reads RE2.
			schema, _ := c.For(p)
			pv, err := parse(schema)
			if err != nil {
				t.Fatal(err)
			}
			re2Patterns(pv)
			var s jsonschema.Schema
			if err := json.Unmarshal(encode(pv), &s); err != nil {
				t.Fatalf("a form strict-ready for %s the validator cannot read: %v\n%s", p, err, schema)
			}
			if _, err := s.Resolve(nil); err != nil {
				t.Fatalf("a form strict-ready for %s the validator cannot resolve: %v\n%s", p, err, schema)
			}
		}
		err = c.Check(json.RawMessage(`{}`))
		var ae *ArgumentError
		switch {
		case c.CheckProblem == "" && err != nil && !errors.As(err, &ae):
			t.Fatalf("Check({}) = %v for a schema without a CheckProblem\n%s", err, c.check)
		case c.CheckProblem != "" && !errors.Is(err, ErrUncheckable):
			t.Fatalf("Check({}) = %v for a schema with CheckProblem %q", err, c.CheckProblem)
		}
		if _, err := c.FromModel(json.RawMessage(`{}`)); err != nil {
			t.Fatalf("FromModel({}) = %v", err)
		}
	})
}

// re2Patterns rewrites the patterns of a strict form in RE2 syntax.
func re2Patterns(v *jsontree.Value) {
	switch v.Kind {
	case jsontree.Array:
		for _, e := range v.Arr {
			re2Patterns(e)
		}
	case jsontree.Object:
		for i, m := range v.Obj {
			if m.Name == "pattern" && m.Val.Kind == jsontree.String {
				v.Obj[i].Val = strValue(toRE2(m.Val.Str))
				continue
			}
			re2Patterns(m.Val)
		}
	}
}

// notClosed returns why a strict form's schema is not closed (with every
// property required, when everyRequired), or "".
func notClosed(v any, ptr string, everyRequired bool) string {
	switch s := v.(type) {
	case []any:
		for _, e := range s {
			if why := notClosed(e, ptr+"/…", everyRequired); why != "" {
				return why
			}
		}
	case map[string]any:
		if props, ok := s["properties"].(map[string]any); ok {
			if s["additionalProperties"] != false {
				return ptr + " is not closed"
			}
			req, _ := s["required"].([]any)
			if everyRequired && len(req) != len(props) {
				return ptr + " does not require every property"
			}
			for _, r := range req {
				name, _ := r.(string)
				if _, ok := props[name]; !ok {
					return ptr + " requires an undeclared property"
				}
			}
			for name, p := range props {
				if why := notClosed(p, ptr+"/properties/"+name, everyRequired); why != "" {
					return why
				}
			}
		} else if t, _ := s["type"].(string); t == "object" {
			return ptr + " is an object without properties"
		}
		for _, kw := range []string{"items", "anyOf"} {
			if sub, ok := s[kw]; ok {
				if why := notClosed(sub, ptr+"/"+kw, everyRequired); why != "" {
					return why
				}
			}
		}
	}
	return ""
}

// fuzzSchemas are the schemas FuzzFromModel maps arguments for: optional
// properties at several depths, in arrays and in a type union.
var fuzzSchemas = []string{
	toolSchema,
	`{"type":"object","properties":{"a":{"type":"string"},"o":{"type":"object","properties":{"b":{"type":"integer"},"c":{"type":"array","items":{"type":"object","properties":{"d":{"type":"boolean"}}}}}},"u":{"type":["integer","object"],"properties":{"x":{"type":"string"}}}}}`,
	`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"path":{"type":"string"},"head":{"type":"number"},"edits":{"type":"array","items":{"type":"object","properties":{"old":{"type":"string"},"dry":{"default":false,"type":"boolean"}},"required":["old"]}}},"required":["path"]}`,
}

// FuzzFromModel: FromModel and Check never panic; FromModel returns one
// JSON object or an *ArgumentError; mapping twice changes nothing more;
// no null is left where an optional property was; Check answers nil, an
// *ArgumentError or (never, here) anything else. The seed corpus is
// testdata/fuzz/FuzzFromModel.
func FuzzFromModel(f *testing.F) {
	var closed []*Closed
	for _, s := range fuzzSchemas {
		c, err := Close(json.RawMessage(s))
		if err != nil || c.strict[OpenAI] == nil {
			f.Fatalf("fuzz schema %s: %v %s", s, err, c.Problem)
		}
		closed = append(closed, c)
	}
	f.Fuzz(func(t *testing.T, which uint8, args []byte) {
		c := closed[int(which)%len(closed)]
		out, err := c.FromModel(args)
		var ae *ArgumentError
		if err != nil {
			if !errors.As(err, &ae) {
				t.Fatalf("FromModel error %v is not an *ArgumentError", err)
			}
			if err := c.Check(args); !errors.As(err, &ae) {
				t.Fatalf("FromModel refused %q but Check says %v", args, err)
			}
			return
		}
		p, err := parse(out)
		if err != nil || p.Kind != jsontree.Object {
			t.Fatalf("FromModel(%q) = %q, not a JSON object: %v", args, out, err)
		}
		again, err := c.FromModel(out)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("FromModel is not idempotent: %q then %q (%v)", out, again, err)
		}
		if where := optionalNull(p, c.nulls, ""); where != "" {
			t.Fatalf("FromModel(%q) = %q leaves a null at optional %s", args, out, where)
		}
		if err := c.Check(out); err != nil && !errors.As(err, &ae) {
			t.Fatalf("Check(%q) = %v", out, err)
		} else if ae != nil && !strings.HasPrefix(ae.Error(), "invalid arguments: ") {
			t.Fatalf("ArgumentError text %q", ae.Error())
		}
	})
}

// optionalNull returns where a null remains for an optional property.
func optionalNull(v *jsontree.Value, m *nullMap, ptr string) string {
	if m == nil {
		return ""
	}
	switch v.Kind {
	case jsontree.Object:
		for _, mem := range v.Obj {
			p := ptr + "/" + jsontree.EscapeToken(mem.Name)
			if m.isOptional(mem.Name) && mem.Val.Kind == jsontree.Null {
				return p
			}
			if w := optionalNull(mem.Val, m.props[mem.Name], p); w != "" {
				return w
			}
		}
	case jsontree.Array:
		for _, e := range v.Arr {
			if w := optionalNull(e, m.items, ptr+"/…"); w != "" {
				return w
			}
		}
	}
	return ""
}
