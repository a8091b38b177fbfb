package sandbox

import (
	"errors"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// landlockABI returns the Landlock ABI version the kernel offers.
func landlockABI() (int, error) {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		switch errno {
		case unix.ENOSYS:
			return 0, errors.New("the kernel has no Landlock (built without CONFIG_SECURITY_LANDLOCK, or older than Linux 5.13)")
		case unix.EOPNOTSUPP:
			return 0, errors.New("the kernel has Landlock disabled at boot (add landlock to the lsm= kernel parameter)")
		}
		return 0, fmt.Errorf("landlock_create_ruleset(version): %w", errno)
	}
	return int(v), nil
}

// Landlock access rights, grouped.
const (
	llExecute  = unix.LANDLOCK_ACCESS_FS_EXECUTE
	llReadFile = unix.LANDLOCK_ACCESS_FS_READ_FILE
	llReadDir  = unix.LANDLOCK_ACCESS_FS_READ_DIR
	llWrite    = unix.LANDLOCK_ACCESS_FS_WRITE_FILE
	llTruncate = unix.LANDLOCK_ACCESS_FS_TRUNCATE
	llIoctlDev = unix.LANDLOCK_ACCESS_FS_IOCTL_DEV

	// llFileRights are the only rights a rule on a file (not a
	// directory) may carry.
	llFileRights = llExecute | llWrite | llReadFile | llTruncate | llIoctlDev
	// llReadRights lets a server read and run what lies beneath.
	llReadRights = llExecute | llReadFile | llReadDir
	// llDeviceRights is what /dev/null and its kind need: a shell's
	// "> /dev/null" opens with O_TRUNC.
	llDeviceRights = llReadFile | llWrite | llTruncate | llIoctlDev
)

// llHandledFS returns the filesystem rights Landlock ABI abi can restrict.
// Handling every right the kernel knows is what makes the ruleset deny by
// default; rights newer than abi must be left out or the kernel refuses
// the ruleset with EINVAL.
func llHandledFS(abi int) uint64 {
	r := uint64(unix.LANDLOCK_ACCESS_FS_EXECUTE |
		unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_DIR |
		unix.LANDLOCK_ACCESS_FS_REMOVE_DIR |
		unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
		unix.LANDLOCK_ACCESS_FS_MAKE_CHAR |
		unix.LANDLOCK_ACCESS_FS_MAKE_DIR |
		unix.LANDLOCK_ACCESS_FS_MAKE_REG |
		unix.LANDLOCK_ACCESS_FS_MAKE_SOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_FIFO |
		unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_SYM)
	if abi >= 2 {
		// Without REFER handled (ABI 1) the kernel denies every rename
		// and link across directories: safe, but it breaks "mv a/x b/".
		r |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		// Below ABI 3 truncate(2) is not mediated; the read-only mounts
		// of the mount namespace cover that gap.
		r |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if abi >= 5 {
		r |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	if abi >= 9 {
		// connect(2) to a pathname unix socket, which older ABIs leave to
		// the mount namespace's hiding: only sockets beneath a writable
		// path (or made by the server itself) stay reachable.
		r |= unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX
	}
	return r
}

// llRulesetAttr is struct landlock_ruleset_attr up to ABI 6. x/sys's
// LandlockRulesetAttr has fields of later ABIs; the kernel accepts a
// larger struct only when the extra fields are zero, so this one is passed
// with exactly the size the ABI in use knows.
type llRulesetAttr struct {
	handledFS  uint64
	handledNet uint64
	scoped     uint64
}

// llRule is one path rule: an O_PATH descriptor and the rights beneath it.
type llRule struct {
	path   string
	fd     int
	isDir  bool
	access uint64
}

// llRuleset is a Landlock ruleset being built.
type llRuleset struct {
	fd         int
	abi        int
	handled    uint64
	handledNet uint64
}

// newRuleset creates a ruleset for ABI abi. Without the host's network it
// also handles TCP bind and connect (ABI 4+), with no rule allowing any
// port (allowConnect adds the proxy's); it always scopes abstract unix
// sockets and signals to the domain (ABI 6+).
func newRuleset(abi int, net netAccess) (*llRuleset, error) {
	attr := llRulesetAttr{handledFS: llHandledFS(abi)}
	size := unsafe.Sizeof(attr.handledFS)
	if abi >= 4 {
		if net != netHost {
			attr.handledNet = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
		}
		size = unsafe.Offsetof(attr.scoped)
	}
	if abi >= 6 {
		attr.scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
		size = unsafe.Sizeof(attr)
	}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if errno != 0 {
		return nil, fmt.Errorf("landlock_create_ruleset: %w", errno)
	}
	return &llRuleset{fd: int(fd), abi: abi, handled: attr.handledFS, handledNet: attr.handledNet}, nil
}

// llNetPortAttr is struct landlock_net_port_attr (ABI 4+), not in x/sys.
type llNetPortAttr struct {
	allowedAccess uint64
	port          uint64
}

// llRuleNetPort is LANDLOCK_RULE_NET_PORT.
const llRuleNetPort = 2

// allowConnect allows TCP connections to port (any address: the server's
// network namespace has only its loopback). Below ABI 4 Landlock cannot
// restrict TCP and this does nothing: the namespace and seccomp remain.
func (rs *llRuleset) allowConnect(port int) error {
	if rs.handledNet&unix.LANDLOCK_ACCESS_NET_CONNECT_TCP == 0 {
		return nil
	}
	attr := llNetPortAttr{allowedAccess: unix.LANDLOCK_ACCESS_NET_CONNECT_TCP, port: uint64(port)}
	_, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(rs.fd), llRuleNetPort,
		uintptr(unsafe.Pointer(&attr)), 0, 0, 0)
	if errno != 0 {
		return fmt.Errorf("landlock_add_rule net port %d: %w", port, errno)
	}
	return nil
}

// add allows access beneath the path open as fd (or on the file itself).
// Rights the ABI does not handle are dropped, and so are directory rights
// for a file, which the kernel would refuse.
func (rs *llRuleset) add(r llRule) error {
	access := r.access & rs.handled
	if !r.isDir {
		access &= llFileRights
	}
	if access == 0 {
		return nil
	}
	// The kernel's struct is packed (12 bytes) and reads only that much;
	// x/sys's Go struct has the same layout plus tail padding.
	attr := unix.LandlockPathBeneathAttr{Allowed_access: access, Parent_fd: int32(r.fd)}
	_, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(rs.fd), unix.LANDLOCK_RULE_PATH_BENEATH,
		uintptr(unsafe.Pointer(&attr)), 0, 0, 0)
	if errno != 0 {
		return fmt.Errorf("landlock_add_rule %s: %w", r.path, errno)
	}
	return nil
}

// restrictSelf enforces the ruleset on the calling thread, which must
// already have no_new_privs set. It applies to this thread only (this
// kernel refuses LANDLOCK_RESTRICT_SELF_TSYNC) and to what it starts.
func (rs *llRuleset) restrictSelf() error {
	_, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(rs.fd), 0, 0)
	if errno != 0 {
		return fmt.Errorf("landlock_restrict_self: %w", errno)
	}
	return nil
}

func (rs *llRuleset) close() { unix.Close(rs.fd) }

// deviceFiles are the device files every server may read and write.
func deviceFiles() []string {
	return []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}
}

// ruleGrant is a path the server is granted and the Landlock rights on it.
// A missing path is skipped unless mustExist.
type ruleGrant struct {
	path      string
	access    uint64
	mustExist bool
}

// ruleGrants are the paths s grants the server, as its view names them:
// read paths (a system directory this distribution does not have, a
// device it lacks, may be missing), write paths and the home (which the
// host checked exist), the device files and the private /dev/shm.
func ruleGrants(s *spec) []ruleGrant {
	var grants []ruleGrant
	for _, p := range s.Read {
		grants = append(grants, ruleGrant{p, llReadRights, false})
	}
	for _, p := range s.Write {
		grants = append(grants, ruleGrant{p, ^uint64(0), true})
	}
	if s.Home != "" {
		grants = append(grants, ruleGrant{s.Home, ^uint64(0), true})
	}
	for _, p := range deviceFiles() {
		grants = append(grants, ruleGrant{p, llDeviceRights, false})
	}
	// The private /dev/shm of the new root, for POSIX shared memory and
	// semaphores (the reduced tier has none: the host's is shared).
	if !s.Reduced {
		grants = append(grants, ruleGrant{"/dev/shm", ^uint64(0), false})
	}
	return grants
}

// openRules opens a descriptor for every path of ruleGrants(s), in the
// helper's mount namespace.
func openRules(s *spec) (rules []llRule, err error) {
	defer func() {
		if err != nil {
			closeRules(rules)
			rules = nil
		}
	}()
	for _, g := range ruleGrants(s) {
		r, ok, err := openRule(unix.AT_FDCWD, 0, g)
		if err != nil {
			return rules, err
		}
		if ok {
			rules = append(rules, r)
		}
	}
	return rules, nil
}

// openRule opens g's path for its Landlock rule, from dirfd as resolve
// says (RESOLVE_IN_ROOT: through the root the host built), following no
// symbolic link; ok is false for a path that is not there and need not be.
func openRule(dirfd int, resolve uint64, g ruleGrant) (r llRule, ok bool, err error) {
	fd, err := unix.Openat2(dirfd, g.path, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: resolve | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		if err == unix.ENOENT && !g.mustExist {
			return r, false, nil
		}
		return r, false, &os.PathError{Op: "open", Path: g.path, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return r, false, fmt.Errorf("fstat %s: %w", g.path, err)
	}
	return llRule{path: g.path, fd: fd, isDir: st.Mode&unix.S_IFMT == unix.S_IFDIR, access: g.access}, true, nil
}

func closeRules(rules []llRule) {
	for _, r := range rules {
		unix.Close(r.fd)
	}
}

// openNoSymlinks opens p as an O_PATH descriptor without following any
// symbolic link. Spec paths are resolved on the host; a link found here
// means the tree changed in between (perhaps by another server with write
// access), and following it could grant a place nobody chose.
func openNoSymlinks(p string) (int, error) {
	fd, err := unix.Openat2(unix.AT_FDCWD, p, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: p, Err: err}
	}
	return fd, nil
}
