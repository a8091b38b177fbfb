package mcphost

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// phaseTrace says where one server's start or close went: with
// MCPHOST_START_TRACE=1 in the host's environment (the variable that makes
// package sandbox trace its own Start and Close) each start of a server
// writes one line to the host's stderr, and so does each close, after
// sandbox's line for the same step, for example
//
//	mcphost: start "one": total 17.20ms: config 0.05 sandbox 7.83 initialize 5.21 list 1.68 (ok)
//	mcphost: close "one": total 3.51ms: process 3.44 client 0.07 (closed)
//
// (durations in milliseconds): config is the sandbox's configuration
// (network proxy, grants), sandbox is sandbox.Start (whose own line has its
// phases), initialize is the server's runtime start and the MCP handshake,
// list is every page of tools/list; process is sandbox's Close, client the
// go-sdk session's. Connect and Session.Close write one line each for the
// whole session, after their servers' lines:
//
//	mcphost: session connect: total 12.67ms: setup 0.07 protect 0.08 gitless 0.04 servers 12.11 publish 0.37 (ok)
//	mcphost: session close: total 3.18ms: servers 3.14 records 0.04 (closed)
//
// setup is the paths, the tables' checks, the state directory's reach and
// the review store; protect the protected paths and their record; gitless
// the record of roots in no repository; servers every server's start (and
// the reviews' reading, beside them); publish judging and naming what they
// offer. Close's servers is every server's close, records the gitless
// record's end. BENCHMARKS.md reads them.
type phaseTrace struct {
	out    io.Writer
	what   string
	name   string
	t0     time.Time
	last   time.Time
	phases []string
}

// traceOut is where the lines go; tests replace it.
var traceOut io.Writer = os.Stderr

// newPhaseTrace returns a trace of what ("start", "close") for the server
// name, or of what ("session connect", "session close") with name "", or
// nil when tracing is off; the methods of a nil *phaseTrace do nothing.
func newPhaseTrace(what, name string) *phaseTrace {
	if os.Getenv("MCPHOST_START_TRACE") != "1" {
		return nil
	}
	now := time.Now()
	return &phaseTrace{out: traceOut, what: what, name: name, t0: now, last: now}
}

// mark ends the current phase, naming it.
func (t *phaseTrace) mark(phase string) {
	if t == nil {
		return
	}
	now := time.Now()
	t.phases = append(t.phases, fmt.Sprintf("%s %.2f", phase, float64(now.Sub(t.last).Nanoseconds())/1e6))
	t.last = now
}

// print writes the trace's line; result says how the step ended.
func (t *phaseTrace) print(result string) {
	if t == nil {
		return
	}
	subject := t.what
	if t.name != "" {
		subject = fmt.Sprintf("%s %q", t.what, t.name)
	}
	fmt.Fprintf(t.out, "mcphost: %s: total %.2fms: %s (%s)\n", subject,
		float64(t.last.Sub(t.t0).Nanoseconds())/1e6, strings.Join(t.phases, " "), result)
}
