"""Nsight Compute counters of a Triton variant: one more run of the candidate under `ncu --csv`,
whose per-kernel metrics are averaged into the counters KernelGraph records.
"""

from __future__ import annotations

import pickle
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

# Nsight Compute metric -> the counter name KernelGraph records.
NCU_METRICS = {
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": "sm_throughput_pct",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": "dram_throughput_pct",
    "l1tex__t_sector_hit_rate.pct": "l1_hit_rate_pct",
    "lts__t_sector_hit_rate.pct": "l2_hit_rate_pct",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "achieved_occupancy_pct",
}


def ncu_counters(request: Mapping[str, Any], worker: Sequence[str]) -> dict[str, float]:
    """Run the candidate once more under Nsight Compute, through `worker` (the worker's own command
    line, an "once" request), and average each metric over its kernels; {} when ncu cannot run."""
    tmp = Path(request["tmp"])
    once, once_out = tmp / "once.pkl", tmp / "once-out"
    once.write_bytes(pickle.dumps({**request, "op": "once"}))
    once_out.mkdir(exist_ok=True)
    cmd = ["ncu", "--csv", "--metrics", ",".join(NCU_METRICS), *worker, str(once), str(once_out)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    return parse_ncu_csv(proc.stdout)


def parse_ncu_csv(stdout: str) -> dict[str, float]:
    """`ncu --csv` output -> {our counter name: mean over the kernels}; unknown metrics are skipped."""
    values: dict[str, list[float]] = {}
    for line in stdout.splitlines():
        cells = [c.strip('"') for c in line.split('","')]
        if len(cells) >= 3 and cells[-3] in NCU_METRICS:
            try:
                values.setdefault(NCU_METRICS[cells[-3]], []).append(float(cells[-1].replace(",", "")))
            except ValueError:
                continue
    return {k: float(np.mean(v)) for k, v in values.items()}
