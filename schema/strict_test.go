package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

func mustClose(t *testing.T, schema string) *Closed {
	t.Helper()
	c, err := Close(json.RawMessage(schema))
	if err != nil {
		t.Fatalf("Close(%s): %v", schema, err)
	}
	return c
}

// TestStrictForm checks the strict form of schemas that keep their
// meaning: what becomes nullable and how, and what stays as written.
func TestStrictForm(t *testing.T) {
	for _, tc := range []struct {
		name, schema, want string
	}{{
		name:   "optional string becomes a nullable type list; required stays",
		schema: `{"type":"object","properties":{"q":{"type":"string"},"n":{"type":"integer"}},"required":["q"]}`,
		want:   `{"type":"object","properties":{"q":{"type":"string"},"n":{"type":["integer","null"]}},"required":["q","n"],"additionalProperties":false}`,
	}, {
		name:   "an optional enum gets null too, or the enum would refuse it",
		schema: `{"type":"object","properties":{"unit":{"type":"string","enum":["C","F"]}}}`,
		want:   `{"type":"object","properties":{"unit":{"type":["string","null"],"enum":["C","F",null]}},"required":["unit"],"additionalProperties":false}`,
	}, {
		name:   "an optional const is wrapped in anyOf with null",
		schema: `{"type":"object","properties":{"v":{"type":"string","const":"x"}}}`,
		want:   `{"type":"object","properties":{"v":{"anyOf":[{"type":"string","const":"x"},{"type":"null"}]}},"required":["v"],"additionalProperties":false}`,
	}, {
		name:   "an optional anyOf gets a null branch",
		schema: `{"type":"object","properties":{"v":{"anyOf":[{"type":"string"},{"type":"integer"}],"description":"d"}}}`,
		want:   `{"type":"object","properties":{"v":{"description":"d","anyOf":[{"type":"string"},{"type":"integer"},{"type":"null"}]}},"required":["v"],"additionalProperties":false}`,
	}, {
		name:   "a type list is split into an anyOf, each branch with its own keywords",
		schema: `{"type":"object","properties":{"v":{"type":["string","integer"],"minimum":1,"pattern":"^a","description":"d"}},"required":["v"]}`,
		want:   `{"type":"object","properties":{"v":{"description":"d","anyOf":[{"type":"string","pattern":"^a"},{"type":"integer","minimum":1}]}},"required":["v"],"additionalProperties":false}`,
	}, {
		name:   "a type list with an enum splits the enum by type",
		schema: `{"type":"object","properties":{"v":{"type":["string","integer"],"enum":["a",1,"b"]}},"required":["v"]}`,
		want:   `{"type":"object","properties":{"v":{"anyOf":[{"type":"string","enum":["a","b"]},{"type":"integer","enum":[1]}]}},"required":["v"],"additionalProperties":false}`,
	}, {
		name:   "a required property's own null stays, as written",
		schema: `{"type":"object","properties":{"v":{"type":["string","null"]}},"required":["v"]}`,
		want:   `{"type":"object","properties":{"v":{"type":["string","null"]}},"required":["v"],"additionalProperties":false}`,
	}, {
		name:   "bounds, formats, patterns and descriptions stay; default, examples and comments go",
		schema: `{"type":"object","properties":{"d":{"type":"string","format":"date-time","pattern":"^2","description":"when","default":"x","examples":["y"],"$comment":"c"},"n":{"type":"number","minimum":0,"exclusiveMaximum":9,"multipleOf":0.5}},"required":["d","n"]}`,
		want:   `{"type":"object","properties":{"d":{"type":"string","format":"date-time","pattern":"^2","description":"when"},"n":{"type":"number","minimum":0,"exclusiveMaximum":9,"multipleOf":0.5}},"required":["d","n"],"additionalProperties":false}`,
	}, {
		name:   "nested objects and array items are closed, their optionals nullable",
		schema: `{"type":"object","properties":{"edits":{"type":"array","items":{"type":"object","properties":{"old":{"type":"string"},"dry":{"type":"boolean"}},"required":["old"]}}},"required":["edits"]}`,
		want:   `{"type":"object","properties":{"edits":{"type":"array","items":{"type":"object","properties":{"old":{"type":"string"},"dry":{"type":["boolean","null"]}},"required":["old","dry"],"additionalProperties":false}}},"required":["edits"],"additionalProperties":false}`,
	}, {
		name:   "an optional object becomes a nullable object",
		schema: `{"type":"object","properties":{"o":{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}}}`,
		want:   `{"type":"object","properties":{"o":{"type":["object","null"],"properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false}},"required":["o"],"additionalProperties":false}`,
	}, {
		name:   "a $ref is inlined, with the title and description beside it",
		schema: `{"type":"object","properties":{"v":{"$ref":"#/$defs/T","description":"use"}},"required":["v"],"$defs":{"T":{"type":"string","description":"def","minLength":1}}}`,
		want:   `{"type":"object","properties":{"v":{"type":"string","description":"use (at least 1 character)"}},"required":["v"],"additionalProperties":false}`,
	}, {
		name:   "draft-07 definitions are inlined, and a sibling of $ref is ignored as draft-07 says",
		schema: `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"v":{"$ref":"#/definitions/T","minimum":5}},"required":["v"],"definitions":{"T":{"type":"integer"}}}`,
		want:   `{"type":"object","properties":{"v":{"type":"integer"}},"required":["v"],"additionalProperties":false}`,
	}, {
		name:   "a oneOf of different types is offered as anyOf",
		schema: `{"type":"object","properties":{"v":{"oneOf":[{"type":"string"},{"type":"boolean"}]}},"required":["v"]}`,
		want:   `{"type":"object","properties":{"v":{"anyOf":[{"type":"string"},{"type":"boolean"}]}},"required":["v"],"additionalProperties":false}`,
	}, {
		name:   "a oneOf of closed objects with distinct required properties is offered as anyOf",
		schema: `{"type":"object","properties":{"v":{"type":"object","oneOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false},{"type":"object","properties":{"b":{"type":"string"}},"required":["b"],"additionalProperties":false}]}},"required":["v"]}`,
		want:   `{"type":"object","properties":{"v":{"anyOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false},{"type":"object","properties":{"b":{"type":"string"}},"required":["b"],"additionalProperties":false}]}},"required":["v"],"additionalProperties":false}`,
	}, {
		name:   "an enum without a type gets the type of its values",
		schema: `{"type":"object","properties":{"v":{"enum":[1,2]}},"required":["v"]}`,
		want:   `{"type":"object","properties":{"v":{"type":"integer","enum":[1,2]}},"required":["v"],"additionalProperties":false}`,
	}, {
		name:   "a root without type is an object (MCP arguments always are)",
		schema: `{"properties":{"a":{"type":"string"}},"required":["a"]}`,
		want:   `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false}`,
	}, {
		name:   "a root with no properties declared by an empty list takes no arguments",
		schema: `{"type":"object","properties":{}}`,
		want:   `{"type":"object","properties":{},"required":[],"additionalProperties":false}`,
	}, {
		name:   "keywords the dialect does not define are dropped (draft-07 has no prefixItems)",
		schema: `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"a":{"type":"string","x-hint":1,"nullable":true}},"required":["a"],"dependentRequired":{}}`,
		want:   `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false}`,
	}, {
		name:   "keywords for other types are dropped, as they constrain nothing",
		schema: `{"type":"object","properties":{"a":{"type":"string","minimum":3,"items":{"type":"string"}}},"required":["a"]}`,
		want:   `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false}`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			c := mustClose(t, tc.schema)
			if c.strict[OpenAI] == nil {
				t.Fatalf("no strict form: %s", c.Problem)
			}
			if string(c.strict[OpenAI]) != tc.want {
				t.Errorf("strict form\n got %s\nwant %s", c.strict[OpenAI], tc.want)
			}
			if c.Problem == "" && (!c.Strict || string(c.Schema) != string(c.strict[OpenAI])) {
				t.Errorf("ready for OpenAI, but Strict = %v and Schema = %s", c.Strict, c.Schema)
			}
		})
	}
}

// TestProblems checks schemas whose meaning a strict form cannot keep, or
// that a profile does not accept: the problem names the place and the
// reason, per profile.
func TestProblems(t *testing.T) {
	for _, tc := range []struct {
		name, schema       string
		openai, anthropic  string // substrings of the problems; "" for ready
		closedObjectsCount int    // additionalProperties:false in the offered closed form; -1: not checked
	}{{
		name:      "optional property that admits null (type list)",
		schema:    `{"type":"object","properties":{"a":{"type":["string","null"]}}}`,
		openai:    "/properties/a: optional property that admits null",
		anthropic: "", // it stays optional there
	}, {
		name:      "optional property that admits null (enum)",
		schema:    `{"type":"object","properties":{"a":{"enum":["x",null]}}}`,
		openai:    "/properties/a: optional property that admits null",
		anthropic: "",
	}, {
		name:      "optional property that admits null (untyped)",
		schema:    `{"type":"object","properties":{"a":{"description":"anything"}}}`,
		openai:    "/properties/a: untyped value",
		anthropic: "/properties/a: untyped value",
	}, {
		name:      "free-form map: additionalProperties a schema",
		schema:    `{"type":"object","properties":{"m":{"type":"object","additionalProperties":{"type":"string"}}},"required":["m"]}`,
		openai:    "/properties/m/additionalProperties: free-form map",
		anthropic: "free-form map",
	}, {
		name:      "free-form map: additionalProperties true",
		schema:    `{"type":"object","properties":{"m":{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":true}},"required":["m"]}`,
		openai:    "additionalProperties is true",
		anthropic: "free-form map",
	}, {
		name:      "free-form map: patternProperties",
		schema:    `{"type":"object","properties":{"m":{"type":"object","patternProperties":{"^x-":{"type":"string"}}}},"required":["m"]}`,
		openai:    "/properties/m/patternProperties: free-form map",
		anthropic: "free-form map",
	}, {
		name:      "free-form object",
		schema:    `{"type":"object","properties":{"o":{"type":"object"}},"required":["o"]}`,
		openai:    "/properties/o: free-form object",
		anthropic: "free-form object",
	}, {
		name:      "untyped array items",
		schema:    `{"type":"object","properties":{"xs":{"type":"array"}},"required":["xs"]}`,
		openai:    "/properties/xs: array whose items are untyped",
		anthropic: "items are untyped",
	}, {
		name:      "root that is not an object",
		schema:    `{"type":"array","items":{"type":"string"}}`,
		openai:    "/type: the root is not an object schema",
		anthropic: "the root is not an object",
	}, {
		name:      "root that is a composition",
		schema:    `{"anyOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false},{"type":"null"}]}`,
		openai:    "(root): the root is a composition",
		anthropic: "the root is a composition",
	}, {
		name:      "required but undeclared",
		schema:    `{"type":"object","properties":{"a":{"type":"string"}},"required":["a","b"]}`,
		openai:    `/required: "b" is required but not declared`,
		anthropic: "not declared",
	}, {
		name:      "recursive reference",
		schema:    `{"type":"object","properties":{"n":{"$ref":"#/$defs/N"}},"required":["n"],"$defs":{"N":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/N"}}},"required":["kids"]}}}`,
		openai:    `/$defs/N/properties/kids/items/$ref: recursive reference to "#/$defs/N"`,
		anthropic: "recursive reference",
	}, {
		name:      "a constraint beside $ref (2020-12 applies it)",
		schema:    `{"type":"object","properties":{"v":{"$ref":"#/$defs/T","minimum":5}},"required":["v"],"$defs":{"T":{"type":"integer"}}}`,
		openai:    `/properties/v/minimum: "minimum" beside $ref`,
		anthropic: "beside $ref",
	}, {
		name:      "oneOf whose branches may overlap",
		schema:    `{"type":"object","properties":{"v":{"oneOf":[{"type":"number"},{"type":"integer"}]}},"required":["v"]}`,
		openai:    "/properties/v/oneOf: oneOf whose branches 0 and 1 may overlap",
		anthropic: "may overlap",
	}, {
		name:      "a keyword for every type beside a type list",
		schema:    `{"type":"object","properties":{"v":{"type":["string","integer"],"not":{"const":"x"}}},"required":["v"]}`,
		openai:    `/properties/v/not: "not" beside a list of types`,
		anthropic: "beside a list of types",
	}, {
		name:      "oneOf with too many branches to prove disjoint",
		schema:    `{"type":"object","properties":{"v":{"oneOf":[` + strings.Repeat(`{"const":1},`, 64) + `{"const":2}]}},"required":["v"]}`,
		openai:    "/properties/v/oneOf: oneOf with 65 branches",
		anthropic: "oneOf with 65 branches",
	}, {
		name:      "allOf",
		schema:    `{"type":"object","properties":{"v":{"allOf":[{"type":"string"},{"minLength":1}]}},"required":["v"]}`,
		openai:    "/properties/v/allOf: allOf is left as written",
		anthropic: "allOf is left as written",
	}, {
		name:      "open object inside anyOf",
		schema:    `{"type":"object","properties":{"v":{"anyOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]},{"type":"string"}]}},"required":["v"]}`,
		openai:    "/properties/v/anyOf/0: object inside anyOf/oneOf that is not closed",
		anthropic: "not closed",
	}, {
		name:      "optional property inside anyOf",
		schema:    `{"type":"object","properties":{"v":{"anyOf":[{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false},{"type":"string"}]}},"required":["v"]}`,
		openai:    "/properties/v/anyOf/0/properties/a: optional property inside anyOf/oneOf",
		anthropic: "", // nothing changes in the branch
	}, {
		name:      "minLength: outside both subsets, moved out by both",
		schema:    `{"type":"object","properties":{"s":{"type":"string","minLength":1}},"required":["s"]}`,
		openai:    "",
		anthropic: "",
	}, {
		name:      "minimum and maxItems: OpenAI keeps them, Anthropic's form moves them out",
		schema:    `{"type":"object","properties":{"n":{"type":"integer","minimum":1},"xs":{"type":"array","items":{"type":"string"},"maxItems":3}},"required":["n","xs"]}`,
		openai:    "",
		anthropic: "",
	}, {
		name:      "minItems above 1: OpenAI keeps it, Anthropic's form says it",
		schema:    `{"type":"object","properties":{"xs":{"type":"array","items":{"type":"string"},"minItems":2}},"required":["xs"]}`,
		openai:    "",
		anthropic: "",
	}, {
		name:      "format uri: Anthropic keeps it, OpenAI's form says it",
		schema:    `{"type":"object","properties":{"u":{"type":"string","format":"uri"}},"required":["u"]}`,
		openai:    "",
		anthropic: "",
	}, {
		name:      "format both accept",
		schema:    `{"type":"object","properties":{"e":{"type":"string","format":"email"},"d":{"type":"string","format":"date"}},"required":["e","d"]}`,
		openai:    "",
		anthropic: "",
	}, {
		name:      "lookahead pattern: neither",
		schema:    `{"type":"object","properties":{"p":{"type":"string","pattern":"^(?!x)"}},"required":["p"]}`,
		openai:    "/properties/p/pattern: pattern",
		anthropic: "/properties/p/pattern: pattern",
	}, {
		name:      "word boundary pattern: OpenAI keeps it, Anthropic's form says it",
		schema:    `{"type":"object","properties":{"p":{"type":"string","pattern":"\\bword\\b"}},"required":["p"]}`,
		openai:    "",
		anthropic: "",
	}, {
		name:      "a word boundary pattern too long to say stays a problem",
		schema:    `{"type":"object","properties":{"p":{"type":"string","pattern":"\\b` + strings.Repeat("x", 300) + `"}},"required":["p"]}`,
		openai:    "",
		anthropic: "word boundary",
	}, {
		name:      "a bound too long to say stays a problem",
		schema:    `{"type":"object","properties":{"n":{"type":"number","minimum":0.` + strings.Repeat("1", 300) + `}},"required":["n"]}`,
		openai:    "",
		anthropic: `keyword "minimum" is not supported by Anthropic`,
	}, {
		name:      "minProperties and maxProperties change with the nulls: neither",
		schema:    `{"type":"object","properties":{"o":{"type":"object","properties":{"a":{"type":"string"}},"minProperties":1}},"required":["o"]}`,
		openai:    `keyword "minProperties" is not supported by OpenAI`,
		anthropic: `keyword "minProperties" is not supported by Anthropic`,
	}, {
		name:      "contains: neither",
		schema:    `{"type":"object","properties":{"xs":{"type":"array","items":{"type":"string"},"contains":{"const":"a"}}},"required":["xs"]}`,
		openai:    `keyword "contains" is not supported by OpenAI`,
		anthropic: `keyword "contains" is not supported by Anthropic`,
	}, {
		name:      "a length under not is not moved: not stays a problem",
		schema:    `{"type":"object","properties":{"s":{"type":"string","not":{"minLength":3}}},"required":["s"]}`,
		openai:    `keyword "not" is not supported by OpenAI`,
		anthropic: `keyword "not" is not supported by Anthropic`,
	}, {
		name:      "an escaped backslash before b is not a word boundary",
		schema:    `{"type":"object","properties":{"p":{"type":"string","pattern":"\\\\b"}},"required":["p"]}`,
		openai:    "",
		anthropic: "",
	}, {
		name:      "enum of objects: neither",
		schema:    `{"type":"object","properties":{"o":{"type":"object","enum":[{"a":1}],"properties":{"a":{"type":"integer"}},"required":["a"]}},"required":["o"]}`,
		openai:    "/properties/o/enum: enum and const values must be",
		anthropic: "enum and const values must be",
	}, {
		name:      "uniqueItems: moved out by both",
		schema:    `{"type":"object","properties":{"xs":{"type":"array","items":{"type":"string"},"uniqueItems":true}},"required":["xs"]}`,
		openai:    "",
		anthropic: "",
	}, {
		name:      "malformed annotation: no strict form, but checkable",
		schema:    `{"type":"object","properties":{"s":{"type":"string","description":5}},"required":["s"]}`,
		openai:    "/properties/s/description: description must be a string",
		anthropic: "description must be a string",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			c := mustClose(t, tc.schema)
			for p, want := range map[Profile]string{OpenAI: tc.openai, Anthropic: tc.anthropic} {
				got, ok := c.Problems[p]
				if !ok {
					t.Fatalf("Problems has no %s", p)
				}
				if want == "" && got != "" || !strings.Contains(got, want) {
					t.Errorf("%s problem %q, want one containing %q", p, got, want)
				}
			}
			if c.Problem != c.Problems[OpenAI] {
				t.Errorf("Problem %q is not Problems[OpenAI] %q", c.Problem, c.Problems[OpenAI])
			}
			if c.Strict != (c.Problem == "") {
				t.Errorf("Strict = %v with Problem %q", c.Strict, c.Problem)
			}
			if c.CheckProblem != "" {
				t.Errorf("CheckProblem %q: these schemas can all be checked", c.CheckProblem)
			}
			for _, p := range Profiles() {
				schema, strict := c.For(p)
				if strict != (c.Problems[p] == "") {
					t.Errorf("For(%s) strict = %v with problem %q", p, strict, c.Problems[p])
				}
				if !json.Valid(schema) {
					t.Errorf("For(%s) = %s, not JSON", p, schema)
				}
			}
		})
	}
}

// TestClosedForm checks which objects the closed form (offered when the
// schema is not strict-ready, and the basis of Check) closes: every
// declared object except maps, free-form objects, and anything under or
// beside a composition, which is left as written.
func TestClosedForm(t *testing.T) {
	for _, tc := range []struct {
		name, schema, want string
	}{{
		name:   "declared objects are closed, optionals stay optional",
		schema: `{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"string"}}},"m":{"type":"object","additionalProperties":{"type":"object","properties":{"x":{"type":"string"}}}}}}`,
		want:   `{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"string"}},"additionalProperties":false},"m":{"type":"object","additionalProperties":{"type":"object","properties":{"x":{"type":"string"}},"additionalProperties":false}}},"additionalProperties":false}`,
	}, {
		name:   "objects under a composition are left as written",
		schema: `{"type":"object","properties":{"v":{"anyOf":[{"type":"object","properties":{"a":{"type":"string"}}},{"type":"string"}]},"w":{"type":"object","properties":{"k":{"type":"string"}},"oneOf":[{"required":["k"]}]}}}`,
		want:   `{"type":"object","properties":{"v":{"anyOf":[{"type":"object","properties":{"a":{"type":"string"}}},{"type":"string"}]},"w":{"type":"object","properties":{"k":{"type":"string"}},"oneOf":[{"required":["k"]}]}},"additionalProperties":false}`,
	}, {
		name:   "a definition is closed only if every reference to it may close it",
		schema: `{"type":"object","properties":{"a":{"$ref":"#/$defs/A"},"b":{"anyOf":[{"$ref":"#/$defs/B"},{"type":"null"}]},"c":{"$ref":"#/$defs/B"}},"$defs":{"A":{"type":"object","properties":{"x":{"type":"string"}}},"B":{"type":"object","properties":{"y":{"type":"string"}}}}}`,
		want:   `{"type":"object","properties":{"a":{"$ref":"#/$defs/A"},"b":{"anyOf":[{"$ref":"#/$defs/B"},{"type":"null"}]},"c":{"$ref":"#/$defs/B"}},"$defs":{"A":{"type":"object","properties":{"x":{"type":"string"}},"additionalProperties":false},"B":{"type":"object","properties":{"y":{"type":"string"}}}},"additionalProperties":false}`,
	}, {
		name:   "a free-form object and an undeclared required property keep it open",
		schema: `{"type":"object","properties":{"o":{"type":"object"},"p":{"type":"object","properties":{"a":{}},"required":["z"]}}}`,
		want:   `{"type":"object","properties":{"o":{"type":"object"},"p":{"type":"object","properties":{"a":{}},"required":["z"]}},"additionalProperties":false}`,
	}, {
		name:   "a root without type or properties gets them",
		schema: `{}`,
		want:   `{"type":"object","properties":{}}`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			c := mustClose(t, tc.schema)
			schema, _ := c.For("no such profile")
			if string(schema) != tc.want {
				t.Errorf("closed form\n got %s\nwant %s", schema, tc.want)
			}
		})
	}
}

// TestOpenAILimits checks OpenAI's documented size limits.
func TestOpenAILimits(t *testing.T) {
	nest := func(levels int) string {
		s := `{"type":"string"}`
		for range levels {
			s = `{"type":"object","properties":{"a":` + s + `},"required":["a"]}`
		}
		return s
	}
	props := func(n, nameLen int) string {
		var b strings.Builder
		b.WriteString(`{"type":"object","properties":{`)
		var req []string
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			name := fmt.Sprintf("%0*d", nameLen, i)
			fmt.Fprintf(&b, `%q:{"type":"boolean"}`, name)
			req = append(req, fmt.Sprintf("%q", name))
		}
		b.WriteString(`},"required":[` + strings.Join(req, ",") + `]}`)
		return b.String()
	}
	enum := func(n, length int) string {
		var vals []string
		for i := range n {
			vals = append(vals, fmt.Sprintf("%q", fmt.Sprintf("%0*d", length, i)))
		}
		return `{"type":"object","properties":{"e":{"type":"string","enum":[` + strings.Join(vals, ",") + `]}},"required":["e"]}`
	}
	for _, tc := range []struct {
		name, schema, openai string
	}{
		{"10 levels of nesting", nest(10), ""},
		{"11 levels of nesting", nest(11), "more than 10 levels of nesting"},
		{"5000 properties", props(5000, 4), ""},
		{"5001 properties", props(5001, 4), "5001 object properties, more than the 5000"},
		{"1000 enum values", enum(1000, 4), ""},
		{"1001 enum values", enum(1001, 4), "1001 enum values, more than the 1000"},
		{"a big enum of long strings", enum(251, 60), "an enum of 251 strings holding 15060 characters"},
		{"a small enum of long strings", enum(250, 60), ""},
		{"120,000 characters of names", props(4000, 31), "124000 characters of property names"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mustClose(t, tc.schema)
			if got := c.Problems[OpenAI]; tc.openai == "" && got != "" || !strings.Contains(got, tc.openai) {
				t.Errorf("OpenAI problem %q, want %q", got, tc.openai)
			}
		})
	}
}

// TestAnthropicLimits: a tool whose Anthropic strict form alone has more
// than 16 parameters with a union type, or more than 24 optional
// properties, can never be sent strict to Anthropic. Optional properties
// stay optional in that form, so they are not unions there.
func TestAnthropicLimits(t *testing.T) {
	for _, tc := range []struct {
		n        int
		property string // %d is the property's number
		optional bool
		want     string
	}{
		{16, `{"type":["string","integer"]}`, false, ""},
		{17, `{"type":["string","integer"]}`, false, "more than 16 parameters use anyOf or a type list"},
		{17, `{"anyOf":[{"type":"string"},{"type":"integer"}]}`, false, "more than 16 parameters use anyOf or a type list"},
		{24, `{"type":"string"}`, true, ""},
		{25, `{"type":"string"}`, true, "25 optional properties, more than the 24"},
	} {
		var props, req []string
		for i := range tc.n {
			props = append(props, fmt.Sprintf(`"p%d":%s`, i, tc.property))
			req = append(req, fmt.Sprintf(`"p%d"`, i))
		}
		required := `,"required":[` + strings.Join(req, ",") + `]`
		if tc.optional {
			required = ""
		}
		c := mustClose(t, `{"type":"object","properties":{`+strings.Join(props, ",")+`}`+required+`}`)
		got := c.Problems[Anthropic]
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%d properties %s (optional %v): Anthropic problem %q, want %q", tc.n, tc.property, tc.optional, got, tc.want)
		}
		if c.Problems[OpenAI] != "" {
			t.Errorf("%d properties %s: OpenAI problem %q", tc.n, tc.property, c.Problems[OpenAI])
		}
	}
}

// TestStrictBudget: references that double at every level would make an
// exponential strict form; Close gives up quickly instead.
func TestStrictBudget(t *testing.T) {
	var defs []string
	for i := range 40 {
		defs = append(defs, fmt.Sprintf(`"d%d":{"type":"object","properties":{"a":{"$ref":"#/$defs/d%d"},"b":{"$ref":"#/$defs/d%d"}},"required":["a","b"]}`, i, i+1, i+1))
	}
	defs = append(defs, `"d40":{"type":"string"}`)
	schema := `{"type":"object","properties":{"x":{"$ref":"#/$defs/d0"}},"required":["x"],"$defs":{` + strings.Join(defs, ",") + `}}`
	c := mustClose(t, schema)
	if !strings.Contains(c.Problem, "would hold more than") {
		t.Errorf("problem %q, want the budget one", c.Problem)
	}
	if err := c.Check(json.RawMessage(`{"x":{"a":{"b":1}}}`)); err == nil {
		t.Error("Check passed a wrong value deep in the references")
	}
}

// TestHostileNames: property names are kept exactly, whatever they hold,
// in every form; Fields escapes them as JSON pointers; messages quote them.
func TestHostileNames(t *testing.T) {
	names := []string{"a/b", "~x", "new\nline", "", "__proto__", "\u202eevil", "quote\"d", "é"}
	var props, req []string
	for _, n := range names {
		q, _ := json.Marshal(n)
		props = append(props, string(q)+`:{"type":"string"}`)
		req = append(req, string(q))
	}
	schema := `{"type":"object","properties":{` + strings.Join(props, ",") + `},"required":[` + strings.Join(req, ",") + `]}`
	c := mustClose(t, schema)
	if !c.Strict {
		t.Fatalf("not strict: %s", c.Problem)
	}
	var strict struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal(c.Schema, &strict); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if _, ok := strict.Properties[n]; !ok {
			t.Errorf("property %q lost from the strict form", n)
		}
	}
	if strings.Join(strict.Required, "|") != strings.Join(names, "|") {
		t.Errorf("required %q, want %q", strict.Required, names)
	}
	wantFields := []string{"/", "/__proto__", "/a~1b", "/new\nline", "/quote\"d", "/~0x", "/é", "/\u202eevil"}
	if strings.Join(c.Fields, "|") != strings.Join(wantFields, "|") {
		t.Errorf("Fields %q, want %q", c.Fields, wantFields)
	}
	err := c.Check(json.RawMessage(`{"a/b":"x"}`))
	var ae *ArgumentError
	if !errors.As(err, &ae) || ae.Pointer != "/~0x" {
		t.Fatalf("Check: %v, want the first missing field, /~0x", err)
	}
	err = c.Check(json.RawMessage(`{"a/b":"","~x":"","new\nline":"","":"","__proto__":"","\u202eevil":"","quote\"d":"","é":"","\u202ex":""}`))
	if !errors.As(err, &ae) || !strings.Contains(ae.Error(), `"/\u202ex": unknown field`) {
		t.Errorf("Check: %v, want the unknown field, quoted so that it cannot reorder the text", err)
	}
}

// TestRootReference: a root that is a reference to a named model (as
// zod-to-json-schema writes it when given a name) is that model.
func TestRootReference(t *testing.T) {
	c := mustClose(t, `{"$schema":"http://json-schema.org/draft-07/schema#","$ref":"#/definitions/Args","definitions":{"Args":{"type":"object","properties":{"q":{"type":"string"},"n":{"type":"integer"}},"required":["q"]}}}`)
	want := `{"type":"object","properties":{"q":{"type":"string"},"n":{"type":["integer","null"]}},"required":["q","n"],"additionalProperties":false}`
	if !c.Strict || string(c.Schema) != want {
		t.Errorf("Schema %s (%s), want %s", c.Schema, c.Problem, want)
	}
	if strings.Join(c.Fields, ",") != "/n,/q" {
		t.Errorf("Fields %q", c.Fields)
	}
	args, err := c.FromModel(json.RawMessage(`{"q":"x","n":null}`))
	if err != nil || string(args) != `{"q":"x"}` {
		t.Errorf("FromModel = %s, %v", args, err)
	}
	var ae *ArgumentError
	if err := c.Check(json.RawMessage(`{"q":"x","m":1}`)); !errors.As(err, &ae) || ae.Pointer != "/m" {
		t.Errorf("Check with an unknown field = %v", err)
	}
}

// TestMovedConstraints checks constraints a profile does not accept but
// that only narrow values: the strict form offered to that profile leaves
// them out and says them in the description, and Check still refuses,
// with a message for the model, the values they refuse, which the offered
// form now lets through.
func TestMovedConstraints(t *testing.T) {
	for _, tc := range []struct {
		name, schema string
		p            Profile
		want         string // the form For(p) offers, strict
		bad          string // arguments the offered form admits and the original refuses
		ptr, reason  string // where and why Check refuses bad
	}{{
		name:   "lengths, said after the description",
		schema: `{"type":"object","properties":{"query":{"type":"string","description":"Search terms.","minLength":3,"maxLength":100}},"required":["query"]}`,
		p:      OpenAI,
		want:   `{"type":"object","properties":{"query":{"type":"string","description":"Search terms. (at least 3 characters, at most 100 characters)"}},"required":["query"],"additionalProperties":false}`,
		bad:    `{"query":"ab"}`,
		ptr:    "/query", reason: "must be at least 3 characters long; got 2",
	}, {
		name:   "a length on an optional property: OpenAI's nullable form",
		schema: `{"type":"object","properties":{"q":{"type":"string","maxLength":2}}}`,
		p:      OpenAI,
		want:   `{"type":"object","properties":{"q":{"type":["string","null"],"description":"at most 2 characters"}},"required":["q"],"additionalProperties":false}`,
		bad:    `{"q":"abc"}`,
		ptr:    "/q", reason: "must be at most 2 characters long; got 3",
	}, {
		name:   "the same for Anthropic, which keeps it optional",
		schema: `{"type":"object","properties":{"q":{"type":"string","maxLength":2}}}`,
		p:      Anthropic,
		want:   `{"type":"object","properties":{"q":{"type":"string","description":"at most 2 characters"}},"additionalProperties":false}`,
		bad:    `{"q":"abc"}`,
		ptr:    "/q", reason: "must be at most 2 characters long; got 3",
	}, {
		name:   "ranges: Anthropic",
		schema: `{"type":"object","properties":{"n":{"type":"integer","minimum":1,"exclusiveMaximum":10},"x":{"type":"number","exclusiveMinimum":0,"multipleOf":0.5,"maximum":5}},"required":["n","x"]}`,
		p:      Anthropic,
		want:   `{"type":"object","properties":{"n":{"type":"integer","description":"at least 1, less than 10"},"x":{"type":"number","description":"greater than 0, a multiple of 0.5, at most 5"}},"required":["n","x"],"additionalProperties":false}`,
		bad:    `{"n":10,"x":1}`,
		ptr:    "/n", reason: "must be less than 10; got 10",
	}, {
		name:   "ranges stay for OpenAI, which accepts them",
		schema: `{"type":"object","properties":{"n":{"type":"integer","minimum":1}},"required":["n"]}`,
		p:      OpenAI,
		want:   `{"type":"object","properties":{"n":{"type":"integer","minimum":1}},"required":["n"],"additionalProperties":false}`,
	}, {
		name:   "item counts: Anthropic keeps minItems 1 of a larger minimum",
		schema: `{"type":"object","properties":{"xs":{"type":"array","items":{"type":"string"},"minItems":2,"maxItems":3,"uniqueItems":true}},"required":["xs"]}`,
		p:      Anthropic,
		want:   `{"type":"object","properties":{"xs":{"type":"array","items":{"type":"string"},"minItems":1,"description":"at least 2 items, at most 3 items, no item repeated"}},"required":["xs"],"additionalProperties":false}`,
		bad:    `{"xs":["a"]}`,
		ptr:    "/xs", reason: "must have at least 2 items; got 1",
	}, {
		name:   "uniqueItems: OpenAI",
		schema: `{"type":"object","properties":{"xs":{"type":"array","items":{"type":"string"},"uniqueItems":true}},"required":["xs"]}`,
		p:      OpenAI,
		want:   `{"type":"object","properties":{"xs":{"type":"array","items":{"type":"string"},"description":"no item repeated"}},"required":["xs"],"additionalProperties":false}`,
		bad:    `{"xs":["a","a"]}`,
		ptr:    "/xs/1", reason: "repeats item 0; the items must be unique",
	}, {
		name:   "a word boundary pattern: Anthropic",
		schema: `{"type":"object","properties":{"w":{"type":"string","pattern":"^\\bab"}},"required":["w"]}`,
		p:      Anthropic,
		want:   `{"type":"object","properties":{"w":{"type":"string","description":"matching the pattern \"^\\\\bab\""}},"required":["w"],"additionalProperties":false}`,
		bad:    `{"w":"x"}`,
		ptr:    "/w", reason: `must match the pattern "^\\bab"`,
	}, {
		name:   "a format OpenAI does not take (an annotation to the validator: nothing to refuse)",
		schema: `{"type":"object","properties":{"u":{"type":"string","format":"uri","description":"Where."}},"required":["u"]}`,
		p:      OpenAI,
		want:   `{"type":"object","properties":{"u":{"type":"string","description":"Where. (format \"uri\")"}},"required":["u"],"additionalProperties":false}`,
	}, {
		name:   "inside array items and anyOf branches",
		schema: `{"type":"object","properties":{"v":{"anyOf":[{"type":"string","minLength":2},{"type":"array","items":{"type":"string","maxLength":1}}]}},"required":["v"]}`,
		p:      OpenAI,
		want:   `{"type":"object","properties":{"v":{"anyOf":[{"type":"string","description":"at least 2 characters"},{"type":"array","items":{"type":"string","description":"at most 1 character"}}]}},"required":["v"],"additionalProperties":false}`,
		bad:    `{"v":["ab"]}`,
		ptr:    "/v/0", reason: "must be at most 1 character long; got 2",
	}, {
		name:   "a count past 32 bits is said as the validator reads it",
		schema: `{"type":"object","properties":{"s":{"type":"string","maxLength":1e12}},"required":["s"]}`,
		p:      OpenAI,
		want:   `{"type":"object","properties":{"s":{"type":"string","description":"at most 2147483647 characters"}},"required":["s"],"additionalProperties":false}`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			c := mustClose(t, tc.schema)
			form, strict := c.For(tc.p)
			if !strict {
				t.Fatalf("For(%s) is not strict: %s", tc.p, c.Problems[tc.p])
			}
			if string(form) != tc.want {
				t.Errorf("For(%s)\n got %s\nwant %s", tc.p, form, tc.want)
			}
			if tc.bad == "" {
				return
			}
			if err := validStrict(t, form, []byte(tc.bad)); err != nil {
				t.Fatalf("the offered form refuses %s itself (%v): pick arguments only the moved constraint refuses", tc.bad, err)
			}
			out, err := c.FromModel(json.RawMessage(tc.bad))
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.ForServer(out)
			var ae *ArgumentError
			if !errors.As(err, &ae) {
				t.Fatalf("ForServer(%s) = %v, want an *ArgumentError: the host must enforce what the strict form no longer does", tc.bad, err)
			}
			if ae.Pointer != tc.ptr || !strings.Contains(ae.Reason, tc.reason) {
				t.Errorf("ForServer(%s): %q at %q, want %q at %q", tc.bad, ae.Reason, ae.Pointer, tc.reason, tc.ptr)
			}
		})
	}
}

// TestCloseConcurrent: Close of the same schemas from many goroutines at
// once gives every time the forms it gives alone (run with -race): the
// forms relaxed in place share nothing with each other or with other
// Closes (the leaves all strict forms share are never changed).
func TestCloseConcurrent(t *testing.T) {
	schemas := []json.RawMessage{json.RawMessage(`{"type":"object","properties":{"q":{"type":"string","minLength":3},"n":{"type":"integer","minimum":1},"xs":{"type":"array","items":{"type":"string","maxLength":2},"minItems":2},"u":{"type":"string","format":"uri"}},"required":["q"]}`)}
	for _, s := range corpus(t) {
		schemas = append(schemas, s.Schema)
	}
	type forms [2]string
	want := make([]forms, len(schemas))
	for i, s := range schemas {
		c, err := Close(s)
		if err != nil {
			t.Fatal(err)
		}
		for j, p := range Profiles() {
			f, _ := c.For(p)
			want[i][j] = string(f)
		}
	}
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				for i, s := range schemas {
					c, err := Close(s)
					if err != nil {
						t.Error(err)
						return
					}
					for j, p := range Profiles() {
						if f, _ := c.For(p); string(f) != want[i][j] {
							t.Errorf("schema %d, %s: %s, want %s", i, p, f, want[i][j])
							return
						}
					}
				}
			}
		}()
	}
	wg.Wait()
}
