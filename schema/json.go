package schema

import (
	"bytes"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/mcphost/mcphost/internal/jsontree"
)

// This file holds what the package adds to the module's one JSON layer
// (internal/jsontree), whose trees keep every literal as it was written, so
// that what mcphost forwards (the strict form of a schema, the arguments
// for a server) repeats the sender's bytes instead of Go's re-encoding of
// them.

func nullValue() *jsontree.Value       { return &jsontree.Value{Kind: jsontree.Null} }
func boolValue(b bool) *jsontree.Value { return &jsontree.Value{Kind: jsontree.Bool, Bool: b} }

// strValue returns a new string value.
func strValue(s string) *jsontree.Value {
	return &jsontree.Value{Kind: jsontree.String, Str: s, Raw: quoted(s)}
}

// numValue returns a new number value; lit must be a valid JSON number.
func numValue(lit string) *jsontree.Value { return &jsontree.Value{Kind: jsontree.Number, Raw: lit} }

// maxNesting is how deeply arrays and objects may nest: as deep as
// encoding/json's scanner allows, so that the validator, which reads the
// same text with encoding/json, never refuses what this package took.
const maxNesting = 10000

// parse parses one JSON text with the module's one parser, which refuses
// what different JSON parsers would read differently (a repeated name, a
// lone surrogate escape, text that is not UTF-8).
func parse(data []byte) (*jsontree.Value, error) { return jsontree.Parse(data, maxNesting) }

// softRefusal returns err if it refuses a text that is JSON for a repeated
// name or a lone surrogate escape (what makes a schema uncheckable and
// arguments wrong, rather than not JSON at all), and nil otherwise.
func softRefusal(err error) *jsontree.Error {
	var je *jsontree.Error
	if errors.As(err, &je) && (je.Err == jsontree.ErrDuplicateKey || je.Err == jsontree.ErrLoneSurrogate) {
		return je
	}
	return nil
}

// rootKind returns the kind of the value a JSON text holds, from its first
// byte past white space; text must be valid JSON.
func rootKind(text []byte) jsontree.Kind {
	switch t := bytes.TrimLeft(text, " \t\r\n"); t[0] {
	case '{':
		return jsontree.Object
	case '[':
		return jsontree.Array
	case '"':
		return jsontree.String
	case 't', 'f':
		return jsontree.Bool
	case 'n':
		return jsontree.Null
	default:
		return jsontree.Number
	}
}

// parsers are the Parsers of trees that live only while one call of
// Close, Check, FromModel or ForServer runs.
var parsers = sync.Pool{New: func() any { return new(jsontree.Parser) }}

// encode returns the compact JSON text of v. It measures the text first:
// Closed keeps three encodings of every tool's schema for the session's
// life, and a buffer grown by doubling would keep up to half of its room
// unused.
func encode(v *jsontree.Value) []byte { return jsontree.Append(make([]byte, 0, jsontree.Size(v)), v) }

// quoted returns s as a JSON string literal, as jsontree.Quote writes it.
// The names and values this package itself adds to schemas come out
// without allocating.
func quoted(s string) string {
	switch s {
	case "type":
		return `"type"`
	case "null":
		return `"null"`
	case "object":
		return `"object"`
	case "properties":
		return `"properties"`
	case "required":
		return `"required"`
	case "additionalProperties":
		return `"additionalProperties"`
	case "anyOf":
		return `"anyOf"`
	case "enum":
		return `"enum"`
	case "const":
		return `"const"`
	case "items":
		return `"items"`
	case "$schema":
		return `"$schema"`
	case uriDraft07:
		return `"` + uriDraft07 + `"`
	case uriDraft2020:
		return `"` + uriDraft2020 + `"`
	}
	return jsontree.Quote(s)
}

// showPointer writes a JSON pointer for a person or a model to read. The
// root, whose pointer is empty, is written "(root)"; a pointer holding
// quotes, backslashes or characters that do not print (a hostile server's
// property names can hold anything) is written quoted, with those escaped.
func showPointer(p string) string {
	if p == "" {
		return "(root)"
	}
	for _, r := range p {
		if r == '"' || r == '\\' || !unicode.IsPrint(r) {
			return strconv.Quote(p)
		}
	}
	return p
}

// quote writes a name or a literal for a message, escaped like showPointer.
func quote(s string) string { return strconv.Quote(s) }

// number returns the exact value of a number literal. A literal longer
// than maxNumber bytes or with an exponent beyond ±maxExponent is not
// given one: exact arithmetic on it costs time a hostile schema could
// multiply (1e999999 takes math/big tens of milliseconds), and no tool
// means such a number.
func number(v *jsontree.Value) (*big.Rat, bool) {
	if v.Kind != jsontree.Number || len(v.Raw) > maxNumber {
		return nil, false
	}
	if i := strings.IndexAny(v.Raw, "eE"); i >= 0 {
		e, err := strconv.Atoi(strings.TrimPrefix(v.Raw[i+1:], "+"))
		if err != nil || e > maxExponent || e < -maxExponent {
			return nil, false
		}
	}
	r, ok := new(big.Rat).SetString(v.Raw)
	return r, ok
}

// Limits on the numbers this package computes with exactly.
const (
	maxNumber   = 400
	maxExponent = 400
)

// isInteger reports whether a number literal has an integral value (1.0
// and 1e2 are integers, as JSON Schema counts them).
func isInteger(v *jsontree.Value) bool {
	r, ok := number(v)
	return ok && r.IsInt()
}

// equal reports whether two JSON values are equal as JSON Schema compares
// them: numbers by value, objects regardless of member order.
func equal(a, b *jsontree.Value) bool {
	if a.Kind != b.Kind {
		return false
	}
	switch a.Kind {
	case jsontree.Null:
		return true
	case jsontree.Bool:
		return a.Bool == b.Bool
	case jsontree.Number:
		x, ok1 := number(a)
		y, ok2 := number(b)
		if !ok1 || !ok2 {
			return a.Raw == b.Raw
		}
		return x.Cmp(y) == 0
	case jsontree.String:
		return a.Str == b.Str
	case jsontree.Array:
		if len(a.Arr) != len(b.Arr) {
			return false
		}
		for i := range a.Arr {
			if !equal(a.Arr[i], b.Arr[i]) {
				return false
			}
		}
		return true
	default:
		if len(a.Obj) != len(b.Obj) {
			return false
		}
		for _, m := range a.Obj {
			o := b.Get(m.Name)
			if o == nil || !equal(m.Val, o) {
				return false
			}
		}
		return true
	}
}

// short writes a value for a message, cut to a readable length.
func short(v *jsontree.Value) string {
	const max = 60
	s := string(encode(v))
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	var sb strings.Builder
	for _, r := range s {
		if unicode.IsPrint(r) {
			sb.WriteRune(r)
		} else {
			fmt.Fprintf(&sb, "\\u%04x", r)
		}
	}
	return sb.String()
}

// trimmedEmpty reports whether args mean "no arguments": nothing, only
// white space, or null.
func trimmedEmpty(args []byte) bool {
	t := bytes.TrimSpace(args)
	return len(t) == 0 || string(t) == "null"
}
