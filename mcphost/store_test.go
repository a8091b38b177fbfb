package mcphost

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mcphost/mcphost/pin"
)

// TestStateStoreCoverage: what a person's review in the state file says of
// the rest of the server. A first review of a server that has no entry yet
// covers the tools it reviewed and those pinned already, not every tool
// the server offers now; and a prompt new to a reviewed server is not
// trusted on first sight, whether or not its instructions were recorded.
func TestStateStoreCoverage(t *testing.T) {
	ctx := context.Background()
	def := func(name string) json.RawMessage { return json.RawMessage(`{"name":"` + name + `"}`) }
	sub := func(k kind, name string) subject {
		d := def(name)
		if k == kindInstructions {
			d = pin.InstructionsDefinition("")
		}
		return subject{kind: k, server: "srv", name: name, def: d, digest: mustDigest(d)}
	}
	tests := []struct {
		name      string
		before    []subject // recorded as first sights, with no server entry
		review    []subject // a person's review
		offered   []string  // the server's tools at the review
		k         kind
		subject   string
		wantCover bool
	}{
		{"reviewed tool", nil, []subject{sub(kindTool, "a")}, []string{"a", "b"}, kindTool, "a", true},
		{"tool offered, not reviewed", nil, []subject{sub(kindTool, "a")}, []string{"a", "b"}, kindTool, "b", false},
		{"tool offered, not reviewed, after instructions alone", nil, []subject{sub(kindInstructions, "")}, []string{"a", "b"}, kindTool, "b", false},
		{"tool pinned before", []subject{sub(kindTool, "b")}, []subject{sub(kindTool, "a")}, []string{"a", "b"}, kindTool, "b", true},
		{"new prompt after a tool's review", nil, []subject{sub(kindTool, "a")}, []string{"a"}, kindPrompt, "p", false},
		{"new prompt after the instructions' review", nil, []subject{sub(kindInstructions, "")}, []string{"a"}, kindPrompt, "p", false},
		{"reviewed prompt", nil, []subject{sub(kindPrompt, "p")}, []string{"a"}, kindPrompt, "p", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &stateStore{st: &pin.Store{Dir: t.TempDir()}}
			if len(tc.before) > 0 {
				// As when a first sight was recorded but the server's
				// entry was not (another process's record conflicted).
				if _, err := s.record(ctx, tc.before, false, nil); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.record(ctx, tc.review, false, map[string][]string{"srv": tc.offered}); err != nil {
				t.Fatal(err)
			}
			v, err := s.load(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if p := v.prior(tc.k, "srv", tc.subject); p.covered != tc.wantCover {
				t.Errorf("%s %s: covered = %v, want %v", tc.k, tc.subject, p.covered, tc.wantCover)
			}
		})
	}
}

// TestUnidentifiedProgramDrifts: with a lock that records a server, a
// program that cannot be identified now (unreadable, say) is not taken as
// the one recorded: it drifts, so its allowed tools ask (as for a change).
func TestUnidentifiedProgramDrifts(t *testing.T) {
	l := &pin.Lock{Servers: map[string]pin.LockServer{"a": {Program: []pin.ProgramFile{{Role: pin.RoleProgram, Path: "/usr/bin/a"}}}}}
	srv := &server{cfg: ServerConfig{Name: "a"}}
	srv.setDrift(l)
	if len(srv.drift()) == 0 {
		t.Error("an unidentified program counts as the one the lock recorded")
	}
	d, _, _ := decideTool(verdict{pin: PinSame}, toolRules{policy: Allow, programChanged: len(srv.drift()) > 0})
	if d != Approval {
		t.Errorf("an allowed tool of an unidentified program: %v, want approval", d)
	}
	other := &server{cfg: ServerConfig{Name: "b"}}
	other.setDrift(l)
	if len(other.drift()) != 0 {
		t.Errorf("a server the lock does not record drifts: %q", other.drift())
	}
}
