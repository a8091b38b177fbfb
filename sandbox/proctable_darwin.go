package sandbox

import "golang.org/x/sys/unix"

// szomb is p_stat of a zombie (SZOMB in <sys/proc.h>).
const szomb = 5

// processTable reads the process table through sysctl kern.proc.all.
func processTable() ([]procEntry, error) {
	kps, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil, err
	}
	table := make([]procEntry, 0, len(kps))
	for i := range kps {
		k := &kps[i]
		table = append(table, procEntry{
			pid:    int(k.Proc.P_pid),
			ppid:   int(k.Eproc.Ppid),
			pgid:   int(k.Eproc.Pgid),
			start:  uint64(k.Proc.P_starttime.Sec)*1e6 + uint64(k.Proc.P_starttime.Usec),
			zombie: k.Proc.P_stat == szomb,
		})
	}
	return table, nil
}
