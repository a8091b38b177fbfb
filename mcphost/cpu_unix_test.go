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

// opCPU returns the CPU time this process and its reaped descendants have
// used so far: the host, and the servers, helpers and their children once
// they were waited for. Kernel threads' work (a namespace's teardown) is in
// neither. ok is false where the descendants' time is not kept.
func opCPU() (cpu time.Duration, ok bool) {
	var children syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children); err != nil {
		return 0, false
	}
	return hostCPU() + time.Duration(children.Utime.Nano()+children.Stime.Nano()), true
}
