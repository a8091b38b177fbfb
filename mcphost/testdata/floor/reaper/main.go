// Command reaper is PID 1 after testdata/floor's -reaper has forked the
// server: a Go program whose runtime starts beside the server's rather
// than before it, as a helper would that confines and forks the server
// before it execs its Go part. It reaps every child and exits with the
// status of the first (the server) once none is left. It measures; it is
// not part of mcphost.
package main

import (
	"os"
	"syscall"
)

func main() {
	code := -1
	for {
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			if code < 0 {
				code = 0
			}
			os.Exit(code)
		}
		if code < 0 {
			code = ws.ExitStatus()
		}
	}
}
