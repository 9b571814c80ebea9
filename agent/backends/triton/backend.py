"""The Triton backend for NVIDIA targets: AOT compile and static metrics anywhere, interpreter
correctness on CPU, timing and counters only where a matching GPU is present. See docs/triton-backend.md.

A rendered source (agent/tasks/triton) is a module with `@triton.jit` kernels, an `AOT` list that
says how to compile each kernel ahead of time, and `launch(**tensors)`. Every step that executes
that module runs in a spawned worker process (worker.py, `python -m
kernelgraph.agent.backends.triton.worker REQUEST RESULT_DIR`) inside the bubblewrap sandbox
(agent/backends/bubblewrap.py) with a timeout, so a crash, hang or compiler abort becomes an Outcome,
never an exception here, and the module's Python (arbitrary code a model wrote) reaches no file,
secret or socket of this machine. Before anything runs, the source's imports are checked
(agent/backends/admission.py). The occupancy model is occupancy.py; Nsight Compute parsing, ncu.py.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kernelgraph.agent.backends import admission
from kernelgraph.agent.backends._child import RESULT_JSON
from kernelgraph.agent.backends.bubblewrap import (
    Rlimits,
    Sandbox,
    UntrustedFileError,
    read_untrusted,
    scratch_dir,
)
from kernelgraph.agent.backends.sandbox import read_child_result, run_python_module, verify_timed_calls
from kernelgraph.agent.backends.timing import TimingPlan, judge_timing
from kernelgraph.agent.backends.triton.occupancy import no_fit, static_metrics, target_arch
from kernelgraph.agent.backends.triton.worker import WORKER_MODULE
from kernelgraph.agent.evaluator import DEFAULT_SEEDS, EVALUATOR_VERSION, REVERIFY_SEEDS
from kernelgraph.agent.results import CheckResult, CompileResult, Diagnostic, Outcome, ProfileResult
from kernelgraph.agent.tasks.base import Arrays, Task
from kernelgraph.core.settings import get_settings
from kernelgraph.core.signature import CounterName, CounterSource

CACHE_VERSION = 2  # 2: built in the sandbox after admission
# torch and Triton reserve large virtual ranges; CUDA reserves far more, so the GPU path lifts the cap.
WORKER_LIMITS = Rlimits(address_space_bytes=64 << 30, cpu_seconds=1800, open_files=4096)
GPU_WORKER_LIMITS = dataclasses.replace(WORKER_LIMITS, address_space_bytes=1 << 46)


class TritonBackend:
    """The Backend protocol for Triton kernels on NVIDIA targets (cuda-sm80, cuda-sm90, cuda-sm100)."""

    name = "triton"

    def __init__(
        self,
        cache_dir: Path | str | None = None,
        timeout_s: float = 300.0,
        device: str | None = None,
        timing: TimingPlan | None = None,
        sandbox: Sandbox | None = None,
    ) -> None:
        """`device` forces "interpreter" or "cuda" for check(); None picks cuda only on a matching GPU.
        `timing` is the policy shared with the C backend (agent/backends/timing.py)."""
        self.sandbox = sandbox or Sandbox()
        self.cache_dir = Path(cache_dir) if cache_dir else _default_cache_dir()
        self.timeout_s = timeout_s
        self.device = device
        self.timing = timing or TimingPlan()

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
        response["static_metrics"] = static_metrics(response.get("kernels", []), arch)
        if response["ok"] and response["static_metrics"].get("fits", 1.0) == 0.0:
            response["ok"] = False
            response["diagnostics"] = [{"message": no_fit(response)}]
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
        self, task: Task, source: str, target: Any, parent_source: str | None = None,
        reference_source: str | None = None,
    ) -> ProfileResult:  # fmt: skip
        """Runtime counters on a matching GPU; otherwise the compiled artifact's static metrics.

        Convention without a GPU: `static=True`, `counter_source="nvidia_static"`, `trials=0` and
        `median_ns`/`iqr_ns` NaN; the counters hold the static metrics plus the task's flops/bytes.
        A runtime is never invented. `reference_source` is not timed: a GPU comparison here times
        two kernels (the loop then confirms against it in a comparison of its own).
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
            counters[CounterName.FLOPS] = float(task.flops(full))
            counters[CounterName.BYTES] = float(task.bytes_moved(full))
        except Exception:  # roofline counts are optional; a task without them still profiles
            full = None
        arch = target_arch(target)
        if not compiled.ok or local_cuda_arch() != arch or full is None:
            if not compiled.ok:
                versions["error"] = compiled.diagnosis[:500]
            return ProfileResult(
                math.nan, math.nan, 0, counters, CounterSource.NVIDIA_STATIC, static=True, tool_versions=versions,
                evaluator_version=EVALUATOR_VERSION, sandbox=self.sandbox.label,
            )  # fmt: skip
        response, timed = self.time_launches(task, source, parent_source, full, "cuda")
        if "error" in response:
            versions["error"] = response["error"][:500]
            return ProfileResult(
                math.nan, math.nan, 0, counters, CounterSource.NVIDIA_STATIC, static=True, tool_versions=versions,
                evaluator_version=EVALUATOR_VERSION, sandbox=self.sandbox.label,
            )  # fmt: skip
        if not timed.correct:
            return ProfileResult(math.nan, math.nan, 0, counters, CounterSource.NVIDIA_TIMING, outcome=timed.outcome,
                                 reason=f"while timed: {timed.reason}", tool_versions=versions,
                                 evaluator_version=EVALUATOR_VERSION, sandbox=self.sandbox.label)  # fmt: skip
        judged = judge_timing(
            task, full, float(response["median_ns"]), response.get("parent_median_ns"),
            peak_gflops=getattr(target, "peak_gflops", None), peak_gbps=getattr(target, "max_gbps", None),
            reverify=lambda: self.check(task, source, target, seeds=REVERIFY_SEEDS),
        )  # fmt: skip
        if judged.outcome is not None:
            return ProfileResult(math.nan, math.nan, 0, counters, CounterSource.NVIDIA_TIMING, outcome=judged.outcome,
                                 reason=judged.reason, tool_versions=versions,
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
            reverified=judged.reverified,
            reason=judged.reason,
            evaluator_version=EVALUATOR_VERSION,
            sandbox=self.sandbox.label,
        )

    def time_launches(
        self, task: Task, source: str, parent_source: str | None, inputs: Arrays, device: str
    ) -> tuple[dict[str, Any], CheckResult]:
        """Time the source (and the parent, interleaved) on `inputs` in a worker on `device` ("cuda", or
        "interpreter" for tests without a GPU); (the worker's response, the verdict on EVERY timed
        launch's outputs against the reference of that launch's own input variant)."""
        plan = self.timing.request()
        seed = random.SystemRandom().randrange(1 << 31)  # drawn here, per run
        request: dict[str, Any] = {
            "op": "profile",
            "source": source,
            "parent_source": parent_source,
            "inputs": inputs,
            "output_shapes": dict(task.output_shapes(inputs)),
            **plan,
            "variant_seed": seed,
            "device": "cuda" if device == "cuda" else "cpu",
            "ncu": device == "cuda" and shutil.which("ncu") is not None,
        }
        response = _run_worker(request, timeout_s=self.timeout_s, interpret=device != "cuda",
                               sandbox=self._for(device))  # fmt: skip
        if "error" in response:
            return response, CheckResult(Outcome.CRASHED, str(response["error"]))
        kept = response.get("timed_calls")
        trials = response.get("trials")
        warmup = int(plan["warmup"])
        if (
            not isinstance(kept, dict)
            or not isinstance(trials, int)
            or sorted(kept) != list(range(warmup, warmup + trials))
        ):
            return response, CheckResult(Outcome.CRASHED, "the timing run did not keep every timed launch")
        extra = {"timed_calls": kept, "sampled_calls": sorted(kept), "variant_seed": seed,
                 "calls": warmup + int(plan["max_trials"])}  # fmt: skip
        return response, verify_timed_calls(task, inputs, extra)

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
        return "cuda" if local_cuda_arch() == arch else "interpreter"


def _default_cache_dir() -> Path:
    return get_settings().cache_path / "triton"


@functools.cache
def _triton_version() -> str:
    from importlib.metadata import version

    return version("triton")


@functools.cache
def local_cuda_arch() -> int | None:
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
    """Run one request in a fresh, sandboxed worker process (worker.py); errors come
    back as data. Files the worker writes under `out/` are copied to `keep` (the compile cache)."""
    env = {
        "PYTHONDONTWRITEBYTECODE": "1",
        "TRITON_DEFAULT_FP_FUSION": "1",
        "TRITON_CACHE_DIR": "/tmp/triton-cache",  # the sandbox's private tmpfs
    }
    if interpret:
        env["TRITON_INTERPRET"] = "1"  # must be set before triton is imported: hence a fresh process
    with scratch_dir("kg-triton-") as tmp:
        done = run_python_module(
            sandbox, WORKER_MODULE, {**request, "tmp": str(tmp), "out_dir": str(tmp / "out")}, tmp, env=env,
            limits=GPU_WORKER_LIMITS if sandbox.gpu else WORKER_LIMITS, timeout_s=timeout_s,
        )  # fmt: skip
        if done.timed_out:
            return {"error": f"timed out after {timeout_s:.0f} s", "timeout": True}
        if not (tmp / RESULT_JSON).exists():
            tail = (done.stderr or done.stdout)[-2000:]
            return {"error": f"worker exited with status {done.returncode}: {tail}", "log": tail}
        # Never unpickle what the worker wrote, never follow a link it planted: it ran model code.
        try:
            result = read_child_result(tmp)
            out = tmp / "out"
            if keep is not None and out.is_dir() and not out.is_symlink():
                for produced in out.iterdir():
                    (keep / produced.name).write_bytes(read_untrusted(produced, max_bytes=256 << 20))
        except (UntrustedFileError, ValueError, KeyError, TypeError) as exc:
            return {"error": f"the worker left an unreadable result: {exc}"}
        if not isinstance(result, dict):
            return {"error": "the worker left a malformed result"}
        return result
