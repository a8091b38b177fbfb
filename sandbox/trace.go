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
//	mcphost-sandbox: start "one": total 2.88ms: lease 0.19 helper-file 0.08 pipes 0.00 clone-exec 1.00 helper-exec 0.03 helper-plan 0.92 helper-root 0.02 helper-pivot 0.22 helper-join-wait 0.00 helper-confine-exec 0.29 helper-report 0.02 report 0.07 finish 0.03 | prepare 0.36 (at 0.28) idmap 0.16 (at 0.63) cgroup 0.01 (at 0.80) root 1.08 (at 0.81) plan 0.21 (at 1.89)
//	mcphost-sandbox: close "one": total 2.88ms: server-done 2.56 stderr-stdout 0.03 cgroup-remove 0.08 tmp-remove 0.21 | server-exit 1.63 (at 0.01) helper-reap 0.02 (at 1.65) helper-thread 0.02 (at 1.67) report-read 0.74 (at 1.69)
//
// (durations in milliseconds). Phases that run beside others are listed
// after a "|" with their own durations and when they began: on a root
// host, the host's preparation of the spec, which runs while the helper
// is cloned and starts (the helper's helper-spec, or with the prestart
// helper-plan, includes waiting for it; see prestart_linux.go for the
// prestart's phases, helper-exec being the exec until its entry), and, on
// cgroup v2, the host's move of the helper into the server's cgroups. In
// a Close whose server exits at its stdin's EOF, where server-done went,
// from the helper's exit report: the server's exit until the helper saw
// it, the reaping of anything else it left, the end of the thread that
// forked it, and the report's way to the host.
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
	// While aside, mark records the host's phases as spans (side), from
	// sideLast on: the helper runs meanwhile, and the sequential phases
	// go on from last when they rejoin.
	aside    bool
	sideLast int64
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

// markAt ends the current sequential phase at the monotonic time at, or,
// while aside, the current phase beside them.
func (t *startTrace) markAt(phase string, at int64) {
	if t == nil || at == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.aside {
		t.addSide(phase, t.sideLast, at)
		t.sideLast = at
		return
	}
	t.seq = append(t.seq, phase+" "+ms(at-t.last))
	t.last = at
}

// besides makes the host's next phases run beside the helper's, which
// started at the last mark: they are listed after "|" until rejoin.
func (t *startTrace) besides() {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.aside, t.sideLast = true, t.last
}

// rejoin ends besides: the sequential phases go on from where they were.
func (t *startTrace) rejoin() {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.aside = false
}

// span records a phase that ran beside the sequential ones.
func (t *startTrace) span(phase string, from, to int64) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.addSide(phase, from, to)
}

// addSide lists a phase beside the sequential ones, with when it began;
// t.mu is held.
func (t *startTrace) addSide(phase string, from, to int64) {
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
