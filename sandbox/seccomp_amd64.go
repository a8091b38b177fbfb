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
