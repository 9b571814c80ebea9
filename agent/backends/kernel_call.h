/* How the evaluator calls a kernel, the same in both timing protocols: the isolated protocol's child
   (serve_loop.c) and the in-process child (through timed_call.c, with ctypes) include this.

   A kernel's own stack is part of what it reads and writes: a kernel that keeps a scratch array on
   its stack (histogram's per-copy counts) competes with its inputs for the cache sets and aliases
   them in the load/store unit as the two sit modulo 4 KiB. Called from wherever its caller's frames
   left the stack pointer, it ran at the speed of an accident: histogram's baseline read 11.1-14.8 ms
   from one in-process evaluation to the next (the stack's place within a page is randomised per
   process) and 11.7-11.9 isolated (address randomisation off there), results/stop58. So every call
   starts with the stack at one declared place within a page, `KG_KERNEL_FRAME`: that of the isolated
   protocol's child before this (evaluator 17), so its figures stand. */
#ifndef KG_KERNEL_CALL_H
#define KG_KERNEL_CALL_H

#include <stdint.h>

#define KG_MAX_ARGS 16
#define KG_PAGE 4096
/* Where a kernel that keeps a frame pointer has it, modulo KG_PAGE (x86-64: its stack pointer at
   entry, the return address pushed, is this + 8). */
#define KG_KERNEL_FRAME 0x630

/* Every argument of a kernel is a pointer or an int: in the x86-64 and AArch64 calling conventions
   each takes one integer register or stack slot, so passing all as long works for any count up to
   KG_MAX_ARGS (the callee reads the ones it declares). */
typedef void (*kg_kernel)(long, long, long, long, long, long, long, long, long, long, long, long, long,
                          long, long, long);

static __attribute__((noinline, noclone)) void kg_call_at(kg_kernel kernel, const long *args) {
    kernel(args[0], args[1], args[2], args[3], args[4], args[5], args[6], args[7], args[8], args[9],
           args[10], args[11], args[12], args[13], args[14], args[15]);
    __asm__ volatile("" : : : "memory"); /* a call, not a jump: its frame stays where it was put */
}

/* `kernel` called with its frame at `shift` past this function's own, modulo KG_PAGE (both 16-byte
   aligned, so the room below is exact). */
static __attribute__((noinline, noclone)) void kg_call_shifted(kg_kernel kernel, const long *args, uintptr_t shift) {
    uintptr_t here = (uintptr_t)__builtin_frame_address(0);
    char *room = __builtin_alloca((here - shift) & (KG_PAGE - 1));
    __asm__ volatile("" : : "r"(room) : "memory");
    kg_call_at(kernel, args);
}

static volatile uintptr_t kg_probed_frame;

static __attribute__((noinline, noclone)) void kg_probe(long a0, long a1, long a2, long a3, long a4, long a5,
                                                        long a6, long a7, long a8, long a9, long a10, long a11,
                                                        long a12, long a13, long a14, long a15) {
    (void)a0, (void)a1, (void)a2, (void)a3, (void)a4, (void)a5, (void)a6, (void)a7, (void)a8, (void)a9;
    (void)a10, (void)a11, (void)a12, (void)a13, (void)a14, (void)a15;
    kg_probed_frame = (uintptr_t)__builtin_frame_address(0);
}

/* `kernel(args)` with its frame at KG_KERNEL_FRAME within a page, wherever this is called from. The
   shift that puts it there is measured once, with a probe called the same way: the frames between
   here and the kernel are this build's, whatever compiler made it. */
static void kg_call_kernel(kg_kernel kernel, const long *args) {
    static uintptr_t shift = UINTPTR_MAX;
    if (shift == UINTPTR_MAX) {
        static const long none[KG_MAX_ARGS];
        kg_call_shifted(kg_probe, none, 0);
        shift = (KG_KERNEL_FRAME - kg_probed_frame) & (KG_PAGE - 1);
    }
    kg_call_shifted(kernel, args, shift);
}

#endif
