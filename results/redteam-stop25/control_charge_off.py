"""The control of the ended-thread charge: `kernelgraph evaluate histogram --source K` with it off.

Usage: .venv/bin/python results/redteam-stop25/control_charge_off.py KERNEL.c
"""

import json
import sys
from pathlib import Path

from kernelgraph.agent.backends import isolated
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.loop import evaluate
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task

isolated.CHARGE_ENDED_THREADS = False
task = get_task("histogram")
verdict = evaluate(
    task,
    CBackend(),
    get_target("cpu-x86-64-v3"),
    Path(sys.argv[1]).read_text(),
    task.source("c", task.baseline_config),
)
profile = verdict.profile
print(
    json.dumps(
        {
            "outcome": str(verdict.outcome),
            "speedup": verdict.speedup,
            "median_ns": profile.median_ns if profile else None,
            "parent_median_ns": profile.parent_median_ns if profile else None,
            "reason": verdict.reason,
        }
    )
)
