//go:build !linux && !darwin

package mcphost

import "io/fs"

// fileStampOf returns false: this system gives no change time, so every
// file of a package is read each time its tree is digested.
func fileStampOf(fs.FileInfo) (fileStamp, bool) { return fileStamp{}, false }
