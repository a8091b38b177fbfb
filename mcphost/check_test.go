package mcphost

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheck: Check fails, with a *CheckError that says why, exactly when
// `mcphost check` must: something unreviewed, a server that does not run,
// reviews that cannot be read; and passes once a person reviewed it all.
func TestCheck(t *testing.T) {
	ctx := context.Background()
	asCheck := func(t *testing.T, err error) *CheckError {
		t.Helper()
		var ce *CheckError
		if !errors.Is(err, ErrNotAsReviewed) || !errors.As(err, &ce) {
			t.Fatalf("Check: want a *CheckError matching ErrNotAsReviewed, got %v", err)
		}
		return ce
	}
	t.Run("reviewed", func(t *testing.T) {
		e := newEnv(t)
		s := e.connect(e.opts(), fixture("notes"))
		ce := asCheck(t, s.Check(ctx))
		if len(ce.Pending) == 0 || len(ce.Failed) != 0 || ce.State != nil {
			t.Fatalf("before the review: %+v", ce)
		}
		if !strings.Contains(ce.Error(), "not as reviewed") {
			t.Errorf("error: %v", ce)
		}
		rs, err := s.Review(ctx, "notes")
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Approve(ctx, rs...); err != nil {
			t.Fatal(err)
		}
		if err := s.Check(ctx); err != nil {
			t.Fatalf("after the review: %v", err)
		}
		s.Close()
		ce = asCheck(t, s.Check(ctx))
		if len(ce.Failed) != 1 || ce.Failed[0].State != ServerClosed {
			t.Errorf("after Close: %+v", ce)
		}
	})
	t.Run("server-failed", func(t *testing.T) {
		e := newEnv(t)
		bad := fixture("gone")
		bad.Command = []string{filepath.Join(e.worktree, "no-such-program")}
		s := e.connect(e.opts(), bad)
		ce := asCheck(t, s.Check(ctx))
		if len(ce.Failed) != 1 || ce.Failed[0].Name != "gone" || ce.Failed[0].State != ServerFailed {
			t.Errorf("failed server: %+v", ce)
		}
		if !strings.Contains(ce.Error(), "server gone is failed") {
			t.Errorf("error: %v", ce)
		}
	})
	t.Run("state-unreadable", func(t *testing.T) {
		e := newEnv(t)
		os.WriteFile(filepath.Join(e.state, "mcp-reviewed.json"), []byte(`{"version":1,"tools":{"notes/echo":`), 0o600)
		s := e.connect(e.opts(), fixture("notes"))
		ce := asCheck(t, s.Check(ctx))
		if ce.State == nil || len(ce.Pending) != 0 || len(ce.Failed) != 0 {
			t.Errorf("unreadable state: %+v", ce)
		}
		if !errors.Is(ce, ce.State) {
			t.Errorf("the error does not wrap the state's: %v", ce)
		}
	})
}
