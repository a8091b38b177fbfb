//go:build !linux

package sandbox

import (
	"context"
	"fmt"
	"runtime"
)

// Start starts the server cfg describes. On this system it always fails
// with an error wrapping ErrUnsupported: confinement, and the lifetime
// guarantees that even Config.Off keeps, are built on Linux namespaces.
func Start(ctx context.Context, cfg Config) (*Process, error) {
	return nil, fmt.Errorf("%w: server %q: servers run only on Linux, not %s", ErrUnsupported, cfg.Name, runtime.GOOS)
}

// Probe reports how this kernel can confine a server. On this system it
// always fails with an error wrapping ErrUnsupported.
func Probe() (string, error) {
	return "", fmt.Errorf("%w: servers run only on Linux, not %s", ErrUnsupported, runtime.GOOS)
}
