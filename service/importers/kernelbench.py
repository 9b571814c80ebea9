"""Import KernelBench's published baseline timings as experience: eager PyTorch -> torch.compile configs.

KernelBench publishes, per hardware, one folder (e.g. `H100_together/`, `L40S_matx3/`; the part after
the last `_` names the machine or provider) holding `baseline_time_torch.json` (eager PyTorch) and
`baseline_time_torch_compile_<backend>[_<mode>].json` (e.g. `..._inductor_default.json`,
`..._inductor_max-autotune.json`, `..._cudagraphs.json`; a backend without a mode runs its default
mode), each shaped `{"level1": {"<problem>.py": {"mean": ms, "std": ms, "min": ms, "max": ms,
"num_trials": n, "hardware": "...", "device": "..."} | null}, "level2": {...}}`. A `null` entry is a
problem that did not run on that hardware in that configuration.

Where a number was measured: the row's own `hardware` field names the GPU model, the folder names the
machine. A folder may hold several models (the published A10G_modal folder mixes "NVIDIA A10" and
"NVIDIA A10G" rows, A100_modal mixes 40 GB and 80 GB parts), and two folders may hold one model on two
machines (L40S_matx3 and L40S_modal: different power limits). So the target of a row is
`<folder>:<model>` (e.g. `A10G_modal:A10`), or the folder alone when a row names no hardware; its arch
and FP32 peaks come from `GPU_TABLE` when the model is known, else arch 'unknown' and no peaks.

What becomes of it:
- per problem, an eager Kernel (backend 'torch'; its source is a stable description of the problem,
  the same on every hardware, so the same kernel is shared by all targets and transfer can pair it);
- one Transform per compile configuration, named `torch_compile:<backend>:<mode>`;
- an Attempt eager -> compiled variant, with both Measurements, when both were measured on the same
  target: speedup = eager mean / compiled mean (kept if > 1);
- a failed Attempt (outcome 'crashed', no speedup) when the compiled entry is null but the eager one
  ran: the configuration produced no timing on that target;
- a lone Measurement (no attempt) for a non-null entry with no partner on the same target (its eager
  or compiled counterpart was measured on another model, or is null): it is kept, never paired;
- an individually reported skip for a null entry with nothing to attach it to (eager null).

Measurements: median_ns is the published *mean* (KernelBench publishes no median); iqr_ns is
1.349 x std, the interquartile range of a normal distribution with that std (an approximation:
the published numbers carry no quartiles); trials = num_trials. Counters: time_ns, plus std_ns,
min_ns and max_ns when present; nothing else is derivable (no FLOP or byte counts are published).

A file is validated whole before any of it is written: a malformed file (bad JSON, wrong shape, an
unknown level key, a missing, non-positive or non-finite mean) is reported with its path and key and
skipped entirely. Attempt and measurement keys are `kb:{target}:{level}:{problem}:{config}`, and
targets already stored with the same properties are not written again, so re-importing writes
nothing (created=0).
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from kernelgraph.core.models import (
    MAX_BATCH,
    AttemptRecord,
    HardwareTarget,
    KernelVariant,
    MeasurementRecord,
    MeasurementResult,
    Outcome,
    RecordResult,
    TargetKind,
    content_id,
)
from kernelgraph.core.signature import CounterName, CounterSource

log = logging.getLogger(__name__)

EAGER_FILE = "baseline_time_torch.json"
COMPILE_PREFIX = "baseline_time_torch_compile_"
TRANSFORM_PREFIX = "torch_compile"
DEFAULT_MODE = "default"
# KernelBench's published timings (MIT), shipped as package data so a fresh clone can import them.
SHIPPED_TIMINGS = Path(__file__).resolve().parent / "data" / "kernelbench-timing"
RUN_ID = "kernelbench-timing"
AGENT = "kernelbench-import"
BACKEND = "torch"
IQR_PER_STD = 1.349  # IQR of a normal distribution, in standard deviations
_LEVEL = re.compile(r"^level([0-9]+)$")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.+\-]+")
_UNSAFE_BUT_COLON = re.compile(r"[^A-Za-z0-9_.+:\-]+")


@dataclass(frozen=True)
class Gpu:
    arch: str
    peak_gflops: float | None = None  # FP32, non-tensor-core, datasheet (approximate)
    peak_gbps: float | None = None
    sm_count: int | None = None


# Name fragment (upper case) -> GPU; longest fragments are matched first ("L40S" before "L4", "A10G"
# before "A10", the 40 GB A100 before the generic, 80 GB one).
GPU_TABLE: dict[str, Gpu] = {
    "B200": Gpu("sm100", 80_000.0, 8_000.0, 148),
    "H200": Gpu("sm90", 66_900.0, 4_800.0, 132),
    "H100": Gpu("sm90", 66_900.0, 3_350.0, 132),
    "A100-SXM4-40GB": Gpu("sm80", 19_500.0, 1_555.0, 108),
    "A100": Gpu("sm80", 19_500.0, 2_039.0, 108),
    "L40S": Gpu("sm89", 91_600.0, 864.0, 142),
    "A10G": Gpu("sm86", 31_200.0, 600.0, 80),
    "A10": Gpu("sm86", 31_200.0, 600.0, 72),
    "L4": Gpu("sm89", 30_300.0, 300.0, 58),
    "T4": Gpu("sm75", 8_100.0, 320.0, 40),
}

# Problem name -> AccessPattern, first match wins. Fused level-2/3 problems are named after their
# leading operator, which dominates their runtime, so the dominant families come first; pooling and
# loss come before reduction/softmax because their names contain "max", "mean" or "softmax", and
# activations before reductions because "min"/"max" hide inside other words ("MinGPTNewGelu").
PATTERN_TABLE: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("dense-matmul", ("matmul", "matrix_multiplication", "gemm", "bmm", "linear", "mlp", "einsum")),
    ("convolution", ("conv",)),
    ("normalization", ("norm",)),  # layernorm, batchnorm, rmsnorm, groupnorm, instancenorm, l2norm...
    ("pooling", ("pool",)),
    (
        "loss",
        ("loss", "mse", "cross_entropy", "crossentropy", "kldiv", "kl_div", "hinge", "triplet", "huber"),
    ),
    ("row-softmax", ("softmax",)),
    (
        "activation",
        (
            "relu",
            "gelu",
            "sigmoid",
            "tanh",
            "swish",
            "elu",
            "softplus",
            "softsign",
            "mish",
            "hardtanh",
            "silu",
        ),
    ),
    (
        "reduction",
        ("sum", "mean", "max", "min", "argmax", "argmin", "reduction", "cumsum", "cumprod", "prod"),
    ),
)
OTHER_PATTERN = "other"


def pattern_of(problem: str) -> str:
    """The access pattern of a KernelBench problem, from its file name (see PATTERN_TABLE)."""
    name = problem.lower()
    for pattern, words in PATTERN_TABLE:
        if any(word in name for word in words):
            return pattern
    return OTHER_PATTERN


_MEMORY = re.compile(r"([0-9]+)\s*GB", re.IGNORECASE)
_VENDOR = re.compile(r"^(NVIDIA|TESLA)\s+", re.IGNORECASE)


def gpu_model(hardware: str) -> str:
    """The GPU model a row's `hardware` field names, as a name: "NVIDIA H100 80GB HBM3" -> "H100-80GB-HBM3"."""
    text = hardware.strip()
    while _VENDOR.match(text):
        text = _VENDOR.sub("", text, count=1)
    return safe_name(text) if text else ""


def gpu_of(text: str) -> Gpu | None:
    """The GPU_TABLE entry a name mentions (longest fragment first), or None."""
    upper = text.upper()
    return next((GPU_TABLE[k] for k in sorted(GPU_TABLE, key=len, reverse=True) if k in upper), None)


def _gpu_key(text: str) -> str | None:
    upper = text.upper()
    # Memory-specific keys ("A100-SXM4-40GB") are sizes of one GPU, not other GPUs: compare the family.
    return next((k.split("-")[0] for k in sorted(GPU_TABLE, key=len, reverse=True) if k in upper), None)


def differs_from_folder(directory: str, hardware: str) -> bool:
    """Does a row name another GPU than its folder does (another model, or a memory size the folder denies)?"""
    if not hardware:
        return False
    if _gpu_key(directory) != _gpu_key(hardware):
        return True
    folder_memory, row_memory = _MEMORY.search(directory), _MEMORY.search(hardware)
    return folder_memory is not None and (row_memory is None or folder_memory[1] != row_memory[1])


def target_name(directory: str, hardware: str = "") -> str:
    """`<folder>:<model>`: the GPU model the row names, on the machine its folder names."""
    model = gpu_model(hardware)
    return safe_name(f"{directory}:{model}", colon=True) if model else safe_name(directory)


def target_for(directory: str, hardware: str = "") -> HardwareTarget:
    """The HardwareTarget of rows measured on `hardware` in folder `directory`; arch and peaks from
    GPU_TABLE (matched on the row's model, on the folder name when the row names none)."""
    gpu = gpu_of(hardware) if hardware else gpu_of(directory)
    description = f"KernelBench published timings, folder {directory}"
    if hardware:
        description += f", measured on {hardware}"
    return HardwareTarget(
        name=target_name(directory, hardware),
        kind=TargetKind.CUDA,
        arch=gpu.arch if gpu else "unknown",
        peak_gflops=gpu.peak_gflops if gpu else None,
        peak_gbps=gpu.peak_gbps if gpu else None,
        sm_count=gpu.sm_count if gpu else None,
        host=directory[:256],
        description=description[:512],
    )


def safe_name(text: str, limit: int = 128, *, colon: bool = False) -> str:
    """`text` as a graph identifier (letters, digits, _ . + -, and : when `colon`); long names keep a
    hash suffix."""
    name = (_UNSAFE_BUT_COLON if colon else _UNSAFE).sub("-", text).strip("-_.+:") or "x"
    if not name[0].isalnum():
        name = "x" + name
    if len(name) > limit:
        name = f"{name[: limit - 9]}-{content_id(text)[:8]}"
    return name


def task_of(level: int, problem: str) -> str:
    """Task name: `kb-l{level}-{problem slug}` (the level keeps level1 and level2 problem 1 apart)."""
    stem = problem[:-3] if problem.endswith(".py") else problem
    slug = re.sub(r"[^a-z0-9]+", "-", stem.lower()).strip("-") or "problem"
    return safe_name(f"kb-l{level}-{slug}")


@dataclass(frozen=True)
class Config:
    """One timing configuration: eager, or torch.compile with a backend and mode."""

    backend: str | None = None
    mode: str | None = None

    @property
    def eager(self) -> bool:
        return self.backend is None

    @property
    def transform(self) -> str:
        return f"{TRANSFORM_PREFIX}:{self.backend}:{self.mode}"

    @property
    def key(self) -> str:
        return "eager" if self.eager else f"{self.backend}:{self.mode}"


def config_of(filename: str) -> Config | None:
    """The configuration a timing file holds, from its name; None when it is not a timing file."""
    if filename == EAGER_FILE:
        return Config()
    if filename.startswith(COMPILE_PREFIX) and filename.endswith(".json"):
        backend, _, mode = filename[len(COMPILE_PREFIX) : -len(".json")].partition("_")
        mode = mode or DEFAULT_MODE  # `..._cudagraphs.json`: a backend without a mode runs its default
        if backend and not _UNSAFE.search(backend) and not _UNSAFE.search(mode):
            return Config(backend, mode)
    return None


@dataclass(frozen=True)
class Timing:
    level: int
    level_key: str
    problem: str
    mean_ms: float
    std_ms: float | None
    min_ms: float | None
    max_ms: float | None
    trials: int
    hardware: str

    @property
    def key(self) -> tuple[str, str]:
        return self.level_key, self.problem


@dataclass(frozen=True)
class TimingFile:
    """One parsed timing file: its measured entries and its null ones (problems that did not run)."""

    timings: list[Timing]
    nulls: list[tuple[str, str]]  # (level key, problem)

    @property
    def rows(self) -> int:
        return len(self.timings) + len(self.nulls)


@dataclass(frozen=True)
class Skipped:
    """Something not imported: the file (and key within it, when one is at fault) and why."""

    path: str
    key: str | None
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.path, "key": self.key, "reason": self.reason}


class MalformedFile(Exception):
    def __init__(self, problems: list[Skipped]) -> None:
        super().__init__("; ".join(f"{p.key}: {p.reason}" for p in problems))
        self.problems = problems


def _optional_number(entry: dict[str, Any], name: str, where: str, problems: list[str]) -> float | None:
    value = entry.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        problems.append(f"{where}.{name}: expected a finite non-negative number, got {value!r}")
        return None
    return float(value)


def parse_timing_file(path: Path) -> TimingFile:
    """Every entry of one file, or MalformedFile listing each problem (by key) when any is wrong.

    A `null` entry is not an error: it is a problem that did not run, returned in `nulls`.
    """
    shown = str(path)
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MalformedFile([Skipped(shown, None, f"not readable JSON: {exc}")]) from None
    if not isinstance(data, dict):
        raise MalformedFile(
            [Skipped(shown, None, f"top level must be an object of levels, got {type(data).__name__}")]
        )
    timings: list[Timing] = []
    nulls: list[tuple[str, str]] = []
    bad: list[Skipped] = []
    for level_key, problems in data.items():
        match = _LEVEL.match(str(level_key))
        if not match:
            bad.append(Skipped(shown, str(level_key), "unknown level key (expected level<N>)"))
            continue
        if not isinstance(problems, dict):
            bad.append(
                Skipped(shown, level_key, f"must be an object of problems, got {type(problems).__name__}")
            )
            continue
        for problem, entry in problems.items():
            where = f"{level_key}.{problem}"
            if entry is None:
                nulls.append((level_key, str(problem)))
                continue
            if not isinstance(entry, dict):
                bad.append(
                    Skipped(
                        shown, where, f"must be an object of statistics or null, got {type(entry).__name__}"
                    )
                )
                continue
            reasons: list[str] = []
            mean: Any = entry.get("mean")
            if isinstance(mean, bool) or not isinstance(mean, int | float):
                reasons.append(f"mean: missing or not a number ({mean!r})")
            elif not math.isfinite(mean) or mean <= 0:
                reasons.append(f"mean: must be finite and positive, got {mean!r}")
            std = _optional_number(entry, "std", where, reasons)
            low = _optional_number(entry, "min", where, reasons)
            high = _optional_number(entry, "max", where, reasons)
            trials = entry.get("num_trials", 0)
            if isinstance(trials, bool) or not isinstance(trials, int) or not 0 <= trials <= 1_000_000:
                reasons.append(f"num_trials: expected an integer in [0, 1000000], got {trials!r}")
            hardware = entry.get("hardware", "")
            if not isinstance(hardware, str):
                reasons.append(f"hardware: expected a string, got {hardware!r}")
            if reasons:
                bad.extend(Skipped(shown, where, reason) for reason in reasons)
                continue
            timings.append(
                Timing(
                    level=int(match.group(1)),
                    level_key=level_key,
                    problem=str(problem),
                    mean_ms=float(mean),
                    std_ms=std,
                    min_ms=low,
                    max_ms=high,
                    trials=int(trials),
                    hardware=str(hardware)[:200],
                )
            )
    if bad:
        raise MalformedFile(bad)
    return TimingFile(timings, nulls)


def _source(level: int, problem: str, config: Config) -> str:
    what = "PyTorch eager reference" if config.eager else (
        f"torch.compile(backend={config.backend!r}, mode={config.mode!r}) of the PyTorch reference"
    )  # fmt: skip
    return f"KernelBench level {level} problem {problem}: {what}"


def _kernel(level: int, problem: str, config: Config) -> dict[str, Any]:
    pattern = pattern_of(problem)
    return {
        "task": task_of(level, problem),
        "backend": BACKEND,
        "source": _source(level, problem, config),
        "patterns": [pattern],
        "family": pattern,
        "variant": "eager" if config.eager else config.transform,
    }


def kernel_id_of(level: int, problem: str, config: Config) -> str:
    """The kernel_id the importer gives `problem` (eager, or compiled under `config`): to find it in the graph."""
    return KernelVariant.model_validate(_kernel(level, problem, config)).kernel_id


def _measurement(timing: Timing) -> dict[str, Any]:
    ns = timing.mean_ms * 1e6
    counters: dict[str, float] = {CounterName.TIME_NS: ns}
    for name, value in (("std_ns", timing.std_ms), ("min_ns", timing.min_ms), ("max_ns", timing.max_ms)):
        if value is not None:
            counters[name] = value * 1e6
    return {
        "median_ns": ns,
        "iqr_ns": timing.std_ms * 1e6 * IQR_PER_STD if timing.std_ms is not None else None,
        "trials": timing.trials,
        "correct": True,
        "counter_source": CounterSource.KERNELBENCH_TIMING,
        "counters": counters,
        "tool_versions": {"source": "KernelBench published baseline timings"},
    }


def attempt_key(target: str, level_key: str, problem: str, config: Config) -> str:
    """The key of an attempt (or lone measurement) of `problem` under `config` on `target`."""
    key = f"kb:{target}:{level_key}:{safe_name(problem)}:{config.key}"
    return key if len(key) <= 200 else f"{key[:180]}:{content_id(key)[:16]}"


def _attempt(target: str, base: Timing, config: Config, compiled: Timing | None) -> AttemptRecord:
    """eager -> `config` on `target`; `compiled` None: the configuration produced no timing there."""
    record: dict[str, Any] = {
        "attempt_key": attempt_key(target, base.level_key, base.problem, config),
        "run_id": RUN_ID,
        "agent": AGENT,
        "target": target,
        "parent": _kernel(base.level, base.problem, Config()),
        "parent_measurement": _measurement(base),
        "transform": {"name": config.transform, "params": {"backend": config.backend, "mode": config.mode}},
        "child": _kernel(base.level, base.problem, config),
    }
    if compiled is None:
        record.update(
            outcome=Outcome.CRASHED,
            diagnosis=f"published timing is null: {config.key} did not run on this hardware "
            f"(eager {base.mean_ms:.6g} ms)",
        )
    else:
        speedup = base.mean_ms / compiled.mean_ms
        record.update(
            child_measurement={**_measurement(compiled), "parent_median_ns": base.mean_ms * 1e6},
            outcome=Outcome.KEPT if speedup > 1.0 else Outcome.DISCARDED,
            speedup=speedup,
            diagnosis=f"published timing: eager {base.mean_ms:.6g} ms, {config.key} {compiled.mean_ms:.6g} ms",
        )
    return AttemptRecord.model_validate(record)


def _alone(target: str, timing: Timing, config: Config, why: str) -> MeasurementRecord:
    return MeasurementRecord.model_validate(
        {
            "key": attempt_key(target, timing.level_key, timing.problem, config),
            "run_id": RUN_ID,
            "target": target,
            "kernel": _kernel(timing.level, timing.problem, config),
            "measurement": _measurement(timing),
            "note": why,
        }
    )


class ExperienceSink(Protocol):
    """What the importer needs from the knowledge service (both clients satisfy it)."""

    def list_targets(self) -> list[dict[str, Any]]: ...

    def upsert_targets(self, targets: Sequence[HardwareTarget]) -> Any: ...

    def record_attempts(self, attempts: Sequence[AttemptRecord]) -> list[RecordResult]: ...

    def record_measurements(self, records: Sequence[MeasurementRecord]) -> list[MeasurementResult]: ...


@dataclass
class FileSummary:
    """What became of one timing file's rows. `imported` = `in_attempts` + `alone` = its non-null rows."""

    path: str
    config: str  # "eager", or the transform name
    rows: int = 0
    nulls: int = 0
    in_attempts: int = 0  # non-null rows stored in an attempt (compiled files: the measured speedups)
    alone: int = 0  # non-null rows stored as a lone measurement: no partner on the same target
    failures: int = 0  # null rows recorded as failed attempts (the eager timing ran)
    null_skips: int = 0  # null rows with nothing to attach to, each reported in `skipped`
    differs_from_folder: int = 0  # rows measured on another GPU than the folder names
    targets: dict[str, int] = field(default_factory=dict)  # non-null rows per target

    @property
    def imported(self) -> int:
        return self.in_attempts + self.alone

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path, "config": self.config, "rows": self.rows, "nulls": self.nulls,
            "imported": self.imported, "in_attempts": self.in_attempts, "alone": self.alone,
            "failures": self.failures, "null_skips": self.null_skips,
            "differs_from_folder": self.differs_from_folder, "targets": self.targets,
        }  # fmt: skip


@dataclass
class TargetSummary:
    """One GPU model on one machine: what was stored for it."""

    target: str
    arch: str
    folder: str
    model: str
    speedups: int = 0  # attempts with both times measured on this target
    failures: int = 0
    alone: int = 0
    kept: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "target": self.target, "arch": self.arch, "folder": self.folder, "model": self.model,
            "speedups": self.speedups, "failures": self.failures, "alone": self.alone, "kept": self.kept,
        }  # fmt: skip


@dataclass
class HardwareSummary:
    """One hardware folder (one machine): its files, the targets its rows landed on, and what was written."""

    folder: str
    files: list[FileSummary] = field(default_factory=list)
    targets: list[TargetSummary] = field(default_factory=list)
    attempts: int = 0
    created: int = 0
    replayed: int = 0
    measurements_alone: int = 0
    measurements_created: int = 0
    skipped: list[Skipped] = field(default_factory=list)

    @property
    def configs(self) -> list[str]:
        return [f.config for f in self.files if f.config != "eager" and f.in_attempts]

    def as_dict(self) -> dict[str, Any]:
        return {
            "folder": self.folder, "configs": self.configs, "attempts": self.attempts,
            "created": self.created, "replayed": self.replayed,
            "measurements_alone": self.measurements_alone, "measurements_created": self.measurements_created,
            "targets": [t.as_dict() for t in self.targets], "files": [f.as_dict() for f in self.files],
            "skipped": [s.as_dict() for s in self.skipped],
        }  # fmt: skip


@dataclass
class ImportSummary:
    root: str
    hardware: list[HardwareSummary] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)  # outside any hardware folder

    @property
    def created(self) -> int:
        return sum(h.created + h.measurements_created for h in self.hardware)

    @property
    def attempts(self) -> int:
        return sum(h.attempts for h in self.hardware)

    @property
    def speedups(self) -> int:
        return sum(t.speedups for h in self.hardware for t in h.targets)

    def as_dict(self) -> dict[str, Any]:
        return {
            "root": self.root,
            "folders": len(self.hardware),
            "targets": sum(len(h.targets) for h in self.hardware),
            "attempts": self.attempts,
            "speedups": self.speedups,
            "failures": sum(t.failures for h in self.hardware for t in h.targets),
            "measurements_alone": sum(h.measurements_alone for h in self.hardware),
            "created": self.created,
            "replayed": sum(h.replayed for h in self.hardware),
            "skipped_total": sum(len(h.skipped) for h in self.hardware) + len(self.skipped),
            "hardware": [h.as_dict() for h in self.hardware],
            "skipped": [s.as_dict() for s in self.skipped],
        }


def timing_root(path: Path) -> Path:
    """The timing folder of `path`: itself, or `results/timing` inside a KernelBench checkout."""
    for candidate in (path, path / "results" / "timing"):
        if candidate.is_dir() and _hardware_dirs(candidate):
            return candidate
    return path


def _hardware_dirs(root: Path) -> list[Path]:
    if (root / EAGER_FILE).exists() or any(root.glob(f"{COMPILE_PREFIX}*.json")):
        return [root]  # DIR is itself one hardware folder
    return sorted(p for p in root.iterdir() if p.is_dir() and any(p.glob("baseline_time_torch*.json")))


@dataclass
class _Plan:
    """What one hardware folder will write."""

    targets: dict[str, HardwareTarget] = field(default_factory=dict)
    attempts: list[AttemptRecord] = field(default_factory=list)
    alone: list[MeasurementRecord] = field(default_factory=list)


def _plan_folder(directory: Path, hw: HardwareSummary) -> _Plan:
    """Parse a folder's files and decide, row by row, what each becomes (see the module docstring)."""
    plan = _Plan()
    summaries: dict[str, TargetSummary] = {}

    def target_of(timing: Timing) -> str:
        target = target_for(directory.name, timing.hardware)
        if target.name not in plan.targets:
            plan.targets[target.name] = target
            summaries[target.name] = TargetSummary(
                target.name, target.arch, directory.name, gpu_model(timing.hardware) or directory.name
            )
        return target.name

    def count_rows(summary: FileSummary, parsed: TimingFile) -> None:
        summary.rows, summary.nulls = parsed.rows, len(parsed.nulls)
        counts = Counter(target_of(t) for t in parsed.timings)
        summary.targets = dict(sorted(counts.items()))
        summary.differs_from_folder = sum(
            differs_from_folder(directory.name, t.hardware) for t in parsed.timings
        )

    eager_path = directory / EAGER_FILE
    eager: dict[tuple[str, str], tuple[Timing, str]] = {}
    eager_summary = FileSummary(str(eager_path), "eager")
    eager_parsed: TimingFile | None = None
    if not eager_path.exists():
        hw.skipped.append(Skipped(str(eager_path), None, "missing: no eager baseline for this hardware"))
    else:
        try:
            eager_parsed = parse_timing_file(eager_path)
        except MalformedFile as exc:
            hw.skipped.extend(exc.problems)
    if eager_parsed is not None:
        hw.files.append(eager_summary)
        count_rows(eager_summary, eager_parsed)
        eager = {t.key: (t, target_of(t)) for t in eager_parsed.timings}
    used: set[tuple[str, str]] = set()
    for path in sorted(directory.iterdir()):
        if path.name == EAGER_FILE or path.is_dir() or not path.name.endswith(".json"):
            continue
        config = config_of(path.name)
        if config is None:
            hw.skipped.append(Skipped(str(path), None, "not a KernelBench timing file name"))
            continue
        try:
            parsed = parse_timing_file(path)
        except MalformedFile as exc:
            hw.skipped.extend(exc.problems)
            continue
        summary = FileSummary(str(path), config.transform)
        hw.files.append(summary)
        count_rows(summary, parsed)
        for timing in parsed.timings:
            target = target_of(timing)
            base = eager.get(timing.key)
            if base is not None and base[1] == target:
                plan.attempts.append(_attempt(target, base[0], config, timing))
                used.add(timing.key)
                summary.in_attempts += 1
                summaries[target].speedups += 1
            else:
                why = f"eager timing measured on {base[1]}" if base else "no eager timing on this hardware"
                plan.alone.append(_alone(target, timing, config, why))
                summary.alone += 1
                summaries[target].alone += 1
        for level_key, problem in parsed.nulls:
            base = eager.get((level_key, problem))
            if base is None:
                summary.null_skips += 1
                hw.skipped.append(Skipped(str(path), f"{level_key}.{problem}",
                                          "null here and no eager timing: nothing to record"))  # fmt: skip
                continue
            plan.attempts.append(_attempt(base[1], base[0], config, None))
            used.add((level_key, problem))
            summary.failures += 1
            summaries[base[1]].failures += 1
    for key, (timing, target) in eager.items():
        if key in used:
            eager_summary.in_attempts += 1
        else:
            plan.alone.append(_alone(target, timing, Config(), "no compiled timing on the same target"))
            eager_summary.alone += 1
            summaries[target].alone += 1
    if eager_parsed is not None:
        for level_key, problem in eager_parsed.nulls:
            eager_summary.null_skips += 1
            hw.skipped.append(Skipped(str(eager_path), f"{level_key}.{problem}",
                                      "eager timing is null: the problem did not run on this hardware"))  # fmt: skip
    for record in plan.attempts:
        if record.outcome is Outcome.KEPT:
            summaries[record.target].kept += 1
    hw.targets = sorted(summaries.values(), key=lambda t: t.target)
    return plan


def _changed(targets: Iterable[HardwareTarget], stored: list[dict[str, Any]]) -> list[HardwareTarget]:
    """The targets not yet stored with these exact properties (so a re-import writes nothing)."""
    by_name = {t["name"]: t for t in stored}
    changed = []
    for target in targets:
        props = target.model_dump(mode="json", exclude_none=True)
        old = by_name.get(target.name)
        if old is None or any(old.get(k) != v for k, v in props.items()):
            changed.append(target)
    return changed


def import_timings(
    root: Path,
    sink: ExperienceSink,
    *,
    batch_size: int = MAX_BATCH,
    progress: Callable[[str], None] | None = None,
) -> ImportSummary:
    """Import every hardware folder under `root` (a timing folder, one hardware folder, or a KernelBench
    checkout); see the module docstring."""
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: not a directory")
    root = timing_root(root)
    batch_size = max(1, min(batch_size, MAX_BATCH))
    summary = ImportSummary(str(root))
    folders = _hardware_dirs(root)
    if not folders:
        summary.skipped.append(
            Skipped(str(root), None, "no KernelBench timing files (baseline_time_torch*.json)")
        )
    for number, directory in enumerate(folders, 1):
        hw = HardwareSummary(directory.name)
        summary.hardware.append(hw)
        plan = _plan_folder(directory, hw)
        if not plan.attempts and not plan.alone:
            continue
        fresh = _changed(plan.targets.values(), sink.list_targets())
        if fresh:
            sink.upsert_targets(fresh)
        where = f"[{number}/{len(folders)}] {directory.name}"
        for start in range(0, len(plan.attempts), batch_size):
            batch = plan.attempts[start : start + batch_size]
            results = sink.record_attempts(batch)
            created = sum(1 for r in results if r.created)
            hw.created += created
            hw.replayed += len(results) - created
            if progress is not None:
                progress(f"{where}: {start + len(batch)}/{len(plan.attempts)} attempts")
        for start in range(0, len(plan.alone), batch_size):
            lone = sink.record_measurements(plan.alone[start : start + batch_size])
            hw.measurements_created += sum(1 for r in lone if r.created)
        hw.attempts = len(plan.attempts)
        hw.measurements_alone = len(plan.alone)
    return summary
