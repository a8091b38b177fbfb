package mcphost

import (
	"io/fs"
	"syscall"
)

// fileStampOf returns what tells a file's content unchanged without
// reading it (see fileStamp), and false where the system does not say.
func fileStampOf(info fs.FileInfo) (fileStamp, bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return fileStamp{}, false
	}
	return fileStamp{Dev: uint64(st.Dev), Ino: uint64(st.Ino), Size: st.Size, Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano(), Mode: uint32(st.Mode)}, true
}
