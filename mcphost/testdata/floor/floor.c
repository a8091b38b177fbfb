// floor: a measuring instrument for BenchmarkStartFloor, not part of
// mcphost. It starts a program with the kernel work of mcphost's
// confinement layers done by a small static C program instead of mcphost's
// Go helper, so that the benchmark can tell what a start costs when the
// helper itself costs next to nothing: the floor under any helper.
//
//	floor [-plain] -root DIR -write DIR -tmp DIR [-reaper PATH] [-cg DIR]... [-ro PATH]... -- PROGRAM ARG...
//
// With -plain it only forks and execs PROGRAM (the cost of a C helper
// process and nothing else). Otherwise, as PID 1 of new mount, PID, IPC
// and network namespaces (one clone), it: makes every mount private;
// mounts a tmpfs on DIR as the new root; binds each -ro PATH into it,
// read-only and recursive, and -write DIR writable; links /bin, /lib,
// /lib64 and /sbin to usr/ as on a merged-/usr system; mounts /proc,
// /dev/shm and the TMPDIR -tmp as tmpfs; pivots into the root and detaches
// the old one; makes the root read-only; then forks the program, which
// writes 0 to each -cg DIR's tasks (a thread's move of itself), sets its
// rlimits, no_new_privs, a Landlock ruleset (read and execute beneath each
// -ro PATH, everything beneath -write and -tmp; abstract unix sockets and
// signals scoped when the ABI has them; TCP bind and connect handled), a
// seccomp filter of the length of mcphost's, drops to uid and gid 65534
// and execs. PID 1 waits for it and exits with its status, or with
// -reaper execs PATH (reaper/, a Go program) to do so. Any failure
// exits 111 with the step on stderr: a measurement of a start that did
// not confine is worthless.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/mount.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAXP 64

#if defined(__x86_64__)
#define NATIVE_ARCH 0xc000003e // AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NATIVE_ARCH 0xc00000b7 // AUDIT_ARCH_AARCH64
#else
#error "floor knows the seccomp architecture of amd64 and arm64 only"
#endif

// Landlock rights of later ABIs than older headers know.
#define LL_FS_TRUNCATE (1ULL << 14)  // ABI 3
#define LL_FS_IOCTL_DEV (1ULL << 15) // ABI 5
#define LL_NET_BIND_TCP (1ULL << 0)  // ABI 4
#define LL_NET_CONNECT_TCP (1ULL << 1)

static void die(const char *step) {
	fprintf(stderr, "floor: %s: %s\n", step, strerror(errno));
	_exit(111);
}

static char *root, *writedir, *tmpdir, *reaper;
static char *ro[MAXP], *cg[MAXP];
static int nro, ncg;
static int cgfd[MAXP];

// mkpath makes every directory of path beneath the new root (and, when
// file, the last one as an empty file) and returns root+path.
static char *mkpath(const char *path, int file) {
	static char buf[4096];
	snprintf(buf, sizeof buf, "%s%s", root, path);
	for (char *p = buf + strlen(root) + 1; *p; p++) {
		if (*p == '/') {
			*p = 0;
			if (mkdir(buf, 0755) && errno != EEXIST)
				die("mkdir");
			*p = '/';
		}
	}
	if (file) {
		int fd = open(buf, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
		if (fd < 0)
			die("creat");
		close(fd);
	} else if (mkdir(buf, 0755) && errno != EEXIST) {
		die("mkdir");
	}
	return buf;
}

// A tree opened (and made read-only) before the new root hides anything,
// attached in the new root afterwards, as mcphost's helper does.
struct tree {
	const char *path;
	int fd, dir;
};

static struct tree open_bind(const char *path, int rdonly) {
	int fd = syscall(SYS_open_tree, AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
	if (fd < 0)
		die("open_tree");
	if (rdonly) {
		struct mount_attr a = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV};
		if (syscall(SYS_mount_setattr, fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &a, sizeof a))
			die("mount_setattr");
	}
	struct stat st;
	if (fstat(fd, &st))
		die("fstat");
	return (struct tree){path, fd, S_ISDIR(st.st_mode)};
}

static void attach(struct tree t) {
	char *mp = mkpath(t.path, !t.dir);
	if (syscall(SYS_move_mount, t.fd, "", AT_FDCWD, mp, MOVE_MOUNT_F_EMPTY_PATH))
		die("move_mount");
	close(t.fd);
}

static void llrule(int rs, const char *path, __u64 access) {
	int fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0)
		die("open rule path");
	struct landlock_path_beneath_attr pb = {.allowed_access = access, .parent_fd = fd};
	if (syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0))
		die("landlock_add_rule");
	close(fd);
}

static void confine(void) {
	for (int i = 0; i < ncg; i++) {
		if (write(cgfd[i], "0", 1) != 1)
			die("joining the cgroup");
		close(cgfd[i]);
	}
	struct {
		int r;
		rlim_t v;
	} lim[] = {{RLIMIT_NPROC, 256}, {RLIMIT_DATA, 1UL << 32}, {RLIMIT_FSIZE, 1UL << 30}, {RLIMIT_SIGPENDING, 256}, {RLIMIT_MSGQUEUE, 0}, {RLIMIT_MEMLOCK, 1 << 16}, {RLIMIT_NOFILE, 1024}};
	for (size_t i = 0; i < sizeof lim / sizeof lim[0]; i++) {
		struct rlimit rl = {lim[i].v, lim[i].v};
		if (setrlimit(lim[i].r, &rl))
			die("setrlimit");
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		die("no_new_privs");
	int abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	if (abi < 1)
		die("landlock abi");
	__u64 rx = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
	__u64 all = rx | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |
		    LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
		    LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |
		    LANDLOCK_ACCESS_FS_MAKE_SYM | LANDLOCK_ACCESS_FS_REFER;
	if (abi >= 3)
		all |= LL_FS_TRUNCATE;
	if (abi >= 5)
		all |= LL_FS_IOCTL_DEV;
	struct {
		__u64 fs, net, scoped;
	} attr = {.fs = all};
	size_t size = sizeof(__u64);
	if (abi >= 4) {
		attr.net = LL_NET_BIND_TCP | LL_NET_CONNECT_TCP;
		size = 2 * sizeof(__u64);
	}
	if (abi >= 6) {
		attr.scoped = 1 | 2; // abstract unix sockets, signals
		size = 3 * sizeof(__u64);
	}
	int rs = syscall(SYS_landlock_create_ruleset, &attr, size, 0);
	if (rs < 0)
		die("landlock_create_ruleset");
	for (int i = 0; i < nro; i++)
		llrule(rs, ro[i], rx);
	llrule(rs, "/dev", rx | LANDLOCK_ACCESS_FS_WRITE_FILE);
	llrule(rs, "/proc", rx | LANDLOCK_ACCESS_FS_WRITE_FILE);
	llrule(rs, writedir, all);
	llrule(rs, tmpdir, all);
	llrule(rs, "/dev/shm", all);
	if (syscall(SYS_landlock_restrict_self, rs, 0))
		die("landlock_restrict_self");
	close(rs);

	// A filter of about the length of mcphost's: the architecture, then
	// a linear list of refused calls, each a compare and a return.
	static const int deny[] = {
	    SYS_io_uring_setup, SYS_io_uring_enter, SYS_io_uring_register, SYS_keyctl, SYS_add_key,
	    SYS_request_key, SYS_clone3, SYS_openat2, SYS_unshare, SYS_setns, SYS_mount, SYS_umount2,
	    SYS_pivot_root, SYS_chroot, SYS_ptrace, SYS_kexec_load, SYS_init_module, SYS_finit_module,
	    SYS_delete_module, SYS_bpf, SYS_perf_event_open, SYS_userfaultfd, SYS_open_by_handle_at,
	    SYS_name_to_handle_at, SYS_fsopen, SYS_fsmount, SYS_fsconfig, SYS_move_mount, SYS_open_tree,
	    SYS_mount_setattr, SYS_swapon, SYS_swapoff, SYS_reboot, SYS_acct, SYS_quotactl,
	    SYS_lookup_dcookie, SYS_vhangup, SYS_syslog, SYS_personality, SYS_process_vm_writev,
	};
	struct sock_filter prog[4 + 2 * sizeof deny / sizeof deny[0] + 1];
	int n = 0;
	prog[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
	prog[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 1, 0);
	prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS);
	prog[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
	for (size_t i = 0; i < sizeof deny / sizeof deny[0]; i++) {
		prog[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, deny[i], 0, 1);
		prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS);
	}
	prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	struct sock_fprog fp = {.len = n, .filter = prog};
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fp))
		die("seccomp");
	if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
		die("dropping to 65534");
}

static int pid1(char **argv) {
	// The cgroups' tasks files, opened before the new root (whose /sys is
	// read-only).
	for (int i = 0; i < ncg; i++) {
		char p[4096];
		snprintf(p, sizeof p, "%s/tasks", cg[i]);
		if ((cgfd[i] = open(p, O_WRONLY | O_CLOEXEC)) < 0)
			die("opening the cgroup");
	}
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		die("making mounts private");
	static const char *devs[] = {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"};
	int ndev = sizeof devs / sizeof devs[0];
	struct tree trees[MAXP + 8];
	int nt = 0;
	for (int i = 0; i < nro; i++)
		trees[nt++] = open_bind(ro[i], 1);
	for (int i = 0; i < ndev; i++)
		trees[nt++] = open_bind(devs[i], 0);
	trees[nt++] = open_bind(writedir, 0);
	if (mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m,nr_inodes=4096"))
		die("the new root's tmpfs");
	for (int i = 0; i < nt; i++)
		attach(trees[i]);
	static const char *links[][2] = {{"/bin", "usr/bin"}, {"/lib", "usr/lib"}, {"/lib64", "usr/lib64"}, {"/sbin", "usr/sbin"}};
	for (size_t i = 0; i < sizeof links / sizeof links[0]; i++) {
		char p[4096];
		snprintf(p, sizeof p, "%s%s", root, links[i][0]);
		if (symlink(links[i][1], p) && errno != EEXIST)
			die("symlink");
	}
	if (mount("proc", mkpath("/proc", 0), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL))
		die("mounting /proc");
	if (mount("tmpfs", mkpath("/dev/shm", 0), "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=1073741824"))
		die("mounting /dev/shm");
	if (mount("tmpfs", mkpath(tmpdir, 0), "tmpfs", MS_NOSUID | MS_NODEV, "mode=0777,size=1073741824"))
		die("mounting TMPDIR");
	if (chdir(root) || syscall(SYS_pivot_root, ".", ".") || umount2(".", MNT_DETACH) || chdir("/"))
		die("pivot_root");
	struct mount_attr a = {.attr_set = MOUNT_ATTR_RDONLY};
	if (syscall(SYS_mount_setattr, AT_FDCWD, "/", 0, &a, sizeof a))
		die("the root read-only");
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		confine();
		execv(argv[0], argv);
		die("execv");
	}
	if (reaper) {
		// Its directory is bound into the new root with the others.
		char *rv[] = {reaper, NULL};
		execv(reaper, rv);
		die("execv reaper");
	}
	for (;;) {
		int st;
		pid_t w = wait(&st);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			die("wait");
		}
		if (w == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	}
}

int main(int argc, char **argv) {
	int plain = 0, i;
	for (i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		if (!strcmp(argv[i], "-plain"))
			plain = 1;
		else if (i + 1 >= argc)
			break;
		else if (!strcmp(argv[i], "-root"))
			root = argv[++i];
		else if (!strcmp(argv[i], "-write"))
			writedir = argv[++i];
		else if (!strcmp(argv[i], "-tmp"))
			tmpdir = argv[++i];
		else if (!strcmp(argv[i], "-reaper"))
			reaper = argv[++i];
		else if (!strcmp(argv[i], "-ro") && nro < MAXP)
			ro[nro++] = argv[++i];
		else if (!strcmp(argv[i], "-cg") && ncg < MAXP)
			cg[ncg++] = argv[++i];
		else
			break;
	}
	if (i >= argc - 1 || strcmp(argv[i], "--") || (!plain && (!root || !writedir || !tmpdir))) {
		fprintf(stderr, "usage: floor [-plain] -root DIR -write DIR -tmp DIR [-reaper PATH] [-cg DIR]... [-ro PATH]... -- PROGRAM ARG...\n");
		return 2;
	}
	argv += i + 1;
	if (plain) {
		pid_t pid = fork();
		if (pid == 0) {
			execv(argv[0], argv);
			die("execv");
		}
		int st;
		if (pid < 0 || waitpid(pid, &st, 0) < 0)
			die("fork");
		return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	}
	// Started in new namespaces already (BenchmarkStartFloor clones it
	// so, as mcphost's host clones its helper): it is PID 1. Otherwise
	// clone, so one call makes all four namespaces.
	if (getpid() == 1)
		return pid1(argv);
	pid_t pid = syscall(SYS_clone, CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | SIGCHLD, NULL, NULL, NULL, 0);
	if (pid < 0)
		die("clone");
	if (pid == 0)
		_exit(pid1(argv));
	int st;
	if (waitpid(pid, &st, 0) < 0)
		die("waitpid");
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
