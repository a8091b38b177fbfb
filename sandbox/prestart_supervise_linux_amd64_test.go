package sandbox

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestSupervisorWords: the entry's supervisor says how the server ended,
// and exits with, what the Go helper's supervise would, for every kind of
// wait status: exits, deaths by each signal with and without a core, and
// a status that is neither.
func TestSupervisorWords(t *testing.T) {
	var statuses []unix.WaitStatus
	for code := 0; code < 256; code++ {
		statuses = append(statuses, unix.WaitStatus(code<<8))
	}
	for sig := 1; sig < 65; sig++ {
		statuses = append(statuses, unix.WaitStatus(sig), unix.WaitStatus(sig|0x80))
	}
	statuses = append(statuses, 0x137f, 0xffff, 0x7f)
	for _, ws := range statuses {
		psReportLen = 0
		psDescribeWait(ws)
		got := string(psReport[:psReportLen])
		if want := describeWait(ws); got != want {
			t.Errorf("status %#x: the entry says %q, supervise %q", uint32(ws), got, want)
		}
		if got, want := psExitCode(ws), exitCode(ws); got != want {
			t.Errorf("status %#x: the entry exits %d, supervise %d", uint32(ws), got, want)
		}
	}
	psReportLen = 0
}

// TestSupervisorReport: what the supervisor writes parses as the report
// supervise sends.
func TestSupervisorReport(t *testing.T) {
	for _, tt := range []struct {
		ws    unix.WaitStatus
		alone bool
		marks []int64
	}{
		{0, true, nil},
		{unix.WaitStatus(3 << 8), false, []int64{1, 2, 3}},
		{unix.WaitStatus(unix.SIGKILL), true, []int64{9223372036854775807, 0, 12}},
	} {
		psReportLen = 0
		psWrite(`{"exit":"`)
		psDescribeWait(tt.ws)
		psWrite(`"`)
		if tt.alone {
			psWrite(`,"alone":true`)
		}
		if tt.marks != nil {
			psWriteMarks(tt.marks)
		}
		psWrite("}\n")
		line := psReport[:psReportLen]
		r, err := parseReport(line[:len(line)-1])
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		want := report{Exit: describeWait(tt.ws), Alone: tt.alone}
		if tt.marks != nil {
			want.Trace = joinMarks(tt.marks)
		}
		if r != want {
			t.Errorf("%q parsed as %+v, want %+v", line, r, want)
		}
	}
	psReportLen = 0
}
