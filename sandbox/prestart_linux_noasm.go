//go:build linux && !amd64

package sandbox

// prestartSupported says this architecture's helper has the prestart
// entry; on this one the Go helper does every step (prestart_linux.go).
const prestartSupported = false

// prestarted is the prestart's result: here never tried.
var prestarted prestartResult

// prestartPath is the server's program in the plan: there is none.
func prestartPath() string { return "" }
