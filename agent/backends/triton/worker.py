"""The Triton worker: the child process that loads a rendered module and compiles, runs or times it.

Launched by the backend (backend.py) as `python -m kernelgraph.agent.backends.triton.worker REQUEST
RESULT_DIR` inside the bubblewrap sandbox, with TRITON_INTERPRET set or not before Triton is
imported (hence a fresh process per request). It executes model-written Python, so it answers
only through `write_result` (JSON + npz, never a pickle the parent would load).
"""

from __future__ import annotations

import os
import pickle
import re
import subprocess
import sys
import time
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from kernelgraph.agent.backends._child import enough_trials, variant_factors, write_result
from kernelgraph.agent.backends.triton.ncu import ncu_counters

# The module path the backend (and Nsight Compute, for one more run) launches with `python -m`.
WORKER_MODULE = "kernelgraph.agent.backends.triton.worker"
_RESOURCE = re.compile(r"REG:(\d+)\s+STACK:(\d+)\s+SHARED:(\d+)\s+LOCAL:(\d+)")


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
    """GPU timing (`timed_launches` on "cuda") plus Nsight Compute when installed."""
    import torch

    candidate, diag = _load_or_diagnose(request["source"], request["tmp"])
    if diag is not None:
        return {"error": diag["message"]}
    mods = [candidate]
    if request.get("parent_source"):
        mods.append(_load_module(request["parent_source"], request["tmp"], "kg_parent"))
    device = "cuda" if request.get("device", "cuda") == "cuda" else "cpu"
    result = timed_launches(mods, request, device)
    result["versions"] = {"torch": torch.__version__, "cuda": str(torch.version.cuda)}
    if request.get("ncu") and device == "cuda":
        result["ncu"] = ncu_counters(request, [sys.executable, "-m", WORKER_MODULE])
    return result


def timed_launches(mods: Sequence[Any], request: Mapping[str, Any], device: str) -> dict[str, Any]:
    """Interleaved timing (A B A B ...) by the C backend's rules: every launch, warm-up included, reads
    its own variant of the inputs (`_child.write_variant`, the same factors the parent rebuilds) written
    into the same buffers; every output is refilled with NaN before every launch; the candidate's
    outputs and input digests after EVERY timed launch are kept for the parent to verify
    (sandbox.verify_timed_calls). On "cuda" the L2 is flushed (256 MB written) before each launch and
    device events time it; on "cpu" (Triton's interpreter, for tests) perf_counter does."""
    import torch

    from kernelgraph.agent.evaluator import digest

    warmup, max_trials = int(request["warmup"]), int(request["max_trials"])
    base = {k: torch.from_numpy(np.array(v, copy=True)).to(device) for k, v in request["inputs"].items()}
    size = max(int(t.numel()) for t in base.values())
    factors = torch.from_numpy(variant_factors(size, warmup + max_trials, int(request["variant_seed"])))
    factors = factors.to(device)
    buffers = {k: torch.empty_like(t) for k, t in base.items()}
    outs = [
        {
            k: torch.empty(tuple(s), dtype=torch.float32, device=device)
            for k, s in request["output_shapes"].items()
        }
        for _ in mods
    ]
    flush = (
        torch.empty(256 * 1024 * 1024 // 4, dtype=torch.float32, device=device) if device == "cuda" else None
    )

    def prepare(call: int) -> None:
        for name, t in base.items():
            if t.dtype.is_floating_point:  # float32 x float32, one rounding: what write_variant computes
                torch.mul(t, factors[call : call + t.numel()].view(t.shape), out=buffers[name])
            else:
                buffers[name].copy_(t)

    def launch(k: int) -> float:
        for t in outs[k].values():
            t.fill_(float("nan"))
        if flush is None:
            t0 = time.perf_counter_ns()
            mods[k].launch(**buffers, **outs[k])
            return float(time.perf_counter_ns() - t0)
        flush.zero_()
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        mods[k].launch(**buffers, **outs[k])
        end.record()
        end.synchronize()
        return float(begin.elapsed_time(end) * 1e6)

    for call in range(warmup):
        prepare(call)
        for k in range(len(mods)):
            launch(k)
    times: list[list[float]] = [[] for _ in mods]
    kept: dict[int, Any] = {}
    start = time.perf_counter()
    while True:
        call = warmup + len(times[0])
        prepare(call)
        for k in range(len(mods)):  # A B A B: drift hits both equally
            times[k].append(launch(k))
            if k == 0:  # the candidate's own outputs, right after its launch
                kept[call] = {"outputs": [t.cpu().numpy().copy() for t in outs[0].values()],
                              "digests": [digest(b.cpu().numpy()) for b in buffers.values()]}  # fmt: skip
        if enough_trials(times[0], time.perf_counter() - start, request):  # the C backend's rule
            break
    cand = np.array(times[0])
    return {
        "median_ns": float(np.median(cand)),
        "iqr_ns": float(np.subtract(*np.percentile(cand, [75, 25]))),
        "trials": len(cand),
        "parent_median_ns": float(np.median(times[1])) if len(mods) > 1 else None,
        "timed_calls": kept,
    }


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


def main(argv: Sequence[str]) -> int:
    request = pickle.loads(Path(argv[0]).read_bytes())
    ops = {"compile": _worker_compile, "run": _worker_run, "profile": _worker_profile, "once": _worker_once}
    try:
        response = ops[request["op"]](request)
    except Exception as exc:
        response = {"error": f"{type(exc).__name__}: {exc}", "log": traceback.format_exc()[-4000:]}
    write_result(argv[1], response)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
