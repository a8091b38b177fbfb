//go:build !linux && !unix && !windows

package sandbox

import (
	"context"
	"fmt"
	"runtime"
)

// Start starts the server cfg describes. On this system it always fails
// with an error wrapping ErrUnsupported: it cannot start processes the way
// a server needs, confined or not.
func Start(ctx context.Context, cfg Config) (*Process, error) {
	return nil, fmt.Errorf("%w: server %q: servers cannot run on %s", ErrUnsupported, cfg.Name, runtime.GOOS)
}

// Probe reports how this system can confine a server. On this system it
// always fails with an error wrapping ErrUnsupported.
func Probe() (string, error) {
	return "", fmt.Errorf("%w: servers cannot run on %s", ErrUnsupported, runtime.GOOS)
}
