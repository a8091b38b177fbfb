package schema

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestRemoteRef (issue 29): a $ref outside the schema, allowed in tool
// schemas since MCP 2026-07-28, no longer makes every call uncheckable.
// The reference is never fetched; the value there is checked as anything,
// the rest of the schema as written; the tool is not strict, says why, and
// Unchecked names the pointer.
func TestRemoteRef(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write([]byte(`{"type":"string"}`))
	}))
	defer srv.Close()
	ref := srv.URL + "/s.json"
	for _, tc := range []struct {
		name, schema string
		ok, bad      []string
		ptr          string
	}{
		{"a property", `{"type":"object","properties":{"a":{"$ref":"` + ref + `"},"b":{"type":"string"}},"required":["b"]}`,
			[]string{`{"a":{"x":[1]},"b":"x"}`, `{"a":5,"b":"x"}`}, []string{`{"b":1}`, `{"a":1}`, `{"a":1,"b":"x","c":1}`}, "/properties/a/$ref"},
		{"siblings apply in 2020-12", `{"type":"object","properties":{"a":{"$ref":"` + ref + `","type":"string"}}}`,
			[]string{`{"a":"s"}`, `{}`}, []string{`{"a":5}`}, "/properties/a/$ref"},
		{"siblings are ignored in draft-07", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"a":{"$ref":"` + ref + `","type":"string"}}}`,
			[]string{`{"a":"s"}`, `{"a":5}`}, []string{`{"b":1}`}, "/properties/a/$ref"},
		{"the root", `{"$ref":"` + ref + `"}`, []string{`{}`, `{"anything":true}`}, nil, "/$ref"},
		{"a relative reference", `{"type":"object","properties":{"a":{"$ref":"other.json#/x"}}}`, []string{`{"a":[]}`}, []string{`{"z":1}`}, "/properties/a/$ref"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mustClose(t, tc.schema)
			if c.CheckProblem != "" {
				t.Fatalf("CheckProblem %q: a remote reference must not make the tool uncheckable", c.CheckProblem)
			}
			if c.Strict || !strings.HasPrefix(c.Problem, tc.ptr+": ") || !strings.Contains(c.Problem, "refers outside the schema") {
				t.Errorf("strict %v, problem %q: want non-strict, saying why at %s", c.Strict, c.Problem, tc.ptr)
			}
			for _, p := range Profiles() {
				if c.Problems[p] == "" {
					t.Errorf("profile %s is strict-ready", p)
				}
				if _, strict := c.For(p); strict {
					t.Errorf("profile %s gets a strict form", p)
				}
			}
			if len(c.Unchecked) != 1 || !strings.HasPrefix(c.Unchecked[0], tc.ptr+": ") || !strings.Contains(c.Unchecked[0], "checked as anything") {
				t.Errorf("Unchecked %q, want the pointer %s", c.Unchecked, tc.ptr)
			}
			for _, args := range tc.ok {
				if err := c.Check(json.RawMessage(args)); err != nil {
					t.Errorf("Check(%s) = %v, want nil", args, err)
				}
			}
			for _, args := range tc.bad {
				var ae *ArgumentError
				if err := c.Check(json.RawMessage(args)); !errors.As(err, &ae) {
					t.Errorf("Check(%s) = %v, want an ArgumentError", args, err)
				}
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the referenced URL was fetched %d times; it must never be", n)
	}
}

// TestOpen: an output schema is checked as written, not closed.
func TestOpen(t *testing.T) {
	c, err := Open(json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}}},"required":["n"]}`))
	if err != nil || c.CheckProblem != "" {
		t.Fatalf("Open: %v %q", err, c.CheckProblem)
	}
	for _, v := range []string{`{"n":1}`, `{"n":1,"extra":{"x":1}}`, `{"n":2,"tags":["a"]}`} {
		if err := c.Check(json.RawMessage(v)); err != nil {
			t.Errorf("Check(%s) = %v, want nil", v, err)
		}
	}
	for v, ptr := range map[string]string{`{"n":"x"}`: "/n", `{}`: "/n", `{"n":1,"tags":[1]}`: "/tags/0"} {
		var ae *ArgumentError
		if err := c.Check(json.RawMessage(v)); !errors.As(err, &ae) || ae.Pointer != ptr {
			t.Errorf("Check(%s) = %v, want an ArgumentError at %q", v, err, ptr)
		}
	}
	if string(c.Schema) != string(c.Original) {
		t.Errorf("Schema %s, want the original", c.Schema)
	}
}
