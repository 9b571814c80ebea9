"""Nsight Compute as an input: its raw metric names, its CSV exports and a JSON form, mapped to the
counters the signature reads (`CounterName`), and what each counter source can fill (docs/api.md).

An external GPU agent that profiles with `ncu` sends what ncu printed: raw metric names in `counters`
(with `counter_source: "nvidia_ncu"`), or the export parsed here (`parse_ncu_csv`, `parse_ncu_json`).
The formats follow NVIDIA's Nsight Compute CLI documentation (`--csv` with the default details page:
one row per metric with "Metric Name", "Metric Unit", "Metric Value"; `--csv --page raw`: one row per
kernel, one column per metric, a units row under the header). ncu has no JSON export of its own that
we found documented; the JSON accepted is either {metric: value} or a list of the details page's rows
as objects (what the Python Report Interface or a CSV-to-JSON step gives). No GPU was available when
this was written: the test fixtures follow the documented formats, not a captured export.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from kernelgraph.core.signature import (
    NCU_FLOP_METRICS,
    NCU_METRIC_NAMES,
    NCU_METRICS,
    SOURCE_DIMENSIONS,
    CounterName,
    CounterSource,
)

# Unit prefixes ncu's automatic scaling prints (`--print-units auto`, the default), e.g. "usecond",
# "Kbyte", "Mbyte"; base units scale by 1.
_PREFIXES = {"n": 1e-9, "u": 1e-6, "m": 1e-3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
_BASE_UNITS = {"second": 1e9, "byte": 1.0, "inst": 1.0, "%": 1.0, "register/thread": 1.0, "": 1.0}


class NcuFormatError(ValueError):
    """The text is not an Nsight Compute export this module reads; the message says what was wrong."""


def _scaled(value: str, unit: str, metric: str) -> float | None:
    """A printed ncu value in KernelGraph's units (ns, bytes, counts, %); None for n/a."""
    text = value.strip().replace(",", "")
    if not text or text.lower() in ("n/a", "nan"):
        return None
    try:
        number = float(text)
    except ValueError:
        raise NcuFormatError(f"{metric}: {value!r} is not a number") from None
    unit = unit.strip()
    base, factor = unit, 1.0
    if unit not in _BASE_UNITS and unit[:1] in _PREFIXES:
        base, factor = unit[1:], _PREFIXES[unit[:1]]
    if base not in _BASE_UNITS:
        return number  # a unit this mapping does not read (the metric is stored as sent)
    if base == "second":
        return number * factor * _BASE_UNITS["second"]
    return number * factor


def _mean(values: dict[str, list[float]]) -> dict[str, float]:
    return {metric: sum(v) / len(v) for metric, v in values.items() if v}


def parse_ncu_csv(text: str) -> dict[str, float]:
    """An `ncu --csv` export (details page, or `--page raw`) -> {raw metric: value in base units}, each
    the mean over the profiled kernels. The raw metric names go into `counters` as they are."""
    rows = list(
        csv.reader(io.StringIO("\n".join(line for line in text.splitlines() if not line.startswith("=="))))
    )
    rows = [r for r in rows if r]
    if not rows:
        raise NcuFormatError("empty export: expected ncu --csv output")
    header = rows[0]
    values: dict[str, list[float]] = {}
    if {"Metric Name", "Metric Value"} <= set(header):  # details page: one row per metric and kernel
        name, unit_col, value_col = (header.index(c) if c in header else -1
                                     for c in ("Metric Name", "Metric Unit", "Metric Value"))  # fmt: skip
        for row in rows[1:]:
            if len(row) != len(header):
                continue
            unit = row[unit_col] if unit_col >= 0 else ""
            scaled = _scaled(row[value_col], unit, row[name])
            if scaled is not None:
                values.setdefault(row[name], []).append(scaled)
        return _mean(values)
    if "Kernel Name" in header:  # raw page: one column per metric, then a units row, then a row per kernel
        metrics = [i for i, column in enumerate(header) if "__" in column]
        units = rows[1] if len(rows) > 1 and not any(rows[1][i].strip().replace(",", "").replace(".", "").isdigit()
                                                     for i in metrics if i < len(rows[1])) else None  # fmt: skip
        for row in rows[2 if units else 1 :]:
            for i in metrics:
                if i < len(row):
                    scaled = _scaled(row[i], units[i] if units and i < len(units) else "", header[i])
                    if scaled is not None:
                        values.setdefault(header[i], []).append(scaled)
        return _mean(values)
    raise NcuFormatError(
        "not an ncu --csv export: expected a header with 'Metric Name' and 'Metric Value' (details page) "
        "or 'Kernel Name' and metric columns (--page raw)"
    )


def parse_ncu_json(text: str) -> dict[str, float]:
    """{metric: value} or a list of {"Metric Name", "Metric Unit", "Metric Value"} objects (the
    details page as JSON) -> {raw metric: value in base units}, the mean over kernels."""
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise NcuFormatError(f"not JSON: {exc}") from None
    values: dict[str, list[float]] = {}
    if isinstance(data, dict):
        for metric, value in data.items():
            if isinstance(value, dict):  # {metric: {"value": v, "unit": u}}
                scaled = _scaled(str(value.get("value", "")), str(value.get("unit", "")), metric)
            else:
                scaled = _scaled(str(value), "", metric)
            if scaled is not None:
                values.setdefault(metric, []).append(scaled)
        return _mean(values)
    if isinstance(data, list) and all(isinstance(r, dict) and "Metric Name" in r for r in data):
        for row in data:
            scaled = _scaled(
                str(row.get("Metric Value", "")), str(row.get("Metric Unit", "")), row["Metric Name"]
            )
            if scaled is not None:
                values.setdefault(str(row["Metric Name"]), []).append(scaled)
        return _mean(values)
    raise NcuFormatError('expected {"metric": value, ...} or a list of {"Metric Name", "Metric Value"} rows')


# What each dimension reads, per kind of source: the counters to send to have it measured.
_CPU_READS: dict[str, str] = {
    "compute_fraction": "flops + time_ns (or gflops)",
    "memory_fraction": "bytes + time_ns (or gbps)",
    "ridge_position": "operational_intensity, or flops + ll_miss_bytes (counter_scale 1 or absent)",
    "l1_miss_rate": "d1_miss_rate (counter_scale 1 or absent)",
    "llc_miss_rate": "ll_miss_rate (counter_scale 1 or absent)",
    "parallel_efficiency": "threads + cores (or the target's cores)",
    "issue_efficiency": "flops + instructions",
    "launch_overhead_share": "time_ns",
    "speed_of_light": "compute_fraction and memory_fraction both",
}
_NVIDIA_READS: dict[str, str] = {
    "compute_fraction": "flops + time_ns (or gflops); ncu: smsp__sass_thread_inst_executed_op_{f,d,h}{add,mul,fma}_pred_on.sum + gpu__time_duration.sum",
    "memory_fraction": "dram_throughput_pct (ncu: dram__throughput.avg.pct_of_peak_sustained_elapsed), or bytes + time_ns",
    "l1_miss_rate": "l1_hit_rate_pct (ncu: l1tex__t_sector_hit_rate.pct)",
    "llc_miss_rate": "l2_hit_rate_pct (ncu: lts__t_sector_hit_rate.pct)",
    "parallel_efficiency": "achieved_occupancy_pct (ncu: sm__warps_active.avg.pct_of_peak_sustained_active) or theoretical_occupancy_pct",
    "issue_efficiency": "sm_throughput_pct (ncu: sm__throughput.avg.pct_of_peak_sustained_elapsed)",
    "spill_pressure": "spill_bytes (the compiled artifact's; ncu has no spill metric)",
    "register_pressure": "registers_per_thread (ncu: launch__registers_per_thread)",
    "launch_overhead_share": "time_ns (ncu: gpu__time_duration.sum)",
    "speed_of_light": "compute_fraction and memory_fraction both",
}  # fmt: skip
_KERNELBENCH_READS = {"launch_overhead_share": "time_ns"}


def dimension_reads(source: CounterSource | str) -> dict[str, str]:
    """For each dimension `source` can measure, the counters that fill it (in signature order)."""
    src = CounterSource(source)
    reads = (
        _CPU_READS if src.value.startswith("cpu_")
        else _KERNELBENCH_READS if src is CounterSource.KERNELBENCH_TIMING else _NVIDIA_READS
    )  # fmt: skip
    return {name: reads[name] for name in SOURCE_DIMENSIONS[src]}


def counter_names(source: CounterSource | str) -> list[str]:
    """The counter names the signature reads for `source` (KernelGraph's, then ncu's raw ones)."""
    src = CounterSource(source)
    text = " ".join(dimension_reads(src).values())
    ours: list[str] = [name.value for name in CounterName if name.value in text.replace(",", " ").split()]
    if src in (CounterSource.NVIDIA_NCU, CounterSource.NVIDIA_TIMING):
        ours += [
            n.value for n in (CounterName.FLOPS, CounterName.GFLOPS, CounterName.BYTES, CounterName.GBPS)
        ]
    raw = list(NCU_METRIC_NAMES) if src is CounterSource.NVIDIA_NCU else []
    return sorted(set(ours)) + raw


def coverage_markdown() -> str:
    """docs/api.md's table of what each counter source can and cannot fill (a test keeps it current)."""
    from kernelgraph.core.signature import DIMENSION_NAMES

    lines = ["| counter source | fills (from these counters) | cannot fill |", "|---|---|---|"]
    for source in CounterSource:
        reads = dimension_reads(source)
        fills = "; ".join(f"`{d}`: {r}" for d, r in reads.items())
        cannot = ", ".join(f"`{d}`" for d in DIMENSION_NAMES if d not in reads) or "nothing"
        lines.append(f"| `{source.value}` | {fills} | {cannot} |")
    return "\n".join(lines)


def ncu_metrics_markdown() -> str:
    """docs/api.md's table of the Nsight Compute metrics accepted under their raw names."""
    lines = ["| Nsight Compute metric | KernelGraph counter |", "|---|---|"]
    lines += [f"| `{metric}` | `{name.value}` |" for metric, name in NCU_METRICS.items()]
    lines += [
        f"| `{metric}` | `flops` (x{weight:g}, summed) |" for metric, weight in NCU_FLOP_METRICS.items()
    ]
    return "\n".join(lines)
