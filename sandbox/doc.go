// Package sandbox builds and runs one confined child process: an MCP server
// that speaks JSON-RPC over its standard input and output, and that mcphost
// does not trust.
//
//	p, err := sandbox.Start(ctx, sandbox.Config{
//		Name:     "notes",
//		Argv:     []string{"notes-server", "--db", "notes.db"},
//		Worktree: "/home/me/project",
//		Stderr:   ring, // the server's log
//	})
//	if err != nil { ... } // errors.Is(err, sandbox.ErrUnsupported): the kernel cannot confine
//	defer p.Close(5 * time.Second)
//	// talk JSON-RPC over p.Stdin() and p.Stdout()
//
// # The helper, and the one rule for importers
//
// Start runs a small helper process, which builds the sandbox around itself
// and then starts the server. The helper is this package built alone
// (internal/helper, about 2.7 MB), embedded for linux/amd64 and linux/arm64.
// A root host runs it from an immutable copy only root can write, in
// /run/mcphost, written once per version (helperCacheDir says what is
// checked before it is used); any other host from a sealed memory file
// (memfd_create, written once per process, in the background as the
// process starts, and sealed against every change). The process keeps
// either open for its life, and each start executes it as a descriptor
// the helper is given. It is run that way,
// rather than by re-executing the importing program, because a Go program's
// start grows with what it links: an agent that links the go-sdk and BLAKE3
// reached the helper's code after 2 to 3 ms, the embedded program in about
// one, and Start runs it once per server. TestEmbeddedHelperCurrent checks
// that the embedded binaries are byte for byte what this source builds to
// (rebuild them with `make helper`), so they are trusted for being
// reproducible, not for being there.
//
// Where neither file can be executed (vm.memfd_noexec, a security
// module), nothing is embedded, or the file's descriptor no longer holds
// it (checked before every start), Start re-executes the running
// program through /proc/self/exe instead, for that start and every later
// one.
// Importers add nothing to main for this either: the package's init
// function checks for the helper's marker (an argument vector of exactly
// "mcphost-sandbox-helper", or that and "plan", with the spec, or a plan,
// on an inherited socket at descriptor 3) and, only then, runs the helper
// and exits; in every other process it returns at once. This works for any program that imports the
// package, go test binaries included. Two consequences: the re-executed
// helper runs the init functions of the packages initialized before this
// one (nothing else of the program: not main, not the init functions of the
// packages that import this one), and /proc must be mounted on the host.
//
// With MCPHOST_START_TRACE=1 in the host's environment, every Start and
// Close writes one line to the host's stderr with the duration of each of
// its phases, the helper's included (see trace.go and BENCHMARKS.md).
//
// The helper is needed because Landlock, seccomp, no_new_privs and the
// capability sets belong to a thread and Linux refuses to apply Landlock
// to all threads of a Go program at once here: the helper confines one
// locked thread and starts the server from it, which inherits everything.
//
// On a root host (amd64, Linux 6.15 or later) the host prepares all of
// that as a plan, and the embedded helper's entry point starts the server
// from it before the helper's Go runtime starts (the prestart,
// prestart_linux.go), then supervises it in raw system calls: on that path
// the helper's Go runtime never starts.
// What the entry does not do (a network proxy's listeners, a user
// namespace's limits, a probe) and a plan the host cannot make go to the
// Go helper, with the spec.
//
// # The model
//
// Each layer covers what the others cannot; every one of them is applied,
// or the server does not start (the error wraps ErrUnsupported and says how
// to opt out). There is no silent best effort.
//
// Environment. The server gets PATH, HOME, LANG, LC_ALL, TERM, TZ, USER,
// LOGNAME and SHELL from the host's environment, the names in EnvPass, the
// values in Env, and TMPDIR (also TMP and TEMP) set to a private directory:
// in a root of the server's own a tmpfs there alone, elsewhere a directory
// Start makes on the host and Close removes. Nothing else: tokens in the
// host's environment stay there. Likewise it inherits its standard input,
// output and error and no other descriptor, even one the host leaked
// without close-on-exec.
//
// PID namespace (lifetime). The helper is init of a new PID namespace: it
// forwards SIGTERM and SIGINT to the server, reaps orphans, and exits with
// the server's status. When it exits the kernel kills every process left in
// the namespace, so a daemon that called setsid and double-forked cannot
// outlive its server. The helper dies with the host: Pdeathsig (set from a
// thread that lives exactly as long as the helper) and, independently, a
// lifeline socket whose EOF makes the helper kill everything. A cgroup would
// also do, but needs a delegated cgroup tree that ordinary users often do
// not have; a PID namespace needs nothing.
//
// Mount namespace: the server's view. The server's root is a fresh,
// read-only tmpfs into which only what it may use is bound, each at its own
// path: the system directories (/usr, /etc, /opt, /sys and those /lib*,
// /bin and /sbin that are directories; the ones that are links on the host
// are the same links), the worktree, its TMPDIR, the Read and Write paths,
// the directories of its program and interpreters, the five device files it
// may open, a fresh /proc that shows only the sandbox's processes (with
// keys, key-users, kcore, sysrq-trigger, timer_list, timer_stats,
// sched_debug, latency_stats, scsi, acpi and asound, where the kernel has
// them, covered by an empty read-only file or directory: procMasked), and
// a private /dev/shm. The home directory is an empty directory. Nothing else
// exists for it: stat(2) finds nothing, connect(2) to a listening unix
// socket elsewhere (an SSH agent, a Docker daemon, a service's socket in
// /var/lib) fails with ENOENT, and /proc/self/mountinfo lists only these
// mounts. They are bound from the host's tree, opened without following
// links, each made private and (but the writable paths) read-only as it
// is attached, because Landlock does not mediate chmod, chown, utimes or
// extended attributes (nor truncate before ABI 3). A root host builds
// that tree itself, detached, while the helper starts (Linux 6.15 or
// later); otherwise the helper builds it. The helper then pivot_root(2)s
// into the new root and detaches the host's tree. Protected paths are
// bound read-only onto themselves, and the directories between them and
// their writable root onto themselves, so that they can be neither written
// (EROFS) nor renamed, removed or replaced (EBUSY). Granting / keeps the
// host's tree as the view. Besides Config.Protect, Start protects this way,
// when they lie in a writable path, the server's own program files
// (Programs: its program, "#!" interpreters, the script a known
// interpreter runs) and, unless Config.WritableGit, the repository's git
// directory: the .git git would find from the worktree and, for a ".git"
// file, the git dir and common dir it names.
//
// Symbolic links. A Read or Write path, the program, an interpreter or the
// script that goes through a symbolic link whose own location lies in a
// writable path (the worktree, TMPDIR, the Write paths, Config.PeerWrite)
// is refused with a *LinkError (ErrLinkedPath): whoever may write there
// could have planted the link or could swap it. The helper opens every
// granted path by descriptor refusing symbolic links (openat2 with
// RESOLVE_NO_SYMLINKS) and mounts and adds Landlock rules by descriptor, so
// a link swapped in after the host's check is refused too.
//
// Home. By default the home directory is there, empty and read-only. With
// Config.Home (or TempHome) the server gets a private home instead: a
// directory of the host's, outside the worktree, bound writable at the path
// of its HOME, so that programs that keep settings and caches in ~ work and
// what they write lands in that directory, never in the person's home.
// Read and Write paths beneath HOME (a dotfile such as ~/.gitconfig, the
// worktree) are bound on top of it, the read ones read-only and immovable
// (EROFS, EBUSY), their mount points made by the host in the private home
// without following links. Each server needs a home of its own: one that
// is, contains or lies beneath a path another server may write is the
// caller's mistake this package cannot see, except for the worktree and
// Write paths, which it refuses. With TempHome the home is a tmpfs of
// Limits.Tmp instead, which never reaches the host's disk. In the reduced
// tier, which has no mount namespace, the private home is granted at its
// own path and HOME names it.
//
// Network namespace and seccomp. With Network false the server gets a new
// network namespace with only a loopback that is down, and a seccomp filter
// that fails socket(2) for any family but AF_UNIX with EAFNOSUPPORT (TCP,
// UDP, MPTCP, raw, packet, netlink), except netlink's NETLINK_ROUTE: listing
// the network interfaces (which Node, .NET and getifaddrs(3) do at start)
// works and shows the down loopback, and changing a link, address or route
// fails for want of CAP_NET_ADMIN. With Network true it shares the host's
// network. With a Proxy (network by name) it keeps the empty namespace, but
// the helper brings its loopback up and listens on 127.0.0.1:ProxyPort,
// handing the listening socket to the host, whose Proxy serves every
// connection; the server's proxy variables point there, and the filter also
// allows TCP sockets of AF_INET and AF_INET6 (not MPTCP or raw). A Proxy
// that is a DirectProxy also gets what clients that ignore the proxy
// variables need (see DirectProxy): prefixes on the loopback, listeners on
// the granted ports at every address, a nameserver at 127.0.0.1:53 named
// by the server's resolv.conf, and UDP sockets, which reach nothing else. The filter also refuses io_uring, whose operations bypass the
// system calls a filter sees, the kernel keyring calls (keyrings are not
// covered by these namespaces and can hold credentials), and system calls
// of a foreign ABI (32-bit and x32 calls on amd64), whose numbers differ,
// and every way to a new user namespace (unshare and clone with
// CLONE_NEWUSER; clone3, whose flags a filter cannot read, fails with
// ENOSYS and C libraries fall back to clone): inside one, a process holds
// every capability again, and with it kernel code (nf_tables) that is
// otherwise root's alone. Nor can a server loosen permissions for other
// users: chmod, fchmod and fchmodat(2) with world write (S_IWOTH) fail with
// EPERM, a umask(2) that would clear S_IWOTH has no effect (the helper
// answers it with the umask as it is; it starts the server with the
// host's umask plus S_IWOTH, so nothing is created world-writable) and
// setting or removing extended attributes, POSIX ACLs among them, fails
// with EOPNOTSUPP. In the reduced tier the filter also
// refuses the priority calls that name a process group or user
// (setpriority and getpriority with PRIO_PGRP or PRIO_USER, ioprio_set and
// ioprio_get with IOPRIO_WHO_PGRP or IOPRIO_WHO_USER) and those that change
// another process (prlimit64, setpriority, sched_set*), with EPERM, and
// inotify and fanotify, with ENOSYS. Filters exist for amd64 and arm64;
// elsewhere Start refuses to confine.
//
// Landlock. The server may read and execute /usr, /bin, /sbin, /lib*,
// /etc, /opt, /proc and /sys, the worktree, the Read paths, and the
// directory of its program and of every "#!" interpreter (also one found by
// env(1)) — or only the file, where that directory is /, a hidden directory
// or an ancestor of the home directory. It may also write the worktree,
// its TMPDIR, the Write paths and /dev/shm, and read and write /dev/null,
// /dev/zero, /dev/full, /dev/random and /dev/urandom. Nothing else, in
// particular not the home directory unless a Read path grants part of it.
// The best ABI of the kernel is used, and rights an older ABI lacks are
// dropped (without REFER, ABI 1, renames across directories fail with
// EXDEV). From ABI 4 TCP is also denied with Network false (with a Proxy,
// all but connecting to its port); from ABI 6 the
// server can neither signal processes outside the sandbox nor reach
// abstract unix sockets created outside it; from ABI 9 it can connect only
// to pathname unix sockets beneath its writable paths.
//
// Privileges. no_new_privs is set, the capability bounding, ambient,
// effective, permitted and inheritable sets are emptied and the securebits
// that would restore root's capabilities at exec are locked, so a server
// started by root has no capability. The helper runs in a new session, so
// the server has no controlling terminal to push keystrokes into. The IPC
// namespace isolates System V IPC and POSIX message queues.
//
// Identity. A root host's servers do not run as root, nor as one shared
// identity: the helper starts each server as a uid (and gid) of its own,
// ServerID - k for the lowest slot k below ServerIDSlots that no live
// server of any root host on the machine holds (2147479537 to 2147483632;
// the slots are flock(2) locks in /run/mcphost-server-ids, held by the
// host until no task runs as the uid, the server's last process and the
// helper's thread that started it gone: see serverid_linux.go), with no
// supplementary group. So root-only files
// under the paths it may read (/etc/shadow, a 0600 key in /opt) are
// closed to it by file permissions, and what the kernel counts per user
// (inotify instances, RLIMIT_NPROC's processes, queued signals) it counts
// for each server alone: one server cannot take another's. Every granted
// path outside the system directories (the worktree, TMPDIR, the Read and
// Write paths, the program's own directory) is bound from an idmapped
// mount that maps that path's owner to the server's uid: the server uses
// them as their owner may, and a file it creates in the worktree belongs
// on disk to the worktree's owner, as one the person made would.
// Confinement reports "+unprivileged".
// A file system without idmapped mounts makes Start fail (ErrUnsupported):
// run such a host as an ordinary user.
//
// Limits. Each server is bounded in processes and threads, memory,
// temporary space and the size of each file it writes (Limits; on by
// default: 512, 2 GiB, 1 GiB, 1 GiB). A root host
// makes each server a cgroup of its own (v2, or v1's pids and memory
// controllers) that the helper is in before it starts the server (on v1
// it is started in it; on v2 the host moves it there as it starts); the
// kernel's OOM killer ends what goes past the memory limit, and ExitStatus
// says so, as it says how many forks and threads the process limit
// refused. Cgroups a killed host could not remove are removed by the next
// start beside them (a cgroup's name says which host process made it).
// Elsewhere RLIMIT_NPROC, which counts only the server's processes (in
// its own user namespace, or as a root host's server, under its own uid),
// and RLIMIT_DATA, per process, stand in. The full tier also caps, per
// server, the kernel budgets the kernel counts per user (see Limits):
// in a non-root host's server's own user namespace its inotify and
// fanotify limits (a quarter of the host's), and in both cases
// RLIMIT_SIGPENDING, RLIMIT_MSGQUEUE, RLIMIT_MEMLOCK and RLIMIT_NOFILE. TMPDIR
// and /dev/shm are each a tmpfs of the Tmp size (ENOSPC past it). In both
// tiers RLIMIT_FSIZE bounds each file the server writes, anywhere: past it
// a write fails with EFBIG or, where the process does not ignore SIGXFSZ,
// ends it, and ExitStatus then names the limit (max_file_size).
// Process.Limits says which applies.
//
// # As an ordinary user
//
// Everything above works unchanged for a host that is not root when the
// kernel allows unprivileged user namespaces (most distributions do; some
// restrict it with kernel.unprivileged_userns_clone,
// user.max_user_namespaces or AppArmor's
// kernel.apparmor_restrict_unprivileged_userns). The helper then runs in a
// new user namespace that maps only the user's own uid and gid, keeps just
// CAP_SYS_ADMIN and CAP_SETPCAP in it to build the mounts and drop the
// rest, and the server runs as the user, with no capability anywhere.
// Confinement reports "+userns".
//
// When the kernel refuses that (the user namespace itself, or the
// privileges in it), the first start finds out, and that server and every
// later one run in the reduced tier: no namespace at all, only what needs
// no privilege (Landlock, seccomp, no_new_privs, the scrubbed environment,
// the private TMPDIR, and the helper as a child subreaper that ends the
// server's whole process tree). Protected paths inside writable ones stay
// unwritable there too: the directories above them are granted read-only
// and their other entries one by one. The tier needs Landlock ABI 3.
// Confinement reports "+reduced" and Process.Lacks lists what it lacks
// (see reduced_linux.go); Config.RequireFull (`sandbox = "full"`) makes
// Start fail with ErrUnsupported instead.
//
// # Off
//
// Config.Off runs the server without confinement: it can read, write and
// reach everything the user can. Only the scrubbed environment, the private
// TMPDIR, the lack of a controlling terminal and the lifetime guarantees
// remain: the helper is then a child subreaper that kills every descendant
// of the server when the server exits, Close is called or the host dies.
// It exists for servers that cannot work confined, as the user's explicit,
// documented risk (`sandbox = "off"`), and Confinement says "none".
//
// # What is not covered
//
//   - A path that does not exist cannot be protected: a server can create
//     it (a planted config is answered by package mcphost's review of
//     server tables instead). So a worktree with no .git of its own (none
//     anywhere above it, or a directory of a repository) can be given one
//     by a server, which git run there would then use; a program that does
//     not exist yet, or a file a server creates in a writable PATH
//     directory ahead of the real program, is not covered; what a script
//     loads is covered as far as ProgramClosure can tell (its Uncovered
//     says what it cannot); nor is GIT_DIR set in the person's environment.
//   - A protected file stays protected while the host leaves it in place.
//     When something outside the sandbox replaces it (renames a new file
//     over it, as editors and atomic writers do), the kernel detaches the
//     read-only bind in running servers' namespaces and they can write the
//     new file. A protected directory keeps its protection whatever the host
//     does inside it: protect the directory that holds state, not the file.
//     A protected path inside a writable one must exist before Start (else
//     a server could create it first: Start refuses). Pinned directories are
//     mount points, so moving files into or out of them fails with EXDEV.
//   - With Network true, every service of the host's network is reachable,
//     localhost's included, and below Landlock ABI 6 so are abstract unix
//     sockets.
//   - A host that is killed takes its servers with it but cannot remove
//     their (empty) temporary directories, named mcphost-NAME-* in the
//     host's temporary directory: they stay behind. A root host's cgroups,
//     named mcphost-NAME-*.NS.PID.START beneath its own, stay until a
//     later start of a host in the same PID namespace beside them removes
//     them (names from before this rule carry no owner and stay). The
//     name shows the server its host's PID and start time, through
//     /proc/self/cgroup.
//   - Without a cgroup (an ordinary user's host, or a root host that cannot
//     make one), memory is bounded per process, not for the server as a
//     whole, and only its private data (RLIMIT_DATA): shared memory (a
//     memfd, MAP_SHARED, its two tmpfs mounts) is not bounded at all. CPU
//     time is not bounded, nor the disk space the worktree, the Write
//     paths and a Home (not TempHome) take together: only each file's size
//     is (Limits.FileSize).
//   - A non-root host's servers run as the person outside their user
//     namespaces, so what the kernel counts per user with no cap a
//     namespace or an rlimit sets is shared with the person: descriptors
//     in flight in unread SCM_RIGHTS messages, pipe buffer pages
//     (fs.pipe-user-pages-soft), and the person's own process count.
//     Process.Lacks lists them. The per-server caps of the rest are each
//     a share, not a reservation: many servers together can still use up
//     the person's inotify instances.
//   - Group write is not refused (chmod 0664 works): on systems that give
//     each user a group of their own it reaches nobody else, and copies
//     that keep a file's mode need it there. Where the person's files
//     belong to a group others share, a server can give that group write.
//   - When an RLIMIT_NPROC stands in and the server has reached it, the
//     helper itself may fail to start a thread it needs and end the
//     server: the server is stopped rather than merely refused.
//   - The seccomp filter denies a short list; it is not an allowlist that
//     would shrink the kernel's attack surface. Kernel bugs are out of scope.
//   - System configuration in /etc, hardware details in /sys and the
//     namespace's own /proc are readable, and their existence visible;
//     so are the host's cgroup paths (/proc/self/cgroup, the other
//     servers' cgroups under /sys/fs/cgroup) and, in mountinfo, where each
//     bound path comes from.
//   - A granted path is used as its owner may, root included: a root
//     host's server reads a root-only file under a read grant owned by
//     root (the person granted it). Root-only files elsewhere are closed.
//   - A hard link to a protected file made before it was protected would
//     let a server write it through the other name: Start refuses a
//     protected file with more than one name (in a protected directory,
//     the files two levels down, git's objects, refs and logs aside).
//   - Paths are resolved through symbolic links on the host: the server sees
//     the real paths of its worktree and grants. Programs that load files
//     relative to themselves from outside their own directory need a Read
//     path; 32-bit programs cannot run confined (their system calls are
//     refused).
//   - Only Linux: elsewhere Start fails with ErrUnsupported, even with Off.
package sandbox
