package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeQuotesCheck (issue 31): the lines the README quotes of check
// are what check prints, in state and lock modes.
func TestReadmeQuotesCheck(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(string(b)), " ")
	var quoted []string
	for _, m := range regexp.MustCompile("`(ok: [^`]+)`").FindAllStringSubmatch(text, -1) {
		quoted = append(quoted, m[1])
	}
	if len(quoted) < 2 {
		t.Fatalf("the README quotes %d ok lines of check: %q", len(quoted), quoted)
	}
	lastLine := func(out string) string {
		lines := strings.Split(strings.TrimSpace(out), "\n")
		return lines[len(lines)-1]
	}
	e := newCLIEnv(t, notesTable)
	if code, out, stderr := e.run("", "approve", "-yes", "notes"); code != 0 {
		t.Fatalf("approve: exit %d\n%s%s", code, out, stderr)
	}
	code, out, _ := e.run("", "check")
	if code != 0 || !strings.Contains(strings.Join(quoted, "\n"), lastLine(out)) {
		t.Errorf("check prints %q (exit %d); the README quotes %q", lastLine(out), code, quoted)
	}

	lock := filepath.Join(t.TempDir(), "team.lock")
	if code, out, stderr := e.run("", "approve", "-yes", "-lock", lock, "notes"); code != 0 {
		t.Fatalf("approve -lock: exit %d\n%s%s", code, out, stderr)
	}
	code, out, _ = e.run("", "check", "-lock", lock)
	found := false
	for _, q := range quoted {
		found = found || strings.ReplaceAll(q, " F ", " "+lock+" ") == lastLine(out)
	}
	if code != 0 || !found {
		t.Errorf("check -lock prints %q (exit %d); the README quotes %q", lastLine(out), code, quoted)
	}
}
