//go:build linux && !amd64

package sandbox

import "golang.org/x/sys/unix"

// vforkUserNS is written only for amd64 (idmap_linux_amd64.s); elsewhere
// ownerUserNS starts a holder process instead.
func vforkUserNS() (pid, pidfd, errno uintptr) { return 0, 0, uintptr(unix.ENOSYS) }
