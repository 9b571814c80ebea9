"""Import KernelBench's published baseline timings as experience: eager PyTorch -> torch.compile configs.

KernelBench publishes, per hardware, one directory (e.g. `H100_together/`, `L40S_matx3/`) holding
`baseline_time_torch.json` (eager PyTorch) and `baseline_time_torch_compile_<backend>_<mode>.json`
(e.g. `..._inductor_default.json`, `..._inductor_max-autotune.json`, `..._cudagraphs_default.json`),
each shaped `{"level1": {"<problem>.py": {"mean": ms, "std": ms, "min": ms, "max": ms,
"num_trials": n, "hardware": "...", "device": "..."}}, "level2": {...}}`.

What becomes of it:
- one HardwareTarget per directory (kind cuda; arch and FP32 peaks from `GPU_TABLE` when the name
  says which GPU it is, else arch 'unknown' and no peaks);
- per problem, an eager Kernel (backend 'torch'; its source is a stable description of the problem,
  the same on every hardware, so the same kernel is shared by all targets and transfer can pair it);
- one Transform per compile configuration, named `torch_compile:<backend>:<mode>`;
- per hardware, problem and configuration, an Attempt eager -> compiled variant with both
  Measurements, speedup = eager mean / compiled mean on the same hardware (kept if > 1).

Measurements: median_ns is the published *mean* (KernelBench publishes no median); iqr_ns is
1.349 x std, the interquartile range of a normal distribution with that std (an approximation:
the published numbers carry no quartiles); trials = num_trials. Counters: time_ns, plus std_ns,
min_ns and max_ns when present; nothing else is derivable (no FLOP or byte counts are published).

A file is validated whole before any of it is written: a malformed file (bad JSON, wrong shape, an
unknown level key, a missing, non-positive or non-finite mean) is reported with its path and key and
skipped entirely. Attempt keys are `kb:{hardware}:{level}:{problem}:{config}`, so re-importing writes
nothing (created=0).
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pydantic import ValidationError

from kernelgraph.client.models import (
    MAX_BATCH,
    AttemptRecord,
    HardwareTarget,
    RecordResult,
    TargetKind,
    content_id,
)

log = logging.getLogger(__name__)

EAGER_FILE = "baseline_time_torch.json"
COMPILE_PREFIX = "baseline_time_torch_compile_"
TRANSFORM_PREFIX = "torch_compile"
RUN_ID = "kernelbench-timing"
AGENT = "kernelbench-import"
BACKEND = "torch"
IQR_PER_STD = 1.349  # IQR of a normal distribution, in standard deviations
_LEVEL = re.compile(r"^level([0-9]+)$")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.+\-]+")


@dataclass(frozen=True)
class Gpu:
    arch: str
    peak_gflops: float | None = None  # FP32, non-tensor-core, datasheet (approximate)
    peak_gbps: float | None = None
    sm_count: int | None = None


# Name fragment (upper case) -> GPU; longest fragments are matched first ("L40S" before "L4").
GPU_TABLE: dict[str, Gpu] = {
    "B200": Gpu("sm100", 80_000.0, 8_000.0, 148),
    "H200": Gpu("sm90", 66_900.0, 4_800.0, 132),
    "H100": Gpu("sm90", 66_900.0, 3_350.0, 132),
    "A100": Gpu("sm80", 19_500.0, 2_039.0, 108),
    "L40S": Gpu("sm89", 91_600.0, 864.0, 142),
    "A10G": Gpu("sm86", 31_200.0, 600.0, 80),
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


def target_for(directory: str, hardware_text: str = "") -> HardwareTarget:
    """The HardwareTarget of one hardware directory; arch and peaks from GPU_TABLE when known."""
    upper = f"{directory} {hardware_text}".upper()
    gpu = next((GPU_TABLE[k] for k in sorted(GPU_TABLE, key=len, reverse=True) if k in upper), None)
    description = f"KernelBench timing directory {directory}"
    if hardware_text:
        description += f" ({hardware_text})"
    return HardwareTarget(
        name=safe_name(directory),
        kind=TargetKind.CUDA,
        arch=gpu.arch if gpu else "unknown",
        peak_gflops=gpu.peak_gflops if gpu else None,
        peak_gbps=gpu.peak_gbps if gpu else None,
        sm_count=gpu.sm_count if gpu else None,
        description=description[:512],
    )


def safe_name(text: str, limit: int = 128) -> str:
    """`text` as a graph identifier (letters, digits, _ . + -); long names keep a hash suffix."""
    name = _UNSAFE.sub("-", text).strip("-_.+") or "x"
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
        if backend and mode and not _UNSAFE.search(backend) and not _UNSAFE.search(mode):
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


def parse_timing_file(path: Path) -> list[Timing]:
    """Every timing of one file, or MalformedFile listing each problem (by key) when any is wrong."""
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
            if not isinstance(entry, dict):
                bad.append(
                    Skipped(shown, where, f"must be an object of statistics, got {type(entry).__name__}")
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
                    hardware=str(entry.get("hardware", ""))[:200],
                )
            )
    if bad:
        raise MalformedFile(bad)
    return timings


def _source(timing: Timing, config: Config) -> str:
    what = "PyTorch eager reference" if config.eager else (
        f"torch.compile(backend={config.backend!r}, mode={config.mode!r}) of the PyTorch reference"
    )  # fmt: skip
    return f"KernelBench level {timing.level} problem {timing.problem}: {what}"


def _kernel(timing: Timing, config: Config) -> dict[str, Any]:
    pattern = pattern_of(timing.problem)
    return {
        "task": task_of(timing.level, timing.problem),
        "backend": BACKEND,
        "source": _source(timing, config),
        "patterns": [pattern],
        "family": pattern,
        "variant": "eager" if config.eager else config.transform,
    }


def _measurement(timing: Timing) -> dict[str, Any]:
    ns = timing.mean_ms * 1e6
    counters = {"time_ns": ns}
    for name, value in (("std_ns", timing.std_ms), ("min_ns", timing.min_ms), ("max_ns", timing.max_ms)):
        if value is not None:
            counters[name] = value * 1e6
    return {
        "median_ns": ns,
        "iqr_ns": timing.std_ms * 1e6 * IQR_PER_STD if timing.std_ms is not None else None,
        "trials": timing.trials,
        "correct": True,
        "counter_source": "kernelbench_timing",
        "counters": counters,
        "tool_versions": {"source": "KernelBench published baseline timings"},
    }


def attempt_key(hardware: str, level_key: str, problem: str, config: Config) -> str:
    key = f"kb:{hardware}:{level_key}:{safe_name(problem)}:{config.key}"
    return key if len(key) <= 200 else f"{key[:180]}:{content_id(key)[:16]}"


def build_attempts(target: str, eager: list[Timing], config: Config, timings: list[Timing]) -> tuple[
    list[AttemptRecord], list[tuple[str, str]]
]:  # fmt: skip
    """Attempts eager -> `config` for the problems timed both ways; and (key, reason) of the rest."""
    baseline = {(t.level_key, t.problem): t for t in eager}
    records: list[AttemptRecord] = []
    missing: list[tuple[str, str]] = []
    for timing in timings:
        base = baseline.get((timing.level_key, timing.problem))
        if base is None:
            missing.append((f"{timing.level_key}.{timing.problem}", f"no eager timing in {EAGER_FILE}"))
            continue
        speedup = base.mean_ms / timing.mean_ms
        records.append(
            AttemptRecord.model_validate(
                {
                    "attempt_key": attempt_key(target, timing.level_key, timing.problem, config),
                    "run_id": RUN_ID,
                    "agent": AGENT,
                    "target": target,
                    "parent": _kernel(base, Config()),
                    "parent_measurement": _measurement(base),
                    "transform": {
                        "name": config.transform,
                        "params": {"backend": config.backend, "mode": config.mode},
                    },
                    "child": _kernel(timing, config),
                    "child_measurement": _measurement(timing),
                    "outcome": "kept" if speedup > 1.0 else "discarded",
                    "speedup": speedup,
                    "diagnosis": f"published timing: eager {base.mean_ms:.6g} ms, {config.key} {timing.mean_ms:.6g} ms",
                }
            )
        )
    return records, missing


class ExperienceSink(Protocol):
    """What the importer needs from the knowledge service (the client protocol satisfies it)."""

    def upsert_targets(self, targets: Sequence[HardwareTarget]) -> Any: ...

    def record_attempts(self, attempts: Sequence[AttemptRecord]) -> list[RecordResult]: ...


@dataclass
class HardwareSummary:
    target: str
    arch: str
    problems: int = 0
    configs: list[str] = field(default_factory=list)
    attempts: int = 0
    created: int = 0
    replayed: int = 0
    kept: int = 0
    skipped: list[Skipped] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "target": self.target, "arch": self.arch, "problems": self.problems, "configs": self.configs,
            "attempts": self.attempts, "created": self.created, "replayed": self.replayed, "kept": self.kept,
            "skipped": [s.as_dict() for s in self.skipped],
        }  # fmt: skip


@dataclass
class ImportSummary:
    root: str
    hardware: list[HardwareSummary] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)  # outside any hardware directory

    @property
    def created(self) -> int:
        return sum(h.created for h in self.hardware)

    @property
    def attempts(self) -> int:
        return sum(h.attempts for h in self.hardware)

    def as_dict(self) -> dict[str, Any]:
        return {
            "root": self.root,
            "targets": len(self.hardware),
            "attempts": self.attempts,
            "created": self.created,
            "replayed": sum(h.replayed for h in self.hardware),
            "skipped_total": sum(len(h.skipped) for h in self.hardware) + len(self.skipped),
            "hardware": [h.as_dict() for h in self.hardware],
            "skipped": [s.as_dict() for s in self.skipped],
        }


def _hardware_dirs(root: Path) -> list[Path]:
    if (root / EAGER_FILE).exists() or any(root.glob(f"{COMPILE_PREFIX}*.json")):
        return [root]  # DIR is itself one hardware directory
    return sorted(p for p in root.iterdir() if p.is_dir() and any(p.glob("baseline_time_torch*.json")))


def import_timings(
    root: Path,
    sink: ExperienceSink,
    *,
    batch_size: int = MAX_BATCH,
    progress: Callable[[str], None] | None = None,
) -> ImportSummary:
    """Import every hardware directory under `root` (or `root` itself); see the module docstring."""
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: not a directory")
    batch_size = max(1, min(batch_size, MAX_BATCH))
    summary = ImportSummary(str(root))
    for directory in _hardware_dirs(root):
        eager_path = directory / EAGER_FILE
        eager: list[Timing] = []
        hw = HardwareSummary(target=safe_name(directory.name), arch="unknown")
        summary.hardware.append(hw)
        try:
            eager = parse_timing_file(eager_path) if eager_path.exists() else []
            if not eager_path.exists():
                hw.skipped.append(
                    Skipped(str(eager_path), None, "missing: no eager baseline for this hardware")
                )
        except MalformedFile as exc:
            hw.skipped.extend(exc.problems)
        target = target_for(directory.name, next((t.hardware for t in eager if t.hardware), ""))
        hw.arch = target.arch
        hw.problems = len({(t.level_key, t.problem) for t in eager})
        planned: list[AttemptRecord] = []
        for path in sorted(directory.iterdir()):
            if path.name == EAGER_FILE or path.is_dir() or not path.name.endswith(".json"):
                continue
            config = config_of(path.name)
            if config is None:
                hw.skipped.append(Skipped(str(path), None, "not a KernelBench timing file name"))
                continue
            if not eager:
                hw.skipped.append(
                    Skipped(str(path), None, "skipped: no valid eager baseline to compare with")
                )
                continue
            try:
                timings = parse_timing_file(path)
                records, missing = build_attempts(target.name, eager, config, timings)
            except MalformedFile as exc:
                hw.skipped.extend(exc.problems)
                continue
            except ValidationError as exc:  # a name the graph cannot hold, say: the whole file is skipped
                hw.skipped.append(Skipped(str(path), None, f"invalid record: {exc.errors()[0]['msg']}"))
                continue
            hw.skipped.extend(Skipped(str(path), key, reason) for key, reason in missing)
            if records:
                hw.configs.append(config.transform)
                planned.extend(records)
        if not planned:
            continue
        sink.upsert_targets([target])
        for start in range(0, len(planned), batch_size):
            batch = planned[start : start + batch_size]
            results = sink.record_attempts(batch)
            created = sum(1 for r in results if r.created)
            hw.created += created
            hw.replayed += len(results) - created
            if progress is not None:
                progress(f"{target.name}: {start + len(batch)}/{len(planned)} attempts")
        hw.attempts = len(planned)
        hw.kept = sum(1 for r in planned if r.outcome.value == "kept")
    return summary
