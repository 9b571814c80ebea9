"""Admission 6 on the eighth adversary's kernels (each at the target it was run with, and at every
level), then every task's baseline and landscape bests at every level: what is admitted.
Usage: admission6.py"""
import tempfile
from pathlib import Path
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import all_tasks, get_task
from kernelgraph.bench.configs import checked_configs

HERE = Path(__file__).resolve().parent
LEVELS = ("cpu-x86-64-v2", "cpu-x86-64-v3", "cpu-x86-64-v4")
backend = CBackend(cache_dir=Path(tempfile.mkdtemp()), counters=False)
for task, name in [("matmul", "isa_avx2_matmul.c"), ("matmul", "intrinsics_avx2_matmul.c"),
                   ("matmul", "dispatch_matmul.c"), ("matmul", "isa_avx512_matmul.c"),
                   ("matmul", "control_v2_w4_matmul.c"), ("softmax", "isa_avx2_softmax.c"),
                   ("softmax", "control_v2_softmax.c"), ("rmsnorm", "isa_avx2_rmsnorm.c"),
                   ("rmsnorm", "control_v2_rmsnorm.c")]:
    for level in LEVELS:
        built = backend.compile(get_task(task), (HERE / name).read_text(), get_target(level))
        why = "" if built.ok else built.diagnostics[0].message[:160]
        print(f"{name:28s} {level:14s} {'admitted' if built.ok else 'REJECTED'} {why}", flush=True)
builds = refused = 0
for task in all_tasks():
    for label, config in {"baseline": task.baseline_config, **checked_configs(task)}.items():
        for level in LEVELS:
            built = backend.compile(task, task.source("c", config), get_target(level))
            builds += 1
            if not built.ok:
                refused += 1
                print("REFUSED", task.name, label, level, built.diagnostics[0].message[:200])
print(f"the project's own configs: {builds} builds, {refused} refused")
