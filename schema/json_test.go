package schema

import (
	"github.com/mcphost/mcphost/internal/jsontree"

	"encoding/json"
	"math"
	"reflect"
	"testing"
)

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
		v, err := readArgs(new(jsontree.Parser), []byte(args))
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
		v, err := readArgs(new(jsontree.Parser), []byte(args))
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
	if f, _ := instance(&jsontree.Value{Kind: jsontree.Number, Raw: "-0"}); math.Signbit(f.(float64)) != true {
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
	v := &jsontree.Value{Kind: jsontree.Object, Obj: []jsontree.Member{
		{Name: "a\n\x01\"\\\t\r", Val: &jsontree.Value{Kind: jsontree.String, Str: "\t\\x\x02\x1f"}},
		{Name: "b", Val: &jsontree.Value{Kind: jsontree.Array, Arr: []*jsontree.Value{nullValue(), boolValue(true), boolValue(false), numValue("1e3")}}},
		{Name: "c", Val: &jsontree.Value{Kind: jsontree.Array, Arr: []*jsontree.Value{}}},
		{Name: "d", Val: &jsontree.Value{Kind: jsontree.Object, Obj: []jsontree.Member{}}},
	}}
	got := encode(v)
	if cap(got) != len(got) {
		t.Errorf("encode(%s): %d bytes in %d", got, len(got), cap(got))
	}
	var x map[string]any
	if err := json.Unmarshal(got, &x); err != nil {
		t.Errorf("encode wrote %s: %v", got, err)
	}
	want := map[string]any{"a\n\x01\"\\\t\r": "\t\\x\x02\x1f", "b": []any{nil, true, false, 1e3}, "c": []any{}, "d": map[string]any{}}
	if !reflect.DeepEqual(x, want) {
		t.Errorf("encode wrote %s, which reads as %#v", got, x)
	}
}

// TestQuoted: quoted writes what appendQuoted writes.
func TestQuoted(t *testing.T) {
	for _, s := range []string{"", "type", "additionalProperties", uriDraft07, uriDraft2020, "plain", "a\"b", "a\\b", "\x00\x1f\n\r\t", "é\u2028"} {
		if got, want := quoted(s), string(jsontree.AppendQuoted(nil, s)); got != want {
			t.Errorf("quoted(%q) = %s, want %s", s, got, want)
		}
	}
}
