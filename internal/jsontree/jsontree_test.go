package jsontree

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strconv"
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
	{`"\ud800"`, true}, // valid JSON; Parse refuses the lone surrogate
	{`"\udc00"`, true},
	{`"\ud800\u0041"`, true},
	{`"\ud83d\ude00"`, true},
	{`"\\ud800"`, true}, // an escaped backslash, then "ud800"
	{`{"a":1,"a":2}`, true},
	{"{}\x00", false},
	{"\ufeff{}", false},
	{strings.Repeat("[", testDepth) + strings.Repeat("]", testDepth), true},
	{strings.Repeat("[", testDepth+1) + strings.Repeat("]", testDepth+1), false},
	{strings.Repeat(`{"a":`, testDepth) + "1" + strings.Repeat("}", testDepth), true},
	{strings.Repeat(`{"a":`, testDepth+1) + "1" + strings.Repeat("}", testDepth+1), false},
}

// testDepth is the depth bound of the tests: as deep as encoding/json's
// scanner allows, so that the two parsers are compared on every text.
const testDepth = 10000

// TestParseAcceptsWhatJSONValidAccepts: Parse validates as it builds, so it
// must agree with encoding/json on every text but the ones it refuses on
// purpose (a repeated name, a lone surrogate escape), and build the value
// the text holds.
func TestParseAcceptsWhatJSONValidAccepts(t *testing.T) {
	for _, tc := range parseCases {
		if got := json.Valid([]byte(tc.text)); got != tc.ok {
			t.Fatalf("json.Valid(%.40q) = %v; the case is wrong", tc.text, got)
		}
		checkParse(t, []byte(tc.text))
	}
}

// checkParse checks Parse against encoding/json on one text.
func checkParse(t *testing.T, data []byte) {
	t.Helper()
	valid := utf8.Valid(data) && json.Valid(data)
	dup := valid && hasRepeatedName(data)
	lone := valid && hasLoneSurrogate(data)
	v, err := Parse(data, testDepth)
	var je *Error
	if err != nil && !errors.As(err, &je) {
		t.Fatalf("Parse(%.60q): %v is not an *Error", data, err)
	}
	switch {
	case !valid:
		if !errors.Is(err, ErrSyntax) && !errors.Is(err, ErrTooDeep) {
			t.Fatalf("Parse(%.60q) = %v, but encoding/json refuses it", data, err)
		}
		if je != nil && (je.Offset < 0 || je.Offset > len(data)) {
			t.Fatalf("Parse(%.60q): offset %d out of the text", data, je.Offset)
		}
		return
	case dup:
		if !errors.Is(err, ErrDuplicateKey) && !(lone && errors.Is(err, ErrLoneSurrogate)) {
			t.Fatalf("Parse(%.60q) = %v, want ErrDuplicateKey", data, err)
		}
		return
	case lone:
		if !errors.Is(err, ErrLoneSurrogate) {
			t.Fatalf("Parse(%.60q) = %v, want ErrLoneSurrogate", data, err)
		}
		return
	case err != nil:
		t.Fatalf("Parse(%.60q) = %v, but encoding/json reads it", data, err)
	}
	// The tree must say what the text says: written out, it decodes to
	// the same value, and every literal is the text's.
	a, err := decodeNumbers(data)
	if err != nil {
		t.Fatalf("Parse accepted %.60q, encoding/json refuses it: %v", data, err)
	}
	enc := Append(nil, v)
	if len(enc) != Size(v) {
		t.Fatalf("Size(Parse(%.60q)) = %d, Append wrote %d bytes", data, Size(v), len(enc))
	}
	b, err := decodeNumbers(enc)
	if err != nil {
		t.Fatalf("Append(Parse(%.60q)) = %.60q, not JSON: %v", data, enc, err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("Parse(%.60q) is written back as %.60q, another value", data, enc)
	}
	// AppendMinimal writes every string and name from its decoded form, so
	// this checks Str and Name, which the literals above do not.
	minimal := AppendMinimal(nil, v)
	if m, err := decodeNumbers(minimal); err != nil || !reflect.DeepEqual(a, m) {
		t.Fatalf("AppendMinimal(Parse(%.60q)) = %.60q (%v), another value", data, minimal, err)
	}
	checkRaw(t, data, v)
}

// checkRaw checks that every value's Off and Raw point at its text.
func checkRaw(t *testing.T, data []byte, v *Value) {
	t.Helper()
	if off := int(v.Off); off < 0 || off+len(v.Raw) > len(data) || string(data[off:off+len(v.Raw)]) != v.Raw {
		t.Fatalf("a %v at %d: Raw %.40q is not the text there", v.Kind, v.Off, v.Raw)
	}
	for _, e := range v.Arr {
		checkRaw(t, data, e)
	}
	for _, m := range v.Obj {
		checkRaw(t, data, m.Val)
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

// FuzzParse: Parse accepts exactly what encoding/json accepts (with valid
// UTF-8) but for repeated names and lone surrogates, which it refuses as
// such, and builds the value the text holds. The seed corpus is
// testdata/fuzz/FuzzParse and parseCases.
func FuzzParse(f *testing.F) {
	for _, tc := range parseCases {
		if len(tc.text) < 1000 {
			f.Add([]byte(tc.text))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkParse(t, data) })
}

// hasLoneSurrogate reports whether a valid JSON text has a \u escape of a
// surrogate half that is not part of a pair.
func hasLoneSurrogate(data []byte) bool {
	s := string(data)
	inString := false
	for i := 0; i < len(s); i++ {
		switch {
		case !inString:
			inString = s[i] == '"'
		case s[i] == '"':
			inString = false
		case s[i] == '\\' && s[i+1] == 'u':
			r, _ := strconv.ParseUint(s[i+2:i+6], 16, 32)
			switch {
			case 0xDC00 <= r && r <= 0xDFFF:
				return true
			case 0xD800 <= r && r <= 0xDBFF:
				if i+12 > len(s) || s[i+6:i+8] != `\u` {
					return true
				}
				lo, _ := strconv.ParseUint(s[i+8:i+12], 16, 32)
				if lo < 0xDC00 || lo > 0xDFFF {
					return true
				}
				i += 6
			}
			i += 5
		case s[i] == '\\':
			i++
		}
	}
	return false
}

// TestRefusals: each refusal has its kind, the offset of its cause and,
// for a repeated name, the pointer of the repeat; the message quotes what
// the sender wrote with Go escapes.
func TestRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		depth      int
		kind       error
		offset     int
		pointer    string
	}{
		{"empty", ``, 8, ErrSyntax, 0, ""},
		{"not UTF-8", "{\"a\":\"\xff\"}", 8, ErrSyntax, 6, ""},
		{"encoded surrogate", "{\"a\":\"\xed\xa0\x80\"}", 8, ErrSyntax, 6, ""},
		{"trailing", `{} {}`, 8, ErrSyntax, 3, ""},
		{"control character", "[\"a\x01\"]", 8, ErrSyntax, 3, ""},
		{"bad escape", `["\x"]`, 8, ErrSyntax, 3, ""},
		{"repeat", `{"a":1,"a":2}`, 8, ErrDuplicateKey, 0, "/a"},
		{"repeat by escape", `{"a":1,"\u0061":2}`, 8, ErrDuplicateKey, 0, "/a"},
		{"repeat nested", `{"x":[0,{"p":{"a~/b":1,"a~/b":2}}]}`, 8, ErrDuplicateKey, 13, "/x/1/p/a~0~1b"},
		{"repeat in a big object", `{"a0":0,"a1":1,"a2":2,"a3":3,"a4":4,"a5":5,"a6":6,"a7":7,"a8":8,"a9":9,"b0":0,"b1":1,"b2":2,"b3":3,"b4":4,"b5":5,"b6":6,"a3":3}`, 8, ErrDuplicateKey, 0, "/a3"},
		{"lone high", `{"a":"x\ud800"}`, 8, ErrLoneSurrogate, 7, ""},
		{"lone low", `["\udc00"]`, 8, ErrLoneSurrogate, 2, ""},
		{"high then not low", `["\ud800\u0041"]`, 8, ErrLoneSurrogate, 2, ""},
		{"repeat, then not JSON", "{\"a\":1,\"a\":[0\x00", 8, ErrSyntax, 13, ""},
		{"lone, then not JSON", `["\ud800",]`, 8, ErrSyntax, 10, ""},
		{"repeat holding a lone surrogate", `{"a":1,"a":"\ud800"}`, 8, ErrLoneSurrogate, 12, ""},
		{"repeat, then lone", `{"a":1,"a":2,"b":"\ud800"}`, 8, ErrDuplicateKey, 0, "/a"},
		{"lone before repeat", `{"a":"\ud800","a":1}`, 8, ErrLoneSurrogate, 6, ""},
		{"repeat in a later member's value, found first", `{"a":1,"a":{"x":1,"x":2}}`, 8, ErrDuplicateKey, 0, "/a"},
		{"too deep", `[[[1]]]`, 2, ErrTooDeep, 2, ""},
		{"too deep in an object", `{"a":{"b":{}}}`, 2, ErrTooDeep, 10, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.text), tc.depth)
			var je *Error
			if !errors.As(err, &je) || !errors.Is(err, tc.kind) {
				t.Fatalf("Parse(%q) = %v, want an *Error of kind %v", tc.text, err, tc.kind)
			}
			if je.Offset != tc.offset || je.Pointer != tc.pointer {
				t.Errorf("Parse(%q): offset %d, pointer %q; want %d, %q", tc.text, je.Offset, je.Pointer, tc.offset, tc.pointer)
			}
			for _, other := range []error{ErrSyntax, ErrDuplicateKey, ErrLoneSurrogate, ErrTooDeep} {
				if other != tc.kind && errors.Is(err, other) {
					t.Errorf("Parse(%q) = %v, also of kind %v", tc.text, err, other)
				}
			}
		})
	}
	// A name full of what a terminal obeys is shown escaped and cut.
	name := "\x1b]0;pwned\x07" + strings.Repeat("x", 100)
	lit := strings.NewReplacer("\x1b", `\u001b`, "\x07", `\u0007`).Replace(name)
	_, err := Parse([]byte(`{"`+lit+`":1,"`+lit+`":2}`), 8)
	if err == nil || strings.ContainsAny(err.Error(), "\x1b\x07") || !strings.Contains(err.Error(), "...") {
		t.Errorf("Parse of a hostile repeated name: %q", err)
	}
	if _, err := Parse([]byte(`[[1]]`), 2); err != nil {
		t.Errorf("Parse at exactly the depth bound: %v", err)
	}
}

// TestParserReuse: a Parser builds each tree over the last one's memory,
// and every tree is right while it is the latest; a tree from the
// function Parse is never written over.
func TestParserReuse(t *testing.T) {
	texts := []string{
		`{"a":[1,2,{"b":"c"}],"d":"e\n"}`,
		`[` + strings.Repeat(`{"k":"v","n":[true,false,null]},`, 300) + `0]`,
		`{"x":1}`,
		`"just a string"`,
	}
	kept, err := Parse([]byte(texts[0]), 8)
	if err != nil {
		t.Fatal(err)
	}
	var p Parser
	for range 3 {
		for _, text := range texts {
			v, err := p.Parse([]byte(text), 8)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(Append(nil, v)); got != text {
				t.Fatalf("reused Parser: %.60q written back as %.60q", text, got)
			}
			if _, err := p.Parse([]byte(`{"a":1,"a":2}`), 8); err == nil {
				t.Fatal("a refusal after reuse was taken")
			}
		}
	}
	if got := string(Append(nil, kept)); got != texts[0] {
		t.Errorf("a tree from Parse changed to %q", got)
	}
	// And it does build over that memory: a warm Parser allocates less
	// for a text than a fresh one.
	text := []byte(texts[1])
	p.Parse(text, 8)
	warm := allocated(func() { p.Parse(text, 8) })
	fresh := allocated(func() { Parse(text, 8) })
	if warm*2 > fresh {
		t.Errorf("a warm Parser allocated %d bytes for a text, a fresh one %d", warm, fresh)
	}
}

// TestEdit: Set, Del, Members and Elements, and Append of a changed tree,
// which writes what a program added by AppendQuoted and never writes
// into another object's members.
func TestEdit(t *testing.T) {
	v, err := Parse([]byte(`{"a":{"x":1,"y":2},"b":{"z":3}}`), 8)
	if err != nil {
		t.Fatal(err)
	}
	a, b := v.Get("a"), v.Get("b")
	a.Del("x")
	a.Set("new\n", &Value{Kind: String, Str: "tab\there"})
	a.Set("y", &Value{Kind: Bool, Bool: true})
	if got, want := string(Append(nil, v)), `{"a":{"y":true,"new\n":"tab\there"},"b":{"z":3}}`; got != want {
		t.Errorf("changed tree written as %s, want %s", got, want)
	}
	// Appending to an object the parser made never writes over the
	// members of the next one, and Del leaves a tree that shares the
	// members as it was.
	v2, err := Parse([]byte(`{"a":{"x":1,"y":2},"b":{"z":3,"q":4}}`), 8)
	if err != nil {
		t.Fatal(err)
	}
	a2 := v2.Get("a")
	a2.Set("w", &Value{Kind: Null})
	if got := string(Append(nil, v2.Get("b"))); got != `{"z":3,"q":4}` {
		t.Errorf("Set on one object changed the next to %s", got)
	}
	shared := *v2.Get("b")
	v2.Get("b").Del("z")
	if len(shared.Obj) != 2 || shared.Obj[0].Name != "z" || shared.Obj[1].Name != "q" || len(v2.Get("b").Obj) != 1 {
		t.Errorf("Del wrote into shared members: %v", shared.Obj)
	}
	if len(b.Members()) != 1 || v.Get("nope").Members() != nil || v.Elements() != nil || v.Has("c") || !v.Has("a") {
		t.Errorf("Members/Elements/Has: %v %v %v", b.Members(), v.Get("nope").Members(), v.Elements())
	}
	if got := Size(v); got != len(Append(nil, v)) {
		t.Errorf("Size = %d, Append writes %d", got, len(Append(nil, v)))
	}
}

// TestQuote: the one literal for each string, and the pointer tokens.
func TestQuote(t *testing.T) {
	for s, want := range map[string]string{
		"":                  `""`,
		"plain <&> é\u2028": "\"plain <&> é\u2028\"",
		"\"\\\b\f\n\r\t":    `"\"\\\b\f\n\r\t"`,
		"\x00\x1f\x7f":      "\"\\u0000\\u001f\x7f\"",
	} {
		if got := Quote(s); got != want || QuotedSize(s) != len(want) || string(AppendQuoted(nil, s)) != want {
			t.Errorf("Quote(%q) = %s (size %d), want %s", s, got, QuotedSize(s), want)
		}
	}
	for _, s := range []string{"", "a", "a/b", "~", "~1/~0"} {
		if got := UnescapeToken(EscapeToken(s)); got != s {
			t.Errorf("UnescapeToken(EscapeToken(%q)) = %q", s, got)
		}
	}
	if EscapeToken("~/") != "~0~1" {
		t.Errorf("EscapeToken(~/) = %q", EscapeToken("~/"))
	}
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestRepeatCostsTheText: the pointer of a repeated name is built once,
// along its path. A hostile text that nests long names deeply above a wide
// object whose last name repeats would otherwise cost depth times width
// (gigabytes for a megabyte of text, before the refusal).
func TestRepeatCostsTheText(t *testing.T) {
	const depth, width = 200, 5000
	var b strings.Builder
	name := strings.Repeat("k", 500)
	for range depth {
		b.WriteString(`{"` + name + `":`)
	}
	b.WriteString("{")
	for i := range width {
		fmt.Fprintf(&b, `"m%d":0,`, i)
	}
	b.WriteString(`"m0":1}`)
	b.WriteString(strings.Repeat("}", depth))
	text := []byte(b.String())
	var err error
	n := allocated(func() { _, err = Parse(text, depth+1) })
	var je *Error
	if !errors.As(err, &je) || je.Err != ErrDuplicateKey || !strings.HasSuffix(je.Pointer, "/m0") || strings.Count(je.Pointer, "/") != depth+1 {
		t.Fatalf("Parse = %v", err)
	}
	if n > 64*uint64(len(text)) {
		t.Errorf("refusing a %d-byte text allocated %d bytes", len(text), n)
	}
}

// TestParserForgetsAHugeText: after a huge text, a Parser's next small
// text allocates as little as a fresh Parser's would, and the Parser keeps
// neither the huge text nor room for it.
func TestParserForgetsAHugeText(t *testing.T) {
	huge := []byte("[" + strings.Repeat(`{"a":[1,2],"b":"c"},`, 100_000) + "0]")
	var p Parser
	if _, err := p.Parse(huge, 8); err != nil {
		t.Fatal(err)
	}
	small := []byte(`{"x":[1,{"y":2}]}`)
	n := allocated(func() {
		if _, err := p.Parse(small, 8); err != nil {
			t.Fatal(err)
		}
	})
	if n > 64<<10 {
		t.Errorf("a small text after a huge one allocated %d bytes", n)
	}
	if cap(p.slab)+cap(p.mslab)+cap(p.eslab)+cap(p.mems)+cap(p.elems) > 5*maxKept || p.data != nil || p.text != "" {
		t.Errorf("the Parser keeps room for %d values, %d members, %d elements, stacks of %d and %d, or the text",
			cap(p.slab), cap(p.mslab), cap(p.eslab), cap(p.mems), cap(p.elems))
	}
}
