package schema

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// parseCases are texts at the edges of the JSON grammar, each with whether
// json.Valid accepts it.
var parseCases = []struct {
	text string
	ok   bool
}{
	{``, false},
	{`   `, false},
	{`{}`, true},
	{` {"a":1} `, true},
	{"\t\r\n[]\n", true},
	{`[1,2,3]`, true},
	{`"x"`, true},
	{`-0`, true},
	{`0.5e+3`, true},
	{`1E5`, true},
	{`123456789012345678901234567890`, true},
	{`1e-400`, true},
	{`01`, false},
	{`-01`, false},
	{`-`, false},
	{`1.`, false},
	{`.5`, false},
	{`1e`, false},
	{`1e+`, false},
	{`+1`, false},
	{`0x1`, false},
	{`tru`, false},
	{`truex`, false},
	{`true`, true},
	{`null `, true},
	{`nul`, false},
	{`{"a":}`, false},
	{`{"a" 1}`, false},
	{`{,}`, false},
	{`[,]`, false},
	{`[1,]`, false},
	{`{"a":1,}`, false},
	{`{"a":1 "b":2}`, false},
	{`{1:2}`, false},
	{`{"a":1`, false},
	{`[`, false},
	{`"abc`, false},
	{`1 2`, false},
	{`[1 2]`, false},
	{`"\u0041\/\b\f\n\r\t\"\\"`, true},
	{`"\u00zz"`, false},
	{`"\u004"`, false},
	{`"\x"`, false},
	{"\"\x01\"", false},
	{"\"a\nb\"", false},
	{"\"\x7f\"", true},
	{`"\ud800"`, true}, // valid JSON; readArgs refuses the lone surrogate
	{`{"a":1,"a":2}`, true},
	{"{}\x00", false},
	{"\ufeff{}", false},
	{strings.Repeat("[", maxNesting) + strings.Repeat("]", maxNesting), true},
	{strings.Repeat("[", maxNesting+1) + strings.Repeat("]", maxNesting+1), false},
	{strings.Repeat(`{"a":`, maxNesting) + "1" + strings.Repeat("}", maxNesting), true},
	{strings.Repeat(`{"a":`, maxNesting+1) + "1" + strings.Repeat("}", maxNesting+1), false},
}

// TestParseAcceptsWhatJSONValidAccepts: parse validates as it builds, so it
// must agree with encoding/json (which the validator reads arguments and
// schemas with) on every text, and build the value the text holds.
func TestParseAcceptsWhatJSONValidAccepts(t *testing.T) {
	for _, tc := range parseCases {
		if got := json.Valid([]byte(tc.text)); got != tc.ok {
			t.Fatalf("json.Valid(%.40q) = %v; the case is wrong", tc.text, got)
		}
		checkParse(t, []byte(tc.text))
	}
}

// checkParse checks parse against encoding/json on one text.
func checkParse(t *testing.T, data []byte) {
	t.Helper()
	want := utf8.Valid(data) && json.Valid(data)
	p, err := parse(data)
	if (err == nil) != want {
		t.Fatalf("parse(%.60q): err %v, but encoding/json says valid=%v", data, err, want)
	}
	if err != nil {
		return
	}
	// The tree must say what the text says: re-encoded, it decodes to
	// the same value (for a repeated name the last one counts, as in
	// encoding/json), and repeated names and lone surrogates are flagged.
	a, err := decodeNumbers(data)
	if err != nil {
		t.Fatalf("parse accepted %.60q, encoding/json refuses it: %v", data, err)
	}
	enc := encode(p.v)
	b, err := decodeNumbers(enc)
	if err != nil {
		t.Fatalf("encode(parse(%.60q)) = %.60q, not JSON: %v", data, enc, err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("parse(%.60q) re-encodes as %.60q, another value", data, enc)
	}
	if p.hasDup != hasRepeatedName(data) {
		t.Fatalf("parse(%.60q): hasDup %v", data, p.hasDup)
	}
}

// decodeNumbers decodes one JSON text with numbers kept as written (a
// number float64 cannot hold is still JSON).
func decodeNumbers(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// hasRepeatedName reports whether any object in a valid JSON text repeats
// a name, by encoding/json's reading of the names.
func hasRepeatedName(data []byte) bool {
	dec := json.NewDecoder(strings.NewReader(string(data)))
	type frame struct {
		obj   bool
		seen  map[string]bool
		isKey bool
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch tok := tok.(type) {
		case json.Delim:
			if tok == '{' || tok == '[' {
				if top != nil && top.obj {
					top.isKey = true
				}
				stack = append(stack, &frame{obj: tok == '{', seen: map[string]bool{}, isKey: true})
				continue
			}
			stack = stack[:len(stack)-1]
			continue
		case string:
			if top != nil && top.obj && top.isKey {
				if top.seen[tok] {
					return true
				}
				top.seen[tok] = true
				top.isKey = false
				continue
			}
		}
		if top != nil && top.obj {
			top.isKey = true
		}
	}
}

// FuzzParseJSON: parse accepts exactly what encoding/json accepts (with
// valid UTF-8) and builds the value the text holds. The seed corpus is
// testdata/fuzz/FuzzParseJSON and parseCases.
func FuzzParseJSON(f *testing.F) {
	for _, tc := range parseCases {
		if len(tc.text) < 1000 {
			f.Add([]byte(tc.text))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkParse(t, data) })
}

// TestInstance: the validator's instance, built from the parsed
// arguments, is what encoding/json makes of them, and a number float64
// cannot hold is left to encoding/json.
func TestInstance(t *testing.T) {
	for _, args := range []string{
		`{}`,
		`{"a":null,"b":true,"c":false,"d":-0,"e":1.5e3,"f":"x\u00e9\n","g":[1,[2,{}]],"h":{"i":{"j":[]}}}`,
		`{"big":123456789012345678901234567890,"tiny":1e-400,"neg":-1E+2}`,
		`{"s":"\ud83d\ude00 \\ \/"}`,
	} {
		v, err := readArgs([]byte(args))
		if err != nil {
			t.Fatalf("readArgs(%s): %v", args, err)
		}
		got, ok := instance(v)
		var want any
		if err := json.Unmarshal([]byte(args), &want); err != nil {
			t.Fatal(err)
		}
		if !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("instance(%s) = %#v, %v; encoding/json: %#v", args, got, ok, want)
		}
	}
	for _, args := range []string{`{"a":1e400}`, `{"a":[-1e999]}`} {
		v, err := readArgs([]byte(args))
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := instance(v); ok {
			t.Errorf("instance(%s) took a number outside float64", args)
		}
		var x any
		if json.Unmarshal([]byte(args), &x) == nil {
			t.Errorf("encoding/json reads %s; instance must then too", args)
		}
	}
	if f, _ := instance(&value{kind: kindNumber, raw: "-0"}); math.Signbit(f.(float64)) != true {
		t.Errorf("instance(-0) lost the sign")
	}
}

// TestEncodeSize: encode allocates exactly the text's length, for the
// corpus and reference schemas in every form Close keeps, and for names
// and strings that need escapes.
func TestEncodeSize(t *testing.T) {
	for name, set := range map[string]func(testing.TB) []namedSchema{"corpus": corpus, "reference servers": referenceServers} {
		t.Run(name, func(t *testing.T) {
			for _, s := range set(t) {
				c, err := Close(s.Schema)
				if err != nil {
					t.Fatal(err)
				}
				if c.CheckProblem != "" {
					continue // the forms are the original, as sent
				}
				forms := [][]byte{c.closed, c.check}
				for _, f := range c.strict {
					forms = append(forms, f)
				}
				for _, form := range forms {
					if cap(form) != len(form) {
						t.Errorf("%s: a form of %d bytes holds %d", s.ID, len(form), cap(form))
					}
				}
			}
		})
	}
	v := &value{kind: kindObject, obj: []member{
		{name: "a\n\x01\"\\\t\r", val: &value{kind: kindString, str: "\t\\x\x02\x1f"}},
		{name: "b", val: &value{kind: kindArray, arr: []*value{nullValue(), boolValue(true), boolValue(false), numValue("1e3")}}},
		{name: "c", val: &value{kind: kindArray, arr: []*value{}}},
		{name: "d", val: &value{kind: kindObject, obj: []member{}}},
	}}
	got := encode(v)
	if cap(got) != len(got) {
		t.Errorf("encode(%s): %d bytes in %d", got, len(got), cap(got))
	}
	var x any
	if err := json.Unmarshal(got, &x); err != nil {
		t.Errorf("encode wrote %s: %v", got, err)
	}
}

// TestQuoted: quoted writes what appendQuoted writes.
func TestQuoted(t *testing.T) {
	for _, s := range []string{"", "type", "additionalProperties", uriDraft07, uriDraft2020, "plain", "a\"b", "a\\b", "\x00\x1f\n\r\t", "é\u2028"} {
		if got, want := quoted(s), string(appendQuoted(nil, s)); got != want {
			t.Errorf("quoted(%q) = %s, want %s", s, got, want)
		}
	}
}
