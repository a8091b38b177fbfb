package sandbox

// procEntry is one row of the system's process table.
type procEntry struct {
	pid, ppid, pgid int
	// start is when the process started, in the system's own unit: with
	// pid it names one process, even after its pid is reused.
	start uint64
	// zombie is a process that has exited and waits for its parent to
	// reap it: it can run nothing more and ignores signals.
	zombie bool
}

// groupTree returns the live processes of table that belong to the
// process tree of the server that leads process group pgid: every member
// of the group, every process of known (pid to start) that is still the
// same process, and, transitively, every child of a process found, which
// catches a child that called setsid or setpgid to leave the group while
// its parent lives. A process that left the group, is not known, and whose
// parent has exited (a daemon that double-forked) has been reparented away
// and is not found: that is the limit of what a process table can tell.
// The process self (the host) and pids below 2 are never returned.
func groupTree(table []procEntry, pgid int, known map[int]uint64, self int) []procEntry {
	children := make(map[int][]int)
	in := make(map[int]bool)
	var queue []int
	for _, e := range table {
		children[e.ppid] = append(children[e.ppid], e.pid)
	}
	for _, e := range table {
		start, isKnown := known[e.pid]
		if (e.pgid == pgid || isKnown && start == e.start) && !in[e.pid] {
			in[e.pid] = true
			queue = append(queue, e.pid)
		}
	}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			if !in[c] {
				in[c] = true
				queue = append(queue, c)
			}
		}
	}
	var out []procEntry
	for _, e := range table {
		if in[e.pid] && !e.zombie && e.pid > 1 && e.pid != self {
			out = append(out, e)
		}
	}
	return out
}
