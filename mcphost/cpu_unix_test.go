//go:build unix

package mcphost

import (
	"syscall"
	"time"
)

// hostCPU returns the CPU time this process has used so far.
func hostCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
