#include "textflag.h"

// func vforkUserNS() (pid uintptr, errno uintptr)
//
// clone(CLONE_NEWUSER|CLONE_VM|CLONE_VFORK) with no exit signal: a child
// in a new user namespace that exits at once, leaving a zombie whose
// namespace the caller opens (newUserNS). The child shares the caller's
// memory and stack, so it touches neither: it runs the exit system call
// from registers alone and never returns to Go code. Every signal is
// blocked across the clone, as syscall.forkExec does around its vfork, so
// that no Go signal handler can run in the child; the caller's mask is
// restored in the parent.
TEXT ·vforkUserNS(SB),NOSPLIT,$16-16
	MOVQ	$-1, all-8(SP)
	MOVQ	$2, DI              // SIG_SETMASK
	LEAQ	all-8(SP), SI
	LEAQ	old-16(SP), DX
	MOVQ	$8, R10             // sizeof(sigset_t) for the kernel
	MOVQ	$14, AX             // SYS_rt_sigprocmask
	SYSCALL
	CMPQ	AX, $0xfffffffffffff001
	JLS	blocked
	MOVQ	$-1, pid+0(FP)
	NEGQ	AX
	MOVQ	AX, errno+8(FP)
	RET

blocked:
	MOVQ	$0x10004100, DI     // CLONE_NEWUSER|CLONE_VFORK|CLONE_VM; exit signal 0
	XORQ	SI, SI              // the same stack: the child writes nothing to it
	XORQ	DX, DX
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
	MOVQ	$-1, pid+0(FP)
	NEGQ	R12
	MOVQ	R12, errno+8(FP)
	RET

ok:
	MOVQ	R12, pid+0(FP)
	MOVQ	$0, errno+8(FP)
	RET
