package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

const toolSchema = `{
  "type": "object",
  "properties": {
    "query": {"type": "string", "minLength": 2, "maxLength": 5, "pattern": "^[a-z]+$"},
    "limit": {"type": "integer", "minimum": 1, "maximum": 100},
    "ratio": {"type": "number", "exclusiveMinimum": 0, "multipleOf": 0.5},
    "unit": {"type": "string", "enum": ["C", "F"]},
    "file_path": {"type": "string"},
    "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2, "uniqueItems": true},
    "filter": {"type": "object", "properties": {"owner": {"type": "string"}}, "required": ["owner"]},
    "edits": {"type": "array", "items": {"type": "object", "properties": {"old": {"type": "string"}, "new": {"type": "string"}}, "required": ["old", "new"]}}
  },
  "required": ["query"]
}`

// TestCheck checks that arguments the schema refuses are refused with a
// message that says where, what was expected and what came.
func TestCheck(t *testing.T) {
	c := mustClose(t, toolSchema)
	for _, tc := range []struct {
		args    string
		pointer string
		message string // the whole Error text
	}{
		{`{}`, "/query", `invalid arguments: /query: missing required field (string)`},
		{`{"query": 5}`, "/query", `invalid arguments: /query: expected string, got integer 5`},
		{`{"query": "a"}`, "/query", `invalid arguments: /query: must be at least 2 characters long; got 1`},
		{`{"query": "abcdef"}`, "/query", `invalid arguments: /query: must be at most 5 characters long; got 6`},
		{`{"query": "AB"}`, "/query", `invalid arguments: /query: must match the pattern "^[a-z]+$"; got string "AB"`},
		{`{"query": "ab", "limit": 0}`, "/limit", `invalid arguments: /limit: must be at least 1; got 0`},
		{`{"query": "ab", "limit": 101}`, "/limit", `invalid arguments: /limit: must be at most 100; got 101`},
		{`{"query": "ab", "limit": 1.5}`, "/limit", `invalid arguments: /limit: expected integer, got number 1.5`},
		{`{"query": "ab", "limit": "10"}`, "/limit", `invalid arguments: /limit: expected integer, got string "10"`},
		{`{"query": "ab", "ratio": 0}`, "/ratio", `invalid arguments: /ratio: must be greater than 0; got 0`},
		{`{"query": "ab", "ratio": 0.7}`, "/ratio", `invalid arguments: /ratio: must be a multiple of 0.5; got 0.7`},
		{`{"query": "ab", "unit": "K"}`, "/unit", `invalid arguments: /unit: expected one of "C", "F"; got string "K"`},
		{`{"query": "ab", "unit": null}`, "/unit", `invalid arguments: /unit: expected string, got null`},
		{`{"qeury": "ab"}`, "/qeury", `invalid arguments: /qeury: unknown field; did you mean "query"?`},
		{`{}`, "/query", `invalid arguments: /query: missing required field (string)`},
		{`{"query": "ab", "limt": 3}`, "/limt", `invalid arguments: /limt: unknown field; did you mean "limit"?`},
		{`{"query": "ab", "filePath": "x"}`, "/filePath", `invalid arguments: /filePath: unknown field; did you mean "file_path"?`},
		{`{"query": "ab", "zzz": 1}`, "/zzz", `invalid arguments: /zzz: unknown field; the fields here are "query", "limit", "ratio", "unit", "file_path", "tags", "filter", "edits"`},
		{`{"query": "ab", "tags": []}`, "/tags", `invalid arguments: /tags: must have at least 1 item; got 0`},
		{`{"query": "ab", "tags": ["a", "b", "c"]}`, "/tags", `invalid arguments: /tags: must have at most 2 items; got 3`},
		{`{"query": "ab", "tags": ["a", "a"]}`, "/tags/1", `invalid arguments: /tags/1: repeats item 0; the items must be unique`},
		{`{"query": "ab", "tags": ["a", 2]}`, "/tags/1", `invalid arguments: /tags/1: expected string, got integer 2`},
		{`{"query": "ab", "filter": {}}`, "/filter/owner", `invalid arguments: /filter/owner: missing required field (string)`},
		{`{"query": "ab", "filter": {"owner": "o", "ownr": "p"}}`, "/filter/ownr", `invalid arguments: /filter/ownr: unknown field; the fields here are "owner"`},
		{`{"query": "ab", "edits": [{"old": "a", "new": "b"}, {"old": "a", "nwe": "b"}]}`, "/edits/1/nwe", `invalid arguments: /edits/1/nwe: unknown field; did you mean "new"?`},
		{`{"query": "ab", "edits": [{"old": "a"}]}`, "/edits/0/new", `invalid arguments: /edits/0/new: missing required field (string)`},
		{`{"query": "ab", "edits": [{"old": "a", "new": "b", "neww": "c"}]}`, "/edits/0/neww", `invalid arguments: /edits/0/neww: unknown field; the fields here are "old", "new"`},
		{`[]`, "", `invalid arguments: the arguments must be a JSON object, not an array`},
		{`"ab"`, "", `invalid arguments: the arguments must be a JSON object, not a string`},
		{`{"query": "ab", "query": "cd"}`, "/query", `invalid arguments: /query: this field is given more than once; give each field once`},
		{`{"query": "ab", "limit": 1e999}`, "/limit", `invalid arguments: /limit: the number 1e999 is out of range`},
		{`{"query": "\ud800"}`, "", `invalid arguments: a string holds an unpaired UTF-16 surrogate escape (a lone \uD800-\uDFFF), which is not a character`},
		// What to fix first: that they are not an object.
		{`[{"query": "ab", "query": "cd"}]`, "", `invalid arguments: the arguments must be a JSON object, not an array`},
		{`["\ud800"]`, "", `invalid arguments: the arguments must be a JSON object, not an array`},
		// Not JSON at all, after a repeat.
		{`{"query": "ab", "query": "cd"`, "", `invalid arguments: the arguments are not valid JSON at byte offset 29: found the end of the text, want ',' or '}' in an object; send one JSON object`},
	} {
		t.Run(tc.args, func(t *testing.T) {
			err := c.Check(json.RawMessage(tc.args))
			var ae *ArgumentError
			if !errors.As(err, &ae) {
				t.Fatalf("Check = %v, want an *ArgumentError", err)
			}
			if ae.Pointer != tc.pointer || err.Error() != tc.message {
				t.Errorf("Check\n got %q %s\nwant %q %s", ae.Pointer, err, tc.pointer, tc.message)
			}
		})
	}
	for _, ok := range []string{
		`{"query": "ab"}`,
		`{"query": "abc", "limit": 100, "ratio": 1.5, "unit": "F", "file_path": "x", "tags": ["a", "b"], "filter": {"owner": "o"}, "edits": []}`,
		`{"query": "ab", "limit": 1.0}`,
		`{"query": "ab", "limit": 1e1}`,
	} {
		if err := c.Check(json.RawMessage(ok)); err != nil {
			t.Errorf("Check(%s) = %v, want nil", ok, err)
		}
	}
}

// TestCheckInvalidJSON: text that is not JSON is refused, not read
// leniently.
func TestCheckInvalidJSON(t *testing.T) {
	c := mustClose(t, `{"type":"object","properties":{}}`)
	for _, args := range []string{`{`, `{"a":}`, `{} {}`, "{\"a\":\"\xff\"}", `{'a':1}`} {
		err := c.Check(json.RawMessage(args))
		var ae *ArgumentError
		if !errors.As(err, &ae) || !strings.HasPrefix(ae.Reason, "the arguments are ") {
			t.Errorf("Check(%q) = %v, want an *ArgumentError about the text", args, err)
		}
		if _, err := c.FromModel(json.RawMessage(args)); !errors.As(err, &ae) {
			t.Errorf("FromModel(%q) = %v, want an *ArgumentError", args, err)
		}
	}
}

// TestEmptyArguments: nothing, white space and null are {}.
func TestEmptyArguments(t *testing.T) {
	open := mustClose(t, `{"type":"object","properties":{"a":{"type":"string"}}}`)
	needs := mustClose(t, `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`)
	for _, args := range []string{``, ` `, "\n\t", `null`, ` null `} {
		got, err := open.FromModel(json.RawMessage(args))
		if err != nil || string(got) != `{}` {
			t.Errorf("FromModel(%q) = %s, %v; want {}", args, got, err)
		}
		if err := open.Check(json.RawMessage(args)); err != nil {
			t.Errorf("Check(%q) = %v", args, err)
		}
		var ae *ArgumentError
		if err := needs.Check(json.RawMessage(args)); !errors.As(err, &ae) || ae.Pointer != "/a" {
			t.Errorf("Check(%q) with a required field = %v", args, err)
		}
	}
}

// TestFromModel checks the mapping of the model's arguments back.
func TestFromModel(t *testing.T) {
	schema := `{
	  "type": "object",
	  "properties": {
	    "path": {"type": "string"},
	    "head": {"type": "number"},
	    "clear": {"type": ["string", "null"]},
	    "opts": {"type": "object", "properties": {"deep": {"type": "boolean"}, "name": {"type": "string"}}, "required": ["name"]},
	    "edits": {"type": "array", "items": {"type": "object", "properties": {"old": {"type": "string"}, "dry": {"type": "boolean"}}, "required": ["old"]}},
	    "u": {"type": ["integer", "object"], "properties": {"x": {"type": "string"}}}
	  },
	  "required": ["path", "clear"]
	}`
	c := mustClose(t, schema)
	if !c.Strict {
		t.Fatalf("not strict: %s", c.Problem)
	}
	for _, tc := range []struct{ in, want string }{
		{`{"path":"a","head":null,"clear":null,"opts":null,"edits":null,"u":null}`, `{"path":"a","clear":null}`},
		{`{"path":"a","clear":"x","opts":{"deep":null,"name":"n"}}`, `{"path":"a","clear":"x","opts":{"name":"n"}}`},
		{`{"path":"a","clear":null,"edits":[{"old":"o","dry":null},{"old":"p","dry":true}]}`, `{"path":"a","clear":null,"edits":[{"old":"o"},{"old":"p","dry":true}]}`},
		{`{"path":"a","clear":null,"u":{"x":null}}`, `{"path":"a","clear":null,"u":{}}`},
		// A null for a required property stays: the original admits it
		// (clear), or Check will say it does not (path).
		{`{"path":null,"clear":null}`, `{"path":null,"clear":null}`},
		// Nothing removed: the model's bytes, as written.
		{` {"path" : "a", "clear":null, "head": 1.50e0} `, `{"path" : "a", "clear":null, "head": 1.50e0}`},
		// Removed: numbers, escapes and member order as written.
		{`{"head":null,"clear":"\u00e9\n","path":"a","opts":{"name":"1","deep":null},"n":1.000}`, `{"clear":"\u00e9\n","path":"a","opts":{"name":"1"},"n":1.000}`},
	} {
		got, err := c.FromModel(json.RawMessage(tc.in))
		if err != nil {
			t.Errorf("FromModel(%s): %v", tc.in, err)
			continue
		}
		if string(got) != tc.want {
			t.Errorf("FromModel(%s)\n got %s\nwant %s", tc.in, got, tc.want)
		}
	}
	var ae *ArgumentError
	if _, err := c.FromModel(json.RawMessage(`[1]`)); !errors.As(err, &ae) {
		t.Errorf("FromModel([1]) = %v, want an *ArgumentError", err)
	}
	if _, err := c.FromModel(json.RawMessage(`{"head":null,"head":1}`)); !errors.As(err, &ae) || ae.Pointer != "/head" {
		t.Errorf("FromModel with a field given twice = %v", err)
	}

	// Where an optional property admits null, a null for it is the
	// model's own value: it stays, for Check to judge (there is no
	// OpenAI strict form; the Anthropic one keeps f optional and
	// nullable). A null for g, optional and refusing null, can only mean
	// "omitted", under either form, and is removed.
	open := mustClose(t, `{"type":"object","properties":{"f":{"type":["string","null"]},"g":{"type":"string"}}}`)
	got, err := open.FromModel(json.RawMessage(`{"f":null,"g":null}`))
	if err != nil || string(got) != `{"f":null}` {
		t.Errorf("FromModel with an optional nullable property = %s, %v", got, err)
	}
	if err := open.Check(got); err != nil {
		t.Errorf("Check(%s) = %v", got, err)
	}
	// Without any strict form (a free-form map), nulls all stay.
	none := mustClose(t, `{"type":"object","properties":{"m":{"type":"object"},"g":{"type":"string"}}}`)
	got, err = none.FromModel(json.RawMessage(`{"g":null}`))
	if err != nil || string(got) != `{"g":null}` {
		t.Errorf("FromModel without a strict form = %s, %v", got, err)
	}
	if err := none.Check(got); err == nil || !strings.Contains(err.Error(), "/g: expected string, got null") {
		t.Errorf("Check = %v, want /g refused", err)
	}
}

// TestDialects checks the $schema values real servers send: draft-07 is
// validated as draft-07 (tuples, $ref siblings ignored), 2020-12 as
// 2020-12, others as the dialect they match, unknown ones not at all.
func TestDialects(t *testing.T) {
	for _, tc := range []struct {
		name, schema string
		valid        []string
		invalid      []string
		uncheckable  string
	}{{
		name:    "draft-07 as zod-to-json-schema writes it",
		schema:  `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"n":{"type":"number"}},"required":["n"],"additionalProperties":false}`,
		valid:   []string{`{"n":1}`},
		invalid: []string{`{}`, `{"n":"1"}`, `{"n":1,"m":2}`},
	}, {
		name:    "draft-07 without the empty fragment, and over https",
		schema:  `{"$schema":"https://json-schema.org/draft-07/schema","type":"object","properties":{"n":{"type":"number"}},"required":["n"]}`,
		valid:   []string{`{"n":1}`},
		invalid: []string{`{"n":"1"}`, `{"n":1,"x":0}`},
	}, {
		name:    "draft-07 tuples: items as a list, additionalItems after it",
		schema:  `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"t":{"type":"array","items":[{"type":"string"},{"type":"integer"}],"additionalItems":false}},"required":["t"]}`,
		valid:   []string{`{"t":["a",1]}`, `{"t":["a"]}`},
		invalid: []string{`{"t":[1,"a"]}`, `{"t":["a",1,2]}`},
	}, {
		name:    "draft-07 ignores keywords beside $ref",
		schema:  `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"v":{"$ref":"#/definitions/T","minimum":5}},"required":["v"],"definitions":{"T":{"type":"integer"}}}`,
		valid:   []string{`{"v":1}`},
		invalid: []string{`{"v":"1"}`},
	}, {
		name:    "2020-12 applies keywords beside $ref",
		schema:  `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"v":{"$ref":"#/$defs/T","minimum":5}},"required":["v"],"$defs":{"T":{"type":"integer"}}}`,
		valid:   []string{`{"v":5}`},
		invalid: []string{`{"v":1}`},
	}, {
		name:    "2019-09 tuples become 2020-12 prefixItems",
		schema:  `{"$schema":"https://json-schema.org/draft/2019-09/schema","type":"object","properties":{"t":{"type":"array","items":[{"type":"string"}],"additionalItems":{"type":"integer"}}},"required":["t"]}`,
		valid:   []string{`{"t":["a",1,2]}`},
		invalid: []string{`{"t":[1]}`, `{"t":["a","b"]}`},
	}, {
		name:   "draft-06 has no if/then/else, so they are ignored",
		schema: `{"$schema":"http://json-schema.org/draft-06/schema#","type":"object","properties":{"n":{"type":"integer"}},"if":{"required":["n"]},"then":{"required":["m"]}}`,
		valid:  []string{`{"n":1}`},
	}, {
		name:        "draft-04 is not known",
		schema:      `{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","properties":{"n":{"type":"number","minimum":0,"exclusiveMinimum":true}}}`,
		uncheckable: `/$schema: $schema "http://json-schema.org/draft-04/schema#" names a JSON Schema dialect mcphost does not know`,
	}, {
		name:        "a $schema that is not a string",
		schema:      `{"$schema":7,"type":"object"}`,
		uncheckable: "/$schema: $schema must be a string",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			c := mustClose(t, tc.schema)
			if !strings.HasPrefix(c.CheckProblem, tc.uncheckable) || (tc.uncheckable == "") != (c.CheckProblem == "") {
				t.Fatalf("CheckProblem %q, want %q", c.CheckProblem, tc.uncheckable)
			}
			for _, a := range tc.valid {
				if err := c.Check(json.RawMessage(a)); err != nil {
					t.Errorf("Check(%s) = %v, want nil", a, err)
				}
			}
			for _, a := range tc.invalid {
				var ae *ArgumentError
				if err := c.Check(json.RawMessage(a)); !errors.As(err, &ae) {
					t.Errorf("Check(%s) = %v, want an *ArgumentError", a, err)
				}
			}
			if tc.uncheckable != "" {
				err := c.Check(json.RawMessage(`{}`))
				if !errors.Is(err, ErrUncheckable) || !strings.Contains(err.Error(), tc.uncheckable) {
					t.Errorf("Check = %v, want ErrUncheckable saying why", err)
				}
				if c.Strict || c.Problem != c.CheckProblem || string(c.Schema) != tc.schema {
					t.Errorf("an uncheckable schema must be offered as written, non-strict: %v %q %s", c.Strict, c.Problem, c.Schema)
				}
			}
		})
	}
}

// TestUncheckable checks schemas Check cannot be trusted with: every call
// is refused, with the reason, from the moment the tool is listed.
func TestUncheckable(t *testing.T) {
	for _, tc := range []struct{ name, schema, want string }{
		{"a name given twice", `{"type":"object","properties":{"a":{"type":"string"},"a":{"type":"integer"}}}`, "/properties/a: this name repeats an earlier member"},
		{"a lone surrogate", `{"type":"object","properties":{"a":{"type":"string","description":"\ud800"}}}`, "(root): a string holds an unpaired UTF-16 surrogate escape"},
		{"an anchor reference", `{"type":"object","properties":{"a":{"$ref":"#foo"}},"$defs":{"f":{"$anchor":"foo"}}}`, "names an anchor"},
		{"a reference to nothing", `{"type":"object","properties":{"a":{"$ref":"#/$defs/missing"}}}`, "does not resolve to a schema"},
		{"a reference into a non-schema", `{"type":"object","properties":{"a":{"$ref":"#/properties"}}}`, "does not resolve to a schema"},
		{"a loop in place", `{"$ref":"#"}`, "refers to itself in place"},
		{"a loop through allOf", `{"type":"object","allOf":[{"$ref":"#/$defs/a"}],"$defs":{"a":{"anyOf":[{"$ref":"#"}]}}}`, "refers to itself in place"},
		{"a malformed bound", `{"type":"object","properties":{"n":{"type":"number","minimum":"3"}}}`, `/properties/n/minimum: minimum must be a number (got "3")`},
		{"a negative count", `{"type":"object","properties":{"s":{"type":"string","maxLength":-1}}}`, "maxLength must be a non-negative integer"},
		{"an unknown type", `{"type":"object","properties":{"s":{"type":"text"}}}`, `type "text" is not a JSON Schema type`},
		{"a pattern as a property name RE2 lacks", `{"type":"object","patternProperties":{"^(?!x)":{"type":"string"}}}`, "patternProperties pattern"},
		{"an embedded resource", `{"type":"object","properties":{"a":{"$id":"https://example.com/a","type":"string"}}}`, "$id below the root"},
		{"a dynamic reference", `{"type":"object","properties":{"a":{"$dynamicRef":"#x"}}}`, "$dynamicRef is not supported"},
		{"items as a list in 2020-12", `{"type":"object","properties":{"t":{"type":"array","items":[{"type":"string"}]}}}`, "items must be a schema in 2020-12"},
		{"a schema that is a number", `{"type":"object","properties":{"a":5}}`, "/properties/a: a schema must be an object or a boolean"},
		{"$defs and definitions together", `{"type":"object","$defs":{},"definitions":{}}`, "both $defs and definitions"},
		{"in-place references that multiply", doublingAnyOf(20), "would apply more than 10000 schemas"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mustClose(t, tc.schema)
			if !strings.Contains(c.CheckProblem, tc.want) {
				t.Fatalf("CheckProblem %q, want %q", c.CheckProblem, tc.want)
			}
			for _, p := range Profiles() {
				if c.Problems[p] != c.CheckProblem {
					t.Errorf("%s problem %q, want the check problem", p, c.Problems[p])
				}
			}
			err := c.Check(json.RawMessage(`{}`))
			if !errors.Is(err, ErrUncheckable) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Check = %v, want ErrUncheckable", err)
			}
		})
	}
}

// TestValidatorLimits: what github.com/google/jsonschema-go cannot take as
// written is rewritten so that it means the same, or left out and said.
func TestValidatorLimits(t *testing.T) {
	// Counts beyond 32 bits (the validator's) are exact at 2^31-1.
	c := mustClose(t, `{"type":"object","properties":{"xs":{"type":"array","items":{"type":"integer"},"maxItems":10000000000,"minItems":1.0}}}`)
	if c.CheckProblem != "" {
		t.Fatal(c.CheckProblem)
	}
	if err := c.Check(json.RawMessage(`{"xs":[1,2,3]}`)); err != nil {
		t.Errorf("Check = %v", err)
	}
	if err := c.Check(json.RawMessage(`{"xs":[]}`)); err == nil {
		t.Error("minItems 1.0 not enforced")
	}
	// ECMA-262 \u escapes are RE2's \x{...}.
	c = mustClose(t, `{"type":"object","properties":{"s":{"type":"string","pattern":"^\\u00e9+$"}}}`)
	if err := c.Check(json.RawMessage(`{"s":"éé"}`)); err != nil {
		t.Errorf("Check = %v", err)
	}
	if err := c.Check(json.RawMessage(`{"s":"e"}`)); err == nil {
		t.Error(`pattern \u00e9 not enforced`)
	}
	// A pattern RE2 lacks is left out, and said; the rest is checked.
	c = mustClose(t, `{"type":"object","properties":{"s":{"type":"string","pattern":"^(?!foo)"},"n":{"type":"integer"}}}`)
	if len(c.Unchecked) != 1 || !strings.HasPrefix(c.Unchecked[0], `/properties/s/pattern: pattern "^(?!foo)" is not checked`) {
		t.Errorf("Unchecked = %q", c.Unchecked)
	}
	if err := c.Check(json.RawMessage(`{"s":"foo"}`)); err != nil {
		t.Errorf("Check = %v (the unchecked pattern must not refuse)", err)
	}
	if err := c.Check(json.RawMessage(`{"s":"x","n":"1"}`)); err == nil {
		t.Error("the rest of the schema is not checked")
	}
}

// TestCheckConcurrent: a Closed is used by many calls at once; the
// validator is prepared once (run with -race).
func TestCheckConcurrent(t *testing.T) {
	c := mustClose(t, toolSchema)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				if i%2 == 0 {
					if err := c.Check(json.RawMessage(`{"query":"ab"}`)); err != nil {
						t.Error(err)
						return
					}
				} else if err := c.Check(json.RawMessage(`{"query":1}`)); err == nil {
					t.Error("Check passed a wrong type")
					return
				}
				if _, err := c.FromModel(json.RawMessage(`{"query":"ab","limit":null}`)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestSuggest checks "did you mean": slips are caught, unrelated names
// are not.
func TestSuggest(t *testing.T) {
	names := []string{"query", "limit", "file_path", "paths", "id", "recursive"}
	for _, tc := range []struct{ in, want string }{
		{"qeury", "query"},  // swap
		{"querry", "query"}, // extra letter
		{"quer", "query"},   // missing letter
		{"Query", "query"},  // case
		{"filePath", "file_path"},
		{"file-path", "file_path"},
		{"path", "paths"},
		{"recursve", "recursive"},
		{"ids", "id"},
		{"x", ""},
		{"owner", ""},
		{"lim", ""}, // two edits from a five-letter name is too far
		{strings.Repeat("q", 100), ""},
	} {
		if got := suggest(tc.in, names); got != tc.want {
			t.Errorf("suggest(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestCloseErrors: only input that is not a JSON object is an error.
func TestCloseErrors(t *testing.T) {
	for _, in := range []string{``, `{`, `[]`, `"s"`, `1`, `true`, `null`, "{\"a\":\"\xff\"}", `{} {}`,
		// Not objects, with what would make an object uncheckable.
		`"\ud800"`, ` [{"a":1,"a":2}]`, "\n\"\\u000a\\ud8000\"",
		// Not JSON after a repeat or a lone surrogate.
		"{\"a\":1,\"a\":[0\x00", `{"a":"\ud800",}`} {
		c, err := Close(json.RawMessage(in))
		if !errors.Is(err, ErrInvalidSchema) || c != nil {
			t.Errorf("Close(%q) = %v, %v; want ErrInvalidSchema", in, c, err)
		}
	}
	for _, in := range []string{`{}`, ` {"type":"object"} `, `{"type":"string"}`} {
		if _, err := Close(json.RawMessage(in)); err != nil {
			t.Errorf("Close(%q) = %v", in, err)
		}
	}
}

// doublingAnyOf returns a schema whose anyOf chain doubles the work of
// validating a value at each of n steps (2^n in all).
func doublingAnyOf(n int) string {
	var defs []string
	for i := range n {
		defs = append(defs, fmt.Sprintf(`"d%d":{"anyOf":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}]}`, i, i+1, i+1))
	}
	defs = append(defs, fmt.Sprintf(`"d%d":{"type":"string"}`, n))
	return `{"type":"object","properties":{"x":{"$ref":"#/$defs/d0"}},"$defs":{` + strings.Join(defs, ",") + `}}`
}
