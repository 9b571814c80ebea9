"""Control for a04/a05: `kernelgraph evaluate reduction --source K` with the stand-in reading ALL of the
shared buffers (32 MB for reduction: the whole LLC) instead of at most 4 MiB. If a04's gain over its
parent comes from the Python loop running cache-cold after a kernel that streams more than the
stand-in does, the calibrated overhead rises here and a04's edge shrinks.

Usage: /work/main/.venv/bin/python results/redteam-stop26/control_stand_in_whole_buffers.py KERNEL.c [PARENT.c]
"""

import json
import sys
from pathlib import Path

from kernelgraph.agent.backends import isolated
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.loop import evaluate
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task

isolated.STAND_IN_BYTES = 1 << 40  # min(shared size, this): the whole of the shared buffers
task = get_task("reduction")
parent = Path(sys.argv[2]).read_text() if len(sys.argv) > 2 else task.source("c", task.baseline_config)
verdict = evaluate(task, CBackend(), get_target("cpu-x86-64-v2"), Path(sys.argv[1]).read_text(), parent)
profile = verdict.profile
print(json.dumps({
    "outcome": str(verdict.outcome), "speedup": verdict.speedup, "reason": verdict.reason,
    "median_ns": profile.median_ns if profile else None,
    "parent_median_ns": profile.parent_median_ns if profile else None,
    "call_overhead_ns": profile.counters.get("call_overhead_ns") if profile else None,
}))  # fmt: skip
