"""Static admission checks on what a model wrote, before any of it runs (docs/sandbox.md).

C: the kernel's own object file (`kernel.o`, not the linked library, whose runtime stubs hold some
writable data) is read with `nm` and `objdump` inside the sandbox, and rejected when it
- calls an undefined symbol outside `allowed_symbol` (libm, memset/memcpy/memmove, the malloc family,
  the OpenMP runtime, compiler support): no I/O, no processes, no sockets, no dlopen, no time;
- holds writable global or static data (.data, .bss, COMMON, TLS): a kernel must not keep state
  between calls, which is how caches keyed on inputs and call counters cheat a timer;
- holds a system-call encoding (`syscall`, `sysenter`, `int $0x80`) or valgrind's client-request
  preamble at ANY byte offset of an executable section of the linked `kernel.so` (not only at the
  instruction starts a disassembler decodes: a jump into the middle of another instruction runs the
  bytes there), or a constructor/destructor section (code that runs at load, before any call is
  measured or checked, and sees the harness's argv and environment).
Triton: the Python source's imports and a few escape hatches are checked on its syntax tree; the
sandbox, not this check, is the boundary (Python has too many ways around any list).
Each rejection is one sentence a model can act on: which symbol or construct, and why.
"""

from __future__ import annotations

import ast
import re
import struct
from dataclasses import dataclass

# 3: a forbidden sequence the link's layout made is linked away (LAYOUT_PAD); 4: no executable stack;
# 5: no indirect function (its resolver is load-time code, as a constructor is)
ADMISSION_VERSION = 5

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
# Byte sequences a kernel's code may hold at no offset: each reaches the OS, or the counter tool,
# without any symbol. (A 32-bit far call into compat mode still needs one of the first three.)
FORBIDDEN_ENCODINGS: dict[bytes, str] = {
    b"\x0f\x05": "`syscall` instruction",
    b"\x0f\x34": "`sysenter` instruction",
    b"\xcd\x80": "`int $0x80` instruction",
    # rol $3,%rdi; rol $13,%rdi; rol $61,%rdi; rol $51,%rdi: how code asks whether valgrind runs it
    bytes.fromhex("48c1c70348c1c70d48c1c73d48c1c733"): "valgrind client request",
}
# A forbidden sequence can also be the linker's doing: a RIP-relative displacement from the code to
# its constants of 0x50f is the bytes 0f 05 (an honest layernorm, unrolled 8 times at -march=native,
# loads a float at 0x50f(%rip)). An object whose only rejections are such hits is linked once more
# behind this padding (its code, hot and cold, 48 bytes later, its constants about 4 KiB later: a
# displacement from the code to the PLT changes in its low byte, one to its constants in the two low
# bytes), and the padded link is admitted, and is what runs, if its scan is clean. Bytes the code
# itself holds (an immediate, an instruction, a jump within it) move with it and are found again. The
# pad says its stack is not executable (an assembled object that does not is linked with one that is).
LAYOUT_PAD = """\
.section .rodata
.zero 4240
.text
.zero 48
.section .text.unlikely,"ax",@progbits
.zero 48
.section .note.GNU-stack,"",@progbits
"""
# Sections whose code the loader runs before (or after) any call of `kernel`.
LOAD_TIME_SECTIONS = (".init_array", ".fini_array", ".ctors", ".dtors", ".preinit_array", ".init", ".fini")
_SHF_EXECINSTR, _SHT_NOBITS = 0x4, 8


@dataclass(frozen=True)
class Rejection:
    """Why an artifact may not run: one sentence naming the symbol or construct, and the fix.
    `encoding`: a FORBIDDEN_ENCODINGS hit, which the link's layout may have made (`LAYOUT_PAD`)."""

    reason: str
    encoding: bool = False


def allowed_symbol(name: str) -> bool:
    """True for the undefined symbols a kernel may call (unversioned name, as `nm` prints it)."""
    name = name.split("@", 1)[0]
    if name in ALLOWED_EXACT or name.startswith(ALLOWED_PREFIXES):
        return True
    vector = _LIBMVEC.match(name)
    return bool(vector and vector["name"] in ALLOWED_EXACT)


def check_object(nm_output: str, kernel_object: bytes, shared_object: bytes) -> list[Rejection]:
    """Rejections of a kernel from `nm kernel.o`, the bytes of `kernel.o` and those of the linked
    `kernel.so` (empty: admitted)."""
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
        elif len(parts) >= 3 and parts[1] == "i":  # the stop-41 adversary (results/redteam-stop41b)
            found.append(
                Rejection(
                    f"defines an indirect function `{parts[2]}` (nm type i, `__attribute__((ifunc))`): the "
                    "loader runs its resolver when the object is loaded, before any call, as it would a "
                    "constructor; a kernel's code may run only when `kernel` is called"
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
    try:
        for name, _, _ in elf_sections(kernel_object):
            if name.startswith(LOAD_TIME_SECTIONS):
                found.append(
                    Rejection(
                        f"has a `{name}` section (a constructor or destructor): a kernel's code may run "
                        "only when `kernel` is called; remove `__attribute__((constructor))`"
                    )
                )
                break
        found += scan_encodings(shared_object)
        if stack_executable(shared_object):
            found.append(
                Rejection(
                    "asks for an executable stack (a GNU C nested function's trampoline, or an object "
                    "without a `.note.GNU-stack`): code written at run time could then be run; remove "
                    "the nested function"
                )
            )
    except ValueError as exc:
        found.append(Rejection(f"the built object is not a readable ELF file ({exc})"))
    return found


_PT_GNU_STACK, _PF_X = 0x6474E551, 0x1


def stack_executable(data: bytes) -> bool:
    """Whether a 64-bit little-endian ELF object's PT_GNU_STACK asks for an executable stack (no such
    header: the loader's default on x86-64, executable)."""
    if data[:6] != b"\x7fELF\x02\x01":
        raise ValueError("not a 64-bit little-endian ELF")
    try:
        (phoff,) = struct.unpack_from("<Q", data, 0x20)
        phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
        for k in range(phnum):
            kind, flags = struct.unpack_from("<II", data, phoff + k * phentsize)
            if kind == _PT_GNU_STACK:
                return bool(flags & _PF_X)
    except struct.error as exc:
        raise ValueError(f"malformed program headers: {exc}") from None
    return True


def elf_sections(data: bytes) -> list[tuple[str, int, bytes]]:
    """(name, flags, contents) of each section of a 64-bit little-endian ELF file; ValueError when
    the file is not one (it came out of a sandbox that ran model-written input through the compiler)."""
    if data[:6] != b"\x7fELF\x02\x01":
        raise ValueError("not a 64-bit little-endian ELF")
    try:
        (shoff,) = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
        headers = []
        for k in range(shnum):
            name, kind, flags, _, offset, size = struct.unpack_from("<IIQQQQ", data, shoff + k * shentsize)
            if kind != _SHT_NOBITS and offset + size > len(data):
                raise ValueError(f"section {k} runs past the end of the file")
            headers.append((name, kind, flags, offset, size))
        strtab = headers[shstrndx]
        names = data[strtab[3] : strtab[3] + strtab[4]]
    except (struct.error, IndexError) as exc:
        raise ValueError(f"malformed section headers: {exc}") from None
    out = []
    for name, kind, flags, offset, size in headers:
        label = names[name : names.find(b"\0", name)].decode(errors="replace") if name < len(names) else "?"
        out.append((label, flags, b"" if kind == _SHT_NOBITS else data[offset : offset + size]))
    return out


def scan_encodings(elf: bytes) -> list[Rejection]:
    """A rejection for each FORBIDDEN_ENCODINGS sequence found at any byte offset of an executable
    section (the first place of each kind is named)."""
    found: list[Rejection] = []
    for what_bytes, what in FORBIDDEN_ENCODINGS.items():
        for name, flags, contents in elf_sections(elf):
            at = contents.find(what_bytes) if flags & _SHF_EXECINSTR else -1
            if at >= 0:
                found.append(
                    Rejection(
                        f"holds the bytes {what_bytes[:2].hex(' ')}... of a {what} at offset {at:#x} of "
                        f"{name} (inline assembly, or hidden inside another instruction): a kernel may not "
                        "make system calls or probe the counter tool; remove the asm (if one of the code's "
                        "own constants encodes them, change it)",
                        encoding=True,
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
