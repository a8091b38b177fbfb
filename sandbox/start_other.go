//go:build !linux && (unix || windows)

package sandbox

import (
	"context"
	"fmt"
	"runtime"
)

// Start starts the server cfg describes. On this system nothing can
// confine it: without cfg.Off, Start fails with an error wrapping
// ErrUnsupported that names the opt-out. With cfg.Off the server runs
// unconfined with the scrubbed environment and the private TMPDIR, in a
// process tree of its own that Close (and the server's exit) ends: a
// session and process group on Unix systems, a job object on Windows (see
// DESIGN.md for what each cannot guarantee). An invalid cfg gives an error
// wrapping ErrInvalidConfig.
//
// ctx bounds only the start. Start may be called from many goroutines at
// once.
func Start(ctx context.Context, cfg Config) (*Process, error) {
	if !cfg.Off {
		return nil, unavailable(cfg.Name, runtime.GOOS)
	}
	return startOff(ctx, cfg)
}

// Probe reports how this system can confine a server. Here it always fails
// with an error wrapping ErrUnsupported: only Config.Off runs servers.
func Probe() (string, error) {
	return "", fmt.Errorf("%w: confinement is built only for Linux, and this is %s; servers run here only with sandbox = \"off\"", ErrUnsupported, runtime.GOOS)
}
