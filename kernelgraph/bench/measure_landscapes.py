"""Measure the study's two landscapes, A and B, task by task (A then B for each task, so that an
interrupted run leaves whole pairs): the development set (layernorm) first, so the study's pipeline
can be checked on it while the evaluation tasks are measured. Resumable: rerun to continue.

    python -m kernelgraph.bench.measure_landscapes

Runs `kernelgraph bench landscape` from the checkout's root; KG names the command (default: the
`kernelgraph` beside this Python) and LANDSCAPE_DIR the folder (default: results/landscapes).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TASKS = ("layernorm", "matmul", "softmax", "elementwise_chain", "transpose", "matvec", "reduction")
LABELS = ("A", "B")
ROOT = Path(__file__).resolve().parents[2]


def main() -> int:
    command = os.environ.get("KG", str(Path(sys.executable).parent / "kernelgraph"))
    directory = os.environ.get("LANDSCAPE_DIR", "results/landscapes")
    for task in TASKS:
        for label in LABELS:
            done = subprocess.run(
                [command, "bench", "landscape", "--tasks", task, "--label", label, "--dir", directory],
                cwd=ROOT,
            )
            if done.returncode != 0:  # as `set -e` did: stop at the first failure, with its exit code
                return done.returncode
    return 0


if __name__ == "__main__":
    sys.exit(main())
