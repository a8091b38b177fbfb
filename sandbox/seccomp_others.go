//go:build linux && !amd64 && !arm64

package sandbox

// On other architectures no filter is built (its system call numbers and
// foreign ABIs have not been reviewed), so Start refuses to confine.
const (
	seccompSupported  = false
	nativeAuditArch   = 0
	foreignSyscallBit = 0
)

var legacyModeCalls []modeCall
