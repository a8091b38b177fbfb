//go:build !linux

package mcphost

import "time"

// birthTime says it cannot tell when a file was made: servers run
// unconfined here, and a lock they could have committed vouches for
// nothing anyway.
func birthTime(path string) (time.Time, bool) { return time.Time{}, false }
