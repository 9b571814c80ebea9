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
  measured or checked, and sees the harness's argv and environment);
- holds an instruction its target's x86-64 level lacks, in what `objdump -d` decodes of the linked
  `kernel.so`, or calls libmvec's variant for a wider instruction set (`isa_rejections`).
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
# 5: no indirect function (its resolver is load-time code, as a constructor is); 6: no instruction
# beyond the target's x86-64 level, and no libmvec variant of a wider one (`isa_rejections`); 7: no
# rdpru, tpause or umwait encoding at any offset (they read the time, FORBIDDEN_ENCODINGS); 8: no
# writable section with data, named by a symbol or not (a local label hid it from nm)
ADMISSION_VERSION = 8

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
_LIBMVEC = re.compile(r"^_ZGV(?P<isa>[a-zA-Z])[a-zA-Z]*\d+[a-zA-Z]*_(?P<name>\w+)$")
# The x86-64 levels the CPU targets build for (agent/targets.py CPU_LEVELS: `-march=`), lowest first.
# A target is a claim about the machines a measurement stands for: code that uses what its level
# lacks runs here (this host has AVX-512) and would fault on the machines named, and was kept at up
# to 4.1x against the best its level allows (the stop-46 adversary: a `#pragma GCC target`, an
# `__attribute__((target))`, a cpuid dispatch, libmvec's AVX2 variants; results/redteam-stop46).
X86_LEVELS = ("x86-64-v2", "x86-64-v3", "x86-64-v4")
# The lowest level whose code may call a libmvec variant, by its ISA letter (the x86-64 vector
# function ABI: b SSE, c AVX, d AVX2, e AVX-512).
LIBMVEC_LEVEL = {"b": "x86-64-v2", "c": "x86-64-v3", "d": "x86-64-v3", "e": "x86-64-v4"}
# Instructions of extensions no x86-64 level holds (a level's machines need not have them), by the
# start of their mnemonic as objdump prints it: AES, carry-less multiply, SHA, SM3/4 and GFNI in any
# encoding; ADX; RDRAND/RDSEED; the VNNI, IFMA, VBMI, VBMI2, BITALG, VPOPCNTDQ, BF16, VP2INTERSECT
# and Xeon Phi extensions of AVX-512 and their VEX forms; AMX.
BEYOND_EVERY_LEVEL = (
    "aes", "vaes", "pclmul", "vpclmul", "sha1", "sha256", "sha512", "vsha512", "sm3", "sm4", "vsm3", "vsm4",
    "gf2p8", "vgf2p8", "adcx", "adox", "rdrand", "rdseed", "vpdpb", "vpdpw", "vpmadd52", "vpermb", "vpermi2b",
    "vpermt2b", "vpmultishiftqb", "vpcompressb", "vpcompressw", "vpexpandb", "vpexpandw", "vpshld", "vpshrd",
    "vpopcnt", "vpshufbitqmb", "vcvtne", "vdpbf16ps", "vbcstne", "vp2intersect", "v4fmadd", "v4fnmadd",
    "vp4dpw", "vexp2", "vrcp28", "vrsqrt28", "vgatherpf", "vscatterpf", "tile", "tdp", "ldtilecfg",
    "sttilecfg", "tcmm",
)  # fmt: skip
# AVX512-FP16's arithmetic on halves (F16C's two conversions, in x86-64-v3, excepted).
_FP16 = re.compile(r"^v[a-z0-9]*(ph|sh)[xyz]?$")
_F16C = frozenset({"vcvtps2ph"})
# Instructions of x86-64-v3 in legacy encodings (its AVX, AVX2, FMA, F16C, BMI1 and BMI2 are all VEX).
# Not tzcnt: it is `rep bsf`, which older processors run as bsf, and gcc emits it for x86-64-v2.
_V3_LEGACY = frozenset({"lzcnt", "movbe"})
_LEGACY_PREFIXES = frozenset({0xF0, 0xF2, 0xF3, 0x2E, 0x36, 0x3E, 0x26, 0x64, 0x65, 0x66, 0x67})
_PREFIX_MNEMONICS = frozenset({"rep", "repz", "repnz", "repe", "repne", "lock", "notrack", "bnd", "data16",
                               "addr32", "cs", "ds", "es", "fs", "gs", "ss"})  # fmt: skip
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
    # Instructions that read the time where turning the time-stamp counter off does not reach (a
    # timed kernel has no clock, docs/sandbox.md): AMD's RDPRU (MPERF and APERF), WAITPKG's TPAUSE and
    # UMWAIT (a deadline compared with the counter; register forms, ModRM f0-f7).
    b"\x0f\x01\xfd": "`rdpru` instruction (a clock)",
    **{bytes([0x66, 0x0F, 0xAE, modrm]): "`tpause` instruction (a clock)" for modrm in range(0xF0, 0xF8)},
    **{bytes([0xF2, 0x0F, 0xAE, modrm]): "`umwait` instruction (a clock)" for modrm in range(0xF0, 0xF8)},
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
_SHF_ALLOC_WRITE = 0x1 | 0x2  # SHF_WRITE | SHF_ALLOC: memory the loaded object may write


@dataclass(frozen=True)
class Rejection:
    """Why an artifact may not run: one sentence naming the symbol or construct, and the fix.
    `encoding`: a FORBIDDEN_ENCODINGS hit, which the link's layout may have made (`LAYOUT_PAD`)."""

    reason: str
    encoding: bool = False


def allowed_symbol(name: str, level: str = X86_LEVELS[-1]) -> bool:
    """True for the undefined symbols a kernel built for x86-64 `level` may call (unversioned name,
    as `nm` prints it)."""
    name = name.split("@", 1)[0]
    if name in ALLOWED_EXACT or name.startswith(ALLOWED_PREFIXES):
        return True
    vector = _LIBMVEC.match(name)
    if not vector or vector["name"] not in ALLOWED_EXACT or vector["isa"] not in LIBMVEC_LEVEL:
        return False
    return _rank(LIBMVEC_LEVEL[vector["isa"]]) <= _rank(level)


def _rank(level: str) -> int:
    return X86_LEVELS.index(level)


def instruction_level(code: bytes, mnemonic: str) -> str | None:
    """The lowest x86-64 level that has the instruction encoded as `code` (objdump's `mnemonic` for
    it); None for one of an extension no level has. By encoding: EVEX (opcode byte 62) is AVX-512,
    VEX (C4, C5) AVX to BMI2; both are those instructions in 64-bit mode, where the legacy opcodes
    they reuse are invalid."""
    if mnemonic.startswith(BEYOND_EVERY_LEVEL) or (_FP16.match(mnemonic) and mnemonic not in _F16C):
        return None
    k = 0
    while k < len(code) and code[k] in _LEGACY_PREFIXES:
        k += 1
    opcode = code[k] if k < len(code) else 0
    if opcode == 0x8F and mnemonic.startswith("v"):  # AMD's XOP: in no level
        return None
    if opcode == 0x62:
        return "x86-64-v4"
    if opcode in (0xC4, 0xC5) or mnemonic in _V3_LEGACY:
        return "x86-64-v3"
    return X86_LEVELS[0]


def isa_rejections(disassembly: str, level: str) -> list[Rejection]:
    """Rejections of the instructions in `objdump -d --insn-width=16`'s `disassembly` that the x86-64
    `level` lacks: one naming the first instruction of the highest level needed, one naming the
    first of an extension no level has. What a linear disassembly decodes: bytes reached only by a
    jump into the middle of another instruction are not seen (docs/sandbox.md, "What this does not
    guarantee")."""
    highest: tuple[str, str] | None = None  # (level, the first instruction that needs it)
    beyond = ""
    decoded = 0
    for line in disassembly.splitlines():
        fields = line.split("\t")
        if len(fields) < 3 or not fields[0].rstrip().endswith(":"):
            continue
        words = [w for w in fields[2].split() if w not in _PREFIX_MNEMONICS]
        try:
            code = bytes.fromhex(fields[1])
        except ValueError:
            continue
        decoded += 1
        if not words or words[0] == "(bad)":
            continue
        needs = instruction_level(code, words[0])
        where = f"`{words[0]}` at {fields[0].strip().rstrip(':')}"
        if needs is None:
            beyond = beyond or where
        elif _rank(needs) > _rank(level) and (highest is None or _rank(needs) > _rank(highest[0])):
            highest = (needs, where)
    if not decoded:  # a linked object always has code: an empty listing is a failed one, not a clean one
        return [
            Rejection(
                "its code could not be disassembled (objdump printed no instruction): it is not admitted unread"
            )
        ]
    found = []
    if highest is not None:
        found.append(
            Rejection(
                f"uses {highest[1]}, an instruction of {highest[0]}, beyond the target's {level} (a `#pragma "
                "GCC target`, `__attribute__((target))` or intrinsics of a wider instruction set): a "
                f"measurement on {level} must stand for every {level} machine; build it for a target of "
                "that level instead"
            )
        )
    if beyond:
        found.append(
            Rejection(
                f"uses {beyond}, of an instruction-set extension no x86-64 level has: a measurement on "
                f"{level} must stand for every {level} machine; remove the intrinsics or `target` "
                "attribute that asks for it"
            )
        )
    return found


def check_object(
    nm_output: str, kernel_object: bytes, shared_object: bytes, disassembly: str, isa: str | None
) -> list[Rejection]:
    """Rejections of a kernel built for the target's `isa` from `nm kernel.o`, the bytes of
    `kernel.o`, those of the linked `kernel.so` and its `objdump -d --insn-width=16` (empty:
    admitted). An `isa` that is not one of X86_LEVELS is held to no level."""
    level = isa if isa in X86_LEVELS else X86_LEVELS[-1]
    found: list[Rejection] = []
    named_writable = False
    for line in nm_output.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] in ("U", "w"):
            if not allowed_symbol(parts[1], level):
                wider = _LIBMVEC.match(parts[1].split("@", 1)[0]) and allowed_symbol(parts[1])
                found.append(
                    Rejection(
                        f"calls `{parts[1]}`, libmvec's variant for a wider instruction set than the target's "
                        f"{level}: call the one of its level (`_ZGVb...` on x86-64-v2)"
                        if wider
                        else f"calls `{parts[1]}`, which is not an allowed external symbol: a kernel may call "
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
            named_writable = True
            name = re.sub(r"\.\d+$", "", parts[2])  # gcc names a function's static `x` as `x.0`
            found.append(
                Rejection(
                    f"defines writable global or static data `{name}` (nm type {parts[1]}): a kernel may "
                    "not keep state between calls (caches, counters); use locals or `static const` tables"
                )
            )
    try:
        sections = elf_sections(kernel_object)
        for name, _, _, _ in sections:
            if name.startswith(LOAD_TIME_SECTIONS):
                found.append(
                    Rejection(
                        f"has a `{name}` section (a constructor or destructor): a kernel's code may run "
                        "only when `kernel` is called; remove `__attribute__((constructor))`"
                    )
                )
                break
        # The same rule as nm's writable symbols, for data no symbol names (a local assembler label:
        # `label_state.c`, the fifteenth adversary's grid of dates).
        writable = [
            (name, size)
            for name, flags, size, _ in sections
            if flags & _SHF_ALLOC_WRITE == _SHF_ALLOC_WRITE and size
        ]
        if writable and not named_writable:
            name, size = writable[0]
            found.append(
                Rejection(
                    f"has writable data: {size} bytes in `{name}` that no symbol names (a local label): a "
                    "kernel may not keep state between calls (caches, counters); use locals or `static "
                    "const` tables"
                )
            )
        found += scan_encodings(shared_object)
        found += isa_rejections(disassembly, level) if isa in X86_LEVELS else []
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


def elf_sections(data: bytes) -> list[tuple[str, int, int, bytes]]:
    """(name, flags, size, contents) of each section of a 64-bit little-endian ELF file (a section
    that takes no room in the file, `.bss`, has its size and no contents); ValueError when the file
    is not one (it came out of a sandbox that ran model-written input through the compiler)."""
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
        out.append((label, flags, size, b"" if kind == _SHT_NOBITS else data[offset : offset + size]))
    return out


def scan_encodings(elf: bytes) -> list[Rejection]:
    """A rejection for each FORBIDDEN_ENCODINGS sequence found at any byte offset of an executable
    section (the first place of each kind is named)."""
    found: list[Rejection] = []
    for what_bytes, what in FORBIDDEN_ENCODINGS.items():
        for name, flags, _, contents in elf_sections(elf):
            at = contents.find(what_bytes) if flags & _SHF_EXECINSTR else -1
            if at >= 0:
                found.append(
                    Rejection(
                        f"holds the bytes {what_bytes[:2].hex(' ')}... of a {what} at offset {at:#x} of "
                        f"{name} (inline assembly, or hidden inside another instruction): a kernel may not "
                        "make system calls, probe the counter tool or read a clock; remove the asm (if one of the code's "
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
