package schema

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"testing"
)

// TestClosedOutlivesItsTree: Close builds its tree in a pooled Parser's
// memory, which the next Close builds over; nothing a Closed keeps may
// point into it. Every schema is closed, then all the others are, and
// then it must still read and answer as a fresh Close of it does.
func TestClosedOutlivesItsTree(t *testing.T) {
	var all []namedSchema
	all = append(all, corpus(t)...)
	all = append(all, referenceServers(t)...)
	kept := make([]*Closed, len(all))
	for i, s := range all {
		c, err := Close(s.Schema)
		if err != nil {
			t.Fatalf("%s: %v", s.ID, err)
		}
		kept[i] = c
	}
	// A first Check prepares a validator and its own tree; then more
	// Closes run over the pool.
	for _, c := range kept {
		c.Check(json.RawMessage(`{"x":1}`))
	}
	for _, s := range all {
		closeFresh(t, s.Schema)
	}
	for i, s := range all {
		old, fresh := kept[i], closeFresh(t, s.Schema)
		same := bytes.Equal(old.closed, fresh.closed) && bytes.Equal(old.check, fresh.check) &&
			bytes.Equal(old.Schema, fresh.Schema) && old.Problem == fresh.Problem && old.CheckProblem == fresh.CheckProblem &&
			maps.Equal(old.Problems, fresh.Problems) && slices.Equal(old.Fields, fresh.Fields) &&
			maps.EqualFunc(old.strict, fresh.strict, func(a, b json.RawMessage) bool { return bytes.Equal(a, b) })
		if !same {
			t.Fatalf("%s: a Closed changed after later Closes", s.ID)
		}
		for _, args := range generate(t, s.Schema) {
			a, errA := old.FromModel(args)
			b, errB := fresh.FromModel(args)
			if !bytes.Equal(a, b) || (errA == nil) != (errB == nil) {
				t.Fatalf("%s: FromModel(%s) = %s, %v; fresh: %s, %v", s.ID, args, a, errA, b, errB)
			}
			if errA, errB = old.Check(args), fresh.Check(args); (errA == nil) != (errB == nil) || (errA != nil && errA.Error() != errB.Error()) {
				t.Fatalf("%s: Check(%s) = %v; fresh: %v", s.ID, args, errA, errB)
			}
		}
	}
}

func closeFresh(t *testing.T, s json.RawMessage) *Closed {
	t.Helper()
	c, err := Close(s)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
