package pin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// FuzzCanonical checks, for any input, that Canonical never panics, accepts
// nothing encoding/json would reject, is idempotent, agrees with Digest, and
// does not depend on the order of the top-level keys.
func FuzzCanonical(f *testing.F) {
	f.Add([]byte(searchNotes))
	f.Add([]byte(`{"a":"\ud83d\ude00\u001b","b":[1.0,-0,1e999],"annotations":{"readOnlyHint":false}}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := Canonical(in)
		_, derr := Digest(in)
		if (err == nil) != (derr == nil) {
			t.Fatalf("Canonical error %v, Digest error %v", err, derr)
		}
		if err != nil {
			return
		}
		if !json.Valid(in) {
			t.Fatalf("Canonical accepted %q, which encoding/json rejects", in)
		}
		again, err := Canonical(c)
		if err != nil || !bytes.Equal(again, c) {
			t.Fatalf("not idempotent: %q -> %q -> %q, %v", in, c, again, err)
		}
		// The same members in reverse order must canonicalize the same.
		var members map[string]json.RawMessage
		if err := json.Unmarshal(in, &members); err != nil {
			t.Fatalf("encoding/json cannot read %q: %v", in, err)
		}
		keys := sortedKeys(members)
		slices.Reverse(keys)
		var rev bytes.Buffer
		rev.WriteString("{")
		for i, k := range keys {
			if i > 0 {
				rev.WriteString(",")
			}
			kj, _ := json.Marshal(k)
			rev.Write(kj)
			rev.WriteString(":")
			rev.Write(members[k])
		}
		rev.WriteString("}")
		if rc, err := Canonical(rev.Bytes()); err != nil || !bytes.Equal(rc, c) {
			t.Fatalf("reordering changed the canonical form:\n%q\n%q\n%v", c, rc, err)
		}
	})
}

// FuzzVisible checks that Visible's output holds nothing raw that it
// promises to escape, and that it can be decoded back to its input.
func FuzzVisible(f *testing.F) {
	f.Add("plain")
	f.Add("\x1b[8m\u200b\u202e\U000E0041<U+200B>\\\xff\u0085\u00a0\t\n")
	f.Fuzz(func(t *testing.T, s string) {
		v := Visible(s)
		checkVisible(t, v)
		back, err := unvisible(v)
		if err != nil || back != s {
			t.Fatalf("unvisible(Visible(%+q)) = %+q, %v", s, back, err)
		}
	})
}

// FuzzLoad checks that the state parser never panics, and that whatever it
// accepts is valid and survives a write and a re-read unchanged.
func FuzzLoad(f *testing.F) {
	f.Add([]byte(`{"version":1}`))
	f.Add([]byte(`{"version":2,"x":[]}`))
	f.Add([]byte(`{"version":2,"tables":{"notes@/w/mcphost.toml":{"digest":"b3v1:` + "0000000000000000000000000000000000000000000000000000000000000000" + `","definition":{},"reviewed_at":"2026-01-01T00:00:00Z"}}}`))
	ins, _ := NewEntry(InstructionsDefinition("Use the notes."), time.Unix(1, 0).UTC())
	f.Add(fmt.Appendf(nil, `{"version":4,"instructions":{"notes":{"digest":%q,"definition":%s,"reviewed_at":"1970-01-01T00:00:01Z"}},"prompts":{}}`, ins.Digest, ins.Definition))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := parseState(data)
		if err != nil {
			return
		}
		if err := checkState(st, digestDefinition); err != nil {
			t.Fatalf("parseState accepted an invalid state: %v", err)
		}
		out, err := marshalState(st)
		if err != nil {
			t.Fatal(err)
		}
		st2, err := parseState(out)
		if err != nil {
			t.Fatalf("cannot re-read what was written: %v\n%s", err, out)
		}
		if len(st2.Tools) != len(st.Tools) || len(st2.Servers) != len(st.Servers) || len(st2.Tables) != len(st.Tables) {
			t.Fatalf("round trip lost entries")
		}
		for k, e := range st.Tools {
			e2 := st2.Tools[k]
			if e2.Digest != e.Digest || !e2.ReviewedAt.Equal(e.ReviewedAt) {
				t.Fatalf("round trip changed %q: %+v -> %+v", k, e, e2)
			}
		}
		for k, e := range st.Servers {
			e2 := st2.Servers[k]
			if !slices.Equal(e2.Tools, e.Tools) {
				t.Fatalf("round trip changed server %q: %+v -> %+v", k, e, e2)
			}
		}
	})
}

// FuzzDiff checks that Diff reports changes exactly when the digests differ,
// and that Format's output is always safe for a terminal.
func FuzzDiff(f *testing.F) {
	f.Add([]byte(searchNotes), []byte(strings.Replace(searchNotes, "notes.", `notes.\u200b\u001b[8m`, 1)))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		da, erra := Digest(a)
		db, errb := Digest(b)
		changes, err := Diff(a, b)
		if (err == nil) != (erra == nil && errb == nil) {
			t.Fatalf("Diff error %v, Digest errors %v, %v", err, erra, errb)
		}
		if err != nil {
			return
		}
		if (len(changes) == 0) != (da == db) {
			t.Fatalf("%d changes but digests %s, %s", len(changes), da, db)
		}
		var buf bytes.Buffer
		if err := Format(&buf, changes); err != nil {
			t.Fatal(err)
		}
		checkVisible(t, strings.ReplaceAll(buf.String(), "\n", ""))
	})
}
