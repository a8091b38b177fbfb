package sandbox

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
)

// Start and Close can say where their time goes: with MCPHOST_START_TRACE=1
// in the host's environment, each Start writes one line to the host's
// stderr with the duration of each of its phases, the helper's included,
// and each Close one line with its own; for example
//
//	mcphost-sandbox: start "one": total 6.44ms: prepare 0.38 uid 0.03 idmap 0.11 cgroup 0.29 helper-file 0.09 pipes 0.01 clone-exec 1.00 helper-runtime 1.26 helper-spec 0.21 helper-binds 0.59 helper-readonly 0.36 helper-join-wait 0.00 helper-confine-exec 1.93 report 0.16 finish 0.01 | host-cgroup-join 0.00 (at 1.91)
//	mcphost-sandbox: close "one": total 2.98ms: server-done 2.02 helper-exit 0.64 stderr-stdout 0.01 cgroup-remove 0.09 tmp-remove 0.23
//
// (durations in milliseconds). Phases that run beside others are listed
// after a "|" with their own durations and when they began (the host's
// move of the helper into the server's cgroups, where it is not started
// in them, overlaps the helper's start).
// The helper's timestamps are CLOCK_MONOTONIC, which host and helper
// share (no time namespace is made), so its phases sit on the host's
// timeline. See BENCHMARKS.md for what the phases are.
const startTraceEnv = "MCPHOST_START_TRACE"

// traceOn reports whether Start and Close trace themselves; read once.
var traceOn = sync.OnceValue(func() bool { return os.Getenv(startTraceEnv) == "1" })

// traceOut is where the lines go; tests replace it.
var traceOut io.Writer = os.Stderr

// startTrace collects the phases of one Start or Close; nil when tracing
// is off, and every method of a nil *startTrace does nothing.
type startTrace struct {
	what  string // "start" or "close"
	name  string
	t0    int64
	last  int64
	mu    sync.Mutex
	seq   []string // sequential phases, in order
	side  []string // phases that overlap others
	extra []string
}

func newTrace(what, name string) *startTrace {
	if !traceOn() {
		return nil
	}
	now := monoNow()
	return &startTrace{what: what, name: name, t0: now, last: now}
}

func ms(ns int64) string { return fmt.Sprintf("%.2f", float64(ns)/1e6) }

// mark ends the current sequential phase, naming it, now.
func (t *startTrace) mark(phase string) {
	if t == nil {
		return
	}
	t.markAt(phase, monoNow())
}

// markAt ends the current sequential phase at the monotonic time at.
func (t *startTrace) markAt(phase string, at int64) {
	if t == nil || at == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seq = append(t.seq, phase+" "+ms(at-t.last))
	t.last = at
}

// span records a phase that ran beside the sequential ones.
func (t *startTrace) span(phase string, from, to int64) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.side = append(t.side, phase+" "+ms(to-from)+" (at "+ms(from-t.t0)+")")
}

// note adds words to the line.
func (t *startTrace) note(s string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.extra = append(t.extra, s)
}

// print writes the line to stderr.
func (t *startTrace) print() {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	line := fmt.Sprintf("mcphost-sandbox: %s %q: total %sms: %s", t.what, t.name, ms(t.last-t.t0), strings.Join(t.seq, " "))
	if len(t.side) > 0 {
		line += " | " + strings.Join(t.side, " ")
	}
	if len(t.extra) > 0 {
		line += " (" + strings.Join(t.extra, "; ") + ")"
	}
	fmt.Fprintln(traceOut, line)
}
