package mcphost

import (
	"time"

	"golang.org/x/sys/windows"
)

// hostCPU returns the CPU time this process has used so far.
func hostCPU() time.Duration {
	var created, exited, kernel, user windows.Filetime
	if err := windows.GetProcessTimes(windows.CurrentProcess(), &created, &exited, &kernel, &user); err != nil {
		return 0
	}
	// A Filetime counts 100-nanosecond intervals.
	ticks := func(t windows.Filetime) int64 { return int64(t.HighDateTime)<<32 | int64(t.LowDateTime) }
	return time.Duration((ticks(kernel) + ticks(user)) * 100)
}

// opCPU reports nothing: Windows keeps no total for a process's children.
func opCPU() (time.Duration, bool) { return 0, false }
