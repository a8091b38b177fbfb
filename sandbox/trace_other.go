//go:build !linux

package sandbox

import "time"

var traceEpoch = time.Now()

// monoNow is nanoseconds on the monotonic clock, from an arbitrary origin.
func monoNow() int64 { return int64(time.Since(traceEpoch)) }
