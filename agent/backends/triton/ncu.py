"""Nsight Compute counters of a Triton variant: one more run of the candidate under `ncu --csv`,
whose per-kernel metrics are averaged into the counters KernelGraph records (core/ncu.py).
"""

from __future__ import annotations

import pickle
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kernelgraph.core.ncu import NcuFormatError
from kernelgraph.core.ncu import parse_ncu_csv as parse_export
from kernelgraph.core.signature import NCU_METRIC_NAMES, NCU_METRICS, with_ncu_names

__all__ = ["NCU_METRICS", "ncu_counters", "parse_ncu_csv"]


def ncu_counters(request: Mapping[str, Any], worker: Sequence[str]) -> dict[str, float]:
    """Run the candidate once more under Nsight Compute, through `worker` (the worker's own command
    line, an "once" request), and average each metric over its kernels; {} when ncu cannot run."""
    tmp = Path(request["tmp"])
    once, once_out = tmp / "once.pkl", tmp / "once-out"
    once.write_bytes(pickle.dumps({**request, "op": "once"}))
    once_out.mkdir(exist_ok=True)
    cmd = ["ncu", "--csv", "--metrics", ",".join(NCU_METRIC_NAMES), *worker, str(once), str(once_out)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    return parse_ncu_csv(proc.stdout)


def parse_ncu_csv(stdout: str) -> dict[str, float]:
    """`ncu --csv` output -> {KernelGraph counter name: mean over the kernels} (core/ncu.py reads
    the export and maps the names); {} when the output is no export (ncu failed)."""
    try:
        raw = parse_export(stdout)
    except NcuFormatError:
        return {}
    return {name: value for name, value in with_ncu_names(raw).items() if name not in raw}
