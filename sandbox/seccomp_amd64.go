//go:build linux

package sandbox

import "golang.org/x/sys/unix"

const (
	// seccompSupported says this architecture has a filter.
	seccompSupported = true
	nativeAuditArch  = unix.AUDIT_ARCH_X86_64
	// foreignSyscallBit marks x32 system calls, which share the x86_64
	// audit architecture but not its numbering.
	foreignSyscallBit = 0x40000000
)

// legacyModeCalls are amd64's path calls that take a file mode and have no
// counterpart on arm64 (which has only the *at forms): the system call and
// the index of its mode argument.
var legacyModeCalls = []modeCall{
	{unix.SYS_CHMOD, 1, chmodBits}, {unix.SYS_CREAT, 1, setIDBits}, {unix.SYS_OPEN, 2, setIDBits}, {unix.SYS_MKNOD, 1, setIDBits},
}

// legacyNotifyCalls are amd64's file watching calls that arm64 lacks.
var legacyNotifyCalls = []uint32{unix.SYS_INOTIFY_INIT}
