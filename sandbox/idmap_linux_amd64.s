#include "textflag.h"

// func vforkUserNS() (pid, pidfd, errno uintptr)
//
// clone(CLONE_NEWUSER|CLONE_VM|CLONE_VFORK|CLONE_FILES|CLONE_PIDFD) with no
// exit signal: a child in a new user namespace that exits at once, left a
// zombie for the caller to open and reap (newUserNS), and a pidfd of it.
// The child shares the caller's memory, stack and descriptor table, so it
// touches none of them: it runs the exit system call from registers alone
// and never returns to Go code. Every signal is blocked across the clone,
// as syscall.forkExec does around its vfork, so that no Go signal handler
// can run in the child (a signal to the process group reaches it); the
// caller's mask is restored in the parent.
TEXT ·vforkUserNS(SB),NOSPLIT,$24-24
	MOVQ	$-1, all-8(SP)
	MOVQ	$-1, pidfd-24(SP)
	MOVQ	$2, DI              // SIG_SETMASK
	LEAQ	all-8(SP), SI
	LEAQ	old-16(SP), DX
	MOVQ	$8, R10             // sizeof(sigset_t) for the kernel
	MOVQ	$14, AX             // SYS_rt_sigprocmask
	SYSCALL
	MOVQ	AX, R12
	CMPQ	AX, $0xfffffffffffff001
	JHI	fail

blocked:
	MOVQ	$0x10005500, DI     // CLONE_NEWUSER|CLONE_PIDFD|CLONE_VFORK|CLONE_FILES|CLONE_VM; exit signal 0
	XORQ	SI, SI              // the same stack: the child writes nothing to it
	LEAQ	pidfd-24(SP), DX    // where the kernel puts the pidfd (an int)
	XORQ	R10, R10
	XORQ	R8, R8
	MOVQ	$56, AX             // SYS_clone
	SYSCALL
	CMPQ	AX, $0
	JNE	parent

child:
	XORQ	DI, DI
	MOVQ	$60, AX             // SYS_exit
	SYSCALL
	JMP	child

parent:
	MOVQ	AX, R12             // the kernel keeps R12 across the system call
	MOVQ	$2, DI              // SIG_SETMASK
	LEAQ	old-16(SP), SI
	XORQ	DX, DX
	MOVQ	$8, R10
	MOVQ	$14, AX             // SYS_rt_sigprocmask
	SYSCALL
	CMPQ	R12, $0xfffffffffffff001
	JLS	ok

fail: // R12 holds -errno
	MOVQ	$-1, pid+0(FP)
	MOVQ	$-1, pidfd+8(FP)
	NEGQ	R12
	MOVQ	R12, errno+16(FP)
	RET

ok:
	MOVQ	R12, pid+0(FP)
	MOVLQSX	pidfd-24(SP), AX    // the kernel wrote an int
	MOVQ	AX, pidfd+8(FP)
	MOVQ	$0, errno+16(FP)
	RET
