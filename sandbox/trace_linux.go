package sandbox

import "golang.org/x/sys/unix"

// monoNow is CLOCK_MONOTONIC in nanoseconds.
func monoNow() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// helperTrace holds the helper's own timestamps (CLOCK_MONOTONIC), sent
// to the host in the Started report when the spec asks for them
// (spec.Trace): its init, the spec read, the new root built or, when the
// host built it (spec.Root), attached (helper-root), the root entered
// (/proc mounted and masked, pivot_root; without a new root, the host's
// tree made read-only but for the writable roots, pins and protected
// paths), the cgroup join confirmed, the server started.
var helperTrace []int64

func helperMark() { helperTrace = append(helperTrace, monoNow()) }

// helperPhases are the names of the intervals that end at helperTrace's
// timestamps, the first measured from the host's exec of the helper.
var helperPhases = []string{"helper-runtime", "helper-spec", "helper-root", "helper-pivot", "helper-join-wait", "helper-confine-exec"}
