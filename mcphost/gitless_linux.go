package mcphost

import (
	"time"

	"golang.org/x/sys/unix"
)

// birthTime returns when the file at path was made, where the file system
// records it (statx's btime: set by the kernel, not by a process).
func birthTime(path string) (time.Time, bool) {
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BTIME, &st); err != nil || st.Mask&unix.STATX_BTIME == 0 {
		return time.Time{}, false
	}
	return time.Unix(st.Btime.Sec, int64(st.Btime.Nsec)), true
}
