"""Static admission checks on what a model wrote, before any of it runs (docs/sandbox.md).

C: the kernel's own object file (`kernel.o`, not the linked library, whose runtime stubs hold some
writable data) is read with `nm` and `objdump` inside the sandbox, and rejected when it
- calls an undefined symbol outside `allowed_symbol` (libm, memset/memcpy/memmove, the malloc family,
  the OpenMP runtime, compiler support): no I/O, no processes, no sockets, no dlopen, no time;
- holds writable global or static data (.data, .bss, COMMON, TLS): a kernel must not keep state
  between calls, which is how caches keyed on inputs and call counters cheat a timer;
- contains a system-call instruction (inline assembly reaching the kernel without libc).
Triton: the Python source's imports and a few escape hatches are checked on its syntax tree; the
sandbox, not this check, is the boundary (Python has too many ways around any list).
Each rejection is one sentence a model can act on: which symbol or construct, and why.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

ADMISSION_VERSION = 1

_MATH = [
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "atan2",
    "sinh",
    "cosh",
    "tanh",
    "asinh",
    "acosh",
    "atanh",
    "exp",
    "exp2",
    "exp10",
    "expm1",
    "log",
    "log2",
    "log10",
    "log1p",
    "logb",
    "pow",
    "sqrt",
    "cbrt",
    "hypot",
    "fabs",
    "fmax",
    "fmin",
    "fmod",
    "fma",
    "floor",
    "ceil",
    "trunc",
    "round",
    "lround",
    "llround",
    "rint",
    "lrint",
    "llrint",
    "nearbyint",
    "copysign",
    "erf",
    "erfc",
    "tgamma",
    "lgamma",
    "ldexp",
    "frexp",
    "modf",
    "remainder",
    "scalbn",
    "ilogb",
    "nextafter",
    "fdim",
    "sincos",
]
_MEMORY = [
    "memset",
    "memcpy",
    "memmove",
    "memcmp",
    "malloc",
    "calloc",
    "realloc",
    "free",
    "aligned_alloc",
    "posix_memalign",
    "__memset_chk",
    "__memcpy_chk",
    "__memmove_chk",
]
_COMPILER = ("__stack_chk_fail", "_GLOBAL_OFFSET_TABLE_", "__cxa_finalize", "_ITM_registerTMCloneTable",
             "_ITM_deregisterTMCloneTable", "__gmon_start__")  # fmt: skip
ALLOWED_EXACT = frozenset(
    [*_MATH, *(m + "f" for m in _MATH), *(m + "l" for m in _MATH), *_MEMORY, *_COMPILER]
)
ALLOWED_PREFIXES = ("GOMP_", "omp_", "__kmpc_")  # the OpenMP runtime (libgomp)
# libmvec's vector variants of the math functions: _ZGV<isa><mask><lanes><args>_<name>
_LIBMVEC = re.compile(r"^_ZGV[a-zA-Z]+\d+[a-zA-Z]*_(?P<name>\w+)$")
# nm symbol types of writable storage: data, bss, common, small data/bss, unique globals.
WRITABLE_TYPES = frozenset("DdBbCGgSsu")
SYSCALL_INSTRUCTIONS = re.compile(r"\s(syscall|sysenter|int\s+\$0x80)\b")


@dataclass(frozen=True)
class Rejection:
    """Why an artifact may not run: one sentence naming the symbol or construct, and the fix."""

    reason: str


def allowed_symbol(name: str) -> bool:
    """True for the undefined symbols a kernel may call (unversioned name, as `nm` prints it)."""
    name = name.split("@", 1)[0]
    if name in ALLOWED_EXACT or name.startswith(ALLOWED_PREFIXES):
        return True
    vector = _LIBMVEC.match(name)
    return bool(vector and vector["name"] in ALLOWED_EXACT)


def check_object(nm_output: str, disassembly: str) -> list[Rejection]:
    """Rejections of a kernel object from `nm kernel.o` and `objdump -d kernel.o` (empty: admitted)."""
    found: list[Rejection] = []
    for line in nm_output.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] in ("U", "w"):
            if not allowed_symbol(parts[1]):
                found.append(
                    Rejection(
                        f"calls `{parts[1]}`, which is not an allowed external symbol: a kernel may call "
                        "only libm, memset/memcpy/memmove, malloc/free and the OpenMP runtime; compute "
                        "the result from the arguments alone"
                    )
                )
        elif len(parts) >= 3 and parts[1] in WRITABLE_TYPES:
            name = re.sub(r"\.\d+$", "", parts[2])  # gcc names a function's static `x` as `x.0`
            found.append(
                Rejection(
                    f"defines writable global or static data `{name}` (nm type {parts[1]}): a kernel may "
                    "not keep state between calls (caches, counters); use locals or `static const` tables"
                )
            )
    for line in disassembly.splitlines():
        match = SYSCALL_INSTRUCTIONS.search(line)
        if match:
            found.append(
                Rejection(
                    f"contains a `{match.group(1)}` instruction (inline assembly): a kernel may not make "
                    "system calls; remove the asm"
                )
            )
            break
    return found


# ---------------------------------------------------------------------------------------- Triton

ALLOWED_IMPORTS = frozenset({"triton", "triton.language", "torch", "math", "numpy", "typing", "functools"})
FORBIDDEN_CALLS = frozenset(
    {"open", "exec", "eval", "compile", "__import__", "getattr", "setattr", "delattr", "globals",
     "locals", "vars", "input", "breakpoint", "memoryview"}
)  # fmt: skip


def check_python_source(source: str) -> list[Rejection]:
    """Rejections of a Triton source: imports outside ALLOWED_IMPORTS, dynamic-code builtins, dunders.

    A syntax error is not a rejection: the worker reports it as a located compile error.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found: list[Rejection] = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        modules: list[str] = []
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            modules = [node.module or "."]
        for module in modules:
            if module not in ALLOWED_IMPORTS:
                found.append(
                    Rejection(
                        f"line {line}: imports `{module}`; a Triton kernel may import only "
                        f"{', '.join(sorted(ALLOWED_IMPORTS))}"
                    )
                )
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FORBIDDEN_CALLS:
            found.append(
                Rejection(
                    f"line {line}: calls `{node.func.id}()`, which a kernel may not use "
                    "(no files, no dynamic code, no reflection)"
                )
            )
        if isinstance(node, ast.Attribute) and node.attr.startswith("__") and node.attr.endswith("__"):
            found.append(
                Rejection(
                    f"line {line}: accesses `{node.attr}`; dunder attributes are how sandboxed "
                    "Python escapes, and a kernel does not need them"
                )
            )
    return found


def describe(rejections: list[Rejection]) -> str:
    """The diagnosis of a rejected kernel: every reason, most important first, de-duplicated."""
    seen: list[str] = []
    for r in rejections:
        if r.reason not in seen:
            seen.append(r.reason)
    return "rejected before running: " + "; ".join(seen)
