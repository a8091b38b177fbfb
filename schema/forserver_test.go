package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"github.com/mcphost/mcphost/internal/jsontree"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sameAsTwoSteps fails t unless ForServer answers exactly what FromModel
// followed by Check of its result does: the same arguments for the
// server, or an error of the same type with the same text.
func sameAsTwoSteps(t *testing.T, c *Closed, args json.RawMessage) {
	t.Helper()
	want, werr := c.FromModel(args)
	if werr == nil {
		if werr = c.Check(want); werr != nil {
			want = nil
		}
	}
	got, gerr := c.ForServer(args)
	switch {
	case (gerr == nil) != (werr == nil):
		t.Fatalf("schema %s, args %q: ForServer = %q, %v; FromModel+Check = %q, %v", c.Original, args, got, gerr, want, werr)
	case gerr != nil && (gerr.Error() != werr.Error() || errors.Is(gerr, ErrUncheckable) != errors.Is(werr, ErrUncheckable)):
		t.Fatalf("schema %s, args %q: ForServer error %v; FromModel+Check error %v", c.Original, args, gerr, werr)
	case gerr != nil:
		var ga, wa *ArgumentError
		if errors.As(gerr, &ga) != errors.As(werr, &wa) || ga != nil && (ga.Pointer != wa.Pointer || ga.Suggestion != wa.Suggestion) {
			t.Fatalf("schema %s, args %q: ForServer error %#v; FromModel+Check error %#v", c.Original, args, ga, wa)
		}
	case !bytes.Equal(got, want):
		t.Fatalf("schema %s, args %q: ForServer = %q; FromModel = %q", c.Original, args, got, want)
	}
}

// TestForServer compares ForServer with FromModel and Check, which it
// replaces on the call path, over the schemas and arguments the other
// tests use: the fuzz seeds, the corpus's valid and invalid arguments,
// and random schemas with random arguments and the model's version of
// generated valid ones.
func TestForServer(t *testing.T) {
	var closed []*Closed
	for _, s := range fuzzSchemas {
		c, err := Close(json.RawMessage(s))
		if err != nil {
			t.Fatal(err)
		}
		closed = append(closed, c)
	}
	seeds, _ := filepath.Glob("testdata/fuzz/FuzzFromModel/*")
	if len(seeds) == 0 {
		t.Fatal("no FuzzFromModel seeds")
	}
	extra := []string{``, ` `, `null`, ` {"query":"q", "unit":null} `, `[1]`, `{"a":1,"a":2}`, `{"s":"\ud800"}`, `{"n":1e400}`, `{"limit":1e400,"unit":null}`, `{`}
	for _, c := range closed {
		for _, a := range extra {
			sameAsTwoSteps(t, c, json.RawMessage(a))
		}
		for _, f := range seeds {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			// Seeds are `go test fuzz v1` files: the arguments are the
			// []byte line; trying every line as arguments covers it.
			for _, line := range bytes.Split(b, []byte("\n")) {
				if i := bytes.IndexByte(line, '('); i >= 0 && bytes.HasSuffix(line, []byte(")")) {
					var s string
					if err := json.Unmarshal(line[i+1:len(line)-1], &s); err == nil {
						sameAsTwoSteps(t, c, json.RawMessage(s))
					}
				}
			}
		}
	}
	var args map[string]struct {
		Valid   []json.RawMessage `json:"valid"`
		Invalid []struct {
			Args json.RawMessage `json:"args"`
		} `json:"invalid"`
	}
	readJSON(t, "corpus_args.json", &args)
	for _, s := range corpus(t) {
		c, err := Close(s.Schema)
		if err != nil {
			t.Fatal(err)
		}
		sameAsTwoSteps(t, c, json.RawMessage(`{}`))
		for _, a := range args[s.ID].Valid {
			sameAsTwoSteps(t, c, a)
		}
		for _, a := range args[s.ID].Invalid {
			sameAsTwoSteps(t, c, a.Args)
		}
	}
	r := rand.New(rand.NewSource(2))
	dialects := []string{``, `"$schema":"http://json-schema.org/draft-07/schema#",`}
	for range 500 {
		root := randSchema(r, 0)
		if !strings.HasPrefix(root, "{") || root == "{}" {
			continue
		}
		c, err := Close(json.RawMessage("{" + dialects[r.Intn(len(dialects))] + `"$defs":{"d":` + randSchema(r, 2) + `},` + root[1:]))
		if err != nil {
			t.Fatal(err)
		}
		for range 4 {
			sameAsTwoSteps(t, c, json.RawMessage(randValue(r, 0)))
		}
		for _, a := range generate(t, c.Original) {
			sameAsTwoSteps(t, c, a)
			if c.nulls != nil {
				if p, err := parse(a); err == nil && p.Kind == jsontree.Object {
					asModel(p, c.nulls)
					sameAsTwoSteps(t, c, encode(p))
				}
			}
		}
	}
}
