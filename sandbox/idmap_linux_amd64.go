package sandbox

// vforkUserNS starts a child in a new user namespace that exits at once and
// returns its pid and a pidfd of it (close-on-exec), or the clone's errno.
// The child is left a zombie for the caller to reap with __WALL (it sends
// no exit signal). In idmap_linux_amd64.s.
func vforkUserNS() (pid, pidfd, errno uintptr)
