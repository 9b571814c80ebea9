"""A short end-to-end check of the Triton backend on a real NVIDIA GPU (at most a few minutes).

Per task: AOT compile for the target, correctness on the GPU through the shared evaluator, timing
with the L2 flushed between trials (candidate and baseline interleaved), and Nsight Compute
counters when `ncu` is on PATH, and the roofline fraction against the target's datasheet peaks
(agent/library.py `yardsticks`). No library column: the library is timed on CPU targets only
(docs/yardsticks.md), and the kernel timed here is the naive one, so its speedup over naive is 1 by
construction. Without a matching GPU it says so and exits 2, never crashes.
"""

from __future__ import annotations

import time

from rich.console import Console
from rich.table import Table


def run_gpu_bench(target_name: str, task_names: list[str], budget_s: float = 300.0) -> int:
    """Run the checks; 0 when everything verified, 1 on a failed check, 2 when no matching GPU."""
    from kernelgraph.agent.backends.timing import TimingPlan
    from kernelgraph.agent.backends.triton import TritonBackend, local_cuda_arch, target_arch
    from kernelgraph.agent.library import yardsticks
    from kernelgraph.agent.targets import get_target
    from kernelgraph.agent.tasks import get_task

    console = Console()
    target = get_target(target_name, measure=False)
    arch, local = target_arch(target), local_cuda_arch()
    if local is None:
        console.print("[red]no CUDA GPU on this machine[/red]: bench gpu needs one (compile works anywhere)")
        return 2
    if local != arch:
        console.print(f"[red]the local GPU is sm_{local}, the target {target_name} is sm_{arch}[/red]")
        return 2
    backend = TritonBackend(device="cuda", timing=TimingPlan(min_trials=30, max_trials=30, budget_s=60.0))
    table = Table(title=f"Triton backend on {target_name}")
    columns = ("task", "compile", "regs", "smem", "occ %", "check", "median us", "iqr us", "roofline", "counters")  # fmt: skip
    for col in columns:
        table.add_column(col)
    failed, start = False, time.monotonic()
    for name in task_names:
        if time.monotonic() - start > budget_s:
            console.print(f"budget of {budget_s:.0f} s spent; skipped {name} and later tasks")
            break
        task = get_task(name, "triton")
        source = task.source("triton", task.baseline_config)
        compiled = backend.compile(task, source, target)
        check = backend.check(task, source, target) if compiled.ok else None
        prof = (
            backend.profile(task, source, target, parent_source=source) if check and check.correct else None
        )
        failed |= not compiled.ok or check is None or not check.correct or prof is None or prof.static
        m = compiled.static_metrics
        timed = prof if prof is not None and not prof.static else None
        roofline = yardsticks(task, timed.median_ns, target).roofline_fraction if timed else None
        table.add_row(
            name,
            "ok" if compiled.ok else compiled.diagnosis[:60],
            f"{m.get('registers_per_thread', 0):.0f}",
            f"{m.get('shared_mem_bytes', 0):.0f}",
            f"{m.get('theoretical_occupancy_pct', 0):.1f}",
            "-" if check is None else f"{check.outcome.value}: {check.reason[:40]}",
            "-" if prof is None or prof.static else f"{prof.median_ns / 1e3:.1f}",
            "-" if prof is None or prof.static else f"{prof.iqr_ns / 1e3:.2f}",
            "-" if roofline is None else f"{100 * roofline:.1f}%",
            "-" if prof is None else prof.counter_source,
        )
    console.print(table)
    return 1 if failed else 0
