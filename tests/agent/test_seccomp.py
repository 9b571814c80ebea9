"""The kernel's filters decide some calls by their arguments (agent/backends/seccomp.py): the clock
filter lets a futex or a sleep through only without a date to wait for and maps nothing executable,
and the isolated protocol's first filter lets prctl through only to stack a filter (or turn the
time-stamp counter off). Each call is made for real in a process with the filters installed, as the
isolated protocol's child has them."""

from __future__ import annotations

import errno
import json
import subprocess
import sys

from kernelgraph.agent.backends.seccomp import CLOCK_FILTER, KERNEL_FILTER, SERVE_FILTER

# Runs in a fresh interpreter: installs the first filter, tries prctl, stacks the second, tries the
# rest, prints {call: errno (0: allowed)}. Everything it needs is imported before the filters.
_PROBE = r"""
import ctypes, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
page = libc.mmap(None, 4096, 3, 0x22, -1, 0)  # a page of its own to make executable
NR = {"futex": 202, "clock_nanosleep": 230, "clock_gettime": 228, "openat": 257, "prctl": 157, "mmap": 9,
      "mprotect": 10}
class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
def install(program):
    buf = ctypes.create_string_buffer(program, len(program))
    prog = SockFprog(len(program) // 8, ctypes.cast(buf, ctypes.c_void_p))
    return libc.prctl(22, 2, ctypes.byref(prog), 0, 0)
def call(nr, *args):
    ctypes.set_errno(0)
    result = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])
    return 0 if result >= 0 else ctypes.get_errno()
kernel_filter, clock_filter = bytes.fromhex(sys.argv[1]), bytes.fromhex(sys.argv[2])
word = ctypes.c_int(0)
timeout = (ctypes.c_long * 2)(0, 1000)  # 1 us
deadline = (ctypes.c_long * 2)(1, 0)  # 1970
address = ctypes.addressof(word)
seen = {}
assert libc.prctl(38, 1, 0, 0, 0) == 0 and install(kernel_filter) == 0
seen["prctl: the time-stamp counter back on"] = call(NR["prctl"], 26, 1, 0, 0, 0)
seen["prctl: no_new_privs again"] = call(NR["prctl"], 38, 1, 0, 0, 0)
seen["prctl: a filter stacked"] = 0 if install(clock_filter) == 0 else ctypes.get_errno()
seen["futex: wake"] = call(NR["futex"], address, 1 | 128, 1, 0, 0, 0)
seen["futex: wait, a relative timeout"] = call(NR["futex"], address, 0 | 128, 1, ctypes.addressof(timeout), 0, 0)
seen["futex: wait for a bitset, no timeout"] = call(NR["futex"], address, 9 | 128 | 256, 1, 0, 0, -1)
seen["futex: wait for a bitset until a date"] = call(NR["futex"], address, 9 | 128 | 256, 0,
                                                     ctypes.addressof(deadline), 0, -1)
seen["futex: lock with priority inheritance"] = call(NR["futex"], address, 6 | 128, 0, 0, 0, 0)
seen["clock_nanosleep: for a while"] = call(NR["clock_nanosleep"], 1, 0, ctypes.addressof(timeout), 0)
seen["clock_nanosleep: until a date"] = call(NR["clock_nanosleep"], 0, 1, ctypes.addressof(deadline), 0)
seen["clock_gettime"] = call(NR["clock_gettime"], 1, ctypes.addressof(timeout))
seen["openat"] = call(NR["openat"], -100, ctypes.c_char_p(b"/proc/uptime"), 0, 0)
seen["mmap: read-write"] = call(NR["mmap"], 0, 4096, 3, 0x22, -1, 0)
seen["mmap: executable"] = call(NR["mmap"], 0, 4096, 5, 0x22, -1, 0)
seen["mprotect: executable"] = call(NR["mprotect"], page, 4096, 5)
seen["prctl: after the clock filter"] = call(NR["prctl"], 26, 2, 0, 0, 0)
os.write(1, json.dumps(seen).encode())
"""


def _calls_under(first: bytes, second: bytes) -> dict[str, int]:
    done = subprocess.run([sys.executable, "-I", "-c", _PROBE, first.hex(), second.hex()],
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def test_the_filters_decide_futex_sleep_prctl_and_mappings_by_their_arguments() -> None:
    seen = _calls_under(SERVE_FILTER, CLOCK_FILTER)
    assert seen == {
        "prctl: the time-stamp counter back on": errno.EPERM,
        "prctl: no_new_privs again": errno.EPERM,
        "prctl: a filter stacked": 0,
        "futex: wake": 0,
        "futex: wait, a relative timeout": errno.EAGAIN,  # let through: the word was not the value
        "futex: wait for a bitset, no timeout": errno.EAGAIN,
        "futex: wait for a bitset until a date": errno.EPERM,
        "futex: lock with priority inheritance": errno.EPERM,
        "clock_nanosleep: for a while": 0,
        "clock_nanosleep: until a date": errno.EPERM,
        "clock_gettime": errno.EPERM,
        "openat": errno.EPERM,
        "mmap: read-write": 0,
        "mmap: executable": errno.EPERM,
        "mprotect: executable": errno.EPERM,
        "prctl: after the clock filter": errno.EPERM,
    }, seen
    # The other children's filter lets no prctl through: their kernels may not stack filters.
    assert _calls_under(KERNEL_FILTER, CLOCK_FILTER)["prctl: a filter stacked"] == errno.EPERM
