//go:build linux

package sandbox

import "golang.org/x/sys/unix"

const (
	// seccompSupported says this architecture has a filter.
	seccompSupported = true
	nativeAuditArch  = unix.AUDIT_ARCH_AARCH64
	// foreignSyscallBit is zero: arm64 has no second numbering that shares
	// its audit architecture (32-bit tasks have AUDIT_ARCH_ARM).
	foreignSyscallBit = 0
)

// legacyModeCalls is empty: arm64 has only the *at forms.
var legacyModeCalls []modeCall

// legacyNotifyCalls is empty: arm64 has only inotify_init1.
var legacyNotifyCalls []uint32
