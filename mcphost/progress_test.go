package mcphost

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestProgress: a call's progress notifications reach OnProgress with the
// tool's name, in order; one with a token mcphost did not give is
// dropped; a long message is cut; and progress does not extend
// call_timeout.
func TestProgress(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	var got []Progress
	opts := e.opts()
	opts.OnProgress = func(p Progress) {
		mu.Lock()
		got = append(got, p)
		mu.Unlock()
	}
	sc := fixture("notes")
	sc.CallTimeout = 2 * time.Second
	s := e.connect(opts, sc)
	long := strings.Repeat("é", 800)
	if out := call(t, s, "mcp__notes__progress", `{"n":3,"ms":20,"message":"`+long+`"}`); out != "done; token true" {
		t.Fatalf("result %q", out)
	}
	mu.Lock()
	if len(got) != 3 {
		t.Fatalf("got %d notifications: %+v", len(got), got)
	}
	for i, p := range got {
		if p.Tool != "mcp__notes__progress" || p.Server != "notes" || p.Progress != float64(i+1) || p.Total != 3 {
			t.Errorf("notification %d: %+v", i, p)
		}
		if len(p.Message) > maxProgressMessage+40 || !strings.Contains(p.Message, "bytes cut]") || strings.Contains(p.Message, "\uFFFD") {
			t.Errorf("notification %d: message of %d bytes not cut cleanly: %q", i, len(p.Message), p.Message[len(p.Message)-30:])
		}
	}
	got = nil
	mu.Unlock()

	// 50 notifications 100ms apart: 5s of steady progress against a
	// 2s call_timeout.
	start := time.Now()
	_, err := s.Call(context.Background(), "mcp__notes__progress", []byte(`{"n":50,"ms":100}`))
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("err %v; want ErrTimeout", err)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("the call took %v: progress extended call_timeout 2s", d)
	}
	mu.Lock()
	if len(got) == 0 {
		t.Error("no progress before the timeout")
	}
	mu.Unlock()
}

// TestProgressConcurrent: notifications of concurrent calls go to their
// own calls.
func TestProgressConcurrent(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	count := map[string]int{}
	opts := e.opts()
	opts.OnProgress = func(p Progress) {
		mu.Lock()
		count[p.Message]++
		mu.Unlock()
	}
	s := e.connect(opts, fixture("notes"))
	var wg sync.WaitGroup
	const calls = 16
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msg := string(rune('a' + i))
			if _, err := s.Call(context.Background(), "mcp__notes__progress", []byte(`{"n":5,"ms":1,"message":"`+msg+`"}`)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	for i := range calls {
		for j := 1; j <= 5; j++ {
			key := string(rune('a'+i)) + " " + string(rune('0'+j))
			if count[key] != 1 {
				t.Errorf("%q seen %d times", key, count[key])
			}
		}
	}
	if len(count) != calls*5 {
		t.Errorf("%d distinct notifications; want %d", len(count), calls*5)
	}
}
