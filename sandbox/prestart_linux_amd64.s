#include "textflag.h"

// Before the runtime sets its own, the ABI wrappers read g through the
// thread pointer (at -8 from it): prestartTLS points them at prestartG, a
// zeroed g, whose stack guard of 0 lets every stack check pass.
DATA ·prestartTLS+0(SB)/8, $·prestartG(SB)
GLOBL ·prestartTLS(SB), NOPTR, $16
GLOBL ·prestartG(SB), NOPTR, $1024
GLOBL ·prestartSP(SB), NOPTR, $8

// func prestartEntry()
//
// The helper program's entry point (go build -ldflags=-E): the kernel's
// initial stack holds argc, argv and the environment. It runs
// prestart(argc, argv) on that stack, below them, then restores the
// stack pointer and jumps to the runtime's entry, which finds the stack
// as the kernel left it.
TEXT ·prestartEntry(SB),NOSPLIT|NOFRAME,$0
	MOVQ	SP, ·prestartSP(SB)
	MOVQ	$0x1002, DI             // ARCH_SET_FS
	LEAQ	·prestartTLS+8(SB), SI
	MOVQ	$158, AX                // SYS_arch_prctl
	SYSCALL
	MOVQ	0(SP), AX               // argc
	LEAQ	8(SP), BX               // argv
	ANDQ	$~15, SP
	SUBQ	$16, SP
	MOVQ	AX, 0(SP)
	MOVQ	BX, 8(SP)
	CALL	·prestart(SB)
	MOVQ	·prestartSP(SB), SP
	JMP	_rt0_amd64_linux(SB)

// func cloneServer(flags, stack uintptr) (pid, errno uintptr)
//
// clone(flags) with the child on stack: the child runs prestartChild
// there and exits with 127 if it returns (its exec failed). With
// CLONE_VM|CLONE_VFORK the caller waits until the child execs or exits;
// its own stack is untouched.
TEXT ·cloneServer(SB),NOSPLIT,$0-32
	MOVQ	flags+0(FP), DI
	MOVQ	stack+8(FP), SI
	XORQ	DX, DX
	XORQ	R10, R10
	XORQ	R8, R8
	MOVQ	$56, AX                 // SYS_clone
	SYSCALL
	CMPQ	AX, $0
	JEQ	child
	CMPQ	AX, $0xfffffffffffff001
	JHI	fail
	MOVQ	AX, pid+16(FP)
	MOVQ	$0, errno+24(FP)
	RET
fail:
	NEGQ	AX
	MOVQ	$0, pid+16(FP)
	MOVQ	AX, errno+24(FP)
	RET
child:
	CALL	·prestartChild(SB)
	MOVQ	$127, DI
	MOVQ	$231, AX                // SYS_exit_group
	SYSCALL
	JMP	child
