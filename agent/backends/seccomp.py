"""Seccomp filters for sandboxed steps, compiled to classic BPF here (no library: `struct` packs the
`sock_filter` instructions the kernel reads; docs/sandbox.md).

Four filters, all x86-64 only (any other architecture, the x32 ABI included, is refused):
- `STEP_FILTER`, given to bubblewrap (`--seccomp FD`) for every sandboxed step (gcc, valgrind, the
  Python workers): every call is allowed except those that reach kernel attack surface no build or
  run needs: new namespaces (`unshare`, `setns`, `clone`/`clone3` with namespace flags), mounts,
  `ptrace`, `bpf`, keyrings, `perf_event_open`, `userfaultfd`, `io_uring`, module and kexec loading,
  sockets other than AF_UNIX (netlink reaches netfilter).
- `KERNEL_FILTER`, installed by the C run child (`_child.py`) on itself just before it loads the
  kernel: an allow-list of what that child, numpy and the OpenMP runtime do from then on (memory,
  threads, futexes, the result files), nothing else; `clone` must carry CLONE_THREAD (threads, no
  processes: a process reaped within a call would hide its CPU time from the timer). `SERVE_FILTER`
  is the isolated protocol's (`serve_loop.c`): the same, and `prctl` only to turn the time-stamp
  counter off or stack the next filter.
- `CLOCK_FILTER`, stacked on `SERVE_FILTER` by the isolated protocol's child once the kernel is
  loaded and before its first timed call, an allow-list of its own: no system call that reads a
  clock or anything that carries the time (`CLOCK_CALLS`; a futex or a sleep only with a relative
  timeout), no `prctl`, no executable mapping. The child also turns the time-stamp counter off and
  unmaps the vDSO then (`serve_loop.c` kg_hide_clocks).
A refused call fails with EPERM (ENOSYS for `clone3`, so glibc falls back to `clone`, whose flags a
filter can read).
"""

from __future__ import annotations

import errno
import struct
from collections.abc import Iterable

# x86-64 system call numbers (arch/x86/entry/syscalls/syscall_64.tbl) of the calls named here.
NR: dict[str, int] = {
    "read": 0, "write": 1, "open": 2, "close": 3, "stat": 4, "fstat": 5, "lstat": 6, "poll": 7,
    "lseek": 8, "mmap": 9, "mprotect": 10, "munmap": 11, "brk": 12, "rt_sigaction": 13,
    "rt_sigprocmask": 14, "rt_sigreturn": 15, "ioctl": 16, "pread64": 17, "pwrite64": 18, "readv": 19,
    "writev": 20, "access": 21, "sched_yield": 24, "mremap": 25, "madvise": 28, "dup": 32, "dup2": 33,
    "nanosleep": 35, "getpid": 39, "socket": 41, "clone": 56, "exit": 60, "fcntl": 72,
    "getcwd": 79, "rename": 82, "unlink": 87, "readlink": 89, "getrlimit": 97, "getrusage": 98,
    "sysinfo": 99, "times": 100, "ptrace": 101, "getuid": 102, "getgid": 104, "geteuid": 107,
    "getegid": 108, "getppid": 110, "sigaltstack": 131, "personality": 135, "pivot_root": 155,
    "prctl": 157, "arch_prctl": 158, "setrlimit": 160, "chroot": 161, "mount": 165, "umount2": 166,
    "swapon": 167, "swapoff": 168, "reboot": 169, "init_module": 175, "delete_module": 176,
    "gettid": 186, "futex": 202, "sched_setaffinity": 203, "sched_getaffinity": 204,
    "getdents64": 217, "set_tid_address": 218, "clock_gettime": 228, "clock_getres": 229,
    "clock_nanosleep": 230, "exit_group": 231, "tgkill": 234, "kexec_load": 246, "add_key": 248,
    "request_key": 249, "keyctl": 250, "openat": 257, "newfstatat": 262, "unlinkat": 263,
    "renameat": 264, "readlinkat": 267, "faccessat": 269, "ppoll": 271, "unshare": 272,
    "set_robust_list": 273, "get_robust_list": 274, "pipe2": 293, "perf_event_open": 298,
    "prlimit64": 302, "open_by_handle_at": 304, "setns": 308, "getcpu": 309, "process_vm_readv": 310,
    "process_vm_writev": 311, "finit_module": 313, "renameat2": 316, "getrandom": 318, "bpf": 321,
    "userfaultfd": 323, "membarrier": 324, "statx": 332, "rseq": 334, "io_uring_setup": 425,
    "io_uring_enter": 426, "io_uring_register": 427, "open_tree": 428, "move_mount": 429,
    "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "clone3": 435,
    "mount_setattr": 442, "kexec_file_load": 320, "faccessat2": 439, "seccomp": 317,
}  # fmt: skip

AUDIT_ARCH_X86_64 = 0xC000003E
X32_SYSCALL_BIT = 0x40000000
# clone(2) flags that make a namespace: CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET
NAMESPACE_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
AF_UNIX = 1
CLONE_THREAD = 0x00010000

# What no sandboxed step needs (STEP_FILTER refuses them; KERNEL_FILTER never allows them).
DENIED = (
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount", "fsopen",
    "fsconfig", "fsmount", "fspick", "mount_setattr", "ptrace", "process_vm_readv", "process_vm_writev",
    "bpf", "add_key", "request_key", "keyctl", "perf_event_open", "userfaultfd", "io_uring_setup",
    "io_uring_enter", "io_uring_register", "init_module", "finit_module", "delete_module", "kexec_load",
    "kexec_file_load", "reboot", "swapon", "swapoff", "open_by_handle_at", "personality",
)  # fmt: skip
# What the C run child does once the kernel is loaded: the kernel's own code, libm, numpy, the OpenMP
# runtime's threads and waits, the result files (traced with strace on an honest run). Not
# sched_setaffinity: the evaluator chooses the CPUs a call runs on (isolated.py `Placement`).
KERNEL_ALLOWED = (
    "read", "write", "close", "fstat", "newfstatat", "statx", "lseek", "openat", "ioctl", "fcntl",
    "mmap", "mprotect", "munmap", "mremap", "brk", "madvise", "rt_sigaction", "rt_sigprocmask",
    "rt_sigreturn", "sigaltstack", "futex", "clone", "set_robust_list", "rseq", "sched_yield",
    "sched_getaffinity", "getpid", "gettid", "getcpu", "clock_gettime",
    "clock_getres", "clock_nanosleep", "nanosleep", "getrusage", "times", "sysinfo", "getrandom",
    "rename", "renameat", "renameat2", "getdents64", "prlimit64", "getrlimit", "membarrier", "exit",
    "exit_group", "tgkill", "clone3", "readlink", "getcwd", "dup",
)  # fmt: skip
# What a timed kernel may not call (CLOCK_FILTER): a kernel that can read the time knows its own age
# (the model can write the date into its source), so it can run honest while new, when its figure is
# set, and slow ever after as the parent of its copies (docs/sandbox.md, "A timed kernel has no
# clock"); and one that reads a clock times its own calls.
CLOCK_CALLS = (
    "clock_gettime", "clock_getres",  # the clocks themselves (reached through libc by address)
    "times", "sysinfo",  # ticks and seconds since boot
    "getrusage",  # the process's own CPU time: a clock of its calls
    "fstat", "newfstatat", "statx",  # a file's times: a FIFO's change with every write to it
    "openat", "readlink", "getdents64",  # /proc and /sys: uptime, the scheduler's clocks, inode counters
)  # fmt: skip
# What the timed kernel may call: the kernel's allow-list less CLOCK_CALLS (no prctl at all: the
# counter stays off), the futex and sleep rules below deciding those two, new code refused (below).
TIMED_KERNEL_ALLOWED = tuple(name for name in KERNEL_ALLOWED if name not in CLOCK_CALLS)

# Classic BPF opcodes
_LD_W_ABS, _JEQ_K, _JSET_K, _JGE_K, _RET_K, _AND_K = 0x20, 0x15, 0x45, 0x35, 0x06, 0x54
_RET_ALLOW, _RET_KILL = 0x7FFF0000, 0x80000000  # SECCOMP_RET_ALLOW, SECCOMP_RET_KILL_PROCESS
_RET_ERRNO = 0x00050000
_OFF_NR, _OFF_ARCH, _OFF_ARG0 = 0, 4, 16  # struct seccomp_data (args[0]: its low 32 bits)


def _arg(index: int, high: bool = False) -> int:
    """Where the low (or high) 32 bits of system-call argument `index` sit in struct seccomp_data."""
    return _OFF_ARG0 + 8 * index + (4 if high else 0)


# prctl options and values the rules below name (linux/prctl.h, linux/seccomp.h, linux/futex.h)
PR_SET_SECCOMP, SECCOMP_MODE_FILTER, PR_SET_TSC, PR_TSC_SIGSEGV = 22, 2, 26, 2
FUTEX_PRIVATE_FLAG, FUTEX_CLOCK_REALTIME = 128, 256
FUTEX_WAIT_BITSET = 9  # its timeout is absolute: glibc's waits pass none
# Futex operations with no timeout or a relative one: WAIT, WAKE, REQUEUE, CMP_REQUEUE, WAKE_OP,
# WAKE_BITSET. The priority-inheritance ones (absolute timeouts) no kernel needs.
FUTEX_RELATIVE_OPS = (0, 1, 3, 4, 5, 10)
TIMER_ABSTIME = 1
PROT_EXEC = 4


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("<HBBI", code, jt, jf, k)


def _errno(value: int) -> int:
    return _RET_ERRNO | (value & 0xFFFF)


Jump = int | str  # a jump's offset, or the label it goes to (`_assemble`)


def _assemble(block: list[tuple[int, Jump, Jump, int] | str]) -> list[bytes]:
    """`block`'s instructions, each jump to a label (a string in the block) made its offset; "next"
    is the first instruction after the block."""
    where: dict[str, int] = {}
    at = 0
    for item in block:
        if isinstance(item, str):
            where[item] = at
        else:
            at += 1
    where["next"] = at
    out: list[bytes] = []
    for item in block:
        if isinstance(item, str):
            continue
        code, jt, jf, k = item
        here = len(out)
        true, false = (j if isinstance(j, int) else where[j] - here - 1 for j in (jt, jf))
        out.append(_insn(code, true, false, k))
    return out


def _prctl_rule() -> list[bytes]:
    """prctl only to turn its own time-stamp counter off or to stack a filter on itself: what the
    isolated protocol's child does once the kernel is loaded (neither gives a kernel anything)."""
    return _assemble([
        (_LD_W_ABS, 0, 0, _OFF_NR),
        (_JEQ_K, 0, "next", NR["prctl"]),
        (_LD_W_ABS, 0, 0, _arg(0)),
        (_JEQ_K, 0, "seccomp", PR_SET_TSC),
        (_LD_W_ABS, 0, 0, _arg(1)),
        (_JEQ_K, "allow", "refuse", PR_TSC_SIGSEGV),
        "seccomp",
        (_JEQ_K, 0, "refuse", PR_SET_SECCOMP),
        (_LD_W_ABS, 0, 0, _arg(1)),
        (_JEQ_K, "allow", "refuse", SECCOMP_MODE_FILTER),
        "allow",
        (_RET_K, 0, 0, _RET_ALLOW),
        "refuse",
        (_RET_K, 0, 0, _errno(errno.EPERM)),
    ])  # fmt: skip


def _futex_rule() -> list[bytes]:
    """futex with no timeout or a relative one: an absolute timeout is a clock (a wait that ends at
    once says the time has passed)."""
    return _assemble([
        (_LD_W_ABS, 0, 0, _OFF_NR),
        (_JEQ_K, 0, "next", NR["futex"]),
        (_LD_W_ABS, 0, 0, _arg(1)),
        (_AND_K, 0, 0, ~(FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME) & 0xFFFFFFFF),
        (_JEQ_K, 0, "relative", FUTEX_WAIT_BITSET),
        (_LD_W_ABS, 0, 0, _arg(3)),  # its timeout's address: none
        (_JEQ_K, 0, "refuse", 0),
        (_LD_W_ABS, 0, 0, _arg(3, high=True)),
        (_JEQ_K, "allow", "refuse", 0),
        "relative",
        *((_JEQ_K, "allow", 0, op) for op in FUTEX_RELATIVE_OPS),
        "refuse",
        (_RET_K, 0, 0, _errno(errno.EPERM)),
        "allow",
        (_RET_K, 0, 0, _RET_ALLOW),
    ])  # fmt: skip


def _no_new_code_rule() -> list[bytes]:
    """mmap and mprotect never executable: a timed kernel writes no code after it is loaded, so the
    instructions admission reads are all it runs (some read the time-stamp counter where the bit that
    turns rdtsc off does not reach: WAITPKG's TPAUSE and UMWAIT compare a deadline with it)."""
    return _assemble([
        (_LD_W_ABS, 0, 0, _OFF_NR),
        (_JEQ_K, "check", 0, NR["mmap"]),
        (_JEQ_K, "check", "next", NR["mprotect"]),
        "check",
        (_LD_W_ABS, 0, 0, _arg(2)),
        (_JSET_K, "refuse", "next", PROT_EXEC),
        "refuse",
        (_RET_K, 0, 0, _errno(errno.EPERM)),
    ])  # fmt: skip


def _clock_nanosleep_rule() -> list[bytes]:
    """clock_nanosleep only for a relative time (glibc's nanosleep): TIMER_ABSTIME compares with a clock."""
    return _assemble([
        (_LD_W_ABS, 0, 0, _OFF_NR),
        (_JEQ_K, 0, "next", NR["clock_nanosleep"]),
        (_LD_W_ABS, 0, 0, _arg(1)),
        (_JSET_K, "refuse", 0, TIMER_ABSTIME),
        (_RET_K, 0, 0, _RET_ALLOW),
        "refuse",
        (_RET_K, 0, 0, _errno(errno.EPERM)),
    ])  # fmt: skip


def compile_filter(
    *,
    allowed: Iterable[str] | None = None,
    denied: Iterable[str] = DENIED,
    threads_only: bool = False,
    rules: Iterable[list[bytes]] = (),
) -> bytes:
    """The BPF program (sock_filter array): with `allowed`, an allow-list (everything else EPERM);
    without, everything but `denied`. Either way clone and clone3 may not make namespaces and a socket
    must be AF_UNIX; with `threads_only`, clone may make only threads of the calling process. Each of
    `rules` decides one call by its arguments before the list does (a block that starts by loading
    the call's number and ends in a return, or falls through to the next)."""
    prog = [
        _insn(_LD_W_ABS, 0, 0, _OFF_ARCH),
        _insn(_JEQ_K, 1, 0, AUDIT_ARCH_X86_64),
        _insn(_RET_K, 0, 0, _RET_KILL),
        _insn(_LD_W_ABS, 0, 0, _OFF_NR),
        _insn(_JGE_K, 0, 1, X32_SYSCALL_BIT),
        _insn(_RET_K, 0, 0, _errno(errno.EPERM)),
        # clone3 passes its flags in memory a filter cannot read: ENOSYS sends glibc back to clone.
        _insn(_JEQ_K, 0, 1, NR["clone3"]),
        _insn(_RET_K, 0, 0, _errno(errno.ENOSYS)),
        # clone with a namespace flag (or, threads_only, without CLONE_THREAD): EPERM; other clones
        # fall through to the list.
        *(
            [
                _insn(_JEQ_K, 0, 5, NR["clone"]),
                _insn(_LD_W_ABS, 0, 0, _OFF_ARG0),
                _insn(_JSET_K, 1, 0, NAMESPACE_FLAGS),
                _insn(_JSET_K, 1, 0, CLONE_THREAD),
                _insn(_RET_K, 0, 0, _errno(errno.EPERM)),
            ]
            if threads_only
            else [
                _insn(_JEQ_K, 0, 4, NR["clone"]),
                _insn(_LD_W_ABS, 0, 0, _OFF_ARG0),
                _insn(_JSET_K, 0, 1, NAMESPACE_FLAGS),
                _insn(_RET_K, 0, 0, _errno(errno.EPERM)),
            ]
        ),
        _insn(_LD_W_ABS, 0, 0, _OFF_NR),
        # socket: AF_UNIX only
        _insn(_JEQ_K, 0, 4, NR["socket"]),
        _insn(_LD_W_ABS, 0, 0, _OFF_ARG0),
        _insn(_JEQ_K, 1, 0, AF_UNIX),
        _insn(_RET_K, 0, 0, _errno(errno.EPERM)),
        _insn(_LD_W_ABS, 0, 0, _OFF_NR),
    ]
    for rule in rules:
        prog += [*rule, _insn(_LD_W_ABS, 0, 0, _OFF_NR)]
    names = sorted(set(allowed) if allowed is not None else set(denied))
    listed = _RET_ALLOW if allowed is not None else _errno(errno.EPERM)
    rest = _errno(errno.EPERM) if allowed is not None else _RET_ALLOW
    for name in names:
        prog += [_insn(_JEQ_K, 0, 1, NR[name]), _insn(_RET_K, 0, 0, listed)]
    prog.append(_insn(_RET_K, 0, 0, rest))
    return b"".join(prog)


STEP_FILTER = compile_filter()
# A kernel may start threads, never processes: a process (even one sharing the kernel's memory,
# clone(CLONE_VM) without CLONE_THREAD) that does the work and is reaped within a call takes its CPU
# time where neither the per-thread clock nor the process's own total sees it (docs/sandbox.md,
# second adversary).
KERNEL_FILTER = compile_filter(allowed=KERNEL_ALLOWED, threads_only=True)
# The isolated protocol's child (serve_loop.c): the same, and prctl only to turn the time-stamp counter
# off or to stack CLOCK_FILTER, which it does once the kernel is loaded.
SERVE_FILTER = compile_filter(allowed=KERNEL_ALLOWED, threads_only=True, rules=[_prctl_rule()])
CLOCK_FILTER = compile_filter(
    allowed=TIMED_KERNEL_ALLOWED,
    threads_only=True,
    rules=[_futex_rule(), _clock_nanosleep_rule(), _no_new_code_rule()],
)
