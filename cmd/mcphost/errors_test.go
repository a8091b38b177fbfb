package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckHintKeepsFlags: the command check suggests finds the same
// config and state as the one the person ran.
func TestCheckHintKeepsFlags(t *testing.T) {
	e := newCLIEnv(t, notesTable)
	if code, _, stderr := e.run("", "approve", "-yes", "mcp__notes__list_notes"); code != 0 {
		t.Fatalf("approve: exit %d: %s", code, stderr)
	}
	os.WriteFile(filepath.Join(e.worktree, "desc.txt"), []byte("changed"), 0o644)
	code, out, _ := e.run("", "check")
	if code != 1 || !strings.Contains(out, "review it with: mcphost approve -config "+e.config+" ") {
		t.Errorf("check: exit %d; the hint lacks the config:\n%s", code, out)
	}
	for _, want := range []string{" -worktree " + e.worktree + " ", " -state " + e.state + " "} {
		if !strings.Contains(out, want) {
			t.Errorf("check: the hint lacks %s:\n%s", want, out)
		}
	}
}

// TestFlagsAfterArguments: a flag after an argument is a flag, never a
// tool name; after "--" everything is an argument.
func TestFlagsAfterArguments(t *testing.T) {
	e := newCLIEnv(t, notesTable)
	code, out, stderr := e.run("", "approve", "mcp__notes__list_notes", "-yes")
	if code != 0 || !strings.Contains(out, "recorded: mcp__notes__list_notes") || strings.Contains(stderr, `"-yes"`) {
		t.Errorf("approve TOOL -yes: exit %d\n%s%s", code, out, stderr)
	}
	code, _, stderr = e.run("", "list", "extra", "-json")
	if code != 2 || !strings.Contains(stderr, `unexpected argument "extra"`) {
		t.Errorf("list extra -json: exit %d, %s", code, stderr)
	}
	code, _, stderr = e.run("", "call", "mcp__notes__echo", "-nosuchflag")
	if code != 2 || !strings.Contains(stderr, "nosuchflag") {
		t.Errorf("call TOOL -nosuchflag: exit %d, %s", code, stderr)
	}
	// After --, "-1" is the JSON arguments (valid JSON, not an object).
	code, _, stderr = e.run("", "call", "--", "mcp__notes__echo", "-1")
	if code == 2 || strings.Contains(stderr, "flag provided but not defined") {
		t.Errorf("call -- TOOL -1: exit %d, %s", code, stderr)
	}
}

// TestCallUnknownSuggests: a mistyped tool gets the closest names and a
// pointer to list with the person's flags.
func TestCallUnknownSuggests(t *testing.T) {
	e := newCLIEnv(t, notesTable)
	for _, typed := range []string{"mcp__notes__list_note", "list_notes"} {
		code, _, stderr := e.run("", "call", typed)
		if code != 1 || !strings.Contains(stderr, "did you mean mcp__notes__list_notes") ||
			!strings.Contains(stderr, "'mcphost list -config "+e.config) {
			t.Errorf("call %s: exit %d\n%s", typed, code, stderr)
		}
	}
	code, _, stderr := e.run("", "call", "zzzzzzzzzzzz")
	if code != 1 || strings.Contains(stderr, "did you mean") || !strings.Contains(stderr, "mcphost list") {
		t.Errorf("call of nothing close: exit %d\n%s", code, stderr)
	}
}

// TestNoticeLineBreaks: a notice of several lines (a failed server's
// stderr) prints them as lines, indented, never as a literal \n, and a
// control character in the server's text stays escaped.
func TestNoticeLineBreaks(t *testing.T) {
	e := newCLIEnv(t, "[mcp.dead]\ncommand = [\"FIXTURE\", \"-exit\", \"1\"]\n")
	code, out, _ := e.run("", "list")
	if code != 0 {
		t.Fatalf("list: exit %d\n%s", code, out)
	}
	if strings.Contains(out, `\n`) {
		t.Errorf("a notice prints a literal \\n:\n%s", out)
	}
	if !strings.Contains(out, "\n    stderr: fixture: fatal") {
		t.Errorf("the failed server's stderr is not on lines of its own:\n%s", out)
	}
	if got := visibleLines("a\nb\x1b[8m\nc", "  "); got != "a\n  b\\x1b[8m\n  c" {
		t.Errorf("visibleLines = %q", got)
	}
	var stdout, stderr bytes.Buffer
	_ = run(context.Background(), []string{"check", "-config", filepath.Join(e.worktree, "agent.toml"), "-worktree", e.worktree, "-state", e.state}, nil, &stdout, &stderr)
	if strings.Contains(stdout.String(), `\n`) {
		t.Errorf("check prints a literal \\n:\n%s", stdout.String())
	}
}
