package sandbox

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Securebits (linux/securebits.h), not in x/sys.
const (
	secbitNoroot                  = 1 << 0
	secbitNorootLocked            = 1 << 1
	secbitKeepCapsLocked          = 1 << 5
	secbitNoCapAmbientRaise       = 1 << 6
	secbitNoCapAmbientRaiseLocked = 1 << 7
)

// dropCapabilities removes every capability from the calling thread and
// from whatever it execs, for root too: it locks the securebits that would
// give root capabilities back on exec, empties the bounding and ambient
// sets, then clears the effective, permitted and inheritable sets. With
// runAs not zero it also makes runAs the thread's every user and group ID,
// with no supplementary groups. Like everything the helper does to
// confine, this is per thread: the raw system calls change the calling
// thread's credentials only (Go's syscall.Setuid would change all).
func dropCapabilities(runAs uint32) error {
	if runAs == 0 && !hasAnyCapability() {
		// An ordinary user's thread outside a user namespace (the reduced
		// tier): nothing to drop, and no privilege to lock the securebits
		// or shrink the bounding set with. no_new_privs keeps it so.
		if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
			return fmt.Errorf("prctl(PR_CAP_AMBIENT_CLEAR_ALL): %w", err)
		}
		return nil
	}
	bits := secbitNoroot | secbitNorootLocked | secbitKeepCapsLocked |
		secbitNoCapAmbientRaise | secbitNoCapAmbientRaiseLocked
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, uintptr(bits), 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_SECUREBITS): %w", err)
	}
	// Drop the bounding set up to the highest capability this kernel knows,
	// which may be above the one x/sys was generated with: PR_CAPBSET_DROP
	// answers EINVAL past the end.
	for c := 0; c < 64; c++ {
		err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
		if err == unix.EINVAL {
			if c <= unix.CAP_LAST_CAP {
				return fmt.Errorf("prctl(PR_CAPBSET_DROP, %d): %w", c, err)
			}
			break
		}
		if err != nil {
			return fmt.Errorf("prctl(PR_CAPBSET_DROP, %d): %w", c, err)
		}
	}
	if runAs != 0 {
		id := uintptr(runAs)
		if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, 0, 0, 0); e != 0 {
			return fmt.Errorf("setgroups: %w", e)
		}
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, id, id, id); e != 0 {
			return fmt.Errorf("setresgid(%d): %w", runAs, e)
		}
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, id, id, id); e != 0 {
			return fmt.Errorf("setresuid(%d): %w", runAs, e)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_CAP_AMBIENT_CLEAR_ALL): %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return nil
}

// hasAnyCapability reports whether the calling thread holds any
// capability in its permitted, effective or inheritable set.
func hasAnyCapability() bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return true // assume the worst: the full drop then says what fails
	}
	for _, d := range data {
		if d.Permitted|d.Effective|d.Inheritable != 0 {
			return true
		}
	}
	return false
}

// hasCapSysAdmin reports whether the calling thread has CAP_SYS_ADMIN in
// its effective set: then the host can create the namespaces itself and
// needs no user namespace.
func hasCapSysAdmin() bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	const c = unix.CAP_SYS_ADMIN
	return data[c/32].Effective&(1<<(c%32)) != 0
}
