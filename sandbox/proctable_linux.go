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
		st, err := readStat(pid)
		if err != nil {
			continue // gone meanwhile
		}
		table = append(table, procEntry{pid: pid, ppid: st.ppid, pgid: st.pgrp, start: st.start, zombie: st.state == 'Z' || st.state == 'X'})
	}
	return table, nil
}

// readStat reads /proc/PID/stat (parseStat).
func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	return parseStat(b)
}
