package schema

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ from what Close returns (review the diff by hand)")

// A result is what a golden file records of one Close.
type result struct {
	ID           string                     `json:"id"`
	Strict       bool                       `json:"strict"`
	Problems     map[string]string          `json:"problems"`
	Schema       json.RawMessage            `json:"schema"`
	StrictForms  map[string]json.RawMessage `json:"strict_forms"` // per profile; a profile is absent where meaning could not be kept
	Fields       []string                   `json:"fields"`
	Unchecked    []string                   `json:"unchecked,omitempty"`
	CheckProblem string                     `json:"check_problem,omitempty"`
}

func resultOf(id string, c *Closed) result {
	r := result{
		ID:           id,
		Strict:       c.Strict,
		Problems:     map[string]string{},
		Schema:       c.Schema,
		StrictForms:  map[string]json.RawMessage{},
		Fields:       c.Fields,
		Unchecked:    c.Unchecked,
		CheckProblem: c.CheckProblem,
	}
	for p, f := range c.strict {
		r.StrictForms[string(p)] = f
	}
	for p, s := range c.Problems {
		r.Problems[string(p)] = s
	}
	return r
}

// A namedSchema is one input schema of a fixture.
type namedSchema struct {
	ID     string
	Schema json.RawMessage
}

// corpus reads testdata/schemas.json, a copy of the shared corpus of hard
// real-world schemas. An entry holds one schema or (under "schemas")
// several; the latter are named id#0, id#1, ...
func corpus(t testing.TB) []namedSchema {
	t.Helper()
	var entries []struct {
		ID      string            `json:"id"`
		Schema  json.RawMessage   `json:"schema"`
		Schemas []json.RawMessage `json:"schemas"`
	}
	readJSON(t, "schemas.json", &entries)
	var out []namedSchema
	for _, e := range entries {
		if e.Schema != nil {
			out = append(out, namedSchema{e.ID, e.Schema})
		}
		for i, s := range e.Schemas {
			out = append(out, namedSchema{fmt.Sprintf("%s#%d", e.ID, i), s})
		}
	}
	if len(out) == 0 {
		t.Fatal("the corpus is empty")
	}
	return out
}

func readJSON(t testing.TB, name string, v any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// compareGolden closes every schema and compares with testdata/golden, or
// rewrites it under -update.
func compareGolden(t *testing.T, golden string, schemas []namedSchema) []*Closed {
	t.Helper()
	var got []result
	var closed []*Closed
	for _, s := range schemas {
		c, err := Close(s.Schema)
		if err != nil {
			t.Fatalf("%s: Close: %v", s.ID, err)
		}
		closed = append(closed, c)
		got = append(got, resultOf(s.ID, c))
	}
	text, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	text = append(text, '\n')
	path := filepath.Join("testdata", golden)
	if *update {
		if err := os.WriteFile(path, text, 0o644); err != nil {
			t.Fatal(err)
		}
		return closed
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run %s -update to write it)", err, t.Name())
	}
	if bytes.Equal(want, text) {
		return closed
	}
	var wantResults []result
	if err := json.Unmarshal(want, &wantResults); err != nil {
		t.Fatalf("%s: %v", golden, err)
	}
	byID := map[string]result{}
	for _, r := range wantResults {
		byID[r.ID] = r
	}
	for _, g := range got {
		w, ok := byID[g.ID]
		if !ok {
			t.Errorf("%s: not in %s", g.ID, golden)
			continue
		}
		gj, _ := json.Marshal(g)
		wj, _ := json.Marshal(w)
		if !bytes.Equal(gj, wj) {
			t.Errorf("%s:\n got %s\nwant %s", g.ID, gj, wj)
		}
	}
	if len(wantResults) != len(got) {
		t.Errorf("%s has %d entries, the fixture %d", golden, len(wantResults), len(got))
	}
	return closed
}
