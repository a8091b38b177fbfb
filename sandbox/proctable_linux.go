package sandbox

import (
	"os"
	"strconv"
)

// processTable reads the process table from /proc.
func processTable() ([]procEntry, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var table []procEntry
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		st, err := parseStat(b)
		if err != nil {
			continue
		}
		table = append(table, procEntry{pid: pid, ppid: st.ppid, pgid: st.pgrp, start: st.start, zombie: st.state == 'Z' || st.state == 'X'})
	}
	return table, nil
}
