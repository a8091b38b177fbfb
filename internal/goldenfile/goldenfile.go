// Package goldenfile compares what a test built with a JSON file under
// testdata, and reads JSON fixtures. It is for tests only.
package goldenfile

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
)

// Compare marshals got (indented, no HTML escaping) and compares it with
// the file at path, or writes the file when update is set (a test's
// -update flag). A difference fails the test, showing both.
func Compare(t testing.TB, path string, got any, update bool) {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(got); err != nil {
		t.Fatalf("marshal: %v", err)
	}
	b := buf.Bytes()
	if update {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(b, want) {
		t.Errorf("%s differs from what was built:\n got: %s\nwant: %s", path, b, want)
	}
}

// Load reads the JSON file at path into a T, failing the test if it
// cannot.
func Load[T any](t testing.TB, path string) T {
	t.Helper()
	var v T
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}
