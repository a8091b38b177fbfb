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
// go-sdk session's. BENCHMARKS.md reads them.
type phaseTrace struct {
	out    io.Writer
	what   string
	name   string
	t0     time.Time
	last   time.Time
	phases []string
}

// newPhaseTrace returns a trace of what ("start", "close") for the server
// name, or nil when tracing is off; the methods of a nil *phaseTrace do
// nothing.
func newPhaseTrace(what, name string) *phaseTrace {
	if os.Getenv("MCPHOST_START_TRACE") != "1" {
		return nil
	}
	now := time.Now()
	return &phaseTrace{out: os.Stderr, what: what, name: name, t0: now, last: now}
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
	fmt.Fprintf(t.out, "mcphost: %s %q: total %.2fms: %s (%s)\n", t.what, t.name,
		float64(t.last.Sub(t.t0).Nanoseconds())/1e6, strings.Join(t.phases, " "), result)
}
