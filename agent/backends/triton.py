"""Triton backend for NVIDIA targets: AOT compile and static metrics anywhere, interpreter correctness
on CPU, timing and counters only where a matching GPU is present. See docs/triton-backend.md.

A rendered source (agent/tasks/triton) is a module with `@triton.jit` kernels, an `AOT` list that
says how to compile each kernel ahead of time, and `launch(**tensors)`. Every step that executes
that module runs in a spawned worker process (`python -m agent.backends.triton REQUEST RESPONSE`)
inside the bubblewrap sandbox (agent/backends/bubblewrap.py) with a timeout, so a crash, hang or
compiler abort becomes an Outcome, never an exception here, and the module's Python (arbitrary code
a model wrote) reaches no file, secret or socket of this machine. Before anything runs, the source's
imports are checked (agent/backends/admission.py).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import os
import pickle
import re
import shutil
import subprocess
import sys
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kernelgraph.agent.backends import admission
from kernelgraph.agent.backends._child import RESULT_ARRAYS, RESULT_JSON, decode_result, write_result
from kernelgraph.agent.backends.bubblewrap import (
    Mount,
    Rlimits,
    Sandbox,
    UntrustedFileError,
    python_executable,
    python_mounts,
    python_path,
    read_untrusted,
    scratch_dir,
)
from kernelgraph.agent.evaluator import DEFAULT_SEEDS, EVALUATOR_VERSION, impossibility
from kernelgraph.agent.results import CheckResult, CompileResult, Diagnostic, Outcome, ProfileResult
from kernelgraph.agent.tasks.base import Arrays, Task
from kernelgraph.client.settings import get_settings
from kernelgraph.client.signature import CounterName, CounterSource

CACHE_VERSION = 2  # 2: built in the sandbox after admission
# torch and Triton reserve large virtual ranges; CUDA reserves far more, so the GPU path lifts the cap.
WORKER_LIMITS = Rlimits(address_space_bytes=64 << 30, cpu_seconds=1800, open_files=4096)
GPU_WORKER_LIMITS = dataclasses.replace(WORKER_LIMITS, address_space_bytes=1 << 46)
_RESOURCE = re.compile(r"REG:(\d+)\s+STACK:(\d+)\s+SHARED:(\d+)\s+LOCAL:(\d+)")


# --------------------------------------------------------------------------- architecture limits


@dataclass(frozen=True)
class ArchLimits:
    """Per-SM resource limits from the CUDA C Programming Guide, table "Technical Specifications"."""

    sm: int
    regs_per_sm: int = 65536
    max_regs_per_thread: int = 255
    max_warps_per_sm: int = 64
    max_blocks_per_sm: int = 32
    max_threads_per_block: int = 1024
    smem_per_sm: int = 228 * 1024
    max_smem_per_block: int = 227 * 1024
    reg_alloc_unit: int = 256  # registers are allocated per warp in units of 256
    smem_alloc_unit: int = 128


ARCH_LIMITS: Mapping[int, ArchLimits] = {
    80: ArchLimits(80, smem_per_sm=164 * 1024, max_smem_per_block=163 * 1024),
    90: ArchLimits(90),
    100: ArchLimits(100),
}


def theoretical_occupancy(limits: ArchLimits, regs: int, warps: int, smem: int) -> tuple[float, int, str]:
    """(occupancy %, resident blocks per SM, the limiting resource), as the CUDA occupancy calculator."""
    per_warp_regs = math.ceil(max(regs, 1) * 32 / limits.reg_alloc_unit) * limits.reg_alloc_unit
    by = {
        "warps": limits.max_warps_per_sm // warps,
        "blocks": limits.max_blocks_per_sm,
        "registers": (limits.regs_per_sm // per_warp_regs) // warps,
    }
    if smem > 0:
        by["shared_memory"] = limits.smem_per_sm // (
            math.ceil(smem / limits.smem_alloc_unit) * limits.smem_alloc_unit
        )
    limiter = min(by, key=lambda k: by[k])
    blocks = max(0, by[limiter])
    return 100.0 * blocks * warps / limits.max_warps_per_sm, blocks, limiter


def target_arch(target: Any) -> int:
    """The SM number (80, 90, 100) of a target: a Target with `sm`/`arch`/`name`, or a name like cuda-sm90."""
    for attr in ("sm", "arch", "compute_capability"):
        value = getattr(target, attr, None)
        if isinstance(value, int):
            return value
        if isinstance(value, str) and value.isdigit():
            return int(value)
    name = target if isinstance(target, str) else str(getattr(target, "name", target))
    match = re.search(r"sm_?(\d+)", name)
    if not match:
        raise ValueError(f"not a CUDA target: {name!r} (expected e.g. cuda-sm90)")
    arch = int(match.group(1))
    if arch not in ARCH_LIMITS:
        raise ValueError(f"unsupported CUDA arch sm{arch}; known: {sorted(ARCH_LIMITS)}")
    return arch


# --------------------------------------------------------------------------- the backend


class TritonBackend:
    """The Backend protocol for Triton kernels on NVIDIA targets (cuda-sm80, cuda-sm90, cuda-sm100)."""

    name = "triton"

    def __init__(
        self,
        cache_dir: Path | str | None = None,
        timeout_s: float = 300.0,
        device: str | None = None,
        trials: int = 50,
        sandbox: Sandbox | None = None,
    ) -> None:
        """`device` forces "interpreter" or "cuda" for check(); None picks cuda only on a matching GPU."""
        self.sandbox = sandbox or Sandbox()
        self.cache_dir = Path(cache_dir) if cache_dir else _default_cache_dir()
        self.timeout_s = timeout_s
        self.device = device
        self.trials = trials

    # ---- compile
    def compile(self, task: Task, source: str, target: Any) -> CompileResult:
        """AOT-compile every kernel in the source's AOT list for the target; cached by content hash."""
        try:
            arch = target_arch(target)
        except ValueError as exc:
            return CompileResult(ok=False, diagnostics=(Diagnostic(str(exc)),), log=str(exc))
        rejections = self._admit(source)
        if rejections:
            reason = admission.describe(rejections)
            return CompileResult(ok=False, diagnostics=(Diagnostic(reason),), log=reason, rejected=True)
        key = hashlib.sha256(f"{CACHE_VERSION}\0{_triton_version()}\0{arch}\0{source}".encode()).hexdigest()[
            :32
        ]
        entry = self.cache_dir / key
        cached = entry / "result.json"
        if cached.exists():
            return _compile_result(json.loads(cached.read_text()), entry)
        entry.mkdir(parents=True, exist_ok=True)
        response = _run_worker(
            {"op": "compile", "source": source, "arch": arch},
            timeout_s=self.timeout_s,
            interpret=False,
            sandbox=self.sandbox,
            keep=entry,  # the worker's cubin/ptx files are copied here
        )
        if "error" in response and "ok" not in response:  # the worker itself died or timed out
            return CompileResult(
                ok=False, diagnostics=(Diagnostic(response["error"]),), log=response.get("log", "")
            )
        response["static_metrics"] = _aggregate(response.get("kernels", []), arch)
        if response["ok"] and response["static_metrics"].get("fits", 1.0) == 0.0:
            response["ok"] = False
            response["diagnostics"] = [{"message": _no_fit(response)}]
        cached.write_text(json.dumps(response, indent=1, sort_keys=True))
        return _compile_result(response, entry)

    # ---- check
    def check(
        self, task: Task, source: str, target: Any, seeds: Sequence[int] = DEFAULT_SEEDS
    ) -> CheckResult:
        """Honest correctness through the shared evaluator (agent/evaluator.py): several input sets
        copied into the same input buffers, fresh NaN-filled outputs, inputs digested after the run.

        Runs on the GPU only when one matching the target is present (or `device="cuda"`), else in
        Triton's interpreter on CPU with the task's small shapes.
        """
        from kernelgraph.agent import evaluator

        rejections = self._admit(source)
        if rejections:
            return CheckResult(Outcome.REJECTED, admission.describe(rejections))
        device = self._device_for(target)

        def runner(
            input_sets: Sequence[Arrays], specs: Sequence[evaluator.OutputSpec]
        ) -> evaluator.RunReport:
            request = {
                "op": "run",
                "source": source,
                "inputs": list(input_sets),
                "outputs": [(s.name, s.shape, s.dtype) for s in specs],
                "device": device,
            }
            response = _run_worker(
                request,
                timeout_s=self.timeout_s,
                interpret=device == "interpreter",
                sandbox=self._for(device),
            )
            if response.get("timeout"):
                return evaluator.RunReport(evaluator.RunStatus.TIMEOUT, message=response["error"])
            if "error" in response:
                return evaluator.RunReport(evaluator.RunStatus.CRASHED, message=str(response["error"]))
            try:  # the worker ran model-written Python: check what it returned before judging it
                outputs = tuple(
                    {s.name: evaluator.conforming(out[s.name], s) for s in specs}
                    for out in response["outputs"]
                )
                digests = tuple({str(k): str(v) for k, v in d.items()} for d in response["digests"])
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                return evaluator.RunReport(
                    evaluator.RunStatus.CRASHED, message=f"malformed worker result: {exc}"
                )
            return evaluator.RunReport(
                evaluator.RunStatus.OK, outputs=outputs, input_digests=digests, extra={"device": device}
            )

        try:
            return evaluator.check(task, runner, seeds, small=device == "interpreter")
        except ValueError as exc:  # the task's own input generator is broken: a harness problem
            return CheckResult(Outcome.CRASHED, f"input generation failed: {exc}")

    # ---- profile
    def profile(
        self, task: Task, source: str, target: Any, parent_source: str | None = None
    ) -> ProfileResult:
        """Runtime counters on a matching GPU; otherwise the compiled artifact's static metrics.

        Convention without a GPU: `static=True`, `counter_source="nvidia_static"`, `trials=0` and
        `median_ns`/`iqr_ns` NaN; the counters hold the static metrics plus the task's flops/bytes.
        A runtime is never invented.
        """
        compiled = self.compile(task, source, target)
        if compiled.rejected:
            return ProfileResult(math.nan, math.nan, 0, {}, CounterSource.NVIDIA_STATIC, outcome=Outcome.REJECTED,
                                 reason=compiled.diagnosis, evaluator_version=EVALUATOR_VERSION,
                                 sandbox=self.sandbox.label)  # fmt: skip
        versions = {"triton": _triton_version()}
        counters: dict[str, float] = dict(compiled.static_metrics)
        try:
            full = task.make_inputs(0, False)
            counters[CounterName.FLOPS], counters[CounterName.BYTES] = (
                float(task.flops(full)),
                float(task.bytes_moved(full)),
            )
        except Exception:  # roofline counts are optional; a task without them still profiles
            full = None
        arch = target_arch(target)
        if not compiled.ok or _local_cuda_arch() != arch or full is None:
            if not compiled.ok:
                versions["error"] = compiled.diagnosis[:500]
            return ProfileResult(
                math.nan, math.nan, 0, counters, CounterSource.NVIDIA_STATIC, static=True, tool_versions=versions,
                evaluator_version=EVALUATOR_VERSION, sandbox=self.sandbox.label,
            )  # fmt: skip
        response = _run_worker(
            {
                "op": "profile",
                "source": source,
                "parent_source": parent_source,
                "inputs": full,
                "output_shapes": dict(task.output_shapes(full)),
                "trials": self.trials,
                "ncu": shutil.which("ncu") is not None,
            },
            timeout_s=self.timeout_s,
            interpret=False,
            sandbox=self._for("cuda"),
        )
        if "error" in response:
            versions["error"] = response["error"][:500]
            return ProfileResult(
                math.nan, math.nan, 0, counters, CounterSource.NVIDIA_STATIC, static=True, tool_versions=versions,
                evaluator_version=EVALUATOR_VERSION, sandbox=self.sandbox.label,
            )  # fmt: skip
        impossible = impossibility(
            task, full, float(response["median_ns"]),
            peak_gflops=getattr(target, "peak_gflops", None), peak_gbps=getattr(target, "peak_gbps", None),
        )  # fmt: skip
        if impossible:  # never rescued: a correct output does not make an impossible time real
            return ProfileResult(math.nan, math.nan, 0, counters, CounterSource.NVIDIA_TIMING, outcome=Outcome.IMPLAUSIBLE,
                                 reason=f"implausible timing: {impossible}", tool_versions=versions,
                                 evaluator_version=EVALUATOR_VERSION, sandbox=self.sandbox.label)  # fmt: skip
        counters[CounterName.TIME_NS] = response["median_ns"]
        counters.update(response.get("ncu", {}))
        versions.update(response.get("versions", {}))
        return ProfileResult(
            median_ns=response["median_ns"],
            iqr_ns=response["iqr_ns"],
            trials=response["trials"],
            counters=counters,
            counter_source=CounterSource.NVIDIA_NCU if response.get("ncu") else CounterSource.NVIDIA_TIMING,
            parent_median_ns=response.get("parent_median_ns"),
            tool_versions=versions,
            evaluator_version=EVALUATOR_VERSION,
            sandbox=self.sandbox.label,
        )

    def _admit(self, source: str) -> list[admission.Rejection]:
        """The admission checks on the source (a seam: the red-team tests also run past them)."""
        return admission.check_python_source(source)

    def _for(self, device: str) -> Sandbox:
        """The sandbox of a worker on `device`: the GPU path also binds the NVIDIA device nodes."""
        return dataclasses.replace(self.sandbox, gpu=device == "cuda")

    def _device_for(self, target: Any) -> str:
        if self.device:
            return self.device
        try:
            arch = target_arch(target)
        except ValueError:
            return "interpreter"
        return "cuda" if _local_cuda_arch() == arch else "interpreter"


# --------------------------------------------------------------------------- helpers (parent side)


def _default_cache_dir() -> Path:
    return get_settings().cache_path / "triton"


@functools.cache
def _triton_version() -> str:
    from importlib.metadata import version

    return version("triton")


@functools.cache
def _local_cuda_arch() -> int | None:
    """The SM number of GPU 0, probed once in a subprocess (no CUDA initialisation in this process)."""
    if not (shutil.which("nvidia-smi") or os.path.exists("/dev/nvidia0")):
        return None
    probe = "import torch; c = torch.cuda.get_device_capability(0) if torch.cuda.is_available() else None; print(c)"
    try:
        out = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r"\((\d+), (\d+)\)", out)
    return int(match.group(1)) * 10 + int(match.group(2)) if match else None


def _no_fit(response: Mapping[str, Any]) -> str:
    return "; ".join(k.get("fit_error", "") for k in response.get("kernels", []) if k.get("fit_error"))


def _aggregate(kernels: Sequence[dict[str, Any]], arch: int) -> dict[str, float]:
    """Static metrics of the whole variant: the worst kernel per resource, the first kernel's launch shape."""
    if not kernels:
        return {}
    limits = ARCH_LIMITS[arch]
    occupancies = []
    fits = 1.0
    for k in kernels:
        pct, blocks, limiter = theoretical_occupancy(
            limits, k["registers"], k["num_warps"], k["shared_bytes"]
        )
        k["theoretical_occupancy_pct"], k["blocks_per_sm"], k["occupancy_limiter"] = pct, blocks, limiter
        occupancies.append(pct)
        if k["shared_bytes"] > limits.max_smem_per_block or k["registers"] > limits.max_regs_per_thread:
            fits = 0.0
            k["fit_error"] = (
                f"{k['name']}: out of resources on sm_{arch}: shared memory {k['shared_bytes']} B "
                f"(limit {limits.max_smem_per_block} B), registers {k['registers']} (limit {limits.max_regs_per_thread})"
            )
    first = kernels[0]
    return {
        "registers_per_thread": float(max(k["registers"] for k in kernels)),
        "spill_bytes": float(max(k["spill_bytes"] for k in kernels)),
        "shared_mem_bytes": float(max(k["shared_bytes"] for k in kernels)),
        "num_warps": float(first["num_warps"]),
        "num_stages": float(first["num_stages"]),
        "threads_per_block": float(32 * first["num_warps"]),
        "theoretical_occupancy_pct": float(min(occupancies)),
        "blocks_per_sm": float(min(k["blocks_per_sm"] for k in kernels)),
        "num_kernels": float(len(kernels)),
        "fits": fits,
    }


def _compile_result(response: Mapping[str, Any], entry: Path) -> CompileResult:
    diags = tuple(
        Diagnostic(d["message"], d.get("line"), d.get("column"), d.get("severity", "error"))
        for d in response.get("diagnostics", [])
    )
    log = response.get("log", "")
    if response.get("kernels"):
        log += "\n".join(
            f"{k['name']}: regs={k['registers']} spill={k['spill_bytes']} smem={k['shared_bytes']} "
            f"warps={k['num_warps']} stages={k['num_stages']} occupancy={k.get('theoretical_occupancy_pct', 0):.1f}% "
            f"({k.get('occupancy_limiter', '?')})"
            for k in response["kernels"]
        )
    return CompileResult(
        ok=bool(response.get("ok")),
        artifact=str(entry) if response.get("ok") else None,
        diagnostics=diags,
        log=log,
        static_metrics=dict(response.get("static_metrics", {})),
    )


def _run_worker(
    request: dict[str, Any], timeout_s: float, interpret: bool, sandbox: Sandbox, keep: Path | None = None
) -> dict[str, Any]:
    """Run one request in a fresh, sandboxed `python -m kernelgraph.agent.backends.triton` process; errors come
    back as data. Files the worker writes under `out/` are copied to `keep` (the compile cache)."""
    env = {
        "PYTHONPATH": python_path(),
        "PYTHONDONTWRITEBYTECODE": "1",
        "TRITON_DEFAULT_FP_FUSION": "1",
        "TRITON_CACHE_DIR": "/tmp/triton-cache",  # the sandbox's private tmpfs
    }
    if interpret:
        env["TRITON_INTERPRET"] = "1"  # must be set before triton is imported: hence a fresh process
    with scratch_dir("kg-triton-") as tmp:
        req = tmp / "request.pkl"  # pickled by us, for the worker: the trusted direction
        request = {**request, "tmp": str(tmp), "out_dir": str(tmp / "out")}
        req.write_bytes(pickle.dumps(request))
        done = sandbox.run(
            [python_executable(), "-s", "-m", "kernelgraph.agent.backends.triton", str(req), str(tmp)],
            mounts=[Mount(tmp, writable=True), *python_mounts()],
            env=env,
            cwd=tmp,
            limits=GPU_WORKER_LIMITS if sandbox.gpu else WORKER_LIMITS,
            timeout_s=timeout_s,
        )
        if done.timed_out:
            return {"error": f"timed out after {timeout_s:.0f} s", "timeout": True}
        if not (tmp / RESULT_JSON).exists():
            tail = (done.stderr or done.stdout)[-2000:]
            return {"error": f"worker exited with status {done.returncode}: {tail}", "log": tail}
        # Never unpickle what the worker wrote, never follow a link it planted: it ran model code.
        try:
            result = decode_result(read_untrusted(tmp / RESULT_JSON), read_untrusted(tmp / RESULT_ARRAYS))
            out = tmp / "out"
            if keep is not None and out.is_dir() and not out.is_symlink():
                for produced in out.iterdir():
                    (keep / produced.name).write_bytes(read_untrusted(produced, max_bytes=256 << 20))
        except (UntrustedFileError, ValueError, KeyError, TypeError) as exc:
            return {"error": f"the worker left an unreadable result: {exc}"}
        if not isinstance(result, dict):
            return {"error": "the worker left a malformed result"}
        return result


# --------------------------------------------------------------------------- worker (child process)


def _load_module(source: str, tmp: str, name: str = "kg_kernel") -> Any:
    """Import the source from a real file so Triton's inspect-based parsing and line numbers work."""
    import importlib.util

    path = Path(tmp) / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _located(exc: BaseException, filename: str) -> dict[str, Any]:
    """A diagnostic at the deepest traceback frame inside the rendered source."""
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == filename:
            line = frame.lineno
    return {"message": f"{type(exc).__name__}: {exc}".strip(), "line": line, "column": None}


def _load_or_diagnose(source: str, tmp: str) -> tuple[Any, dict[str, Any] | None]:
    try:
        return _load_module(source, tmp), None
    except SyntaxError as exc:
        return None, {"message": f"SyntaxError: {exc.msg}", "line": exc.lineno, "column": exc.offset}
    except Exception as exc:
        return None, _located(exc, str(Path(tmp) / "kg_kernel.py"))


def _compilation_diagnostic(exc: Exception, module: Any) -> dict[str, Any]:
    """Map a Triton CompilationError's function-relative node position to a line of the file."""
    node = getattr(exc, "node", None)
    rel = getattr(node, "lineno", None)
    message = str(getattr(exc, "error_message", None) or exc).strip() or type(exc).__name__
    cause = exc.__cause__
    if cause is not None and str(cause) and str(cause) not in message:
        message = f"{message} ({type(cause).__name__}: {cause})"
    line = None
    if rel is not None:
        for value in vars(module).values():
            if getattr(value, "src", None) == getattr(exc, "src", object()) and hasattr(
                value, "def_file_line_number"
            ):
                line = int(value.def_file_line_number) + int(rel) - 1
                break
    column = int(getattr(node, "col_offset", 0)) + 1 if line is not None else None
    return {"message": f"{type(exc).__name__}: {message}", "line": line, "column": column}


def _resource_usage(cubin: Path, ptx: Path, arch: int) -> tuple[dict[str, int], str]:
    """REG/STACK/SHARED/LOCAL from cuobjdump on the cubin; ptxas -v on the PTX as a fallback."""
    import triton

    bindir = Path(triton.__file__).parent / "backends" / "nvidia" / "bin"
    try:
        out = subprocess.run(
            [str(bindir / "cuobjdump"), "--dump-resource-usage", str(cubin)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        match = _RESOURCE.search(out.stdout)
        if match:
            reg, stack, shared, local = (int(g) for g in match.groups())
            return {"registers": reg, "stack": stack, "static_shared": shared, "local": local}, "cuobjdump"
    except (OSError, subprocess.TimeoutExpired):
        pass
    for ptxas in ("ptxas", "ptxas-blackwell"):  # the plain ptxas can be older than the PTX version
        suffix = "a" if arch >= 90 else ""
        try:
            out = subprocess.run(
                [str(bindir / ptxas), "-v", f"--gpu-name=sm_{arch}{suffix}", str(ptx), "-o", os.devnull],
                capture_output=True,
                text=True,
                timeout=120,
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        regs = re.search(r"Used (\d+) registers", out.stderr)
        if out.returncode == 0 and regs:
            spill = re.search(r"(\d+) bytes spill stores", out.stderr)
            smem = re.search(r"(\d+) bytes smem", out.stderr)
            return {
                "registers": int(regs.group(1)),
                "stack": 0,
                "static_shared": int(smem.group(1)) if smem else 0,
                "local": int(spill.group(1)) if spill else 0,
            }, ptxas
    return {"registers": 0, "stack": 0, "static_shared": 0, "local": 0}, "unavailable"


def _worker_compile(request: Mapping[str, Any]) -> dict[str, Any]:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.compiler.errors import CompilationError

    module, diag = _load_or_diagnose(request["source"], request["tmp"])
    if diag is not None:
        return {"ok": False, "diagnostics": [diag], "log": diag["message"]}
    specs = getattr(module, "AOT", None)
    if not isinstance(specs, list) or not specs:
        return {
            "ok": False,
            "diagnostics": [{"message": "the source defines no AOT list of kernels to compile"}],
        }
    arch, out_dir = int(request["arch"]), Path(request["out_dir"])
    out_dir.mkdir(parents=True, exist_ok=True)
    kernels: list[dict[str, Any]] = []
    for spec in specs:
        fn = getattr(module, spec.get("kernel", ""), None)
        if fn is None or not hasattr(fn, "arg_names"):
            msg = f"AOT names {spec.get('kernel')!r}, which is not a @triton.jit function of the source"
            return {"ok": False, "diagnostics": [{"message": msg}]}
        warps, stages = int(spec.get("num_warps", 4)), int(spec.get("num_stages", 3))
        try:
            src = ASTSource(fn, dict(spec["signature"]), constexprs=dict(spec.get("constexprs", {})))
            compiled = triton.compile(
                src, target=GPUTarget("cuda", arch, 32), options={"num_warps": warps, "num_stages": stages}
            )
        except CompilationError as exc:
            diag = _compilation_diagnostic(exc, module)
            return {"ok": False, "diagnostics": [diag], "log": str(exc)}
        except Exception as exc:  # ptxas errors, LLVM failures, bad signatures
            text = f"{type(exc).__name__}: {exc}"
            return {
                "ok": False,
                "diagnostics": [{"message": text[:4000]}],
                "log": traceback.format_exc()[-4000:],
            }
        name = spec["kernel"]
        cubin, ptx = out_dir / f"{name}.cubin", out_dir / f"{name}.ptx"
        cubin.write_bytes(compiled.asm["cubin"])
        ptx.write_text(compiled.asm["ptx"])
        usage, tool = _resource_usage(cubin, ptx, arch)
        n_regs, n_spills = getattr(compiled, "n_regs", None), getattr(compiled, "n_spills", None)
        dynamic = int(compiled.metadata.shared)
        kernels.append(
            {
                "name": name,
                "registers": int(n_regs) if n_regs else usage["registers"],
                "spill_bytes": int(n_spills) if n_spills else usage["local"],
                "stack_bytes": usage["stack"],
                "dynamic_shared_bytes": dynamic,
                "static_shared_bytes": usage["static_shared"],
                "shared_bytes": dynamic + usage["static_shared"],
                "num_warps": int(compiled.metadata.num_warps),
                "num_stages": int(compiled.metadata.num_stages),
                "resource_tool": tool,
            }
        )
    return {"ok": True, "diagnostics": [], "kernels": kernels, "log": ""}


def _worker_run(request: Mapping[str, Any]) -> dict[str, Any]:
    """The evaluator's runner contract: same input buffers for every set, fresh NaN outputs per set."""
    module, diag = _load_or_diagnose(request["source"], request["tmp"])
    if diag is not None:
        return {"error": f"source failed to load: {diag['message']} (line {diag['line']})"}
    import torch

    from kernelgraph.agent.evaluator import OutputSpec, digest, fresh_output

    device = "cuda" if request["device"] == "cuda" else "cpu"
    specs = [OutputSpec(name, tuple(shape), dtype) for name, shape, dtype in request["outputs"]]
    buffers: dict[str, Any] = {}
    outputs, digests = [], []
    for k, inputs in enumerate(request["inputs"]):
        for name, value in inputs.items():  # copied into the same buffers: pointer caches go stale
            if name not in buffers:
                buffers[name] = torch.empty(
                    value.shape, dtype=getattr(torch, str(value.dtype)), device=device
                )
            buffers[name].copy_(torch.from_numpy(np.ascontiguousarray(value)))
        outs = {s.name: torch.from_numpy(fresh_output(s)).to(device) for s in specs}
        try:
            module.launch(**buffers, **outs)
            if device == "cuda":
                torch.cuda.synchronize()
        except Exception as exc:
            where = _located(exc, str(Path(request["tmp"]) / "kg_kernel.py"))
            return {"error": f"input set {k}: {where['message'][:2000]} (line {where['line']})"}
        outputs.append({name: t.cpu().numpy().copy() for name, t in outs.items()})
        digests.append({name: digest(buffers[name].cpu().numpy()) for name in inputs})
    return {"outputs": outputs, "digests": digests}


def _worker_profile(request: Mapping[str, Any]) -> dict[str, Any]:
    """GPU timing: L2 flushed by writing 256 MB before every trial, candidate and parent interleaved."""
    import torch

    candidate, diag = _load_or_diagnose(request["source"], request["tmp"])
    if diag is not None:
        return {"error": diag["message"]}
    parent = None
    if request.get("parent_source"):
        parent = _load_module(request["parent_source"], request["tmp"], "kg_parent")
    inputs = {k: torch.from_numpy(np.array(v, copy=True)).cuda() for k, v in request["inputs"].items()}
    outputs = {
        k: torch.empty(tuple(s), dtype=torch.float32, device="cuda")
        for k, s in request["output_shapes"].items()
    }
    flush = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.float32, device="cuda")
    mods = [candidate] + ([parent] if parent is not None else [])
    for mod in mods:  # warm-up compiles and loads the kernels
        for _ in range(3):
            mod.launch(**inputs, **outputs)
    torch.cuda.synchronize()
    times: list[list[float]] = [[] for _ in mods]
    for _ in range(int(request["trials"])):
        for i, mod in enumerate(mods):  # A B A B: drift hits both equally
            flush.zero_()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            mod.launch(**inputs, **outputs)
            end.record()
            end.synchronize()
            times[i].append(start.elapsed_time(end) * 1e6)
    cand = np.array(times[0])
    result: dict[str, Any] = {
        "median_ns": float(np.median(cand)),
        "iqr_ns": float(np.subtract(*np.percentile(cand, [75, 25]))),
        "trials": len(cand),
        "parent_median_ns": float(np.median(times[1])) if parent is not None else None,
        "versions": {"torch": torch.__version__, "cuda": str(torch.version.cuda)},
    }
    if request.get("ncu"):
        result["ncu"] = _ncu_counters(request)
    return result


NCU_METRICS = {
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": "sm_throughput_pct",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": "dram_throughput_pct",
    "l1tex__t_sector_hit_rate.pct": "l1_hit_rate_pct",
    "lts__t_sector_hit_rate.pct": "l2_hit_rate_pct",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "achieved_occupancy_pct",
}


def _ncu_counters(request: Mapping[str, Any]) -> dict[str, float]:
    """Run the candidate once under Nsight Compute and average each metric over its kernels."""
    tmp = Path(request["tmp"])
    once, once_out = tmp / "once.pkl", tmp / "once-out"
    once.write_bytes(pickle.dumps({**request, "op": "once"}))
    once_out.mkdir(exist_ok=True)
    cmd = [
        "ncu",
        "--csv",
        "--metrics",
        ",".join(NCU_METRICS),
        sys.executable,
        "-m",
        "kernelgraph.agent.backends.triton",
    ]
    try:
        proc = subprocess.run([*cmd, str(once), str(once_out)], capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    values: dict[str, list[float]] = {}
    for line in proc.stdout.splitlines():
        cells = [c.strip('"') for c in line.split('","')]
        if len(cells) >= 3 and cells[-3] in NCU_METRICS:
            try:
                values.setdefault(NCU_METRICS[cells[-3]], []).append(float(cells[-1].replace(",", "")))
            except ValueError:
                continue
    return {k: float(np.mean(v)) for k, v in values.items()}


def _worker_once(request: Mapping[str, Any]) -> dict[str, Any]:
    import torch

    module = _load_module(request["source"], request["tmp"], "kg_once")
    inputs = {k: torch.from_numpy(np.array(v, copy=True)).cuda() for k, v in request["inputs"].items()}
    outputs = {
        k: torch.empty(tuple(s), dtype=torch.float32, device="cuda")
        for k, s in request["output_shapes"].items()
    }
    module.launch(**inputs, **outputs)
    torch.cuda.synchronize()
    return {}


def _worker_main(argv: Sequence[str]) -> int:
    request = pickle.loads(Path(argv[0]).read_bytes())
    ops = {"compile": _worker_compile, "run": _worker_run, "profile": _worker_profile, "once": _worker_once}
    try:
        response = ops[request["op"]](request)
    except Exception as exc:
        response = {"error": f"{type(exc).__name__}: {exc}", "log": traceback.format_exc()[-4000:]}
    write_result(argv[1], response)
    return 0


if __name__ == "__main__":
    sys.exit(_worker_main(sys.argv[1:]))
